//! The writer's lanes: the threads that apply and commit groups of jobs, each with its own
//! queue.
//!
//! A store with one writer (redb, memory) gets one lane: every job goes through it in order,
//! as the module's documentation says. A store whose transactions of disjoint shards commit
//! side by side ([`Storage::concurrent_shard_writes`]) gets as many as configured, or its
//! default: on a shared store (PostgreSQL) [`WRITER_LANES_SHARED_DEFAULT`], on one this process
//! owns (fjall) one per core. A job that writes only within some shards
//! (`Writer::write_in_shards`) goes to the lane its shards map to, so one shard's jobs keep
//! their order, and the lanes' transactions, each holding only its shards' locks, commit side
//! by side; every other job (catalog changes, the sweeper's purges, anything that may write
//! anywhere) goes to the first lane, whose group then takes the store-wide lock. The store's
//! locks, not the lanes, keep transactions apart: two lanes of one process wait for each other
//! exactly as two processes do. Each lane keeps its own cached definitions and catalog epoch;
//! such a store's write transactions report the epoch (fjall keeps it in its process), so a
//! lane drops its definitions when another lane changed the catalog, before its next group's
//! first job runs. Counters are never cached: each group reads its shards' rows.
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

/// How many lanes a writer on `store` runs: `configured` (at least one), or the store's
/// default, on a store that commits shards side by side; one elsewhere.
pub(super) fn lane_count(store: &dyn Storage, configured: Option<usize>) -> usize {
    if !store.concurrent_shard_writes() {
        return 1;
    }
    let default = || {
        if store.is_shared() {
            WRITER_LANES_SHARED_DEFAULT
        } else {
            std::thread::available_parallelism().map_or(1, usize::from)
        }
    };
    configured.unwrap_or_else(default).max(1)
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

    #[test]
    fn lanes_go_only_to_a_store_that_commits_shards_side_by_side() {
        let dir = tempfile::tempdir().expect("temp dir");
        let fjall = lethedb_storage::FjallStore::open(&dir.path().join("fjall")).expect("fjall");
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        assert_eq!(lane_count(&fjall, None), cores);
        assert_eq!(lane_count(&fjall, Some(3)), 3);
        assert_eq!(lane_count(&fjall, Some(0)), 1);
        let memory = lethedb_storage::MemoryStore::new();
        assert_eq!(lane_count(&memory, Some(4)), 1);
        assert_eq!(lane_count(&memory, None), 1);
    }
}
