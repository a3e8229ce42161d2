//! The time-to-live workloads, which only LetheDB can run: sweep rate during a mass expiry,
//! deletion lag with spare capacity, point-read latency during a mass expiry, and expiry
//! accuracy seen by a client polling around each item's expiry instant.
//!
//! Physical deletion is invisible over the REST API (expired items are hidden whether or not
//! they were deleted), and LetheDB has no stats route yet, so deletions are read from the
//! sweeper's own log: each batch logs `swept expired items ... deleted=N backlog=M` at debug
//! level, after its transaction committed, with a microsecond timestamp. The sweeper deletes
//! in expiry-index order (oldest expiry first), so the k-th item to expire is the k-th deleted,
//! and its deletion instant is the timestamp of the batch that reached k.

use crate::cosmos::{Client, ContainerPaths, Endpoint};
use crate::data::{item_body, json_ts, unix_ms, DataSet, Rng};
use crate::load::load_items;
use crate::resources::{create_container, ensure_database, replace_default_ttl};
use crate::stats::{percentile_f64, round, Summary};
use crate::workload::{run, RunConfig, Workload};
use anyhow::{bail, Context as _};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The log filter that makes the sweeper report every batch.
pub const SWEEP_LOG_FILTER: &str = "info,lethedb_engine::sweeper=debug";
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

/// Waits until the sweeper has deleted `expected` items of `container`, and returns its
/// batches for that container.
async fn wait_for_deletions(
    log_path: &Path,
    container: &str,
    expected: u64,
) -> anyhow::Result<Vec<SweepBatch>> {
    let limit = Duration::from_secs_f64(expected as f64 / SWEEP_RATE_FLOOR) + SWEEP_WAIT_MARGIN;
    let started = Instant::now();
    loop {
        let log = std::fs::read_to_string(log_path).unwrap_or_default();
        let batches: Vec<SweepBatch> = parse_sweep_log(&log)
            .into_iter()
            .filter(|b| b.container == container)
            .collect();
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
fn deletion_instants(batches: &[SweepBatch], count: usize) -> Vec<f64> {
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

fn lag_json(mut lags_ms: Vec<f64>) -> Value {
    lags_ms.sort_by(f64::total_cmp);
    json!({
        "p50_ms": round(percentile_f64(&lags_ms, 0.50), 1),
        "p99_ms": round(percentile_f64(&lags_ms, 0.99), 1),
        "max_ms": round(lags_ms.last().copied().unwrap_or(0.0), 1),
    })
}

/// The shape of the mass-expiry workload.
#[derive(Clone, Debug)]
pub struct MassExpiryConfig {
    pub items: usize,
    pub item_bytes: usize,
    pub partitions: usize,
    pub seed: u64,
    pub load_clients: usize,
    /// Clients of the point-read load measured before and during the expiry; few enough to
    /// leave the server spare capacity.
    pub read_clients: usize,
    pub baseline: Duration,
}

/// What the mass-expiry workload measured.
pub struct MassExpiry {
    pub json: Value,
    pub sweep_rate_per_sec: f64,
    pub read_baseline: Summary,
    pub read_during: Summary,
}

/// Mass expiry: loads `items` items into a container whose `defaultTtl` is -1 (nothing
/// expires), then sets `defaultTtl` to 1 second once every item is older than that, so all of
/// them expire at the same instant (the replace). Measures how fast the sweeper deletes the
/// backlog, each item's deletion lag from that instant, and point-read latency on another
/// container before and during the sweep.
pub async fn mass_expiry(
    endpoint: &Arc<Endpoint>,
    log_path: &Path,
    config: &MassExpiryConfig,
) -> anyhow::Result<MassExpiry> {
    let mut client = Client::new(Arc::clone(endpoint));
    ensure_database(&mut client).await?;
    let container_id = format!("expiring{}", config.items);
    let expiring = create_container(&mut client, &container_id, Some(-1)).await?;
    let data = DataSet {
        items: config.items,
        partitions: config.partitions,
        item_bytes: config.item_bytes,
        seed: config.seed,
    };
    let load = load_items(
        endpoint,
        &expiring,
        &data,
        config.load_clients,
        Arc::new(|_| String::new()),
    )
    .await?;
    let read_config = RunConfig {
        clients: config.read_clients,
        warmup: Duration::from_millis(200),
        duration: config.baseline,
        page_items: 1,
        data: DataSet {
            items: 1000.min(config.items.max(10)),
            ..data.clone()
        },
    };
    let hot = crate::workload::prepare(endpoint, "hot", &read_config, config.load_clients).await?;
    let read_baseline = run(endpoint, &hot, Workload::PointRead, &read_config).await?;
    // Every item must be at least 1 s old when the setting changes, so that all of them expire
    // at the replace itself rather than over the following second.
    let last_write_ms = load.acked_ms.iter().copied().fold(0.0, f64::max);
    let wait_ms = (last_write_ms + 1100.0 - unix_ms()).max(0.0);
    tokio::time::sleep(Duration::from_secs_f64(wait_ms / 1000.0)).await;

    let stop_reads = Arc::new(AtomicBool::new(false));
    let reads = {
        let (endpoint, hot, read_config, stop_reads) = (
            Arc::clone(endpoint),
            hot.clone(),
            read_config.clone(),
            Arc::clone(&stop_reads),
        );
        tokio::spawn(async move { reads_until(&endpoint, &hot, &read_config, &stop_reads).await })
    };
    let expired_at_ms = unix_ms();
    replace_default_ttl(&mut client, &expiring, 1).await?;
    let replaced_ms = unix_ms();
    // Reads run for the first `baseline` of the sweep (the latency goal is about that); then the
    // server is left idle, which is what the sweep-rate goal is about.
    let stopper = {
        let (stop_reads, during) = (Arc::clone(&stop_reads), config.baseline);
        tokio::spawn(async move {
            tokio::time::sleep(during).await;
            stop_reads.store(true, Ordering::Relaxed);
            unix_ms()
        })
    };
    let waited = wait_for_deletions(log_path, &container_id, config.items as u64).await;
    stop_reads.store(true, Ordering::Relaxed);
    let reads_stopped_ms = if stopper.is_finished() {
        stopper.await?
    } else {
        stopper.abort();
        unix_ms()
    };
    let read_during = reads.await??;
    let batches = waited?;
    let instants = deletion_instants(&batches, config.items);
    let last_ms = instants.last().copied().unwrap_or(replaced_ms);
    let first_ms = instants.first().copied().unwrap_or(replaced_ms);
    let drain_secs = ((last_ms - expired_at_ms) / 1000.0).max(1e-9);
    let overall_rate_per_sec = config.items as f64 / drain_secs;
    // The idle rate: deletions after the reads stopped, over the time they took.
    let idle_deletions = instants.iter().filter(|&&at| at > reads_stopped_ms).count();
    let idle_secs = ((last_ms - reads_stopped_ms) / 1000.0).max(1e-9);
    let sweep_rate_per_sec = if idle_deletions > 0 {
        idle_deletions as f64 / idle_secs
    } else {
        overall_rate_per_sec
    };
    let lags = instants.iter().map(|d| d - expired_at_ms).collect();
    Ok(MassExpiry {
        json: json!({
            "items": config.items,
            "load_secs": round(load.elapsed.as_secs_f64(), 2),
            "load_items_per_sec": round(config.items as f64 / load.elapsed.as_secs_f64().max(1e-9), 0),
            "first_batch_after_ms": round(first_ms - expired_at_ms, 1),
            "drain_secs": round(drain_secs, 3),
            "sweep_rate_per_sec": round(sweep_rate_per_sec, 0),
            "sweep_rate_overall_per_sec": round(overall_rate_per_sec, 0),
            "idle_deletions": idle_deletions,
            "reads_during_secs": round((reads_stopped_ms - expired_at_ms) / 1000.0, 3),
            "batches": batches.len(),
            "deletion_lag_from_expiry": lag_json(lags),
            "read_baseline": read_baseline.to_json(),
            "read_during_expiry": read_during.to_json(),
        }),
        sweep_rate_per_sec,
        read_baseline,
        read_during,
    })
}

/// Closed-loop point reads until `stop` is set; the summary covers the whole time.
async fn reads_until(
    endpoint: &Arc<Endpoint>,
    paths: &ContainerPaths,
    config: &RunConfig,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<Summary> {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..config.clients.max(1) {
        let (endpoint, paths, data, stop) = (
            Arc::clone(endpoint),
            paths.clone(),
            config.data.clone(),
            Arc::clone(stop),
        );
        tasks.push(tokio::spawn(async move {
            let mut client = Client::new(endpoint);
            let mut rng = Rng::new(data.seed ^ (worker as u64 + 7));
            let mut recorder = crate::stats::Recorder::default();
            while !stop.load(Ordering::Relaxed) {
                let index = rng.below(data.items as u64) as usize;
                let (id, pk) = (data.id(index), data.pk(index));
                let sent = Instant::now();
                let outcome = client.read_item(&paths, &id, &pk).await;
                match outcome {
                    Ok(reply) if reply.status == 200 => recorder.record(sent.elapsed()),
                    Ok(reply) => recorder.error(
                        format!("status {}", reply.status),
                        String::from_utf8_lossy(&reply.body).into_owned(),
                    ),
                    Err(error) => recorder.error("transport".into(), format!("{error:#}")),
                }
            }
            recorder
        }));
    }
    let mut total = crate::stats::Recorder::default();
    for task in tasks {
        total.merge(task.await?);
    }
    Ok(total.summary(started.elapsed()))
}

/// The shape of the deletion-lag workload.
#[derive(Clone, Debug)]
pub struct LagConfig {
    pub items: usize,
    pub item_bytes: usize,
    pub partitions: usize,
    pub seed: u64,
    pub clients: usize,
    /// The item `ttl` in seconds.
    pub ttl_secs: u64,
}

/// Deletion lag with spare capacity: items with their own `ttl` expire at the rate they were
/// written (a steady stream, well below the sweep rate), and each item's lag is its deletion
/// instant minus its expiry instant. The expiry instant is taken as the send time plus the
/// ttl, which is at or before the true one (the server stamps the write after it arrives), so
/// the lag reported is an upper bound.
pub async fn deletion_lag(
    endpoint: &Arc<Endpoint>,
    log_path: &Path,
    config: &LagConfig,
) -> anyhow::Result<Value> {
    let mut client = Client::new(Arc::clone(endpoint));
    ensure_database(&mut client).await?;
    let container_id = "lag";
    let paths = create_container(&mut client, container_id, Some(-1)).await?;
    let data = DataSet {
        items: config.items,
        partitions: config.partitions,
        item_bytes: config.item_bytes,
        seed: config.seed,
    };
    let ttl_secs = config.ttl_secs;
    let load = load_items(
        endpoint,
        &paths,
        &data,
        config.clients,
        Arc::new(move |_| format!("\"ttl\":{ttl_secs},")),
    )
    .await?;
    let batches = wait_for_deletions(log_path, container_id, config.items as u64).await?;
    let mut expiries: Vec<f64> = load
        .sent_ms
        .iter()
        .map(|sent| sent + ttl_secs as f64 * 1000.0)
        .collect();
    expiries.sort_by(f64::total_cmp);
    let instants = deletion_instants(&batches, config.items);
    let lags: Vec<f64> = instants
        .iter()
        .zip(&expiries)
        .map(|(deleted, expired)| (deleted - expired).max(0.0))
        .collect();
    let expiry_rate = config.items as f64 / load.elapsed.as_secs_f64().max(1e-9);
    Ok(json!({
        "items": config.items,
        "ttl_secs": ttl_secs,
        "expiry_rate_per_sec": round(expiry_rate, 0),
        "batches": batches.len(),
        "deletion_lag": lag_json(lags),
    }))
}

/// The shape of the accuracy workload.
#[derive(Clone, Debug)]
pub struct AccuracyConfig {
    pub items: usize,
    pub seed: u64,
    /// How long before and after each expiry instant an item is polled.
    pub window: Duration,
    /// The pause between two polls of one item.
    pub poll_interval: Duration,
}

/// Counts of what the pollers saw, judged by the rule in [`accuracy`].
#[derive(Clone, Debug, Default)]
pub struct AccuracyCounts {
    pub reads: u64,
    /// 200 for a read sent at or after the latest possible expiry instant: an error.
    pub found_after_expiry: u64,
    /// 404 for a read answered before the earliest possible expiry instant: an error.
    pub missing_before_expiry: u64,
    /// Reads whose time span overlaps the expiry uncertainty: either answer is right.
    pub undecided: u64,
    pub other_errors: u64,
}

/// TTL accuracy: `items` items with `ttl` 1, 2 or 3 s are each polled every `poll_interval`
/// from `window` before to `window` after their expiry instant.
///
/// The rule. An item's expiry instant is `last_modified_ms + ttl * 1000`. The client does not
/// see `last_modified_ms`, only that it lies in `[max(sent, _ts * 1000), min(acked, _ts * 1000 +
/// 999)]` (`sent` and `acked` bracket the create; `_ts` is whole seconds), which gives an
/// earliest and latest expiry instant `[e_lo, e_hi]`. A read is handled by the server at some
/// instant in `[read sent, read answered]`, and the server judges with whole milliseconds
/// (`now_ms >= expiry`). So a 200 is certainly wrong when the read was sent at or after
/// `e_hi`, and a 404 is certainly wrong when it was answered before `e_lo`; every other read is
/// counted as undecided. Client and server read the same system clock.
pub async fn accuracy(
    endpoint: &Arc<Endpoint>,
    config: &AccuracyConfig,
) -> anyhow::Result<(AccuracyCounts, Value)> {
    let mut client = Client::new(Arc::clone(endpoint));
    ensure_database(&mut client).await?;
    let paths = create_container(&mut client, "accuracy", Some(-1)).await?;
    let mut rng = Rng::new(config.seed);
    let mut tasks = Vec::new();
    for index in 0..config.items {
        let ttl_secs = 1 + rng.below(3) as i64;
        let id = format!("a{index}");
        let pk = format!("p{}", index % 4);
        let body = item_body(&id, &pk, 0, &format!("\"ttl\":{ttl_secs},"), 256);
        let sent = unix_ms();
        let reply = client.create_item(&paths, &pk, body).await?;
        let acked = unix_ms();
        if reply.status != 201 {
            bail!("creating accuracy item {id}: {}", reply.status);
        }
        let ts_ms = json_ts(&reply.body) as f64 * 1000.0;
        let written_lo = sent.max(ts_ms);
        let written_hi = acked.min(ts_ms + 999.0);
        let (e_lo, e_hi) = (
            written_lo.floor() + (ttl_secs * 1000) as f64,
            written_hi.ceil() + (ttl_secs * 1000) as f64,
        );
        let (endpoint, paths, config) = (Arc::clone(endpoint), paths.clone(), config.clone());
        tasks.push(tokio::spawn(async move {
            poll_item(&endpoint, &paths, &id, &pk, e_lo, e_hi, &config).await
        }));
        // Spread the writes so expiry instants fall at different milliseconds of the second.
        tokio::time::sleep(Duration::from_millis(1 + rng.below(7))).await;
    }
    let mut counts = AccuracyCounts::default();
    for task in tasks {
        let item = task.await.context("a poller failed")??;
        counts.reads += item.reads;
        counts.found_after_expiry += item.found_after_expiry;
        counts.missing_before_expiry += item.missing_before_expiry;
        counts.undecided += item.undecided;
        counts.other_errors += item.other_errors;
    }
    let json = json!({
        "items": config.items,
        "reads": counts.reads,
        "found_at_or_after_expiry": counts.found_after_expiry,
        "missing_before_expiry": counts.missing_before_expiry,
        "undecided": counts.undecided,
        "other_errors": counts.other_errors,
    });
    Ok((counts, json))
}

async fn poll_item(
    endpoint: &Arc<Endpoint>,
    paths: &ContainerPaths,
    id: &str,
    pk: &str,
    e_lo: f64,
    e_hi: f64,
    config: &AccuracyConfig,
) -> anyhow::Result<AccuracyCounts> {
    let window_ms = config.window.as_secs_f64() * 1000.0;
    let start_ms = e_lo - window_ms;
    let wait = (start_ms - unix_ms()).max(0.0);
    tokio::time::sleep(Duration::from_secs_f64(wait / 1000.0)).await;
    let mut client = Client::new(Arc::clone(endpoint));
    let mut counts = AccuracyCounts::default();
    while unix_ms() < e_hi + window_ms {
        let sent = unix_ms();
        let reply = client.read_item(paths, id, pk).await;
        let answered = unix_ms();
        counts.reads += 1;
        match reply.map(|r| r.status) {
            Ok(200) if sent >= e_hi => counts.found_after_expiry += 1,
            Ok(404) if answered < e_lo => counts.missing_before_expiry += 1,
            Ok(200) if answered < e_lo => {}
            Ok(404) if sent >= e_hi => {}
            Ok(200) | Ok(404) => counts.undecided += 1,
            _ => counts.other_errors += 1,
        }
        tokio::time::sleep(config.poll_interval).await;
    }
    Ok(counts)
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
