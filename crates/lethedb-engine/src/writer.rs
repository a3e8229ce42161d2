//! The single writer: one thread applies every mutation, many requests per durable commit.
//!
//! Requests queue [`Job`]s on a channel. The writer takes the first, then whatever else is
//! already waiting (up to `write_batch_max`), applies them in order to one write transaction,
//! commits once, and only then answers each request. So a request is acknowledged only after its
//! transaction is durable, and concurrent writers share fsyncs (group commit). Because one thread
//! applies everything, operations see each other's effects in order and need no locks.
//!
//! An operation must validate before it writes: one that returns an error must leave the
//! transaction untouched, because the other operations of its group still commit. A storage
//! failure, by contrast, fails the whole group and nothing of it is committed.

use crate::clock::Clock;
use crate::clock::Stopwatch;
use crate::container::Container;
use crate::error::{EngineError, EngineResult, ErrorCode};
use lethedb_storage::{KeyRange, ReadTxn, Storage, StorageError, Table, Visit, WriteTxn};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

/// What a job hands back after applying: called with the commit's outcome.
type Finish = Box<dyn FnOnce(EngineResult<()>) + Send>;
/// The previous value of every key written while recording: (table, key, value before).
type UndoLog = Vec<(Table, Vec<u8>, Option<Vec<u8>>)>;
/// One queued mutation.
type Job = Box<dyn FnOnce(&mut WriteContext<'_>) -> Finish + Send>;

/// The transaction as an operation sees it, plus what the writer needs to know afterwards.
pub struct WriteContext<'a> {
    txn: Box<dyn WriteTxn + 'a>,
    /// The instant every operation of this group is stamped with.
    pub now_ms: i64,
    /// Containers parsed during this and earlier groups; cleared on catalog changes.
    pub(crate) containers: HashMap<(String, String), Arc<Container>>,
    catalog_changed: bool,
    failure: Option<StorageError>,
    /// While recording, the previous value of every key written, so a transactional batch can
    /// undo its earlier operations when a later one fails.
    undo: Option<UndoLog>,
}

impl WriteContext<'_> {
    fn note<T>(&mut self, result: Result<T, StorageError>) -> EngineResult<T> {
        result.map_err(|error| {
            let engine_error = EngineError::from(&error);
            self.failure.get_or_insert(error);
            engine_error
        })
    }

    pub fn get(&mut self, table: Table, key: &[u8]) -> EngineResult<Option<Vec<u8>>> {
        let result = self.txn.get(table, key);
        self.note(result)
    }

    pub fn scan(&mut self, table: Table, range: &KeyRange, visit: Visit<'_>) -> EngineResult<()> {
        let result = self.txn.scan(table, range, visit);
        self.note(result)
    }

    pub fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> EngineResult<()> {
        self.remember(table, key)?;
        let result = self.txn.put(table, key, value);
        self.note(result)
    }

    pub fn delete(&mut self, table: Table, key: &[u8]) -> EngineResult<()> {
        self.remember(table, key)?;
        let result = self.txn.delete(table, key);
        self.note(result)
    }

    fn remember(&mut self, table: Table, key: &[u8]) -> EngineResult<()> {
        if self.undo.is_some() {
            let previous = self.get(table, key)?;
            if let Some(undo) = &mut self.undo {
                undo.push((table, key.to_vec(), previous));
            }
        }
        Ok(())
    }

    /// Starts recording an undo log (for transactional batches).
    pub fn begin_undo(&mut self) {
        self.undo = Some(Vec::new());
    }

    /// Stops recording and keeps every change made since [`WriteContext::begin_undo`].
    pub fn keep_changes(&mut self) {
        self.undo = None;
    }

    /// Stops recording and restores every key written since [`WriteContext::begin_undo`].
    pub fn undo_changes(&mut self) -> EngineResult<()> {
        let Some(undo) = self.undo.take() else {
            return Ok(());
        };
        for (table, key, previous) in undo.into_iter().rev() {
            let result = match previous {
                Some(value) => self.txn.put(table, &key, &value),
                None => self.txn.delete(table, &key),
            };
            self.note(result)?;
        }
        Ok(())
    }

    /// The transaction for read-only helpers shared with snapshot readers.
    pub fn reader(&self) -> &dyn ReadTxn {
        &*self.txn
    }

    /// Marks that databases or containers changed: cached definitions are dropped.
    pub fn catalog_changed(&mut self) {
        self.catalog_changed = true;
        self.containers.clear();
    }
}

/// Upper bounds, in seconds, of the commit-latency histogram's buckets.
pub const COMMIT_LATENCY_BOUNDS_SECS: [f64; 10] = [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0,
];

/// Counters the writer keeps for observability.
#[derive(Debug, Default)]
pub struct WriterStats {
    pub commits: AtomicU64,
    pub operations: AtomicU64,
    pub queued: AtomicU64,
    /// Commits per latency bucket (the last slot counts those above every bound).
    pub commit_latency_buckets: [AtomicU64; COMMIT_LATENCY_BOUNDS_SECS.len() + 1],
    pub commit_latency_micros_total: AtomicU64,
}

impl WriterStats {
    fn record_commit(&self, elapsed: std::time::Duration) {
        let secs = elapsed.as_secs_f64();
        let slot = COMMIT_LATENCY_BOUNDS_SECS
            .iter()
            .position(|&bound| secs <= bound)
            .unwrap_or(COMMIT_LATENCY_BOUNDS_SECS.len());
        self.commit_latency_buckets[slot].fetch_add(1, Ordering::Relaxed);
        self.commit_latency_micros_total
            .fetch_add(elapsed.as_micros() as u64, Ordering::Relaxed);
    }
}

/// The handle requests use to reach the writer thread.
pub struct Writer {
    sender: mpsc::Sender<Job>,
    pub stats: Arc<WriterStats>,
}

impl Writer {
    /// Starts the writer thread. `on_catalog_change` runs after a commit that changed the catalog.
    pub fn start(
        store: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
        write_batch_max: usize,
        on_catalog_change: impl Fn() + Send + 'static,
    ) -> EngineResult<(Writer, std::thread::JoinHandle<()>)> {
        let (sender, receiver) = mpsc::channel::<Job>();
        let stats = Arc::new(WriterStats::default());
        let thread_stats = Arc::clone(&stats);
        let handle = std::thread::Builder::new()
            .name("lethedb-writer".into())
            .spawn(move || {
                run(
                    &*store,
                    &*clock,
                    receiver,
                    write_batch_max.max(1),
                    &thread_stats,
                    on_catalog_change,
                );
            })
            .map_err(|error| {
                EngineError::with_message(
                    ErrorCode::WriterStopped,
                    format!("cannot start the writer: {error}"),
                )
            })?;
        Ok((Writer { sender, stats }, handle))
    }

    /// Queues an operation and waits until it is durable (or failed).
    pub async fn write<T, F>(&self, operation: F) -> EngineResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriteContext<'_>) -> EngineResult<T> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |context| {
            let outcome = operation(context);
            Box::new(move |committed: EngineResult<()>| {
                // The requester may have gone away; then nobody needs the answer.
                let _ = reply.send(committed.and(outcome));
            })
        });
        self.stats.queued.fetch_add(1, Ordering::Relaxed);
        self.sender.send(job).map_err(|_| {
            EngineError::with_message(ErrorCode::WriterStopped, "the writer has stopped")
        })?;
        answer.await.map_err(|_| {
            EngineError::with_message(ErrorCode::WriterStopped, "the write was not committed")
        })?
    }
}

fn run(
    store: &dyn Storage,
    clock: &dyn Clock,
    receiver: mpsc::Receiver<Job>,
    write_batch_max: usize,
    stats: &WriterStats,
    on_catalog_change: impl Fn(),
) {
    let mut containers = HashMap::new();
    let mut batch = Vec::with_capacity(write_batch_max);
    while let Ok(first) = receiver.recv() {
        batch.push(first);
        while batch.len() < write_batch_max {
            match receiver.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        stats
            .queued
            .fetch_sub(batch.len() as u64, Ordering::Relaxed);
        let txn = match store.write() {
            Ok(txn) => txn,
            Err(error) => {
                tracing::error!(%error, "cannot begin a write transaction");
                // Dropping the jobs drops their reply channels: each request sees Unavailable.
                batch.clear();
                continue;
            }
        };
        let mut context = WriteContext {
            txn,
            now_ms: clock.now_ms(),
            containers: std::mem::take(&mut containers),
            catalog_changed: false,
            failure: None,
            undo: None,
        };
        let finishes: Vec<Finish> = batch.drain(..).map(|job| job(&mut context)).collect();
        let WriteContext {
            txn,
            catalog_changed,
            failure,
            containers: cached,
            ..
        } = context;
        containers = cached;
        // A monotonic timer measures how long the durable commit takes; it is not wall time.
        let commit_started = Stopwatch::start();
        let committed = match failure {
            Some(error) => {
                drop(txn);
                Err(EngineError::from(error))
            }
            None => txn.commit().map_err(EngineError::from),
        };
        if committed.is_err() || catalog_changed {
            containers.clear();
            on_catalog_change();
        }
        stats.record_commit(commit_started.elapsed());
        stats.commits.fetch_add(1, Ordering::Relaxed);
        stats
            .operations
            .fetch_add(finishes.len() as u64, Ordering::Relaxed);
        for finish in finishes {
            finish(match &committed {
                Ok(()) => Ok(()),
                Err(error) => Err(error.clone()),
            });
        }
    }
}
