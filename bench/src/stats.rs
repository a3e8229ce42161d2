//! Latency samples and the summaries the report prints: throughput, percentiles, error counts.
//!
//! Samples are kept whole (one `u32` of microseconds per request) rather than bucketed: a run
//! of a few seconds produces at most a few million, and exact percentiles are simpler to trust
//! than a histogram's. This module does no I/O and knows nothing of HTTP.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// How many error bodies a run keeps for the report; the rest are only counted.
pub const ERROR_SAMPLES_MAX: usize = 3;

/// What one client (or a whole run, after merging) observed.
#[derive(Default, Debug)]
pub struct Recorder {
    /// Request latencies in microseconds.
    pub latencies_us: Vec<u32>,
    /// Unexpected outcomes by kind (`status 500`, `transport`, ...).
    pub errors: BTreeMap<String, u64>,
    pub error_samples: Vec<String>,
}

impl Recorder {
    pub fn record(&mut self, latency: Duration) {
        self.latencies_us
            .push(latency.as_micros().min(u128::from(u32::MAX)) as u32);
    }

    pub fn error(&mut self, kind: String, detail: String) {
        *self.errors.entry(kind).or_default() += 1;
        if self.error_samples.len() < ERROR_SAMPLES_MAX {
            self.error_samples.push(detail);
        }
    }

    pub fn merge(&mut self, other: Recorder) {
        self.latencies_us.extend(other.latencies_us);
        for (kind, count) in other.errors {
            *self.errors.entry(kind).or_default() += count;
        }
        for sample in other.error_samples {
            if self.error_samples.len() < ERROR_SAMPLES_MAX {
                self.error_samples.push(sample);
            }
        }
    }

    /// Sorts the samples and summarises a run that lasted `elapsed`.
    pub fn summary(mut self, elapsed: Duration) -> Summary {
        self.latencies_us.sort_unstable();
        let count = self.latencies_us.len() as u64;
        let secs = elapsed.as_secs_f64().max(1e-9);
        Summary {
            operations: count,
            ops_per_sec: count as f64 / secs,
            p50_ms: percentile_ms(&self.latencies_us, 0.50),
            p99_ms: percentile_ms(&self.latencies_us, 0.99),
            max_ms: self
                .latencies_us
                .last()
                .map_or(0.0, |&us| f64::from(us) / 1000.0),
            error_count: self.errors.values().sum(),
            errors: self.errors,
            error_samples: self.error_samples,
        }
    }
}

/// The nearest-rank percentile of sorted microsecond samples, in milliseconds.
pub fn percentile_ms(sorted_us: &[u32], quantile: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let rank = ((quantile * sorted_us.len() as f64).ceil() as usize).clamp(1, sorted_us.len());
    f64::from(sorted_us[rank - 1]) / 1000.0
}

/// The nearest-rank percentile of sorted millisecond values.
pub fn percentile_f64(sorted: &[f64], quantile: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((quantile * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// A run's figures.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub operations: u64,
    pub ops_per_sec: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub error_count: u64,
    pub errors: BTreeMap<String, u64>,
    pub error_samples: Vec<String>,
}

impl Summary {
    pub fn to_json(&self) -> Value {
        json!({
            "operations": self.operations,
            "ops_per_sec": round(self.ops_per_sec, 1),
            "p50_ms": round(self.p50_ms, 3),
            "p99_ms": round(self.p99_ms, 3),
            "max_ms": round(self.max_ms, 3),
            "errors": self.errors,
            "error_samples": self.error_samples,
        })
    }
}

pub fn round(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<u32> = (1..=100).map(|ms| ms * 1000).collect();
        assert_eq!(percentile_ms(&samples, 0.50), 50.0);
        assert_eq!(percentile_ms(&samples, 0.99), 99.0);
        assert_eq!(percentile_ms(&samples, 1.0), 100.0);
        assert_eq!(percentile_ms(&[], 0.99), 0.0);
        assert_eq!(percentile_f64(&[1.0, 2.0, 3.0], 0.5), 2.0);
    }
}
