//! The change feed: the writer's side (`change_log`: the change index of current versions,
//! the all-versions log, TTL events at the expiry instant, retention) and the reader's side
//! (`change_feed`: both modes, scopes, 304 without a scan) with its per-shard cursors
//! (`cursor`).

pub(crate) mod change_feed;
pub(crate) mod change_log;
pub(crate) mod cursor;
