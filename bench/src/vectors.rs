//! The vector search scenario (issue 27's speed targets), in process against the engine on an
//! in-memory store, so that only search is measured: for each vector index kind, a container
//! is loaded with clustered vectors (as embeddings are) and asked `SELECT TOP 10 ... ORDER BY
//! VectorDistance(...)` one query at a time. It prints, in one run:
//! - exact search (`flat`, or `bruteForce: true`) against a single-threaded dot-product scan
//!   over the same vectors in a plain array (the physical limit of exact search);
//! - the approximate search of `quantizedFlat` and `diskANN` against exact, with recall at 10;
//! - the create rate into the container against the same container without a vector policy;
//! - the resident memory the first query adds (the decoded vectors and any index), per
//!   million vectors.
//!
//! It reports figures; nothing here is a timed test.

use lethedb_engine::{Engine, EngineConfig, ErrorCode, QueryOutcome, QueryRequest, SystemClock};
use lethedb_engine::{PartitionKeyValue, WriteMode};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Writes in flight while loading.
const LOAD_CONCURRENCY: usize = 64;
/// Cluster centres of the data set.
const CENTRES: usize = 64;

/// What one run measures.
pub struct VectorConfig {
    pub items: usize,
    pub dimensions: usize,
    pub queries: usize,
    /// Index kinds: `flat`, `quantizedFlat`, `diskANN`.
    pub kinds: Vec<String>,
}

/// A small deterministic generator (xorshift), so every run sees the same vectors.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A normal deviate (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (a, b) = (self.unit().max(1e-12), self.unit());
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }
}

/// `count` vectors around shared centres, rounded to single precision.
fn clustered(count: usize, dimensions: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut centres_rng = Rng(0x9e37_79b9_7f4a_7c15);
    let centres: Vec<Vec<f64>> = (0..CENTRES)
        .map(|_| (0..dimensions).map(|_| centres_rng.unit() - 0.5).collect())
        .collect();
    let mut rng = Rng(seed | 1);
    (0..count)
        .map(|_| {
            let centre = &centres[(rng.unit() * CENTRES as f64) as usize % CENTRES];
            centre
                .iter()
                .map(|x| (x + 0.1 * rng.normal()) as f32)
                .collect()
        })
        .collect()
}

fn dot(left: &[f32], right: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 16];
    let mut left_chunks = left.chunks_exact(16);
    let mut right_chunks = right.chunks_exact(16);
    for (a, b) in (&mut left_chunks).zip(&mut right_chunks) {
        for lane in 0..16 {
            lanes[lane] += a[lane] * b[lane];
        }
    }
    let tail: f32 = left_chunks
        .remainder()
        .iter()
        .zip(right_chunks.remainder())
        .map(|(a, b)| a * b)
        .sum();
    lanes.iter().sum::<f32>() + tail
}

/// The ten largest dot products of `query` over `flat` (rows of `dimensions`), by a
/// single-threaded scan: their row numbers, best first.
fn scan_top10(flat: &[f32], dimensions: usize, query: &[f32]) -> Vec<usize> {
    let mut best: Vec<(f32, usize)> = Vec::with_capacity(11);
    for (row, vector) in flat.chunks_exact(dimensions).enumerate() {
        let score = dot(query, vector);
        if best.len() < 10 || score > best[best.len() - 1].0 {
            let at = best.partition_point(|(kept, _)| *kept >= score);
            best.insert(at, (score, row));
            best.truncate(10);
        }
    }
    best.into_iter().map(|(_, row)| row).collect()
}

fn wire_status(_: ErrorCode) -> (u16, &'static str) {
    (500, "InternalServerError")
}

/// Resident set size in bytes.
fn resident_bytes() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|field| field.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The container of one kind (`none`: no vector policy at all).
fn container_body(kind: &str, dimensions: usize) -> Value {
    // The vectors are left out of the range index, as the service's documentation advises.
    let mut body = json!({"id": kind, "partitionKey": {"paths": ["/pk"]},
        "indexingPolicy": {"excludedPaths": [{"path": "/v/*"}]}});
    if kind != "none" {
        body["vectorEmbeddingPolicy"] = json!({"vectorEmbeddings": [{"path": "/v",
            "dataType": "float32", "dimensions": dimensions, "distanceFunction": "dotproduct"}]});
        body["indexingPolicy"]["vectorIndexes"] = json!([{"path": "/v", "type": kind}]);
    }
    body
}

/// A fresh engine (one physical range, so one page reads the whole container).
async fn open_engine() -> anyhow::Result<Engine> {
    let config = EngineConfig {
        rate_limit: false,
        partition_key_ranges: Some(1),
        ..EngineConfig::new(wire_status)
    };
    let store = Arc::new(lethedb_storage::MemoryStore::new());
    let engine = Engine::open(store, Arc::new(SystemClock), config)?;
    engine.create_database(json!({"id": "db"}), None).await?;
    Ok(engine)
}

/// Creates items `first..first + vectors.len()` in container `kind`, `LOAD_CONCURRENCY` at a
/// time (so the writer commits them in groups, as it does for concurrent clients); the time
/// it took.
async fn load(
    engine: &Engine,
    kind: &str,
    vectors: &[Vec<f32>],
    first: usize,
) -> anyhow::Result<Duration> {
    let container = engine.read_container("db", kind)?;
    let started = Instant::now();
    for (chunk_number, chunk) in vectors.chunks(LOAD_CONCURRENCY).enumerate() {
        let mut writes = tokio::task::JoinSet::new();
        for (offset, vector) in chunk.iter().enumerate() {
            let n = first + chunk_number * LOAD_CONCURRENCY + offset;
            let partition = format!("p{}", n % 16);
            let key = PartitionKeyValue::parse_json_text(&json!([partition]).to_string()).ok();
            let body = json!({"id": format!("i{n}"), "pk": partition, "v": vector});
            let (engine, container) = (engine.clone(), Arc::clone(&container));
            writes.spawn(async move {
                engine
                    .write_item(&container, WriteMode::Create, key, body, None)
                    .await
                    .map(|_| ())
            });
        }
        while let Some(outcome) = writes.join_next().await {
            outcome??;
        }
    }
    Ok(started.elapsed())
}

/// The ids of one vector search and how long it took.
async fn search(
    engine: &Engine,
    kind: &str,
    query: &[f32],
    brute_force: bool,
) -> anyhow::Result<(Vec<usize>, Duration)> {
    let container = engine.read_container("db", kind)?;
    let text = format!("SELECT TOP 10 c.id FROM c ORDER BY VectorDistance(c.v, @q, {brute_force})");
    let request = QueryRequest {
        text,
        parameters: vec![("@q".into(), json!(query))],
        range_id: Some("0".into()),
        ..QueryRequest::default()
    };
    let started = Instant::now();
    let outcome = engine.query_items(&container, &request).await?;
    let elapsed = started.elapsed();
    let QueryOutcome::Page(page) = outcome else {
        anyhow::bail!("the query needed the client pipeline");
    };
    let ids = page
        .items
        .iter()
        .filter_map(|item| item["id"].as_str()?.strip_prefix('i')?.parse().ok())
        .collect();
    Ok((ids, elapsed))
}

/// The mean time of the queries, and their mean recall at 10 against `truth`.
async fn measure(
    engine: &Engine,
    kind: &str,
    queries: &[Vec<f32>],
    truth: &[Vec<usize>],
    brute_force: bool,
) -> anyhow::Result<(Duration, f64)> {
    let (mut total, mut hits) = (Duration::ZERO, 0usize);
    for (query, expected) in queries.iter().zip(truth) {
        let (found, elapsed) = search(engine, kind, query, brute_force).await?;
        total += elapsed;
        hits += found.iter().filter(|id| expected.contains(id)).count();
    }
    let recall = hits as f64 / (10 * queries.len()).max(1) as f64;
    Ok((total / queries.len().max(1) as u32, recall))
}

/// Runs the scenario and prints its figures.
pub async fn run(config: VectorConfig) -> anyhow::Result<()> {
    let dimensions = config.dimensions;
    let vectors = clustered(config.items, dimensions, 1);
    let queries = clustered(config.queries, dimensions, 2);
    let flat: Vec<f32> = vectors.iter().flatten().copied().collect();
    let started = Instant::now();
    let truth: Vec<Vec<usize>> = queries
        .iter()
        .map(|query| scan_top10(&flat, dimensions, query))
        .collect();
    let scan = started.elapsed() / config.queries.max(1) as u32;
    println!(
        "{} items × {dimensions}-d float32 (clustered), {} queries, dot product; in-memory scan: {:.2} ms a query",
        config.items, config.queries, millis(scan)
    );
    let engine = open_engine().await?;
    engine
        .create_container("db", container_body("none", dimensions), None)
        .await?;
    let plain = load(&engine, "none", &vectors, 0).await?;
    drop(engine);
    for kind in &config.kinds {
        let engine = open_engine().await?;
        engine
            .create_container("db", container_body(kind, dimensions), None)
            .await?;
        let load_time = load(&engine, kind, &vectors, 0).await?;
        let before = resident_bytes();
        let (_, first) = search(&engine, kind, &queries[0], false).await?;
        let added = resident_bytes() - before;
        let (exact, exact_recall) = measure(&engine, kind, &queries, &truth, true).await?;
        let (served, recall) = measure(&engine, kind, &queries, &truth, false).await?;
        println!(
            "{kind}: load {:.1} s (without a vector policy {:.1} s); first query {:.0} ms; exact {:.2} ms = {:.2}× the scan (recall {:.3}); served {:.2} ms = {:.1}× faster than exact, recall@10 {:.3}; creates {:.0}/s = {:.2}× the rate without a vector policy; RSS added by the first query {:.0} MiB = {:.0} MiB per million vectors",
            load_time.as_secs_f64(),
            plain.as_secs_f64(),
            millis(first),
            millis(exact),
            exact.as_secs_f64() / scan.as_secs_f64(),
            exact_recall,
            millis(served),
            exact.as_secs_f64() / served.as_secs_f64(),
            recall,
            config.items as f64 / load_time.as_secs_f64(),
            plain.as_secs_f64() / load_time.as_secs_f64(),
            added / 1048576.0,
            added / 1048576.0 * 1e6 / config.items as f64,
        );
    }
    Ok(())
}
