//! Bringing a vector set forward to a snapshot: from the change log, which holds every create,
//! replace and delete of the container with its LSN and the version written (a current
//! version's body is in its item), or by rebuilding it from the snapshot's items when the log
//! no longer reaches back to the set (trimmed past its retention), when it was never built, or
//! when deletes nobody logged (purges of expired items) have left it holding many more items
//! than the container.
//!
//! Writes never wait for this: the set follows the store, read by the queries that need it,
//! so a write into a container with a vector embedding costs what it costs without one. A TTL
//! delete event is not applied: the item stays until it is purged, and every search checks
//! expiry on the documents it loads, so a container whose TTL changes answers as a scan does.

use crate::container::Container;
use crate::counters::{read_container_counters, read_shard_counters, read_shard_lsns};
use crate::error::{corrupted, EngineResult};
use crate::feed::change_log::{shard_log_after, trimmed_lsns, LogEntry, Operation};
use crate::keys;
use crate::partitions::shards::Shard;
use crate::records::ItemRecord;
use crate::scan_visit::try_scan;
use crate::search::vector_set::VectorSet;
use lethedb_storage::{KeyRange, ReadTxn, Table};
use std::ops::ControlFlow;

/// How many more items than the container holds the set may keep before it is rebuilt (the
/// leftovers of unlogged purges cost loads, never answers).
const LEFTOVER_SHARE: usize = 4;
const LEFTOVERS_MIN: usize = 1_024;

/// Brings `set`, the vectors at `path` of `container`, to the snapshot `reader` whose container
/// version is `lsn` (the set must not be ahead of it).
pub(crate) fn sync(
    set: &mut VectorSet,
    reader: &dyn ReadTxn,
    container: &Container,
    path: &[String],
    lsn: u64,
) -> EngineResult<()> {
    if set.lsn == Some(lsn) {
        return Ok(());
    }
    let targets = read_shard_lsns(reader, container)?;
    let replay = match set.lsn {
        Some(_) if set.shard_lsns.len() == targets.len() => {
            let counters = read_shard_counters(reader, container)?;
            let trimmed = trimmed_lsns(reader, container, &counters)?;
            trimmed
                .iter()
                .zip(&set.shard_lsns)
                .all(|((_, trimmed), from)| trimmed <= from)
        }
        _ => false,
    };
    if replay {
        replay_log(set, reader, container, path, (lsn, &targets))?;
        let items = read_container_counters(reader, container)?.items as usize;
        if set.len() <= items + items / LEFTOVER_SHARE + LEFTOVERS_MIN {
            return Ok(());
        }
    }
    rebuild(set, reader, container, path, (lsn, &targets))
}

/// Applies each shard's change-log entries after the set's LSN of the shard up to the
/// snapshot's (`target`: the snapshot's version and shard LSNs).
fn replay_log(
    set: &mut VectorSet,
    reader: &dyn ReadTxn,
    container: &Container,
    path: &[String],
    (lsn, targets): (u64, &[(Shard, u64)]),
) -> EngineResult<()> {
    let number = container.key_number();
    let sharded = container.shards > 1;
    for (index, (shard, target)) in targets.iter().enumerate() {
        let from = set.shard_lsns[index];
        if from >= *target {
            continue;
        }
        let range = shard_log_after(container, *shard, from);
        try_scan(reader, Table::ChangeLog, &range, &mut |key, value| {
            let at = keys::change_log_lsn(key).ok_or_else(|| corrupted("change log"))?;
            if at > *target {
                return Ok(ControlFlow::Break(()));
            }
            let mut entry = LogEntry::decode(value).ok_or_else(|| corrupted("change log"))?;
            let item_key = keys::item_key_from_suffix(number, &entry.item_suffix);
            if entry.holds_position() {
                // A current version's body is its item's (`feed/change_log.rs`).
                entry.record =
                    crate::items::read_record(reader, &item_key)?.filter(|record| record.lsn == at);
            }
            // A multi-shard container's changes are journaled under the version this replay
            // reaches: a reader of an earlier snapshot then reloads every item it changed.
            let noted = if sharded { lsn } else { at };
            match (entry.operation, &entry.record) {
                (Operation::Delete, _) if entry.ttl_expired => {}
                (Operation::Delete, _) => set.remove(&item_key, noted),
                (_, Some(record)) => {
                    let document = record.document().ok_or_else(|| corrupted("item"))?;
                    set.put(&item_key, noted, &document, path);
                }
                (_, None) => return Err(corrupted("change log")),
            }
            Ok(ControlFlow::Continue(()))
        })?;
    }
    set.lsn = Some(lsn);
    set.shard_lsns = targets.iter().map(|(_, target)| *target).collect();
    Ok(())
}

/// Refills the set from every item of the snapshot.
fn rebuild(
    set: &mut VectorSet,
    reader: &dyn ReadTxn,
    container: &Container,
    path: &[String],
    (lsn, targets): (u64, &[(Shard, u64)]),
) -> EngineResult<()> {
    set.clear(lsn);
    let prefix = keys::container_items_prefix(container.key_number());
    try_scan(
        reader,
        Table::Items,
        &KeyRange::prefix(&prefix),
        &mut |key, value| {
            let record = ItemRecord::decode(value).ok_or_else(|| corrupted("item"))?;
            let document = record.document().ok_or_else(|| corrupted("item"))?;
            set.put(key, record.lsn, &document, path);
            Ok(ControlFlow::Continue(()))
        },
    )?;
    set.clear_journal(lsn);
    set.lsn = Some(lsn);
    set.shard_lsns = targets.iter().map(|(_, target)| *target).collect();
    Ok(())
}
