//! The time-to-live workloads on an otherwise idle server, which only LetheDB can run: sweep
//! rate and point-read latency during a mass expiry, and deletion lag with spare capacity.
//! (Accuracy is in `ttl_accuracy.rs`, expiry under provisioned throughput in
//! `ttl_throughput.rs`.)
//!
//! Deletions are read from the sweeper's log (`sweep_log.rs`). The sweeper deletes in
//! expiry-index order (oldest expiry first), so the k-th item to expire is the k-th deleted,
//! and its deletion instant is the timestamp of the batch that reached k.

use crate::cosmos::{Client, ContainerPaths, Endpoint};
use crate::data::{unix_ms, DataSet, Rng};
use crate::load::load_items;
use crate::resources::{create_container, ensure_database, replace_default_ttl};
use crate::stats::{percentile_f64, round, Summary};
use crate::sweep_log::{deletion_instants, wait_for_deletions, SweepBatch};
use crate::workload::{run, RunConfig, Workload};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The median, 99th percentile and maximum of deletion lags, as the JSON reports them.
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
    log_paths: &[PathBuf],
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
        indexing_none: false,
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

    let reads = HotReads {
        endpoint: Arc::clone(endpoint),
        paths: hot,
        config: read_config,
    };
    let expiry = Expiry {
        log_paths,
        container_id: &container_id,
        paths: &expiring,
        items: config.items,
        reads_for: config.baseline,
    };
    let sweep = expiry.run(&mut client, reads).await?;
    Ok(sweep.result(config, load.elapsed, read_baseline))
}

/// The point reads on another container, measured during the sweep.
struct HotReads {
    endpoint: Arc<Endpoint>,
    paths: ContainerPaths,
    config: RunConfig,
}

/// The expiring container and how long the sweep is read under load.
struct Expiry<'a> {
    log_paths: &'a [PathBuf],
    container_id: &'a str,
    paths: &'a ContainerPaths,
    items: usize,
    /// How long the reads run after the expiry.
    reads_for: Duration,
}

/// The mass expiry as it happened (Unix ms): when the setting changed, when the reads
/// stopped, what they measured, and the sweeper's batches.
struct Sweep {
    expired_at_ms: f64,
    replaced_ms: f64,
    reads_stopped_ms: f64,
    read_during: Summary,
    batches: Vec<SweepBatch>,
}

impl Expiry<'_> {
    /// Sets `defaultTtl` to 1 s, reads the hot container for the first `reads_for` of the
    /// sweep, and waits for the sweeper to delete every item.
    async fn run(&self, client: &mut Client, reads: HotReads) -> anyhow::Result<Sweep> {
        let stop_reads = Arc::new(AtomicBool::new(false));
        let reader = {
            let stop_reads = Arc::clone(&stop_reads);
            tokio::spawn(async move {
                reads_until(&reads.endpoint, &reads.paths, &reads.config, &stop_reads).await
            })
        };
        let expired_at_ms = unix_ms();
        replace_default_ttl(client, self.paths, 1).await?;
        let replaced_ms = unix_ms();
        // Reads run for the first `reads_for` of the sweep (the latency goal is about that);
        // then the server is left idle, which is what the sweep-rate goal is about.
        let stopper = {
            let (stop_reads, during) = (Arc::clone(&stop_reads), self.reads_for);
            tokio::spawn(async move {
                tokio::time::sleep(during).await;
                stop_reads.store(true, Ordering::Relaxed);
                unix_ms()
            })
        };
        let waited = wait_for_deletions(self.log_paths, self.container_id, self.items as u64).await;
        stop_reads.store(true, Ordering::Relaxed);
        let reads_stopped_ms = if stopper.is_finished() {
            stopper.await?
        } else {
            stopper.abort();
            unix_ms()
        };
        let read_during = reader.await??;
        Ok(Sweep {
            expired_at_ms,
            replaced_ms,
            reads_stopped_ms,
            read_during,
            batches: waited?,
        })
    }
}

impl Sweep {
    /// The sweep rate (while idle, and overall), each item's deletion lag from the expiry, and
    /// the reads' latencies before and during the sweep.
    fn result(
        self,
        config: &MassExpiryConfig,
        load_elapsed: Duration,
        read_baseline: Summary,
    ) -> MassExpiry {
        let expired_at_ms = self.expired_at_ms;
        let instants = deletion_instants(&self.batches, config.items);
        let last_ms = instants.last().copied().unwrap_or(self.replaced_ms);
        let first_ms = instants.first().copied().unwrap_or(self.replaced_ms);
        let drain_secs = ((last_ms - expired_at_ms) / 1000.0).max(1e-9);
        let overall_rate_per_sec = config.items as f64 / drain_secs;
        // The idle rate: deletions after the reads stopped, over the time they took.
        let idle_deletions = instants
            .iter()
            .filter(|&&at| at > self.reads_stopped_ms)
            .count();
        let idle_secs = ((last_ms - self.reads_stopped_ms) / 1000.0).max(1e-9);
        let sweep_rate_per_sec = if idle_deletions > 0 {
            idle_deletions as f64 / idle_secs
        } else {
            overall_rate_per_sec
        };
        let lags = instants.iter().map(|d| d - expired_at_ms).collect();
        let load_secs = load_elapsed.as_secs_f64();
        MassExpiry {
            json: json!({
                "items": config.items,
                "load_secs": round(load_secs, 2),
                "load_items_per_sec": round(config.items as f64 / load_secs.max(1e-9), 0),
                "first_batch_after_ms": round(first_ms - expired_at_ms, 1),
                "drain_secs": round(drain_secs, 3),
                "sweep_rate_per_sec": round(sweep_rate_per_sec, 0),
                "sweep_rate_overall_per_sec": round(overall_rate_per_sec, 0),
                "idle_deletions": idle_deletions,
                "reads_during_secs": round((self.reads_stopped_ms - expired_at_ms) / 1000.0, 3),
                "batches": self.batches.len(),
                "deletion_lag_from_expiry": lag_json(lags),
                "read_baseline": read_baseline.to_json(),
                "read_during_expiry": self.read_during.to_json(),
            }),
            sweep_rate_per_sec,
            read_baseline,
            read_during: self.read_during,
        }
    }
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
    log_paths: &[PathBuf],
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
    let batches = wait_for_deletions(log_paths, container_id, config.items as u64).await?;
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
