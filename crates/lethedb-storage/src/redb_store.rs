//! The durable backend: one redb database file with a table per [`Table`], and its redo log.
//!
//! redb gives us MVCC snapshots (readers never wait for the writer) and copy-on-write commits.
//! A commit appends its changes to the redo log (`redo_log.rs`) and syncs it, so a commit is
//! durable when `commit` returns, and visible to readers only after its sync. A synced commit's
//! changes are staged in memory (`redb_staged.rs`) and readers see them over redb's; once the
//! staged bytes pass [`STAGED_BYTES_DEFAULT`], the flusher (`redb_flush.rs`) writes them all
//! into redb at once, beside the writer and without syncing (`Durability::None`: redb keeps the
//! pages in memory, and a crash returns the file to its last durable commit). Once the log has
//! grown past [`CHECKPOINT_LOG_BYTES_DEFAULT`], a commit cuts the log and the flusher's write is
//! a durable redb commit instead (a checkpoint), which writes every page changed since the last
//! one once, after which the log's file from before the cut is removed. Opening the store replays the log's records of the store's generation. This
//! module maps the trait onto redb, the staged changes and the log; it does not batch, retry or
//! interpret anything.

use crate::api::{
    FlushStats, KeyRange, ReadTxn, Snapshots, Storage, StorageError, Table, Visit, WriteTxn,
};
use crate::overlay::{BaseEntry, Overlay};
use crate::redb_flush::{checkpoint, run_flusher, Redo, Shared, GENERATION_KEY, REDO_STATE};
use crate::redb_layout::{self, io, FileSnapshot};
use crate::redb_staged::{Side, Staged};
use crate::redo_log::{self, RedoLog};
use crate::write_txn::{Base, OverlayWrite};
use redb::ReadableTable;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};

/// How long the redo log grows before a commit checkpoints: the bytes a crash replays at the
/// next open, and a bound on the pages redb holds unsynced (past half its cache it writes them
/// to the file early, unsynced). Larger: fewer bytes written per write, a longer replay.
pub const CHECKPOINT_LOG_BYTES_DEFAULT: u64 = 64 * 1024 * 1024;

/// How many bytes of keys and values commits stage before the flusher writes them into redb:
/// the memory they hold (up to twice this while the flusher works, plus the sets' nodes)
/// against how many commits share each copied page (`bench/results/redb-staged.md`). 0 hands
/// every commit to the flusher.
pub const STAGED_BYTES_DEFAULT: usize = 8 * 1024 * 1024;

/// The page cache redb may use unless told otherwise. redb's own default is 1 GiB, which is
/// what a 1M-item store then occupies; reads past the cache come from the OS page cache.
pub const CACHE_BYTES_DEFAULT: usize = 64 * 1024 * 1024;

/// A redb file opened for reading and writing.
pub struct RedbStore {
    shared: Arc<Shared>,
    flusher: Option<std::thread::JoinHandle<()>>,
}

impl RedbStore {
    /// Opens (or creates) the database file at `path` with the default page cache.
    pub fn open(path: &Path) -> Result<RedbStore, StorageError> {
        RedbStore::open_with_cache(path, CACHE_BYTES_DEFAULT)
    }

    /// Opens (or creates) the database file at `path` and makes sure every table exists.
    /// `cache_bytes` bounds redb's page cache, which is most of the process's memory.
    pub fn open_with_cache(path: &Path, cache_bytes: usize) -> Result<RedbStore, StorageError> {
        RedbStore::open_with_checkpoint(path, cache_bytes, CHECKPOINT_LOG_BYTES_DEFAULT)
    }

    /// [`RedbStore::open_with_cache`] with the redo log's size that makes a commit checkpoint.
    /// A log left by a crash is replayed, checkpointed and emptied here.
    pub fn open_with_checkpoint(
        path: &Path,
        cache_bytes: usize,
        checkpoint_log_bytes: u64,
    ) -> Result<RedbStore, StorageError> {
        let database = redb::Database::builder()
            .set_cache_size(cache_bytes)
            .create(path)
            .map_err(|error| match error {
                redb::DatabaseError::Storage(redb::StorageError::Corrupted(message)) => {
                    StorageError::Corrupted(message)
                }
                redb::DatabaseError::DatabaseAlreadyOpen => {
                    StorageError::AlreadyOpen(path.display().to_string())
                }
                other => io(other),
            })?;
        let mut log = RedoLog::open(&redo_log::path_for(path))?;
        let transaction = database.begin_write().map_err(io)?;
        let generation = stored_generation(&transaction)?;
        redb_layout::prepare(&transaction)?;
        let (commits, log_generation) = logged_commits(&mut log, generation)?;
        if !commits.is_empty() {
            tracing::info!(commits = commits.len(), "replaying the redo log");
        }
        replay(&transaction, commits)?;
        let mut redo = Redo {
            log,
            generation: log_generation,
        };
        checkpoint(transaction, &mut redo)?;
        let shared = Arc::new(Shared::new(
            database,
            redo,
            checkpoint_log_bytes,
            STAGED_BYTES_DEFAULT,
        ));
        let flusher = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("lethedb-redb-flusher".into())
                .spawn(move || run_flusher(shared))
                .map_err(io)?
        };
        Ok(RedbStore {
            shared,
            flusher: Some(flusher),
        })
    }

    /// This store, staging up to `bytes` of committed changes before writing them into redb
    /// (see [`STAGED_BYTES_DEFAULT`]).
    pub fn with_staged_bytes(self, bytes: usize) -> RedbStore {
        self.shared.set_staged_bytes_max(bytes);
        self
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }
}

/// The generation a write transaction sees (0 for a store without the redo log).
fn stored_generation(transaction: &redb::WriteTransaction) -> Result<u64, StorageError> {
    let state = transaction.open_table(REDO_STATE).map_err(io)?;
    let generation = state.get(GENERATION_KEY).map_err(io)?;
    Ok(generation.map_or(0, |value| value.value()))
}

/// The commits to replay over a store of `generation`, oldest first, and the generation of the
/// current log file's records: the previous file's records of `generation` (a cut whose
/// checkpoint never committed left them), then the current file's of `generation` or, after
/// such a cut, of the one after it.
fn logged_commits(
    log: &mut RedoLog,
    generation: u64,
) -> Result<(Vec<Vec<redo_log::Change>>, u64), StorageError> {
    let previous = redo_log::previous_records(log.path(), generation)?;
    let cut = previous.as_ref().is_some_and(|records| !records.is_empty());
    let mut commits = previous.unwrap_or_default();
    let (current, log_generation) = log.records_from(generation, cut)?;
    commits.extend(current);
    Ok((commits, log_generation))
}

/// Applies replayed commits, oldest first, to `transaction`: each commit's changes of one table
/// at once (a commit logs them table by table, each key once, in key order).
fn replay(
    transaction: &redb::WriteTransaction,
    commits: Vec<Vec<redo_log::Change>>,
) -> Result<(), StorageError> {
    for commit in &commits {
        for changes in commit.chunk_by(|a, b| a.0 == b.0) {
            let table = changes[0].0;
            let changes = changes
                .iter()
                .map(|(_, key, value)| (key.as_slice(), value.as_deref()));
            redb_layout::write_sorted(transaction, table, changes)?;
        }
    }
    Ok(())
}

impl Drop for RedbStore {
    /// A clean close lets the flusher finish, then checkpoints what is staged, so the log is
    /// empty and a version of LetheDB that predates it finds everything in the store file; the
    /// log is then shortened to its first MiB.
    fn drop(&mut self) {
        self.shared.stop_flusher();
        if let Some(flusher) = self.flusher.take() {
            if flusher.join().is_err() {
                tracing::warn!("the redb flusher panicked; the next open replays the log");
                return;
            }
        }
        if self.shared.poisoned.load(Ordering::Acquire) {
            return;
        }
        let _exclusive = self.shared.exclusive();
        let closed = self
            .shared
            .database
            .begin_write()
            .map_err(io)
            .and_then(|transaction| {
                let mut redo = self.shared.redo();
                self.shared.checkpoint_staged(transaction, &mut redo)?;
                redo.log.trim()
            });
        if let Err(error) = closed {
            tracing::warn!(%error, "the closing checkpoint failed; the next open replays the log");
        }
    }
}

impl Storage for RedbStore {
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StorageError> {
        Ok(Box::new(RedbRead::new(&self.shared)?))
    }

    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        if self.shared.poisoned.load(Ordering::Acquire) {
            return Err(StorageError::Poisoned);
        }
        let writer = self.shared.writer();
        // After the writer's lock: no other commit changes what this transaction reads.
        let read = RedbRead::new(&self.shared)?;
        Ok(Box::new(OverlayWrite::new(RedbBase {
            read,
            _writer: writer,
            shared: &self.shared,
        })))
    }

    fn kind(&self) -> &'static str {
        "redb"
    }

    fn snapshots(&self) -> Option<&dyn Snapshots> {
        Some(self)
    }

    fn flush_stats(&self) -> Option<FlushStats> {
        Some(self.shared.flush_stats())
    }
}

/// A snapshot: the store file's and the staged changes taken with it.
struct RedbRead {
    file: Arc<FileSnapshot>,
    staged: Arc<Staged>,
}

impl RedbRead {
    fn new(shared: &Shared) -> Result<RedbRead, StorageError> {
        let (staged, file) = shared.snapshot()?;
        Ok(RedbRead { file, staged })
    }

    fn scan_either(
        &self,
        table: Table,
        range: &KeyRange,
        reverse: bool,
        visit: Visit<'_>,
    ) -> Result<(), StorageError> {
        if range.is_empty() {
            return Ok(());
        }
        let base = self.file.entries(table, range, reverse)?;
        if !self.staged.touches(table) {
            return visit_all(base, visit);
        }
        visit_all(self.staged.merged(table, range, reverse, base), visit)
    }
}

fn visit_all<K, V>(
    entries: impl Iterator<Item = BaseEntry<K, V>>,
    visit: Visit<'_>,
) -> Result<(), StorageError>
where
    K: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    for entry in entries {
        let (key, value) = entry?;
        if visit(key.as_ref(), value.as_ref()).is_break() {
            break;
        }
    }
    Ok(())
}

impl ReadTxn for RedbRead {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        if let Some(change) = self.staged.get(table, key) {
            return Ok(change.map(<[u8]>::to_vec));
        }
        self.file.get(table, key)
    }

    fn scan(&self, table: Table, range: &KeyRange, visit: Visit<'_>) -> Result<(), StorageError> {
        self.scan_either(table, range, false, visit)
    }

    fn scan_rev(
        &self,
        table: Table,
        range: &KeyRange,
        visit: Visit<'_>,
    ) -> Result<(), StorageError> {
        self.scan_either(table, range, true, visit)
    }
}

/// The committed side of the write transaction: a snapshot of redb with the staged changes
/// over it, taken under the writer's lock. Writes wait in the overlay until commit, which logs
/// and stages them (`redb_flush.rs`); it never holds redb's write transaction, so the flusher
/// writes into redb meanwhile.
struct RedbBase<'a> {
    read: RedbRead,
    _writer: MutexGuard<'a, ()>,
    shared: &'a Shared,
}

impl Base for RedbBase<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.read.get(table, key)
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
        let base = self.read.file.entries(table, range, reverse)?;
        if !self.read.staged.touches(table) {
            return overlay.merged_scan(table, range, reverse, base, visit);
        }
        let merged = self.read.staged.merged(table, range, reverse, base);
        let merged: Box<dyn Iterator<Item = BaseEntry<Side<'_, _>, Side<'_, _>>>> =
            Box::new(merged);
        overlay.merged_scan(table, range, reverse, merged, visit)
    }

    fn commit(self, overlay: Overlay) -> Result<(), StorageError> {
        let tables: Vec<_> = overlay
            .into_tables()
            .filter(|(_, changes)| !changes.is_empty())
            .collect();
        if tables.is_empty() {
            // Nothing to log, stage or make durable.
            return Ok(());
        }
        // The transaction's own snapshot goes first: with no reader holding the staged
        // changes, the commit stages its own in place.
        let RedbBase {
            read,
            _writer,
            shared,
        } = self;
        drop(read);
        shared.commit(&tables).map_err(|error| {
            shared.poisoned.store(true, Ordering::Release);
            tracing::error!(%error, "commit failed; refusing further writes until restart");
            error
        })
    }
}
