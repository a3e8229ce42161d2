//! The writer's lanes: the threads that apply and commit groups of jobs, each with its own
//! queue.
//!
//! A store with one writer (redb, memory) gets one lane: every job goes through it in order,
//! as the module's documentation says. A shared store (PostgreSQL) gets as many as configured
//! ([`WRITER_LANES_SHARED_DEFAULT`]): a job that writes only within some shards
//! (`Writer::write_in_shards`) goes to the lane its shards map to, so one shard's jobs keep
//! their order, and the lanes' transactions, each holding only its shards' locks, commit side
//! by side; every other job (catalog changes, the sweeper's purges, anything that may write
//! anywhere) goes to the first lane, whose group then takes the store-wide lock. The store's
//! locks, not the lanes, keep transactions apart: two lanes of one process wait for each other
//! exactly as two processes do. Each lane keeps its own cached definitions and catalog epoch.
//!
//! This module only counts lanes, routes jobs and starts threads; `mod.rs` runs each lane's
//! groups.

use crate::error::{EngineError, EngineResult, ErrorCode};
use lethedb_storage::Storage;
use std::thread::JoinHandle;

/// Lanes of a writer on a shared store unless configured otherwise (`--writer-lanes`): one.
/// On the 2-core development machine, where PostgreSQL, the instances and the load share the
/// cores, more lanes split the groups (3.8 writes per commit against 15.6 with one) and gave no
/// more creates per second, for one instance or two (`bench/results/postgres.md`); where
/// commits wait on the disk or the network rather than the CPU, more lanes keep several
/// transactions of disjoint shards in flight.
pub const WRITER_LANES_SHARED_DEFAULT: usize = 1;

/// The lane a job goes to: the one its shards map to, or the first when it names none or
/// shards of several lanes.
pub(super) fn lane_of(shards: Option<&[u64]>, lanes: usize) -> usize {
    let Some(shards) = shards else {
        return 0;
    };
    let mut chosen = None;
    for shard in shards {
        // A shard lock ends with the shard's number, so consecutive shards go to different lanes.
        let lane = (*shard % lanes as u64) as usize;
        if chosen.is_some_and(|chosen| chosen != lane) {
            return 0;
        }
        chosen = Some(lane);
    }
    chosen.unwrap_or(0)
}

/// How many lanes a writer on `store` runs: `shared_lanes` (at least one) on a shared store.
pub(super) fn lane_count(store: &dyn Storage, shared_lanes: usize) -> usize {
    if store.is_shared() {
        shared_lanes.max(1)
    } else {
        1
    }
}

/// One handle for the lanes' threads: it ends when every lane has.
pub(super) fn joined(handles: Vec<JoinHandle<()>>) -> EngineResult<JoinHandle<()>> {
    spawn("lethedb-writer-lanes".into(), move || {
        for handle in handles {
            // A lane that panicked has already poisoned the engine; the others still end.
            let _ = handle.join();
        }
    })
}

/// Starts a named thread.
pub(super) fn spawn(
    name: String,
    body: impl FnOnce() + Send + 'static,
) -> EngineResult<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name)
        .spawn(body)
        .map_err(|error| {
            EngineError::with_message(
                ErrorCode::WriterStopped,
                format!("cannot start the writer: {error}"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_goes_to_its_shards_lane_or_the_first() {
        assert_eq!(lane_of(None, 4), 0);
        assert_eq!(lane_of(Some(&[(9 << 16) | 6]), 4), 2);
        assert_eq!(lane_of(Some(&[(9 << 16) | 6, (3 << 16) | 2]), 4), 2);
        assert_eq!(lane_of(Some(&[(9 << 16) | 6, (9 << 16) | 7]), 4), 0);
        assert_eq!(lane_of(Some(&[(9 << 16) | 7]), 1), 0);
        assert_eq!(lane_of(Some(&[]), 4), 0);
    }
}
