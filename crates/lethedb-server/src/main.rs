//! The `lethedb` binary: parses the command line, opens the store, starts the engine, the
//! sweeper and the HTTP(S) listener, and shuts down cleanly on SIGINT or SIGTERM.

use anyhow::Context as _;
use axum_server::accept::DefaultAcceptor;
use clap::Parser as _;
use lethedb_auth::MasterKey;
use lethedb_engine::SweeperHandle;
use lethedb_engine::{Clock, Engine, EngineConfig, OffsetClock, SystemClock};
use lethedb_server::cli::{
    Cli, Command, ExportArgs, ImportArgs, ServeArgs, SnapshotAction, SnapshotArgs, StoreKind,
};
use lethedb_server::faults::Faults;
use lethedb_server::listen::{self, limit_slow_clients, FirstByte};
use lethedb_server::metrics::Metrics;
use lethedb_server::seed::Seed;
use lethedb_server::tls::{self, TlsMaterial};
use lethedb_server::{
    app, metrics_router, probe_router, secrets, wire_status, AppState, Endpoint, Gateway,
    MetricsRoute,
};
use lethedb_storage::{FjallStore, MemoryStore, PgOptions, PgStore, RedbStore, Storage};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// mimalloc instead of glibc's malloc: requests allocate many small short-lived buffers, and
/// glibc's allocator was a third of a point read's instructions (bench/results/write-path.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The file of the durable store inside the data directory.
const STORE_FILE: &str = "lethedb.redb";
/// The folder of the fjall store (`--store fjall`) inside the data directory.
const FJALL_DIR: &str = "lethedb.fjall";
/// How long open requests may finish after SIGINT or SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Export(args) => export(&args),
        Command::Import(args) => import(&args),
        Command::Snapshot(args) => snapshot(&args),
        Command::Serve(args) => {
            tracing_subscriber::fmt()
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_new(&args.log)
                        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
                )
                .with_target(false)
                .init();
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            runtime.block_on(serve(*args))
        }
    }
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
        let Ok(mut terminate) = terminate else {
            let _ = interrupt.await;
            return;
        };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

fn create_data_dir(args: &ServeArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.data_dir).with_context(|| {
        format!(
            "cannot create the data directory {}",
            args.data_dir.display()
        )
    })
}

/// The store the arguments name, and how the log names it.
fn open_store(args: &ServeArgs) -> anyhow::Result<(Arc<dyn Storage>, String)> {
    if args.in_memory {
        return Ok((Arc::new(MemoryStore::new()), "in-memory".to_string()));
    }
    if let Some(url) = args.postgres.as_deref() {
        let store = open_postgres(url, args.postgres_partitions)?;
        // Named without its password.
        let name = store.target().to_string();
        return Ok((Arc::new(store), name));
    }
    create_data_dir(args)?;
    let memory = StoreMemory {
        cache_mb: args.cache_mb,
        redo_checkpoint_mb: args.redo_checkpoint_mb,
        redo_staged_mb: args.redo_staged_mb,
    };
    let store =
        open_durable(&args.data_dir, args.store, memory).context("cannot open the store")?;
    Ok((store, args.data_dir.display().to_string()))
}

/// How much memory a durable store may use: its cache, and (redb) the redo log it lets grow
/// before a checkpoint and the committed changes it keeps before writing them into its file.
struct StoreMemory {
    cache_mb: usize,
    redo_checkpoint_mb: u64,
    redo_staged_mb: usize,
}

/// Opens (or creates) the durable store of `kind` in `data_dir`, with `memory`. A directory that holds only the other kind is refused rather than given an
/// empty store beside it: a forgotten `--store` must not look like lost data.
fn open_durable(
    data_dir: &std::path::Path,
    kind: StoreKind,
    memory: StoreMemory,
) -> anyhow::Result<Arc<dyn Storage>> {
    let (file, folder) = (data_dir.join(STORE_FILE), data_dir.join(FJALL_DIR));
    let cache_bytes = memory.cache_mb.saturating_mul(1024 * 1024);
    let refuse = |holds: &str, flag: &str| {
        anyhow::anyhow!(
            "{} holds a {holds} store and no other: start with --store {flag} \
             (move a store between kinds with `lethedb export` and `lethedb import`)",
            data_dir.display()
        )
    };
    match kind {
        StoreKind::Redb => {
            if folder.exists() && !file.exists() {
                return Err(refuse("fjall", "fjall"));
            }
            Ok(Arc::new(
                RedbStore::open_with_checkpoint(
                    &file,
                    cache_bytes,
                    memory.redo_checkpoint_mb.saturating_mul(1024 * 1024),
                )?
                .with_staged_bytes(memory.redo_staged_mb.saturating_mul(1024 * 1024)),
            ))
        }
        StoreKind::Fjall => {
            if file.exists() && !folder.exists() {
                return Err(refuse("redb", "redb"));
            }
            Ok(Arc::new(FjallStore::open_with_memory(
                &folder,
                cache_bytes as u64,
            )?))
        }
    }
}

/// `lethedb export`: opens the store (never creating one) and writes its seed folder.
fn export(args: &ExportArgs) -> anyhow::Result<()> {
    let store = offline_store(&args.data_dir, args.store, args.postgres.as_deref(), false)?;
    let exported = with_offline_engine(store, |engine| async move {
        lethedb_server::export::export(&engine, &args.out).await
    })?;
    println!("{}", serde_json::to_string(&exported)?);
    Ok(())
}

/// The store a command that serves nothing works on: PostgreSQL, else the data directory's
/// store of `kind` (created when `create`, else it must exist), which no running server may
/// hold.
fn offline_store(
    data_dir: &std::path::Path,
    kind: StoreKind,
    postgres: Option<&str>,
    create: bool,
) -> anyhow::Result<Arc<dyn Storage>> {
    if let Some(url) = postgres {
        return Ok(Arc::new(open_postgres(url, 0)?));
    }
    let path = data_dir.join(match kind {
        StoreKind::Redb => STORE_FILE,
        StoreKind::Fjall => FJALL_DIR,
    });
    if create {
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("cannot create {}", data_dir.display()))?;
    } else {
        anyhow::ensure!(path.exists(), "there is no store at {}", path.display());
    }
    let memory = StoreMemory {
        cache_mb: lethedb_storage::CACHE_BYTES_DEFAULT / (1024 * 1024),
        redo_checkpoint_mb: lethedb_storage::CHECKPOINT_LOG_BYTES_DEFAULT / (1024 * 1024),
        redo_staged_mb: lethedb_storage::STAGED_BYTES_DEFAULT / (1024 * 1024),
    };
    open_durable(data_dir, kind, memory).context("cannot open the store (is a server using it?)")
}

/// Runs `work` on an engine over `store` and closes the engine, whatever `work` answered.
fn with_offline_engine<T, F, W>(store: Arc<dyn Storage>, work: W) -> anyhow::Result<T>
where
    W: FnOnce(Engine) -> F,
    F: std::future::Future<Output = anyhow::Result<T>>,
{
    let engine = Engine::open(store, Arc::new(SystemClock), EngineConfig::new(wire_status))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(work(engine.clone()));
    engine.close();
    outcome
}

/// `lethedb import`: a seed (what `export` wrote) applied to a stopped store through the
/// engine, as `serve --seed` applies it, each item keeping the instant it was last modified.
fn import(args: &ImportArgs) -> anyhow::Result<()> {
    let seed = Seed::load(&args.from)?;
    let store = offline_store(&args.data_dir, args.store, args.postgres.as_deref(), true)?;
    let imported = with_offline_engine(store, |engine| async move { seed.apply(&engine).await })?;
    println!("{}", serde_json::to_string(&imported)?);
    Ok(())
}

/// `lethedb snapshot`: the store's own snapshots, without an engine (nothing else runs).
fn snapshot(args: &SnapshotArgs) -> anyhow::Result<()> {
    let file = args.data_dir.join(STORE_FILE);
    anyhow::ensure!(file.is_file(), "there is no store at {}", file.display());
    let store = RedbStore::open(&file).context("cannot open the store (is a server using it?)")?;
    let snapshots = store.snapshots().context("this store keeps no snapshots")?;
    match &args.action {
        SnapshotAction::Save { name } => snapshots.save(name)?,
        SnapshotAction::Restore { name } => {
            anyhow::ensure!(
                snapshots.restore(name)?,
                "there is no snapshot named {name}"
            );
        }
        SnapshotAction::Delete { name } => {
            anyhow::ensure!(snapshots.delete(name)?, "there is no snapshot named {name}");
        }
        SnapshotAction::List => {
            for name in snapshots.names()? {
                println!("{name}");
            }
        }
    }
    Ok(())
}

/// The engine's settings, as the command line gives them.
fn engine_config(args: &ServeArgs) -> EngineConfig {
    EngineConfig {
        write_batch_max: args.write_batch_max,
        writer_lanes: args.writer_lanes.map(usize::from),
        default_throughput_ru: args.default_throughput,
        rate_limit: !args.no_rate_limit,
        document_cache_bytes: args.document_cache_mb.saturating_mul(1024 * 1024),
        partition_key_ranges: args.partition_key_ranges.map(usize::from),
        change_log_retention_minutes: args.change_feed_retention_minutes,
        throughput_instances: args.throughput_instances,
        query_verify: args.query_verify,
        sweeper: lethedb_engine::SweeperConfig {
            unlimited_deletions_per_sec_max: args.sweep_max_per_sec,
            ..lethedb_engine::SweeperConfig::default()
        },
        ..EngineConfig::new(wire_status)
    }
}

/// Opens the store and the engine over it, and starts the sweeper; answers the store's name.
fn start_engine(args: &ServeArgs) -> anyhow::Result<(Engine, SweeperHandle, String)> {
    let (store, store_name) = open_store(args)?;
    let config = engine_config(args);
    let sweeper_config = config.sweeper.clone();
    let clock: Arc<dyn Clock> = if args.clock_offset_ms == 0 {
        Arc::new(SystemClock)
    } else {
        Arc::new(OffsetClock {
            offset_ms: args.clock_offset_ms,
        })
    };
    let engine = Engine::open(store, clock, config)?;
    let sweeper = engine.start_sweeper(sweeper_config);
    Ok((engine, sweeper, store_name))
}

/// The certificate and key for `--tls`, given or generated (and kept in the data directory).
fn tls_material(args: &ServeArgs) -> anyhow::Result<Option<TlsMaterial>> {
    if !args.tls {
        return Ok(None);
    }
    let explicit = args.tls_cert.as_deref().zip(args.tls_key.as_deref());
    // On PostgreSQL the data directory holds only the generated certificate.
    if args.postgres.is_some() && explicit.is_none() {
        create_data_dir(args)?;
    }
    let data_dir = (!args.in_memory).then_some(args.data_dir.as_path());
    Ok(Some(tls::load_or_generate(explicit, data_dir)?))
}

/// The state every request sees, for the listener bound at `address`.
fn build_state(
    args: &ServeArgs,
    engine: Engine,
    key: MasterKey,
    material: Option<&TlsMaterial>,
    (address, endpoint): (SocketAddr, Endpoint),
) -> AppState {
    let metrics = (!args.no_metrics).then(|| Arc::new(Metrics::new(engine.clone())));
    // Without metrics, the main port answers `/metrics` with "turned off".
    let metrics_route = if metrics.is_some() {
        secrets::metrics_route(address, args.metrics_bind.is_some(), args.metrics_public)
    } else {
        MetricsRoute::Served
    };
    AppState {
        endpoint,
        engine,
        key,
        certificate_pem: material.map(|m| Arc::new(m.certificate_pem.clone())),
        metrics,
        metrics_route,
        entra_id: !args.no_entra_id,
        faults: Arc::default(),
        seed: None,
        gateway: Gateway::Routing,
    }
}

/// The fault rules of `--faults FILE` (a JSON array of rules), each checked as the API checks
/// it; none without the flag.
fn load_faults(file: Option<&std::path::Path>) -> anyhow::Result<Arc<Faults>> {
    let faults = Arc::new(Faults::default());
    let Some(file) = file else {
        return Ok(faults);
    };
    let text = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let rules: Vec<serde_json::Value> = serde_json::from_slice(&text)
        .with_context(|| format!("{} is not a JSON array of fault rules", file.display()))?;
    for rule in rules {
        let rule = lethedb_server::faults::parse_rule(rule.to_string().as_bytes())
            .map_err(|error| anyhow::anyhow!("{}: {}", file.display(), error.message))?;
        faults.add(rule);
    }
    Ok(faults)
}

/// Metrics on a port of their own (`--metrics-bind`): the same endpoint, nothing else routed
/// there.
fn spawn_metrics_listener(
    args: &ServeArgs,
    state: &AppState,
    header_timeout: Duration,
) -> anyhow::Result<Option<tokio::task::JoinHandle<()>>> {
    let (Some(address), Some(_)) = (args.metrics_bind, &state.metrics) else {
        return Ok(None);
    };
    let listener =
        listen::bind(address).with_context(|| format!("cannot listen on {address} for metrics"))?;
    tracing::info!("metrics on http://{}/metrics", listener.local_addr()?);
    spawn_side_listener(listener, metrics_router(state.clone()), header_timeout).map(Some)
}

/// The health probes on a port of their own (`--probe-bind`).
fn spawn_probe_listener(
    args: &ServeArgs,
    state: &AppState,
    header_timeout: Duration,
) -> anyhow::Result<Option<tokio::task::JoinHandle<()>>> {
    let Some(address) = args.probe_bind else {
        return Ok(None);
    };
    let listener =
        listen::bind(address).with_context(|| format!("cannot listen on {address} for probes"))?;
    tracing::info!("health probes on http://{}/ready", listener.local_addr()?);
    spawn_side_listener(listener, probe_router(state.clone()), header_timeout).map(Some)
}

/// The compute gateway's socket (`--compute-gateway-port`), bound beside the main one so that a
/// taken port stops the start as a taken main port does.
fn bind_compute_gateway(args: &ServeArgs) -> anyhow::Result<Option<std::net::TcpListener>> {
    let Some(port) = args.compute_gateway_port else {
        return Ok(None);
    };
    let address = SocketAddr::new(args.bind.ip(), port);
    let listener = listen::bind(address).with_context(|| {
        format!("cannot listen on {address} for the compute gateway (--compute-gateway-port)")
    })?;
    Ok(Some(listener))
}

/// Serves the account on the compute gateway's socket: the main port's state (engine, key,
/// metrics, faults), its own endpoint and the compute gateway's reading of ids (`Gateway`),
/// over TLS when the main port has it, until `handle` shuts down.
fn spawn_compute_gateway(
    listener: std::net::TcpListener,
    state: &AppState,
    material: Option<TlsMaterial>,
    header_timeout: Duration,
    handle: axum_server::Handle<SocketAddr>,
) -> anyhow::Result<tokio::task::JoinHandle<anyhow::Result<()>>> {
    let address = listener.local_addr()?;
    let mut state = state.clone();
    state.gateway = Gateway::Compute;
    state.endpoint = state.endpoint.on_port(address.port());
    tracing::info!(
        "compute gateway on {address}, advertised={}",
        state.endpoint.configured()
    );
    Ok(tokio::spawn(listen(
        listener,
        material,
        app(state),
        header_timeout,
        handle,
    )))
}

/// Serves a side port's `router` (plain HTTP, with the main port's slow-client deadlines)
/// until the task is aborted.
fn spawn_side_listener(
    listener: std::net::TcpListener,
    router: axum::Router,
    header_timeout: Duration,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let mut server =
        axum_server::from_tcp(listener)?.acceptor(FirstByte::new(DefaultAcceptor, header_timeout));
    limit_slow_clients(server.http_builder(), header_timeout);
    Ok(tokio::spawn(async move {
        let _ = server.serve(router.into_make_service()).await;
    }))
}

/// Serves `router` on `listener`, over TLS when there is material, until `handle` shuts down.
async fn listen(
    listener: std::net::TcpListener,
    material: Option<TlsMaterial>,
    router: axum::Router,
    header_timeout: Duration,
    handle: axum_server::Handle<SocketAddr>,
) -> anyhow::Result<()> {
    let service = router.into_make_service();
    let Some(material) = material else {
        let mut server = axum_server::from_tcp(listener)?
            .acceptor(FirstByte::new(DefaultAcceptor, header_timeout));
        limit_slow_clients(server.http_builder(), header_timeout);
        return Ok(server.handle(handle).serve(service).await?);
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = axum_server::tls_rustls::RustlsConfig::from_pem(
        material.certificate_pem.into_bytes(),
        material.key_pem.into_bytes(),
    )
    .await
    .context("cannot load the TLS certificate")?;
    let mut server = axum_server::from_tcp_rustls(listener, config)?
        .map(|tls| FirstByte::new(tls, header_timeout));
    limit_slow_clients(server.http_builder(), header_timeout);
    Ok(server.handle(handle).serve(service).await?)
}

/// Applies `--seed` to the engine at start (a reset applies it again).
async fn apply_seed(state: &mut AppState, seed: Option<Arc<Seed>>) -> anyhow::Result<()> {
    if let Some(seed) = &seed {
        let seeded = seed.apply(&state.engine).await.context("applying --seed")?;
        tracing::info!(
            databases = seeded.databases,
            containers = seeded.containers,
            items = seeded.items,
            "seed applied"
        );
    }
    state.seed = seed;
    Ok(())
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let key = secrets::load_key(args.key.as_deref(), args.key_file.as_deref())
        .map_err(anyhow::Error::msg)?;
    secrets::check_exposure(args.bind, &key, args.allow_emulator_key_on_network)
        .map_err(anyhow::Error::msg)?;
    let faults = load_faults(args.faults.as_deref())?;
    let seed = match &args.seed {
        Some(path) => Some(Arc::new(Seed::load(path)?)),
        None => None,
    };
    let (engine, sweeper, store_name) = start_engine(&args)?;
    let material = tls_material(&args)?;
    // Bound before the state is built: the advertised endpoint defaults to the bound address
    // (port 0 resolved).
    let listener =
        listen::bind(args.bind).with_context(|| format!("cannot listen on {}", args.bind))?;
    let compute_listener = bind_compute_gateway(&args)?;
    let header_timeout = Duration::from_secs(args.header_timeout_secs);
    let address = listener.local_addr()?;
    let endpoint = Endpoint::from_flag(args.advertise_url.as_deref(), address, material.is_some())
        .map_err(anyhow::Error::msg)?;
    let advertised = endpoint.configured().to_string();
    let compute_advertised = match &compute_listener {
        Some(listener) => Some(endpoint.on_port(listener.local_addr()?.port())),
        None => None,
    };
    // The key signs requests and resource tokens: only the emulator's public one is named, any
    // other only by its fingerprint.
    let key_label = secrets::key_label(&key);
    let ready_line = secrets::ready_line(
        &advertised,
        compute_advertised.as_ref().map(Endpoint::configured),
        engine.store_kind(),
        &key,
    );
    let mut state = build_state(&args, engine, key, material.as_ref(), (address, endpoint));
    state.faults = faults;
    apply_seed(&mut state, seed).await?;
    let side_tasks = [
        spawn_metrics_listener(&args, &state, header_timeout)?,
        spawn_probe_listener(&args, &state, header_timeout)?,
    ];
    let handle = axum_server::Handle::new();
    let compute_handle = axum_server::Handle::new();
    let compute_task = match compute_listener {
        Some(listener) => Some(spawn_compute_gateway(
            listener,
            &state,
            material.clone(),
            header_timeout,
            compute_handle.clone(),
        )?),
        None => None,
    };
    // Kept to close the store once every other handle is gone.
    let engine = state.engine.clone();
    let router = app(state);
    let scheme = if material.is_some() { "https" } else { "http" };
    tracing::info!(
        "LetheDB listening on {scheme}://{address}/ advertised={advertised} store={store_name} key={key_label}"
    );
    // The sockets are bound: a client that connects now waits in its backlog until the router
    // serves, so a harness may go as soon as it reads this line.
    println!("{ready_line}");
    let shutdown_handles = [handle.clone(), compute_handle];
    tokio::spawn(async move {
        shutdown_signal().await;
        for handle in shutdown_handles {
            handle.graceful_shutdown(Some(SHUTDOWN_GRACE));
        }
    });
    listen(listener, material, router, header_timeout, handle).await?;
    if let Some(task) = compute_task {
        task.await??;
    }
    stop(sweeper, side_tasks, engine).await;
    Ok(())
}

/// After the listeners have stopped: the sweeper, the side ports, then the store.
async fn stop(
    sweeper: SweeperHandle,
    side_tasks: [Option<tokio::task::JoinHandle<()>>; 2],
    engine: Engine,
) {
    sweeper.stop().await;
    for task in side_tasks.into_iter().flatten() {
        task.abort();
        let _ = task.await;
    }
    // Closing the engine joins the writer and drops the store, so redb records a clean shutdown
    // and the next start need not verify the whole file.
    if !engine.close() {
        tracing::warn!("the store was still in use at shutdown; the next start will check it");
    }
    tracing::info!("LetheDB stopped");
}

/// The PostgreSQL store at `url`, its keys placed in the engine's buckets (a store created now
/// hash-partitioned into `partitions` when not 0).
fn open_postgres(url: &str, partitions: u16) -> anyhow::Result<PgStore> {
    let mut options = PgOptions::new(Arc::new(lethedb_engine::Buckets));
    options.partitions = partitions;
    PgStore::open_with(url, lethedb_storage::POSTGRES_SCHEMA_DEFAULT, options)
        .context("cannot open the PostgreSQL store")
}
