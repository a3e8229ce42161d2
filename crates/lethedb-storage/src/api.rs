//! The storage interface every backend implements and the engine calls: the [`Table`]s, key
//! ranges ([`KeyRange`]), the [`Storage`] / [`ReadTxn`] / [`WriteTxn`] traits, savepoints and
//! [`StorageError`].
//!
//! It says what a backend must do (snapshots that never wait for the writer, one write
//! transaction at a time, savepoints, a durable commit), not how any backend does it; the
//! backends and the write transaction they share live in their own modules.

use bytes::Bytes;
use std::future::Future;
use std::ops::{Bound, ControlFlow};
use std::pin::Pin;

/// The keyspaces the engine stores data in. Each backend keeps one table per variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    /// Databases and containers.
    Catalog,
    /// Items, keyed by container, partition key and id.
    Items,
    /// An ordered index the engine keeps next to its items (it orders them by expiry).
    Expiry,
    /// Per-container counters (item count, bytes, sequence numbers).
    Counters,
    /// Items by resource id, for clients that address items by `_self`.
    ResourceIds,
    /// The current version of each item by container and LSN (the latest-version change feed).
    ChangeIndex,
    /// One entry per write and delete by container and LSN (the all-versions change feed).
    ChangeLog,
    /// Secondary entries the engine keeps per item, keyed by container first: the indexing
    /// policy's index entries and the unique keys' claims. Empty values; the key is the entry.
    Index,
}

impl Table {
    /// Every table, in a fixed order (backends index arrays by it).
    pub const ALL: [Table; 8] = [
        Table::Catalog,
        Table::Items,
        Table::Expiry,
        Table::Counters,
        Table::ResourceIds,
        Table::ChangeIndex,
        Table::ChangeLog,
        Table::Index,
    ];

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// A failure of the storage backend. Every variant means the operation did not take effect.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("storage I/O failed: {0}")]
    Io(String),
    #[error("storage is corrupted: {0}")]
    Corrupted(String),
    /// A commit failed earlier, so the on-disk state is unknown; the store refuses further writes
    /// rather than guessing (a restart re-opens it from its last durable state).
    #[error("storage refuses writes after an earlier commit failure")]
    Poisoned,
    /// Another process (or another handle in this one) has the store open; one process owns a
    /// store, because its caches, counters and single writer assume nobody else writes.
    #[error(
        "the store at {0} is already open in another process; one LetheDB process owns a store"
    )]
    AlreadyOpen(String),
    /// A shared store (PostgreSQL) could not be reached or did not answer in time. Nothing was
    /// done, or, if the connection was lost during a commit, nothing was acknowledged; the
    /// store itself is intact, so this never poisons it, and the next operation tries again.
    #[error("the store is unavailable: {0}")]
    Unavailable(String),
}

/// A key range: start and end bounds over byte keys.
#[derive(Clone, Debug)]
pub struct KeyRange {
    pub start: Bound<Vec<u8>>,
    pub end: Bound<Vec<u8>>,
}

impl KeyRange {
    /// Every key that begins with `prefix`.
    pub fn prefix(prefix: &[u8]) -> KeyRange {
        KeyRange {
            start: Bound::Included(prefix.to_vec()),
            end: prefix_successor(prefix).map_or(Bound::Unbounded, Bound::Excluded),
        }
    }

    /// Keys in `[start, end)`.
    pub fn between(start: Vec<u8>, end: Vec<u8>) -> KeyRange {
        KeyRange {
            start: Bound::Included(start),
            end: Bound::Excluded(end),
        }
    }

    /// The bounds as borrowed slices, as ordered maps take them.
    pub(crate) fn as_slices(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (slice_bound(&self.start), slice_bound(&self.end))
    }

    /// True when no key can fall in the range (redb panics on such ranges, so we never pass one).
    pub(crate) fn is_empty(&self) -> bool {
        match (&self.start, &self.end) {
            (Bound::Included(s), Bound::Included(e)) => s > e,
            (Bound::Included(s) | Bound::Excluded(s), Bound::Excluded(e))
            | (Bound::Excluded(s), Bound::Included(e)) => s >= e,
            _ => false,
        }
    }
}

fn slice_bound(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(key) => Bound::Included(key.as_slice()),
        Bound::Excluded(key) => Bound::Excluded(key.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The smallest byte string greater than every string with this prefix, if there is one.
/// `items` sorted, each once (shards or lock keys, which locks take in ascending order).
pub(crate) fn sorted_set<T: Ord + Copy>(items: &[T]) -> Vec<T> {
    let mut set = items.to_vec();
    set.sort_unstable();
    set.dedup();
    set
}

pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// A visitor over key-value pairs in key order; `Break` stops the scan.
pub type Visit<'a> = &'a mut dyn FnMut(&[u8], &[u8]) -> ControlFlow<()>;

/// A consistent, read-only view of the store as of its creation.
pub trait ReadTxn {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError>;
    /// The values of several keys, in the order asked.
    fn get_many(&self, keys: &[(Table, &[u8])]) -> Result<Vec<Option<Vec<u8>>>, StorageError> {
        keys.iter()
            .map(|(table, key)| self.get(*table, key))
            .collect()
    }
    /// Visits the pairs in `range` in ascending key order until the visitor breaks.
    fn scan(&self, table: Table, range: &KeyRange, visit: Visit<'_>) -> Result<(), StorageError>;
    /// Like [`ReadTxn::scan`] but in descending key order.
    fn scan_rev(
        &self,
        table: Table,
        range: &KeyRange,
        visit: Visit<'_>,
    ) -> Result<(), StorageError>;
    /// The store's own clock as this transaction read it, in milliseconds since the Unix epoch,
    /// for a store that several processes share (PostgreSQL); `None` for a store one process
    /// owns, whose caller keeps the time.
    fn store_now_ms(&self) -> Option<i64> {
        None
    }
    /// How many commits have changed [`Table::Catalog`], as of this transaction, for a shared
    /// store (so a process can tell whether definitions it cached are still current); `None`
    /// for a store one process owns, which sees every catalog change itself.
    fn catalog_epoch(&self) -> Option<u64> {
        None
    }
}

/// A point a write transaction can return to, from [`WriteTxn::savepoint`]. Savepoints nest;
/// each must be released or rolled back to, innermost first.
#[must_use = "a savepoint must be released or rolled back to"]
#[derive(Debug)]
pub struct Savepoint {
    /// Changes recorded before the savepoint was taken.
    pub(crate) journal_len: usize,
    /// How many savepoints were open once this one was taken.
    pub(crate) depth: usize,
}

/// The single write transaction. Reads through it see its own uncommitted writes.
pub trait WriteTxn: ReadTxn {
    /// Writes `value` under `key`. The value is a shared immutable buffer, so a caller that
    /// encoded it into a `Vec` hands it over without a copy; the transaction holds it until it
    /// commits, and each store then copies it into its own layout (the in-memory store and the
    /// redb store's staged changes next to its key, in one allocation: `memory/entry.rs`).
    fn put_bytes(&mut self, table: Table, key: &[u8], value: Bytes) -> Result<(), StorageError>;
    /// [`WriteTxn::put_bytes`] of a copy of `value`.
    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<(), StorageError> {
        self.put_bytes(table, key, Bytes::copy_from_slice(value))
    }
    fn delete(&mut self, table: Table, key: &[u8]) -> Result<(), StorageError>;
    /// This transaction's own change to `key`, without asking the store: `Some(Some(value))`
    /// written, `Some(None)` deleted, `None` untouched here (the committed value stands).
    fn own_change(&self, table: Table, key: &[u8]) -> Option<Option<Vec<u8>>>;
    /// Marks the transaction's current state. It costs nothing until changes follow, and then
    /// only a record of what each change replaced in the transaction; it never reads the store.
    fn savepoint(&mut self) -> Savepoint;
    /// Undoes every change made since `savepoint`, which is then closed.
    fn rollback_to(&mut self, savepoint: Savepoint);
    /// Keeps the changes made since `savepoint`, which is then closed.
    fn release(&mut self, savepoint: Savepoint);
    /// Makes every change durable at once; when this returns `Ok`, a crash cannot lose them.
    fn commit(self: Box<Self>) -> Result<(), StorageError>;
}

/// What [`Storage::look`] saw: the values of the keys asked (`None` where a key has none),
/// in the order asked, and the store's clock and epoch as [`ReadTxn::store_now_ms`] and
/// [`ReadTxn::catalog_epoch`] give them.
#[derive(Debug)]
pub struct Look {
    pub values: Vec<Option<Vec<u8>>>,
    pub now_ms: Option<i64>,
    pub epoch: Option<u64>,
}

/// A [`Look`] still on its way ([`Storage::look_async`]).
pub type LookFuture = Pin<Box<dyn Future<Output = Result<Look, StorageError>> + Send>>;

/// A storage backend.
pub trait Storage: Send + Sync + 'static {
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StorageError>;
    /// Begins the write transaction. Callers serialise writes (the engine has one writer).
    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StorageError>;
    /// Begins the write transaction for work that will read `keys` (a group's items and
    /// counters): a shared store fetches their committed values with its start, in the same
    /// round trip, and later reads of them wait on nothing. A hint: a store that reads locally
    /// ignores it, and a key not read afterwards costs only the fetch.
    fn write_reading(
        &self,
        keys: &[(Table, &[u8])],
    ) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        let _ = keys;
        self.write()
    }
    /// [`Storage::write_reading`] for a transaction that writes only within the shards whose
    /// lock keys are `shards` (the engine's: one per shard of a container, see its
    /// `partitions/shards.rs`): a shared store takes only their locks, so transactions of
    /// disjoint shards, from any process, commit side by side (the fjall store does the same
    /// within its process); a store with one writer ignores them. The caller promises to write nothing another shard's transaction may write.
    fn write_reading_shards(
        &self,
        shards: &[u64],
        keys: &[(Table, &[u8])],
    ) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        let _ = shards;
        self.write_reading(keys)
    }
    /// [`Storage::write_reading_shards`] that takes only the shards' locks free at once and
    /// says which (sorted): the caller runs only the work of those shards in the transaction
    /// and leaves the rest for a later one, so that it never waits behind another process's
    /// transaction while it has work it could do. When none is free it waits for them all, as
    /// [`Storage::write_reading_shards`] does. A store with one writer takes them all.
    fn write_reading_free_shards(
        &self,
        shards: &[u64],
        keys: &[(Table, &[u8])],
    ) -> Result<(Box<dyn WriteTxn + '_>, Vec<u64>), StorageError> {
        Ok((self.write_reading_shards(shards, keys)?, sorted_set(shards)))
    }
    /// Whether other processes may write to this store too (PostgreSQL): then what a process
    /// cached must be checked against each transaction's [`ReadTxn::catalog_epoch`].
    fn is_shared(&self) -> bool {
        false
    }
    /// Whether write transactions of disjoint shards ([`Storage::write_reading_shards`]) run
    /// and commit side by side here, so a writer gains from keeping several in flight (its
    /// lanes): a shared store's (PostgreSQL) do, across processes; the fjall store's do within
    /// its process. A store with one writer (redb, memory) says no. A write transaction of
    /// such a store reports the catalog epoch ([`ReadTxn::catalog_epoch`]), so that a lane can
    /// tell that another changed the catalog.
    fn concurrent_shard_writes(&self) -> bool {
        self.is_shared()
    }
    /// One consistent look at a few keys (their values, with the store's clock and catalog
    /// epoch at that instant) and no snapshot to read on afterwards: a shared store answers
    /// it with one statement, one round trip, no transaction. A point read needs no more.
    fn look(&self, keys: &[(Table, &[u8])]) -> Result<Look, StorageError> {
        let reader = self.read()?;
        Ok(Look {
            values: reader.get_many(keys)?,
            now_ms: reader.store_now_ms(),
            epoch: reader.catalog_epoch(),
        })
    }
    /// The same look as a future, for a caller on an asynchronous runtime, where the backend
    /// waits on a network (PostgreSQL): no thread is held while it waits. `None`: the backend
    /// answers [`Storage::look`] from its own memory or disk without waiting on anyone; call
    /// that instead.
    fn look_async(&self, keys: &[(Table, &[u8])]) -> Option<LookFuture> {
        let _ = keys;
        None
    }
    /// Which backend this is, as a status page names it (`redb`, `fjall`, `memory`,
    /// `postgresql`).
    fn kind(&self) -> &'static str;
    /// Named snapshots of the whole store, where the backend keeps them.
    fn snapshots(&self) -> Option<&dyn Snapshots> {
        None
    }
    /// What the store's background writer has done so far, where it has one (the redb
    /// store's flusher); for the statistics and the bench.
    fn flush_stats(&self) -> Option<FlushStats> {
        None
    }
}

/// What a store that writes its commits into its file in the background (the redb store's
/// flusher, `redb_flush.rs`) has done since it opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlushStats {
    /// Transactions the flusher wrote, checkpoints included.
    pub flushes: u64,
    /// Those of them that were checkpoints (synced).
    pub checkpoints: u64,
    /// Time the flusher spent writing, in microseconds.
    pub busy_micros: u64,
    /// Commits that waited for the flusher (a second tier filled while it was still busy).
    pub waits: u64,
    /// Time those commits waited, in microseconds.
    pub wait_micros: u64,
    /// Bytes appended to the redo log (records and their end markers) since the store opened:
    /// the log's share of what the store writes, which its files' sizes no longer tell, since
    /// they are reused (`redo_log.rs`).
    pub log_bytes: u64,
}

/// Named copies of the whole store, for tests: saved, then restored in an instant. Callers run
/// these between write transactions, never beside one (the engine's writer does).
pub trait Snapshots {
    /// Saves the store as it is under `name`, replacing an earlier snapshot of that name.
    fn save(&self, name: &str) -> Result<(), StorageError>;
    /// Returns the store to the snapshot `name` (false: there is none). Snapshots saved after
    /// it are gone afterwards; it and those saved before it remain.
    fn restore(&self, name: &str) -> Result<bool, StorageError>;
    /// Forgets the snapshot `name` (false: there was none).
    fn delete(&self, name: &str) -> Result<bool, StorageError>;
    /// The names of the snapshots, sorted.
    fn names(&self) -> Result<Vec<String>, StorageError>;
}
