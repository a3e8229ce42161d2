//! The sweeper's settings and what it reports: its configuration and the per-container
//! statistics the engine keeps between turns.
//!
//! These types sit below the engine so the engine can hold them; the sweeper's decisions (what
//! to delete, when, how fast) are in `ttl/sweeper.rs`, not here.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
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
            // Measured with bench/run's mass expiry (bench/results/write-path.md): 500-item
            // batches at one part in four cost reads 1.5-2× their p99 on two cores.
            busy_batch_items_max: 100,
            busy_duty_divisor: 10,
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

/// How far back the deletion rate looks.
const DELETION_RATE_WINDOW_MS: i64 = 10_000;
/// The spacing of the samples the deletion rate is computed from.
const DELETION_SAMPLE_INTERVAL_MS: i64 = 1_000;

/// Per-container sweep statistics, keyed by container number.
#[derive(Default)]
pub(crate) struct SweepRegistry {
    pub(crate) stats: Mutex<HashMap<u32, SweepStats>>,
    counted_at_ms: Mutex<HashMap<u32, i64>>,
    /// Per container, `(instant, deleted_total)` about once a second over the rate window.
    deletion_samples: Mutex<HashMap<u32, VecDeque<(i64, u64)>>>,
    /// Per container, the last expiry-index key the sweeper chose in each class, where its next
    /// walk begins (`ttl/sweeper.rs`).
    cursors: Mutex<HashMap<u32, Vec<Vec<u8>>>>,
    /// How long the sweeper's jobs waited for the writer since the loop last asked, in
    /// nanoseconds (see `ttl/sweeper.rs`: the pacing counts only the sweeper's own work).
    writer_wait_ns: AtomicU64,
}

impl SweepRegistry {
    /// Adds what one of the sweeper's jobs waited for the writer.
    pub(crate) fn note_writer_wait(&self, waited: Duration) {
        let nanos = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
        self.writer_wait_ns.fetch_add(nanos, Ordering::Relaxed);
    }

    /// What the sweeper's jobs waited for the writer since the last call.
    pub(crate) fn take_writer_wait(&self) -> Duration {
        Duration::from_nanos(self.writer_wait_ns.swap(0, Ordering::Relaxed))
    }

    /// Notes a container's deletion total after a sweep turn, for [`SweepRegistry::deletions`].
    pub(crate) fn sample_deletions(&self, container_number: u32, now_ms: i64, deleted_total: u64) {
        let Ok(mut samples) = self.deletion_samples.lock() else {
            return;
        };
        let samples = samples.entry(container_number).or_default();
        if samples
            .back()
            .is_none_or(|(at, _)| now_ms.saturating_sub(*at) >= DELETION_SAMPLE_INTERVAL_MS)
        {
            samples.push_back((now_ms, deleted_total));
        }
        // Keep one sample older than the window so the rate always spans all of it.
        while samples.len() > 1
            && samples
                .get(1)
                .is_some_and(|(at, _)| now_ms.saturating_sub(*at) >= DELETION_RATE_WINDOW_MS)
        {
            samples.pop_front();
        }
    }

    /// A container's deletion total and its rate over about the last
    /// `DELETION_RATE_WINDOW_MS`, in deletions per second (0 before two turns were seen).
    pub(crate) fn deletions(&self, container_number: u32, now_ms: i64) -> (u64, f64) {
        let total = self
            .stats
            .lock()
            .ok()
            .and_then(|stats| stats.get(&container_number).map(|s| s.deleted_total))
            .unwrap_or(0);
        let oldest = self.deletion_samples.lock().ok().and_then(|samples| {
            samples
                .get(&container_number)
                .and_then(|s| s.front().copied())
        });
        let rate = match oldest {
            Some((at, then_total)) if now_ms > at => {
                total.saturating_sub(then_total) as f64 * 1000.0 / (now_ms - at) as f64
            }
            _ => 0.0,
        };
        (total, rate)
    }

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

    /// Where the sweeper's next walk of a container begins: after these keys, one per class
    /// (none: from the start).
    pub(crate) fn cursor(&self, container_number: u32) -> Vec<Vec<u8>> {
        self.cursors
            .lock()
            .ok()
            .and_then(|cursors| cursors.get(&container_number).cloned())
            .unwrap_or_default()
    }

    /// Sets where the sweeper's next walk of a container begins (empty: from the start).
    pub(crate) fn set_cursor(&self, container_number: u32, after: Vec<Vec<u8>>) {
        if let Ok(mut cursors) = self.cursors.lock() {
            if after.is_empty() {
                cursors.remove(&container_number);
            } else {
                cursors.insert(container_number, after);
            }
        }
    }
}
