//! The reading side of item requests, behind the doors of `api/items.rs`: a point read on a
//! snapshot (`read_item_in`), a page of the read feed (`read_feed_blocking`, run on the scan
//! pool) and its continuation tokens. Expired items are hidden here as everywhere.
//!
//! This module decides no rule of its own about items: validation is `items/rules.rs`,
//! visibility `ttl/expiry.rs`, storage layout `keys.rs`.

use crate::container::Container;
use crate::counters::{decode_counters, read_container_counters};
use crate::engine::Engine;
use crate::error::{
    container_not_found, corrupted, invalid_continuation, item_not_found, EngineResult,
};
use crate::items::{decode_record, read_record, Feed, StoredItem};
use crate::keys;
use crate::limits::PAGE_ITEMS_MAX;
use crate::partitions::partition_key::PartitionKeyValue;
use crate::partitions::ranges::{RangeFilter, RangeMatcher};
use crate::partitions::shards::Shard;
use crate::records::{container_from_records, ItemRecord};
use crate::scan_visit::{resumed_after, try_scan};
use crate::ttl::expiry::record_is_expired;
use base64::Engine as _;
use lethedb_storage::{KeyRange, Look, Table};
use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The item key suffix a feed token names. A token that does not decode to a well-formed suffix
/// (partition key bytes and an id) is refused, as the service refuses a token it never wrote,
/// rather than resumed after an arbitrary key.
pub(crate) fn decode_continuation(token: &str) -> EngineResult<Vec<u8>> {
    let suffix = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| invalid_continuation())?;
    match keys::split_item_suffix(&suffix) {
        Some((_, id)) if !id.is_empty() => Ok(suffix),
        _ => Err(invalid_continuation()),
    }
}

pub(crate) fn encode_continuation(key_suffix: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key_suffix)
}

/// The keys a point read on a shared store looks at, and the cache generation before it.
struct PointLook {
    item: Vec<u8>,
    /// The counters of the item's shard, which the look reads.
    shard: Shard,
    counters: Vec<u8>,
    definition: Vec<u8>,
    database: Vec<u8>,
    generation: u64,
}

impl PointLook {
    fn new(
        engine: &Engine,
        container: &Container,
        partition_key: Option<PartitionKeyValue>,
        id: &str,
    ) -> EngineResult<PointLook> {
        let point = container.partition_key.point_key(partition_key)?;
        let shard = container.shard_of(&point);
        Ok(PointLook {
            item: container.item_key(&point, id),
            shard,
            counters: container.counters_key(shard),
            definition: keys::container_key(&container.database_id, &container.id),
            database: keys::database_key(&container.database_id),
            generation: engine.inner.containers.generation.load(Ordering::SeqCst),
        })
    }

    /// The item, its counters and its container's and database's records, in that order.
    fn asked(&self) -> [(Table, &[u8]); 4] {
        [
            (Table::Items, &self.item),
            (Table::Counters, &self.counters),
            (Table::Catalog, &self.definition),
            (Table::Catalog, &self.database),
        ]
    }
}

impl Engine {
    /// A point read on a snapshot, with the shard LSN its answer's session token is raised
    /// by (`with_lsn`): on a shared store the shard's counters, which the look reads with the
    /// item, since other processes write it; on a store only this process writes, the item's
    /// own LSN, since the writer raised the session sequences by every commit before
    /// acknowledging it (`partitions/sessions.rs`), and reading the counters would add nothing
    /// an acknowledged write did not already put there. Without `with_lsn`, the item's LSN.
    pub(crate) fn read_item_in(
        &self,
        container: &Arc<Container>,
        partition_key: Option<PartitionKeyValue>,
        id: &str,
        with_lsn: bool,
    ) -> EngineResult<(StoredItem, u64)> {
        if self.inner.shared {
            return self.read_item_shared(container, partition_key, id, with_lsn);
        }
        let partition_key = container.partition_key.point_key(partition_key)?;
        // The key's place (its hash) once, for the item's key and its shard.
        let place = container.partition_place(&partition_key);
        let key = keys::item_key(container.key_number(), &place, id);
        let reader = self.inner.store.read()?;
        let record = read_record(&*reader, &key)?.ok_or_else(item_not_found)?;
        if record_is_expired(container, &record, self.now_in(&*reader)) {
            return Err(item_not_found());
        }
        let lsn = record.lsn;
        Ok((
            StoredItem {
                container: Arc::clone(container),
                record,
            },
            lsn,
        ))
    }

    /// A point read on a shared store, in one round trip and one statement from a warm
    /// instance: one look at the item, its counters and its container's (and database's)
    /// records, with the store's clock and epoch.
    /// `container` may come from the cache unchecked (`Engine::container_for_point_read`):
    /// the definition read here decides, so a container changed or deleted by another
    /// instance answers as the store now says, and the item returned carries the definition
    /// it was judged by.
    fn read_item_shared(
        &self,
        container: &Arc<Container>,
        partition_key: Option<PartitionKeyValue>,
        id: &str,
        with_lsn: bool,
    ) -> EngineResult<(StoredItem, u64)> {
        let keys = PointLook::new(self, container, partition_key.clone(), id)?;
        let look = self.inner.store.look(&keys.asked())?;
        self.judge_point_look(container, (partition_key, id), with_lsn, &keys, look)
    }

    /// [`Engine::read_item_in`] for a caller on an asynchronous runtime: on a store that
    /// waits on a network, the look is awaited instead of waited for on the caller's thread.
    pub(crate) async fn read_item_awaiting(
        &self,
        container: &Arc<Container>,
        partition_key: Option<PartitionKeyValue>,
        id: &str,
        with_lsn: bool,
    ) -> EngineResult<(StoredItem, u64)> {
        if self.inner.shared {
            let keys = PointLook::new(self, container, partition_key.clone(), id)?;
            if let Some(look) = self.inner.store.look_async(&keys.asked()) {
                let look = look.await?;
                return self.judge_point_look(
                    container,
                    (partition_key, id),
                    with_lsn,
                    &keys,
                    look,
                );
            }
        }
        self.read_item_in(container, partition_key, id, with_lsn)
    }

    /// What one look found for a point read, judged by the definition the same look read.
    fn judge_point_look(
        &self,
        container: &Arc<Container>,
        (partition_key, id): (Option<PartitionKeyValue>, &str),
        with_lsn: bool,
        keys: &PointLook,
        look: Look,
    ) -> EngineResult<(StoredItem, u64)> {
        let [item, counters, definition, database]: [Option<Vec<u8>>; 4] =
            look.values
                .try_into()
                .map_err(|_| corrupted("a look's values"))?;
        let current = self.definition_at(
            container,
            look.epoch,
            keys.generation,
            (definition.as_deref(), database.as_deref()),
        )?;
        // A container recreated under the same name keeps its items elsewhere: read again,
        // with the definition just read (once: it is current as of this look).
        if current.key_number() != container.key_number()
            || current.partition_key != container.partition_key
        {
            return self.read_item_in(&current, partition_key, id, with_lsn);
        }
        let record = decode_record(item)?.ok_or_else(item_not_found)?;
        let counters = decode_counters(counters, keys.shard)?;
        if record_is_expired(&current, &record, self.now_at(look.now_ms)) {
            return Err(item_not_found());
        }
        let lsn = if with_lsn { counters.lsn } else { record.lsn };
        Ok((
            StoredItem {
                container: current,
                record,
            },
            lsn,
        ))
    }

    /// The container as a snapshot at `epoch` defines it: `container` itself while the cache
    /// still holds it at that epoch, else parsed from the snapshot's records (and cached when
    /// the cache serves that epoch and was not invalidated since `generation`).
    fn definition_at(
        &self,
        container: &Arc<Container>,
        epoch: Option<u64>,
        generation: u64,
        (definition, database): (Option<&[u8]>, Option<&[u8]>),
    ) -> EngineResult<Arc<Container>> {
        let cache = &self.inner.containers;
        let usable = cache.serves(epoch);
        if let Some(cached) = cache.get(&container.database_id, &container.id) {
            if usable && Arc::ptr_eq(&cached, container) {
                return Ok(Arc::clone(container));
            }
        }
        let fresh = Arc::new(
            container_from_records(definition, database)?.ok_or_else(container_not_found)?,
        );
        if usable {
            cache.insert_if_current(generation, Arc::clone(&fresh));
        }
        Ok(fresh)
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
        // A partition's keys, else the range's span; a token must resume inside the partition
        // or the container (a parent range's token stays good in its children).
        let (scope, span) = match &partition_key {
            Some(value) => {
                let prefix = container.partition_prefix(value);
                let span = KeyRange::prefix(&prefix);
                (prefix, span)
            }
            None => (
                keys::container_items_prefix(number),
                container.items_span(&filter),
            ),
        };
        let mut matcher = RangeMatcher::new(filter, &container.partition_key);
        let mut range = span.clone();
        if let Some(token) = continuation {
            let after = keys::item_key_from_suffix(number, &decode_continuation(token)?);
            if !after.starts_with(&scope) {
                return Err(invalid_continuation());
            }
            range = resumed_after(&span, after);
        }
        let page_items_max = page_items_max.clamp(1, PAGE_ITEMS_MAX);
        let reader = self.inner.store.read()?;
        let now_ms = self.now_in(&*reader);
        let mut items = Vec::new();
        let mut last_key = Vec::new();
        let mut more = false;
        try_scan(&*reader, Table::Items, &range, &mut |key, value| {
            // The range decides from the key alone, before the record is decoded.
            if !matcher.admits(key) {
                return Ok(ControlFlow::Continue(()));
            }
            let record = ItemRecord::decode(value).ok_or_else(|| corrupted("item"))?;
            if record_is_expired(container, &record, now_ms) {
                return Ok(ControlFlow::Continue(()));
            }
            if items.len() == page_items_max {
                // One more visible item exists: the page gets a continuation.
                more = true;
                return Ok(ControlFlow::Break(()));
            }
            items.push(StoredItem {
                container: Arc::clone(container),
                record,
            });
            last_key.clear();
            last_key.extend_from_slice(key);
            Ok(ControlFlow::Continue(()))
        })?;
        let lsn = read_container_counters(&*reader, container)?.lsn;
        let continuation = more.then(|| encode_continuation(keys::item_key_suffix(&last_key)));
        Ok(Feed {
            items,
            continuation,
            lsn,
        })
    }
}
