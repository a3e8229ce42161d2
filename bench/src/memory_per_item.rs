//! Memory and store bytes per item: for each store (`--in-memory`, the durable redb store, and
//! optionally fjall) and each indexing policy (the default one, and `indexingMode: none`), a
//! fresh LetheDB is given a container, its resident set is read once it is quiet, the bench's
//! ~1 KiB items are created by many clients, and once the server is quiet again its resident
//! set is read again. The difference over the items is the state it keeps per item; for a
//! durable store the data directory's size over the items is the bytes per item on disk.
//!
//! With a baseline binary, every row is measured on it too, in the same run, so a change's
//! before and after come from one machine under one load. Nothing here judges the figures.

use crate::cosmos::{Client, ContainerPaths};
use crate::data::DataSet;
use crate::load::load_items;
use crate::report::mb;
use crate::resources::{create_container, ensure_database, replace_container};
use crate::servers::{dir_allocated_bytes, dir_bytes, Kind, Launch, Server};
use crate::stats::round;
use bytes::Bytes;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the resident set is read while waiting for the server to be quiet.
const SETTLE_PROBE_INTERVAL: Duration = Duration::from_millis(500);
/// The resident set counts as settled when two reads this far apart differ by less than this.
const SETTLE_TOLERANCE_BYTES: u64 = 256 * 1024;
/// The longest wait for a quiet resident set; the last read stands after it.
const SETTLE_WAIT_MAX: Duration = Duration::from_secs(20);

/// What one run measures.
pub struct MemoryConfig {
    pub items: usize,
    pub item_bytes: usize,
    pub partitions: usize,
    pub seed: u64,
    pub load_clients: usize,
    /// Which stores: `memory`, `redb`, `fjall`.
    pub stores: Vec<String>,
    /// Which indexing policies: `default`, `none`.
    pub policies: Vec<String>,
    /// A `lethedb` built before a change, measured the same way in the same run.
    pub baseline: Option<PathBuf>,
}

/// The figures of one server, store and policy.
struct Row {
    binary: &'static str,
    store: String,
    policy: String,
    items_per_sec: f64,
    rss_before_bytes: u64,
    rss_after_bytes: u64,
    peak_rss_bytes: u64,
    /// The data directory's size after the load, and the disk space it takes (durable stores
    /// only).
    store_bytes: Option<(u64, u64)>,
}

impl Row {
    fn rss_per_item(&self, items: usize) -> f64 {
        (self.rss_after_bytes as f64 - self.rss_before_bytes as f64) / items.max(1) as f64
    }

    /// The data directory's size and disk space per item.
    fn store_per_item(&self, items: usize) -> Option<(f64, f64)> {
        let per_item = |bytes: u64| bytes as f64 / items.max(1) as f64;
        self.store_bytes
            .map(|(size, allocated)| (per_item(size), per_item(allocated)))
    }
}

/// The `lethedb serve` arguments of a store.
fn store_args(store: &str) -> anyhow::Result<&'static [&'static str]> {
    match store {
        "memory" => Ok(&["--in-memory"]),
        "redb" => Ok(&[]),
        "fjall" => Ok(&["--store", "fjall"]),
        other => anyhow::bail!("unknown store {other}: memory, redb or fjall"),
    }
}

/// Runs every store and policy (on the baseline binary too, when given) and returns the table
/// (markdown) and figures (JSON).
pub async fn run(launch: &Launch, config: &MemoryConfig) -> anyhow::Result<(String, Value)> {
    let mut binaries = vec![("this build", launch.clone())];
    if let Some(baseline) = &config.baseline {
        let mut before = launch.clone();
        before.lethedb_binary = baseline.clone();
        binaries.insert(0, ("baseline", before));
    }
    let mut rows = Vec::new();
    for store in &config.stores {
        for policy in &config.policies {
            for (binary, launch) in &binaries {
                eprintln!(
                    "== {binary}: {store}, {policy} policy, {} items",
                    config.items
                );
                let mut row = measure(launch, config, store, policy).await?;
                row.binary = binary;
                rows.push(row);
            }
        }
    }
    Ok(render(config, &rows))
}

/// One fresh server: quiet resident set, load, quiet resident set, store size.
async fn measure(
    launch: &Launch,
    config: &MemoryConfig,
    store: &str,
    policy: &str,
) -> anyhow::Result<Row> {
    let name = format!("memory-{store}-{policy}");
    let server = launch
        .start(Kind::LetheDb, &name, store_args(store)?)
        .await?;
    let outcome = measure_on(&server, config, policy).await;
    let data_dir = launch.scratch_dir.join(format!("{name}-data"));
    let store_bytes =
        (store != "memory").then(|| (dir_bytes(&data_dir), dir_allocated_bytes(&data_dir)));
    server.stop()?;
    let (rss_before_bytes, rss_after_bytes, peak_rss_bytes, items_per_sec) = outcome?;
    Ok(Row {
        binary: "",
        store: store.to_string(),
        policy: policy.to_string(),
        items_per_sec,
        rss_before_bytes,
        rss_after_bytes,
        peak_rss_bytes,
        store_bytes,
    })
}

/// The quiet resident set before and after the load, the peak, and the items created per
/// second.
async fn measure_on(
    server: &Server,
    config: &MemoryConfig,
    policy: &str,
) -> anyhow::Result<(u64, u64, u64, f64)> {
    let mut client = Client::new(server.endpoint.clone());
    ensure_database(&mut client).await?;
    let paths = create_container(&mut client, "items", None).await?;
    set_policy(&mut client, &paths, policy).await?;
    let before = settled_rss(server).await;
    let data = DataSet {
        items: config.items,
        partitions: config.partitions,
        item_bytes: config.item_bytes,
        seed: config.seed,
    };
    let no_extra = Arc::new(|_| String::new());
    let load = load_items(
        &server.endpoint,
        &paths,
        &data,
        config.load_clients,
        no_extra,
    )
    .await?;
    let items_per_sec = config.items as f64 / load.elapsed.as_secs_f64().max(1e-9);
    let after = settled_rss(server).await;
    Ok((before, after, server.memory().peak_rss_bytes, items_per_sec))
}

/// Gives the container the named indexing policy (`default` leaves it as created).
async fn set_policy(
    client: &mut Client,
    paths: &ContainerPaths,
    policy: &str,
) -> anyhow::Result<()> {
    let indexing = match policy {
        "default" => return Ok(()),
        "none" => json!({"indexingMode": "none", "automatic": false}),
        other => anyhow::bail!("unknown policy {other}: default or none"),
    };
    let body = json!({"id": paths.container_id,
        "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2},
        "indexingPolicy": indexing});
    replace_container(client, paths, Bytes::from(body.to_string()), "the policy").await
}

/// The resident set once it stops moving: background work after a load (the sweeper, a
/// writer's last groups, freed buffers going back) must not count as state.
async fn settled_rss(server: &Server) -> u64 {
    let started = Instant::now();
    let mut last = server.memory().rss_bytes;
    loop {
        tokio::time::sleep(SETTLE_PROBE_INTERVAL).await;
        let now = server.memory().rss_bytes;
        if now.abs_diff(last) < SETTLE_TOLERANCE_BYTES || started.elapsed() > SETTLE_WAIT_MAX {
            return now;
        }
        last = now;
    }
}

fn render(config: &MemoryConfig, rows: &[Row]) -> (String, Value) {
    let items = config.items;
    let mut table = format!(
        "{items} items of {} bytes, {} partitions, {} clients\n\n\
         | binary | store | policy | creates/s | RSS before (MB) | RSS after (MB) | peak RSS (MB) | RSS per item (B) | store per item (B) | on disk per item (B) |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
        config.item_bytes, config.partitions, config.load_clients
    );
    let mut figures = Vec::new();
    for row in rows {
        let store_per_item = row.store_per_item(items);
        table.push_str(&format!(
            "| {} | {} | {} | {:.0} | {:.1} | {:.1} | {:.1} | {:.0} | {} | {} |\n",
            row.binary,
            row.store,
            row.policy,
            row.items_per_sec,
            mb(row.rss_before_bytes),
            mb(row.rss_after_bytes),
            mb(row.peak_rss_bytes),
            row.rss_per_item(items),
            store_per_item.map_or(String::new(), |(size, _)| format!("{size:.0}")),
            store_per_item.map_or(String::new(), |(_, allocated)| format!("{allocated:.0}")),
        ));
        figures.push(json!({
            "binary": row.binary,
            "store": row.store,
            "policy": row.policy,
            "items": items,
            "item_bytes": config.item_bytes,
            "creates_per_sec": round(row.items_per_sec, 0),
            "rss_before_bytes": row.rss_before_bytes,
            "rss_after_bytes": row.rss_after_bytes,
            "peak_rss_bytes": row.peak_rss_bytes,
            "rss_bytes_per_item": round(row.rss_per_item(items), 1),
            "store_bytes": row.store_bytes.map(|(size, _)| size),
            "store_allocated_bytes": row.store_bytes.map(|(_, allocated)| allocated),
            "store_bytes_per_item": store_per_item.map(|(size, _)| round(size, 1)),
            "store_allocated_bytes_per_item": store_per_item.map(|(_, allocated)| round(allocated, 1)),
        }));
    }
    (table, Value::Array(figures))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(store_bytes: Option<(u64, u64)>) -> Row {
        Row {
            binary: "this build",
            store: "redb".into(),
            policy: "none".into(),
            items_per_sec: 1000.0,
            rss_before_bytes: 30_000_000,
            rss_after_bytes: 230_000_000,
            peak_rss_bytes: 240_000_000,
            store_bytes,
        }
    }

    #[test]
    fn figures_per_item_are_the_growth_and_the_store_over_the_items() {
        let measured = row(Some((1_000_000_000, 900_000_000)));
        assert_eq!(measured.rss_per_item(100_000), 2_000.0);
        assert_eq!(measured.store_per_item(100_000), Some((10_000.0, 9_000.0)));
        assert_eq!(row(None).store_per_item(100_000), None);
        let shrunk = Row {
            rss_after_bytes: 20_000_000,
            ..row(None)
        };
        assert_eq!(shrunk.rss_per_item(1_000), -10_000.0);
    }

    #[test]
    fn stores_are_named_or_refused_and_a_row_renders_its_figures() {
        assert_eq!(store_args("memory").ok(), Some(&["--in-memory"][..]));
        assert_eq!(store_args("redb").ok(), Some(&[][..]));
        assert!(store_args("rocksdb").is_err());
        let config = MemoryConfig {
            items: 10,
            item_bytes: 1024,
            partitions: 16,
            seed: 42,
            load_clients: 32,
            stores: vec!["redb".into()],
            policies: vec!["none".into()],
            baseline: None,
        };
        let (table, figures) = render(&config, &[row(Some((100_000, 90_000)))]);
        assert!(
            table.contains("| this build | redb | none | 1000 |"),
            "{table}"
        );
        assert_eq!(figures[0]["rss_bytes_per_item"], 20_000_000.0);
        assert_eq!(figures[0]["store_allocated_bytes_per_item"], 9_000.0);
    }
}
