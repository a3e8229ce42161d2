//! The writer's counters for observability: commits, operations, queued jobs and a histogram
//! of commit latencies. Counting only; the writer decides what to count.

use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds, in seconds, of the commit-latency histogram's buckets.
pub const COMMIT_LATENCY_BOUNDS_SECS: [f64; 10] = [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0,
];

/// Counters the writer keeps for observability.
#[derive(Debug, Default)]
pub struct WriterStats {
    pub commits: AtomicU64,
    pub operations: AtomicU64,
    pub queued: AtomicU64,
    /// Commits per latency bucket (the last slot counts those above every bound).
    pub commit_latency_buckets: [AtomicU64; COMMIT_LATENCY_BOUNDS_SECS.len() + 1],
    pub commit_latency_micros_total: AtomicU64,
}

impl WriterStats {
    pub(super) fn record_commit(&self, elapsed: std::time::Duration) {
        let secs = elapsed.as_secs_f64();
        let slot = COMMIT_LATENCY_BOUNDS_SECS
            .iter()
            .position(|&bound| secs <= bound)
            .unwrap_or(COMMIT_LATENCY_BOUNDS_SECS.len());
        self.commit_latency_buckets[slot].fetch_add(1, Ordering::Relaxed);
        self.commit_latency_micros_total
            .fetch_add(elapsed.as_micros() as u64, Ordering::Relaxed);
    }
}
