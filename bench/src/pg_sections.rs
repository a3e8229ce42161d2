//! The PostgreSQL rows of a comparison, run only when `--postgres URL` is given: point reads,
//! creates, upserts and the cross-partition query on LetheDB with a PostgreSQL store, one
//! instance and two instances on one database, beside the same workload on redb and on the
//! peer in the same run; and the TTL sweep rate and deletion lag on PostgreSQL.
//!
//! Every server start gets a fresh database (`pg.rs`). With two instances, client `i` of the
//! load generator talks to instance `i % 2` directly; preloading goes through the first. The
//! rows land in the [`Report`] like any other (`<workload> (PostgreSQL)`,
//! `<workload> (PostgreSQL ×2)`, with the peer's figures beside them); [`markdown`] adds a
//! table of them against redb and the peer.

use crate::config::CompareConfig;
use crate::cosmos::Client;
use crate::data::DataSet;
use crate::load::load_items;
use crate::pg::PgServers;
use crate::pg_cost::{self, PgCost};
use crate::report::{mb, whole, Measured, Report, Row};
use crate::resources::{create_container, ensure_database};
use crate::servers::{Kind, Launch};
use crate::stats::round;
use crate::sweep_log::SWEEP_LOG_FILTER;
use crate::ttl;
use crate::workload::{self, RunConfig, Workload};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::sync::Arc;

/// The workloads measured on PostgreSQL.
pub const PG_WORKLOADS: [Workload; 4] = [
    Workload::PointRead,
    Workload::Create,
    Workload::Upsert,
    Workload::QueryCross,
];

/// The instance counts measured.
const INSTANCES: [usize; 2] = [1, 2];

/// The row name of a workload on PostgreSQL with `instances` instances.
pub fn row_name(workload: Workload, instances: usize) -> String {
    if instances == 1 {
        format!("{} (PostgreSQL)", workload.name())
    } else {
        format!("{} (PostgreSQL ×{instances})", workload.name())
    }
}

/// Adds the PostgreSQL rows of `workload` after its redb and peer rows (already in the report).
pub async fn workload_rows(
    launch: &Launch,
    config: &CompareConfig,
    workload: Workload,
    run_config: &RunConfig,
    report: &mut Report,
) -> anyhow::Result<()> {
    if launch.postgres.is_none() || !PG_WORKLOADS.contains(&workload) {
        return Ok(());
    }
    let redb_ops = report
        .row(workload.name())
        .and_then(|row| row.lethedb.as_ref())
        .map(|m| m.summary.ops_per_sec);
    let peer = report.row(workload.name()).and_then(|row| row.peer.clone());
    for instances in INSTANCES {
        eprintln!(
            "== {} on PostgreSQL, {instances} instance(s)",
            workload.name()
        );
        let (measured, load_per_sec, cost) = measure(
            launch,
            report,
            workload,
            run_config,
            config.load_clients,
            instances,
        )
        .await?;
        let mut note = if instances == 1 {
            "LetheDB on PostgreSQL, one instance".to_string()
        } else {
            format!("LetheDB on PostgreSQL, {instances} instances on one database, client i → instance i mod {instances}")
        };
        if let Some(redb) = redb_ops.filter(|&ops| ops > 0.0) {
            let _ = write!(
                note,
                "; {:.2}× LetheDB on redb",
                measured.summary.ops_per_sec / redb
            );
        }
        if let Some(rate) = load_per_sec {
            let _ = write!(note, "; preload {rate:.0} creates/s through instance 0");
        }
        let _ = write!(note, "; {}", pg_cost::describe(&cost));
        report.rows.push(Row {
            workload: row_name(workload, instances),
            lethedb: Some(measured),
            peer: peer.clone(),
            note,
        });
    }
    Ok(())
}

/// Runs one workload against `instances` fresh instances on a fresh database; also returns the
/// preload's creates per second, when there was one, and what the run cost (`pg_cost.rs`).
async fn measure(
    launch: &Launch,
    report: &mut Report,
    workload: Workload,
    config: &RunConfig,
    load_clients: usize,
    instances: usize,
) -> anyhow::Result<(Measured, Option<f64>, Value)> {
    let name = format!("pg{instances}-{}", workload.name());
    let cluster =
        PgServers::start(launch, &mut |s| report.started(s), &name, instances, &[]).await?;
    let endpoints = cluster.endpoints();
    let outcome = async {
        let mut client = Client::new(Arc::clone(&endpoints[0]));
        ensure_database(&mut client).await?;
        let paths = create_container(&mut client, "items", None).await?;
        // Creates touch no preloaded item.
        let items = if workload == Workload::Create {
            0
        } else {
            config.data.items
        };
        let data = DataSet {
            items,
            ..config.data.clone()
        };
        let load = load_items(
            &endpoints[0],
            &paths,
            &data,
            load_clients,
            Arc::new(|_| String::new()),
        )
        .await?;
        let load_per_sec = (items > 0).then(|| items as f64 / load.elapsed.as_secs_f64().max(1e-9));
        let pids = cluster.servers.iter().map(|s| s.child.id()).collect();
        // The probe starts when the warm-up ends, as the summary's count does.
        let probe = async {
            tokio::time::sleep(config.warmup).await;
            PgCost::start(&cluster.url, pids).await
        };
        let (summary, cost) = tokio::join!(
            workload::run_on(&endpoints, &paths, workload, config),
            probe
        );
        let summary = summary?;
        let cost = cost?.finish(summary.operations).await?;
        Ok::<_, anyhow::Error>((summary, load_per_sec, cost))
    }
    .await;
    let peak_rss_bytes = cluster.peak_rss_bytes();
    let writes_per_commit = cluster.writes_per_commit().await;
    cluster.stop()?;
    let (summary, load_per_sec, cost) = outcome?;
    Ok((
        Measured {
            summary,
            peak_rss_bytes,
            writes_per_commit,
            // The store's writes are PostgreSQL's, in other processes.
            bytes_written_per_write: None,
        },
        load_per_sec,
        cost,
    ))
}

/// The `ttl-postgres` part: a mass expiry (sweep rate with the server idle) and the deletion
/// lag of a steady stream of expiries, with one and with two instances. Reads and writes go
/// through the first instance; every instance sweeps, and the deletions of all are counted.
pub async fn ttl(
    launch: &Launch,
    config: &CompareConfig,
    report: &mut Report,
) -> anyhow::Result<()> {
    if launch.postgres.is_none() {
        return Ok(());
    }
    let log = ["--log", SWEEP_LOG_FILTER];
    for instances in INSTANCES {
        let items = config.pg_sweep_items;
        eprintln!("== ttl mass expiry of {items} items on PostgreSQL, {instances} instance(s)");
        let cluster = PgServers::start(
            launch,
            &mut |s| report.started(s),
            &format!("pg{instances}-ttl-sweep"),
            instances,
            &log,
        )
        .await?;
        let outcome = ttl::mass_expiry(
            &cluster.endpoints()[0],
            &cluster.log_paths(),
            &config.mass_expiry(items),
        )
        .await;
        cluster.stop()?;
        let result = outcome?;
        if result.read_during.error_count + result.read_baseline.error_count > 0 {
            report.failures.push(format!(
                "ttl mass expiry on PostgreSQL ×{instances}: point reads saw errors: {:?} {:?}",
                result.read_during.errors, result.read_during.error_samples
            ));
        }
        report
            .extra
            .insert(format!("pg_ttl_mass_expiry_{instances}x"), result.json);

        eprintln!("== ttl deletion lag on PostgreSQL, {instances} instance(s)");
        let cluster = PgServers::start(
            launch,
            &mut |s| report.started(s),
            &format!("pg{instances}-ttl-lag"),
            instances,
            &log,
        )
        .await?;
        let outcome = ttl::deletion_lag(
            &cluster.endpoints()[0],
            &cluster.log_paths(),
            &ttl::LagConfig {
                items: config.lag_items,
                item_bytes: config.item_bytes,
                partitions: config.partitions,
                seed: config.seed,
                clients: 4,
                ttl_secs: 2,
            },
        )
        .await;
        cluster.stop()?;
        report
            .extra
            .insert(format!("pg_ttl_deletion_lag_{instances}x"), outcome?);
    }
    Ok(())
}

/// The PostgreSQL figures against redb and the peer, and the TTL figures on PostgreSQL.
pub fn markdown(out: &mut String, report: &Report) {
    let has_rows = PG_WORKLOADS
        .iter()
        .any(|&w| report.row(&row_name(w, 1)).is_some());
    if has_rows {
        workload_markdown(out, report);
    }
    ttl_markdown(out, report);
}

fn workload_markdown(out: &mut String, report: &Report) {
    let figures = |name: &str| report.row(name).and_then(|row| row.lethedb.clone());
    out.push_str("\n**LetheDB on PostgreSQL (same run; ratios of ops/s)**\n\n");
    out.push_str("| workload | redb ops/s | PG ops/s | PG p50/p99 ms | PG×2 ops/s | PG×2 p50/p99 ms | peer ops/s | PG/redb | PG×2/redb | PG×2/PG | PG/peer | PG×2/peer | writes per PG commit (×1, ×2) |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let ops = |m: &Option<Measured>| m.as_ref().map(|m| m.summary.ops_per_sec);
    let number = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.0}"));
    let latency = |m: &Option<Measured>| {
        m.as_ref().map_or("–".into(), |m| {
            format!("{:.2} / {:.2}", m.summary.p50_ms, m.summary.p99_ms)
        })
    };
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "–".into(),
    };
    for workload in PG_WORKLOADS {
        let (Some(pg1), pg2) = (
            figures(&row_name(workload, 1)),
            figures(&row_name(workload, 2)),
        ) else {
            continue;
        };
        let pg1 = Some(pg1);
        let base = report.row(workload.name());
        let redb = base.and_then(|row| row.lethedb.clone());
        let peer = base.and_then(|row| row.peer.clone());
        let per_commit = |m: &Option<Measured>| {
            m.as_ref()
                .and_then(|m| m.writes_per_commit)
                .map_or("–".into(), |w| format!("{w:.1}"))
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {}, {} |",
            workload.name(),
            number(ops(&redb)),
            number(ops(&pg1)),
            latency(&pg1),
            number(ops(&pg2)),
            latency(&pg2),
            number(ops(&peer)),
            ratio(ops(&pg1), ops(&redb)),
            ratio(ops(&pg2), ops(&redb)),
            ratio(ops(&pg2), ops(&pg1)),
            ratio(ops(&pg1), ops(&peer)),
            ratio(ops(&pg2), ops(&peer)),
            per_commit(&pg1),
            per_commit(&pg2),
        );
    }
    if let Some(ms) = report.cold_start_median_ms(Kind::LetheDbPg) {
        let starts = report
            .cold_starts_ms
            .iter()
            .filter(|(kind, _)| *kind == Kind::LetheDbPg)
            .count();
        let _ = writeln!(
            out,
            "\nLetheDB on PostgreSQL, spawn to first successful request: median {ms:.1} ms over {starts} instance starts (the first on each fresh database creates the schema)."
        );
    }
}

fn ttl_markdown(out: &mut String, report: &Report) {
    let runs: Vec<(usize, Option<&Value>, Option<&Value>)> = INSTANCES
        .iter()
        .map(|&n| {
            (
                n,
                report.extra.get(&format!("pg_ttl_mass_expiry_{n}x")),
                report.extra.get(&format!("pg_ttl_deletion_lag_{n}x")),
            )
        })
        .filter(|(_, sweep, lag)| sweep.is_some() || lag.is_some())
        .collect();
    if runs.is_empty() {
        return;
    }
    out.push_str("\n**Time to live on PostgreSQL** (every instance sweeps; deletions are counted from all their logs)\n\n");
    out.push_str("| TTL workload | instances | items | load creates/s | deletions/s idle | deletions/s overall | first batch after ms | batches | lag p50 ms | lag p99 ms | lag max ms | read p99 before ms | read p99 during ms |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (instances, sweep, lag) in runs {
        if let Some(t) = sweep {
            let l = &t["deletion_lag_from_expiry"];
            let _ = writeln!(
                out,
                "| mass expiry (reads during the first {} s, then idle) | {instances} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                t["reads_during_secs"], t["items"], whole(&t["load_items_per_sec"]),
                whole(&t["sweep_rate_per_sec"]), whole(&t["sweep_rate_overall_per_sec"]),
                whole(&t["first_batch_after_ms"]), t["batches"], l["p50_ms"], l["p99_ms"], l["max_ms"],
                t["read_baseline"]["p99_ms"], t["read_during_expiry"]["p99_ms"]
            );
        }
        if let Some(t) = lag {
            let l = &t["deletion_lag"];
            let _ = writeln!(
                out,
                "| steady expiry (ttl {} s, {} expiring/s) | {instances} | {} | – | – | – | – | {} | {} | {} | {} | – | – |",
                t["ttl_secs"], whole(&t["expiry_rate_per_sec"]), t["items"], t["batches"],
                l["p50_ms"], l["p99_ms"], l["max_ms"]
            );
        }
    }
}

/// The PostgreSQL rows' figures for the JSON document (`extra.postgres`).
pub fn to_json(report: &Report) -> Option<Value> {
    let rows: Vec<Value> = PG_WORKLOADS
        .iter()
        .flat_map(|&w| INSTANCES.iter().map(move |&n| (w, n)))
        .filter_map(|(w, n)| {
            let measured = report.row(&row_name(w, n))?.lethedb.as_ref()?;
            let redb = report
                .row(w.name())
                .and_then(|row| row.lethedb.as_ref())
                .map(|m| m.summary.ops_per_sec);
            Some(json!({
                "workload": w.name(),
                "instances": n,
                "summary": measured.summary.to_json(),
                "peak_rss_mb_all_instances": round(mb(measured.peak_rss_bytes), 1),
                "writes_per_commit": measured.writes_per_commit.map(|w| round(w, 2)),
                "ratio_to_redb": redb.filter(|&r| r > 0.0).map(|r| round(measured.summary.ops_per_sec / r, 3)),
            }))
        })
        .collect();
    (!rows.is_empty()).then(|| json!(rows))
}
