//! The durable backend whose write transactions of disjoint shards commit side by side: one
//! fjall database (an LSM tree with one journal) in a directory, with a keyspace per [`Table`].
//!
//! fjall gives snapshots that never wait for a writer and batches that are appended to the
//! journal whole (atomic across keyspaces, recovered whole or not at all). This module adds
//! what the engine's writer lanes need on top (`bench/results/lanes-bakeoff.md` chose this
//! shape): in-process locks, so that a transaction of some shards excludes only the other
//! transactions of those shards and one that may write anywhere excludes every other
//! (`locks.rs`); a journal sync shared by the lanes, so a commit returns only once a sync that
//! began after its batch was appended has returned (`sync_gate.rs`); and an in-process catalog
//! epoch, so a lane can tell that another lane changed the catalog. A failed append or sync
//! poisons the store: every later write transaction is refused, as on redb.
//!
//! A reader may see a group whose sync is still running (fjall publishes a batch when it is
//! appended); nobody has acknowledged it yet, and an operating-system crash before the sync
//! returns loses it. A process crash does not: the batch is in the operating system's buffers.
//!
//! It does not keep named snapshots ([`Storage::snapshots`] is `None`), and it does not read a
//! redb file: a store moves between the two by export and import.

mod locks;
mod store;
mod sync_gate;
mod write;

pub use store::{FjallStore, FJALL_MEMORY_BYTES_DEFAULT};

use crate::api::{KeyRange, ReadTxn, Storage, StorageError, Table, Visit, WriteTxn};
use locks::Held;
use std::sync::atomic::Ordering;
use store::{snapshot_get, snapshot_range, storage_error};
use write::FjallBase;

/// Begins a write transaction under `held`, refused when the store is poisoned (checked
/// after the locks: a commit that failed while this one waited poisoned it).
fn begin<'a>(
    store: &'a FjallStore,
    held: Held<'a>,
) -> Result<Box<dyn WriteTxn + 'a>, StorageError> {
    if store.poisoned.load(Ordering::Acquire) {
        return Err(StorageError::Poisoned);
    }
    Ok(FjallBase::begin(store, held))
}

impl Storage for FjallStore {
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StorageError> {
        Ok(Box::new(FjallRead {
            store: self,
            snapshot: self.database.snapshot(),
        }))
    }

    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        begin(self, self.locks.store())
    }

    fn write_reading_shards(
        &self,
        shards: &[u64],
        _keys: &[(Table, &[u8])],
    ) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        begin(self, self.locks.shards(shards))
    }

    fn write_reading_free_shards(
        &self,
        shards: &[u64],
        _keys: &[(Table, &[u8])],
    ) -> Result<(Box<dyn WriteTxn + '_>, Vec<u64>), StorageError> {
        let held = self.locks.free_shards(shards);
        let taken = match &held {
            Held::Shards(guard, _) => guard.shards().to_vec(),
            Held::Store(_) => shards.to_vec(),
        };
        Ok((begin(self, held)?, taken))
    }

    fn concurrent_shard_writes(&self) -> bool {
        true
    }

    fn kind(&self) -> &'static str {
        "fjall"
    }
}

/// A snapshot of every keyspace at one sequence number.
struct FjallRead<'a> {
    store: &'a FjallStore,
    snapshot: fjall::Snapshot,
}

/// Visits a fjall iterator's pairs until the visitor breaks.
fn visit_all(
    entries: impl Iterator<Item = fjall::Guard>,
    visit: Visit<'_>,
) -> Result<(), StorageError> {
    for entry in entries {
        let (key, value) = entry.into_inner().map_err(storage_error)?;
        if visit(&key, &value).is_break() {
            break;
        }
    }
    Ok(())
}

impl ReadTxn for FjallRead<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        snapshot_get(self.store, &self.snapshot, table, key)
    }

    fn scan(&self, table: Table, range: &KeyRange, visit: Visit<'_>) -> Result<(), StorageError> {
        if range.is_empty() {
            return Ok(());
        }
        visit_all(
            snapshot_range(self.store, &self.snapshot, table, range),
            visit,
        )
    }

    fn scan_rev(
        &self,
        table: Table,
        range: &KeyRange,
        visit: Visit<'_>,
    ) -> Result<(), StorageError> {
        if range.is_empty() {
            return Ok(());
        }
        let entries = snapshot_range(self.store, &self.snapshot, table, range);
        visit_all(entries.rev(), visit)
    }
}

#[cfg(test)]
mod tests;
