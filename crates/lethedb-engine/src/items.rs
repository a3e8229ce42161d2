//! Items: the stored item as clients see it, and every mutation of items, applied inside the
//! writer: create, upsert, replace, delete, deleting a partition, deleting a container's items,
//! and the sweeper's delete step.
//!
//! An item is identified by its container, partition key value and id. Every write stamps the
//! item with the writer's clock (restarting its TTL countdown), moves its expiry-index entry and
//! updates the container's counters in the same transaction. Every mutation asks
//! `expiry::is_expired` whether the stored version is visible, so an expired item is absent
//! whether or not the sweeper has deleted it yet. The requests that reach these mutations are in
//! `item_requests.rs`; what the sweeper deletes and when is the sweeper's business.

use crate::change_log;
use crate::container::Container;
use crate::error::{
    corrupted, item_conflict, item_not_found, precondition_failed, EngineError, EngineResult,
    ErrorCode,
};
use crate::expiry::{expiry_placement, record_is_expired};
use crate::keys;
use crate::limits::{validate_id, ITEM_BYTES_MAX};
use crate::partition_key::{PartitionKeyValue, PARTITION_KEY_BYTES_MAX};
use crate::records::{
    read_counters, store_counters, writer_container, Counters, ExpiryEntry, ItemRecord,
    SYSTEM_PROPERTIES,
};
use crate::request_units;
use crate::rids;
use crate::ttl;
use crate::writer::WriteContext;
use lethedb_storage::{KeyRange, ReadTxn, Table};
use serde_json::Value;
use std::ops::ControlFlow;
use std::sync::Arc;

/// How a write treats an existing item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// Fails with a conflict if the item exists.
    Create,
    /// Creates or replaces.
    Upsert,
    /// Replaces the item with this id (the URL's); fails if it does not exist. A body with
    /// another id renames the item, unless an item of that id exists (conflict).
    Replace(String),
}

/// One visible version of an item.
#[derive(Clone, Debug)]
pub struct StoredItem {
    pub container: Arc<Container>,
    pub record: ItemRecord,
}

impl StoredItem {
    pub fn etag(&self) -> String {
        rids::etag(self.container.key_number(), self.record.lsn)
    }

    /// The item's `_rid`.
    fn rid(&self) -> String {
        self.container.document_rid(self.record.document_number)
    }

    /// The item as clients see it, as JSON bytes: the stored document with the system
    /// properties spliced in, written directly (their values need no escaping but the ETag's
    /// quotes).
    pub fn to_json_bytes(&self) -> Vec<u8> {
        let body = &self.record.body;
        let rid = self.rid();
        let etag = self.etag();
        let mut out = Vec::with_capacity(body.len() + 160);
        // Stored bodies are compact JSON objects written by this module: `{` ... `}`.
        out.extend_from_slice(&body[..body.len().saturating_sub(1)]);
        if body.len() > 2 {
            out.push(b',');
        }
        out.extend_from_slice(b"\"_rid\":\"");
        out.extend_from_slice(rid.as_bytes());
        out.extend_from_slice(b"\",\"_self\":\"");
        out.extend_from_slice(self.container.documents_self_prefix.as_bytes());
        out.extend_from_slice(rid.as_bytes());
        out.extend_from_slice(b"/\",\"_etag\":\"\\\"");
        out.extend_from_slice(etag.trim_matches('"').as_bytes());
        out.extend_from_slice(b"\\\"\",\"_attachments\":\"attachments/\",\"_ts\":");
        out.extend_from_slice(
            self.record
                .last_modified_ms
                .div_euclid(1000)
                .to_string()
                .as_bytes(),
        );
        out.push(b'}');
        out
    }

    /// The item as a JSON value, system properties included (what queries see).
    pub fn to_value(&self) -> EngineResult<Value> {
        let mut document = self.record.document().ok_or_else(|| corrupted("item"))?;
        if let Value::Object(map) = &mut document {
            let rid = self.rid();
            let self_link = format!("{}{rid}/", self.container.documents_self_prefix);
            map.insert("_rid".into(), Value::String(rid));
            map.insert("_self".into(), Value::String(self_link));
            map.insert("_etag".into(), Value::String(self.etag()));
            map.insert("_attachments".into(), Value::String("attachments/".into()));
            map.insert(
                "_ts".into(),
                Value::from(self.record.last_modified_ms.div_euclid(1000)),
            );
        }
        Ok(document)
    }
}

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
const PER_ITEM_TABLES: [Table; 5] = [
    Table::Items,
    Table::Expiry,
    Table::ResourceIds,
    Table::ChangeIndex,
    Table::ChangeLog,
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

/// Removes one stored version (visible or expired) with its index entry and counters.
pub(crate) fn remove_version(
    context: &mut WriteContext<'_>,
    container_number: u64,
    item_key: &[u8],
    record: &ItemRecord,
    counters: &mut Counters,
) -> EngineResult<()> {
    remove_version_keeping(context, container_number, item_key, record, counters, false)
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
    counters.items = counters.items.saturating_sub(1);
    counters.bytes = counters.bytes.saturating_sub(record.body.len() as u64);
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
    let record = read_record(context.reader(), &key)?.ok_or_else(item_not_found)?;
    if record_is_expired(container, &record, context.now_ms) {
        return Err(item_not_found());
    }
    Ok(record)
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

/// Validates and normalises a body for storage: an object with a valid id, no system properties,
/// within the size limit. Returns the id, the document and its compact bytes.
pub(crate) fn prepare_body(body: Value) -> EngineResult<(String, Value, Vec<u8>)> {
    let Value::Object(mut map) = body else {
        return Err(EngineError::new(ErrorCode::InvalidDocument));
    };
    let id = match map.get("id") {
        Some(Value::String(id)) => id.clone(),
        Some(_) => {
            return Err(EngineError::with_message(
                ErrorCode::InvalidDocument,
                "The input content is invalid because the required properties - 'id' - must be a string.",
            ))
        }
        None => {
            return Err(EngineError::with_message(
                ErrorCode::InvalidDocument,
                "The input content is invalid because the required properties - 'id; ' - are missing",
            ))
        }
    };
    validate_id(&id)?;
    for name in SYSTEM_PROPERTIES {
        map.shift_remove(name);
    }
    let document = Value::Object(map);
    let bytes = serde_json::to_vec(&document).map_err(|_| {
        EngineError::with_message(
            ErrorCode::InvalidDocument,
            "The document cannot be serialised.",
        )
    })?;
    if bytes.len() > ITEM_BYTES_MAX {
        return Err(EngineError::new(ErrorCode::ItemTooLarge));
    }
    Ok((id, document, bytes))
}

/// Applies one create, upsert or replace inside the writer: validates against the current
/// state (visibility, ETag, partition key, TTL), then writes the item, its index entries and
/// the counters. Nothing is written when it returns an error.
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply_write(
    context: &mut WriteContext<'_>,
    container: Arc<Container>,
    mode: WriteMode,
    partition_key: Option<PartitionKeyValue>,
    id: String,
    document: Value,
    bytes: Vec<u8>,
    if_match: Option<String>,
) -> EngineResult<ItemOutcome> {
    ttl::validate_item_ttl(&document, container.ttl.is_on())?;
    let document_key = container.partition_key.extract(&document);
    if let Some(sent) = partition_key {
        let sent = container.partition_key.require_full(sent)?;
        if sent.encode() != document_key.encode() {
            return Err(EngineError::with_message(
                ErrorCode::PartitionKeyMismatch,
                "PartitionKey extracted from document doesn't match the one specified in the header.",
            ));
        }
    }
    let partition_bytes = document_key.encode();
    if partition_bytes.len() > PARTITION_KEY_BYTES_MAX {
        return Err(EngineError::with_message(
            ErrorCode::InvalidPartitionKey,
            "The partition key value is too large.",
        ));
    }
    let number = container.key_number();
    let key = keys::item_key(number, &partition_bytes, &id);
    let existing = read_record(context.reader(), &key)?;
    let visible = existing
        .as_ref()
        .filter(|record| !record_is_expired(&container, record, context.now_ms));
    // A replace whose body names another id renames the item (the service allows it; only the
    // partition key is fixed): the URL's id is the item replaced, the body's id its new name.
    let renamed_from = match &mode {
        WriteMode::Replace(url_id) if *url_id != id => {
            Some(keys::item_key(number, &partition_bytes, url_id))
        }
        _ => None,
    };
    let source = match &renamed_from {
        Some(old_key) => read_record(context.reader(), old_key)?
            .filter(|record| !record_is_expired(&container, record, context.now_ms)),
        None => None,
    };
    // The visible version this write replaces, which an If-Match is checked against.
    let replaced = if renamed_from.is_some() {
        source.as_ref()
    } else {
        visible
    };
    match (&mode, replaced, visible) {
        (WriteMode::Create, _, Some(_)) => return Err(item_conflict()),
        (WriteMode::Replace(_), None, _) => return Err(item_not_found()),
        (WriteMode::Replace(_), Some(_), Some(_)) if renamed_from.is_some() => {
            return Err(item_conflict())
        }
        _ => {}
    }
    if let Some(expected) = &if_match {
        // A create ignores the condition; an upsert that finds no item creates it, condition
        // or not (the service's upsert: replace semantics if the item exists, create if not).
        let applies = match mode {
            WriteMode::Create => false,
            WriteMode::Upsert => replaced.is_some(),
            WriteMode::Replace(_) => true,
        };
        let current_etag = replaced.map(|record| rids::etag(number, record.lsn));
        let met = if expected == "*" {
            replaced.is_some()
        } else {
            current_etag.as_deref() == Some(expected.as_str())
        };
        if applies && !met {
            return Err(precondition_failed());
        }
    }
    // Validation is over: from here on the operation writes.
    if existing.is_some() && visible.is_none() {
        // An expired version is about to go: its TTL event must be out first.
        change_log::emit_ttl_events(context, &container)?;
    }
    let mut counters = read_counters(context.reader(), number)?;
    let document_number = if let Some(record) = replaced {
        record.document_number
    } else {
        counters.next_document_number += 1;
        counters.next_document_number
    };
    let created = replaced.is_none();
    if let (Some(old_key), Some(old)) = (&renamed_from, &source) {
        remove_version(context, number, old_key, old, &mut counters)?;
    }
    // The same key keeps its document number, so its resource-id entry stays as it is.
    let keeps_resource_id = existing
        .as_ref()
        .is_some_and(|old| old.document_number == document_number);
    if let Some(old) = &existing {
        remove_version_keeping(context, number, &key, old, &mut counters, keeps_resource_id)?;
    }
    next_lsn(context, &mut counters);
    let record = ItemRecord {
        last_modified_ms: context.now_ms,
        lsn: counters.lsn,
        document_number,
        ttl: ttl::item_ttl(&document),
        body: bytes,
    };
    store_version(
        context,
        number,
        &key,
        &record,
        &mut counters,
        keeps_resource_id,
    )?;
    if let (Some(old_key), Some(old)) = (&renamed_from, &source) {
        change_log::log_delete(context, number, old_key, old.lsn, record.lsn)?;
    }
    let replaced_lsn = if renamed_from.is_some() {
        None
    } else {
        visible.map(|old| old.lsn)
    };
    change_log::log_write(context, number, &key, &record, replaced_lsn)?;
    store_counters(context, number, &counters)?;
    Ok(ItemOutcome {
        item: StoredItem { container, record },
        created,
        partition_key: document_key,
    })
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
    let existing = read_record(context.reader(), &key)?.ok_or_else(item_not_found)?;
    if record_is_expired(container, &existing, context.now_ms) {
        return Err(item_not_found());
    }
    if let Some(expected) = &if_match {
        if expected != "*" && *expected != rids::etag(number, existing.lsn) {
            return Err(precondition_failed());
        }
    }
    let mut counters = read_counters(context.reader(), number)?;
    remove_version(context, number, &key, &existing, &mut counters)?;
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
    let mut broken = false;
    context.scan(
        Table::Items,
        &KeyRange::prefix(&keys::partition_prefix(number, &partition_key.encode())),
        &mut |key, value| {
            match ItemRecord::decode(value) {
                Some(record) => doomed.push((key.to_vec(), record)),
                None => broken = true,
            }
            ControlFlow::Continue(())
        },
    )?;
    if broken {
        return Err(corrupted("item"));
    }
    // Expired versions are about to go: their TTL events must be out first.
    change_log::emit_ttl_events(context, container)?;
    let mut counters = read_counters(context.reader(), number)?;
    let mut deleted = Vec::new();
    for (key, record) in &doomed {
        if !record_is_expired(container, record, context.now_ms) {
            deleted.push((key, record.lsn));
        }
        remove_version(context, number, key, record, &mut counters)?;
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
        remove_version(context, number, &item_key, &record, &mut counters)?;
        deleted += 1;
        spent_ru += request_units::write(record.body.len());
    }
    if deleted > 0 {
        store_counters(context, number, &counters)?;
    }
    Ok((deleted, spent_ru))
}
