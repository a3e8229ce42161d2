//! The sections of a comparison and the non-TTL ones: extra cold starts, the throughput
//! workloads against LetheDB, the peer and the hello-world ceiling, and memory after a load.
//!
//! Each section starts its own servers, runs, stops them and records what it measured in the
//! [`Report`]; none formats or judges anything. The TTL sections are in `ttl_sections.rs`.

use crate::config::CompareConfig;
use crate::cosmos::{Client, ContainerPaths, Endpoint};
use crate::data::DataSet;
use crate::pg_sections;
use crate::report::{mb, Measured, Report, Row, RssAfterLoad};
use crate::resources::{create_container, ensure_database, DATABASE_ID};
use crate::server_snapshot::get_json;
use crate::servers::{Kind, Launch};
use crate::stats::round;
use crate::ttl_sections;
use crate::workload::{self, RunConfig, Workload};
use crate::write_probe::WriteProbe;
use serde_json::json;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

/// The parts of a comparison, in the order they run.
#[derive(Clone, Copy)]
pub enum Section {
    /// Cold starts beyond those of the other sections, so the median has a few samples even
    /// when only one workload runs.
    ColdStarts,
    /// The closed-loop workloads (each chosen by its own name with `--only`).
    Workloads,
    Rss,
    TtlSweep,
    TtlLag,
    TtlThroughput,
    TtlAccuracy,
    /// Sweep rate and deletion lag on PostgreSQL (only with `--postgres`).
    TtlPostgres,
}

pub const SECTIONS: &[Section] = &[
    Section::ColdStarts,
    Section::Workloads,
    Section::Rss,
    Section::TtlSweep,
    Section::TtlLag,
    Section::TtlThroughput,
    Section::TtlAccuracy,
    Section::TtlPostgres,
];

impl Section {
    /// The name `--only` selects the section by; `None` for sections that always run or are
    /// selected part by part.
    fn name(self) -> Option<&'static str> {
        match self {
            Section::ColdStarts | Section::Workloads => None,
            Section::Rss => Some("rss"),
            Section::TtlSweep => Some("ttl-sweep"),
            Section::TtlLag => Some("ttl-lag"),
            Section::TtlThroughput => Some("ttl-throughput"),
            Section::TtlAccuracy => Some("ttl-accuracy"),
            Section::TtlPostgres => Some("ttl-postgres"),
        }
    }

    /// Runs the section if the configuration asks for it; `peer` says whether the peer runs.
    pub async fn run(
        self,
        launch: &Launch,
        config: &CompareConfig,
        peer: bool,
        report: &mut Report,
    ) -> anyhow::Result<()> {
        if self.name().is_some_and(|name| !config.wants(name)) {
            return Ok(());
        }
        match self {
            Section::ColdStarts => cold_starts(launch, config, peer, report).await,
            Section::Workloads => workloads(launch, config, peer, report).await,
            Section::Rss => rss_after_load(launch, config, report).await,
            Section::TtlSweep => ttl_sections::mass_expiry(launch, config, report).await,
            Section::TtlLag => ttl_sections::deletion_lag(launch, config, report).await,
            Section::TtlThroughput => ttl_sections::under_throughput(launch, config, report).await,
            Section::TtlAccuracy => ttl_sections::accuracy(launch, config, report).await,
            Section::TtlPostgres => pg_sections::ttl(launch, config, report).await,
        }
    }
}

async fn cold_starts(
    launch: &Launch,
    config: &CompareConfig,
    peer: bool,
    report: &mut Report,
) -> anyhow::Result<()> {
    for _ in 0..config.cold_starts {
        let server = launch.start(Kind::LetheDb, "cold-start", &[]).await?;
        report.started(&server);
        server.stop()?;
        if peer {
            let server = launch.start(Kind::Peer, "cold-start", &[]).await?;
            report.started(&server);
            server.stop()?;
        }
    }
    Ok(())
}

/// The closed-loop workloads, in the order they run.
const WORKLOADS: [Workload; 7] = [
    Workload::PointRead,
    Workload::Create,
    Workload::Upsert,
    Workload::Replace,
    Workload::Mixed,
    Workload::QueryPartition,
    Workload::QueryCross,
];

/// Each workload's row (LetheDB against the peer) and the rows that explain it: LetheDB in
/// memory, the hello-world ceiling, one commit per write, and PostgreSQL.
async fn workloads(
    launch: &Launch,
    config: &CompareConfig,
    peer: bool,
    report: &mut Report,
) -> anyhow::Result<()> {
    for workload in WORKLOADS {
        if !config.wants(workload.name()) {
            continue;
        }
        eprintln!("== {}", workload.name());
        let run_config = config.run_config(workload);
        let peer_measured =
            compared_row(launch, config, peer, workload, &run_config, report).await?;
        if workload == Workload::PointRead || workload.writes() {
            in_memory_row(launch, config, workload, &run_config, peer_measured, report).await?;
        }
        if workload == Workload::PointRead {
            hello_row(launch, config, &run_config, report).await?;
        }
        if workload == Workload::Create {
            single_commit_row(launch, config, &run_config, report).await?;
        }
        pg_sections::workload_rows(launch, config, workload, &run_config, report).await?;
    }
    Ok(())
}

/// The workload's main row: LetheDB and, when it runs, the peer (whose failure leaves its
/// cells empty). Returns the peer's figures, which the in-memory row repeats.
async fn compared_row(
    launch: &Launch,
    config: &CompareConfig,
    peer: bool,
    workload: Workload,
    run_config: &RunConfig,
    report: &mut Report,
) -> anyhow::Result<Option<Measured>> {
    let sync_probe = workload
        .writes()
        .then(|| crate::disk::sync_latency_ms(&launch.scratch_dir, 100).ok())
        .flatten();
    let load_clients = config.load_clients;
    let lethedb = measure(
        launch,
        report,
        Kind::LetheDb,
        workload,
        run_config,
        load_clients,
        &[],
    )
    .await?;
    let peer_measured = if peer {
        match measure(
            launch,
            report,
            Kind::Peer,
            workload,
            run_config,
            load_clients,
            &[],
        )
        .await
        {
            Ok(measured) => Some(measured),
            Err(error) => {
                eprintln!("peer failed {}: {error:#}", workload.name());
                None
            }
        }
    } else {
        None
    };
    report.rows.push(Row {
        workload: workload.name().to_string(),
        lethedb: Some(lethedb),
        peer: peer_measured.clone(),
        note: workload_note(config, workload, run_config.clients, sync_probe),
    });
    Ok(peer_measured)
}

/// The main row's note: the concurrency, what a query operation is, and the disk's sync
/// latency just before a write workload, `(p50, p90)` in ms.
fn workload_note(
    config: &CompareConfig,
    workload: Workload,
    clients: usize,
    sync_probe: Option<(f64, f64)>,
) -> String {
    let mut note = format!("{clients} clients");
    if matches!(workload, Workload::QueryPartition | Workload::QueryCross) {
        let _ = write!(
            note,
            ", {} items, {} partitions, pages of {}; ops = whole queries",
            config.items, config.partitions, config.page_items
        );
    }
    if workload == Workload::Create {
        note.push_str(", LetheDB durable (group commit)");
    }
    if let Some((p50, p90)) = sync_probe {
        let _ = write!(
            note,
            ", disk sync of 4 KiB just before: p50 {p50:.2} ms, p90 {p90:.2} ms"
        );
    }
    note
}

/// LetheDB with `--in-memory`: the peer keeps everything in memory, so this row compares like
/// with like.
async fn in_memory_row(
    launch: &Launch,
    config: &CompareConfig,
    workload: Workload,
    run_config: &RunConfig,
    peer_measured: Option<Measured>,
    report: &mut Report,
) -> anyhow::Result<()> {
    let in_memory = measure(
        launch,
        report,
        Kind::LetheDb,
        workload,
        run_config,
        config.load_clients,
        &["--in-memory"],
    )
    .await?;
    report.rows.push(Row {
        workload: format!("{} (in-memory)", workload.name()),
        lethedb: Some(in_memory),
        peer: peer_measured,
        note: "LetheDB `--in-memory` (nothing on disk, as the peer); the peer's figures are the row above's".into(),
    });
    Ok(())
}

/// Point reads against an axum hello world: the HTTP ceiling of this load generator.
async fn hello_row(
    launch: &Launch,
    config: &CompareConfig,
    run_config: &RunConfig,
    report: &mut Report,
) -> anyhow::Result<()> {
    let hello = measure(
        launch,
        report,
        Kind::Hello,
        Workload::PointRead,
        run_config,
        config.load_clients,
        &[],
    )
    .await?;
    report.rows.push(Row {
        workload: "hello-world ceiling".into(),
        lethedb: None,
        peer: None,
        note: format!(
            "axum hello world{}, same load generator: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, peak RSS {:.1} MB",
            if launch.tls { " (plain HTTP even with --tls)" } else { "" },
            hello.summary.ops_per_sec,
            hello.summary.p50_ms,
            hello.summary.p99_ms,
            mb(hello.peak_rss_bytes)
        ),
    });
    report.extra.insert(
        "hello".into(),
        json!({"summary": hello.summary.to_json(), "peak_rss_mb": round(mb(hello.peak_rss_bytes), 1)}),
    );
    report.hello = Some(hello);
    Ok(())
}

/// Creates with group commit off (`--write-batch-max 1`), LetheDB only.
async fn single_commit_row(
    launch: &Launch,
    config: &CompareConfig,
    run_config: &RunConfig,
    report: &mut Report,
) -> anyhow::Result<()> {
    let single = measure(
        launch,
        report,
        Kind::LetheDb,
        Workload::Create,
        run_config,
        config.load_clients,
        &["--write-batch-max", "1"],
    )
    .await?;
    report.rows.push(Row {
        workload: "create, one commit per write".into(),
        lethedb: Some(single),
        peer: None,
        note: "LetheDB only: `--write-batch-max 1` (group commit off)".into(),
    });
    Ok(())
}

async fn rss_after_load(
    launch: &Launch,
    config: &CompareConfig,
    report: &mut Report,
) -> anyhow::Result<()> {
    eprintln!("== rss after loading {} items", config.rss_items);
    let server = launch.start(Kind::LetheDb, "rss", &[]).await?;
    report.started(&server);
    let data = DataSet {
        items: config.rss_items,
        partitions: config.partitions,
        item_bytes: config.item_bytes,
        seed: config.seed,
    };
    let outcome = async {
        let mut client = Client::new(server.endpoint.clone());
        ensure_database(&mut client).await?;
        let paths = create_container(&mut client, "items", None).await?;
        crate::load::load_items(
            &server.endpoint,
            &paths,
            &data,
            config.load_clients,
            Arc::new(|_| String::new()),
        )
        .await
    }
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let memory = server.memory();
    let store_bytes = crate::servers::dir_bytes(&launch.scratch_dir.join("rss-data"));
    server.stop()?;
    let load = outcome?;
    report.rss_after_load = Some(RssAfterLoad {
        items: config.rss_items,
        rss_mb: round(mb(memory.rss_bytes), 1),
    });
    report.extra.insert(
        "rss_after_load".into(),
        json!({
            "items": config.rss_items,
            "item_bytes": config.item_bytes,
            "load_secs": round(load.elapsed.as_secs_f64(), 2),
            "load_items_per_sec": round(config.rss_items as f64 / load.elapsed.as_secs_f64().max(1e-9), 0),
            "rss_mb": round(mb(memory.rss_bytes), 1),
            "peak_rss_mb": round(mb(memory.peak_rss_bytes), 1),
            "store_file_mb": round(mb(store_bytes), 1),
        }),
    );
    Ok(())
}

/// Runs one workload against one freshly started server.
async fn measure(
    launch: &Launch,
    report: &mut Report,
    kind: Kind,
    workload: Workload,
    config: &RunConfig,
    load_clients: usize,
    extra_args: &[&str],
) -> anyhow::Result<Measured> {
    let name = format!("{}-{}", kind.label().to_lowercase(), workload.name());
    let server = launch.start(kind, &name, extra_args).await?;
    report.started(&server);
    let pid = server.child.id();
    let outcome = async {
        let paths = if kind == Kind::Hello {
            ContainerPaths::new(DATABASE_ID, "items")
        } else if workload == Workload::Create {
            // Creates touch no preloaded item, and preloading one commit at a time would take
            // longer than the run itself.
            let empty = RunConfig {
                data: DataSet {
                    items: 0,
                    ..config.data.clone()
                },
                ..config.clone()
            };
            workload::prepare(&server.endpoint, "items", &empty, load_clients).await?
        } else {
            workload::prepare(&server.endpoint, "items", config, load_clients).await?
        };
        let lethedb = kind == Kind::LetheDb;
        let before = WriteProbe::take(&server.endpoint, pid, lethedb).await;
        let summary = workload::run(&server.endpoint, &paths, workload, config).await?;
        let after = WriteProbe::take(&server.endpoint, pid, lethedb).await;
        let figures = before.figures(&after, summary.operations);
        Ok::<_, anyhow::Error>((summary, figures))
    }
    .await;
    let memory = server.memory();
    let writes_per_commit = if kind == Kind::LetheDb {
        writes_per_commit(&server.endpoint).await
    } else {
        None
    };
    server.stop()?;
    let (summary, write_figures) = outcome?;
    Ok(Measured {
        summary,
        peak_rss_bytes: memory.peak_rss_bytes,
        writes_per_commit,
        write_figures,
    })
}

/// LetheDB's average group-commit size over its life, if its stats route answers.
async fn writes_per_commit(endpoint: &Arc<Endpoint>) -> Option<f64> {
    let mut client = Client::new(Arc::clone(endpoint));
    let stats = get_json(&mut client, "/_lethedb/stats").await.ok()?;
    let operations = stats["writer"]["operations"].as_f64()?;
    let commits = stats["writer"]["commits"].as_f64()?;
    (commits > 0.0).then(|| operations / commits)
}
