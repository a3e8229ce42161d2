//! The writer: one thread (a lane) applies every mutation, many requests per durable commit;
//! on a store that commits shards side by side (PostgreSQL, fjall), a few lanes, one per run
//! of shards (`lanes.rs`).
//!
//! Requests queue jobs on a bounded channel ([`WRITER_QUEUE_JOBS_MAX`] by default); when it is
//! full a write is refused at once with `WriterBusy` (the server answers 429 and the SDKs retry)
//! instead of queueing without bound. The writer takes the first job, then whatever else is
//! already waiting (up to `write_batch_max`), applies them in order to one write transaction,
//! commits once, and only then answers each request. So a request is acknowledged only after its
//! transaction is durable, and concurrent writers share fsyncs (group commit). Because one thread
//! applies everything, operations see each other's effects in order and need no locks.
//!
//! Every job runs inside a savepoint of the transaction: one whose operation returns an error is
//! rolled back to it, so a failing operation leaves the transaction untouched by construction and
//! the other operations of its group still commit. (A transactional batch nests a savepoint of
//! its own the same way.) A storage failure, by contrast, fails the whole group and nothing of
//! it is committed.
//!
//! A job that panics, and a commit that fails, poison the engine: the group's transaction is
//! dropped, every request of the group and every later write answers `StorePoisoned`, and
//! `Engine::poisoned` says why. Reads keep working. The writer never stops silently. The one
//! exception is a shared store (PostgreSQL) that could not be reached: it rolled the group back
//! and keeps nothing in memory, so the group answers `StorageUnavailable` and the next one tries
//! again.
//!
//! On a shared store, several processes each run a writer like this one, each with several
//! lanes; the store's locks make them take turns where they meet (a group that may write
//! anything waits for every other; groups of disjoint shards commit side by side), and each
//! group takes its time and the catalog's epoch from the store, so cached definitions another
//! process or lane changed are dropped first.

mod context;
mod job;
mod lanes;
mod stats;

use context::{Applied, Finish};
pub use context::{ContextSavepoint, WriteContext};
use job::{answer_once, Job, Message, StoreJob};
pub use lanes::WRITER_LANES_SHARED_DEFAULT;
pub use stats::{WriterStats, COMMIT_LATENCY_BOUNDS_SECS};

use crate::clock::{Clock, Stopwatch};
use crate::container::Container;
use crate::error::{store_poisoned, writer_busy, EngineError, EngineResult, ErrorCode};
use crate::items::document_cache::DocumentCache;
use crate::limits::CHANGE_LOG_RETENTION_MINUTES_DEFAULT;
use crate::partitions::sessions::RangeSessions;
use crate::poison::Poison;
use lethedb_storage::{Storage, StorageError, Table};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The most operations one durable commit carries unless configured otherwise.
pub const WRITE_BATCH_MAX_DEFAULT: usize = 512;
/// The most jobs that may wait for the writer before writes are refused with `WriterBusy`:
/// four full groups, enough to keep the disk busy, few enough that a stall is felt at once.
pub const WRITER_QUEUE_JOBS_MAX: usize = 4 * WRITE_BATCH_MAX_DEFAULT;
/// How long a client is told to wait before retrying a write the full queue refused: about
/// one group commit, after which the queue has room again.
pub const WRITER_BUSY_RETRY_AFTER_MS: i64 = 10;

/// The handle requests use to reach the writer's lanes (`lanes.rs`).
pub struct Writer {
    /// Each lane's queue; the first takes every job that may write anything.
    lanes: Vec<mpsc::SyncSender<Message>>,
    pub stats: Arc<WriterStats>,
    pub(crate) poison: Arc<Poison>,
    /// The session sequences every lane raises after each commit (`partitions/sessions.rs`).
    pub(crate) sessions: Arc<RangeSessions>,
    /// How long the change log keeps entries of containers without a `changeFeedPolicy`.
    change_log_retention_ms: Arc<AtomicI64>,
    /// The documents of committed versions that replaced another, for the next write of the
    /// same item (`items/document_cache.rs`); off until the engine gives it a budget.
    pub(crate) written: Arc<DocumentCache>,
}

impl Writer {
    /// How many lanes commit side by side.
    pub fn lanes(&self) -> usize {
        self.lanes.len()
    }

    /// Sets how long the change log keeps entries of containers without a `changeFeedPolicy`.
    pub fn set_change_log_retention_ms(&self, retention_ms: i64) {
        self.change_log_retention_ms
            .store(retention_ms.max(60_000), Ordering::Relaxed);
    }

    /// Starts the writer's lanes (one, or `lanes_configured` on a store that commits shards
    /// side by side; `None`: the store's default, see `lanes.rs`), each with room for
    /// `queue_jobs_max` waiting jobs. `on_catalog_change` runs after a commit that
    /// changed the catalog. `store_offset_ms` is where the writer leaves the store's clock minus
    /// `clock`, when the store keeps the time (see `Engine::now_ms`). The handle returned ends
    /// when every lane has.
    pub fn start(
        store: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
        store_offset_ms: Arc<AtomicI64>,
        write_batch_max: usize,
        queue_jobs_max: usize,
        lanes_configured: Option<usize>,
        on_catalog_change: impl Fn() + Send + Sync + 'static,
    ) -> EngineResult<(Writer, JoinHandle<()>)> {
        let lane_count = lanes::lane_count(&*store, lanes_configured);
        let stats = Arc::new(WriterStats::default());
        let poison = Arc::new(Poison::default());
        let change_log_retention_ms = Arc::new(AtomicI64::new(
            CHANGE_LOG_RETENTION_MINUTES_DEFAULT.saturating_mul(60_000),
        ));
        let on_catalog_change: Arc<dyn Fn() + Send + Sync> = Arc::new(on_catalog_change);
        let sessions = Arc::new(RangeSessions::default());
        let written = Arc::new(DocumentCache::new(0));
        let mut lanes = Vec::with_capacity(lane_count);
        let mut receivers = Vec::with_capacity(lane_count);
        for _ in 0..lane_count {
            let (sender, receiver) = mpsc::sync_channel::<Message>(queue_jobs_max.max(1));
            lanes.push(sender);
            receivers.push(receiver);
        }
        let mut handles = Vec::with_capacity(lane_count);
        for (index, receiver) in receivers.into_iter().enumerate() {
            let thread = Thread {
                store: Arc::clone(&store),
                catalog_epoch: AtomicU64::new(0),
                store_offset_ms: Arc::clone(&store_offset_ms),
                clock: Arc::clone(&clock),
                write_batch_max: write_batch_max.max(1),
                stats: Arc::clone(&stats),
                poison: Arc::clone(&poison),
                change_log_retention_ms: Arc::clone(&change_log_retention_ms),
                sessions: Arc::clone(&sessions),
                written: Arc::clone(&written),
            };
            let callback = Arc::clone(&on_catalog_change);
            let name = if index == 0 {
                "lethedb-writer".to_string()
            } else {
                format!("lethedb-writer-{index}")
            };
            handles.push(lanes::spawn(name, move || {
                thread.run(receiver, move || callback());
            })?);
        }
        let handle = lanes::joined(handles)?;
        let writer = Writer {
            lanes,
            stats,
            poison,
            sessions,
            change_log_retention_ms,
            written,
        };
        Ok((writer, handle))
    }

    /// Queues an operation and waits until it is durable (or failed). Refused at once with
    /// `WriterBusy` when the queue is full and with `StorePoisoned` when the engine is poisoned.
    pub async fn write<T, F>(&self, operation: F) -> EngineResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriteContext<'_>) -> EngineResult<T> + Send + 'static,
    {
        self.write_reading(Vec::new(), operation).await
    }

    /// [`Writer::write`] for an operation that will read `prefetch` (its item and counters):
    /// the group fetches every job's keys in one go before the first job runs, which on a
    /// shared store saves a round trip per key.
    pub async fn write_reading<T, F>(
        &self,
        prefetch: Vec<(Table, Vec<u8>)>,
        operation: F,
    ) -> EngineResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriteContext<'_>) -> EngineResult<T> + Send + 'static,
    {
        self.queue(None, prefetch, operation).await
    }

    /// [`Writer::write_reading`] for an operation that writes only within the shards whose
    /// lock keys are `shards` (`Container::shard_lock`): a group made only of such jobs takes
    /// only their shards' locks on a shared store, so groups of other shards, from any process,
    /// commit beside it. The operation must check that its container is still the one the keys
    /// were taken from.
    pub(crate) async fn write_in_shards<T, F>(
        &self,
        shards: Vec<u64>,
        prefetch: Vec<(Table, Vec<u8>)>,
        operation: F,
    ) -> EngineResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriteContext<'_>) -> EngineResult<T> + Send + 'static,
    {
        self.queue(Some(shards), prefetch, operation).await
    }

    /// The lane a job under the one shard lock `shard` goes to (`lanes.rs`): jobs of shards
    /// of one lane are grouped into one transaction when they wait together.
    pub(crate) fn lane_of_shard(&self, shard: u64) -> usize {
        lanes::lane_of(Some(&[shard]), self.lanes.len())
    }

    async fn queue<T, F>(
        &self,
        shards: Option<Vec<u64>>,
        prefetch: Vec<(Table, Vec<u8>)>,
        operation: F,
    ) -> EngineResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriteContext<'_>) -> EngineResult<T> + Send + 'static,
    {
        if let Some(reason) = self.poison.reason() {
            return Err(store_poisoned(reason));
        }
        let (reply, answer) = tokio::sync::oneshot::channel::<EngineResult<T>>();
        // Shared by `apply` and `abandon`, so whichever runs last still finds nobody answered.
        let reply = Arc::new(Mutex::new(Some(reply)));
        let abandon_reply = Arc::clone(&reply);
        let job = Job {
            apply: Box::new(move |context| {
                let outcome = operation(context);
                Applied {
                    succeeded: outcome.is_ok(),
                    finish: Box::new(move |committed: EngineResult<()>| {
                        answer_once(&reply, committed.and(outcome));
                    }),
                }
            }),
            abandon: Box::new(move |error| answer_once(&abandon_reply, Err(error))),
            prefetch,
            shards,
        };
        let lane = &self.lanes[lanes::lane_of(job.shards.as_deref(), self.lanes.len())];
        self.stats.queued.fetch_add(1, Ordering::Relaxed);
        if let Err(refused) = lane.try_send(Message::Write(job)) {
            self.stats.queued.fetch_sub(1, Ordering::Relaxed);
            return Err(match refused {
                mpsc::TrySendError::Full(_) => writer_busy(),
                mpsc::TrySendError::Disconnected(_) => self.stopped(),
            });
        }
        match answer.await {
            Ok(outcome) => outcome,
            Err(_) => Err(self.stopped()),
        }
    }

    /// Runs `operation` on the store itself, after every write queued before it committed and
    /// before any queued after it begins, and waits for its outcome.
    pub(crate) async fn on_store<T, F>(&self, operation: F) -> EngineResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Storage) -> EngineResult<T> + Send + 'static,
    {
        if let Some(reason) = self.poison.reason() {
            return Err(store_poisoned(reason));
        }
        let (reply, answer) = tokio::sync::oneshot::channel::<EngineResult<T>>();
        let job: StoreJob = Box::new(move |store, catalog_changed| {
            let outcome = operation(store);
            catalog_changed();
            drop(reply.send(outcome));
        });
        self.lanes[0]
            .send(Message::Store(job))
            .map_err(|_| self.stopped())?;
        answer.await.unwrap_or_else(|_| Err(self.stopped()))
    }

    /// The error for a write the writer did not answer.
    fn stopped(&self) -> EngineError {
        match self.poison.reason() {
            Some(reason) => store_poisoned(reason),
            None => EngineError::with_message(ErrorCode::WriterStopped, "the writer has stopped"),
        }
    }
}

/// What the writer thread owns.
struct Thread {
    store: Arc<dyn Storage>,
    /// The catalog epoch of a store that reports one as the last group read it.
    catalog_epoch: AtomicU64,
    store_offset_ms: Arc<AtomicI64>,
    clock: Arc<dyn Clock>,
    write_batch_max: usize,
    stats: Arc<WriterStats>,
    poison: Arc<Poison>,
    change_log_retention_ms: Arc<AtomicI64>,
    sessions: Arc<RangeSessions>,
    written: Arc<DocumentCache>,
}

impl Thread {
    fn run(self, receiver: mpsc::Receiver<Message>, on_catalog_change: impl Fn()) {
        let mut containers = HashMap::new();
        let mut batch = Vec::with_capacity(self.write_batch_max);
        // Jobs a group left for the next because another process held their shards; they go
        // first in the next group, so one shard's jobs keep their order.
        let mut deferred = Vec::new();
        loop {
            let mut store_job = None;
            if deferred.is_empty() {
                match receiver.recv() {
                    Ok(Message::Write(job)) => batch.push(job),
                    Ok(Message::Store(job)) => store_job = Some(job),
                    Err(_) => return,
                }
            } else {
                batch.append(&mut deferred);
            }
            while store_job.is_none() && batch.len() < self.write_batch_max {
                match receiver.try_recv() {
                    Ok(Message::Write(job)) => batch.push(job),
                    Ok(Message::Store(job)) => store_job = Some(job),
                    Err(_) => break,
                }
            }
            self.run_group(
                &mut batch,
                &mut deferred,
                &mut containers,
                &on_catalog_change,
            );
            if let Some(job) = store_job {
                // An operation on the store follows every write queued before it.
                while !deferred.is_empty() {
                    batch.append(&mut deferred);
                    self.run_group(
                        &mut batch,
                        &mut deferred,
                        &mut containers,
                        &on_catalog_change,
                    );
                }
                containers.clear();
                job(&*self.store, &on_catalog_change);
            }
        }
    }

    /// Commits the writes received so far (none: nothing to do), or refuses them all when the
    /// engine is poisoned.
    fn run_group(
        &self,
        batch: &mut Vec<Job>,
        deferred: &mut Vec<Job>,
        containers: &mut HashMap<(String, String), Arc<Container>>,
        on_catalog_change: &dyn Fn(),
    ) {
        if batch.is_empty() {
            return;
        }
        self.stats
            .queued
            .fetch_sub(batch.len() as u64, Ordering::Relaxed);
        if let Some(reason) = self.poison.reason() {
            // Jobs queued before the engine was poisoned: refused like every later write.
            for job in batch.drain(..) {
                (job.abandon)(store_poisoned(reason));
            }
            return;
        }
        self.commit_group(batch, deferred, containers, on_catalog_change);
        // Left for the next group, which counts them again.
        self.stats
            .queued
            .fetch_add(deferred.len() as u64, Ordering::Relaxed);
    }

    /// Applies and commits one group, answering every job. Cached container definitions are
    /// dropped (here and through `on_catalog_change`) when the catalog changed or nothing was
    /// committed, always before any job is answered: a requester that saw its catalog change
    /// acknowledged must never read the old definition afterwards.
    fn commit_group(
        &self,
        batch: &mut Vec<Job>,
        deferred: &mut Vec<Job>,
        containers: &mut HashMap<(String, String), Arc<Container>>,
        on_catalog_change: &dyn Fn(),
    ) {
        let Some(context) = self.begin(batch, deferred, containers, on_catalog_change) else {
            return;
        };
        let Some((context, finishes)) = self.apply_all(context, batch, on_catalog_change) else {
            return;
        };
        let committed = self.commit(context, containers, on_catalog_change);
        self.answer(finishes, &committed);
    }

    /// Begins the group's transaction, with the group's instant and the definitions cached
    /// by earlier groups. A group of jobs that each write only within their shards takes the
    /// shards free at once and moves the jobs of the others to `deferred` (on a shared store;
    /// it waits only when none is free). When the store refuses, every job is answered and
    /// `None` returned.
    fn begin<'a>(
        &'a self,
        batch: &mut Vec<Job>,
        deferred: &mut Vec<Job>,
        containers: &mut HashMap<(String, String), Arc<Container>>,
        on_catalog_change: &dyn Fn(),
    ) -> Option<WriteContext<'a>> {
        let reads: Vec<(Table, &[u8])> = batch
            .iter()
            .flat_map(|job| {
                let keys = job.prefetch.iter();
                keys.map(|(table, key)| (*table, key.as_slice()))
            })
            .collect();
        let begun = match &job::group_shards(batch) {
            Some(shards) if job::each_in_one_shard(batch) => self
                .store
                .write_reading_free_shards(shards, &reads)
                .map(|(txn, acquired)| (txn, Some(acquired))),
            Some(shards) => self
                .store
                .write_reading_shards(shards, &reads)
                .map(|txn| (txn, None)),
            None => self.store.write_reading(&reads).map(|txn| (txn, None)),
        };
        let txn = match begun {
            Ok((txn, acquired)) => {
                if let Some(acquired) = acquired {
                    job::defer_unheld(batch, deferred, &acquired);
                }
                txn
            }
            Err(error) => {
                self.refuse_group(&error, batch, containers, on_catalog_change);
                return None;
            }
        };
        // A shared store's catalog may have changed under another process, and a fjall store's
        // under another lane: the lane's own definitions cached at an older epoch are dropped
        // before any job reads them (on a shared store, readers check the epochs of their own
        // snapshots; elsewhere the lane that changed the catalog told them).
        if let Some(epoch) = txn.catalog_epoch() {
            if self.catalog_epoch.swap(epoch, Ordering::SeqCst) != epoch {
                containers.clear();
            }
        }
        // A shared store's clock decides, so every process stamps and expires alike.
        let now_ms = match txn.store_now_ms() {
            Some(store_ms) => {
                self.store_offset_ms.store(
                    store_ms.saturating_sub(self.clock.now_ms()),
                    Ordering::Relaxed,
                );
                store_ms
            }
            None => self.clock.now_ms(),
        };
        Some(WriteContext {
            now_ms,
            txn,
            containers: std::mem::take(containers),
            pinned_lsn: None,
            change_log_retention_default_ms: self.change_log_retention_ms.load(Ordering::Relaxed),
            change_log_next: None,
            change_log_positions: None,
            written_lsns: Vec::new(),
            written: Arc::clone(&self.written),
            catalog_changed: false,
            failure: None,
        })
    }

    /// Answers every job of a group whose transaction the store would not begin.
    fn refuse_group(
        &self,
        error: &StorageError,
        batch: &mut Vec<Job>,
        containers: &mut HashMap<(String, String), Arc<Container>>,
        on_catalog_change: &dyn Fn(),
    ) {
        let refusal = match error {
            StorageError::Poisoned => {
                self.poison.set(error.to_string());
                store_poisoned(&error.to_string())
            }
            other => {
                tracing::error!(error = %other, "cannot begin a write transaction");
                EngineError::from(other)
            }
        };
        containers.clear();
        on_catalog_change();
        for job in batch.drain(..) {
            (job.abandon)(refusal.clone());
        }
    }

    /// Applies every job of the group, each inside its savepoint. A job that panics poisons
    /// the engine: the transaction is dropped, every job is answered and `None` returned.
    fn apply_all<'a>(
        &self,
        mut context: WriteContext<'a>,
        batch: &mut Vec<Job>,
        on_catalog_change: &dyn Fn(),
    ) -> Option<(WriteContext<'a>, Vec<Finish>)> {
        let mut finishes: Vec<Finish> = Vec::with_capacity(batch.len());
        let mut jobs = batch.drain(..);
        for job in jobs.by_ref() {
            match context.apply(job.apply) {
                Ok(finish) => finishes.push(finish),
                Err(message) => {
                    // The transaction may be half-changed: drop it, commit nothing of the group.
                    drop(context);
                    on_catalog_change();
                    let reason = format!("a write operation panicked: {message}");
                    self.poison.set(reason.clone());
                    (job.abandon)(store_poisoned(&reason));
                    for finish in finishes {
                        finish(Err(store_poisoned(&reason)));
                    }
                    for job in jobs {
                        (job.abandon)(store_poisoned(&reason));
                    }
                    return None;
                }
            }
        }
        Some((context, finishes))
    }

    /// Commits the group's transaction (or drops it when a storage call failed), hands the
    /// cached definitions back, and drops them when the catalog changed or nothing committed.
    pub(crate) fn commit(
        &self,
        context: WriteContext<'_>,
        containers: &mut HashMap<(String, String), Arc<Container>>,
        on_catalog_change: &dyn Fn(),
    ) -> EngineResult<()> {
        let WriteContext {
            txn,
            catalog_changed,
            failure,
            containers: cached,
            written_lsns,
            ..
        } = context;
        *containers = cached;
        let commit_timer = Stopwatch::start();
        let committed = match failure {
            Some(error) => {
                drop(txn);
                Err(EngineError::from(error))
            }
            None => txn.commit().map_err(|error| {
                match error {
                    // A shared store that could not be reached rolled the transaction back (or
                    // lost it with the connection, unacknowledged): it is intact, and the next
                    // group reads everything again, so the engine keeps writing.
                    StorageError::Unavailable(_) => {
                        tracing::warn!(error = %error, "a commit did not reach the store");
                    }
                    // A local store's durable state is unknown after a failed commit; it
                    // refuses further writes, and so does the engine, visibly.
                    _ => self.poison.set(format!("a commit failed: {error}")),
                }
                EngineError::from(error)
            }),
        };
        self.stats.record_commit(commit_timer.elapsed());
        if committed.is_err() || catalog_changed {
            containers.clear();
            on_catalog_change();
        }
        if committed.is_ok() {
            // Before any job is answered: every token answered afterwards covers the group,
            // a purge or a TTL event that answers nobody included.
            for (number, lsn) in written_lsns {
                self.sessions.raise_committed(number, lsn);
            }
        }
        committed
    }

    /// Counts the group and answers each of its jobs with the commit's outcome.
    fn answer(&self, finishes: Vec<Finish>, committed: &EngineResult<()>) {
        self.stats.commits.fetch_add(1, Ordering::Relaxed);
        self.stats
            .operations
            .fetch_add(finishes.len() as u64, Ordering::Relaxed);
        for finish in finishes {
            finish(committed.clone());
        }
    }
}
