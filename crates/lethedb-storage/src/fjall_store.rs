//! The log-structured candidate of the storage bake-off (`bench/results/storage-bake-off.md`):
//! one fjall database with a keyspace per [`Table`]. Built only with the `fjall` feature.
//!
//! fjall gives cross-keyspace snapshots (readers never wait for the writer) and atomic write
//! batches; a batch is made durable by syncing fjall's journal before `commit` returns, so an
//! acknowledged write survives a crash exactly as with [`crate::RedbStore`].

use crate::overlay::{BaseEntry, Overlay};
use crate::write_txn::{Base, OverlayWrite};
use crate::{KeyRange, ReadTxn, Storage, StorageError, Table, Visit, WriteTxn};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode, Readable, Snapshot};
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

const NAMES: [&str; 7] = [
    "catalog",
    "items",
    "expiry",
    "counters",
    "resource_ids",
    "change_index",
    "change_log",
];

fn io(error: impl std::fmt::Display) -> StorageError {
    StorageError::Io(error.to_string())
}

/// A fjall database opened for reading and writing.
pub struct FjallStore {
    database: Database,
    keyspaces: Vec<Keyspace>,
    /// Set when a commit failed: what reached the disk is unknown, so no further write is tried.
    poisoned: AtomicBool,
}

impl FjallStore {
    /// Opens (or creates) the database directory at `path`; `cache_bytes` bounds its block cache.
    pub fn open(path: &Path, cache_bytes: u64) -> Result<FjallStore, StorageError> {
        let database = Database::builder(path)
            .cache_size(cache_bytes)
            // Durability is decided per batch: every commit syncs the journal.
            .manual_journal_persist(true)
            .open()
            .map_err(|error| match error {
                fjall::Error::Locked => StorageError::AlreadyOpen(path.display().to_string()),
                other => io(other),
            })?;
        let keyspaces = NAMES
            .iter()
            .map(|name| database.keyspace(name, KeyspaceCreateOptions::default))
            .collect::<Result<Vec<_>, _>>()
            .map_err(io)?;
        Ok(FjallStore {
            database,
            keyspaces,
            poisoned: AtomicBool::new(false),
        })
    }

    fn keyspace(&self, table: Table) -> &Keyspace {
        &self.keyspaces[table.index()]
    }
}

impl Storage for FjallStore {
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StorageError> {
        Ok(Box::new(FjallRead {
            store: self,
            snapshot: self.database.snapshot(),
        }))
    }

    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(StorageError::Poisoned);
        }
        // The engine has one writer, so the latest snapshot is the committed state it builds on.
        Ok(Box::new(OverlayWrite::new(FjallBase {
            store: self,
            snapshot: self.database.snapshot(),
        })))
    }
}

/// A snapshot across every keyspace.
struct FjallRead<'a> {
    store: &'a FjallStore,
    snapshot: Snapshot,
}

fn range_bounds(range: &KeyRange) -> (Bound<&[u8]>, Bound<&[u8]>) {
    (as_slice(&range.start), as_slice(&range.end))
}

fn as_slice(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(key) => Bound::Included(key.as_slice()),
        Bound::Excluded(key) => Bound::Excluded(key.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// A committed entry of a scan.
type Entry = BaseEntry<fjall::UserKey, fjall::UserValue>;

fn entries<'s>(
    snapshot: &'s Snapshot,
    keyspace: &Keyspace,
    range: &KeyRange,
    reverse: bool,
) -> Box<dyn Iterator<Item = Entry> + 's> {
    let iter = snapshot.range::<&[u8], _>(keyspace, range_bounds(range));
    let pair = |guard: fjall::Guard| guard.into_inner().map_err(io);
    if reverse {
        Box::new(iter.rev().map(pair))
    } else {
        Box::new(iter.map(pair))
    }
}

impl ReadTxn for FjallRead<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        let found = self
            .snapshot
            .get(self.store.keyspace(table), key)
            .map_err(io)?;
        Ok(found.map(|value| value.to_vec()))
    }

    fn scan(&self, table: Table, range: &KeyRange, visit: Visit<'_>) -> Result<(), StorageError> {
        visit_entries(
            entries(&self.snapshot, self.store.keyspace(table), range, false),
            range,
            visit,
        )
    }

    fn scan_rev(
        &self,
        table: Table,
        range: &KeyRange,
        visit: Visit<'_>,
    ) -> Result<(), StorageError> {
        visit_entries(
            entries(&self.snapshot, self.store.keyspace(table), range, true),
            range,
            visit,
        )
    }
}

fn visit_entries(
    entries: Box<dyn Iterator<Item = Entry> + '_>,
    range: &KeyRange,
    visit: Visit<'_>,
) -> Result<(), StorageError> {
    if range.is_empty() {
        return Ok(());
    }
    for entry in entries {
        let (key, value) = entry?;
        if visit(&key, &value).is_break() {
            break;
        }
    }
    Ok(())
}

/// The committed side of the write transaction: the snapshot it began on.
struct FjallBase<'a> {
    store: &'a FjallStore,
    snapshot: Snapshot,
}

impl Base for FjallBase<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        let found = self
            .snapshot
            .get(self.store.keyspace(table), key)
            .map_err(io)?;
        Ok(found.map(|value| value.to_vec()))
    }

    fn merged_scan(
        &self,
        overlay: &Overlay,
        table: Table,
        range: &KeyRange,
        reverse: bool,
        visit: Visit<'_>,
    ) -> Result<(), StorageError> {
        if range.is_empty() {
            return Ok(());
        }
        let base = entries(&self.snapshot, self.store.keyspace(table), range, reverse);
        overlay.merged_scan(table, range, reverse, base, visit)
    }

    fn commit(self, overlay: Overlay) -> Result<(), StorageError> {
        let store = self.store;
        let mut batch = store
            .database
            .batch()
            .durability(Some(PersistMode::SyncData));
        for (table, changes) in overlay.into_tables() {
            let keyspace = store.keyspace(table);
            for (key, change) in changes {
                match change {
                    Some(value) => batch.insert(keyspace, key, value),
                    None => batch.remove(keyspace, key),
                }
            }
        }
        batch.commit().map_err(|error| {
            store.poisoned.store(true, Ordering::Release);
            tracing::error!(%error, "commit failed; refusing further writes until restart");
            io(error)
        })
    }
}
