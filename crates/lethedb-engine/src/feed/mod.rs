//! The change feed: the writer's side (`change_log`: the log of every write, a position while
//! its version is current, each shard's marks, retention; `log_layout`: rewriting a store of
//! the earlier layout; `ttl_events`: TTL events at the expiry
//! instant, planned for every shard and logged shard by shard, in the jobs of `ttl_jobs`) and
//! the reader's side (`change_feed`: both modes, scopes, 304 without a scan) with its
//! per-shard cursors (`cursor`).

pub(crate) mod change_feed;
pub(crate) mod change_log;
pub(crate) mod cursor;
pub(crate) mod log_layout;
pub(crate) mod ttl_events;
pub(crate) mod ttl_jobs;
