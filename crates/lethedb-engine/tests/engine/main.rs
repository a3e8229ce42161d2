//! The engine's integration tests, one binary (one link, one shared helper module): each module
//! drives the public API of `lethedb-engine` on an in-memory or durable store with a manual
//! clock.

mod batch;
mod common;
mod faults;
mod model;
mod resources;
mod sweeper;
mod ttl_paths;
