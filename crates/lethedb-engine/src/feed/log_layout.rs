//! The change log's layout, and the one-time rewrite of a store written before it. Until this
//! layout, each write stored its version twice in the feed tables: a change-log entry holding a
//! whole copy of the version, and a change-index entry (the item key under its LSN) for the
//! latest-version feed. Now the log alone serves both (`change_log.rs`): an entry whose version
//! is current holds only its position.
//!
//! Opening a store without the layout's marker rewrites it in one transaction, before the
//! writer starts: every stored item's log entry becomes a position (an entry trimmed away, or
//! never written because the item predates the change feed, is written anew as a create at the
//! item's time), every change-index entry goes, and the marker is set. A crash before the commit
//! leaves the old layout whole, and the next open starts again; after it, the new layout is
//! whole. Entries of versions no longer current keep their bodies, as they always held them.
//! Rewriting, rather than refusing with the export/import path, keeps every store of the
//! previous release usable in place; the cost is one pass over the items, once.

use crate::error::{corrupted, EngineResult};
use crate::feed::change_log::{LogEntry, Operation};
use crate::keys;
use crate::records::ItemRecord;
use lethedb_storage::{KeyRange, Storage, Table, WriteTxn};
use std::collections::HashMap;
use std::ops::{Bound, ControlFlow};

/// The catalog key that marks a store whose change log is in this layout (`l`, beside the
/// catalog's `d`, `c`, `g` and `r` keys), and its value.
pub(crate) const LAYOUT_KEY: &[u8] = b"lchange-log";
const LAYOUT_POSITIONS: &[u8] = &[1];
/// A change-log key's container number and LSN, before its sequence.
const LSN_KEY_BYTES: usize = 16;

/// Every key of a table.
fn everything() -> KeyRange {
    KeyRange {
        start: Bound::Unbounded,
        end: Bound::Unbounded,
    }
}

/// Rewrites a store of the previous layout into this one, once; says whether it rewrote.
pub(crate) fn migrate(store: &dyn Storage) -> EngineResult<bool> {
    if store.read()?.get(Table::Catalog, LAYOUT_KEY)?.as_deref() == Some(LAYOUT_POSITIONS) {
        return Ok(false);
    }
    let mut txn = store.write()?;
    // A process that opened the store meanwhile (a shared store) may have rewritten it.
    if txn.get(Table::Catalog, LAYOUT_KEY)?.as_deref() == Some(LAYOUT_POSITIONS) {
        return Ok(false);
    }
    let logged = logged_writes(&mut *txn)?;
    // Only each version's key, LSN and time are kept: a store's bodies need not fit in memory.
    let mut versions = Vec::new();
    txn.scan(Table::Items, &everything(), &mut |key, value| {
        let stamp = ItemRecord::decode(value).map(|record| (record.lsn, record.last_modified_ms));
        versions.push((key.to_vec(), stamp));
        ControlFlow::Continue(())
    })?;
    for (item_key, stamp) in versions {
        let stamp = stamp.ok_or_else(|| corrupted("item"))?;
        position_version(&mut *txn, &logged, &item_key, stamp)?;
    }
    let mut indexed = Vec::new();
    txn.scan(Table::ChangeIndex, &everything(), &mut |key, _| {
        indexed.push(key.to_vec());
        ControlFlow::Continue(())
    })?;
    for key in indexed {
        txn.delete(Table::ChangeIndex, &key)?;
    }
    txn.put(Table::Catalog, LAYOUT_KEY, LAYOUT_POSITIONS)?;
    txn.commit()?;
    Ok(true)
}

/// What the log holds, read once: for each LSN (its first log key, container and LSN) and
/// item key suffix, the key of the last create or replace of that item under it, and how many
/// entries each LSN holds (a stored procedure's may hold thousands: each item finds its own
/// here, not by a scan of its LSN).
struct LoggedWrites {
    writes: HashMap<(Vec<u8>, Vec<u8>), Vec<u8>>,
    entries: HashMap<Vec<u8>, u32>,
}

fn logged_writes(txn: &mut dyn WriteTxn) -> EngineResult<LoggedWrites> {
    let mut logged = LoggedWrites {
        writes: HashMap::new(),
        entries: HashMap::new(),
    };
    txn.scan(Table::ChangeLog, &everything(), &mut |key, value| {
        let Some(lsn_key) = key.get(..LSN_KEY_BYTES) else {
            return ControlFlow::Continue(());
        };
        *logged.entries.entry(lsn_key.to_vec()).or_default() += 1;
        let written = value
            .first()
            .is_some_and(|op| *op != Operation::Delete as u8);
        if let (true, Some(suffix)) = (written, LogEntry::item_suffix_of(value)) {
            let at = (lsn_key.to_vec(), suffix.to_vec());
            logged.writes.insert(at, key.to_vec());
        }
        ControlFlow::Continue(())
    })?;
    Ok(logged)
}

/// Makes the log entry of one stored version a position: the last create or replace of the item
/// under the version's LSN loses its body, or, when the log has none, one is appended.
fn position_version(
    txn: &mut dyn WriteTxn,
    logged: &LoggedWrites,
    item_key: &[u8],
    (lsn, last_modified_ms): (u64, i64),
) -> EngineResult<()> {
    let container_number = keys::container_number_of(item_key).ok_or_else(|| corrupted("item"))?;
    let suffix = keys::item_key_suffix(item_key);
    let lsn_key = keys::change_index_from(container_number, lsn);
    let found = match logged.writes.get(&(lsn_key.clone(), suffix.to_vec())) {
        Some(key) => txn
            .get(Table::ChangeLog, key)?
            .map(|value| (key.clone(), value)),
        None => None,
    };
    if let Some((key, value)) = found {
        let mut entry = LogEntry::decode(&value).ok_or_else(|| corrupted("change log"))?;
        entry.record = None;
        txn.put(Table::ChangeLog, &key, &entry.encode())?;
        return Ok(());
    }
    // Appended after the LSN's entries; two items without entries under one LSN (a batch
    // whose entries were trimmed) take the next free sequences.
    let mut sequence = logged.entries.get(&lsn_key).copied().unwrap_or(0);
    while txn
        .get(
            Table::ChangeLog,
            &keys::change_log_key(container_number, lsn, sequence),
        )?
        .is_some()
    {
        sequence += 1;
    }
    let entry = LogEntry {
        operation: Operation::Create,
        ttl_expired: false,
        previous_lsn: 0,
        at_ms: last_modified_ms,
        item_suffix: suffix.to_vec(),
        record: None,
    };
    let key = keys::change_log_key(container_number, lsn, sequence);
    txn.put(Table::ChangeLog, &key, &entry.encode())?;
    Ok(())
}
