//! The engine's integration tests, one binary (one link, one shared helper module): each module
//! drives the public API of `lethedb-engine` on an in-memory or durable store with a manual
//! clock.

// Tests assert by panicking, helpers included (clippy allows it only inside #[test] fns).
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod batch;
mod change_feed;
mod common;
mod corrupted_records;
mod counting_store;
mod covered;
mod document_order;
mod entry_order;
mod epk;
mod faults;
mod fjall_lanes;
mod full_text_index;
mod full_text_rank;
mod full_text_shards;
mod golden_verify;
mod index_build;
mod index_plan;
mod index_policy;
mod index_upgrade;
mod item_rules;
mod log_layout;
mod model;
mod order_span;
mod order_walk;
mod query_differential;
mod query_metrics;
mod range_local;
mod ranges;
mod resolved_container;
mod resources;
mod script_resources;
mod scripts;
mod session_memory;
mod shared_buckets;
mod shared_sessions;
mod shared_store;
mod shared_sweep;
mod shared_ttl_events;
mod shared_writer;
mod spatial_index;
mod sweeper;
mod ttl_events_upgrade;
mod ttl_overview;
mod ttl_paths;
mod unique_keys;
mod vector_index;
mod vector_search;
mod write_charges;
