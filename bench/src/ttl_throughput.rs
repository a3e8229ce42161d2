//! Mass expiry under provisioned throughput (issue 5), LetheDB only: do users of a container
//! running at 80% of its RU/s notice that a million of its items expire at once, and does the
//! sweeper delete at the rate the leftover 20% pays for?
//!
//! Two containers get the same manual throughput `R`. Both are loaded under a large temporary
//! throughput (loading at `R` would take as long as `R` allows) and then set to `R` through
//! their offers. One holds only the items the users read; the other holds the same readable
//! items (`"ttl": -1`) plus the expiring ones. Phase A reads the first container at a fixed rate
//! worth `load × R` RU/s; then the second container's `defaultTtl` becomes 1 s, so every
//! expiring item expires at that instant, and phase B reads it at the same rate while the
//! sweeper drains the backlog. Each phase reports open-loop latency (429s counted, not retried)
//! and phase B the deletion rate, from `ttlDeletedTotal` in `/_lethedb/stats`, against the rate
//! the leftover budget pays for: `(R − user RU/s) / cost of one delete`, the delete's cost being
//! measured, as the server charges it, on a probe item of the same size.
//!
//! `/metrics` (429s and RUs per container, the server-side read latency histogram) and the
//! server's CPU time per thread (`/proc`) are read around each phase, to say what limits a phase
//! rather than guess. This module starts no server.

use crate::cosmos::{Client, ContainerPaths, Endpoint};
use crate::data::{item_body, unix_ms, DataSet};
use crate::load::load_item_range;
use crate::open_loop::{self, OpenLoopConfig, OpenLoopSummary};
use crate::resources::{
    create_container_with_throughput, ensure_database, replace_default_ttl, replace_throughput,
};
use crate::server_snapshot::{get_json, Snapshot};
use crate::stats::round;
use anyhow::bail;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The throughput both containers are loaded under before being set to the measured one: the
/// largest the server allows, so loading is never throttled.
const LOADING_THROUGHPUT_RU: u32 = 1_000_000;
/// How often `/_lethedb/stats` is read during phase B.
const STATS_POLL_INTERVAL: Duration = Duration::from_millis(250);
/// The container whose items are read in phase A.
const BASELINE_CONTAINER: &str = "throughput-baseline";
/// The container whose items expire in phase B.
const EXPIRING_CONTAINER: &str = "throughput-expiring";
/// Item indices, and so ids (`i{index}`), of the items users read and of the expiring ones.
/// Every id has seven digits, so ids sort as their numbers do and the readable items sit
/// together, before the expiring ones, in each partition of both containers: the two phases
/// read the same layout.
const READER_FIRST_INDEX: usize = 1_000_000;
const EXPIRING_FIRST_INDEX: usize = 2_000_000;
const INDEX_END: usize = 10_000_000;
/// The users' share of the provisioned throughput.
pub const USER_LOAD: f64 = 0.8;
/// The p99 ratio (phase B over phase A) the goal allows.
pub const P99_RATIO_MAX: f64 = 1.1;
/// How much the share of 429s may grow from phase A to B (absolute, as a fraction of requests).
pub const THROTTLED_INCREASE_MAX: f64 = 0.001;
/// CPU seconds per second, taken by other processes or the hypervisor during a phase, above
/// which the latency comparison is flagged as disturbed.
pub const DISTURBANCE_CPU_MAX: f64 = 0.05;
/// How far the deletion rate may be from the rate the leftover budget pays for.
pub const DELETION_RATE_TOLERANCE: f64 = 0.1;

/// The shape of the workload.
#[derive(Clone, Debug)]
pub struct ThroughputConfig {
    /// Manual RU/s of both containers.
    pub throughput_ru: u32,
    /// The users' share of it (0.8).
    pub user_load: f64,
    pub expiring_items: usize,
    /// Items the users read, in each container.
    pub reader_items: usize,
    pub item_bytes: usize,
    pub partitions: usize,
    pub seed: u64,
    pub load_clients: usize,
    /// Connections of the open-loop readers.
    pub connections: usize,
    pub warmup: Duration,
    /// Seconds each phase is measured.
    pub duration: Duration,
    /// The server's process id, for its CPU time.
    pub server_pid: Option<u32>,
    /// The server's log, written with [`crate::sweep_log::SWEEP_LOG_FILTER`]: the sweeper's batches.
    pub server_log: Option<std::path::PathBuf>,
}

/// What the workload measured.
pub struct TtlThroughput {
    pub json: Value,
    pub baseline: OpenLoopSummary,
    pub during: OpenLoopSummary,
    pub deletions_per_sec: f64,
    pub expected_deletions_per_sec: f64,
}

/// Runs both phases against a running LetheDB.
pub async fn ttl_under_throughput(
    endpoint: &Arc<Endpoint>,
    config: &ThroughputConfig,
) -> anyhow::Result<TtlThroughput> {
    check_layout(config)?;
    let mut client = Client::new(Arc::clone(endpoint));
    let loaded = load_containers(endpoint, &mut client, config).await?;
    let rate_per_sec =
        config.user_load * f64::from(config.throughput_ru) / loaded.read_charge_ru.max(1e-9);
    let open_loop = OpenLoopConfig {
        rate_per_sec,
        connections: config.connections,
        warmup: config.warmup,
        duration: config.duration,
        first_item: READER_FIRST_INDEX,
        data: loaded.readers.clone(),
    };

    let before_a = Snapshot::take(&mut client, config.server_pid).await?;
    let phase_a = open_loop::point_reads(endpoint, &loaded.baseline, &open_loop).await?;
    let after_a = Snapshot::take(&mut client, config.server_pid).await?;
    let phase_b = expire_while_reading(endpoint, &mut client, config, &loaded, &open_loop).await?;

    let user_ru_per_sec = phase_b.reads.charge_ru_per_sec();
    let expected_deletions_per_sec = (f64::from(config.throughput_ru) - user_ru_per_sec).max(0.0)
        / loaded.delete_charge_ru.max(1e-9);
    let (deletions_per_sec, deletions) = phase_b.deletions_json(config, expected_deletions_per_sec);
    let phase_json = |summary: &OpenLoopSummary, before: &Snapshot, after: &Snapshot, container| {
        let mut value = summary.to_json();
        value["server"] = after.delta_json(before, container);
        value
    };
    let load_secs = loaded.load_secs;
    let json = json!({
        "throughput_ru": config.throughput_ru,
        "user_load": config.user_load,
        "expiring_items": config.expiring_items,
        "reader_items": config.reader_items,
        "item_bytes": config.item_bytes,
        "load_secs": round(load_secs, 2),
        "load_items_per_sec": round(config.expiring_items as f64 / load_secs.max(1e-9), 0),
        "read_charge_ru": loaded.read_charge_ru,
        "delete_charge_ru": loaded.delete_charge_ru,
        "rate_per_sec": round(rate_per_sec, 1),
        "connections": config.connections,
        "warmup_secs": config.warmup.as_secs_f64(),
        "duration_secs": config.duration.as_secs_f64(),
        "baseline": phase_json(&phase_a, &before_a, &after_a, BASELINE_CONTAINER),
        "during_expiry": phase_json(&phase_b.reads, &phase_b.before, &phase_b.after, EXPIRING_CONTAINER),
        "deletions": deletions,
        "p99_ratio": round(phase_b.reads.reads.p99_ms / phase_a.reads.p99_ms.max(1e-9), 3),
        "p50_ratio": round(phase_b.reads.reads.p50_ms / phase_a.reads.p50_ms.max(1e-9), 3),
    });
    Ok(TtlThroughput {
        json,
        baseline: phase_a,
        during: phase_b.reads,
        deletions_per_sec,
        expected_deletions_per_sec,
    })
}

/// Refuses item counts whose ids would not fit their ranges of indices.
fn check_layout(config: &ThroughputConfig) -> anyhow::Result<()> {
    if config.reader_items == 0
        || READER_FIRST_INDEX + config.reader_items > EXPIRING_FIRST_INDEX
        || EXPIRING_FIRST_INDEX + config.expiring_items > INDEX_END
    {
        bail!(
            "ttl under throughput takes 1 to {} readable and at most {} expiring items",
            EXPIRING_FIRST_INDEX - READER_FIRST_INDEX,
            INDEX_END - EXPIRING_FIRST_INDEX
        );
    }
    Ok(())
}

/// Both containers, loaded and set to the measured throughput, with the charges measured on
/// them.
struct Loaded {
    baseline: ContainerPaths,
    expiring: ContainerPaths,
    readers: DataSet,
    load_secs: f64,
    /// When the last expiring item was acknowledged (Unix ms).
    last_write_ms: f64,
    read_charge_ru: f64,
    delete_charge_ru: f64,
}

/// Creates both containers under [`LOADING_THROUGHPUT_RU`], loads the readable items into both
/// and the expiring ones into the second, probes the charges of a read and a delete, and sets
/// both containers to the measured throughput.
async fn load_containers(
    endpoint: &Arc<Endpoint>,
    client: &mut Client,
    config: &ThroughputConfig,
) -> anyhow::Result<Loaded> {
    ensure_database(client).await?;
    let baseline = create_container_with_throughput(
        client,
        BASELINE_CONTAINER,
        Some(-1),
        Some(LOADING_THROUGHPUT_RU),
    )
    .await?;
    let expiring = create_container_with_throughput(
        client,
        EXPIRING_CONTAINER,
        Some(-1),
        Some(LOADING_THROUGHPUT_RU),
    )
    .await?;
    let readers = DataSet {
        items: config.reader_items,
        partitions: config.partitions,
        item_bytes: config.item_bytes,
        seed: config.seed,
    };
    let reader_indices = READER_FIRST_INDEX..READER_FIRST_INDEX + config.reader_items;
    let never_expire: Arc<dyn Fn(usize) -> String + Send + Sync> =
        Arc::new(|_| "\"ttl\":-1,".to_string());
    for paths in [&baseline, &expiring] {
        load_item_range(
            endpoint,
            paths,
            &readers,
            reader_indices.clone(),
            config.load_clients,
            Arc::clone(&never_expire),
        )
        .await?;
    }
    // These take the container's default once it is set.
    let load = load_item_range(
        endpoint,
        &expiring,
        &readers,
        EXPIRING_FIRST_INDEX..EXPIRING_FIRST_INDEX + config.expiring_items,
        config.load_clients,
        Arc::new(|_| String::new()),
    )
    .await?;
    let (first_id, first_pk) = (
        readers.id(READER_FIRST_INDEX),
        readers.pk(READER_FIRST_INDEX),
    );
    let read_charge_ru = probe_read(client, &baseline, &first_id, &first_pk).await?;
    let delete_charge_ru = probe_delete(client, &baseline, config.item_bytes).await?;
    replace_throughput(client, &baseline, config.throughput_ru).await?;
    replace_throughput(client, &expiring, config.throughput_ru).await?;
    // Let the budgets start from a second without loading in it.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    Ok(Loaded {
        baseline,
        expiring,
        readers,
        load_secs: load.elapsed.as_secs_f64(),
        last_write_ms: load.acked_ms.iter().copied().fold(0.0, f64::max),
        read_charge_ru,
        delete_charge_ru,
    })
}

/// Phase B: the users' reads while the expiring items expire, with the sweeper's counters
/// polled alongside.
struct ExpiryPhase {
    reads: OpenLoopSummary,
    before: Snapshot,
    after: Snapshot,
    samples: Vec<DeletionSample>,
    /// When the default TTL became 1 s.
    expired_at: Instant,
    /// When the open-loop run was called, as an instant and in Unix ms.
    started: Instant,
    started_ms: f64,
}

/// Waits until every expiring item is at least 1 s old, sets the expiring container's default
/// TTL to 1 s, so all of them expire at that instant, and reads that container meanwhile.
async fn expire_while_reading(
    endpoint: &Arc<Endpoint>,
    client: &mut Client,
    config: &ThroughputConfig,
    loaded: &Loaded,
    open_loop: &OpenLoopConfig,
) -> anyhow::Result<ExpiryPhase> {
    let wait_ms = (loaded.last_write_ms + 1100.0 - unix_ms()).max(0.0);
    tokio::time::sleep(Duration::from_secs_f64(wait_ms / 1000.0)).await;
    // Taken before the expiry: a scrape reads each container's item count, which walks the
    // expired backlog.
    let before = Snapshot::take(client, config.server_pid).await?;
    replace_default_ttl(client, &loaded.expiring, 1).await?;
    let expired_at = Instant::now();

    let stop_polling = Arc::new(AtomicBool::new(false));
    let poller = {
        let (endpoint, stop) = (Arc::clone(endpoint), Arc::clone(&stop_polling));
        tokio::spawn(async move { poll_deletions(endpoint, EXPIRING_CONTAINER, stop).await })
    };
    let started = Instant::now();
    let started_ms = unix_ms();
    let reads = open_loop::point_reads(endpoint, &loaded.expiring, open_loop).await;
    let after = Snapshot::take(client, config.server_pid).await;
    stop_polling.store(true, Ordering::Relaxed);
    let samples = poller.await??;
    Ok(ExpiryPhase {
        reads: reads?,
        before,
        after: after?,
        samples,
        expired_at,
        started,
        started_ms,
    })
}

impl ExpiryPhase {
    /// The deletion rate within the measured window, and the `deletions` section of the report.
    fn deletions_json(&self, config: &ThroughputConfig, expected_per_sec: f64) -> (f64, Value) {
        // The measured window, as the open-loop run laid it out (it starts 20 ms after it is
        // called).
        let window_from = self.started + Duration::from_millis(20) + config.warmup;
        let window_to = window_from + config.duration;
        let in_window: Vec<&DeletionSample> = self
            .samples
            .iter()
            .filter(|s| s.at >= window_from && s.at <= window_to + STATS_POLL_INTERVAL)
            .collect();
        let (per_sec, deleted_in_window) = match (in_window.first(), in_window.last()) {
            (Some(first), Some(last)) if last.at > first.at => {
                let deleted = last.deleted_total.saturating_sub(first.deleted_total);
                (deleted as f64 / (last.at - first.at).as_secs_f64(), deleted)
            }
            _ => (0.0, 0),
        };
        let per_second = per_second_rates(&in_window);
        let first_deletion_after_ms = self.samples.iter().find(|s| s.deleted_total > 0).map(|s| {
            s.at.saturating_duration_since(self.expired_at)
                .as_secs_f64()
                * 1000.0
        });
        let window_from_ms = self.started_ms + 20.0 + config.warmup.as_secs_f64() * 1000.0;
        let batches = config.server_log.as_deref().map(|log| {
            sweeper_batches(
                log,
                window_from_ms,
                window_from_ms + config.duration.as_secs_f64() * 1000.0,
            )
        });
        let json = json!({
            "per_sec": round(per_sec, 1),
            "expected_per_sec": round(expected_per_sec, 1),
            "ratio_to_expected": round(per_sec / expected_per_sec.max(1e-9), 3),
            "deleted_in_window": deleted_in_window,
            "per_second_min": round(per_second.first().copied().unwrap_or(0.0), 1),
            "per_second_median": round(per_second.get(per_second.len() / 2).copied().unwrap_or(0.0), 1),
            "per_second_max": round(per_second.last().copied().unwrap_or(0.0), 1),
            "first_deletion_after_ms": first_deletion_after_ms.map(|ms| round(ms, 0)),
            "backlog_at_end": self.samples.last().map_or(0, |s| s.backlog_items),
            "deleted_total_at_end": self.samples.last().map_or(0, |s| s.deleted_total),
            "sweeper_batches": batches,
        });
        (per_sec, json)
    }
}

/// The sweeper's batches on the expiring container within `[from_ms, to_ms]` (Unix ms), from
/// its log: how many, how large, and the longest time without one.
fn sweeper_batches(log: &std::path::Path, from_ms: f64, to_ms: f64) -> Value {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let batches: Vec<crate::sweep_log::SweepBatch> = crate::sweep_log::parse_sweep_log(&text)
        .into_iter()
        .filter(|b| b.container == EXPIRING_CONTAINER && b.at_ms >= from_ms && b.at_ms <= to_ms)
        .collect();
    let mut sizes: Vec<u64> = batches.iter().map(|b| b.deleted).collect();
    sizes.sort_unstable();
    let mut instants = vec![from_ms];
    instants.extend(batches.iter().map(|b| b.at_ms));
    instants.push(to_ms);
    let longest_gap_ms = instants
        .windows(2)
        .map(|pair| pair[1] - pair[0])
        .fold(0.0, f64::max);
    let deleted: u64 = batches.iter().map(|b| b.deleted).sum();
    json!({
        "count": batches.len(),
        "deleted_per_sec": round(deleted as f64 / ((to_ms - from_ms) / 1000.0).max(1e-9), 1),
        "items_median": sizes.get(sizes.len() / 2).copied().unwrap_or(0),
        "items_max": sizes.last().copied().unwrap_or(0),
        "longest_gap_ms": round(longest_gap_ms, 0),
    })
}

/// Reads one reader item and returns its charge: the RUs one user read costs.
async fn probe_read(
    client: &mut Client,
    paths: &ContainerPaths,
    id: &str,
    pk: &str,
) -> anyhow::Result<f64> {
    let reply = client.read_item(paths, id, pk).await?;
    if reply.status != 200 || reply.request_charge <= 0.0 {
        bail!(
            "probe read: {} (charge {})",
            reply.status,
            reply.request_charge
        );
    }
    Ok(reply.request_charge)
}

/// Creates and deletes an item the size of the expiring ones and returns the delete's charge:
/// what the server charges the sweeper for each of them.
async fn probe_delete(
    client: &mut Client,
    paths: &ContainerPaths,
    item_bytes: usize,
) -> anyhow::Result<f64> {
    let (id, pk) = ("probe-delete", "probe");
    let reply = client
        .create_item(paths, pk, item_body(id, pk, 0, "", item_bytes))
        .await?;
    if reply.status != 201 {
        bail!("probe create: {}", reply.status);
    }
    let reply = client.delete_item(paths, id, pk).await?;
    if reply.status != 204 || reply.request_charge <= 0.0 {
        bail!(
            "probe delete: {} (charge {})",
            reply.status,
            reply.request_charge
        );
    }
    Ok(reply.request_charge)
}

/// One reading of the sweeper's counters for a container.
struct DeletionSample {
    at: Instant,
    deleted_total: u64,
    backlog_items: u64,
}

/// Reads `/_lethedb/stats` every [`STATS_POLL_INTERVAL`] until `stop` is set.
async fn poll_deletions(
    endpoint: Arc<Endpoint>,
    container: &str,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<Vec<DeletionSample>> {
    let mut client = Client::new(endpoint);
    let mut samples = Vec::new();
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let stats = get_json(&mut client, "/_lethedb/stats").await?;
        let at = Instant::now();
        let entry = stats["containers"]
            .as_array()
            .and_then(|all| all.iter().find(|c| c["container"] == container));
        samples.push(DeletionSample {
            at,
            deleted_total: entry
                .and_then(|c| c["ttlDeletedTotal"].as_u64())
                .unwrap_or(0),
            backlog_items: entry
                .and_then(|c| c["ttlBacklogItems"].as_u64())
                .unwrap_or(0),
        });
        next += STATS_POLL_INTERVAL;
        tokio::time::sleep_until(tokio::time::Instant::from_std(next)).await;
    }
    Ok(samples)
}

/// Deletions per second over consecutive whole seconds of the samples, sorted.
fn per_second_rates(samples: &[&DeletionSample]) -> Vec<f64> {
    let Some(first) = samples.first() else {
        return Vec::new();
    };
    let mut rates = Vec::new();
    let mut from = first;
    for sample in samples {
        let span = sample.at.saturating_duration_since(from.at).as_secs_f64();
        if span >= 1.0 {
            rates.push(sample.deleted_total.saturating_sub(from.deleted_total) as f64 / span);
            from = sample;
        }
    }
    rates.sort_by(f64::total_cmp);
    rates
}
