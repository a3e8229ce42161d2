//! The redb store's shared state, its writer's commit, and its flusher: the thread that writes
//! staged changes into redb beside the writer.
//!
//! A commit appends its changes to the redo log and syncs it, then adds them to the active tier
//! of the staged changes (`redb_staged.rs`), where readers see them. Once the active tier holds
//! the store's bound of bytes, the commit freezes it and hands it to the flusher, which writes
//! it into redb in one unsynced transaction and then empties the frozen tier; writes go on
//! meanwhile, since the engine's write transactions read a redb snapshot and never hold redb's
//! own write transaction. Writing 8 MiB of staged changes into redb takes ~330 million
//! instructions, which the writer would otherwise spend in one commit, with every write waiting
//! behind it (`bench/results/redb-staged.md`). A writer that fills a second tier before the
//! flusher is done waits for it, which bounds the memory.
//!
//! A checkpoint (a synced redb commit after which the log's records are never replayed) is the
//! flusher's too, once the log has grown past its size: the commit that finds it so cuts the
//! log (`redo_log.rs`: later records go to a new file, under the next generation) and freezes
//! the active tier, and the flusher writes that tier with a synced commit that stores the next
//! generation, then removes the file before the cut. Everything that file recorded is then in
//! redb: in that commit, or in an earlier unsynced one, which a synced commit makes durable.
//! Named snapshots and the close take the writer's lock, wait for the flusher and checkpoint
//! what is staged themselves.

use crate::api::{FlushStats, StorageError, Table};
use crate::clock::Stopwatch;
use crate::overlay::Changes;
use crate::published::Published;
use crate::redb_layout::{io, FileSnapshot};
use crate::redb_staged::{Staged, Tier};
use crate::redo_log::{self, RedoLog};
use redb::{ReadableDatabase, TableDefinition};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockWriteGuard};
use std::time::Duration;

/// The store's own bookkeeping: the redo log's generation under [`GENERATION_KEY`]. A store
/// written before the redo log lacks the table and is at generation 0 with no log.
pub(crate) const REDO_STATE: TableDefinition<'static, &'static str, u64> =
    TableDefinition::new("redo_log");
pub(crate) const GENERATION_KEY: &str = "generation";

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each guarded value is changed in single assignments, so it is whole after a panic.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Waits on `condvar` with `guard` while `waiting` holds of the flush state.
fn wait_while<'a>(
    condvar: &Condvar,
    guard: MutexGuard<'a, FlushState>,
    waiting: impl FnMut(&mut FlushState) -> bool,
) -> MutexGuard<'a, FlushState> {
    condvar
        .wait_while(guard, waiting)
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The redo log and the store's generation, which every checkpoint raises.
pub(crate) struct Redo {
    pub(crate) log: RedoLog,
    pub(crate) generation: u64,
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

fn commit_unsynced(mut transaction: redb::WriteTransaction) -> Result<(), StorageError> {
    transaction
        .set_durability(redb::Durability::None)
        .map_err(io)?;
    transaction.commit().map_err(io)
}

/// What the flusher has been asked to do.
#[derive(Default)]
struct FlushState {
    /// A frozen tier waits to be written (set by the writer, cleared by the flusher).
    pending: bool,
    /// The frozen tier ends where the log was cut: write it with a synced commit that stores
    /// this generation (the one the records after the cut carry).
    checkpoint: Option<u64>,
    /// The store is closing.
    stop: bool,
}

/// The flusher's and the writer's counters behind [`FlushStats`].
#[derive(Default)]
struct FlushCounters {
    flushes: AtomicU64,
    checkpoints: AtomicU64,
    busy_micros: AtomicU64,
    waits: AtomicU64,
    wait_micros: AtomicU64,
    log_bytes: AtomicU64,
}

fn micros(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX)
}

impl FlushCounters {
    fn flushed(&self, checkpoint: bool, busy: Duration) {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        self.checkpoints
            .fetch_add(u64::from(checkpoint), Ordering::Relaxed);
        self.busy_micros.fetch_add(micros(busy), Ordering::Relaxed);
    }

    fn waited(&self, wait: Duration) {
        self.waits.fetch_add(1, Ordering::Relaxed);
        self.wait_micros.fetch_add(micros(wait), Ordering::Relaxed);
    }

    fn read(&self) -> FlushStats {
        FlushStats {
            flushes: self.flushes.load(Ordering::Relaxed),
            checkpoints: self.checkpoints.load(Ordering::Relaxed),
            busy_micros: self.busy_micros.load(Ordering::Relaxed),
            waits: self.waits.load(Ordering::Relaxed),
            wait_micros: self.wait_micros.load(Ordering::Relaxed),
            log_bytes: self.log_bytes.load(Ordering::Relaxed),
        }
    }
}

/// Everything the store and its flusher share.
pub(crate) struct Shared {
    pub(crate) database: redb::Database,
    /// Set when a commit or a flush failed: what reached the disk is unknown, so no further
    /// write is tried.
    pub(crate) poisoned: AtomicBool,
    redo: Mutex<Redo>,
    /// Replaced only by the writer (the active tier, and freezing it) and by the flusher
    /// (emptying the frozen tier), and read together with a redb snapshot under this lock.
    staged: Published<Staged>,
    /// The store file's snapshot readers share until the file changes: emptied under the
    /// staged changes' writers' lock whenever they change after a commit of redb's
    /// ([`Shared::restage`]), so a reader never pairs the file as it was with fewer staged
    /// changes.
    file: RwLock<Option<Arc<FileSnapshot>>>,
    /// Held by the engine's write transaction, and by whatever needs redb's write transaction
    /// outside the flusher (checkpoints, snapshots, the close).
    writer: Mutex<()>,
    flush: Mutex<FlushState>,
    flushed: Condvar,
    checkpoint_log_bytes: u64,
    staged_bytes_max: AtomicUsize,
    /// The redo log's path, whose previous file the flusher's checkpoint removes.
    log_path: PathBuf,
    counters: FlushCounters,
    /// Makes the flusher's next transactions fail, for the tests of its failure.
    #[cfg(test)]
    pub(crate) fail_flushes: AtomicBool,
    /// Makes the flusher's next transactions panic, for the tests of its failure.
    #[cfg(test)]
    pub(crate) panic_flushes: AtomicBool,
    /// Held by a test to keep the flusher from starting its next transaction.
    #[cfg(test)]
    pub(crate) flush_gate: std::sync::RwLock<()>,
}

impl Shared {
    pub(crate) fn new(
        database: redb::Database,
        redo: Redo,
        checkpoint_log_bytes: u64,
        staged_bytes_max: usize,
    ) -> Shared {
        Shared {
            database,
            poisoned: AtomicBool::new(false),
            log_path: redo.log.path().to_path_buf(),
            redo: Mutex::new(redo),
            staged: Published::default(),
            file: RwLock::default(),
            writer: Mutex::new(()),
            flush: Mutex::default(),
            flushed: Condvar::new(),
            checkpoint_log_bytes,
            staged_bytes_max: AtomicUsize::new(staged_bytes_max),
            counters: FlushCounters::default(),
            #[cfg(test)]
            fail_flushes: AtomicBool::new(false),
            #[cfg(test)]
            panic_flushes: AtomicBool::new(false),
            #[cfg(test)]
            flush_gate: std::sync::RwLock::default(),
        }
    }

    /// What the flusher did, and how long commits waited for it, since the store opened.
    pub(crate) fn flush_stats(&self) -> FlushStats {
        self.counters.read()
    }

    pub(crate) fn set_staged_bytes_max(&self, bytes: usize) {
        self.staged_bytes_max.store(bytes, Ordering::Relaxed);
    }

    pub(crate) fn redo(&self) -> MutexGuard<'_, Redo> {
        lock(&self.redo)
    }

    /// The engine's write transaction's turn.
    pub(crate) fn writer(&self) -> MutexGuard<'_, ()> {
        lock(&self.writer)
    }

    /// The writer's turn with the flusher idle: redb's write transaction is free, and the
    /// frozen tier empty, until the guard is dropped.
    pub(crate) fn exclusive(&self) -> MutexGuard<'_, ()> {
        let writer = self.writer();
        self.wait_idle();
        writer
    }

    fn wait_idle(&self) {
        drop(wait_while(&self.flushed, lock(&self.flush), |state| {
            state.pending
        }));
    }

    pub(crate) fn staged(&self) -> Arc<Staged> {
        self.staged.get()
    }

    /// The staged changes and a snapshot of the store file, taken together: the file's shared
    /// one, or a new one that the readers after share.
    pub(crate) fn snapshot(&self) -> Result<(Arc<Staged>, Arc<FileSnapshot>), StorageError> {
        let guard = self.staged.read();
        let staged = Arc::clone(&guard);
        let shared = self
            .file
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let file = if let Some(file) = shared {
            file
        } else {
            let file = Arc::new(FileSnapshot::new(self.database.begin_read().map_err(io)?));
            *self.shared_file() = Some(Arc::clone(&file));
            file
        };
        drop(guard);
        Ok((staged, file))
    }

    /// Forgets the shared snapshot of the store file: the next reader begins one. Called under
    /// the staged changes' writers' lock wherever the file may have changed under them.
    fn file_changed(&self) {
        *self.shared_file() = None;
    }

    /// The slot of the file's shared snapshot, for replacing it.
    fn shared_file(&self) -> RwLockWriteGuard<'_, Option<Arc<FileSnapshot>>> {
        // Replaced in whole assignments, so whole after a panic elsewhere.
        self.file
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Replaces the staged changes with `change` of those published now, and forgets the
    /// shared snapshot of the store file under the same lock: the staged changes let go are in
    /// the file now, and a reader must not pair the file as it was with fewer of them.
    fn restage(&self, change: impl FnOnce(&Staged) -> Staged) {
        let mut staged = self.staged.write();
        self.file_changed();
        *staged = Arc::new(change(&staged));
    }

    /// Writes the staged changes into `transaction` and commits it as a checkpoint, then
    /// empties them: a reader between the two reads the same values from either side. The
    /// caller holds [`Shared::exclusive`].
    pub(crate) fn checkpoint_staged(
        &self,
        transaction: redb::WriteTransaction,
        redo: &mut Redo,
    ) -> Result<(), StorageError> {
        let staged = self.staged();
        staged.apply(&transaction)?;
        checkpoint(transaction, redo)?;
        if !staged.is_empty() {
            self.restage(|_| Staged::default());
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
        let _exclusive = self.exclusive();
        let mut transaction = self.database.begin_write().map_err(io)?;
        change(&mut transaction)?;
        let mut staged = self.staged.write();
        checkpoint(transaction, &mut self.redo())?;
        self.file_changed();
        *staged = Arc::default();
        Ok(())
    }

    /// The writer's commit (its caller holds [`Shared::writer`]): appends the changes to the
    /// redo log and syncs it, then stages them, so readers see them only once they are durable.
    /// Past the staged bound, or past the log's size, it hands the active tier to the flusher
    /// (cutting the log for a checkpoint in the second case), waiting for it first only when a
    /// frozen tier is still being written and a second one is full; a flusher still busy is
    /// otherwise left alone, and a later commit hands over.
    pub(crate) fn commit(&self, tables: &[(Table, Changes)]) -> Result<(), StorageError> {
        let mut redo = self.redo();
        // Decided before the append: the log grown past its size by earlier commits.
        let checkpoint_due = redo.log.bytes() >= self.checkpoint_log_bytes;
        let borrowed: Vec<_> = tables
            .iter()
            .map(|(table, changes)| (*table, changes))
            .collect();
        let generation = redo.generation;
        let appended = redo.log.append(generation, &borrowed)?;
        self.counters
            .log_bytes
            .fetch_add(appended, Ordering::Relaxed);
        let active_bytes = self.stage(tables);
        let bound = self.staged_bytes_max.load(Ordering::Relaxed);
        if !checkpoint_due && active_bytes < bound {
            return Ok(());
        }
        let asked = Stopwatch::start();
        let mut waited = false;
        let mut state = wait_while(&self.flushed, lock(&self.flush), |state| {
            let wait = state.pending && active_bytes >= bound.saturating_mul(2);
            waited |= wait;
            wait
        });
        if waited {
            self.counters.waited(asked.elapsed());
        }
        if state.pending || self.poisoned.load(Ordering::Acquire) {
            return Ok(());
        }
        // The flusher is idle and did not fail, so the frozen tier is empty and the log has no
        // previous file.
        if checkpoint_due {
            redo.log.cut()?;
            redo.generation += 1;
            state.checkpoint = Some(redo.generation);
        }
        self.restage(|now| Staged {
            active: Tier::default(),
            frozen: now.active.clone(),
        });
        state.pending = true;
        self.flushed.notify_all();
        Ok(())
    }

    /// Adds a commit's changes to the active tier and says how many bytes it holds now: in
    /// place when no reader holds the staged changes, on a copy otherwise (`published.rs`).
    /// A copy is published with the frozen tier of the moment, which the flusher may have
    /// emptied meanwhile.
    fn stage(&self, tables: &[(Table, Changes)]) -> usize {
        self.staged.change(
            self.staged(),
            |staged| {
                staged.active.add(tables);
                staged.active.bytes()
            },
            |next, now| Staged {
                active: next.active,
                frozen: now.frozen.clone(),
            },
        )
    }

    /// Asks the flusher to stop once what it was handed is written.
    pub(crate) fn stop_flusher(&self) {
        lock(&self.flush).stop = true;
        self.flushed.notify_all();
    }
}

/// The flusher's loop: writes each frozen tier into redb, unsynced, then empties it. A failure
/// or a panic poisons the store; the frozen tier then stays readable, since the log holds it.
pub(crate) fn run_flusher(shared: Arc<Shared>) {
    loop {
        let checkpoint_generation = {
            let mut state = wait_while(&shared.flushed, lock(&shared.flush), |state| {
                !state.pending && !state.stop
            });
            if !state.pending {
                return;
            }
            state.checkpoint.take()
        };
        let frozen = shared.staged().frozen.clone();
        let started = Stopwatch::start();
        // A panic (a bug, here or in redb) is a failure like any other: it poisons the store
        // and wakes the commits waiting for this flush, which would otherwise wait forever.
        let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            shared.write_frozen(&frozen, checkpoint_generation)
        }))
        .unwrap_or_else(|_| Err(StorageError::Io("writing staged changes panicked".into())));
        shared
            .counters
            .flushed(checkpoint_generation.is_some(), started.elapsed());
        match written {
            Ok(()) => {
                shared.restage(|now| Staged {
                    active: now.active.clone(),
                    frozen: Tier::default(),
                });
            }
            Err(error) => {
                shared.poisoned.store(true, Ordering::Release);
                tracing::error!(%error, "writing staged changes into the store failed; refusing further writes until restart");
            }
        }
        lock(&shared.flush).pending = false;
        shared.flushed.notify_all();
    }
}

impl Shared {
    /// The flusher's transaction: the frozen tier, unsynced, or with a checkpoint that stores
    /// `checkpoint_generation` and then removes the log's file from before the cut.
    fn write_frozen(
        &self,
        frozen: &Tier,
        checkpoint_generation: Option<u64>,
    ) -> Result<(), StorageError> {
        #[cfg(test)]
        drop(self.flush_gate.read());
        #[cfg(test)]
        if self.fail_flushes.load(Ordering::Acquire) {
            return Err(StorageError::Io("a failure injected by a test".into()));
        }
        #[cfg(test)]
        assert!(
            !self.panic_flushes.load(Ordering::Acquire),
            "a panic injected by a test"
        );
        let transaction = self.database.begin_write().map_err(io)?;
        frozen.apply(&transaction)?;
        let Some(generation) = checkpoint_generation else {
            return commit_unsynced(transaction);
        };
        transaction
            .open_table(REDO_STATE)
            .map_err(io)?
            .insert(GENERATION_KEY, generation)
            .map_err(io)?;
        transaction.commit().map_err(io)?;
        // Left behind, the file is harmless: its records are of an older generation now, and
        // the next cut or checkpoint replaces or removes it.
        if let Err(error) = redo_log::remove_previous(&self.log_path) {
            tracing::warn!(%error, "could not remove the redo log's file from before the checkpoint");
        }
        Ok(())
    }
}
