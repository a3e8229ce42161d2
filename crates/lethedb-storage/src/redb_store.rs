//! The durable backend: one redb database file with a table per [`Table`], and its redo log.
//!
//! redb gives us MVCC snapshots (readers never wait for the writer) and copy-on-write commits.
//! A commit appends its changes to the redo log (`redo_log.rs`) and syncs it, so a commit is
//! durable when `commit` returns, and
//! visible to readers only after its sync. A synced commit's changes are staged in memory
//! (`redb_staged.rs`) and readers see them over redb's; once the staged bytes pass
//! [`STAGED_BYTES_DEFAULT`], the commit writes them all into redb at once, without syncing
//! (`Durability::None`: redb keeps the pages in memory, and a crash returns the file to its last
//! durable commit). Once the log has grown past [`CHECKPOINT_LOG_BYTES_DEFAULT`], that write is
//! a durable redb commit instead (a checkpoint), which writes every page changed since the last
//! one once, and the log is emptied. Opening the store replays the log's records of the store's
//! generation. This module maps the trait onto redb and the log; it does not batch, retry or
//! interpret anything.

use crate::api::{KeyRange, ReadTxn, Snapshots, Storage, StorageError, Table, Visit, WriteTxn};
use crate::overlay::{BaseEntry, Overlay};
use crate::redb_staged::{Side, Staged};
use crate::redo_log::{self, RedoLog};
use crate::write_txn::{Base, OverlayWrite};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use std::cell::OnceCell;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

const DEFINITIONS: [TableDefinition<'static, &'static [u8], &'static [u8]>; 8] = [
    TableDefinition::new("catalog"),
    TableDefinition::new("items"),
    TableDefinition::new("expiry"),
    TableDefinition::new("counters"),
    TableDefinition::new("resource_ids"),
    TableDefinition::new("change_index"),
    TableDefinition::new("change_log"),
    TableDefinition::new("index"),
];

/// The store's own bookkeeping: the redo log's generation under [`GENERATION_KEY`]. A store
/// written before the redo log lacks the table and is at generation 0 with no log.
const REDO_STATE: TableDefinition<'static, &'static str, u64> = TableDefinition::new("redo_log");
const GENERATION_KEY: &str = "generation";

/// How long the redo log grows before a commit checkpoints: the bytes a crash replays at the
/// next open, and a bound on the pages redb holds unsynced (past half its cache it writes them
/// to the file early, unsynced). Larger: fewer bytes written per write, a longer replay.
pub const CHECKPOINT_LOG_BYTES_DEFAULT: u64 = 64 * 1024 * 1024;

/// How many bytes of keys and values commits stage before one writes them into redb: the memory
/// they hold (about twice this with the maps' nodes) against how many commits share each copied
/// page (`bench/results/redb-staged.md`). 0 writes every commit into redb.
pub const STAGED_BYTES_DEFAULT: usize = 8 * 1024 * 1024;

fn definition(table: Table) -> TableDefinition<'static, &'static [u8], &'static [u8]> {
    DEFINITIONS[table.index()]
}

fn io(error: impl std::fmt::Display) -> StorageError {
    StorageError::Io(error.to_string())
}

/// The page cache redb may use unless told otherwise. redb's own default is 1 GiB, which is
/// what a 1M-item store then occupies; reads past the cache come from the OS page cache.
pub const CACHE_BYTES_DEFAULT: usize = 64 * 1024 * 1024;

/// A redb file opened for reading and writing.
pub struct RedbStore {
    database: redb::Database,
    /// Set when a commit failed: what reached the disk is unknown, so no further write is tried.
    poisoned: AtomicBool,
    /// The redo log and the generation its records carry. Only a commit takes it, and the
    /// single write transaction is held then, so it is never contended on the write path.
    redo: Mutex<Redo>,
    checkpoint_log_bytes: u64,
    /// Commits durable in the log and not yet in redb; replaced only by the holder of redb's
    /// write transaction, and read together with a redb snapshot under this lock.
    staged: RwLock<Arc<Staged>>,
    staged_bytes_max: usize,
}

/// The redo log and the store's generation, which every checkpoint raises.
pub(crate) struct Redo {
    log: RedoLog,
    generation: u64,
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
        for table in Table::ALL {
            transaction.open_table(definition(table)).map_err(io)?;
        }
        let commits = log.records(generation)?;
        if !commits.is_empty() {
            tracing::info!(commits = commits.len(), "replaying the redo log");
        }
        replay(&transaction, commits)?;
        let mut redo = Redo { log, generation };
        checkpoint(transaction, &mut redo)?;
        Ok(RedbStore {
            database,
            poisoned: AtomicBool::new(false),
            redo: Mutex::new(redo),
            checkpoint_log_bytes,
            staged: RwLock::default(),
            staged_bytes_max: STAGED_BYTES_DEFAULT,
        })
    }

    /// This store, staging up to `bytes` of committed changes before writing them into redb
    /// (see [`STAGED_BYTES_DEFAULT`]).
    pub fn with_staged_bytes(mut self, bytes: usize) -> RedbStore {
        self.staged_bytes_max = bytes;
        self
    }
}

/// The generation a write transaction sees (0 for a store without the redo log).
fn stored_generation(transaction: &redb::WriteTransaction) -> Result<u64, StorageError> {
    let state = transaction.open_table(REDO_STATE).map_err(io)?;
    let generation = state.get(GENERATION_KEY).map_err(io)?;
    Ok(generation.map_or(0, |value| value.value()))
}

/// Applies replayed commits, oldest first, to `transaction`.
fn replay(
    transaction: &redb::WriteTransaction,
    commits: Vec<Vec<redo_log::Change>>,
) -> Result<(), StorageError> {
    for (table, key, value) in commits.into_iter().flatten() {
        let mut opened = transaction.open_table(definition(table)).map_err(io)?;
        match value {
            Some(value) => opened.insert(key.as_slice(), value.as_slice()).map(drop),
            None => opened.remove(key.as_slice()).map(drop),
        }
        .map_err(io)?;
    }
    Ok(())
}

/// Commits `transaction` durably with the next generation, then empties the log: its records,
/// of the generation before, are all in the store now and will never be replayed.
pub(crate) fn checkpoint(
    transaction: redb::WriteTransaction,
    redo: &mut Redo,
) -> Result<(), StorageError> {
    let next = redo.generation + 1;
    transaction
        .open_table(REDO_STATE)
        .map_err(io)?
        .insert(GENERATION_KEY, next)
        .map_err(io)?;
    transaction.commit().map_err(io)?;
    redo.generation = next;
    redo.log.empty()
}

impl RedbStore {
    pub(crate) fn database(&self) -> &redb::Database {
        &self.database
    }

    /// The redo log, for a caller that commits durably outside the write path (snapshots):
    /// it must commit through [`RedbStore::checkpoint_staged`], so that the log never replays
    /// over its commit and no staged change is lost with the log.
    pub(crate) fn redo(&self) -> MutexGuard<'_, Redo> {
        // A panic while holding it leaves the log as its last whole append or emptying left it.
        self.redo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn staged(&self) -> Arc<Staged> {
        // Replaced in one assignment, so whole even when a panic poisoned the lock.
        Arc::clone(
            &self
                .staged
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    fn publish(&self, staged: Arc<Staged>) {
        *self
            .staged
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = staged;
    }

    /// Writes the staged changes into `transaction` (which its caller holds, so nothing is
    /// staged meanwhile), commits it as a checkpoint, and then empties the staged maps: a reader
    /// between the two reads the same values from either side.
    pub(crate) fn checkpoint_staged(
        &self,
        transaction: redb::WriteTransaction,
        redo: &mut Redo,
    ) -> Result<(), StorageError> {
        let staged = self.staged();
        staged.apply(&transaction, definition)?;
        checkpoint(transaction, redo)?;
        if !staged.is_empty() {
            self.publish(Arc::default());
        }
        Ok(())
    }

    /// Replaces the whole committed state by running `change` on a transaction and
    /// checkpointing it, with the staged changes dropped: they belong to the state replaced.
    /// Readers wait meanwhile, since neither side alone reads as either state.
    pub(crate) fn replace_state(
        &self,
        change: impl FnOnce(&mut redb::WriteTransaction) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        let mut transaction = self.database.begin_write().map_err(io)?;
        change(&mut transaction)?;
        let mut staged = self
            .staged
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        checkpoint(transaction, &mut self.redo())?;
        *staged = Arc::default();
        Ok(())
    }
}

impl Drop for RedbStore {
    /// A clean close checkpoints, so the log is empty and a version of LetheDB that predates
    /// it finds everything in the store file.
    fn drop(&mut self) {
        if self.poisoned.load(Ordering::Acquire) {
            return;
        }
        let closed = self
            .database
            .begin_write()
            .map_err(io)
            .and_then(|transaction| self.checkpoint_staged(transaction, &mut self.redo()));
        if let Err(error) = closed {
            tracing::warn!(%error, "the closing checkpoint failed; the next open replays the log");
        }
    }
}

impl Storage for RedbStore {
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StorageError> {
        // Both under the lock, so a reader never pairs the maps of one state with redb's of
        // another (`replace_state` holds it while it commits).
        let guard = self
            .staged
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let staged = Arc::clone(&guard);
        let transaction = self.database.begin_read().map_err(io)?;
        drop(guard);
        Ok(Box::new(RedbRead {
            transaction,
            staged,
            tables: Default::default(),
        }))
    }

    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(StorageError::Poisoned);
        }
        let transaction = self.database.begin_write().map_err(io)?;
        // Taken after redb's write transaction: only its holder replaces the maps.
        let staged = self.staged();
        Ok(Box::new(OverlayWrite::new(RedbBase {
            transaction,
            staged,
            store: self,
        })))
    }

    fn kind(&self) -> &'static str {
        "redb"
    }

    fn snapshots(&self) -> Option<&dyn Snapshots> {
        Some(self)
    }
}

type ReadTable = redb::ReadOnlyTable<&'static [u8], &'static [u8]>;

/// A snapshot: redb's and the staged changes taken with it. Tables are opened on first use,
/// since most requests touch one or two of them, and kept (redb finds a table by name in its
/// table tree, which cost a point read about 5 % of its instructions when done on every call).
struct RedbRead {
    transaction: redb::ReadTransaction,
    staged: Arc<Staged>,
    tables: [OnceCell<ReadTable>; Table::ALL.len()],
}

impl RedbRead {
    fn table(&self, table: Table) -> Result<&ReadTable, StorageError> {
        let cell = &self.tables[table.index()];
        if let Some(opened) = cell.get() {
            return Ok(opened);
        }
        let opened = self.transaction.open_table(definition(table)).map_err(io)?;
        Ok(cell.get_or_init(|| opened))
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
        let entries = self
            .table(table)?
            .range::<&[u8]>(range.as_slices())
            .map_err(io)?;
        let base: Box<dyn Iterator<Item = BaseEntry<Guarded<'_>, Guarded<'_>>>> = if reverse {
            Box::new(entries.rev().map(guarded))
        } else {
            Box::new(entries.map(guarded))
        };
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
        let found = self.table(table)?.get(key).map_err(io)?;
        Ok(found.map(|value| value.value().to_vec()))
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

/// The committed side of the write transaction: redb's state with the staged changes over it.
/// Writes wait in the overlay until commit, which logs them and stages them, and writes the
/// staged changes into redb when they have grown past the store's bound.
struct RedbBase<'a> {
    transaction: redb::WriteTransaction,
    staged: Arc<Staged>,
    store: &'a RedbStore,
}

/// A redb value or key, readable as bytes while its guard lives.
struct Guarded<'a>(redb::AccessGuard<'a, &'static [u8]>);

impl AsRef<[u8]> for Guarded<'_> {
    fn as_ref(&self) -> &[u8] {
        self.0.value()
    }
}

type RedbEntry<'a> = Result<
    (
        redb::AccessGuard<'a, &'static [u8]>,
        redb::AccessGuard<'a, &'static [u8]>,
    ),
    redb::StorageError,
>;

fn guarded(entry: RedbEntry<'_>) -> BaseEntry<Guarded<'_>, Guarded<'_>> {
    entry
        .map(|(key, value)| (Guarded(key), Guarded(value)))
        .map_err(io)
}

impl Base for RedbBase<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        if let Some(change) = self.staged.get(table, key) {
            return Ok(change.map(<[u8]>::to_vec));
        }
        let opened = self.transaction.open_table(definition(table)).map_err(io)?;
        let found = opened.get(key).map_err(io)?;
        Ok(found.map(|value| value.value().to_vec()))
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
        let opened = self.transaction.open_table(definition(table)).map_err(io)?;
        let entries = opened.range::<&[u8]>(range.as_slices()).map_err(io)?;
        let base: Box<dyn Iterator<Item = BaseEntry<Guarded<'_>, Guarded<'_>>>> = if reverse {
            Box::new(entries.rev().map(guarded))
        } else {
            Box::new(entries.map(guarded))
        };
        if !self.staged.touches(table) {
            return overlay.merged_scan(table, range, reverse, base, visit);
        }
        let merged = self.staged.merged(table, range, reverse, base);
        let merged: Box<dyn Iterator<Item = BaseEntry<Side<'_, _>, Side<'_, _>>>> =
            Box::new(merged);
        overlay.merged_scan(table, range, reverse, merged, visit)
    }

    fn commit(self, overlay: Overlay) -> Result<(), StorageError> {
        let RedbBase {
            transaction,
            staged,
            store,
        } = self;
        let tables: Vec<_> = overlay
            .into_tables()
            .filter(|(_, changes)| !changes.is_empty())
            .collect();
        if tables.is_empty() {
            // Nothing to log, stage or make durable: only the transaction to end.
            return transaction.abort().map_err(io);
        }
        commit_staged(store, transaction, &staged, &tables).map_err(|error| {
            store.poisoned.store(true, Ordering::Release);
            tracing::error!(%error, "commit failed; refusing further writes until restart");
            error
        })
    }
}

/// Appends the changes to the redo log and syncs it, then stages them: readers see them only
/// once they are durable in the log. When the staged changes have outgrown the store's bound,
/// or the log its checkpoint size, they are then written into redb, which readers cannot tell,
/// since the maps are emptied only after redb has committed all they hold.
fn commit_staged(
    store: &RedbStore,
    transaction: redb::WriteTransaction,
    staged: &Staged,
    tables: &[(Table, crate::overlay::Changes)],
) -> Result<(), StorageError> {
    let mut redo = store.redo();
    let borrowed: Vec<_> = tables
        .iter()
        .map(|(table, changes)| (*table, changes))
        .collect();
    // Decided before the append: the log grown past its size by earlier commits.
    let checkpoint_due = redo.log.bytes() >= store.checkpoint_log_bytes;
    let generation = redo.generation;
    // Appended even before a checkpoint: readers may see the staged commit before redb has it.
    redo.log.append(generation, &borrowed)?;
    let next = Arc::new(staged.with(tables));
    if !checkpoint_due && next.bytes() < store.staged_bytes_max {
        store.publish(next);
        return transaction.abort().map_err(io);
    }
    store.publish(Arc::clone(&next));
    next.apply(&transaction, definition)?;
    if checkpoint_due {
        checkpoint(transaction, &mut redo)?;
    } else {
        commit_unsynced(transaction)?;
    }
    store.publish(Arc::default());
    Ok(())
}

fn commit_unsynced(mut transaction: redb::WriteTransaction) -> Result<(), StorageError> {
    transaction
        .set_durability(redb::Durability::None)
        .map_err(io)?;
    transaction.commit().map_err(io)
}
