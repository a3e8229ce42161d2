//! The sweeper's settings and what it reports: its configuration and the per-container
//! statistics the engine keeps between turns.
//!
//! These types sit below the engine so the engine can hold them; the sweeper's decisions (what
//! to delete, when, how fast) are in `sweeper.rs`, not here.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// How the background sweeper paces itself.
#[derive(Clone, Debug)]
pub struct SweeperConfig {
    /// The most items one writer job deletes; bounds the writer time a batch takes.
    pub batch_items_max: usize,
    /// How long the sweeper sleeps when a pass found nothing more to delete.
    pub idle_interval: Duration,
    /// How long it pauses between batches while a backlog remains, so requests queued behind a
    /// mass expiry get the writer in between.
    pub batch_pause: Duration,
    /// The most deletions per second on containers without provisioned throughput (`None`: as
    /// fast as the batch size and pause allow).
    pub unlimited_deletions_per_sec_max: Option<u64>,
    /// Users count as active if a request arrived within this window.
    pub busy_window: Duration,
    /// The batch size while users are active.
    pub busy_batch_items_max: usize,
    /// While users are active the sweeper works one part in this many of the time.
    pub busy_duty_divisor: u32,
}

impl Default for SweeperConfig {
    fn default() -> SweeperConfig {
        SweeperConfig {
            batch_items_max: 2_000,
            idle_interval: Duration::from_millis(100),
            batch_pause: Duration::from_millis(1),
            unlimited_deletions_per_sec_max: None,
            busy_window: Duration::from_millis(250),
            busy_batch_items_max: 500,
            busy_duty_divisor: 4,
        }
    }
}

/// What the sweeper reports for one container.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepStats {
    pub database_id: String,
    pub container_id: String,
    /// Expired items not yet deleted, as of the last pass.
    pub backlog_items: u64,
    /// How long ago the oldest not-yet-deleted item expired, in milliseconds (0 if none).
    pub oldest_expired_age_ms: i64,
    /// Items deleted by the sweeper since start-up.
    pub deleted_total: u64,
}

/// How often the sweeper counts a container's whole backlog for its statistics.
const BACKLOG_COUNT_INTERVAL_MS: i64 = 5_000;

/// Per-container sweep statistics, keyed by container number.
#[derive(Default)]
pub(crate) struct SweepRegistry {
    pub(crate) stats: Mutex<HashMap<u32, SweepStats>>,
    counted_at_ms: Mutex<HashMap<u32, i64>>,
}

impl SweepRegistry {
    /// Whether the whole backlog should be counted on this turn (and notes that it will be).
    pub(crate) fn full_count_due(&self, container_number: u32, now_ms: i64) -> bool {
        // A count walks the whole backlog, so a large backlog is counted less often: one more
        // millisecond between counts per 20 expired items (1M items: about once a minute).
        let backlog = self
            .stats
            .lock()
            .ok()
            .and_then(|stats| stats.get(&container_number).map(|s| s.backlog_items))
            .unwrap_or(0);
        let interval_ms = BACKLOG_COUNT_INTERVAL_MS.saturating_add((backlog / 20) as i64);
        let Ok(mut counted) = self.counted_at_ms.lock() else {
            return false;
        };
        let last = counted.entry(container_number).or_insert(i64::MIN);
        if now_ms.saturating_sub(*last) >= interval_ms {
            *last = now_ms;
            true
        } else {
            false
        }
    }
}
