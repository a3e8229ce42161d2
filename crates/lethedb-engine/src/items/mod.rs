//! Items: every mutation of items, applied inside the writer: create, upsert, replace, delete,
//! deleting a partition, deleting a container's items, and the sweeper's delete step (the
//! stored item as clients see it is `stored.rs`).
//!
//! An item is identified by its container, partition key value and id. Every write stamps the
//! item with the writer's clock (restarting its TTL countdown), moves its expiry-index entry and
//! updates the counters of the item's shard and its unique key claims (`unique_keys.rs`) in the same
//! transaction. Every mutation asks `expiry::is_expired` whether the stored version is visible,
//! so an expired item is absent whether or not the sweeper has deleted it yet. Whether a write
//! or delete may go ahead is decided by `items/rules.rs`; this module finds the versions the
//! rules look at and applies what they decide. The requests that reach these mutations are in
//! `items/requests.rs` and the doors of `api/items.rs`; what the sweeper deletes and when is
//! the sweeper's business.

pub(crate) mod batch;
pub(crate) mod document_cache;
pub(crate) mod patch;
pub(crate) mod purge;
pub(crate) mod requests;
pub(crate) mod rules;
pub(crate) mod stored;
pub(crate) mod unique_keys;
#[cfg(test)]
mod written_test;

pub use self::stored::StoredItem;

use self::rules::{Body, Effect, Version, WriteMode};
use self::unique_keys::{check_write, release_claims, store_claims, WriteClaims};
use crate::container::Container;
use crate::counters::{delete_counters, read_counters, store_counters, Counters};
use crate::error::{corrupted, item_not_found, EngineResult};
use crate::feed::{change_log, ttl_events};
use crate::index::maintain::{replace_entries, EntryChanges, VersionRef};
use crate::keys::{self, PartitionPlace};
use crate::partitions::partition_key::PartitionKeyValue;
use crate::partitions::shards::{next_document_number, Shard};
use crate::records::{ExpiryEntry, ItemRecord, LogPlace};
use crate::throughput::request_units;
use crate::ttl;
use crate::ttl::expiry::{expiry_placement, record_is_expired};
use crate::writer::WriteContext;
use lethedb_storage::{Bytes, KeyRange, ReadTxn, Table};
use serde_json::Value;
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
    /// What the write costs: the documents it inserted and deleted, by size, and the index
    /// terms it changed (`request_units::write`).
    pub request_units: f64,
    /// The item's key and the version's document, when it replaced a version: what
    /// `Engine::write_item` puts in the writer's cache of written documents once committed.
    pub(crate) written: Option<(Vec<u8>, Arc<Value>)>,
}

/// The result of a delete.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ItemDeleted {
    /// The container LSN of the deletion.
    pub lsn: u64,
    /// What it costs: the document deleted, by size, and the index terms removed.
    pub request_units: f64,
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
const PER_ITEM_TABLES: [Table; 5] = [
    Table::Items,
    Table::Expiry,
    Table::ResourceIds,
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
    delete_counters(context, container_number)
}

/// Removes one stored version (visible or expired) with its expiry and index entries and
/// counters; returns the index entries it removed.
pub(crate) fn remove_version(
    context: &mut WriteContext<'_>,
    container: &Container,
    item_key: &[u8],
    record: &ItemRecord,
    counters: &mut Counters,
) -> EngineResult<EntryChanges> {
    let cached = context.written.get(item_key, record.lsn);
    let old = VersionRef {
        record,
        document: cached.as_deref(),
    };
    let changes = replace_entries(context, container, Some(old), None)?;
    remove_version_keeping(
        context,
        container,
        item_key,
        record,
        counters,
        Keep::default(),
    )?;
    Ok(changes)
}

/// What a removal leaves in place for the version that replaces it under the same key: each
/// entry rewritten costs the commit a copied B-tree leaf.
#[derive(Clone, Copy, Default)]
struct Keep<'a> {
    /// The resource-id entry (the replacement keeps the document number).
    resource_id: bool,
    /// The unique key claims the replacement keeps.
    claims: &'a [Vec<u8>],
}

/// [`remove_version`], leaving in place what `keep` says the replacement keeps.
fn remove_version_keeping(
    context: &mut WriteContext<'_>,
    container: &Container,
    item_key: &[u8],
    record: &ItemRecord,
    counters: &mut Counters,
    keep: Keep<'_>,
) -> EngineResult<()> {
    let container_number = container.key_number();
    release_claims(context, container, item_key, record, keep.claims)?;
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
    change_log::retire_version(context, container, item_key, record)?;
    if !keep.resource_id {
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
/// resource-id entry only when `resource_id_stored` is false. Its change-log position is
/// the caller's (`change_log::log_write`).
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
    context.put_bytes(Table::Items, item_key, Bytes::from(record.encode()))?;
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
    let key = container.item_key(partition_key, id);
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
    decode_record(reader.get(Table::Items, key)?)
}

/// A stored item's bytes, if any, as its record.
pub(crate) fn decode_record(bytes: Option<Vec<u8>>) -> EngineResult<Option<ItemRecord>> {
    bytes
        .map(|bytes| ItemRecord::decode(&bytes).ok_or_else(|| corrupted("item")))
        .transpose()
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
    /// The version the write replaces, parsed, with its LSN, when the caller already parsed it
    /// (a patch): its index entries are computed from it instead of parsing it again.
    pub(crate) replaced_document: Option<(u64, Arc<Value>)>,
}

/// What a write of `request` will read, as far as the request tells before it runs: its
/// item and its shard's counters (nothing when the body names no partition key; the
/// write then fails without reading). A hint for the writer ([`crate::writer::Writer::write_reading`]).
pub(crate) fn write_reads(container: &Container, request: &WriteRequest) -> Vec<(Table, Vec<u8>)> {
    let mut reads = Vec::new();
    if let Ok(document_key) = rules::document_partition_key(container, &request.body.document) {
        let place = container.partition_place(&document_key);
        reads.push((
            Table::Counters,
            container.counters_key(container.shard_of(&document_key)),
        ));
        reads.push((
            Table::Items,
            keys::item_key(container.key_number(), &place, &request.body.id),
        ));
    }
    reads
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
    /// The new version's unique key claims.
    claims: WriteClaims,
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
        replaced_document,
    } = request;
    let document_key = rules::document_partition_key(&container, &body.document)?;
    rules::check_sent_partition_key(&container, partition_key, &document_key)?;
    let place = container.partition_place(&document_key);
    rules::check_partition_key_size(place.partition_key())?;
    let found = find_versions(context, &container, &mode, &place, &body.id)?;
    let number = container.key_number();
    let taken = found.renamed_from.is_some() && found.visible;
    let current = found
        .replaced()
        .map(|record| stored_version(number, record));
    let effect = rules::decide_write(&mode, if_match.as_deref(), current, taken)?;
    let renamed = found.renamed_from.as_ref().map(|(key, _)| key.as_slice());
    let claims = check_write(
        context,
        &container,
        place.partition_key(),
        &body.document,
        &found.key,
        renamed,
    )?;
    // Validation is over: from here on the operation writes.
    let shard = container.shard_of_key(&found.key);
    let mut counters = read_counters(context.reader(), &container, shard)?;
    if let Some(expired) = found.existing.as_ref().filter(|_| !found.visible) {
        // An expired version is about to go: its TTL event must be out first.
        ttl_events::emit_ttl_event_of(context, &container, &found.key, expired, &mut counters)?;
    }
    let next_document = DocumentNumbering {
        shard,
        shards: container.shards,
        now_ms: context.now_ms,
    };
    let plan = plan_write(&found, effect, claims, &mut counters, next_document);
    let replaced_bytes = found
        .replaced()
        .filter(|_| !plan.created)
        .map(|old| old.body.len());
    let (record, changes, document) = store_write(
        context,
        &container,
        &found,
        &plan,
        (body, replaced_document),
        &mut counters,
    )?;
    store_counters(context, &container, shard, &counters)?;
    let request_units =
        request_units::write(replaced_bytes, Some(record.body.len()), changes.terms());
    // Items written once are not kept: only one that replaced a version is likely written again.
    let replacing = found.existing.is_some() && found.renamed_from.is_none();
    Ok(ItemOutcome {
        item: StoredItem { container, record },
        created: plan.created,
        partition_key: document_key,
        request_units,
        written: replacing.then(|| (found.key, Arc::new(document))),
    })
}

/// Reads the versions a write meets: the one under its own key, and for a rename the URL's.
fn find_versions(
    context: &WriteContext<'_>,
    container: &Container,
    mode: &WriteMode,
    place: &PartitionPlace,
    id: &str,
) -> EngineResult<Found> {
    let number = container.key_number();
    let key = keys::item_key(number, place, id);
    let existing = read_record(context.reader(), &key)?;
    let visible = existing
        .as_ref()
        .is_some_and(|record| !record_is_expired(container, record, context.now_ms));
    // A replace whose body names another id renames the item (the service allows it; only the
    // partition key is fixed): the URL's id is the item replaced, the body's id its new name.
    let renamed_from = match mode {
        WriteMode::Replace(url_id) if url_id != id => {
            let old_key = keys::item_key(number, place, url_id);
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

/// Where a new document number comes from: the write's shard, at the writer's time.
#[derive(Clone, Copy)]
struct DocumentNumbering {
    shard: Shard,
    shards: u16,
    now_ms: i64,
}

/// The document number the new version takes: the replaced item's, or its shard's next.
fn plan_write(
    found: &Found,
    effect: Effect,
    claims: WriteClaims,
    counters: &mut Counters,
    numbering: DocumentNumbering,
) -> WritePlan {
    let replaced = found.replaced().filter(|_| effect == Effect::Replace);
    let document_number = if let Some(record) = replaced {
        record.document_number
    } else {
        counters.next_document_number = next_document_number(
            counters.next_document_number,
            numbering.shard,
            numbering.shards,
            numbering.now_ms,
        );
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
        claims,
    }
}

/// Removes the versions a write replaces, stores the new one under the next LSN, and logs the
/// change (a rename also logs the deletion of the old id). `replaced` is the replaced version's
/// document with its LSN, when the caller parsed it. Returns the stored version, the index
/// entries the write changed and the version's document.
fn store_write(
    context: &mut WriteContext<'_>,
    container: &Container,
    found: &Found,
    plan: &WritePlan,
    (body, replaced): (Body, Option<(u64, Arc<Value>)>),
    counters: &mut Counters,
) -> EngineResult<(ItemRecord, EntryChanges, Value)> {
    let number = container.key_number();
    let mut changes = EntryChanges::default();
    if let Some((old_key, Some(old))) = &found.renamed_from {
        changes = remove_version(context, container, old_key, old, counters)?;
    }
    if let Some(old) = &found.existing {
        let keep = Keep {
            resource_id: plan.keeps_resource_id,
            claims: &plan.claims.all,
        };
        remove_version_keeping(context, container, &found.key, old, counters, keep)?;
    }
    next_lsn(context, counters);
    let mut record = ItemRecord {
        last_modified_ms: context.now_ms,
        lsn: counters.lsn,
        document_number: plan.document_number,
        ttl: ttl::item_ttl(&body.document),
        log_place: None,
        body: body.bytes,
    };
    // The version under the write's key (visible or expired) gives way to the new one: only
    // the entries that differ are written. Its document, if a write put it in the cache, is
    // not parsed again.
    let cached = found.existing.as_ref().and_then(|record| {
        let given = replaced.filter(|(lsn, _)| *lsn == record.lsn);
        given
            .map(|(_, document)| document)
            .or_else(|| context.written.get(&found.key, record.lsn))
    });
    let old = found.existing.as_ref().map(|record| VersionRef {
        record,
        document: cached.as_deref(),
    });
    let new = VersionRef {
        record: &record,
        document: Some(&body.document),
    };
    let changes = changes.and(replace_entries(context, container, old, Some(new))?);
    let key = &found.key;
    // A write under a renamed key logs the old key's delete and a create.
    let replaced_lsn = match &found.renamed_from {
        Some(_) => None,
        None => found.visible().map(|old| old.lsn),
    };
    let logged = change_log::write_entry(key, &record, replaced_lsn);
    if let Some((old_key, Some(old))) = &found.renamed_from {
        change_log::log_delete(context, number, old_key, old.lsn, record.lsn)?;
    }
    // The record keeps its entry's place, so that replacing it rewrites the entry blind.
    let sequence = change_log::log_write(context, number, record.lsn, logged)?;
    record.log_place = Some(LogPlace {
        sequence,
        replaced_lsn,
    });
    store_version(
        context,
        number,
        key,
        &record,
        counters,
        plan.keeps_resource_id,
    )?;
    store_claims(context, &plan.claims.to_store, key)?;
    Ok((record, changes, body.document))
}

/// Deletes one visible item inside the writer.
pub(crate) fn apply_delete(
    context: &mut WriteContext<'_>,
    container: &Container,
    partition_key: Option<PartitionKeyValue>,
    id: &str,
    if_match: Option<String>,
) -> EngineResult<ItemDeleted> {
    let partition_key = container.partition_key.point_key(partition_key)?;
    let number = container.key_number();
    let key = container.item_key(&partition_key, id);
    let current = visible_record(context, container, &key)?
        .map(|record| (stored_version(number, &record), record));
    let existing = rules::decide_existing(if_match.as_deref(), current)?;
    let shard = container.shard_of_key(&key);
    let mut counters = read_counters(context.reader(), container, shard)?;
    let changes = remove_version(context, container, &key, &existing, &mut counters)?;
    next_lsn(context, &mut counters);
    change_log::log_delete(context, number, &key, existing.lsn, counters.lsn)?;
    store_counters(context, container, shard, &counters)?;
    Ok(ItemDeleted {
        lsn: counters.lsn,
        request_units: request_units::write(Some(existing.body.len()), None, changes.terms()),
    })
}
