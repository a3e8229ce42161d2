//! Removals of many versions at once, inside the writer: every item of one logical partition
//! (a partition delete), and the sweeper's delete step over the expired versions it found. Each
//! version goes through `remove_version`, so its expiry entry, index entries, unique key claims
//! and counters go with it, and its TTL event is logged first unless its shard's marks say it
//! is. The sweeper's step runs over a whole container under the store's lock, or within some
//! shards under their locks alone (`apply_expire_in_shards`); which
//! candidates it deletes, when, and on which path is the sweeper's business.

use super::{next_lsn, remove_version};
use crate::container::Container;
use crate::counters::{read_counters, store_counters, ShardCounters};
use crate::error::{corrupted, EngineResult};
use crate::feed::{change_log, ttl_events};
use crate::keys;
use crate::partitions::partition_key::PartitionKeyValue;
use crate::records::{writer_container, ExpiryEntry, ItemRecord};
use crate::throughput::request_units;
use crate::ttl::expiry::record_is_expired;
use crate::writer::WriteContext;
use lethedb_storage::{KeyRange, Table};
use std::ops::ControlFlow;

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
        &KeyRange::prefix(&container.partition_prefix(&partition_key)),
        &mut |key, value| {
            let record = ItemRecord::decode(value).ok_or_else(|| corrupted("item"))?;
            doomed.push((key.to_vec(), record));
            Ok(ControlFlow::Continue(()))
        },
    )?;
    let shard = container.shard_of(&partition_key);
    let mut counters = read_counters(context.reader(), container, shard)?;
    let mut deleted = Vec::new();
    for (key, record) in &doomed {
        if record_is_expired(container, record, context.now_ms) {
            // An expired version is about to go: its TTL event must be out first.
            ttl_events::emit_ttl_event_of(context, container, key, record, &mut counters)?;
        } else {
            deleted.push((key, record.lsn));
        }
        remove_version(context, container, key, record, &mut counters)?;
    }
    next_lsn(context, &mut counters);
    for (key, deleted_lsn) in &deleted {
        change_log::log_delete(context, number, key, *deleted_lsn, counters.lsn)?;
    }
    store_counters(context, container, shard, &counters)?;
    Ok(deleted.len() as u64)
}

/// The sweeper's delete step, inside the writer: deletes each candidate the sweeper found in the
/// expiry index if it is still that very version and still expired. Returns how many went and
/// what deleting them cost, as user deletes of the same items would (size and index terms).
pub(crate) fn apply_expire(
    context: &mut WriteContext<'_>,
    database_id: &str,
    container_id: &str,
    candidates: Vec<(Vec<u8>, ExpiryEntry)>,
) -> EngineResult<(u64, f64)> {
    // Re-read the container: its setting may have changed since the scan.
    let container = writer_container(context, database_id, container_id)?;
    delete_expired(context, &container, candidates)
}

/// [`apply_expire`] for candidates of the shards whose locks alone the job holds
/// (`Writer::write_in_shards`), so writes to other shards, from any process, commit beside
/// it. A container re-created since `resolved`
/// was read (other shards), or one whose writes no longer stay in their shards, is left
/// untouched: the sweeper's next turn takes the path its current definition asks for.
pub(crate) fn apply_expire_in_shards(
    context: &mut WriteContext<'_>,
    resolved: &Container,
    candidates: Vec<(Vec<u8>, ExpiryEntry)>,
) -> EngineResult<(u64, f64)> {
    let container = writer_container(context, &resolved.database_id, &resolved.id)?;
    if !(resolved.same_shards(&container) && container.writes_stay_in_shards()) {
        return Ok((0, 0.0));
    }
    delete_expired(context, &container, candidates)
}

/// Deletes each candidate that is still the version found and still expired, logging its TTL
/// event first unless its shard's marks say it is logged: a purge never removes an expiry
/// whose event is not in the log.
fn delete_expired(
    context: &mut WriteContext<'_>,
    container: &Container,
    candidates: Vec<(Vec<u8>, ExpiryEntry)>,
) -> EngineResult<(u64, f64)> {
    let number = container.key_number();
    let mut counters = ShardCounters::new(container);
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
        if record.lsn != entry.lsn || !record_is_expired(container, &record, context.now_ms) {
            continue;
        }
        let shard_counters = counters.of(context, container.shard_of_key(&item_key))?;
        ttl_events::emit_ttl_event_of(context, container, &item_key, &record, shard_counters)?;
        let changes = remove_version(context, container, &item_key, &record, shard_counters)?;
        deleted += 1;
        spent_ru += request_units::write(Some(record.body.len()), None, changes.terms());
    }
    counters.store(context)?;
    Ok((deleted, spent_ru))
}
