//! The overload soak: LetheDB on a durable store, a container with little provisioned throughput
//! and a short `defaultTtl`, and more clients than the throughput (and the machine) can serve,
//! writing items that expire continuously while others read them. Every window it records what
//! the server holds (RSS, open file descriptors, the store's size on disk) and what the clients
//! saw (requests admitted and refused, the p99 and the longest wait of admitted ones).
//!
//! It fails on what must never happen, whatever the machine: a 429 without a retry hint, an
//! error other than 429, a request that waited longer than `WAIT_MAX`. Whether RSS, descriptors
//! and the store stay flat is read off the table (the first and last windows are compared and
//! printed), since a short run on a noisy machine cannot decide a trend by itself.

use crate::cosmos::{Client, ContainerPaths};
use crate::resources::{create_container_with_throughput, ensure_database};
use crate::servers::{memory, Kind, Launch};
use anyhow::bail;
use bytes::Bytes;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest any one request may take before the soak fails.
const WAIT_MAX: Duration = Duration::from_secs(10);
/// Items in the key space writers pick from.
const KEY_SPACE: u64 = 20_000;

pub struct SoakConfig {
    pub duration: Duration,
    pub window: Duration,
    pub writers: usize,
    pub readers: usize,
    pub throughput_ru: u32,
    pub ttl_secs: i64,
    pub change_log_retention_minutes: u32,
}

/// What the clients saw in one window.
#[derive(Default)]
struct Tally {
    admitted_us: Vec<u32>,
    refused: u64,
    refused_without_hint: u64,
    failures: Vec<String>,
    longest: Duration,
    /// The request charges of admitted requests.
    charged: f64,
}

fn directory_bytes(path: &std::path::Path) -> u64 {
    std::fs::read_dir(path).map_or(0, |entries| {
        entries
            .flatten()
            .map(|entry| match entry.metadata() {
                Ok(meta) if meta.is_dir() => directory_bytes(&entry.path()),
                Ok(meta) => meta.len(),
                Err(_) => 0,
            })
            .sum()
    })
}

fn open_descriptors(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |entries| entries.count() as u64)
}

/// A tiny deterministic generator per client.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

async fn client_loop(
    mut client: Client,
    paths: ContainerPaths,
    writer: bool,
    seed: u64,
    stop: Arc<AtomicBool>,
    tally: Arc<Mutex<Tally>>,
) {
    let mut rng = Rng(seed | 1);
    let payload = "x".repeat(900);
    while !stop.load(Ordering::Relaxed) {
        let key = rng.below(KEY_SPACE);
        let (id, pk) = (format!("s{key}"), format!("p{}", key % 64));
        let started = Instant::now();
        let reply = if writer {
            let body = json!({"id": id, "pk": pk, "payload": payload}).to_string();
            client.upsert_item(&paths, &pk, Bytes::from(body)).await
        } else {
            client.read_item(&paths, &id, &pk).await
        };
        let waited = started.elapsed();
        let mut retry_after = None;
        {
            let mut tally = tally
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            tally.longest = tally.longest.max(waited);
            match reply {
                Ok(reply) if reply.status == 429 => {
                    tally.refused += 1;
                    match reply.retry_after_ms {
                        Some(ms) => retry_after = Some(Duration::from_millis(ms)),
                        None => tally.refused_without_hint += 1,
                    }
                }
                // A read of an item that expired or was never written is a 404: admitted.
                Ok(reply) if reply.status < 300 || reply.status == 404 => {
                    tally
                        .admitted_us
                        .push(waited.as_micros().min(u128::from(u32::MAX)) as u32);
                    tally.charged += reply.request_charge;
                }
                Ok(reply) => tally
                    .failures
                    .push(format!("{} {}", reply.status, reply.detail())),
                Err(error) => tally.failures.push(format!("{error:#}")),
            }
        }
        if let Some(pause) = retry_after {
            // What the SDKs do: wait as told, then go on.
            tokio::time::sleep(pause).await;
        }
    }
}

/// Runs the soak; returns its table (markdown) and figures (JSON), or an error naming what
/// must never happen.
pub async fn run(launch: &Launch, config: &SoakConfig) -> anyhow::Result<(String, Value)> {
    // The all-versions change log keeps every write for its retention (60 min by default), so
    // the store grows for that long whatever the sweeper does; one minute lets a short soak
    // see the store reach its bound.
    let retention = config.change_log_retention_minutes.to_string();
    let server = launch
        .start(
            Kind::LetheDb,
            "soak",
            &["--change-feed-retention-minutes", &retention],
        )
        .await?;
    let mut setup = Client::new(Arc::clone(&server.endpoint));
    ensure_database(&mut setup).await?;
    let paths = create_container_with_throughput(
        &mut setup,
        "soak",
        Some(config.ttl_secs),
        Some(config.throughput_ru),
    )
    .await?;
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let mut tasks = Vec::new();
    for index in 0..(config.writers + config.readers) {
        tasks.push(tokio::spawn(client_loop(
            Client::new(Arc::clone(&server.endpoint)),
            paths.clone(),
            index < config.writers,
            0x9e37_79b9 * (index as u64 + 1),
            Arc::clone(&stop),
            Arc::clone(&tally),
        )));
    }
    let server_files = ServerFiles {
        pid: server.child.id(),
        data_dir: launch.scratch_dir.join("soak-data"),
    };
    let observed = Observed::watch(config, &tally, &server_files).await;
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        let _ = task.await;
    }
    server.stop()?;
    let table = observed.table();
    let figures = json!({
        "windows": observed.rows,
        "refused_without_retry_hint": observed.refused_without_hint,
        "longest_wait_ms": observed.longest.as_millis() as u64,
        "failures": observed.failures.len(),
    });
    observed.judge(&table)?;
    Ok((table, figures))
}

/// Where the server's process and store are, to read what it holds.
struct ServerFiles {
    pid: u32,
    data_dir: std::path::PathBuf,
}

/// What the soak saw, window by window, and what it must never see.
#[derive(Default)]
struct Observed {
    rows: Vec<Value>,
    failures: Vec<String>,
    refused_without_hint: u64,
    longest: Duration,
}

impl Observed {
    /// Takes the clients' tally every window until the soak's duration has passed, with what
    /// the server holds at that moment.
    async fn watch(config: &SoakConfig, tally: &Mutex<Tally>, server: &ServerFiles) -> Observed {
        let started = Instant::now();
        let mut observed = Observed::default();
        while started.elapsed() < config.duration {
            tokio::time::sleep(config.window).await;
            let window = std::mem::take(
                &mut *tally
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            );
            let mut latencies = window.admitted_us;
            latencies.sort_unstable();
            let p99_ms = crate::stats::percentile_ms(&latencies, 0.99);
            observed.refused_without_hint += window.refused_without_hint;
            observed.longest = observed.longest.max(window.longest);
            observed.failures.extend(window.failures);
            let seconds = config.window.as_secs_f64();
            observed.rows.push(json!({
                "at_s": started.elapsed().as_secs(),
                "admitted_per_s": (latencies.len() as f64 / seconds).round(),
                "refused_per_s": (window.refused as f64 / seconds).round(),
                "charged_ru_per_s": (window.charged / seconds).round(),
                "p99_ms": p99_ms,
                "longest_ms": window.longest.as_millis() as u64,
                "rss_mib": memory(server.pid).rss_bytes / (1 << 20),
                "fds": open_descriptors(server.pid),
                "store_mib": directory_bytes(&server.data_dir) as f64 / f64::from(1 << 20),
            }));
        }
        observed
    }

    /// One Markdown line per window.
    fn table(&self) -> String {
        let mut table = String::from(
            "| at (s) | admitted/s | RU/s charged | refused (429)/s | p99 admitted (ms) | longest (ms) | RSS (MiB) | fds | store (MiB) |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for row in &self.rows {
            table.push_str(&format!(
                "| {} | {} | {} | {} | {:.2} | {} | {} | {} | {:.1} |\n",
                row["at_s"],
                row["admitted_per_s"],
                row["charged_ru_per_s"],
                row["refused_per_s"],
                row["p99_ms"].as_f64().unwrap_or(0.0),
                row["longest_ms"],
                row["rss_mib"],
                row["fds"],
                row["store_mib"].as_f64().unwrap_or(0.0),
            ));
        }
        table
    }

    /// Fails on what must never happen: a 429 without a retry hint, a wait over
    /// [`WAIT_MAX`], an error other than 429.
    fn judge(&self, table: &str) -> anyhow::Result<()> {
        let (refused_without_hint, longest) = (self.refused_without_hint, self.longest);
        if refused_without_hint > 0 {
            bail!("{refused_without_hint} requests were refused (429) without x-ms-retry-after-ms\n{table}");
        }
        if longest > WAIT_MAX {
            bail!("a request waited {longest:?}, more than {WAIT_MAX:?}\n{table}");
        }
        if let Some(first) = self.failures.first() {
            bail!(
                "{} requests failed with other than 429, the first: {first}\n{table}",
                self.failures.len()
            );
        }
        Ok(())
    }
}
