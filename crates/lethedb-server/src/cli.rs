//! The command line: `lethedb serve` and its flags, each with an environment variable.
//!
//! This module only declares and validates settings; `main.rs` acts on them.

use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

/// The well-known master key of the Cosmos DB emulator, the default for `--key`.
pub use lethedb_auth::EMULATOR_KEY;

#[derive(Parser, Debug)]
#[command(
    name = "lethedb",
    version,
    about = "A Cosmos DB for NoSQL compatible server with exact time to live."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the Cosmos DB REST API.
    Serve(ServeArgs),
}

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port; the log says which).
    #[arg(long, env = "LETHEDB_BIND", default_value = "127.0.0.1:8081")]
    pub bind: SocketAddr,
    /// Directory of the durable store.
    #[arg(long, env = "LETHEDB_DATA_DIR", default_value = "./lethedb-data")]
    pub data_dir: PathBuf,
    /// Keep everything in memory (nothing survives a restart).
    #[arg(long, env = "LETHEDB_IN_MEMORY")]
    pub in_memory: bool,
    /// The master key clients sign requests with (base64).
    #[arg(long, env = "LETHEDB_KEY", default_value = EMULATOR_KEY, hide_default_value = true)]
    pub key: String,
    /// Serve HTTPS with a self-signed certificate for localhost/127.0.0.1, generated into the
    /// data directory on first start (or given with --tls-cert and --tls-key).
    #[arg(long, env = "LETHEDB_TLS")]
    pub tls: bool,
    /// PEM certificate chain for --tls.
    #[arg(long, env = "LETHEDB_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for --tls.
    #[arg(long, env = "LETHEDB_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// The storage page cache, in MiB (most of the server's memory; reads beyond it go to the
    /// operating system's page cache).
    #[arg(long, env = "LETHEDB_CACHE_MB", default_value_t = 64)]
    pub cache_mb: usize,
    /// Memory for parsed documents that speeds up queries, in MiB (0 turns it off).
    #[arg(long, env = "LETHEDB_DOCUMENT_CACHE_MB", default_value_t = 64)]
    pub document_cache_mb: usize,
    /// The most writes one durable commit carries (1 turns group commit off).
    #[arg(long, env = "LETHEDB_WRITE_BATCH_MAX", default_value_t = 512)]
    pub write_batch_max: usize,
    /// Never answer 429: charges are still computed and reported (like the emulator's switch).
    #[arg(long, env = "LETHEDB_NO_RATE_LIMIT")]
    pub no_rate_limit: bool,
    /// RU/s for containers with no throughput of their own or shared (default: unlimited).
    #[arg(long, env = "LETHEDB_DEFAULT_THROUGHPUT")]
    pub default_throughput: Option<u32>,
    /// Give every new container this many partition key ranges (physical partitions), whatever
    /// its throughput, and never split them (default: one per 10,000 RU/s, as the service does).
    #[arg(long, env = "LETHEDB_PARTITION_KEY_RANGES", value_parser = clap::value_parser!(u16).range(1..=100))]
    pub partition_key_ranges: Option<u16>,
    /// The most TTL deletions per second on containers without provisioned throughput
    /// (default: as fast as bounded batches allow).
    #[arg(long, env = "LETHEDB_SWEEP_MAX_PER_SEC")]
    pub sweep_max_per_sec: Option<u64>,
    /// Do not collect or serve Prometheus metrics.
    #[arg(long, env = "LETHEDB_NO_METRICS")]
    pub no_metrics: bool,
    /// Serve `GET /metrics` on this address instead of the main one.
    #[arg(long, env = "LETHEDB_METRICS_BIND")]
    pub metrics_bind: Option<SocketAddr>,
    /// Log filter, in tracing's EnvFilter syntax.
    #[arg(long, env = "LETHEDB_LOG", default_value = "info")]
    pub log: String,
}
