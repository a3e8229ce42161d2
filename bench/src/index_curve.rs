//! The index curve: for each container size, LetheDB on a durable store is loaded with the
//! bench's items and asked, one request at a time, for point reads (the yardstick measured in
//! the same run), a selective equality query (0.1% of the items), `SELECT TOP 10 … ORDER BY`,
//! and the pages of an ORDER BY query followed to a depth; it prints the medians and their
//! ratios to the point read, and how each grows with the size. With a baseline binary (a build
//! from before the index), the same items are loaded into it too, and the create rate and store
//! size are compared: what the index costs writes and bytes.
//!
//! Nothing here is a timed test: it reports figures, and the caller compares them to targets.

use crate::cosmos::{Client, ContainerPaths, Request};
use crate::data::{DataSet, Rng, VALUE_RANGE};
use crate::load::load_items;
use crate::resources::{create_container, ensure_database, replace_container};
use crate::servers::{dir_bytes, Kind, Launch};
use crate::stats::{percentile_f64, round};
use anyhow::bail;
use bytes::Bytes;
use hyper::Method;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// What one run measures.
pub struct IndexCurveConfig {
    pub sizes: Vec<usize>,
    /// Requests per measured figure.
    pub samples: usize,
    /// Pages of the deep ORDER BY walk.
    pub pages: usize,
    pub item_bytes: usize,
    pub partitions: usize,
    pub load_clients: usize,
    /// A `lethedb` built before the index, to compare creates and bytes with.
    pub baseline: Option<PathBuf>,
}

/// The figures of one size.
struct SizeFigures {
    items: usize,
    point_read_ms: f64,
    equality_ms: f64,
    top_ms: f64,
    first_page_ms: f64,
    deep_page_ms: f64,
    creates_per_sec: f64,
    store_bytes: u64,
    /// The index's entry bytes over the items' bytes (`/_lethedb/index-check`).
    index_ratio: f64,
    /// Items per second the background rebuild after a policy change indexed, idle.
    rebuild_per_sec: f64,
    baseline: Option<(f64, u64)>,
}

/// Runs the curve and returns its table (markdown) and figures (JSON).
pub async fn run(launch: &Launch, config: &IndexCurveConfig) -> anyhow::Result<(String, Value)> {
    let mut rows = Vec::new();
    for &items in &config.sizes {
        let data = DataSet {
            items,
            partitions: config.partitions,
            item_bytes: config.item_bytes,
            seed: 42,
        };
        let mut figures = measure_size(launch, config, &data).await?;
        if let Some(binary) = &config.baseline {
            let baseline = Launch {
                lethedb_binary: binary.clone(),
                ..launch.clone()
            };
            figures.baseline = Some(load_only(&baseline, config, &data).await?);
        }
        eprintln!("index curve: {items} items measured");
        rows.push(figures);
    }
    Ok((table(&rows), figures_json(&rows)))
}

/// Starts a server, creates the container and loads `data`; returns the server, the
/// container's paths and the create rate.
async fn loaded(
    launch: &Launch,
    config: &IndexCurveConfig,
    data: &DataSet,
    name: &str,
) -> anyhow::Result<(crate::servers::Server, ContainerPaths, f64)> {
    let server = launch
        .start(Kind::LetheDb, name, &["--no-rate-limit"])
        .await?;
    let mut client = Client::new(Arc::clone(&server.endpoint));
    ensure_database(&mut client).await?;
    let paths = create_container(&mut client, "items", None).await?;
    let no_extra: Arc<dyn Fn(usize) -> String + Send + Sync> = Arc::new(|_| String::new());
    let times = load_items(
        &server.endpoint,
        &paths,
        data,
        config.load_clients,
        no_extra,
    )
    .await?;
    let rate = data.items as f64 / times.elapsed.as_secs_f64().max(1e-9);
    Ok((server, paths, rate))
}

/// Loads `data` into the baseline build: its create rate and store bytes.
async fn load_only(
    launch: &Launch,
    config: &IndexCurveConfig,
    data: &DataSet,
) -> anyhow::Result<(f64, u64)> {
    let name = format!("index-baseline-{}", data.items);
    let (server, _, rate) = loaded(launch, config, data, &name).await?;
    let bytes = dir_bytes(&launch.scratch_dir.join(format!("{name}-data")));
    server.stop()?;
    Ok((rate, bytes))
}

async fn measure_size(
    launch: &Launch,
    config: &IndexCurveConfig,
    data: &DataSet,
) -> anyhow::Result<SizeFigures> {
    let name = format!("index-{}", data.items);
    let (server, paths, creates_per_sec) = loaded(launch, config, data, &name).await?;
    let store_bytes = dir_bytes(&launch.scratch_dir.join(format!("{name}-data")));
    let mut client = Client::new(Arc::clone(&server.endpoint));
    let index_ratio = index_bytes_ratio(&mut client, &paths).await?;
    let mut rng = Rng::new(7);
    let samples = config.samples.max(1);
    let mut point = Vec::new();
    let mut equality = Vec::new();
    let mut top = Vec::new();
    for _ in 0..samples {
        let index = rng.below(data.items as u64) as usize;
        let started = Instant::now();
        let reply = client
            .read_item(&paths, &data.id(index), &data.pk(index))
            .await?;
        point.push(started.elapsed().as_secs_f64() * 1000.0);
        if reply.status != 200 {
            bail!("point read: {} {}", reply.status, reply.detail());
        }
        let value = rng.below(VALUE_RANGE);
        let text = "SELECT * FROM c WHERE c.value = @v";
        let parameters = json!([{"name": "@v", "value": value}]);
        equality.push(
            timed_page(&mut client, &paths, text, &parameters, None, 100)
                .await?
                .0,
        );
        let text = "SELECT TOP 10 * FROM c ORDER BY c.value";
        top.push(
            timed_page(&mut client, &paths, text, &json!([]), None, 10)
                .await?
                .0,
        );
    }
    let (first_page_ms, deep_page_ms) = ordered_pages(&mut client, &paths, config).await?;
    let rebuild_per_sec = rebuild_rate(&mut client, &paths, data.items).await?;
    server.stop()?;
    Ok(SizeFigures {
        items: data.items,
        point_read_ms: median(point),
        equality_ms: median(equality),
        top_ms: median(top),
        first_page_ms,
        deep_page_ms,
        creates_per_sec,
        store_bytes,
        index_ratio,
        rebuild_per_sec,
        baseline: None,
    })
}

/// Replaces the container's indexing policy (a composite index on `pk, value DESC` added) and
/// polls the transformation progress on container reads, slowly enough that the server counts
/// itself idle, until it reaches 100; returns the items indexed per second.
async fn rebuild_rate(
    client: &mut Client,
    paths: &ContainerPaths,
    items: usize,
) -> anyhow::Result<f64> {
    let path = format!("/{}", paths.link);
    let body = json!({"id": paths.container_id, "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2},
        "indexingPolicy": {"compositeIndexes": [[{"path": "/pk"}, {"path": "/value", "order": "descending"}]]}});
    let started = Instant::now();
    replace_container(client, paths, Bytes::from(body.to_string()), "the policy").await?;
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let read = client
            .send(&Request {
                method: Method::GET,
                path: &path,
                resource_type: "colls",
                resource_link: &paths.link,
                headers: &[("x-ms-documentdb-populatequotainfo", "true")],
                body: Bytes::new(),
            })
            .await?;
        if read.progress == Some(100) {
            return Ok(items as f64 / started.elapsed().as_secs_f64());
        }
        if started.elapsed().as_secs() > 600 {
            bail!("the rebuild did not end in 10 minutes");
        }
    }
}

/// The index's bytes over its items' bytes, from the server's own index check.
async fn index_bytes_ratio(client: &mut Client, paths: &ContainerPaths) -> anyhow::Result<f64> {
    let path = format!("/_lethedb/index-check/{}", paths.link);
    let reply = client
        .send(&Request {
            method: Method::GET,
            path: &path,
            resource_type: "colls",
            resource_link: &paths.link,
            headers: &[],
            body: Bytes::new(),
        })
        .await?;
    if reply.status != 200 {
        bail!("index check: {} {}", reply.status, reply.detail());
    }
    let check: Value = serde_json::from_slice(&reply.body)?;
    if check["consistent"] != json!(true) {
        bail!("the index is not consistent: {check}");
    }
    let stored = check["storedBytes"].as_f64().unwrap_or(0.0);
    let items = check["itemBytes"].as_f64().unwrap_or(0.0);
    Ok(stored / items.max(1.0))
}

/// Walks `SELECT * FROM c ORDER BY c.value` ten items a page for `config.pages` pages, three
/// times; returns the median time of the first page and of the last.
async fn ordered_pages(
    client: &mut Client,
    paths: &ContainerPaths,
    config: &IndexCurveConfig,
) -> anyhow::Result<(f64, f64)> {
    let text = "SELECT * FROM c ORDER BY c.value";
    let (mut first, mut last) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let mut token = None;
        for page in 0..config.pages.max(1) {
            let (ms, next) = timed_page(client, paths, text, &json!([]), token, 10).await?;
            if page == 0 {
                first.push(ms);
            }
            token = next;
            if token.is_none() || page + 1 == config.pages {
                last.push(ms);
                break;
            }
        }
    }
    Ok((median(first), median(last)))
}

/// Sends one page of a query to the container's range 0 (as the SDKs send each range's part);
/// returns its time in milliseconds and the continuation.
async fn timed_page(
    client: &mut Client,
    paths: &ContainerPaths,
    text: &str,
    parameters: &Value,
    continuation: Option<String>,
    page_items: usize,
) -> anyhow::Result<(f64, Option<String>)> {
    let page_items = page_items.to_string();
    let mut headers: Vec<(&str, &str)> = vec![
        ("content-type", "application/query+json"),
        ("x-ms-documentdb-isquery", "true"),
        ("x-ms-documentdb-query-enablecrosspartition", "true"),
        ("x-ms-documentdb-partitionkeyrangeid", "0"),
        ("x-ms-max-item-count", &page_items),
    ];
    if let Some(token) = &continuation {
        headers.push(("x-ms-continuation", token));
    }
    let body = json!({"query": text, "parameters": parameters}).to_string();
    let started = Instant::now();
    let reply = client
        .send(&Request {
            method: Method::POST,
            path: &paths.docs_path,
            resource_type: "docs",
            resource_link: &paths.link,
            headers: &headers,
            body: Bytes::from(body),
        })
        .await?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    if reply.status != 200 {
        bail!("query {text}: {} {}", reply.status, reply.detail());
    }
    Ok((ms, reply.continuation.filter(|token| !token.is_empty())))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    percentile_f64(&values, 0.5)
}

fn table(rows: &[SizeFigures]) -> String {
    let mut out = String::from(
        "| items | point read ms | equality (0.1%) ms | ×read | TOP 10 ORDER BY ms | ×read | ORDER BY page 1 ms | last page ms | creates/s | index bytes ×items | rebuild items/s | store MB | baseline creates/s | creates ×baseline | store ×baseline |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in rows {
        let (base_rate, base_ratio, bytes_ratio) = match row.baseline {
            Some((rate, bytes)) => (
                format!("{rate:.0}"),
                format!("{:.2}", row.creates_per_sec / rate.max(1e-9)),
                format!("{:.2}", row.store_bytes as f64 / (bytes as f64).max(1.0)),
            ),
            None => ("–".into(), "–".into(), "–".into()),
        };
        out.push_str(&format!(
            "| {} | {:.3} | {:.3} | {:.1} | {:.3} | {:.1} | {:.3} | {:.3} | {:.0} | {:.2} | {:.0} | {:.1} | {} | {} | {} |\n",
            row.items,
            row.point_read_ms,
            row.equality_ms,
            row.equality_ms / row.point_read_ms.max(1e-9),
            row.top_ms,
            row.top_ms / row.point_read_ms.max(1e-9),
            row.first_page_ms,
            row.deep_page_ms,
            row.creates_per_sec,
            row.index_ratio,
            row.rebuild_per_sec,
            row.store_bytes as f64 / 1e6,
            base_rate,
            base_ratio,
            bytes_ratio,
        ));
    }
    if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
        if rows.len() > 1 {
            out.push_str(&format!(
                "\nGrowth from {} to {} items: equality ×{:.2}, TOP 10 ×{:.2}, point read ×{:.2}.\n",
                first.items,
                last.items,
                last.equality_ms / first.equality_ms.max(1e-9),
                last.top_ms / first.top_ms.max(1e-9),
                last.point_read_ms / first.point_read_ms.max(1e-9),
            ));
        }
    }
    out
}

fn figures_json(rows: &[SizeFigures]) -> Value {
    Value::Array(
        rows.iter()
            .map(|row| {
                json!({
                    "items": row.items,
                    "point_read_ms": round(row.point_read_ms, 3),
                    "equality_ms": round(row.equality_ms, 3),
                    "top10_order_by_ms": round(row.top_ms, 3),
                    "order_by_first_page_ms": round(row.first_page_ms, 3),
                    "order_by_last_page_ms": round(row.deep_page_ms, 3),
                    "creates_per_sec": round(row.creates_per_sec, 0),
                    "store_bytes": row.store_bytes,
                    "index_bytes_over_item_bytes": round(row.index_ratio, 3),
                    "rebuild_items_per_sec": round(row.rebuild_per_sec, 0),
                    "baseline_creates_per_sec": row.baseline.map(|(rate, _)| round(rate, 0)),
                    "baseline_store_bytes": row.baseline.map(|(_, bytes)| bytes),
                })
            })
            .collect(),
    )
}
