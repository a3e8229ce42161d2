//! LetheDB's engine: databases, containers and items with exact time to live, on a storage
//! backend, with one group-committing writer and a background TTL sweeper.
//!
//! The engine speaks in resources and JSON values. It knows nothing of HTTP, headers,
//! authorization or status codes (the server crate maps [`EngineError`] to those), and nothing of
//! how bytes reach the disk (the storage crate does). Query text is parsed and evaluated by the
//! pure `lethedb-query` crate; the engine feeds it documents from storage.

pub mod batch;
mod catalog;
mod clock;
pub mod document_cache;
mod error;
mod items;
mod keys;
mod offers;
mod partition_key;
pub mod patch;
mod query;
mod records;
pub mod request_units;
pub mod sweeper;
pub mod throughput;
pub mod ttl;
pub mod writer;

pub use catalog::{Container, Usage};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{EngineError, EngineResult};
pub use items::{Feed, ItemOutcome, StoredItem, WriteMode};
pub use partition_key::{PartitionKeyDefinition, PartitionKeyPart, PartitionKeyValue};
pub use query::{validate_query, QueryPage, QueryRequest};
pub use records::etag;
pub use sweeper::{SweepStats, SweeperConfig};

use lethedb_storage::Storage;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// The longest id a database, container or item may have, in characters (the service's limit).
pub const ID_CHARS_MAX: usize = 255;
/// The largest item, in bytes of its JSON (the service's limit is 2 MiB).
pub const ITEM_BYTES_MAX: usize = 2 * 1024 * 1024;
/// The most items one page of a feed or query may hold.
pub const PAGE_ITEMS_MAX: usize = 10_000;
/// The page size when the client does not ask for one (the service's default).
pub const PAGE_ITEMS_DEFAULT: usize = 100;

/// Tunables fixed at start-up.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// The most operations one durable commit may carry (1 disables group commit).
    pub write_batch_max: usize,
    pub sweeper: SweeperConfig,
    /// RU/s for containers with no throughput of their own or shared; `None`: unlimited.
    pub default_throughput_ru: Option<u32>,
    /// Whether spent budgets refuse requests (429); charges are reported either way.
    pub rate_limit: bool,
    /// The memory parsed documents may take to speed up scans (0 turns the cache off).
    pub document_cache_bytes: usize,
}

impl Default for EngineConfig {
    fn default() -> EngineConfig {
        EngineConfig {
            write_batch_max: 512,
            sweeper: SweeperConfig::default(),
            default_throughput_ru: None,
            rate_limit: true,
            document_cache_bytes: document_cache::DOCUMENT_CACHE_BYTES_DEFAULT,
        }
    }
}

/// Container definitions cached for readers. The generation lets a reader that loaded a
/// definition from an older snapshot avoid publishing it after the writer invalidated the cache.
#[derive(Default)]
pub(crate) struct ContainerCache {
    generation: AtomicU64,
    /// Database id → container id → definition (nested so lookups need no allocation).
    entries: RwLock<HashMap<String, HashMap<String, Arc<Container>>>>,
}

impl ContainerCache {
    fn invalidate(&self) {
        let mut entries = match self.entries.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        self.generation.fetch_add(1, Ordering::SeqCst);
        entries.clear();
    }

    fn get(&self, database_id: &str, container_id: &str) -> Option<Arc<Container>> {
        let entries = self.entries.read().ok()?;
        entries.get(database_id)?.get(container_id).cloned()
    }

    fn insert_if_current(&self, generation: u64, container: Arc<Container>) {
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
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) writer: writer::Writer,
    pub(crate) containers: Arc<ContainerCache>,
    pub(crate) sweep_stats: sweeper::SweepRegistry,
    pub(crate) budgets: throughput::Budgets,
    pub(crate) documents: document_cache::DocumentCache,
    /// When the engine started, for the monotonic activity clock below.
    started: std::time::Instant,
    /// Milliseconds after `started` of the latest user request on an item (0: none yet).
    last_user_request_ms: AtomicU64,
    pub(crate) default_throughput_ru: Option<u32>,
    pub(crate) rate_limit: bool,
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
        let (writer, thread) = writer::Writer::start(
            Arc::clone(&store),
            Arc::clone(&clock),
            config.write_batch_max,
            move || invalidated.invalidate(),
        )?;
        Ok(Engine {
            inner: Arc::new(Inner {
                writer_thread: std::sync::Mutex::new(Some(thread)),
                store,
                clock,
                writer,
                containers,
                sweep_stats: sweeper::SweepRegistry::default(),
                budgets: throughput::Budgets::default(),
                documents: document_cache::DocumentCache::new(config.document_cache_bytes),
                started: std::time::Instant::now(),
                last_user_request_ms: AtomicU64::new(0),
                default_throughput_ru: config.default_throughput_ru,
                rate_limit: config.rate_limit,
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

    /// The budget a container's requests draw on, if any.
    pub fn budget_of(&self, container: &Container) -> Option<(throughput::BudgetKey, f64)> {
        container.budget.or_else(|| {
            self.inner.default_throughput_ru.map(|ru| {
                (
                    throughput::BudgetKey::Container(container.number),
                    f64::from(ru),
                )
            })
        })
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
    pub fn budget_totals(&self, container: &Container) -> Option<throughput::BudgetTotals> {
        self.budget_of(container)
            .map(|(key, _)| self.inner.budgets.totals(key))
    }

    pub fn now_ms(&self) -> i64 {
        self.inner.clock.now_ms()
    }

    /// The writer's commit latencies: per-bucket counts (bounds in
    /// [`writer::COMMIT_LATENCY_BOUNDS_SECS`], then the overflow) and the total in seconds.
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

/// Checks an id against the service's rules.
pub(crate) fn validate_id(id: &str) -> EngineResult<()> {
    if id.is_empty() {
        return Err(EngineError::BadRequest("The id must not be empty.".into()));
    }
    if id.chars().count() > ID_CHARS_MAX {
        return Err(EngineError::BadRequest(format!(
            "The id is longer than {ID_CHARS_MAX} characters."
        )));
    }
    if id.contains(['/', '\\', '?', '#']) {
        return Err(EngineError::BadRequest(
            "The id contains one of the characters '/', '\\', '?' or '#', which are not allowed in resource ids.".into(),
        ));
    }
    Ok(())
}
