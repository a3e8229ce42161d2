//! Items: the stored item as clients see it, and every mutation of items, applied inside the
//! writer: create, upsert, replace, delete, deleting a partition, deleting a container's items,
//! and the sweeper's delete step.
//!
//! An item is identified by its container, partition key value and id. Every write stamps the
//! item with the writer's clock (restarting its TTL countdown), moves its expiry-index entry and
//! updates the container's counters in the same transaction. Every mutation asks
//! `expiry::is_expired` whether the stored version is visible, so an expired item is absent
//! whether or not the sweeper has deleted it yet. Whether a write or delete may go ahead is
//! decided by `items/rules.rs`; this module finds the versions the rules look at and applies
//! what they decide. The requests that reach these mutations are in
//! `items/requests.rs` and the doors of `api/items.rs`; what the sweeper deletes and when is the sweeper's business.

pub(crate) mod batch;
pub(crate) mod document_cache;
pub(crate) mod patch;
pub(crate) mod requests;
pub(crate) mod rules;
pub(crate) mod stored;

pub use self::stored::StoredItem;

use self::rules::{Body, Effect, Version, WriteMode};
use crate::container::Container;
use crate::error::{corrupted, item_not_found, EngineResult};
use crate::feed::change_log;
use crate::index::maintain::{replace_entries, VersionRef};
use crate::keys;
use crate::partitions::partition_key::PartitionKeyValue;
use crate::records::{
    read_counters, store_counters, writer_container, Counters, ExpiryEntry, ItemRecord,
};
use crate::throughput::request_units;
use crate::ttl;
use crate::ttl::expiry::{expiry_placement, record_is_expired};
use crate::writer::WriteContext;
use lethedb_storage::{KeyRange, ReadTxn, Table};
use std::ops::ControlFlow;
use std::sync::Arc;

/// The result of a write.
#[derive(Debug)]
pub struct ItemOutcome {
    pub item: StoredItem,
    /// True when the write created the item (201), false when it replaced one (200).
    pub created: bool,
    /// The partition key the item was written under (taken from the document), so the caller
    /// can name its range without parsing anything again.
    pub partition_key: PartitionKeyValue,
}

/// One page of a read feed.
#[derive(Debug)]
pub struct Feed {
    pub items: Vec<StoredItem>,
    pub continuation: Option<String>,
    pub lsn: u64,
}

/// The tables that hold something per item of a container, all keyed by the container number
/// first: deleting a container clears each of them over that prefix (the counters go separately).
const PER_ITEM_TABLES: [Table; 6] = [
    Table::Items,
    Table::Expiry,
    Table::ResourceIds,
    Table::ChangeIndex,
    Table::ChangeLog,
    Table::Index,
];

/// Deletes every item, expiry entry and counter of a container.
pub(crate) fn delete_container_items(
    context: &mut WriteContext<'_>,
    container_number: u64,
) -> EngineResult<()> {
    for table in PER_ITEM_TABLES {
        let mut doomed = Vec::new();
        context.scan(
            table,
            &KeyRange::prefix(&keys::container_items_prefix(container_number)),
            &mut |key, _| {
                doomed.push(key.to_vec());
                ControlFlow::Continue(())
            },
        )?;
        for key in doomed {
            context.delete(table, &key)?;
        }
    }
    context.delete(Table::Counters, &keys::change_state_key(container_number))?;
    context.delete(Table::Counters, &keys::counters_key(container_number))
}

/// Removes one stored version (visible or expired) with its expiry and index entries and
/// counters.
pub(crate) fn remove_version(
    context: &mut WriteContext<'_>,
    container: &Container,
    item_key: &[u8],
    record: &ItemRecord,
    counters: &mut Counters,
) -> EngineResult<()> {
    let old = VersionRef {
        record,
        document: None,
    };
    replace_entries(context, container, Some(old), None)?;
    remove_version_keeping(
        context,
        container.key_number(),
        item_key,
        record,
        counters,
        false,
    )
}

/// [`remove_version`], leaving the resource-id entry in place when `keep_resource_id` (a
/// replacement under the same key and document number writes the same entry again, and each
/// entry rewritten costs the commit a copied B-tree leaf).
fn remove_version_keeping(
    context: &mut WriteContext<'_>,
    container_number: u64,
    item_key: &[u8],
    record: &ItemRecord,
    counters: &mut Counters,
    keep_resource_id: bool,
) -> EngineResult<()> {
    if let Some((class, time_ms)) = expiry_placement(record.last_modified_ms, record.ttl) {
        context.delete(
            Table::Expiry,
            &keys::expiry_key(
                container_number,
                class,
                time_ms,
                keys::item_key_suffix(item_key),
            ),
        )?;
    }
    context.delete(Table::Items, item_key)?;
    change_log::unindex_version(context, container_number, item_key, record.lsn)?;
    if !keep_resource_id {
        context.delete(
            Table::ResourceIds,
            &keys::resource_id_key(container_number, record.document_number),
        )?;
    }
    let body_bytes = record.body.len() as u64;
    // Every stored version was counted when stored: a count that would go below zero is a bug
    // (a version removed twice), which tests must see; a release build keeps the counters at 0.
    debug_assert!(
        counters.items >= 1 && counters.bytes >= body_bytes,
        "container {container_number}: removing a version its counters do not hold"
    );
    counters.items = counters.items.saturating_sub(1);
    counters.bytes = counters.bytes.saturating_sub(body_bytes);
    Ok(())
}

/// Gives a write its container LSN: the next one, or the one a running transactional batch
/// pinned for all of its writes.
pub(crate) fn next_lsn(context: &WriteContext<'_>, counters: &mut Counters) {
    counters.lsn = match context.pinned_lsn {
        Some(pinned) => pinned.max(counters.lsn),
        None => counters.lsn + 1,
    };
}

/// Stores one version with its expiry-index and resource-id entries and counts it; the
/// resource-id entry only when `resource_id_stored` is false.
fn store_version(
    context: &mut WriteContext<'_>,
    container_number: u64,
    item_key: &[u8],
    record: &ItemRecord,
    counters: &mut Counters,
    resource_id_stored: bool,
) -> EngineResult<()> {
    let suffix = keys::item_key_suffix(item_key);
    if let Some((class, time_ms)) = expiry_placement(record.last_modified_ms, record.ttl) {
        let entry = ExpiryEntry {
            lsn: record.lsn,
            body_bytes: record.body.len() as u64,
        };
        context.put(
            Table::Expiry,
            &keys::expiry_key(container_number, class, time_ms, suffix),
            &entry.encode(),
        )?;
    }
    context.put(Table::Items, item_key, &record.encode())?;
    change_log::index_version(context, container_number, item_key, record.lsn)?;
    if !resource_id_stored {
        context.put(
            Table::ResourceIds,
            &keys::resource_id_key(container_number, record.document_number),
            suffix,
        )?;
    }
    counters.items += 1;
    counters.bytes += record.body.len() as u64;
    Ok(())
}

/// The visible version of an item inside the writer, or NotFound.
pub(crate) fn current_version(
    context: &mut WriteContext<'_>,
    container: &Container,
    partition_key: &PartitionKeyValue,
    id: &str,
) -> EngineResult<ItemRecord> {
    let key = keys::item_key(container.key_number(), &partition_key.encode(), id);
    visible_record(context, container, &key)?.ok_or_else(item_not_found)
}

/// The visible version stored under `key` inside the writer, if any.
pub(crate) fn visible_record(
    context: &WriteContext<'_>,
    container: &Container,
    key: &[u8],
) -> EngineResult<Option<ItemRecord>> {
    Ok(read_record(context.reader(), key)?
        .filter(|record| !record_is_expired(container, record, context.now_ms)))
}

/// One stored version of an item (visible or not), if any.
pub(crate) fn read_record(reader: &dyn ReadTxn, key: &[u8]) -> EngineResult<Option<ItemRecord>> {
    match reader.get(Table::Items, key)? {
        None => Ok(None),
        Some(bytes) => ItemRecord::decode(&bytes)
            .map(Some)
            .ok_or_else(|| corrupted("item")),
    }
}

/// How the rules see a committed version of an item.
pub(crate) fn stored_version(container_number: u64, record: &ItemRecord) -> Version<'static> {
    Version::Stored {
        container_number,
        lsn: record.lsn,
    }
}

/// One create, upsert or replace, as the writer applies it.
#[derive(Clone, Debug)]
pub(crate) struct WriteRequest {
    pub(crate) mode: WriteMode,
    /// The request's partition key (its header), when sent: it must name the document's own.
    pub(crate) partition_key: Option<PartitionKeyValue>,
    /// The body, past the body rules (`rules::prepare_body`).
    pub(crate) body: Body,
    pub(crate) if_match: Option<String>,
}

/// The stored versions a write meets.
struct Found {
    /// The key the write stores under: its partition key and the body's id.
    key: Vec<u8>,
    /// The version stored under `key`, visible or expired.
    existing: Option<ItemRecord>,
    /// Whether `existing` is visible.
    visible: bool,
    /// For a rename (a replace whose body names another id than its URL): the key of the URL's
    /// item and its visible version, if any.
    renamed_from: Option<(Vec<u8>, Option<ItemRecord>)>,
}

impl Found {
    fn visible(&self) -> Option<&ItemRecord> {
        self.existing.as_ref().filter(|_| self.visible)
    }

    /// The visible version the write replaces: the URL's item for a rename.
    fn replaced(&self) -> Option<&ItemRecord> {
        match &self.renamed_from {
            Some((_, source)) => source.as_ref(),
            None => self.visible(),
        }
    }
}

/// What a write does, once the rules allowed it.
struct WritePlan {
    created: bool,
    /// The replaced item's document number, or a new one.
    document_number: u64,
    /// Whether the version under the write's key keeps its document number, so that its
    /// resource-id entry stays as it is.
    keeps_resource_id: bool,
}

/// Applies one create, upsert or replace inside the writer: decides it by the item rules
/// against the current state, plans its keys and document number, then writes the item, its
/// index entries, the counters and the change log. Nothing is written when it returns an error.
pub(crate) fn apply_write(
    context: &mut WriteContext<'_>,
    container: Arc<Container>,
    request: WriteRequest,
) -> EngineResult<ItemOutcome> {
    let WriteRequest {
        mode,
        partition_key,
        body,
        if_match,
    } = request;
    let document_key = rules::document_partition_key(&container, &body.document)?;
    rules::check_sent_partition_key(&container, partition_key, &document_key)?;
    let partition_bytes = document_key.encode();
    rules::check_partition_key_size(&partition_bytes)?;
    let found = find_versions(context, &container, &mode, &partition_bytes, &body.id)?;
    let number = container.key_number();
    let taken = found.renamed_from.is_some() && found.visible;
    let current = found
        .replaced()
        .map(|record| stored_version(number, record));
    let effect = rules::decide_write(&mode, if_match.as_deref(), current, taken)?;
    // Validation is over: from here on the operation writes.
    if found.existing.is_some() && !found.visible {
        // An expired version is about to go: its TTL event must be out first.
        change_log::emit_ttl_events(context, &container)?;
    }
    let mut counters = read_counters(context.reader(), number)?;
    let plan = plan_write(&found, effect, &mut counters);
    let record = store_write(context, &container, &found, &plan, body, &mut counters)?;
    store_counters(context, number, &counters)?;
    Ok(ItemOutcome {
        item: StoredItem { container, record },
        created: plan.created,
        partition_key: document_key,
    })
}

/// Reads the versions a write meets: the one under its own key, and for a rename the URL's.
fn find_versions(
    context: &WriteContext<'_>,
    container: &Container,
    mode: &WriteMode,
    partition_bytes: &[u8],
    id: &str,
) -> EngineResult<Found> {
    let number = container.key_number();
    let key = keys::item_key(number, partition_bytes, id);
    let existing = read_record(context.reader(), &key)?;
    let visible = existing
        .as_ref()
        .is_some_and(|record| !record_is_expired(container, record, context.now_ms));
    // A replace whose body names another id renames the item (the service allows it; only the
    // partition key is fixed): the URL's id is the item replaced, the body's id its new name.
    let renamed_from = match mode {
        WriteMode::Replace(url_id) if url_id != id => {
            let old_key = keys::item_key(number, partition_bytes, url_id);
            let source = visible_record(context, container, &old_key)?;
            Some((old_key, source))
        }
        _ => None,
    };
    Ok(Found {
        key,
        existing,
        visible,
        renamed_from,
    })
}

/// The document number the new version takes: the replaced item's, or the container's next.
fn plan_write(found: &Found, effect: Effect, counters: &mut Counters) -> WritePlan {
    let replaced = found.replaced().filter(|_| effect == Effect::Replace);
    let document_number = if let Some(record) = replaced {
        record.document_number
    } else {
        counters.next_document_number += 1;
        counters.next_document_number
    };
    let keeps_resource_id = found
        .existing
        .as_ref()
        .is_some_and(|old| old.document_number == document_number);
    WritePlan {
        created: effect == Effect::Create,
        document_number,
        keeps_resource_id,
    }
}

/// Removes the versions a write replaces, stores the new one under the next LSN, and logs the
/// change (a rename also logs the deletion of the old id). Returns the stored version.
fn store_write(
    context: &mut WriteContext<'_>,
    container: &Container,
    found: &Found,
    plan: &WritePlan,
    body: Body,
    counters: &mut Counters,
) -> EngineResult<ItemRecord> {
    let number = container.key_number();
    if let Some((old_key, Some(old))) = &found.renamed_from {
        remove_version(context, container, old_key, old, counters)?;
    }
    if let Some(old) = &found.existing {
        let keep = plan.keeps_resource_id;
        remove_version_keeping(context, number, &found.key, old, counters, keep)?;
    }
    next_lsn(context, counters);
    let record = ItemRecord {
        last_modified_ms: context.now_ms,
        lsn: counters.lsn,
        document_number: plan.document_number,
        ttl: ttl::item_ttl(&body.document),
        body: body.bytes,
    };
    // The version under the write's key (visible or expired) gives way to the new one: only
    // the entries that differ are written.
    let old = found.existing.as_ref().map(|record| VersionRef {
        record,
        document: None,
    });
    let new = VersionRef {
        record: &record,
        document: Some(&body.document),
    };
    replace_entries(context, container, old, Some(new))?;
    let key = &found.key;
    store_version(
        context,
        number,
        key,
        &record,
        counters,
        plan.keeps_resource_id,
    )?;
    let replaced_lsn = match &found.renamed_from {
        Some((old_key, old)) => {
            if let Some(old) = old {
                change_log::log_delete(context, number, old_key, old.lsn, record.lsn)?;
            }
            None
        }
        None => found.visible().map(|old| old.lsn),
    };
    change_log::log_write(context, number, key, &record, replaced_lsn)?;
    Ok(record)
}

/// Deletes one visible item inside the writer; returns the container LSN of the deletion.
pub(crate) fn apply_delete(
    context: &mut WriteContext<'_>,
    container: &Container,
    partition_key: Option<PartitionKeyValue>,
    id: &str,
    if_match: Option<String>,
) -> EngineResult<u64> {
    let partition_key = container.partition_key.point_key(partition_key)?;
    let number = container.key_number();
    let key = keys::item_key(number, &partition_key.encode(), id);
    let current = visible_record(context, container, &key)?
        .map(|record| (stored_version(number, &record), record));
    let existing = rules::decide_existing(if_match.as_deref(), current)?;
    let mut counters = read_counters(context.reader(), number)?;
    remove_version(context, container, &key, &existing, &mut counters)?;
    next_lsn(context, &mut counters);
    change_log::log_delete(context, number, &key, existing.lsn, counters.lsn)?;
    store_counters(context, number, &counters)?;
    Ok(counters.lsn)
}

/// Deletes every item of one logical partition (expired ones too) inside the writer; returns
/// how many visible items went.
pub(crate) fn apply_delete_partition(
    context: &mut WriteContext<'_>,
    container: &Container,
    partition_key: PartitionKeyValue,
) -> EngineResult<u64> {
    let partition_key = container.partition_key.require_full(partition_key)?;
    let number = container.key_number();
    let mut doomed = Vec::new();
    context.try_scan(
        Table::Items,
        &KeyRange::prefix(&keys::partition_prefix(number, &partition_key.encode())),
        &mut |key, value| {
            let record = ItemRecord::decode(value).ok_or_else(|| corrupted("item"))?;
            doomed.push((key.to_vec(), record));
            Ok(ControlFlow::Continue(()))
        },
    )?;
    // Expired versions are about to go: their TTL events must be out first.
    change_log::emit_ttl_events(context, container)?;
    let mut counters = read_counters(context.reader(), number)?;
    let mut deleted = Vec::new();
    for (key, record) in &doomed {
        if !record_is_expired(container, record, context.now_ms) {
            deleted.push((key, record.lsn));
        }
        remove_version(context, container, key, record, &mut counters)?;
    }
    next_lsn(context, &mut counters);
    for (key, deleted_lsn) in &deleted {
        change_log::log_delete(context, number, key, *deleted_lsn, counters.lsn)?;
    }
    store_counters(context, number, &counters)?;
    Ok(deleted.len() as u64)
}

/// The sweeper's delete step, inside the writer: deletes each candidate the sweeper found in the
/// expiry index if it is still that very version and still expired. Returns how many went and
/// what deleting them cost, as user deletes of the same items would.
pub(crate) fn apply_expire(
    context: &mut WriteContext<'_>,
    database_id: &str,
    container_id: &str,
    candidates: Vec<(Vec<u8>, ExpiryEntry)>,
) -> EngineResult<(u64, f64)> {
    // Re-read the container: its setting may have changed since the scan.
    let container = writer_container(context, database_id, container_id)?;
    let number = container.key_number();
    // Every expiry this purge removes has its TTL event logged first; the purge logs nothing.
    change_log::emit_ttl_events(context, &container)?;
    let mut counters = read_counters(context.reader(), number)?;
    let mut deleted = 0u64;
    let mut spent_ru = 0.0;
    for (expiry_key, entry) in candidates {
        let Some((_, suffix)) = keys::split_expiry_key(&expiry_key) else {
            continue;
        };
        let item_key = keys::item_key_from_suffix(number, suffix);
        // Every write replaces the item's index entry, so an item still at the entry's LSN is
        // the very version the sweeper found expired.
        let Some(record) = context
            .get(Table::Items, &item_key)?
            .and_then(|v| ItemRecord::decode(&v))
        else {
            continue;
        };
        if record.lsn != entry.lsn || !record_is_expired(&container, &record, context.now_ms) {
            continue;
        }
        remove_version(context, &container, &item_key, &record, &mut counters)?;
        deleted += 1;
        spent_ru += request_units::write(record.body.len());
    }
    if deleted > 0 {
        store_counters(context, number, &counters)?;
    }
    Ok((deleted, spent_ru))
}
