//! The engine handle: what it holds (store, clock, writer, caches, budgets, sweep statistics),
//! how it opens and closes, and the throughput bookkeeping every request passes through.
//!
//! Resource operations are `impl Engine` blocks in the modules that own them (catalog, items,
//! queries, offers, the sweeper); this module knows none of them, so they can all depend on it.

use crate::clock::{Clock, Stopwatch};
use crate::container::Container;
use crate::error::ErrorCode;
use crate::index::plan_memory::PlanMemory;
use crate::items::document_cache::{DocumentCache, DOCUMENT_CACHE_BYTES_DEFAULT};
use crate::partitions::sessions::RangeSessions;
use crate::search::VectorStores;
use crate::throughput::Budgets;
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
    /// How many lanes the writer runs on a store whose transactions of disjoint shards commit
    /// side by side (`writer/lanes.rs`); `None`: the store's default (one on PostgreSQL, one
    /// per core on fjall). A store with one writer always has one.
    pub writer_lanes: Option<usize>,
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
    /// Runs every query page that an index can serve both through the index and as a scan,
    /// and fails it (an internal error naming the query) when the two pages differ: the proof,
    /// in CI, that the index only chooses which documents are loaded (`query/page.rs`).
    pub query_verify: bool,
}

impl EngineConfig {
    /// The default tunables, with the wire layer's statuses. There is no `Default`: whoever
    /// opens an engine says what its failures are on the wire.
    pub fn new(wire_status: WireStatus) -> EngineConfig {
        EngineConfig {
            wire_status,
            write_batch_max: WRITE_BATCH_MAX_DEFAULT,
            writer_queue_jobs_max: WRITER_QUEUE_JOBS_MAX,
            writer_lanes: None,
            sweeper: SweeperConfig::default(),
            default_throughput_ru: None,
            rate_limit: true,
            document_cache_bytes: DOCUMENT_CACHE_BYTES_DEFAULT,
            partition_key_ranges: None,
            change_log_retention_minutes: crate::limits::CHANGE_LOG_RETENTION_MINUTES_DEFAULT,
            script_limits: lethedb_scripts::Limits::default(),
            throughput_instances: 1,
            query_verify: false,
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
    pub(crate) writer_thread: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
    pub(crate) store: Arc<dyn Storage>,
    /// Whether other processes write to the store too (see [`Storage::is_shared`]).
    pub(crate) shared: bool,
    /// Whether the store commits transactions of disjoint shards side by side (see
    /// [`Storage::concurrent_shard_writes`]): then a write that stays in its shards is queued
    /// as such, for its shards' lane and locks.
    pub(crate) shard_writes: bool,
    pub(crate) clock: Arc<dyn Clock>,
    /// The store's clock minus this engine's, as the last transaction on a shared store read
    /// it (0 otherwise): [`Engine::now_ms`] outside a transaction follows the store's clock.
    pub(crate) store_offset_ms: Arc<AtomicI64>,
    pub(crate) writer: Writer,
    pub(crate) containers: Arc<ContainerCache>,
    pub(crate) sweep_stats: SweepRegistry,
    pub(crate) budgets: Budgets,
    pub(crate) documents: DocumentCache,
    /// Permits for scans on the blocking pool (see `api/mod.rs`).
    pub(crate) scans: Arc<tokio::sync::Semaphore>,
    /// Permits for script executions (see `scripts/`): a bounded pool, so scripts cannot take
    /// every blocking thread.
    pub(crate) scripts: Arc<tokio::sync::Semaphore>,
    pub(crate) script_limits: lethedb_scripts::Limits,
    pub(crate) wire_status: WireStatus,
    /// When the engine started, on the clock's pacer, for the activity clock below.
    pub(crate) started: Stopwatch,
    /// Milliseconds after `started` of the latest user request on an item (0: none yet).
    pub(crate) last_user_request_ms: AtomicU64,
    pub(crate) default_throughput_ru: Option<u32>,
    pub(crate) rate_limit: bool,
    pub(crate) partition_key_ranges: Option<usize>,
    pub(crate) change_log_retention_ms: i64,
    /// Every container's throughput is divided by this (see [`EngineConfig`]).
    pub(crate) throughput_instances: u32,
    /// Every query page runs both plans (see [`EngineConfig::query_verify`]).
    pub(crate) query_verify: bool,
    /// The queries whose filter the planner recently found unselective.
    pub(crate) plans: PlanMemory,
    /// The decoded vectors exact vector search scans (`search/`).
    pub(crate) vectors: VectorStores,
    /// Every container's shard sequences as last seen, for range session tokens; the
    /// writer's, which raises them after each commit (`partitions/sessions.rs`).
    pub(crate) sessions: Arc<RangeSessions>,
}

/// The engine. Cloning it is cheap and shares everything.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

impl Engine {
    /// The instant a snapshot is judged at (expiry, `GetCurrentDateTime()`): on a shared store
    /// the store's clock as the transaction read it, so every process agrees on the instant an
    /// item expires whatever its own clock says; otherwise this engine's clock.
    pub(crate) fn now_in(&self, reader: &dyn ReadTxn) -> i64 {
        self.now_at(reader.store_now_ms())
    }

    /// The time as the store read it (`store_ms`, for a shared store), else this engine's.
    pub(crate) fn now_at(&self, store_ms: Option<i64>) -> i64 {
        match store_ms {
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
}
