//! The engine's lifecycle and its account-wide doors: `open` and `close`, admission and
//! charging against the throughput budgets, and the figures the server reports (poisoned state,
//! the clock, writer and commit statistics). `open` and `close` run once, when the server
//! starts and stops (they open the store and start or join the writer thread); the others
//! are non-blocking fast paths that read memory.

use crate::clock::Clock;
use crate::container::Container;
use crate::engine::{ContainerCache, Engine, EngineConfig, Inner};
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::index::plan_memory::PlanMemory;
use crate::items::document_cache::DocumentCache;
use crate::limits::{SCANS_CONCURRENT_MAX, SCRIPTS_CONCURRENT_MAX};
use crate::search::VectorStores;
use crate::throughput::{BudgetKey, BudgetTotals, Budgets, Priority};
use crate::ttl::sweep_stats::SweepRegistry;
use crate::writer::Writer;
use lethedb_storage::Storage;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

impl Engine {
    /// Opens the engine on a store and starts its writer thread. The sweeper is started
    /// separately with [`Engine::start_sweeper`], so tests can drive it by hand.
    pub fn open(
        store: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
        config: EngineConfig,
    ) -> EngineResult<Engine> {
        // A store of the change log's earlier layout is rewritten before anything reads it.
        crate::feed::log_layout::migrate(&*store)?;
        let containers = Arc::new(ContainerCache::default());
        let invalidated = Arc::clone(&containers);
        let store_offset_ms = Arc::new(AtomicI64::new(0));
        let (writer, thread) = Writer::start(
            Arc::clone(&store),
            Arc::clone(&clock),
            Arc::clone(&store_offset_ms),
            config.write_batch_max,
            config.writer_queue_jobs_max,
            config.writer_lanes,
            move || invalidated.invalidate(),
        )?;
        let change_log_retention_ms = config
            .change_log_retention_minutes
            .max(1)
            .saturating_mul(60_000);
        writer.set_change_log_retention_ms(change_log_retention_ms);
        // A quarter of the query's budget for the documents of recent replacing writes. Off on
        // a shared store: another process may restore a snapshot this one never hears of.
        writer.written.set_bytes_max(if store.is_shared() {
            0
        } else {
            config.document_cache_bytes / 4
        });
        let sessions = Arc::clone(&writer.sessions);
        // User activity paces the sweeper, so it is measured on the clock's pacer.
        let started = clock.pacer().stopwatch();
        Ok(Engine {
            inner: Arc::new(Inner {
                writer_thread: std::sync::Mutex::new(Some(thread)),
                shared: store.is_shared(),
                shard_writes: store.concurrent_shard_writes(),
                store,
                store_offset_ms,
                clock,
                writer,
                containers,
                sweep_stats: SweepRegistry::default(),
                budgets: Budgets::default(),
                documents: DocumentCache::new(config.document_cache_bytes),
                sessions,
                scans: Arc::new(tokio::sync::Semaphore::new(SCANS_CONCURRENT_MAX)),
                scripts: Arc::new(tokio::sync::Semaphore::new(SCRIPTS_CONCURRENT_MAX)),
                script_limits: config.script_limits,
                wire_status: config.wire_status,
                started,
                last_user_request_ms: AtomicU64::new(0),
                default_throughput_ru: config.default_throughput_ru,
                rate_limit: config.rate_limit,
                partition_key_ranges: config.partition_key_ranges,
                change_log_retention_ms,
                throughput_instances: config.throughput_instances.max(1),
                query_verify: config.query_verify,
                plans: PlanMemory::default(),
                vectors: VectorStores::default(),
            }),
        })
    }

    /// Stops the writer after the writes already queued and waits for it, so the store is
    /// released (a durable store can then be reopened in the same process). Returns `false` if
    /// other handles to the engine are still alive, in which case nothing is stopped.
    pub fn close(self) -> bool {
        let Ok(inner) = Arc::try_unwrap(self.inner) else {
            return false;
        };
        let Inner {
            writer,
            writer_thread,
            ..
        } = inner;
        drop(writer);
        let thread = writer_thread.into_inner().ok().flatten();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
        true
    }

    /// The budget a container's requests draw on in this process, if any: its throughput, or
    /// this process's share of it when several serve one store.
    pub fn budget_of(&self, container: &Container) -> Option<(BudgetKey, f64)> {
        container
            .budget
            .or_else(|| {
                self.inner
                    .default_throughput_ru
                    .map(|ru| (BudgetKey::Container(container.number), f64::from(ru)))
            })
            .map(|(key, ru)| (key, ru / f64::from(self.inner.throughput_instances)))
    }

    /// Whether a user request arrived within `window` (the sweeper yields to active users).
    pub fn users_active_within(&self, window: std::time::Duration) -> bool {
        let last = self.inner.last_user_request_ms.load(Ordering::Relaxed);
        let now = self.inner.started.elapsed().as_millis() as u64;
        last != 0 && now.saturating_sub(last) <= window.as_millis() as u64
    }

    /// Admits a user request on a container, or says how many milliseconds to wait.
    pub fn admit(&self, container: &Container, priority: Priority) -> Result<(), i64> {
        // Measured on the clock's pacer (the machine's monotonic timer, or a manual clock in
        // tests): it paces the sweeper, it is not wall time.
        let since_start_ms = (self.inner.started.elapsed().as_millis() as u64).max(1);
        self.inner
            .last_user_request_ms
            .store(since_start_ms, Ordering::Relaxed);
        match self.budget_of(container) {
            Some((key, budget)) if self.inner.rate_limit => {
                self.inner
                    .budgets
                    .admit(key, budget, self.now_ms(), priority)
            }
            _ => Ok(()),
        }
    }

    /// Admits a user request that names a throughput bucket, once the container admitted it:
    /// refused while the requests naming the bucket have spent its share of this second's
    /// budget. A bucket the container does not define draws on the container alone, as on the
    /// service.
    pub fn admit_bucket(&self, container: &Container, bucket: u8) -> Result<(), i64> {
        match self.bucket_budget(container, bucket) {
            Some((key, budget)) if self.inner.rate_limit => {
                self.inner
                    .budgets
                    .admit(key, budget, self.now_ms(), Priority::High)
            }
            _ => Ok(()),
        }
    }

    /// Charges a completed request to the throughput bucket it named, if the container has it.
    pub fn charge_bucket(&self, container: &Container, bucket: u8, request_units: f64) {
        if let Some((key, budget)) = self.bucket_budget(container, bucket) {
            self.inner
                .budgets
                .charge_user(key, budget, request_units, self.now_ms());
        }
    }

    /// A bucket's key and RU/s: its percentage of the container's budget in this process.
    fn bucket_budget(&self, container: &Container, bucket: u8) -> Option<(BudgetKey, f64)> {
        let share = container
            .throughput_buckets
            .iter()
            .find(|defined| defined.id == bucket)?;
        let (_, budget) = self.budget_of(container)?;
        Some((
            BudgetKey::Bucket(container.number, bucket),
            budget * f64::from(share.max_throughput_percentage) / 100.0,
        ))
    }

    /// Charges a completed user request to its container's budget.
    pub fn charge(&self, container: &Container, request_units: f64) {
        if let Some((key, budget)) = self.budget_of(container) {
            self.inner
                .budgets
                .charge_user(key, budget, request_units, self.now_ms());
        }
    }

    /// RUs charged to users and to the sweeper, and requests throttled, on a container's budget.
    pub fn budget_totals(&self, container: &Container) -> Option<BudgetTotals> {
        self.budget_of(container)
            .map(|(key, _)| self.inner.budgets.totals(key))
    }

    /// Why the engine stopped accepting writes, if it did (a panic in the writer or the
    /// sweeper, a failed commit). Reads keep working; a restart is needed to write again.
    pub fn poisoned(&self) -> Option<String> {
        self.inner.writer.poison.reason().map(str::to_string)
    }

    /// Whether the engine serves: its writer thread runs, it is not poisoned, and its store
    /// answers a read (one snapshot begun and dropped, on the scan pool: on PostgreSQL it is a
    /// round trip). The reason it does not, otherwise.
    pub async fn readiness(&self) -> EngineResult<()> {
        if let Some(reason) = self.poisoned() {
            return Err(EngineError::with_message(ErrorCode::StorePoisoned, reason));
        }
        let writer_runs = self
            .inner
            .writer_thread
            .lock()
            .is_ok_and(|thread| thread.as_ref().is_some_and(|handle| !handle.is_finished()));
        if !writer_runs {
            return Err(EngineError::with_message(
                ErrorCode::WriterStopped,
                "the writer has stopped",
            ));
        }
        self.run_scan(|engine| engine.inner.store.read().map(drop).map_err(Into::into))
            .await
    }

    /// Which storage backend holds the data (`redb`, `memory`, `postgresql`).
    pub fn store_kind(&self) -> &'static str {
        self.inner.store.kind()
    }

    /// What the store's background writer has done so far (the redb store's flusher); `None`
    /// for a store without one.
    pub fn store_flush_stats(&self) -> Option<lethedb_storage::FlushStats> {
        self.inner.store.flush_stats()
    }

    /// How long ago the engine opened, on its clock's pacer.
    pub fn uptime(&self) -> std::time::Duration {
        self.inner.started.elapsed()
    }

    /// The time now: this engine's clock, or on a shared store the store's clock as the last
    /// transaction saw it (what decides expiry there is [`Engine::now_in`]).
    pub fn now_ms(&self) -> i64 {
        self.inner
            .clock
            .now_ms()
            .saturating_add(self.inner.store_offset_ms.load(Ordering::Relaxed))
    }

    /// The writer's commit latencies: per-bucket counts (bounds in
    /// [`crate::writer::COMMIT_LATENCY_BOUNDS_SECS`], then the overflow) and the total in seconds.
    pub fn commit_latency(&self) -> (Vec<u64>, f64) {
        let stats = &self.inner.writer.stats;
        let buckets = stats
            .commit_latency_buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        (
            buckets,
            stats.commit_latency_micros_total.load(Ordering::Relaxed) as f64 / 1e6,
        )
    }

    /// How many writer lanes commit side by side (one, or several on a store that commits
    /// shards side by side).
    pub fn writer_lanes(&self) -> usize {
        self.inner.writer.lanes()
    }

    /// Operations applied and commits made by the writer so far, and operations waiting.
    pub fn writer_stats(&self) -> (u64, u64, u64) {
        let stats = &self.inner.writer.stats;
        (
            stats.operations.load(Ordering::Relaxed),
            stats.commits.load(Ordering::Relaxed),
            stats.queued.load(Ordering::Relaxed),
        )
    }
}
