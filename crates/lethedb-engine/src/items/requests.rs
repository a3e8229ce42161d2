//! Item requests: the engine's entry points for items. Writes are sent to the writer as one job
//! each, which applies the mutation `items.rs` defines; reads (a point read, a read feed, an id by
//! `_rid`, the container's LSN) run on a read snapshot and hide expired items.
//!
//! This module decides no rule of its own about items: validation, visibility and storage layout
//! are below it (item_rules.rs, items.rs, expiry.rs, keys.rs).

use crate::container::Container;
use crate::engine::Engine;
use crate::error::{corrupted, invalid_continuation, item_not_found, EngineResult};
use crate::items::rules::{prepare_body, WriteMode};
use crate::items::{
    apply_delete, apply_delete_partition, apply_write, read_record, Feed, ItemOutcome, StoredItem,
    WriteRequest,
};
use crate::keys;
use crate::limits::PAGE_ITEMS_MAX;
use crate::partitions::partition_key::PartitionKeyValue;
use crate::partitions::ranges::{RangeFilter, RangeMatcher};
use crate::records::{read_counters, writer_container, ItemRecord};
use crate::rids;
use crate::ttl::expiry::record_is_expired;
use base64::Engine as _;
use lethedb_storage::{KeyRange, Table};
use serde_json::Value;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

pub(crate) fn decode_continuation(token: &str) -> EngineResult<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| invalid_continuation())
}

pub(crate) fn encode_continuation(key_suffix: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key_suffix)
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
        let request = WriteRequest {
            mode,
            partition_key,
            body: prepare_body(body)?,
            if_match,
        };
        let (database_id, container_id) = (database_id.to_string(), container_id.to_string());
        self.inner
            .writer
            .write(move |context| {
                let container = writer_container(context, &database_id, &container_id)?;
                apply_write(context, container, request)
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
        self.read_item_in(container, partition_key, id, false)
            .map(|(item, _)| item)
    }

    /// Reads one item and, from the same snapshot, the container's latest LSN: the session
    /// token a read answers with is the partition's latest, not the item's own.
    pub fn read_item_with_lsn(
        &self,
        container: &Arc<Container>,
        partition_key: Option<PartitionKeyValue>,
        id: &str,
    ) -> EngineResult<(StoredItem, u64)> {
        self.read_item_in(container, partition_key, id, true)
    }

    fn read_item_in(
        &self,
        container: &Arc<Container>,
        partition_key: Option<PartitionKeyValue>,
        id: &str,
        with_lsn: bool,
    ) -> EngineResult<(StoredItem, u64)> {
        let partition_key = container.partition_key.point_key(partition_key)?;
        let key = keys::item_key(container.key_number(), &partition_key.encode(), id);
        let reader = self.inner.store.read()?;
        let record = read_record(&*reader, &key)?.ok_or_else(item_not_found)?;
        if record_is_expired(container, &record, self.now_in(&*reader)) {
            return Err(item_not_found());
        }
        let lsn = if with_lsn {
            read_counters(&*reader, container.key_number())?.lsn
        } else {
            record.lsn
        };
        Ok((
            StoredItem {
                container: Arc::clone(container),
                record,
            },
            lsn,
        ))
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
    pub(crate) fn read_feed_blocking(
        &self,
        container: &Arc<Container>,
        partition_key: Option<PartitionKeyValue>,
        filter: RangeFilter,
        page_items_max: usize,
        continuation: Option<&str>,
    ) -> EngineResult<Feed> {
        let number = container.key_number();
        let mut matcher = RangeMatcher::new(filter, &container.partition_key);
        let scope = match &partition_key {
            Some(value) => keys::partition_prefix(number, &value.encode()),
            None => keys::container_items_prefix(number),
        };
        let mut range = KeyRange::prefix(&scope);
        if let Some(token) = continuation {
            let after = keys::item_key_from_suffix(number, &decode_continuation(token)?);
            if !after.starts_with(&scope) {
                return Err(invalid_continuation());
            }
            range.start = Bound::Excluded(after);
        }
        let page_items_max = page_items_max.clamp(1, PAGE_ITEMS_MAX);
        let reader = self.inner.store.read()?;
        let now_ms = self.now_in(&*reader);
        let mut items = Vec::new();
        let mut last_key = Vec::new();
        let mut more = false;
        let mut broken = false;
        reader.scan(Table::Items, &range, &mut |key, value| {
            let Some(record) = ItemRecord::decode(value) else {
                broken = true;
                return ControlFlow::Break(());
            };
            if record_is_expired(container, &record, now_ms) || !matcher.admits(key) {
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
            return Err(corrupted("item"));
        }
        let lsn = read_counters(&*reader, number)?.lsn;
        let continuation = more.then(|| encode_continuation(keys::item_key_suffix(&last_key)));
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
                apply_delete_partition(context, &container, partition_key)
            })
            .await
    }

    /// The id of the item whose `_rid` is `rid`, for clients that address items by `_self`.
    pub fn item_id_by_rid(&self, container: &Container, rid: &str) -> EngineResult<Option<String>> {
        let Some(document_number) = rids::document_number_of(rid) else {
            return Ok(None);
        };
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
