//! The bake-off of approximate nearest-neighbour crates behind LetheDB's `quantizedFlat` and
//! `diskANN` vector indexes: each candidate builds an index over the same vectors (random, or
//! clustered as real embeddings are), answers the same queries, and is measured for recall at
//! 10 against the exact answer, query time, build time and the memory the index adds (resident
//! set growth, read from `/proc/self/statm`).
//!
//! It measures only; which crate won and why is written in `bench/results/vector-index.md` and
//! `docs/search.md`. Euclidean distance throughout, the one metric every candidate offers alike.

use clap::Parser;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use std::time::{Duration, Instant};

/// The connections each graph node keeps (HNSW's M), the same for every candidate.
const CONNECTIONS: usize = 16;
/// The candidate list while building (HNSW's efConstruction).
const BUILD_LIST: usize = 128;

#[derive(Parser)]
struct Args {
    /// Vectors indexed.
    #[arg(long, default_value_t = 20_000)]
    vectors: usize,
    /// Dimensions of each vector.
    #[arg(long, default_value_t = 128)]
    dimensions: usize,
    /// Queries asked (the recall is their mean).
    #[arg(long, default_value_t = 200)]
    queries: usize,
    /// `random` (uniform in the unit cube) or `clustered` (gaussian blobs, as embeddings are).
    #[arg(long, default_value = "clustered")]
    data: String,
    /// Search list sizes tried at query time (HNSW's ef).
    #[arg(long, value_delimiter = ',', default_value = "32,64,128")]
    search_lists: Vec<usize>,
    /// Which candidates run (`hnsw_rs`, `instant-distance`, `usearch`).
    #[arg(long, value_delimiter = ',', default_value = "hnsw_rs,instant-distance,usearch")]
    crates: Vec<String>,
    /// Threads used to build (every query runs on one).
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

/// One candidate's figures at one search list size.
struct Row {
    candidate: &'static str,
    search_list: usize,
    build: Duration,
    memory_bytes: i64,
    recall: f64,
    query: Duration,
}

fn main() {
    let args = Args::parse();
    let mut random = StdRng::seed_from_u64(27);
    let base = vectors(&args, args.vectors, &mut random);
    let queries = vectors(&args, args.queries, &mut random);
    let exact = exact_answers(&base, &queries);
    let exact_time = time_exact(&base, &queries);
    println!(
        "{} × {}-d {} vectors, {} queries; exact scan {:.3} ms a query",
        args.vectors,
        args.dimensions,
        args.data,
        args.queries,
        millis(exact_time)
    );
    let mut rows = Vec::new();
    for candidate in &args.crates {
        let measured = match candidate.as_str() {
            "hnsw_rs" => hnsw_rs_rows(&args, &base, &queries, &exact),
            "instant-distance" => instant_rows(&args, &base, &queries, &exact),
            "usearch" => usearch_rows(&args, &base, &queries, &exact),
            other => panic!("unknown candidate {other}"),
        };
        rows.extend(measured);
    }
    print_table(&rows, exact_time);
}

/// `count` vectors of the data set `args.data`, from `random`.
fn vectors(args: &Args, count: usize, random: &mut StdRng) -> Vec<Vec<f32>> {
    let dimensions = args.dimensions;
    match args.data.as_str() {
        "random" => (0..count)
            .map(|_| (0..dimensions).map(|_| random.gen::<f32>()).collect())
            .collect(),
        _ => {
            // The same 64 centres for the indexed vectors and the queries (one seed for both).
            let mut centres_random = StdRng::seed_from_u64(64);
            let centres: Vec<Vec<f32>> = (0..64)
                .map(|_| (0..dimensions).map(|_| centres_random.gen::<f32>()).collect())
                .collect();
            let spread = Normal::new(0.0f32, 0.1).unwrap_or_else(|_| unreachable!());
            (0..count)
                .map(|_| {
                    let centre = &centres[random.gen_range(0..centres.len())];
                    centre.iter().map(|x| x + spread.sample(random)).collect()
                })
                .collect()
        }
    }
}

fn squared_euclidean(left: &[f32], right: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 16];
    let mut left_chunks = left.chunks_exact(16);
    let mut right_chunks = right.chunks_exact(16);
    for (a, b) in (&mut left_chunks).zip(&mut right_chunks) {
        for lane in 0..16 {
            let difference = a[lane] - b[lane];
            lanes[lane] += difference * difference;
        }
    }
    let tail: f32 = left_chunks
        .remainder()
        .iter()
        .zip(right_chunks.remainder())
        .map(|(a, b)| (a - b) * (a - b))
        .sum();
    lanes.iter().sum::<f32>() + tail
}

/// The ten nearest of `base` to each query, by an exact scan.
fn exact_answers(base: &[Vec<f32>], queries: &[Vec<f32>]) -> Vec<Vec<usize>> {
    queries
        .iter()
        .map(|query| {
            let mut scored: Vec<(f32, usize)> = base
                .iter()
                .enumerate()
                .map(|(id, vector)| (squared_euclidean(query, vector), id))
                .collect();
            scored.select_nth_unstable_by(9, |a, b| a.0.total_cmp(&b.0));
            scored.truncate(10);
            scored.into_iter().map(|(_, id)| id).collect()
        })
        .collect()
}

/// The mean time of one exact scan, single-threaded (the peer every ratio is against).
fn time_exact(base: &[Vec<f32>], queries: &[Vec<f32>]) -> Duration {
    let sample = &queries[..queries.len().min(20)];
    let started = Instant::now();
    let answers = exact_answers(base, sample);
    std::hint::black_box(answers);
    started.elapsed() / sample.len() as u32
}

/// The share of the exact ten that `found` holds, averaged over the queries.
fn recall(exact: &[Vec<usize>], found: &[Vec<usize>]) -> f64 {
    let hits: usize = exact
        .iter()
        .zip(found)
        .map(|(truth, got)| got.iter().filter(|id| truth.contains(id)).count())
        .sum();
    hits as f64 / (10 * exact.len()) as f64
}

/// Resident set size in bytes.
fn resident_bytes() -> i64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: i64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|field| field.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Runs every query through `search` at one list size: the answers and the mean time.
fn run_queries(
    queries: &[Vec<f32>],
    mut search: impl FnMut(&[f32]) -> Vec<usize>,
) -> (Vec<Vec<usize>>, Duration) {
    let started = Instant::now();
    let answers: Vec<Vec<usize>> = queries.iter().map(|query| search(query)).collect();
    (answers, started.elapsed() / queries.len() as u32)
}

fn hnsw_rs_rows(
    args: &Args,
    base: &[Vec<f32>],
    queries: &[Vec<f32>],
    exact: &[Vec<usize>],
) -> Vec<Row> {
    use hnsw_rs::prelude::{DistL2, Hnsw};
    let before = resident_bytes();
    let started = Instant::now();
    let index: Hnsw<f32, DistL2> =
        Hnsw::new(CONNECTIONS, base.len(), 16, BUILD_LIST, DistL2 {});
    let pool = rayon_pool(args.threads);
    let points: Vec<(&Vec<f32>, usize)> = base.iter().zip(0..).collect();
    pool.install(|| index.parallel_insert(&points));
    let build = started.elapsed();
    let memory_bytes = resident_bytes() - before;
    args.search_lists
        .iter()
        .map(|&list| {
            let (found, query) = run_queries(queries, |query| {
                let hits = index.search(query, 10, list);
                hits.into_iter().map(|hit| hit.d_id).collect()
            });
            Row {
                candidate: "hnsw_rs",
                search_list: list,
                build,
                memory_bytes,
                recall: recall(exact, &found),
                query,
            }
        })
        .collect()
}

fn rayon_pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap_or_else(|error| panic!("thread pool: {error}"))
}

/// A vector as `instant-distance` wants it.
#[derive(Clone)]
struct Point(Vec<f32>);

impl instant_distance::Point for Point {
    fn distance(&self, other: &Self) -> f32 {
        squared_euclidean(&self.0, &other.0)
    }
}

fn instant_rows(
    args: &Args,
    base: &[Vec<f32>],
    queries: &[Vec<f32>],
    exact: &[Vec<usize>],
) -> Vec<Row> {
    // Its search list is fixed when it builds: one build per list size, the first one timed.
    let pool = rayon_pool(args.threads);
    let mut rows = Vec::new();
    for &list in &args.search_lists {
        let points: Vec<Point> = base.iter().cloned().map(Point).collect();
        let ids: Vec<usize> = (0..base.len()).collect();
        let before = resident_bytes();
        let started = Instant::now();
        let map = pool.install(|| {
            instant_distance::Builder::default()
                .ef_construction(BUILD_LIST)
                .ef_search(list)
                .build(points, ids)
        });
        let build = started.elapsed();
        let memory_bytes = resident_bytes() - before;
        let (found, query) = run_queries(queries, |query| {
            let mut search = instant_distance::Search::default();
            let point = Point(query.to_vec());
            map.search(&point, &mut search)
                .take(10)
                .map(|item| *item.value)
                .collect()
        });
        rows.push(Row {
            candidate: "instant-distance",
            search_list: list,
            build,
            memory_bytes,
            recall: recall(exact, &found),
            query,
        });
    }
    rows
}

fn usearch_rows(
    args: &Args,
    base: &[Vec<f32>],
    queries: &[Vec<f32>],
    exact: &[Vec<usize>],
) -> Vec<Row> {
    use usearch::{Index, IndexOptions, MetricKind, ScalarKind};
    let options = IndexOptions {
        dimensions: args.dimensions,
        metric: MetricKind::L2sq,
        quantization: ScalarKind::F32,
        connectivity: CONNECTIONS,
        expansion_add: BUILD_LIST,
        expansion_search: 64,
        multi: false,
    };
    let before = resident_bytes();
    let started = Instant::now();
    let index = Index::new(&options).unwrap_or_else(|error| panic!("usearch: {error}"));
    index
        .reserve_capacity_and_threads(base.len(), args.threads)
        .unwrap_or_else(|error| panic!("usearch: {error}"));
    let pool = rayon_pool(args.threads);
    pool.install(|| {
        use rayon::prelude::*;
        base.par_iter().enumerate().for_each(|(id, vector)| {
            index
                .add(id as u64, vector)
                .unwrap_or_else(|error| panic!("usearch: {error}"));
        });
    });
    let build = started.elapsed();
    let memory_bytes = resident_bytes() - before;
    args.search_lists
        .iter()
        .map(|&list| {
            index.change_expansion_search(list);
            let (found, query) = run_queries(queries, |query| {
                let matches = index
                    .search(query, 10)
                    .unwrap_or_else(|error| panic!("usearch: {error}"));
                matches.keys.into_iter().map(|key| key as usize).collect()
            });
            Row {
                candidate: "usearch",
                search_list: list,
                build,
                memory_bytes,
                recall: recall(exact, &found),
                query,
            }
        })
        .collect()
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn print_table(rows: &[Row], exact: Duration) {
    println!("| crate | search list | recall@10 | query ms | speed-up over exact | build s | index MiB (RSS growth) |");
    println!("|---|---|---|---|---|---|---|");
    for row in rows {
        println!(
            "| {} | {} | {:.3} | {:.3} | {:.1}× | {:.1} | {:.1} |",
            row.candidate,
            row.search_list,
            row.recall,
            millis(row.query),
            exact.as_secs_f64() / row.query.as_secs_f64(),
            row.build.as_secs_f64(),
            row.memory_bytes as f64 / (1024.0 * 1024.0)
        );
    }
}
