//! LetheDB's engine: databases, containers and items with exact time to live, on a storage
//! backend, with one group-committing writer and a background TTL sweeper.
//!
//! The engine speaks in resources and JSON values. It knows nothing of HTTP, headers,
//! authorization or status codes (the server crate maps [`EngineError`] to those), and nothing of
//! how bytes reach the disk (the storage crate does). Query text is parsed and evaluated by the
//! pure `lethedb-query` crate; the engine feeds it documents from storage.
//!
//! The public API, by file:
//! - `engine.rs`: [`Engine`] (open, close, admission and charging), [`EngineConfig`].
//! - `catalog/`: databases and containers (`create_database`, `read_container`, ...),
//!   `container_usage`; `catalog/resource.rs`: child resources (`create_resource`,
//!   `list_resources`, ...); `catalog/kinds.rs`: [`ResourceKind`], [`ResourceParent`];
//!   `catalog/script_body.rs`: [`TriggerType`], [`TriggerOperation`] (a script's body is
//!   checked when stored); `catalog/scripts.rs`: `read_script` ([`ScriptResource`]),
//!   `list_udfs`.
//! - `item_requests.rs`: item requests (`write_item`, `read_item`, `read_feed`, ...);
//!   `items.rs`: [`StoredItem`], [`ItemOutcome`], [`WriteMode`], [`Feed`].
//! - `query.rs`: `query_items` ([`QueryRequest`] → [`QueryOutcome`]: a [`QueryPage`], or the
//!   [`ClientPipeline`] with the service's [`ClientPlan`] when the SDK's pipeline must run the
//!   query), `query_plan`, `query_resources`, [`validate_query`]; `query_scan.rs`: the keys a
//!   page reads and its scan; `query_metrics.rs`: [`QueryMetrics`]; `index_metrics.rs`: the
//!   index utilization report. `batch.rs`, `patch.rs`: batches and partial updates.
//! - `sweeper.rs`: `start_sweeper` ([`sweeper::SweeperHandle`]), `sweep_once`, `sweep_stats`; `sweep_stats.rs`:
//!   [`SweeperConfig`], [`SweepStats`]. `expiry.rs`: `ttl_overview` ([`TtlOverview`],
//!   [`ExpiringCounts`], [`TtlPreview`]: a container's TTL figures from its expiry index).
//!   `offers.rs`: offers (throughput as a resource).
//! - `container.rs`: [`Container`], [`Usage`]. `limits.rs`: [`ID_CHARS_MAX`], [`ITEM_BYTES_MAX`],
//!   [`PAGE_ITEMS_MAX`], [`PAGE_ITEMS_DEFAULT`]. `error.rs`: [`EngineError`], [`ErrorCode`] (every
//!   failure a client can see). `clock.rs` ([`Stopwatch`] too), `poison.rs`
//!   (`Engine::poisoned`), `scans.rs` (where scans run: [`SCANS_CONCURRENT_MAX`]),
//!   `ranges.rs` (partition key ranges: `RangeLayout`, `RangeFilter`), `partition_key.rs`,
//!   `epk.rs` ([`HashScheme`], `prefix_range`, `even_boundaries`,
//!   `split_point`: effective partition keys), `throughput.rs`, `ttl.rs`, `request_units.rs`, `writer.rs`,
//!   `document_cache.rs`.
//!
//! Reading order, from the bottom floor up: error, limits, clock, poison, keys, rids, request units,
//! ttl, partition key, epk, throughput, document cache; ranges; container; writer; records; scan visit;
//! expiry; sweep stats; engine; scans; items; catalog; item requests, patch, batch, query
//! metrics, index metrics, query scan, query, offers; sweeper.

pub mod batch;
mod catalog;
mod change_feed;
mod change_log;
mod clock;
mod container;
pub mod document_cache;
mod engine;
pub mod epk;
mod error;
mod expiry;
mod index_metrics;
mod item_requests;
mod items;
mod keys;
mod limits;
mod offers;
mod partition_key;
pub mod patch;
mod poison;
mod query;
mod query_metrics;
mod query_scan;
pub mod ranges;
mod records;
pub mod request_units;
mod rids;
mod scan_visit;
mod scans;
mod scripts;
mod sweep_stats;
pub mod sweeper;
pub mod throughput;
pub mod ttl;
pub mod writer;

pub use catalog::kinds::{ResourceKind, ResourceParent};
pub use catalog::script_body::{TriggerOperation, TriggerType};
pub use catalog::scripts::ScriptResource;
pub use catalog::usage::RangeStatistics;
pub use change_feed::{ChangeFeedMode, ChangeFeedPage, ChangeFeedRequest, ChangeFeedStart};
pub use clock::{Clock, ManualClock, OffsetClock, Stopwatch, SystemClock};
pub use container::{Container, Usage};
pub use engine::{Engine, EngineConfig};
pub use epk::HashScheme;
pub use error::{EngineError, EngineResult, ErrorCode};
pub use expiry::{
    ExpiringCounts, TtlOverview, TtlPreview, TTL_COUNT_ENTRIES_MAX, TTL_HISTOGRAM_WINDOWS_MS,
};
pub use items::{Feed, ItemOutcome, StoredItem, WriteMode};
pub use lethedb_query::ClientPlan;
pub use lethedb_scripts::Limits as ScriptLimits;
pub use limits::{
    ID_CHARS_MAX, ITEM_BYTES_MAX, PAGE_ITEMS_DEFAULT, PAGE_ITEMS_MAX, SCANS_CONCURRENT_MAX,
};
pub use partition_key::{PartitionKeyDefinition, PartitionKeyPart, PartitionKeyValue};
pub use query::{validate_query, ClientPipeline, QueryOutcome, QueryPage, QueryRequest};
pub use query_metrics::QueryMetrics;
pub use rids::{etag, partition_key_range_rid};
pub use scripts::{
    script_arguments, ScriptResponse, TriggeredOperation, TriggeredOutcome, TriggeredWrite,
};
pub use sweep_stats::{SweepStats, SweeperConfig};
