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
mod sync_gate;
mod write;

use crate::api::{KeyRange, ReadTxn, Storage, StorageError, Table, Visit, WriteTxn};
use locks::{Held, Locks};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use sync_gate::SyncGate;
use write::FjallBase;

/// The memory fjall may hold unless told otherwise, split between its block cache (half) and
/// its memtables (the other half, bounded per keyspace): the redb store's page cache budget
/// ([`crate::CACHE_BYTES_DEFAULT`]), so switching stores does not change the process's size.
/// fjall's own default bounds each memtable at 64 MiB and their total not at all.
pub const FJALL_MEMORY_BYTES_DEFAULT: u64 = crate::CACHE_BYTES_DEFAULT as u64;

/// Values at least this long in the tables of whole records (items, change log) go to blob
/// files once, so that compactions rewrite only their keys and pointers (the bake-off's
/// `fjall-blobs`: about 0.6× the bytes written per create).
const BLOB_SEPARATION_BYTES: u32 = 512;

/// The smallest memtable fjall accepts for a keyspace.
const MEMTABLE_BYTES_MIN: u64 = 1024 * 1024;

/// The keyspace names, by [`Table::index`].
const NAMES: [&str; 8] = [
    "catalog",
    "items",
    "expiry",
    "counters",
    "resource_ids",
    "change_index",
    "change_log",
    "index",
];

/// A fjall database opened for reading and writing.
pub struct FjallStore {
    database: fjall::Database,
    /// One keyspace per table, by [`Table::index`].
    keyspaces: Vec<fjall::Keyspace>,
    locks: Locks,
    gate: SyncGate,
    /// How many commits have changed [`Table::Catalog`] since the store was opened.
    catalog_epoch: AtomicU64,
    /// Set when an append or a sync failed: what reached the disk is unknown.
    poisoned: AtomicBool,
    /// Tests set this to make the next syncs fail, as a failing disk would.
    #[cfg(test)]
    fail_syncs: AtomicBool,
}

/// Maps a fjall error onto the storage layer's.
pub(crate) fn storage_error(error: fjall::Error) -> StorageError {
    match error {
        fjall::Error::Poisoned => StorageError::Poisoned,
        fjall::Error::JournalRecovery(_)
        | fjall::Error::InvalidTrailer
        | fjall::Error::InvalidTag(_)
        | fjall::Error::Decompress(_)
        | fjall::Error::InvalidVersion(_)
        | fjall::Error::Unrecoverable => StorageError::Corrupted(error.to_string()),
        other => StorageError::Io(other.to_string()),
    }
}

impl FjallStore {
    /// Opens (or creates) the store in the directory `path` with the default memory.
    pub fn open(path: &Path) -> Result<FjallStore, StorageError> {
        FjallStore::open_with_memory(path, FJALL_MEMORY_BYTES_DEFAULT)
    }

    /// Opens (or creates) the store in the directory `path`, holding about `memory_bytes` in
    /// its block cache and memtables together. A directory another process (or another handle
    /// in this one) holds open is refused with [`StorageError::AlreadyOpen`].
    pub fn open_with_memory(path: &Path, memory_bytes: u64) -> Result<FjallStore, StorageError> {
        let memtable_bytes = (memory_bytes / 2 / Table::ALL.len() as u64).max(MEMTABLE_BYTES_MIN);
        let database = fjall::Database::builder(path)
            .cache_size(memory_bytes / 2)
            .open()
            .map_err(|error| match error {
                fjall::Error::Locked => StorageError::AlreadyOpen(path.display().to_string()),
                other => storage_error(other),
            })?;
        let keyspaces = Table::ALL
            .iter()
            .map(|table| {
                let whole_records = matches!(table, Table::Items | Table::ChangeLog);
                let separation = whole_records.then(|| {
                    fjall::KvSeparationOptions::default()
                        .separation_threshold(BLOB_SEPARATION_BYTES)
                });
                database.keyspace(NAMES[table.index()], || {
                    fjall::KeyspaceCreateOptions::default()
                        .max_memtable_size(memtable_bytes)
                        .with_kv_separation(separation)
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(storage_error)?;
        Ok(FjallStore {
            database,
            keyspaces,
            locks: Locks::default(),
            gate: SyncGate::default(),
            catalog_epoch: AtomicU64::new(0),
            poisoned: AtomicBool::new(false),
            #[cfg(test)]
            fail_syncs: AtomicBool::new(false),
        })
    }

    fn keyspace(&self, table: Table) -> &fjall::Keyspace {
        &self.keyspaces[table.index()]
    }

    /// Begins a write transaction under `held`, refused when the store is poisoned (checked
    /// after the locks: a commit that failed while this one waited poisoned it).
    fn begin<'a>(&'a self, held: Held<'a>) -> Result<Box<dyn WriteTxn + 'a>, StorageError> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(StorageError::Poisoned);
        }
        Ok(FjallBase::begin(self, held))
    }

    /// Syncs the journal, durably: every batch appended before it survives a crash.
    fn sync(&self) -> Result<(), StorageError> {
        #[cfg(test)]
        if self.fail_syncs.load(Ordering::Acquire) {
            return Err(StorageError::Io("injected sync failure".into()));
        }
        self.database
            .persist(fjall::PersistMode::SyncAll)
            .map_err(storage_error)
    }

    /// Refuses every later write transaction after `error`, which it returns.
    fn poison(&self, what: &str, error: StorageError) -> StorageError {
        self.poisoned.store(true, Ordering::Release);
        tracing::error!(%error, "{what} failed; refusing further writes until restart");
        error
    }

    /// Makes every later sync fail (a test's failing disk).
    #[cfg(test)]
    pub(crate) fn fail_syncs(&self) {
        self.fail_syncs.store(true, Ordering::Release);
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
        self.begin(self.locks.store())
    }

    fn write_reading_shards(
        &self,
        shards: &[u64],
        _keys: &[(Table, &[u8])],
    ) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        self.begin(self.locks.shards(shards))
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
        Ok((self.begin(held)?, taken))
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

/// Reads `key` of `table` in `snapshot`.
pub(crate) fn snapshot_get(
    store: &FjallStore,
    snapshot: &fjall::Snapshot,
    table: Table,
    key: &[u8],
) -> Result<Option<Vec<u8>>, StorageError> {
    use fjall::Readable;
    let found = snapshot
        .get(store.keyspace(table), key)
        .map_err(storage_error)?;
    Ok(found.map(|value| value.to_vec()))
}

/// The entries of `range` of `table` in `snapshot`, in ascending order (reverse it for
/// descending). The range must not be empty.
pub(crate) fn snapshot_range(
    store: &FjallStore,
    snapshot: &fjall::Snapshot,
    table: Table,
    range: &KeyRange,
) -> fjall::Iter {
    use fjall::Readable;
    snapshot.range::<&[u8], _>(store.keyspace(table), range.as_slices())
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
