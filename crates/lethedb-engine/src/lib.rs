//! LetheDB's engine: databases, containers and items with exact time to live, on a storage
//! backend, with one group-committing writer and a background TTL sweeper.
//!
//! The engine speaks in resources and JSON values. It knows nothing of HTTP, headers,
//! authorization or status codes (the server crate maps [`EngineError`] to those), and nothing of
//! how bytes reach the disk (the storage crate does). Query text is parsed and evaluated by the
//! pure `lethedb-query` crate; the engine feeds it documents from storage.
//!
//! The front door is [`Engine`]: its public methods live in `api/`, one file per resource, and
//! the rest of the crate is the rooms behind it, grouped by concept (`items/`, `ttl/`,
//! `partitions/`, `feed/`, `catalog/`, `scripts/`, `query/`, `throughput/`). The rooms and the
//! order of their floors are drawn in `ARCHITECTURE.md` and checked by the tidy test.

mod api;
mod catalog;
mod clock;
mod container;
mod counters;
mod engine;
mod error;
mod feed;
mod index;
mod items;
mod keys;
mod limits;
mod partitions;
mod poison;
mod query;
mod records;
mod rids;
mod scan_visit;
mod scripts;
mod search;
mod throughput;
mod ttl;
pub mod writer;

pub use catalog::kinds::{ResourceKind, ResourceParent};
pub use catalog::script_body::{TriggerOperation, TriggerType};
pub use catalog::scripts::ScriptResource;
pub use catalog::usage::RangeStatistics;
pub use clock::{Clock, ManualClock, OffsetClock, Pacer, Stopwatch, SystemClock};
pub use container::{Container, Usage};
pub use engine::{Engine, EngineConfig, WireStatus};
pub use error::{EngineError, EngineResult, ErrorCode};
pub use feed::change_feed::{ChangeFeedMode, ChangeFeedPage, ChangeFeedRequest, ChangeFeedStart};
pub use feed::cursor::FeedCursor;
pub use index::check::IndexCheck;
pub use items::batch::{
    entry_request_units, parse_batch, BatchEffect, BatchEntry, BatchMode, BatchOperation,
};
pub use items::patch::{apply_patch, parse_patch};
pub use items::rules::WriteMode;
pub use items::{Feed, ItemDeleted, ItemOutcome, StoredItem};
pub use lethedb_query::{to_json_vec, write_json, ClientPlan};
pub use lethedb_scripts::Limits as ScriptLimits;
pub use limits::{
    ID_CHARS_MAX, ITEM_BYTES_MAX, PAGE_ITEMS_DEFAULT, PAGE_ITEMS_MAX, SCANS_CONCURRENT_MAX,
};
pub use partitions::buckets::{Buckets, BUCKETS_VERSION};
pub use partitions::epk::{even_boundaries, prefix_range, HashScheme};
pub use partitions::partition_key::{PartitionKeyDefinition, PartitionKeyPart, PartitionKeyValue};
pub use partitions::ranges::RangeFilter;
pub use partitions::shards::sequence as lsn_sequence;
pub use query::metrics::QueryMetrics;
pub use query::{ClientPipeline, QueryOutcome, QueryPage, QueryRequest};
pub use rids::{etag, partition_key_range_rid};
pub use scripts::{
    script_arguments, ScriptResponse, TriggeredOperation, TriggeredOutcome, TriggeredWrite,
};
pub use throughput::buckets::{ThroughputBucket, BUCKET_IDS};
pub use throughput::request_units;
pub use throughput::{Priority, Throughput};
pub use ttl::expiry::{
    ExpiringCounts, TtlOverview, TtlPreview, TTL_COUNT_ENTRIES_MAX, TTL_HISTOGRAM_WINDOWS_MS,
};
pub use ttl::parse_default_ttl;
pub use ttl::sweep_stats::{SweepStats, SweeperConfig};
pub use ttl::sweeper::SweeperHandle;
