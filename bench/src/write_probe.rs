//! What a write workload cost the server beyond its operations per second: its writer lanes,
//! writes per durable commit and commits per second over the measured run only (LetheDB's
//! `/_lethedb/stats`), the
//! bytes the server process wrote to storage per write (`write_bytes` of `/proc/PID/io`, which
//! counts every thread, the store's syncs and background flushes included), and how much its
//! resident set grew per write.
//!
//! It takes two snapshots around a run and subtracts them; it starts nothing and judges nothing.
//! Linux only: elsewhere the `/proc` figures are absent.

use crate::cosmos::{Client, Endpoint};
use crate::server_snapshot::get_json;
use crate::servers::{bytes_written, memory};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;

/// The server's counters at one instant.
pub struct WriteProbe {
    at: Instant,
    /// Writer operations and commits so far (LetheDB only).
    writer: Option<(f64, f64)>,
    /// The writer's lanes (LetheDB only).
    lanes: Option<u64>,
    /// The redb store's flusher so far: flushes, milliseconds writing, commits that waited for
    /// it and milliseconds they waited.
    flusher: Option<[f64; 4]>,
    write_bytes: Option<u64>,
    rss_bytes: u64,
}

/// The difference between two probes, per write of the run.
#[derive(Clone, Debug)]
pub struct WriteFigures {
    pub lanes: Option<u64>,
    pub writes_per_commit: Option<f64>,
    pub commits_per_sec: Option<f64>,
    pub bytes_written_per_write: Option<f64>,
    /// Resident set growth per write (negative when the run freed more than it kept).
    pub rss_bytes_per_write: f64,
    /// What the redb store's flusher did in the run.
    pub flusher: Option<FlusherFigures>,
}

/// The redb store's flusher over a run.
#[derive(Clone, Debug, PartialEq)]
pub struct FlusherFigures {
    pub flushes: f64,
    /// The share of the run's time the flusher spent writing.
    pub busy_share: f64,
    /// Commits that waited for it, and the milliseconds they waited.
    pub writer_waits: f64,
    pub writer_wait_ms: f64,
}

impl WriteProbe {
    /// Reads the counters of the server `pid`, and its writer's through `endpoint` when it is
    /// LetheDB.
    pub async fn take(endpoint: &Arc<Endpoint>, pid: u32, lethedb: bool) -> WriteProbe {
        let stats = if lethedb {
            let mut client = Client::new(Arc::clone(endpoint));
            get_json(&mut client, "/_lethedb/stats").await.ok()
        } else {
            None
        };
        let writer = stats.as_ref().map(|stats| &stats["writer"]);
        WriteProbe {
            at: Instant::now(),
            writer: writer.and_then(|writer| {
                Some((writer["operations"].as_f64()?, writer["commits"].as_f64()?))
            }),
            lanes: writer.and_then(|writer| writer["lanes"].as_u64()),
            flusher: stats.as_ref().and_then(flusher_so_far),
            write_bytes: bytes_written(pid),
            rss_bytes: memory(pid).rss_bytes,
        }
    }

    /// What happened between `self` and `later`, over `writes` writes; `None` for none.
    pub fn figures(&self, later: &WriteProbe, writes: u64) -> Option<WriteFigures> {
        if writes == 0 {
            return None;
        }
        let per_write = |amount: f64| amount / writes as f64;
        let secs = later.at.duration_since(self.at).as_secs_f64().max(1e-9);
        let (operations, commits) = match (self.writer, later.writer) {
            (Some((ops_before, commits_before)), Some((ops_after, commits_after))) => (
                Some(ops_after - ops_before),
                Some(commits_after - commits_before),
            ),
            _ => (None, None),
        };
        Some(WriteFigures {
            lanes: self.lanes.and(later.lanes),
            writes_per_commit: operations
                .zip(commits)
                .filter(|(_, commits)| *commits > 0.0)
                .map(|(operations, commits)| operations / commits),
            commits_per_sec: commits.map(|commits| commits / secs),
            bytes_written_per_write: self
                .write_bytes
                .zip(later.write_bytes)
                .map(|(before, after)| per_write(after.saturating_sub(before) as f64)),
            rss_bytes_per_write: per_write(later.rss_bytes as f64 - self.rss_bytes as f64),
            flusher: self.flusher.zip(later.flusher).map(|(before, after)| {
                let change = |slot: usize| after[slot] - before[slot];
                FlusherFigures {
                    flushes: change(0),
                    busy_share: change(1) / 1000.0 / secs,
                    writer_waits: change(2),
                    writer_wait_ms: change(3),
                }
            }),
        })
    }
}

/// The redb store's flusher so far, from `store` in LetheDB's `/_lethedb/stats` (absent on
/// the other stores): flushes, milliseconds writing, commits that waited and their milliseconds.
fn flusher_so_far(stats: &Value) -> Option<[f64; 4]> {
    let store = &stats["store"];
    Some([
        store["flushes"].as_f64()?,
        store["flushBusyMs"].as_f64()?,
        store["writerWaits"].as_f64()?,
        store["writerWaitMs"].as_f64()?,
    ])
}

impl WriteFigures {
    pub fn to_json(&self) -> Value {
        let rounded = |value: Option<f64>| value.map(|value| (value * 10.0).round() / 10.0);
        json!({
            "lanes": self.lanes,
            "writes_per_commit": rounded(self.writes_per_commit),
            "commits_per_sec": rounded(self.commits_per_sec),
            "bytes_written_per_write": rounded(self.bytes_written_per_write),
            "rss_bytes_per_write": rounded(Some(self.rss_bytes_per_write)),
            "flusher": self.flusher.as_ref().map(|flusher| json!({
                "flushes": flusher.flushes,
                "busy_share": (flusher.busy_share * 1000.0).round() / 1000.0,
                "writer_waits": flusher.writer_waits,
                "writer_wait_ms": rounded(Some(flusher.writer_wait_ms)),
            })),
        })
    }

    /// The figures as a note in a report's table row.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(lanes) = self.lanes {
            parts.push(format!(
                "{lanes} writer lane{}",
                if lanes == 1 { "" } else { "s" }
            ));
        }
        if let Some(per_commit) = self.writes_per_commit {
            parts.push(format!("{per_commit:.1} writes per commit"));
        }
        if let Some(commits) = self.commits_per_sec {
            parts.push(format!("{commits:.0} commits/s"));
        }
        if let Some(bytes) = self.bytes_written_per_write {
            parts.push(format!("{bytes:.0} B written per write"));
        }
        parts.push(format!("RSS {:+.0} B per write", self.rss_bytes_per_write));
        if let Some(flusher) = &self.flusher {
            parts.push(format!(
                "flusher busy {:.0}% of the run ({:.0} flushes), {:.0} commits waited {:.0} ms for it",
                flusher.busy_share * 100.0,
                flusher.flushes,
                flusher.writer_waits,
                flusher.writer_wait_ms
            ));
        }
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn figures_are_the_differences_per_write_of_the_run() {
        let start = Instant::now();
        let before = WriteProbe {
            at: start,
            writer: Some((100.0, 10.0)),
            lanes: Some(2),
            flusher: Some([3.0, 100.0, 0.0, 0.0]),
            write_bytes: Some(1_000),
            rss_bytes: 50_000,
        };
        let after = WriteProbe {
            at: start + Duration::from_secs(2),
            writer: Some((1_100.0, 60.0)),
            lanes: Some(2),
            flusher: Some([7.0, 600.0, 2.0, 30.0]),
            write_bytes: Some(4_001_000),
            rss_bytes: 2_050_000,
        };
        let figures = before.figures(&after, 1_000).expect("figures");
        assert_eq!(figures.lanes, Some(2));
        assert_eq!(figures.writes_per_commit, Some(20.0));
        assert_eq!(figures.commits_per_sec, Some(25.0));
        assert_eq!(figures.bytes_written_per_write, Some(4_000.0));
        assert_eq!(figures.rss_bytes_per_write, 2_000.0);
        let flusher = figures.flusher.clone().expect("flusher");
        assert_eq!(flusher.flushes, 4.0);
        assert_eq!(flusher.busy_share, 0.25);
        assert_eq!((flusher.writer_waits, flusher.writer_wait_ms), (2.0, 30.0));
        let described = figures.describe();
        assert!(described.starts_with("2 writer lanes, 20.0 writes per commit"));
        assert!(described
            .ends_with("flusher busy 25% of the run (4 flushes), 2 commits waited 30 ms for it"));
        assert!(before.figures(&after, 0).is_none());
        let peer = WriteProbe {
            writer: None,
            lanes: None,
            flusher: None,
            write_bytes: None,
            ..before
        };
        let figures = peer.figures(&after, 10).expect("figures");
        assert_eq!(figures.writes_per_commit, None);
        assert_eq!(figures.bytes_written_per_write, None);
        assert_eq!(figures.describe(), "RSS +200000 B per write");
    }

    #[test]
    fn the_flusher_is_read_from_the_statistics_the_redb_store_answers() {
        // The shape of `/_lethedb/stats` (`handlers/internal.rs`) on the redb store.
        let stats = json!({
            "writer": {"operations": 1, "commits": 1, "queued": 0, "lanes": 1},
            "store": {"flushes": 3, "checkpoints": 1, "flushBusyMs": 12.5, "writerWaits": 1, "writerWaitMs": 0.25},
            "containers": [],
            "poisoned": null,
        });
        assert_eq!(flusher_so_far(&stats), Some([3.0, 12.5, 1.0, 0.25]));
        let in_memory = json!({"writer": {"operations": 0}, "containers": []});
        assert_eq!(flusher_so_far(&in_memory), None);
    }

    #[test]
    fn write_bytes_are_read_from_proc() {
        assert!(bytes_written(std::process::id()).is_some());
    }
}
