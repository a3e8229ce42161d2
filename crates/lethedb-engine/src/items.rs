//! Items: create, read, replace, upsert, delete and read feeds, with time to live applied on
//! every path.
//!
//! An item is identified by its container, partition key value and id. Every write stamps the
//! item with the writer's clock (restarting its TTL countdown), moves its expiry-index entry and
//! updates the container's counters in the same transaction. Every read asks
//! [`Container::ttl`] whether the stored version has expired, so an expired item is absent
//! whether or not the sweeper has deleted it yet.

use crate::catalog::{read_counters, writer_container, Container};
use crate::error::{EngineError, EngineResult};
use crate::keys::{self, ExpiryClass};
use crate::partition_key::PartitionKeyValue;
use crate::records::{self, ExpiryEntry, ItemRecord, SYSTEM_PROPERTIES};
use crate::ttl::{self, ItemTtl};
use crate::writer::WriteContext;
use crate::{validate_id, Engine, ITEM_BYTES_MAX, PAGE_ITEMS_MAX};
use base64::Engine as _;
use lethedb_storage::{KeyRange, ReadTxn, Table};
use serde_json::Value;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

/// How a write treats an existing item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// Fails with a conflict if the item exists.
    Create,
    /// Creates or replaces.
    Upsert,
    /// Replaces the item with this id; fails if it does not exist.
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
        records::etag(self.container.key_number(), self.record.lsn)
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
        let mut document = self
            .record
            .document()
            .ok_or_else(|| EngineError::Unavailable("a stored item could not be read".into()))?;
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
}

/// One page of a read feed.
#[derive(Debug)]
pub struct Feed {
    pub items: Vec<StoredItem>,
    pub continuation: Option<String>,
    pub lsn: u64,
}

/// Whether a stored version is expired at `now_ms` under the container's current setting.
pub(crate) fn is_expired(
    container: &Container,
    last_modified_ms: i64,
    ttl: ItemTtl,
    now_ms: i64,
) -> bool {
    container.ttl.is_expired(last_modified_ms, ttl, now_ms)
}

/// Where a version sits in the expiry index, if anywhere.
pub(crate) fn expiry_placement(last_modified_ms: i64, ttl: ItemTtl) -> Option<(ExpiryClass, i64)> {
    match ttl {
        ItemTtl::Never => None,
        ItemTtl::Secs(secs) => Some((
            ExpiryClass::Own,
            ttl::expiry_instant_ms(last_modified_ms, secs),
        )),
        ItemTtl::Inherit => Some((ExpiryClass::Default, last_modified_ms)),
    }
}

fn not_found() -> EngineError {
    EngineError::NotFound("Entity with the specified id does not exist in the system.".into())
}

fn precondition_failed() -> EngineError {
    EngineError::PreconditionFailed(
        "Operation cannot be performed because one of the specified precondition is not met."
            .into(),
    )
}

fn corrupted_item() -> EngineError {
    EngineError::Unavailable("a stored item could not be read".into())
}

/// Removes one stored version (visible or expired) with its index entry and counters.
pub(crate) fn remove_version(
    context: &mut WriteContext<'_>,
    container_number: u64,
    item_key: &[u8],
    record: &ItemRecord,
    counters: &mut records::Counters,
) -> EngineResult<()> {
    if let Some((class, time_ms)) = expiry_placement(record.last_modified_ms, record.ttl) {
        context.delete(
            Table::Expiry,
            &keys::expiry_key(container_number, class, time_ms, &item_key[8..]),
        )?;
    }
    context.delete(Table::Items, item_key)?;
    context.delete(
        Table::ResourceIds,
        &keys::resource_id_key(container_number, record.document_number),
    )?;
    counters.items = counters.items.saturating_sub(1);
    counters.bytes = counters.bytes.saturating_sub(record.body.len() as u64);
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
    let record = read_record(context.reader(), &key)?.ok_or_else(not_found)?;
    if is_expired(
        container,
        record.last_modified_ms,
        record.ttl,
        context.now_ms,
    ) {
        return Err(not_found());
    }
    Ok(record)
}

fn read_record(reader: &dyn ReadTxn, key: &[u8]) -> EngineResult<Option<ItemRecord>> {
    match reader.get(Table::Items, key)? {
        None => Ok(None),
        Some(bytes) => ItemRecord::decode(&bytes)
            .map(Some)
            .ok_or_else(corrupted_item),
    }
}

/// Validates and normalises a body for storage: an object with a valid id, no system properties,
/// within the size limit. Returns the id, the document and its compact bytes.
pub(crate) fn prepare_body(body: Value) -> EngineResult<(String, Value, Vec<u8>)> {
    let Value::Object(mut map) = body else {
        return Err(EngineError::BadRequest(
            "The request body must be a JSON object.".into(),
        ));
    };
    let id = match map.get("id") {
        Some(Value::String(id)) => id.clone(),
        Some(_) => {
            return Err(EngineError::BadRequest(
                "The input content is invalid because the required properties - 'id' - must be a string.".into(),
            ))
        }
        None => {
            return Err(EngineError::BadRequest(
                "The input content is invalid because the required properties - 'id; ' - are missing".into(),
            ))
        }
    };
    validate_id(&id)?;
    for name in SYSTEM_PROPERTIES {
        map.shift_remove(name);
    }
    let document = Value::Object(map);
    let bytes = serde_json::to_vec(&document)
        .map_err(|_| EngineError::BadRequest("The document cannot be serialised.".into()))?;
    if bytes.len() > ITEM_BYTES_MAX {
        return Err(EngineError::TooLarge("Request size is too large".into()));
    }
    Ok((id, document, bytes))
}

fn decode_continuation(token: &str) -> EngineResult<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| EngineError::BadRequest("The continuation token is invalid.".into()))
}

fn encode_continuation(key_suffix: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key_suffix)
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
            return Err(EngineError::BadRequest(
                    "PartitionKey extracted from document doesn't match the one specified in the header.".into(),
                ));
        }
    }
    let partition_bytes = document_key.encode();
    if partition_bytes.len() > crate::partition_key::PARTITION_KEY_BYTES_MAX {
        return Err(EngineError::BadRequest(
            "The partition key value is too large.".into(),
        ));
    }
    let number = container.key_number();
    let key = keys::item_key(number, &partition_bytes, &id);
    let existing = read_record(context.reader(), &key)?;
    let visible = existing.as_ref().filter(|record| {
        !is_expired(
            &container,
            record.last_modified_ms,
            record.ttl,
            context.now_ms,
        )
    });
    let current_etag = visible.map(|record| records::etag(number, record.lsn));
    match (&mode, visible) {
        (WriteMode::Create, Some(_)) => {
            return Err(EngineError::Conflict(
                "Entity with the specified id already exists in the system.".into(),
            ))
        }
        (WriteMode::Replace(_), None) => return Err(not_found()),
        _ => {}
    }
    if let Some(expected) = &if_match {
        if mode != WriteMode::Create
            && expected != "*"
            && current_etag.as_deref() != Some(expected.as_str())
        {
            return Err(precondition_failed());
        }
        if mode != WriteMode::Create && expected == "*" && visible.is_none() {
            return Err(precondition_failed());
        }
    }
    // Validation is over: from here on the operation writes.
    let mut counters = read_counters(context.reader(), number)?;
    let document_number = match visible {
        Some(record) => record.document_number,
        None => {
            counters.next_document_number += 1;
            counters.next_document_number
        }
    };
    let created = visible.is_none();
    if let Some(old) = &existing {
        remove_version(context, number, &key, old, &mut counters)?;
    }
    counters.lsn += 1;
    let record = ItemRecord {
        last_modified_ms: context.now_ms,
        lsn: counters.lsn,
        document_number,
        ttl: ttl::item_ttl(&document),
        body: bytes,
    };
    if let Some((class, time_ms)) = expiry_placement(record.last_modified_ms, record.ttl) {
        let entry = ExpiryEntry {
            lsn: record.lsn,
            body_bytes: record.body.len() as u64,
        };
        context.put(
            Table::Expiry,
            &keys::expiry_key(number, class, time_ms, &key[8..]),
            &entry.encode(),
        )?;
    }
    context.put(Table::Items, &key, &record.encode())?;
    context.put(
        Table::ResourceIds,
        &keys::resource_id_key(number, record.document_number),
        &key[8..],
    )?;
    counters.items += 1;
    counters.bytes += record.body.len() as u64;
    context.put(
        Table::Counters,
        &keys::counters_key(number),
        &counters.encode(),
    )?;
    Ok(ItemOutcome {
        item: StoredItem { container, record },
        created,
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
    let partition_key = match partition_key {
        Some(sent) => container.partition_key.require_full(sent)?,
        None => container.partition_key.missing_header()?,
    };
    let number = container.key_number();
    let key = keys::item_key(number, &partition_key.encode(), id);
    let existing = read_record(context.reader(), &key)?.ok_or_else(not_found)?;
    if is_expired(
        container,
        existing.last_modified_ms,
        existing.ttl,
        context.now_ms,
    ) {
        return Err(not_found());
    }
    if let Some(expected) = &if_match {
        if expected != "*" && *expected != records::etag(number, existing.lsn) {
            return Err(precondition_failed());
        }
    }
    let mut counters = read_counters(context.reader(), number)?;
    remove_version(context, number, &key, &existing, &mut counters)?;
    counters.lsn += 1;
    context.put(
        Table::Counters,
        &keys::counters_key(number),
        &counters.encode(),
    )?;
    Ok(counters.lsn)
}

impl Engine {
    /// Creates, upserts or replaces an item. `partition_key` is the request's header value, if
    /// sent; it must name the partition key the document holds.
    pub async fn write_item(
        &self,
        database_id: &str,
        container_id: &str,
        mode: WriteMode,
        partition_key: Option<PartitionKeyValue>,
        body: Value,
        if_match: Option<String>,
    ) -> EngineResult<ItemOutcome> {
        let (id, document, bytes) = prepare_body(body)?;
        if let WriteMode::Replace(url_id) = &mode {
            if url_id != &id {
                return Err(EngineError::BadRequest(
                    "The id in the request body does not match the id in the request URI.".into(),
                ));
            }
        }
        let (database_id, container_id) = (database_id.to_string(), container_id.to_string());
        self.inner
            .writer
            .write(move |context| {
                let container = writer_container(context, &database_id, &container_id)?;
                apply_write(
                    context,
                    container,
                    mode,
                    partition_key,
                    id,
                    document,
                    bytes,
                    if_match,
                )
            })
            .await
    }

    /// Reads one item; expired items are not found.
    pub fn read_item(
        &self,
        container: &Arc<Container>,
        partition_key: Option<PartitionKeyValue>,
        id: &str,
    ) -> EngineResult<StoredItem> {
        let partition_key = match partition_key {
            Some(sent) => container.partition_key.require_full(sent)?,
            None => container.partition_key.missing_header()?,
        };
        let key = keys::item_key(container.key_number(), &partition_key.encode(), id);
        let reader = self.inner.store.read()?;
        let record = read_record(&*reader, &key)?.ok_or_else(not_found)?;
        if is_expired(
            container,
            record.last_modified_ms,
            record.ttl,
            self.now_ms(),
        ) {
            return Err(not_found());
        }
        Ok(StoredItem {
            container: Arc::clone(container),
            record,
        })
    }

    /// Deletes one item; returns the container LSN of the deletion.
    pub async fn delete_item(
        &self,
        database_id: &str,
        container_id: &str,
        partition_key: Option<PartitionKeyValue>,
        id: &str,
        if_match: Option<String>,
    ) -> EngineResult<u64> {
        let (database_id, container_id, id) = (
            database_id.to_string(),
            container_id.to_string(),
            id.to_string(),
        );
        self.inner
            .writer
            .write(move |context| {
                let container = writer_container(context, &database_id, &container_id)?;
                apply_delete(context, &container, partition_key, &id, if_match)
            })
            .await
    }

    /// One page of a container's (or one partition's) items in key order. The continuation is
    /// the last key returned, so a feed resumes exactly after it even if items changed meanwhile.
    pub fn read_feed(
        &self,
        container: &Arc<Container>,
        partition_key: Option<PartitionKeyValue>,
        page_items_max: usize,
        continuation: Option<&str>,
    ) -> EngineResult<Feed> {
        let number = container.key_number();
        let scope = match &partition_key {
            Some(value) => keys::partition_prefix(number, &value.encode()),
            None => keys::container_items_prefix(number),
        };
        let mut range = KeyRange::prefix(&scope);
        if let Some(token) = continuation {
            let mut after = keys::container_items_prefix(number);
            after.extend_from_slice(&decode_continuation(token)?);
            if !after.starts_with(&scope) {
                return Err(EngineError::BadRequest(
                    "The continuation token is invalid.".into(),
                ));
            }
            range.start = Bound::Excluded(after);
        }
        let page_items_max = page_items_max.clamp(1, PAGE_ITEMS_MAX);
        let now_ms = self.now_ms();
        let reader = self.inner.store.read()?;
        let mut items = Vec::new();
        let mut last_key = Vec::new();
        let mut more = false;
        let mut broken = false;
        reader.scan(Table::Items, &range, &mut |key, value| {
            let Some(record) = ItemRecord::decode(value) else {
                broken = true;
                return ControlFlow::Break(());
            };
            if is_expired(container, record.last_modified_ms, record.ttl, now_ms) {
                return ControlFlow::Continue(());
            }
            if items.len() == page_items_max {
                // One more visible item exists: the page gets a continuation.
                more = true;
                return ControlFlow::Break(());
            }
            items.push(StoredItem {
                container: Arc::clone(container),
                record,
            });
            last_key.clear();
            last_key.extend_from_slice(key);
            ControlFlow::Continue(())
        })?;
        if broken {
            return Err(corrupted_item());
        }
        let lsn = read_counters(&*reader, number)?.lsn;
        let continuation = more.then(|| encode_continuation(&last_key[8..]));
        Ok(Feed {
            items,
            continuation,
            lsn,
        })
    }

    /// Deletes every item of one logical partition (expired ones too) in one transaction;
    /// returns how many visible items went.
    pub async fn delete_partition(
        &self,
        database_id: &str,
        container_id: &str,
        partition_key: PartitionKeyValue,
    ) -> EngineResult<u64> {
        let (database_id, container_id) = (database_id.to_string(), container_id.to_string());
        self.inner
            .writer
            .write(move |context| {
                let container = writer_container(context, &database_id, &container_id)?;
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
                    return Err(corrupted_item());
                }
                let mut counters = read_counters(context.reader(), number)?;
                let mut visible = 0;
                for (key, record) in &doomed {
                    if !is_expired(
                        &container,
                        record.last_modified_ms,
                        record.ttl,
                        context.now_ms,
                    ) {
                        visible += 1;
                    }
                    remove_version(context, number, key, record, &mut counters)?;
                }
                counters.lsn += 1;
                context.put(
                    Table::Counters,
                    &keys::counters_key(number),
                    &counters.encode(),
                )?;
                Ok(visible)
            })
            .await
    }

    /// The id of the item whose `_rid` is `rid`, for clients that address items by `_self`.
    pub fn item_id_by_rid(&self, container: &Container, rid: &str) -> EngineResult<Option<String>> {
        let Some(bytes) = records::decode_rid(rid).filter(|b| b.len() == 16) else {
            return Ok(None);
        };
        let document_number = u64::from_le_bytes(bytes[8..16].try_into().unwrap_or_default());
        let reader = self.inner.store.read()?;
        let Some(suffix) = reader.get(
            Table::ResourceIds,
            &keys::resource_id_key(container.key_number(), document_number),
        )?
        else {
            return Ok(None);
        };
        Ok(keys::split_item_suffix(&suffix).map(|(_, id)| id.to_string()))
    }

    /// The container's current LSN, for session tokens on reads.
    pub fn container_lsn(&self, container: &Container) -> EngineResult<u64> {
        let reader = self.inner.store.read()?;
        Ok(read_counters(&*reader, container.key_number())?.lsn)
    }
}
