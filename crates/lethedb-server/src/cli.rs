//! The command line: `lethedb serve` and its flags, each with an environment variable.
//!
//! This module only declares and validates settings; `main.rs` acts on them.

use clap::{Args, Parser, Subcommand};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
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
    Serve(Box<ServeArgs>),
    /// Write a stopped store's databases, containers and items to a folder that `serve --seed`
    /// imports (see `docs/test-data.md`).
    Export(ExportArgs),
    /// Apply a folder (or file) that `export` wrote, or any seed, to a stopped store: the same
    /// as `serve --seed` without serving (see `docs/test-data.md`).
    Import(ImportArgs),
    /// Save, restore, list or delete named snapshots of a stopped durable store (a running
    /// server does the same at `/_lethedb/snapshots`; see `docs/test-data.md`).
    Snapshot(SnapshotArgs),
}

/// Which durable store a data directory holds (`--store`): redb unless told otherwise.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StoreKind {
    /// One redb file (`lethedb.redb`): one writer, copy-on-write B-trees. The default.
    #[default]
    Redb,
    /// A fjall LSM tree (the folder `lethedb.fjall`): writes to different partitions commit
    /// on several writer lanes side by side (`--writer-lanes`; docs/storage.md). Opt-in.
    Fjall,
}

#[derive(Args, Debug, Clone)]
pub struct SnapshotArgs {
    /// Directory of the durable store (it must not be open in a running server).
    #[arg(long, env = "LETHEDB_DATA_DIR", default_value = "./lethedb-data")]
    pub data_dir: PathBuf,
    #[command(subcommand)]
    pub action: SnapshotAction,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum SnapshotAction {
    /// Save the store under NAME, replacing a snapshot of that name.
    Save { name: String },
    /// Return the store to the snapshot NAME.
    Restore { name: String },
    /// Forget the snapshot NAME.
    Delete { name: String },
    /// Print the names of the snapshots, one per line.
    List,
}

#[derive(Args, Debug, Clone)]
pub struct ImportArgs {
    /// Directory of the durable store to write (created if missing; it must not be open in a
    /// running server).
    #[arg(long, env = "LETHEDB_DATA_DIR", default_value = "./lethedb-data")]
    pub data_dir: PathBuf,
    /// Which durable store the data directory holds (or gets): redb or fjall.
    #[arg(long, env = "LETHEDB_STORE", value_enum, default_value_t = StoreKind::Redb)]
    pub store: StoreKind,
    /// Write into this PostgreSQL store instead of the data directory.
    #[arg(long, env = "LETHEDB_POSTGRES", hide_env_values = true)]
    pub postgres: Option<String>,
    /// The folder (or seed file) to import.
    #[arg(long)]
    pub from: PathBuf,
}

#[derive(Args, Debug, Clone)]
pub struct ExportArgs {
    /// Directory of the durable store to read (it must not be open in a running server).
    #[arg(long, env = "LETHEDB_DATA_DIR", default_value = "./lethedb-data")]
    pub data_dir: PathBuf,
    /// Which durable store the data directory holds: redb or fjall.
    #[arg(long, env = "LETHEDB_STORE", value_enum, default_value_t = StoreKind::Redb)]
    pub store: StoreKind,
    /// Read this PostgreSQL store instead of the data directory.
    #[arg(long, env = "LETHEDB_POSTGRES", hide_env_values = true)]
    pub postgres: Option<String>,
    /// The folder to write (created if missing).
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port; the log says which).
    #[arg(long, env = "LETHEDB_BIND", default_value = "127.0.0.1:8081")]
    pub bind: SocketAddr,
    /// Directory of the durable store.
    #[arg(long, env = "LETHEDB_DATA_DIR", default_value = "./lethedb-data")]
    pub data_dir: PathBuf,
    /// Which durable store keeps the data directory: `redb` (the default: one file, one
    /// writer) or `fjall` (opt-in: an LSM tree whose writes to different partitions commit on
    /// several writer lanes side by side; docs/storage.md). A directory holds one kind; move
    /// between them by export and import. Ignored with --in-memory or --postgres.
    #[arg(long, env = "LETHEDB_STORE", value_enum, default_value_t = StoreKind::Redb)]
    pub store: StoreKind,
    /// Keep everything in memory (nothing survives a restart).
    #[arg(long, env = "LETHEDB_IN_MEMORY", conflicts_with = "postgres")]
    pub in_memory: bool,
    /// Keep everything in this PostgreSQL database instead of the data directory
    /// (`postgresql://user[:password]@host[:port]/database`); any number of LetheDB processes
    /// on one database serve as one. Prefer the environment variable when the URL holds a
    /// password: a flag is visible to every local user in the process list.
    #[arg(long, env = "LETHEDB_POSTGRES", hide_env_values = true)]
    pub postgres: Option<String>,
    /// How many LetheDB processes serve the same PostgreSQL store: each admits requests, and
    /// sweeps, against 1/n of every container's throughput, so that together they allow what
    /// was provisioned (default 1: each process enforces the whole throughput on its own).
    #[arg(long, env = "LETHEDB_THROUGHPUT_INSTANCES", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub throughput_instances: u32,
    /// Move this process's clock by this many milliseconds (tests of processes whose clocks
    /// disagree; on PostgreSQL the store's clock decides expiry anyway).
    #[arg(
        long,
        env = "LETHEDB_CLOCK_OFFSET_MS",
        default_value_t = 0,
        hide = true,
        allow_hyphen_values = true
    )]
    pub clock_offset_ms: i64,
    /// The master key clients sign requests with (base64; default: the emulator's well-known
    /// key). Prefer --key-file: a flag is visible to every local user in the process list.
    #[arg(long, env = "LETHEDB_KEY", hide_env_values = true)]
    pub key: Option<String>,
    /// A file holding the master key (base64; surrounding whitespace is ignored).
    #[arg(long, env = "LETHEDB_KEY_FILE", conflicts_with = "key")]
    pub key_file: Option<PathBuf>,
    /// Listen on a non-loopback address even with the emulator's well-known key, which anyone
    /// can sign requests with (otherwise the server refuses to start).
    #[arg(long, env = "LETHEDB_ALLOW_EMULATOR_KEY_ON_NETWORK")]
    pub allow_emulator_key_on_network: bool,
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
    /// How large the redb store's redo log grows before a commit checkpoints it into the store
    /// file, in MiB (docs/storage.md): larger writes fewer bytes per write and replays longer
    /// after a crash. Ignored by the other stores.
    #[arg(long, env = "LETHEDB_REDO_CHECKPOINT_MB", default_value_t = 64)]
    pub redo_checkpoint_mb: u64,
    /// How many MiB of committed changes the redb store keeps in memory, durable in its redo
    /// log, before it writes them into the store file at once (docs/storage.md): larger spends
    /// fewer instructions per write and more memory; 0 writes every commit. Ignored by the
    /// other stores.
    #[arg(long, env = "LETHEDB_REDO_STAGED_MB", default_value_t = 8)]
    pub redo_staged_mb: usize,
    /// Memory for parsed documents that speeds up queries, in MiB, and a quarter more for the
    /// documents of writes that replaced an item, which the item's next write reads instead of
    /// parsing its stored body again (0 turns both off).
    #[arg(long, env = "LETHEDB_DOCUMENT_CACHE_MB", default_value_t = 64)]
    pub document_cache_mb: usize,
    /// The most writes one durable commit carries (1 turns group commit off).
    #[arg(long, env = "LETHEDB_WRITE_BATCH_MAX", default_value_t = 512)]
    pub write_batch_max: usize,
    /// With --postgres or --store fjall: how many write transactions this process keeps in
    /// flight at once, each for its own shards (docs/scale-out.md, docs/storage.md). Default:
    /// 1 on PostgreSQL, one per core on fjall; redb and --in-memory always have one.
    #[arg(long, env = "LETHEDB_WRITER_LANES",
          value_parser = clap::value_parser!(u16).range(1..=64))]
    pub writer_lanes: Option<u16>,
    /// With --postgres, for a store this process creates: hash-partition its per-item tables
    /// by bucket into this many partitions (0: plain tables; docs/scale-out.md). A store
    /// created earlier keeps its layout.
    #[arg(long, env = "LETHEDB_POSTGRES_PARTITIONS", default_value_t = 0,
          value_parser = clap::value_parser!(u16).range(0..=1024))]
    pub postgres_partitions: u16,
    /// Never answer 429: charges are still computed and reported (like the emulator's switch).
    #[arg(long, env = "LETHEDB_NO_RATE_LIMIT")]
    pub no_rate_limit: bool,
    /// Run every query page an index can serve both through the index and as a scan, and fail
    /// it with an internal error naming the query when the pages differ (for CI runs of the
    /// test suites; each such page costs both plans).
    #[arg(long, env = "LETHEDB_QUERY_VERIFY", hide = true)]
    pub query_verify: bool,
    /// RU/s for containers with no throughput of their own or shared (default: unlimited).
    #[arg(long, env = "LETHEDB_DEFAULT_THROUGHPUT")]
    pub default_throughput: Option<u32>,
    /// Give every new container this many partition key ranges (physical partitions), whatever
    /// its throughput, and never split them (default: as the service lays them out: one range up
    /// to 10,000 RU/s, then one per 6,000 RU/s at creation; docs/compatibility.md, "Range layout").
    #[arg(long, env = "LETHEDB_PARTITION_KEY_RANGES", value_parser = clap::value_parser!(u16).range(1..=100))]
    pub partition_key_ranges: Option<u16>,
    /// How long the all-versions change feed keeps changes of containers whose
    /// `changeFeedPolicy` sets no retention, in minutes.
    #[arg(long, env = "LETHEDB_CHANGE_FEED_RETENTION_MINUTES", default_value_t = 60, value_parser = clap::value_parser!(i64).range(1..=525_600))]
    pub change_feed_retention_minutes: i64,
    /// The most TTL deletions per second on containers without provisioned throughput
    /// (default: as fast as bounded batches allow).
    #[arg(long, env = "LETHEDB_SWEEP_MAX_PER_SEC")]
    pub sweep_max_per_sec: Option<u64>,
    /// Refuse Entra ID (AAD) tokens in the emulator's format, which are otherwise accepted
    /// over HTTPS (`--tls`); master keys and resource tokens keep working.
    #[arg(long, env = "LETHEDB_NO_ENTRA_ID")]
    pub no_entra_id: bool,
    /// Do not collect or serve Prometheus metrics.
    #[arg(long, env = "LETHEDB_NO_METRICS")]
    pub no_metrics: bool,
    /// Serve `GET /metrics` on this address instead of the main one.
    #[arg(long, env = "LETHEDB_METRICS_BIND")]
    pub metrics_bind: Option<SocketAddr>,
    /// Also serve the health probes (`/alive`, `/ready`, `/status`, unauthenticated) on this
    /// address, alone, as orchestrators probe a port of their own (the vNext emulator image
    /// uses 8080). They are on the main port too.
    #[arg(long, env = "LETHEDB_PROBE_BIND")]
    pub probe_bind: Option<SocketAddr>,
    /// Also serve the account on this port of the --bind address as the service's compute
    /// gateway serves it (the emulator's port 8903; off by default): the same data and key,
    /// over TLS with --tls, advertising its own endpoint (--advertise-url's host with this
    /// port). It reads a path's ids as sent where the main port, like the routing gateway,
    /// refuses a point operation on an id ending in whitespace or holding `%xx` (401).
    #[arg(long, env = "LETHEDB_COMPUTE_GATEWAY_PORT")]
    pub compute_gateway_port: Option<u16>,
    /// Fault rules in force from the start: a JSON array of the rules `/_lethedb/faults`
    /// accepts (see `docs/faults.md`).
    #[arg(long, env = "LETHEDB_FAULTS")]
    pub faults: Option<std::path::PathBuf>,
    /// Test data applied at start and again by `POST /_lethedb/reset`: a JSON file of
    /// databases, containers and items, or a folder of them (see `docs/test-data.md`).
    #[arg(long, env = "LETHEDB_SEED")]
    pub seed: Option<std::path::PathBuf>,
    /// Serve `GET /metrics` (unauthenticated) on the main port even when it listens on a
    /// non-loopback address (otherwise only on loopback).
    #[arg(long, env = "LETHEDB_METRICS_PUBLIC")]
    pub metrics_public: bool,
    /// How long a client may take to send a request's headers, in seconds, and how long an
    /// idle connection stays open; slower clients are disconnected.
    #[arg(long, env = "LETHEDB_HEADER_TIMEOUT_SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_timeout_secs: u64,
    /// The URL the account advertises as its one region's endpoint (`writableLocations` and
    /// `readableLocations`), which SDKs then send every request to. Default: the bound address,
    /// with an unspecified address (0.0.0.0, [::]) shown as loopback (127.0.0.1, [::1]), never
    /// taken from a request's Host header. `host:port` gets the scheme the server speaks.
    /// `auto` (opt-in) answers each client with the host and port it used, so a server behind a
    /// mapped port (a container's random host port) is found where its client reached it.
    #[arg(long, env = "LETHEDB_ADVERTISE_URL")]
    pub advertise_url: Option<String>,
    /// Log filter, in tracing's EnvFilter syntax.
    #[arg(long, env = "LETHEDB_LOG", default_value = "info")]
    pub log: String,
}

/// Whether `text` is a plain `host[:port]`: no user, path, query or anything else a URL built
/// around it would misread. Checks `--advertise-url` and, with `auto`, a request's `Host`.
pub fn is_plain_authority(text: &str) -> bool {
    !text.is_empty()
        && !text.contains(['/', '?', '#', '@', ' ', '\\'])
        && text.parse::<axum::http::uri::Authority>().is_ok()
}

/// The endpoint the account advertises: `advertise` (`scheme://host[:port][/]` or
/// `host[:port]`), else the bound address with an unspecified address shown as loopback. The
/// scheme must be the one served (https with TLS); the result ends with `/`.
pub fn advertised_endpoint(
    advertise: Option<&str>,
    bound: SocketAddr,
    tls: bool,
) -> Result<String, String> {
    let scheme = if tls { "https" } else { "http" };
    let Some(advertise) = advertise.map(str::trim) else {
        let ip = match bound.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        return Ok(format!("{scheme}://{}/", SocketAddr::new(ip, bound.port())));
    };
    let (given_scheme, rest) = match advertise.split_once("://") {
        Some((given, rest)) => (Some(given.to_ascii_lowercase()), rest),
        None => (None, advertise),
    };
    if let Some(given) = given_scheme.as_deref() {
        if given != scheme {
            return Err(format!(
                "--advertise-url {advertise:?} must use {scheme}:// (TLS is {})",
                if tls { "on" } else { "off" }
            ));
        }
    }
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if !is_plain_authority(authority) {
        return Err(format!(
            "--advertise-url {advertise:?} must be {scheme}://host[:port]/ (no path, query or user)"
        ));
    }
    Ok(format!("{scheme}://{authority}/"))
}

#[cfg(test)]
mod tests {
    use super::advertised_endpoint;

    #[test]
    fn the_advertised_endpoint_defaults_to_the_bound_address_on_loopback() {
        let cases = [
            ("127.0.0.1:8081", false, "http://127.0.0.1:8081/"),
            ("0.0.0.0:8081", false, "http://127.0.0.1:8081/"),
            ("0.0.0.0:8081", true, "https://127.0.0.1:8081/"),
            ("[::]:8081", false, "http://[::1]:8081/"),
            ("10.1.2.3:9", true, "https://10.1.2.3:9/"),
        ];
        for (bound, tls, want) in cases {
            let bound = bound.parse().expect("address");
            assert_eq!(advertised_endpoint(None, bound, tls).as_deref(), Ok(want));
        }
    }

    #[test]
    fn an_advertised_url_is_used_as_given_with_the_served_scheme() {
        let bound = "0.0.0.0:8081".parse().expect("address");
        let ok = [
            (
                "http://cosmos.example:8081/",
                false,
                "http://cosmos.example:8081/",
            ),
            (
                "http://cosmos.example:8081",
                false,
                "http://cosmos.example:8081/",
            ),
            ("cosmos.example:443", true, "https://cosmos.example:443/"),
            ("HTTPS://[::1]:8081/", true, "https://[::1]:8081/"),
        ];
        for (given, tls, want) in ok {
            assert_eq!(
                advertised_endpoint(Some(given), bound, tls).as_deref(),
                Ok(want)
            );
        }
        for (given, tls) in [
            ("http://h:1/", true),
            ("https://h:1/", false),
            ("http://h:1/path", false),
            ("http://user@h:1/", false),
            ("", false),
        ] {
            assert!(
                advertised_endpoint(Some(given), bound, tls).is_err(),
                "{given}"
            );
        }
    }
}
