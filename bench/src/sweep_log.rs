//! The sweeper's log as a measuring instrument: which batches it committed, when, and how many
//! items each deleted.
//!
//! Physical deletion is invisible over the REST API (expired items are hidden whether or not
//! they were deleted), so deletions are read from the sweeper's own log: each batch logs
//! `swept expired items ... deleted=N backlog=M` at debug level, after its transaction
//! committed, with a microsecond timestamp. This module parses those lines and waits for them;
//! it sends no requests.

use anyhow::bail;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The log filter that makes the sweeper report every batch.
pub const SWEEP_LOG_FILTER: &str = "info,lethedb_engine::ttl::sweeper=debug";
/// How often the sweeper's log is re-read while waiting for deletions.
const LOG_POLL_INTERVAL: Duration = Duration::from_millis(20);
/// The slowest sweep rate waited for before giving up (items per second), plus a fixed margin:
/// far below any target, so only a stuck sweeper times out.
const SWEEP_RATE_FLOOR: f64 = 500.0;
const SWEEP_WAIT_MARGIN: Duration = Duration::from_secs(30);

/// One sweeper batch from the log.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepBatch {
    pub at_ms: f64,
    pub container: String,
    pub deleted: u64,
    pub backlog: u64,
}

/// Parses the sweeper's batch lines out of a LetheDB log (ANSI colours tolerated).
pub fn parse_sweep_log(log: &str) -> Vec<SweepBatch> {
    log.lines()
        .filter(|line| line.contains("swept expired items"))
        .filter_map(|line| {
            let line = strip_ansi(line);
            let at_ms = parse_rfc3339_ms(line.split_whitespace().next()?)?;
            let field = |name: &str| {
                line.split_whitespace()
                    .find_map(|word| word.strip_prefix(name))
                    .map(str::to_string)
            };
            Some(SweepBatch {
                at_ms,
                container: field("container=")?,
                deleted: field("deleted=")?.parse().ok()?,
                backlog: field("backlog=")?.parse().ok()?,
            })
        })
        .collect()
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `2026-11-01T12:34:56.123456Z` as Unix milliseconds.
pub fn parse_rfc3339_ms(text: &str) -> Option<f64> {
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let mut date_parts = date.split('-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (
        date_parts.next()??,
        date_parts.next()??,
        date_parts.next()??,
    );
    let mut time_parts = time.split(':');
    let hour: i64 = time_parts.next()?.parse().ok()?;
    let minute: i64 = time_parts.next()?.parse().ok()?;
    let seconds: f64 = time_parts.next()?.parse().ok()?;
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + hour * 3600 + minute * 60) as f64 + seconds) * 1000.0)
}

/// Waits until the sweepers writing `log_paths` (one log per server sharing the store) have
/// deleted `expected` items of `container` between them, and returns their batches for that
/// container in time order. A batch counts only items its own transaction deleted, so batches
/// of several sweepers that raced for the same items add up to the items actually removed.
pub async fn wait_for_deletions(
    log_paths: &[PathBuf],
    container: &str,
    expected: u64,
) -> anyhow::Result<Vec<SweepBatch>> {
    let limit = Duration::from_secs_f64(expected as f64 / SWEEP_RATE_FLOOR) + SWEEP_WAIT_MARGIN;
    let started = Instant::now();
    loop {
        let mut batches: Vec<SweepBatch> = log_paths
            .iter()
            .flat_map(|path| parse_sweep_log(&std::fs::read_to_string(path).unwrap_or_default()))
            .filter(|b| b.container == container)
            .collect();
        batches.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
        let deleted: u64 = batches.iter().map(|b| b.deleted).sum();
        if deleted >= expected {
            return Ok(batches);
        }
        if started.elapsed() > limit {
            bail!(
                "the sweeper deleted {deleted} of {expected} items of {container} within {limit:?}"
            );
        }
        tokio::time::sleep(LOG_POLL_INTERVAL).await;
    }
}

/// The deletion instant of each of `count` items in deletion order, from the batches.
pub fn deletion_instants(batches: &[SweepBatch], count: usize) -> Vec<f64> {
    let mut instants = Vec::with_capacity(count);
    for batch in batches {
        for _ in 0..batch.deleted {
            if instants.len() < count {
                instants.push(batch.at_ms);
            }
        }
    }
    instants
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_lines_parse_with_and_without_colour() {
        let plain = "2026-11-01T00:00:01.500000Z DEBUG swept expired items database=bench container=lag deleted=2000 backlog=10";
        let coloured = "\u{1b}[2m2026-11-01T00:00:01.500000Z\u{1b}[0m \u{1b}[34mDEBUG\u{1b}[0m swept expired items \u{1b}[3mdatabase\u{1b}[0m\u{1b}[2m=\u{1b}[0mbench \u{1b}[3mcontainer\u{1b}[0m\u{1b}[2m=\u{1b}[0mlag \u{1b}[3mdeleted\u{1b}[0m\u{1b}[2m=\u{1b}[0m2000 \u{1b}[3mbacklog\u{1b}[0m\u{1b}[2m=\u{1b}[0m10";
        let expected = SweepBatch {
            at_ms: 1_793_491_201_500.0,
            container: "lag".into(),
            deleted: 2000,
            backlog: 10,
        };
        assert_eq!(parse_sweep_log(plain), vec![expected.clone()]);
        assert_eq!(parse_sweep_log(coloured), vec![expected]);
    }

    #[test]
    fn rfc3339_is_unix_milliseconds() {
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:00.001000Z"), Some(1.0));
        assert_eq!(
            parse_rfc3339_ms("2000-03-01T00:00:00Z"),
            Some(951_868_800_000.0)
        );
    }

    #[test]
    fn deletion_instants_follow_batches() {
        let batch = |at_ms, deleted| SweepBatch {
            at_ms,
            container: "c".into(),
            deleted,
            backlog: 0,
        };
        assert_eq!(
            deletion_instants(&[batch(10.0, 2), batch(20.0, 1)], 3),
            vec![10.0, 10.0, 20.0]
        );
    }
}
