//! The engine handle: what it holds (store, clock, writer, caches, budgets, sweep statistics),
//! how it opens and closes, and the throughput bookkeeping every request passes through.
//!
//! Resource operations are `impl Engine` blocks in the modules that own them (catalog, items,
//! queries, offers, the sweeper); this module knows none of them, so they can all depend on it.

use crate::clock::{Clock, Stopwatch};
use crate::container::Container;
use crate::error::{EngineResult, ErrorCode};
use crate::items::document_cache::{DocumentCache, DOCUMENT_CACHE_BYTES_DEFAULT};
use crate::limits::{SCANS_CONCURRENT_MAX, SCRIPTS_CONCURRENT_MAX};
use crate::throughput::{BudgetKey, BudgetTotals, Budgets};
use crate::ttl::sweep_stats::{SweepRegistry, SweeperConfig};
use crate::writer::{Writer, WRITER_QUEUE_JOBS_MAX, WRITE_BATCH_MAX_DEFAULT};
use lethedb_storage::{ReadTxn, Storage};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// What a failure is on the wire: the HTTP status and the Cosmos code name a client gets for it.
/// A script sees them as a failed operation's `err.number` (compared against `ErrorCodes`), so
/// it sees what a client would. The wire layer's one error table supplies it at open: the
/// engine holds no status of its own.
pub type WireStatus = fn(ErrorCode) -> (u16, &'static str);

/// Tunables fixed at start-up.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// What a failure is on the wire (see [`WireStatus`]).
    pub wire_status: WireStatus,
    /// The most operations one durable commit may carry (1 disables group commit).
    pub write_batch_max: usize,
    /// The most writes that may wait for the writer before more are refused (429).
    pub writer_queue_jobs_max: usize,
    pub sweeper: SweeperConfig,
    /// RU/s for containers with no throughput of their own or shared; `None`: unlimited.
    pub default_throughput_ru: Option<u32>,
    /// Whether spent budgets refuse requests (429); charges are reported either way.
    pub rate_limit: bool,
    /// The memory parsed documents may take to speed up scans (0 turns the cache off).
    pub document_cache_bytes: usize,
    /// Gives every new container this many partition key ranges, whatever its throughput, and
    /// never splits them (`None`: one range per 10,000 RU/s, as the service lays them out).
    pub partition_key_ranges: Option<usize>,
    /// How long the all-versions change log keeps entries of containers whose
    /// `changeFeedPolicy` sets no retention, in minutes (at least 1).
    pub change_log_retention_minutes: i64,
    /// The time budget, memory cap and stack of one script execution (stored procedure,
    /// triggers of one write, the UDFs of one query page).
    pub script_limits: lethedb_scripts::Limits,
    /// How many processes serve one shared store: each admits requests (and sweeps) against
    /// its share, 1/n of every container's throughput, so together they allow what was
    /// provisioned. 1 for a store one process owns.
    pub throughput_instances: u32,
}

impl EngineConfig {
    /// The default tunables, with the wire layer's statuses. There is no `Default`: whoever
    /// opens an engine says what its failures are on the wire.
    pub fn new(wire_status: WireStatus) -> EngineConfig {
        EngineConfig {
            wire_status,
            write_batch_max: WRITE_BATCH_MAX_DEFAULT,
            writer_queue_jobs_max: WRITER_QUEUE_JOBS_MAX,
            sweeper: SweeperConfig::default(),
            default_throughput_ru: None,
            rate_limit: true,
            document_cache_bytes: DOCUMENT_CACHE_BYTES_DEFAULT,
            partition_key_ranges: None,
            change_log_retention_minutes: crate::limits::CHANGE_LOG_RETENTION_MINUTES_DEFAULT,
            script_limits: lethedb_scripts::Limits::default(),
            throughput_instances: 1,
        }
    }
}

/// Container definitions cached for readers. The generation lets a reader that loaded a
/// definition from an older snapshot avoid publishing it after the writer invalidated the cache.
#[derive(Default)]
pub(crate) struct ContainerCache {
    pub(crate) generation: AtomicU64,
    /// On a shared store, the catalog epoch the cached definitions were read at.
    epoch: AtomicU64,
    /// Database id → container id → definition (nested so lookups need no allocation).
    entries: RwLock<HashMap<String, HashMap<String, Arc<Container>>>>,
    /// Every container, as the sweeper last listed them, with the generation it listed at: the
    /// sweeper turns every few milliseconds and must not re-parse the catalog each time.
    listing: std::sync::Mutex<Option<(u64, Vec<Arc<Container>>)>>,
}

impl ContainerCache {
    pub(crate) fn invalidate(&self) {
        let mut entries = match self.entries.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        self.generation.fetch_add(1, Ordering::SeqCst);
        entries.clear();
    }

    /// Whether definitions cached here may serve a transaction that read catalog epoch
    /// `epoch` (`None`: a store this process owns, whose every change invalidates the cache).
    /// A newer epoch (another process changed the catalog) drops every cached definition
    /// first; an older one (a snapshot begun before) is served from the store, not the cache.
    pub(crate) fn serves(&self, epoch: Option<u64>) -> bool {
        let Some(epoch) = epoch else {
            return true;
        };
        if self.epoch.load(Ordering::SeqCst) < epoch {
            let mut entries = match self.entries.write() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            if self.epoch.load(Ordering::SeqCst) < epoch {
                self.generation.fetch_add(1, Ordering::SeqCst);
                entries.clear();
                self.epoch.store(epoch, Ordering::SeqCst);
            }
        }
        self.epoch.load(Ordering::SeqCst) == epoch
    }

    /// Every container, if listed since the last catalog change.
    pub(crate) fn listing(&self) -> Option<Vec<Arc<Container>>> {
        let listing = self.listing.lock().ok()?;
        let (generation, containers) = listing.as_ref()?;
        (*generation == self.generation.load(Ordering::SeqCst)).then(|| containers.clone())
    }

    /// Keeps a listing made at `generation` (read before the catalog was).
    pub(crate) fn keep_listing(&self, generation: u64, containers: Vec<Arc<Container>>) {
        if let Ok(mut listing) = self.listing.lock() {
            *listing = Some((generation, containers));
        }
    }

    pub(crate) fn get(&self, database_id: &str, container_id: &str) -> Option<Arc<Container>> {
        let entries = self.entries.read().ok()?;
        entries.get(database_id)?.get(container_id).cloned()
    }

    pub(crate) fn insert_if_current(&self, generation: u64, container: Arc<Container>) {
        if let Ok(mut entries) = self.entries.write() {
            if self.generation.load(Ordering::SeqCst) == generation {
                entries
                    .entry(container.database_id.clone())
                    .or_default()
                    .insert(container.id.clone(), container);
            }
        }
    }
}

pub(crate) struct Inner {
    /// The writer thread, joined by [`Engine::close`].
    writer_thread: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
    pub(crate) store: Arc<dyn Storage>,
    /// Whether other processes write to the store too (see [`Storage::is_shared`]).
    pub(crate) shared: bool,
    pub(crate) clock: Arc<dyn Clock>,
    /// The store's clock minus this engine's, as the last transaction on a shared store read
    /// it (0 otherwise): [`Engine::now_ms`] outside a transaction follows the store's clock.
    store_offset_ms: Arc<AtomicI64>,
    pub(crate) writer: Writer,
    pub(crate) containers: Arc<ContainerCache>,
    pub(crate) sweep_stats: SweepRegistry,
    pub(crate) budgets: Budgets,
    pub(crate) documents: DocumentCache,
    /// Permits for scans on the blocking pool (see `scans.rs`).
    pub(crate) scans: Arc<tokio::sync::Semaphore>,
    /// Permits for script executions (see `scripts/`): a bounded pool, so scripts cannot take
    /// every blocking thread.
    pub(crate) scripts: Arc<tokio::sync::Semaphore>,
    pub(crate) script_limits: lethedb_scripts::Limits,
    pub(crate) wire_status: WireStatus,
    /// When the engine started, on the clock's pacer, for the activity clock below.
    started: Stopwatch,
    /// Milliseconds after `started` of the latest user request on an item (0: none yet).
    last_user_request_ms: AtomicU64,
    pub(crate) default_throughput_ru: Option<u32>,
    pub(crate) rate_limit: bool,
    pub(crate) partition_key_ranges: Option<usize>,
    pub(crate) change_log_retention_ms: i64,
    /// Every container's throughput is divided by this (see [`EngineConfig`]).
    throughput_instances: u32,
}

/// The engine. Cloning it is cheap and shares everything.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

impl Engine {
    /// Opens the engine on a store and starts its writer thread. The sweeper is started
    /// separately with [`Engine::start_sweeper`], so tests can drive it by hand.
    pub fn open(
        store: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
        config: EngineConfig,
    ) -> EngineResult<Engine> {
        let containers = Arc::new(ContainerCache::default());
        let invalidated = Arc::clone(&containers);
        let store_offset_ms = Arc::new(AtomicI64::new(0));
        let (writer, thread) = Writer::start(
            Arc::clone(&store),
            Arc::clone(&clock),
            Arc::clone(&store_offset_ms),
            config.write_batch_max,
            config.writer_queue_jobs_max,
            move || invalidated.invalidate(),
        )?;
        let change_log_retention_ms = config
            .change_log_retention_minutes
            .max(1)
            .saturating_mul(60_000);
        writer.set_change_log_retention_ms(change_log_retention_ms);
        // User activity paces the sweeper, so it is measured on the clock's pacer.
        let started = clock.pacer().stopwatch();
        Ok(Engine {
            inner: Arc::new(Inner {
                writer_thread: std::sync::Mutex::new(Some(thread)),
                shared: store.is_shared(),
                store,
                store_offset_ms,
                clock,
                writer,
                containers,
                sweep_stats: SweepRegistry::default(),
                budgets: Budgets::default(),
                documents: DocumentCache::new(config.document_cache_bytes),
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
    pub fn admit(&self, container: &Container) -> Result<(), i64> {
        // This is measured on the monotonic timer: it paces the sweeper, it is not wall time.
        let since_start_ms = (self.inner.started.elapsed().as_millis() as u64).max(1);
        self.inner
            .last_user_request_ms
            .store(since_start_ms, Ordering::Relaxed);
        match self.budget_of(container) {
            Some((key, budget)) if self.inner.rate_limit => {
                self.inner.budgets.admit(key, budget, self.now_ms())
            }
            _ => Ok(()),
        }
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

    /// The time now: this engine's clock, or on a shared store the store's clock as the last
    /// transaction saw it (what decides expiry there is [`Engine::now_in`]).
    pub fn now_ms(&self) -> i64 {
        self.inner
            .clock
            .now_ms()
            .saturating_add(self.inner.store_offset_ms.load(Ordering::Relaxed))
    }

    /// The instant a snapshot is judged at (expiry, `GetCurrentDateTime()`): on a shared store
    /// the store's clock as the transaction read it, so every process agrees on the instant an
    /// item expires whatever its own clock says; otherwise this engine's clock.
    pub(crate) fn now_in(&self, reader: &dyn ReadTxn) -> i64 {
        match reader.store_now_ms() {
            Some(store_ms) => {
                self.inner.store_offset_ms.store(
                    store_ms.saturating_sub(self.inner.clock.now_ms()),
                    Ordering::Relaxed,
                );
                store_ms
            }
            None => self.inner.clock.now_ms(),
        }
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
