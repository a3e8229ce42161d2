//! The `lethedb` binary: parses the command line, opens the store, starts the engine, the
//! sweeper and the HTTP(S) listener, and shuts down cleanly on SIGINT or SIGTERM.

use anyhow::Context as _;
use axum_server::accept::DefaultAcceptor;
use clap::Parser as _;
use lethedb_engine::{Clock, Engine, EngineConfig, OffsetClock, SystemClock};
use lethedb_server::cli::{advertised_endpoint, Cli, Command, ServeArgs};
use lethedb_server::listen::{self, limit_slow_clients, FirstByte};
use lethedb_server::metrics::Metrics;
use lethedb_server::{app, metrics_router, secrets, tls, wire_status, AppState, MetricsRoute};
use lethedb_storage::{MemoryStore, PgStore, RedbStore, Storage};
use std::sync::Arc;
use std::time::Duration;

/// The file of the durable store inside the data directory.
/// mimalloc instead of glibc's malloc: requests allocate many small short-lived buffers, and
/// glibc's allocator was a third of a point read's instructions (bench/results/write-path.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const STORE_FILE: &str = "lethedb.redb";
/// How long open requests may finish after SIGINT or SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
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
            runtime.block_on(serve(args))
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

fn open_durable(args: &ServeArgs) -> anyhow::Result<Arc<dyn Storage>> {
    let store = RedbStore::open_with_cache(
        &args.data_dir.join(STORE_FILE),
        args.cache_mb.saturating_mul(1024 * 1024),
    )
    .context("cannot open the store")?;
    Ok(Arc::new(store))
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let key = secrets::load_key(args.key.as_deref(), args.key_file.as_deref())
        .map_err(anyhow::Error::msg)?;
    secrets::check_exposure(args.bind, &key, args.allow_emulator_key_on_network)
        .map_err(anyhow::Error::msg)?;
    let mut store_name = args.data_dir.display().to_string();
    let store: Arc<dyn Storage> = if args.in_memory {
        store_name = "in-memory".to_string();
        Arc::new(MemoryStore::new())
    } else if let Some(url) = args.postgres.as_deref() {
        let store = PgStore::open(url).context("cannot open the PostgreSQL store")?;
        // Named without its password.
        store_name = store.target().to_string();
        Arc::new(store)
    } else {
        std::fs::create_dir_all(&args.data_dir).with_context(|| {
            format!(
                "cannot create the data directory {}",
                args.data_dir.display()
            )
        })?;
        open_durable(&args)?
    };
    let config = EngineConfig {
        write_batch_max: args.write_batch_max,
        default_throughput_ru: args.default_throughput,
        rate_limit: !args.no_rate_limit,
        document_cache_bytes: args.document_cache_mb.saturating_mul(1024 * 1024),
        partition_key_ranges: args.partition_key_ranges.map(usize::from),
        change_log_retention_minutes: args.change_feed_retention_minutes,
        throughput_instances: args.throughput_instances,
        sweeper: lethedb_engine::SweeperConfig {
            unlimited_deletions_per_sec_max: args.sweep_max_per_sec,
            ..lethedb_engine::SweeperConfig::default()
        },
        ..EngineConfig::new(wire_status)
    };
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

    let material = if args.tls {
        let explicit = args.tls_cert.as_deref().zip(args.tls_key.as_deref());
        // On PostgreSQL the data directory holds only the generated certificate.
        if args.postgres.is_some() && explicit.is_none() {
            std::fs::create_dir_all(&args.data_dir).with_context(|| {
                format!(
                    "cannot create the data directory {}",
                    args.data_dir.display()
                )
            })?;
        }
        let data_dir = (!args.in_memory).then_some(args.data_dir.as_path());
        Some(tls::load_or_generate(explicit, data_dir)?)
    } else {
        None
    };
    let metrics = (!args.no_metrics).then(|| Arc::new(Metrics::new(engine.clone())));
    // Bound before the state is built: the advertised endpoint defaults to the bound address
    // (port 0 resolved).
    let listener =
        listen::bind(args.bind).with_context(|| format!("cannot listen on {}", args.bind))?;
    let header_timeout = Duration::from_secs(args.header_timeout_secs);
    let address = listener.local_addr()?;
    let endpoint = advertised_endpoint(args.advertise_url.as_deref(), address, material.is_some())
        .map_err(anyhow::Error::msg)?;
    let state = AppState {
        endpoint: endpoint.as_str().into(),
        engine,
        key,
        certificate_pem: material
            .as_ref()
            .map(|m| Arc::new(m.certificate_pem.clone())),
        metrics: metrics.clone(),
        // Without metrics, the main port answers `/metrics` with "turned off".
        metrics_route: if metrics.is_some() {
            secrets::metrics_route(address, args.metrics_bind.is_some(), args.metrics_public)
        } else {
            MetricsRoute::Served
        },
        entra_id: !args.no_entra_id,
    };
    let mut metrics_task = None;
    if let (Some(address), Some(_)) = (args.metrics_bind, &metrics) {
        // Metrics on a port of their own: the same endpoint, nothing else routed there.
        let metrics_router = metrics_router(state.clone());
        let listener = listen::bind(address)
            .with_context(|| format!("cannot listen on {address} for metrics"))?;
        tracing::info!("metrics on http://{}/metrics", listener.local_addr()?);
        let mut server = axum_server::from_tcp(listener)?
            .acceptor(FirstByte::new(DefaultAcceptor, header_timeout));
        limit_slow_clients(server.http_builder(), header_timeout);
        metrics_task = Some(tokio::spawn(async move {
            let _ = server.serve(metrics_router.into_make_service()).await;
        }));
    }
    let state_key = state.key.clone();
    // Kept to close the store once every other handle is gone.
    let engine = state.engine.clone();
    drop(metrics);
    let router = app(state);
    let scheme = if material.is_some() { "https" } else { "http" };
    // The key signs requests and resource tokens: only the emulator's public one is named, any
    // other only by its fingerprint.
    let key_label = secrets::key_label(&state_key);
    tracing::info!(
        "LetheDB listening on {scheme}://{address}/ advertised={endpoint} store={store_name} key={key_label}"
    );

    let handle = axum_server::Handle::new();
    let shutdown_handle = handle.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        shutdown_handle.graceful_shutdown(Some(SHUTDOWN_GRACE));
    });
    match material {
        None => {
            let mut server = axum_server::from_tcp(listener)?
                .acceptor(FirstByte::new(DefaultAcceptor, header_timeout));
            limit_slow_clients(server.http_builder(), header_timeout);
            server
                .handle(handle)
                .serve(router.into_make_service())
                .await?;
        }
        Some(material) => {
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
            server
                .handle(handle)
                .serve(router.into_make_service())
                .await?;
        }
    }
    sweeper.stop().await;
    if let Some(task) = metrics_task {
        task.abort();
        let _ = task.await;
    }
    // Closing the engine joins the writer and drops the store, so redb records a clean shutdown
    // and the next start need not verify the whole file.
    if !engine.close() {
        tracing::warn!("the store was still in use at shutdown; the next start will check it");
    }
    tracing::info!("LetheDB stopped");
    Ok(())
}
