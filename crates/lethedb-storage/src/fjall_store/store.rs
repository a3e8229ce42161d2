//! The fjall store itself: the database, a keyspace per table, its locks, sync gate, catalog
//! epoch and poison flag, how it opens, syncs and maps fjall's errors, and the snapshot reads
//! that the store's readers and its write transaction share.
//!
//! It begins no transaction: `mod.rs` maps the storage interface onto it, and `write.rs` is the
//! write transaction.

use super::locks::Locks;
use super::sync_gate::SyncGate;
use crate::api::{KeyRange, StorageError, Table};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The memory fjall may hold unless told otherwise, split between its block cache (half) and
/// its memtables (the other half, bounded per keyspace): the redb store's page cache budget
/// (its `CACHE_BYTES_DEFAULT`), so switching stores does not change the process's size.
/// fjall's own default bounds each memtable at 64 MiB and their total not at all.
pub const FJALL_MEMORY_BYTES_DEFAULT: u64 = 64 * 1024 * 1024;

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
    pub(super) database: fjall::Database,
    /// One keyspace per table, by [`Table::index`].
    pub(super) keyspaces: Vec<fjall::Keyspace>,
    pub(super) locks: Locks,
    pub(super) gate: SyncGate,
    /// How many commits have changed [`Table::Catalog`] since the store was opened.
    pub(super) catalog_epoch: AtomicU64,
    /// Set when an append or a sync failed: what reached the disk is unknown.
    pub(super) poisoned: AtomicBool,
    /// Tests set this to make the next syncs fail, as a failing disk would.
    #[cfg(test)]
    fail_syncs: AtomicBool,
}

/// What fjall's own poison means when this store's flag was not set: one of fjall's background
/// writes failed (it logs which), and it refuses every batch since.
const BACKGROUND_FAILURE: &str = "the store failed a write of its own earlier (a memtable flush, \
    a blob file or a compaction; a full disk is the usual cause, the log says which) and \
    refuses every write since";

/// Maps a fjall error onto the storage layer's.
pub(super) fn storage_error(error: fjall::Error) -> StorageError {
    match error {
        // Not `StorageError::Poisoned`, which says a commit of ours failed: the cause here is
        // elsewhere, and the 503 that reports it should say so.
        fjall::Error::Poisoned => StorageError::Io(BACKGROUND_FAILURE.into()),
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

    pub(super) fn keyspace(&self, table: Table) -> &fjall::Keyspace {
        &self.keyspaces[table.index()]
    }

    /// Syncs the journal, durably: every batch appended before it survives a crash.
    pub(super) fn sync(&self) -> Result<(), StorageError> {
        #[cfg(test)]
        if self.fail_syncs.load(Ordering::Acquire) {
            return Err(StorageError::Io("injected sync failure".into()));
        }
        self.database
            .persist(fjall::PersistMode::SyncAll)
            .map_err(storage_error)
    }

    /// Refuses every later write transaction after `error`, which it returns.
    pub(super) fn poison(&self, what: &str, error: StorageError) -> StorageError {
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

/// Reads `key` of `table` in `snapshot`.
pub(super) fn snapshot_get(
    store: &FjallStore,
    snapshot: &fjall::Snapshot,
    table: Table,
    key: &[u8],
) -> Result<Option<Vec<u8>>, StorageError> {
    use fjall::Readable as _;
    let found = snapshot
        .get(store.keyspace(table), key)
        .map_err(storage_error)?;
    Ok(found.map(|value| value.to_vec()))
}

/// The entries of `range` of `table` in `snapshot`, in ascending order (reverse it for
/// descending). The range must not be empty.
pub(super) fn snapshot_range(
    store: &FjallStore,
    snapshot: &fjall::Snapshot,
    table: Table,
    range: &KeyRange,
) -> fjall::Iter {
    use fjall::Readable;
    snapshot.range::<&[u8], _>(store.keyspace(table), range.as_slices())
}
