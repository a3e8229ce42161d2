//! `lethedb-bench`: LetheDB's load generator and side-by-side benchmark driver.
//!
//! - `compare` starts LetheDB, the Node.js peer `@vercel/cosmosdb-server` and a hello-world
//!   server on free loopback ports, runs every workload against each in turn, and writes the
//!   table to `bench/results/` (`bench/run` builds everything first and calls this).
//! - `run` drives one workload against a server that is already running (for profiling).
//! - `index-curve` measures queries the index serves at several container sizes against the
//!   point read of the same run, and what the index costs creates and bytes against a baseline.
//! - `hello` is the hello-world HTTP server used as the ceiling for point reads.
//!
//! This file only parses the command line; the work is in the modules below.

mod compare;
mod config;
mod cosmos;
mod data;
mod disk;
mod goals;
mod index_curve;
mod load;
mod memory_per_item;
mod open_loop;
mod pg;
mod pg_cost;
mod pg_sections;
mod report;
mod resources;
mod scripts;
mod sections;
mod server_snapshot;
mod servers;
mod soak;
mod stats;
mod sweep_log;
mod ttl;
mod ttl_accuracy;
mod ttl_sections;
mod ttl_throughput;
mod vectors;
mod workload;
mod write_probe;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "lethedb-bench",
    about = "LetheDB's benchmarks against @vercel/cosmosdb-server."
)]
struct Cli {
    /// Worker threads of the load generator's runtime.
    #[arg(long, global = true, default_value_t = 2)]
    threads: usize,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run every workload against LetheDB and the peer and write the table.
    Compare(Box<CompareArgs>),
    /// Run one workload against a running server.
    Run(RunArgs),
    /// Server-side JavaScript figures against a running LetheDB (stored procedures, bulk
    /// import inside an execution, the cost of a UDF in a query); prints JSON.
    Scripts(ScriptsArgs),
    /// The overload soak: starts LetheDB on a durable store and drives a TTL workload above the
    /// container's throughput; prints RSS, descriptors, store size and latencies per window.
    Soak(SoakArgs),
    /// The index curve: point reads, a selective equality query, TOP 10 ORDER BY and deep
    /// ORDER BY pages at several container sizes on a durable store, with ratios to the point
    /// read and, against a baseline build, the create rate and store size.
    IndexCurve(IndexCurveArgs),
    /// Vector search in process: exact search against an in-memory dot-product scan, the
    /// approximate indexes against exact with recall, creates with and without a vector
    /// policy, and the memory per million vectors of each index kind.
    Vectors(VectorArgs),
    /// Memory and store bytes per item: fresh servers per store and indexing policy, loaded
    /// with ~1 KiB items; the resident set's growth per item once quiet, and the data
    /// directory's bytes per item on a durable store.
    Memory(MemoryArgs),
    /// Serve hello world (the HTTP ceiling).
    Hello {
        #[arg(long, default_value = "127.0.0.1:0")]
        bind: std::net::SocketAddr,
    },
}

#[derive(Args)]
struct Shape {
    /// Seconds each workload is measured.
    #[arg(long)]
    duration: Option<f64>,
    /// Seconds of warm-up before measuring.
    #[arg(long)]
    warmup: Option<f64>,
    /// Concurrent clients (connections) of the point workloads.
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// Concurrent clients of the cross-partition query.
    #[arg(long, default_value_t = 64)]
    query_clients: usize,
    /// Preloaded items.
    #[arg(long)]
    items: Option<usize>,
    /// Bytes per item body.
    #[arg(long, default_value_t = 1024)]
    item_bytes: usize,
    /// Distinct partition key values.
    #[arg(long, default_value_t = 16)]
    partitions: usize,
    /// Create the workloads' containers with `indexingPolicy.indexingMode: none` (no index
    /// entries), to see what the store writes per item without them.
    #[arg(long)]
    indexing_none: bool,
    /// `x-ms-max-item-count` of query pages.
    #[arg(long, default_value_t = 1000)]
    page_items: usize,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Use HTTPS (certificates are not verified).
    #[arg(long)]
    tls: bool,
    /// The master key (default: the emulator's).
    #[arg(long, default_value = lethedb_auth::EMULATOR_KEY, hide_default_value = true)]
    key: String,
}

#[derive(Args)]
struct CompareArgs {
    #[command(flatten)]
    shape: Shape,
    /// A run of seconds for CI: every workload, tiny sizes; fails only on errors.
    #[arg(long)]
    smoke: bool,
    /// Items of each TTL mass expiry, comma-separated.
    #[arg(long, value_delimiter = ',')]
    sweep_items: Option<Vec<usize>>,
    /// Items of the deletion-lag workload.
    #[arg(long)]
    lag_items: Option<usize>,
    /// Items polled by the TTL accuracy workload.
    #[arg(long)]
    accuracy_items: Option<usize>,
    /// Items loaded before LetheDB's RSS is read.
    #[arg(long)]
    rss_items: Option<usize>,
    /// Extra start-stop cycles for the cold-start median.
    #[arg(long)]
    cold_starts: Option<usize>,
    /// Manual RU/s of each container of the mass expiry under provisioned throughput.
    #[arg(long)]
    throughput_ru: Option<u32>,
    /// Items that expire at one instant under provisioned throughput.
    #[arg(long)]
    throughput_items: Option<usize>,
    /// Seconds each phase of the mass expiry under provisioned throughput is measured.
    #[arg(long)]
    throughput_secs: Option<f64>,
    /// A PostgreSQL server to also run LetheDB on (`postgresql://user@host:port/database`;
    /// default: `LETHEDB_BENCH_POSTGRES`, which keeps a password out of the process list):
    /// point reads, creates, upserts and the cross-partition query with one and with two
    /// instances, and the `ttl-postgres` part, each server start on a database of its own that
    /// the run creates and drops. The user needs CREATEDB; `psql` must be installed.
    #[arg(long)]
    postgres: Option<String>,
    /// Items of the mass expiry on PostgreSQL.
    #[arg(long)]
    pg_sweep_items: Option<usize>,
    /// Run only these parts (point-read, create, upsert, replace, mixed, query-partition,
    /// query-cross, rss, ttl-sweep, ttl-lag, ttl-throughput, ttl-accuracy, ttl-postgres),
    /// comma-separated.
    /// Without --smoke the results go to `<parts joined by +>.{md,json}`, not `latest`.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Skip the peer.
    #[arg(long)]
    no_peer: bool,
    /// Start the peer with its own CLI (connection: close) instead of with keep-alive.
    #[arg(long)]
    peer_cli: bool,
    /// The `lethedb` binary (default: next to this one).
    #[arg(long)]
    lethedb: Option<PathBuf>,
    /// Where the results go.
    #[arg(long)]
    results_dir: Option<PathBuf>,
    /// Where data directories and server logs go.
    #[arg(long)]
    scratch_dir: Option<PathBuf>,
}

#[derive(Args)]
struct SoakArgs {
    /// How long to run, in seconds (3600 for the full soak).
    #[arg(long, default_value_t = 600.0)]
    seconds: f64,
    /// Seconds per row of the table.
    #[arg(long, default_value_t = 10.0)]
    window: f64,
    #[arg(long, default_value_t = 24)]
    writers: usize,
    #[arg(long, default_value_t = 8)]
    readers: usize,
    /// The container's provisioned RU/s (far below what the clients ask for).
    #[arg(long, default_value_t = 2000)]
    throughput_ru: u32,
    /// The container's `defaultTtl`: every item written expires this long after.
    #[arg(long, default_value_t = 5)]
    ttl: i64,
    /// The server's change-feed retention (minutes): the store grows for this long.
    #[arg(long, default_value_t = 1)]
    change_log_retention_minutes: u32,
    /// The lethedb binary (default: next to this one).
    #[arg(long)]
    lethedb: Option<PathBuf>,
    /// Where to write the table and figures (default: print only).
    #[arg(long)]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct VectorArgs {
    /// Items (vectors) in each container.
    #[arg(long, default_value_t = 20_000)]
    items: usize,
    #[arg(long, default_value_t = 768)]
    dimensions: usize,
    #[arg(long, default_value_t = 20)]
    queries: usize,
    /// Vector index kinds, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "flat,quantizedFlat,diskANN"
    )]
    kinds: Vec<String>,
}

#[derive(Args)]
struct MemoryArgs {
    /// Items loaded into each server.
    #[arg(long, default_value_t = 200_000)]
    items: usize,
    /// Bytes per item body.
    #[arg(long, default_value_t = 1024)]
    item_bytes: usize,
    /// Stores, comma-separated: memory, redb, fjall.
    #[arg(long, value_delimiter = ',', default_value = "memory,redb")]
    stores: Vec<String>,
    /// Indexing policies, comma-separated: default, none (`indexingMode: none`).
    #[arg(long, value_delimiter = ',', default_value = "default,none")]
    policies: Vec<String>,
    /// A `lethedb` built before a change, measured the same way in the same run.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// The lethedb binary (default: next to this one).
    #[arg(long)]
    lethedb: Option<PathBuf>,
    /// Where to write the table and figures (default: print only).
    #[arg(long)]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct IndexCurveArgs {
    /// Container sizes (items), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    sizes: Vec<usize>,
    /// Requests per measured figure.
    #[arg(long, default_value_t = 200)]
    samples: usize,
    /// Pages of the deep ORDER BY walk (10 items a page).
    #[arg(long, default_value_t = 20)]
    pages: usize,
    /// A `lethedb` built before the index, loaded with the same items for the create rate
    /// and the store size.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// The lethedb binary (default: next to this one).
    #[arg(long)]
    lethedb: Option<PathBuf>,
    /// Where to write the table and figures (default: print only).
    #[arg(long)]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct ScriptsArgs {
    /// `127.0.0.1:PORT` of a running LetheDB (start it with `--no-rate-limit`).
    #[arg(long)]
    endpoint: String,
    #[arg(long, default_value_t = 8)]
    clients: usize,
    #[arg(long, default_value_t = 3.0)]
    duration: f64,
    #[arg(long, default_value_t = 20_000)]
    import_items: usize,
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    #[arg(long, default_value = lethedb_auth::EMULATOR_KEY, hide_default_value = true)]
    key: String,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    shape: Shape,
    /// `127.0.0.1:PORT` of a running server.
    #[arg(long)]
    endpoint: String,
    #[arg(long, value_enum)]
    workload: workload::Workload,
    /// Do not create or preload anything (the data is already there, or the server is hello).
    #[arg(long)]
    skip_setup: bool,
}

/// The `bench/` folder of the source tree this binary was built from.
fn bench_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Hello { bind } => servers::hello(bind),
        command => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(cli.threads.max(1))
                .enable_all()
                .build()?;
            runtime.block_on(async move {
                match command {
                    Command::Compare(args) => compare_command(*args).await,
                    Command::Run(args) => run_command(args).await,
                    Command::Scripts(args) => scripts_command(args).await,
                    Command::Soak(args) => soak_command(args).await,
                    Command::IndexCurve(args) => index_curve_command(args).await,
                    Command::Memory(args) => memory_command(args).await,
                    Command::Vectors(args) => {
                        vectors::run(vectors::VectorConfig {
                            items: args.items,
                            dimensions: args.dimensions,
                            queries: args.queries,
                            kinds: args.kinds,
                        })
                        .await
                    }
                    Command::Hello { .. } => Ok(()),
                }
            })
        }
    }
}

/// Where the comparison's servers come from and run: the `lethedb` binary (default: next to
/// this one), the peer, the scratch folder and PostgreSQL, if any.
fn bench_launch(
    lethedb: Option<PathBuf>,
    peer_cli: bool,
    shape: &Shape,
    scratch_dir: Option<PathBuf>,
    postgres: Option<String>,
) -> anyhow::Result<servers::Launch> {
    let exe = std::env::current_exe().context("cannot find this binary")?;
    let exe_dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    let launch = servers::Launch {
        lethedb_binary: lethedb.unwrap_or_else(|| exe_dir.join("lethedb")),
        bench_binary: exe.clone(),
        peer_dir: bench_dir().join("peer"),
        peer_cli,
        tls: shape.tls,
        key: shape.key.clone(),
        scratch_dir: scratch_dir.unwrap_or_else(|| {
            std::env::temp_dir().join(format!("lethedb-bench-{}", std::process::id()))
        }),
        postgres: postgres
            .or_else(|| std::env::var("LETHEDB_BENCH_POSTGRES").ok())
            .filter(|url| !url.is_empty()),
    };
    if !launch.lethedb_binary.exists() {
        anyhow::bail!(
            "{} not found: build it with `cargo build --release -p lethedb-server`",
            launch.lethedb_binary.display()
        );
    }
    Ok(launch)
}

async fn compare_command(args: CompareArgs) -> anyhow::Result<()> {
    let smoke = args.smoke;
    let shape = &args.shape;
    let pick = |value: Option<f64>, full: f64, smoke_value: f64| {
        Duration::from_secs_f64(value.unwrap_or(if smoke { smoke_value } else { full }))
    };
    let config = config::CompareConfig {
        smoke,
        duration: pick(shape.duration, 5.0, 0.5),
        warmup: pick(shape.warmup, 1.0, 0.2),
        clients: shape.clients,
        query_clients: shape.query_clients,
        load_clients: 32,
        items: shape.items.unwrap_or(if smoke { 1000 } else { 20_000 }),
        item_bytes: shape.item_bytes,
        partitions: shape.partitions,
        page_items: shape.page_items,
        indexing_none: shape.indexing_none,
        seed: shape.seed,
        sweep_items: args.sweep_items.unwrap_or(if smoke {
            vec![2000]
        } else {
            vec![100_000, 1_000_000]
        }),
        lag_items: args.lag_items.unwrap_or(if smoke { 1000 } else { 20_000 }),
        pg_sweep_items: args
            .pg_sweep_items
            .unwrap_or(if smoke { 1000 } else { 20_000 }),
        accuracy_items: args.accuracy_items.unwrap_or(if smoke { 20 } else { 100 }),
        rss_items: args
            .rss_items
            .unwrap_or(if smoke { 5000 } else { 1_000_000 }),
        cold_starts: args.cold_starts.unwrap_or(if smoke { 1 } else { 5 }),
        read_clients_during_expiry: 4,
        throughput_ru: args
            .throughput_ru
            .unwrap_or(if smoke { 2000 } else { 10_000 }),
        throughput_items: args
            .throughput_items
            .unwrap_or(if smoke { 3000 } else { 1_000_000 }),
        throughput_reader_items: if smoke { 500 } else { 10_000 },
        throughput_warmup: Duration::from_secs_f64(if smoke { 0.5 } else { 2.0 }),
        throughput_duration: pick(args.throughput_secs, 15.0, 1.5),
        only: args.only,
        peer: !args.no_peer,
        results_dir: args
            .results_dir
            .unwrap_or_else(|| bench_dir().join("results")),
    };
    let launch = bench_launch(
        args.lethedb,
        args.peer_cli,
        shape,
        args.scratch_dir,
        args.postgres,
    )?;
    let outcome = compare::compare(&launch, &config).await;
    let _ = std::fs::remove_dir_all(&launch.scratch_dir);
    let (markdown, clean) = outcome?;
    println!("{markdown}");
    if !clean {
        anyhow::bail!("some workloads saw errors (listed above)");
    }
    Ok(())
}

/// LetheDB alone, over HTTP with the emulator's key, its data under a scratch folder named
/// `{name}-{pid}` in the temporary directory; `lethedb`: the binary (default: next to this one).
fn local_launch(lethedb: Option<PathBuf>, name: &str) -> anyhow::Result<servers::Launch> {
    let exe = std::env::current_exe().context("cannot find this binary")?;
    let exe_dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    Ok(servers::Launch {
        lethedb_binary: lethedb.unwrap_or_else(|| exe_dir.join("lethedb")),
        bench_binary: exe.clone(),
        peer_dir: bench_dir().join("peer"),
        peer_cli: false,
        tls: false,
        key: lethedb_auth::EMULATOR_KEY.to_string(),
        scratch_dir: std::env::temp_dir().join(format!("{name}-{}", std::process::id())),
        postgres: None,
    })
}

async fn soak_command(args: SoakArgs) -> anyhow::Result<()> {
    let launch = local_launch(args.lethedb, "lethedb-soak")?;
    let scratch_dir = launch.scratch_dir.clone();
    let config = soak::SoakConfig {
        duration: Duration::from_secs_f64(args.seconds),
        window: Duration::from_secs_f64(args.window),
        writers: args.writers,
        readers: args.readers,
        throughput_ru: args.throughput_ru,
        ttl_secs: args.ttl,
        change_log_retention_minutes: args.change_log_retention_minutes,
    };
    let outcome = soak::run(&launch, &config).await;
    let _ = std::fs::remove_dir_all(&scratch_dir);
    print_report(outcome?, args.output)
}

/// Prints a run's table and figures, and writes both to `output` when given.
fn print_report(
    (table, figures): (String, serde_json::Value),
    output: Option<PathBuf>,
) -> anyhow::Result<()> {
    println!("{table}");
    println!("{}", serde_json::to_string_pretty(&figures)?);
    if let Some(path) = output {
        std::fs::write(&path, format!("{table}\n```json\n{figures:#}\n```\n"))?;
    }
    Ok(())
}

async fn index_curve_command(args: IndexCurveArgs) -> anyhow::Result<()> {
    let launch = local_launch(args.lethedb, "lethedb-index")?;
    let scratch_dir = launch.scratch_dir.clone();
    let config = index_curve::IndexCurveConfig {
        sizes: args.sizes,
        samples: args.samples,
        pages: args.pages,
        item_bytes: 1024,
        partitions: 16,
        load_clients: 32,
        baseline: args.baseline,
    };
    let outcome = index_curve::run(&launch, &config).await;
    let _ = std::fs::remove_dir_all(&scratch_dir);
    print_report(outcome?, args.output)
}

async fn memory_command(args: MemoryArgs) -> anyhow::Result<()> {
    let launch = local_launch(args.lethedb, "lethedb-memory")?;
    let scratch_dir = launch.scratch_dir.clone();
    let config = memory_per_item::MemoryConfig {
        items: args.items,
        item_bytes: args.item_bytes,
        partitions: 16,
        seed: 42,
        load_clients: 32,
        stores: args.stores,
        policies: args.policies,
        baseline: args.baseline,
    };
    let outcome = memory_per_item::run(&launch, &config).await;
    let _ = std::fs::remove_dir_all(&scratch_dir);
    print_report(outcome?, args.output)
}

async fn scripts_command(args: ScriptsArgs) -> anyhow::Result<()> {
    let endpoint = cosmos::Endpoint::new(args.endpoint.clone(), false, &args.key)?;
    let config = scripts::ScriptsConfig {
        clients: args.clients,
        duration: Duration::from_secs_f64(args.duration),
        import_items: args.import_items,
        rounds: args.rounds.max(1),
    };
    let result = scripts::run(endpoint, &config).await?;
    println!("{}", serde_json::to_string_pretty(&result)?);
    Ok(())
}

async fn run_command(args: RunArgs) -> anyhow::Result<()> {
    let shape = &args.shape;
    let endpoint = cosmos::Endpoint::new(args.endpoint.clone(), shape.tls, &shape.key)?;
    let config = workload::RunConfig {
        clients: shape.clients,
        warmup: Duration::from_secs_f64(shape.warmup.unwrap_or(1.0)),
        duration: Duration::from_secs_f64(shape.duration.unwrap_or(5.0)),
        page_items: shape.page_items,
        indexing_none: shape.indexing_none,
        data: data::DataSet {
            items: shape.items.unwrap_or(20_000),
            partitions: shape.partitions,
            item_bytes: shape.item_bytes,
            seed: shape.seed,
        },
    };
    let paths = if args.skip_setup {
        cosmos::ContainerPaths::new(resources::DATABASE_ID, "items")
    } else {
        workload::prepare(&endpoint, "items", &config, 32).await?
    };
    let summary = workload::run(&endpoint, &paths, args.workload, &config).await?;
    println!(
        "{}",
        serde_json::to_string_pretty(&serde_json::json!({
            "workload": args.workload.name(),
            "summary": summary.to_json(),
        }))?
    );
    if summary.error_count > 0 {
        anyhow::bail!("{} requests failed", summary.error_count);
    }
    Ok(())
}
