//! The side-by-side comparison: every workload against LetheDB and the peer in turn, in one
//! run on one machine, and the table of figures, ratios and goals it writes.
//!
//! Each workload gets a freshly started server with an empty store, so peak RSS (`VmHWM`)
//! belongs to that workload alone and no workload inherits another's data. Absolute figures
//! depend on the machine and on whatever else it runs; the ratios, taken minutes apart on the
//! same machine, are the figures to compare. The run fails (non-zero exit) only on errors: a
//! LetheDB workload that saw an unexpected status, or a TTL accuracy violation. It never fails
//! on a time.

use crate::data::DataSet;
use crate::servers::{Kind, Launch, Server};
use crate::stats::{round, Summary};
use crate::ttl;
use crate::ttl_throughput::{self, TtlThroughput};
use crate::workload::{self, RunConfig, Workload};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

/// The figures the comparison is shaped by; `--smoke` shrinks them to a run of seconds.
#[derive(Clone, Debug)]
pub struct CompareConfig {
    pub smoke: bool,
    pub duration: Duration,
    pub warmup: Duration,
    pub clients: usize,
    pub query_clients: usize,
    pub load_clients: usize,
    pub items: usize,
    pub item_bytes: usize,
    pub partitions: usize,
    pub page_items: usize,
    pub seed: u64,
    pub sweep_items: Vec<usize>,
    pub lag_items: usize,
    pub accuracy_items: usize,
    pub rss_items: usize,
    pub cold_starts: usize,
    pub read_clients_during_expiry: usize,
    /// Manual RU/s of the containers of the mass expiry under provisioned throughput.
    pub throughput_ru: u32,
    /// Items that expire at one instant in that workload.
    pub throughput_items: usize,
    /// Items its users read (in each of its two containers).
    pub throughput_reader_items: usize,
    /// Its warm-up and measured seconds, per phase.
    pub throughput_warmup: Duration,
    pub throughput_duration: Duration,
    pub only: Vec<String>,
    pub peer: bool,
    pub results_dir: PathBuf,
}

/// One server's figures for one workload.
#[derive(Clone, Debug)]
struct Measured {
    summary: Summary,
    peak_rss_bytes: u64,
    /// Writes per durable commit over the server's life, from LetheDB's `/_lethedb/stats`.
    writes_per_commit: Option<f64>,
}

struct Row {
    workload: String,
    lethedb: Option<Measured>,
    peer: Option<Measured>,
    note: String,
}

/// A goal of issues 2, 3 and 6, with what was measured.
struct Goal {
    name: &'static str,
    target: String,
    measured: String,
    met: Option<bool>,
}

#[derive(Default)]
struct Report {
    rows: Vec<Row>,
    cold_starts_ms: Vec<(Kind, f64)>,
    extra: serde_json::Map<String, Value>,
    goals: Vec<Goal>,
    failures: Vec<String>,
}

impl CompareConfig {
    fn wants(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == name)
    }

    fn run_config(&self, workload: Workload) -> RunConfig {
        RunConfig {
            clients: if workload == Workload::QueryCross {
                self.query_clients
            } else {
                self.clients
            },
            warmup: self.warmup,
            duration: self.duration,
            page_items: self.page_items,
            data: DataSet {
                items: self.items,
                partitions: self.partitions,
                item_bytes: self.item_bytes,
                seed: self.seed,
            },
        }
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

impl Report {
    fn started(&mut self, server: &Server) {
        self.cold_starts_ms
            .push((server.kind, server.cold_start.as_secs_f64() * 1000.0));
    }

    fn cold_start_median_ms(&self, kind: Kind) -> Option<f64> {
        let mut starts: Vec<f64> = self
            .cold_starts_ms
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, ms)| *ms)
            .collect();
        starts.sort_by(f64::total_cmp);
        starts.get(starts.len() / 2).copied()
    }

    fn row(&self, name: &str) -> Option<&Row> {
        self.rows.iter().find(|row| row.workload == name)
    }
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
    let outcome = async {
        let paths = if kind == Kind::Hello {
            crate::cosmos::ContainerPaths::new(crate::resources::DATABASE_ID, "items")
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
        workload::run(&server.endpoint, &paths, workload, config).await
    }
    .await;
    let memory = server.memory();
    let writes_per_commit = if kind == Kind::LetheDb {
        writes_per_commit(&server.endpoint).await
    } else {
        None
    };
    server.stop()?;
    Ok(Measured {
        summary: outcome?,
        peak_rss_bytes: memory.peak_rss_bytes,
        writes_per_commit,
    })
}

/// LetheDB's average group-commit size, if its stats route answers.
async fn writes_per_commit(endpoint: &std::sync::Arc<crate::cosmos::Endpoint>) -> Option<f64> {
    let mut client = crate::cosmos::Client::new(std::sync::Arc::clone(endpoint));
    let reply = client
        .send(&crate::cosmos::Request {
            method: hyper::Method::GET,
            path: "/_lethedb/stats",
            resource_type: "",
            resource_link: "",
            headers: &[],
            body: bytes::Bytes::new(),
        })
        .await
        .ok()?;
    if reply.status != 200 {
        return None;
    }
    let stats: Value = serde_json::from_slice(&reply.body).ok()?;
    let operations = stats["writer"]["operations"].as_f64()?;
    let commits = stats["writer"]["commits"].as_f64()?;
    (commits > 0.0).then(|| operations / commits)
}

/// Runs the whole comparison and writes `results_dir/{latest|smoke}.{md,json}`. Returns the
/// Markdown and whether every LetheDB workload ran without errors.
pub async fn compare(launch: &Launch, config: &CompareConfig) -> anyhow::Result<(String, bool)> {
    let mut report = Report::default();
    let peer = config.peer && launch.peer_available();
    if config.peer && !peer {
        eprintln!(
            "peer not installed in {} (npm ci there); running LetheDB alone",
            launch.peer_dir.display()
        );
    }

    // Cold starts beyond those of the workloads below, so the median has a few samples even
    // when only one workload runs.
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

    let workloads = [
        Workload::PointRead,
        Workload::Create,
        Workload::Upsert,
        Workload::Replace,
        Workload::Mixed,
        Workload::QueryPartition,
        Workload::QueryCross,
    ];
    for workload in workloads {
        if !config.wants(workload.name()) {
            continue;
        }
        eprintln!("== {}", workload.name());
        let run_config = config.run_config(workload);
        let lethedb = measure(
            launch,
            &mut report,
            Kind::LetheDb,
            workload,
            &run_config,
            config.load_clients,
            &[],
        )
        .await?;
        let peer_measured = if peer {
            match measure(
                launch,
                &mut report,
                Kind::Peer,
                workload,
                &run_config,
                config.load_clients,
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
        let clients = run_config.clients;
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
        report.rows.push(Row {
            workload: workload.name().to_string(),
            lethedb: Some(lethedb),
            peer: peer_measured,
            note,
        });
        if workload == Workload::PointRead {
            let hello = measure(
                launch,
                &mut report,
                Kind::Hello,
                Workload::PointRead,
                &run_config,
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
        }
        if workload == Workload::Create {
            let single = measure(
                launch,
                &mut report,
                Kind::LetheDb,
                Workload::Create,
                &run_config,
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
        }
    }

    if config.wants("rss") {
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
            let mut client = crate::cosmos::Client::new(server.endpoint.clone());
            crate::resources::ensure_database(&mut client).await?;
            let paths = crate::resources::create_container(&mut client, "items", None).await?;
            crate::load::load_items(
                &server.endpoint,
                &paths,
                &data,
                config.load_clients,
                std::sync::Arc::new(|_| String::new()),
            )
            .await
        }
        .await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let memory = server.memory();
        let store_bytes = crate::servers::dir_bytes(&launch.scratch_dir.join("rss-data"));
        server.stop()?;
        let load = outcome?;
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
    }

    let mut mass = Vec::new();
    if config.wants("ttl-sweep") {
        for &items in &config.sweep_items {
            eprintln!("== ttl mass expiry of {items} items");
            let name = format!("ttl-sweep-{items}");
            let server = launch
                .start(Kind::LetheDb, &name, &["--log", ttl::SWEEP_LOG_FILTER])
                .await?;
            report.started(&server);
            let outcome = ttl::mass_expiry(
                &server.endpoint,
                &server.log_path,
                &ttl::MassExpiryConfig {
                    items,
                    item_bytes: config.item_bytes,
                    partitions: config.partitions,
                    seed: config.seed,
                    load_clients: config.load_clients,
                    read_clients: config.read_clients_during_expiry,
                    baseline: config.duration.max(Duration::from_millis(500)),
                },
            )
            .await;
            server.stop()?;
            let result = outcome?;
            if result.read_during.error_count + result.read_baseline.error_count > 0 {
                report
                    .failures
                    .push(format!("ttl mass expiry {items}: point reads saw errors"));
            }
            report
                .extra
                .insert(format!("ttl_mass_expiry_{items}"), result.json.clone());
            mass.push((items, result));
        }
    }
    if config.wants("ttl-lag") {
        eprintln!("== ttl deletion lag with spare capacity");
        let server = launch
            .start(Kind::LetheDb, "ttl-lag", &["--log", ttl::SWEEP_LOG_FILTER])
            .await?;
        report.started(&server);
        let outcome = ttl::deletion_lag(
            &server.endpoint,
            &server.log_path,
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
        server.stop()?;
        report.extra.insert("ttl_deletion_lag".into(), outcome?);
    }
    let mut throughput = None;
    if config.wants("ttl-throughput") {
        eprintln!(
            "== ttl mass expiry of {} items under {} RU/s at 80% user load",
            config.throughput_items, config.throughput_ru
        );
        let server = launch
            .start(
                Kind::LetheDb,
                "ttl-throughput",
                &["--log", ttl::SWEEP_LOG_FILTER],
            )
            .await?;
        report.started(&server);
        let outcome = ttl_throughput::ttl_under_throughput(
            &server.endpoint,
            &ttl_throughput::ThroughputConfig {
                throughput_ru: config.throughput_ru,
                user_load: ttl_throughput::USER_LOAD,
                expiring_items: config.throughput_items,
                reader_items: config.throughput_reader_items,
                item_bytes: config.item_bytes,
                partitions: config.partitions,
                seed: config.seed,
                load_clients: config.load_clients,
                connections: config.clients,
                warmup: config.throughput_warmup,
                duration: config.throughput_duration,
                server_pid: Some(server.child.id()),
                server_log: Some(server.log_path.clone()),
            },
        )
        .await;
        server.stop()?;
        let result = outcome?;
        for (phase, summary) in [
            ("baseline", &result.baseline),
            ("during expiry", &result.during),
        ] {
            if summary.reads.error_count > 0 {
                report.failures.push(format!(
                    "ttl under throughput, {phase}: {} reads failed: {:?} {:?}",
                    summary.reads.error_count, summary.reads.errors, summary.reads.error_samples
                ));
            }
        }
        report
            .extra
            .insert("ttl_throughput".into(), result.json.clone());
        throughput = Some(result);
    }
    let mut accuracy = None;
    if config.wants("ttl-accuracy") {
        eprintln!("== ttl accuracy");
        let server = launch.start(Kind::LetheDb, "ttl-accuracy", &[]).await?;
        report.started(&server);
        let outcome = ttl::accuracy(
            &server.endpoint,
            &ttl::AccuracyConfig {
                items: config.accuracy_items,
                seed: config.seed,
                window: Duration::from_millis(250),
                poll_interval: Duration::from_millis(2),
            },
        )
        .await;
        server.stop()?;
        let (counts, value) = outcome?;
        if counts.found_after_expiry + counts.missing_before_expiry + counts.other_errors > 0 {
            report.failures.push(format!(
                "ttl accuracy: {} reads found an item at or after its expiry, {} missed it before, {} other errors",
                counts.found_after_expiry, counts.missing_before_expiry, counts.other_errors
            ));
        }
        report.extra.insert("ttl_accuracy".into(), value);
        accuracy = Some(counts);
    }

    for row in &report.rows {
        if let Some(measured) = &row.lethedb {
            if measured.summary.error_count > 0 {
                report.failures.push(format!(
                    "{}: LetheDB answered {} requests wrongly: {:?} {:?}",
                    row.workload,
                    measured.summary.error_count,
                    measured.summary.errors,
                    measured.summary.error_samples
                ));
            }
        }
    }
    evaluate_goals(
        &mut report,
        config,
        &mass,
        accuracy.as_ref(),
        throughput.as_ref(),
    );
    let markdown = markdown(&report, config, peer, launch);
    let json = to_json(&report, config, peer, launch);
    std::fs::create_dir_all(&config.results_dir)?;
    let stem = results_stem(config);
    std::fs::write(config.results_dir.join(format!("{stem}.md")), &markdown)?;
    std::fs::write(
        config.results_dir.join(format!("{stem}.json")),
        serde_json::to_string_pretty(&json)?,
    )?;
    Ok((markdown, report.failures.is_empty()))
}

/// The file name (without extension) a run's results go to: `smoke` for `--smoke`, the parts
/// joined by `+` for a full-size run of some parts (`--only`), so that it never overwrites the
/// whole comparison in `latest`.
fn results_stem(config: &CompareConfig) -> String {
    if config.smoke {
        "smoke".into()
    } else if config.only.is_empty() {
        "latest".into()
    } else {
        config.only.join("+")
    }
}

fn ops(report: &Report, name: &str, peer: bool) -> Option<f64> {
    let row = report.row(name)?;
    let measured = if peer { &row.peer } else { &row.lethedb };
    measured.as_ref().map(|m| m.summary.ops_per_sec)
}

fn evaluate_goals(
    report: &mut Report,
    config: &CompareConfig,
    mass: &[(usize, ttl::MassExpiry)],
    accuracy: Option<&ttl::AccuracyCounts>,
    throughput: Option<&TtlThroughput>,
) {
    let mut goals = Vec::new();
    let ratio_goal = |name, lethedb: Option<f64>, other: Option<f64>, factor: f64, what| {
        let (measured, met) = match (lethedb, other) {
            (Some(l), Some(o)) if o > 0.0 => (
                format!("{:.2}× ({l:.0} vs {o:.0} per s)", l / o),
                Some(l / o >= factor),
            ),
            _ => ("not measured".to_string(), None),
        };
        Goal {
            name,
            target: format!("≥ {factor}× {what}"),
            measured,
            met,
        }
    };
    goals.push(ratio_goal(
        "point reads vs peer",
        ops(report, "point-read", false),
        ops(report, "point-read", true),
        5.0,
        "peer",
    ));
    let hello = report
        .extra
        .get("hello")
        .and_then(|h| h["summary"]["ops_per_sec"].as_f64());
    goals.push(ratio_goal(
        "point reads vs hello world",
        ops(report, "point-read", false),
        hello,
        0.5,
        "hello-world axum",
    ));
    goals.push(ratio_goal(
        "durable creates vs peer",
        ops(report, "create", false),
        ops(report, "create", true),
        3.0,
        "peer",
    ));
    goals.push(ratio_goal(
        "durable upserts vs peer",
        ops(report, "upsert", false),
        ops(report, "upsert", true),
        3.0,
        "peer",
    ));
    let query = ops(report, "query-cross", false);
    goals.push(Goal {
        name: "full-scan query",
        target: "≥ 50 queries/s".into(),
        measured: query.map_or("not measured".into(), |q| format!("{q:.1} queries/s")),
        met: query.map(|q| q >= 50.0),
    });
    let cold = report.cold_start_median_ms(Kind::LetheDb);
    goals.push(Goal {
        name: "cold start (median)",
        target: "≤ 50 ms".into(),
        measured: cold.map_or("not measured".into(), |c| format!("{c:.1} ms")),
        met: cold.map(|c| c <= 50.0),
    });
    if let Some(rss) = report.extra.get("rss_after_load") {
        let rss_mb = rss["rss_mb"].as_f64().unwrap_or(0.0);
        let items = rss["items"].as_u64().unwrap_or(0);
        goals.push(Goal {
            name: "RSS with 1M × 1 KiB items",
            target: "≤ 200 MB".into(),
            measured: format!("{rss_mb:.1} MB after {items} items"),
            met: (items >= 1_000_000).then_some(rss_mb <= 200.0),
        });
    }
    if let Some(counts) = accuracy {
        goals.push(Goal {
            name: "TTL accuracy",
            target: "0 found after expiry, 0 missing before".into(),
            measured: format!(
                "{} and {} ({} reads, {} undecided)",
                counts.found_after_expiry,
                counts.missing_before_expiry,
                counts.reads,
                counts.undecided
            ),
            met: Some(counts.found_after_expiry == 0 && counts.missing_before_expiry == 0),
        });
    }
    for (items, result) in mass {
        goals.push(Goal {
            name: "sweep rate, idle",
            target: "≥ 50,000 deletions/s".into(),
            measured: format!(
                "{:.0} deletions/s ({items} items)",
                result.sweep_rate_per_sec
            ),
            met: (!config.smoke || *items >= 100_000)
                .then_some(result.sweep_rate_per_sec >= 50_000.0),
        });
        let (base, during) = (result.read_baseline.p99_ms, result.read_during.p99_ms);
        goals.push(Goal {
            name: "read p99 during mass expiry",
            target: "≤ 1.1× baseline".into(),
            measured: format!(
                "{:.2}× ({during:.2} vs {base:.2} ms, {items} items)",
                during / base.max(1e-9)
            ),
            met: Some(during <= base * 1.1),
        });
    }
    if let Some(lag) = report.extra.get("ttl_deletion_lag") {
        let p99 = lag["deletion_lag"]["p99_ms"].as_f64().unwrap_or(f64::MAX);
        goals.push(Goal {
            name: "deletion lag p99, spare capacity",
            target: "≤ 1 s".into(),
            measured: format!(
                "{p99:.0} ms ({} items expiring at {} /s)",
                lag["items"],
                whole(&lag["expiry_rate_per_sec"])
            ),
            met: Some(p99 <= 1000.0),
        });
    }
    if let Some(result) = throughput {
        let (base, during) = (&result.baseline, &result.during);
        let items = config.throughput_items;
        let ru = config.throughput_ru;
        let ratio = during.reads.p99_ms / base.reads.p99_ms.max(1e-9);
        let per_second_ratio = during.sub_window_p99_quartiles_ms()[1]
            / base.sub_window_p99_quartiles_ms()[1].max(1e-9);
        // CPU that neither the server nor the load generator used: another process's or the
        // hypervisor's. Latency measured while it is large says more about the machine.
        let taken = |phase: &str| {
            let server = &result.json[phase]["server"];
            server["other_processes_cpu_per_sec"]
                .as_f64()
                .unwrap_or(0.0)
                + server["steal_cpu_per_sec"].as_f64().unwrap_or(0.0)
        };
        let taken_max = taken("baseline").max(taken("during_expiry"));
        let disturbed = if taken_max > ttl_throughput::DISTURBANCE_CPU_MAX {
            format!("; **disturbed**: up to {taken_max:.2} CPU s/s taken by other processes or the hypervisor")
        } else {
            String::new()
        };
        goals.push(Goal {
            name: "read p99 at 80% of RU/s during mass expiry",
            target: format!("≤ {}× baseline", ttl_throughput::P99_RATIO_MAX),
            measured: format!(
                "{ratio:.2}× ({:.2} vs {:.2} ms, {items} items, {ru} RU/s; median of per-second p99s {per_second_ratio:.2}×{disturbed})",
                during.reads.p99_ms, base.reads.p99_ms
            ),
            met: Some(ratio <= ttl_throughput::P99_RATIO_MAX),
        });
        let (base_429, during_429) = (base.throttled_fraction(), during.throttled_fraction());
        goals.push(Goal {
            name: "429s at 80% of RU/s during mass expiry",
            target: format!(
                "≤ baseline + {} points",
                ttl_throughput::THROTTLED_INCREASE_MAX * 100.0
            ),
            measured: format!(
                "{:.3}% vs {:.3}% ({} vs {} of {} and {} requests)",
                during_429 * 100.0,
                base_429 * 100.0,
                during.throttled,
                base.throttled,
                during.sent,
                base.sent
            ),
            met: Some(during_429 <= base_429 + ttl_throughput::THROTTLED_INCREASE_MAX),
        });
        let share = result.deletions_per_sec / result.expected_deletions_per_sec.max(1e-9);
        let tolerance = ttl_throughput::DELETION_RATE_TOLERANCE;
        goals.push(Goal {
            name: "deletion rate at 80% of RU/s",
            target: format!(
                "{:.1}–{:.1}× what the leftover RU/s pay for",
                1.0 - tolerance,
                1.0 + tolerance
            ),
            measured: format!(
                "{share:.2}× ({:.0} vs {:.0} deletions/s)",
                result.deletions_per_sec, result.expected_deletions_per_sec
            ),
            met: Some((share - 1.0).abs() <= tolerance),
        });
    }
    report.goals = goals;
}

/// A JSON number printed without a fraction.
fn whole(value: &Value) -> String {
    value
        .as_f64()
        .map_or_else(|| value.to_string(), |v| format!("{v:.0}"))
}

fn cell(measured: &Option<Measured>) -> [String; 4] {
    match measured {
        Some(m) => [
            if m.summary.ops_per_sec < 100.0 {
                format!("{:.1}", m.summary.ops_per_sec)
            } else {
                format!("{:.0}", m.summary.ops_per_sec)
            },
            format!("{:.2}", m.summary.p50_ms),
            format!("{:.2}", m.summary.p99_ms),
            format!("{:.0}", mb(m.peak_rss_bytes)),
        ],
        None => ["–".into(), "–".into(), "–".into(), "–".into()],
    }
}

fn markdown(report: &Report, config: &CompareConfig, peer: bool, launch: &Launch) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### LetheDB vs @vercel/cosmosdb-server{}\n",
        if config.smoke {
            " (smoke: figures are not meaningful)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "{} s per workload after {} s warm-up, {} × {} B items in {} partitions, seed {}, {}; peer {}.\n",
        config.duration.as_secs_f64(),
        config.warmup.as_secs_f64(),
        config.items,
        config.item_bytes,
        config.partitions,
        config.seed,
        if launch.tls { "HTTPS" } else { "HTTP/1.1 keep-alive" },
        if !peer {
            "not run"
        } else if launch.peer_cli {
            "started by its CLI (connection: close)"
        } else {
            "with keep-alive (bench/peer/serve.js)"
        }
    );
    out.push_str("| workload | LetheDB ops/s | p50 ms | p99 ms | peak RSS MB | peer ops/s | p50 ms | p99 ms | peak RSS MB | LetheDB/peer | notes |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for row in &report.rows {
        let l = cell(&row.lethedb);
        let p = cell(&row.peer);
        let ratio = match (&row.lethedb, &row.peer) {
            (Some(l), Some(p)) if p.summary.ops_per_sec > 0.0 => {
                format!("{:.2}×", l.summary.ops_per_sec / p.summary.ops_per_sec)
            }
            _ => "–".into(),
        };
        let mut note = row.note.clone();
        if let Some(per_commit) = row.lethedb.as_ref().and_then(|m| m.writes_per_commit) {
            if row.workload != "point-read" {
                let _ = write!(note, "; LetheDB {per_commit:.1} writes per commit");
            }
        }
        for (who, measured) in [("LetheDB", &row.lethedb), ("peer", &row.peer)] {
            if let Some(m) = measured {
                if m.summary.error_count > 0 {
                    let _ = write!(note, "; {who} errors: {:?}", m.summary.errors);
                }
            }
        }
        if row.peer.is_none() && row.lethedb.is_some() && peer && !note.contains("LetheDB only") {
            note.push_str("; peer failed");
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.workload, l[0], l[1], l[2], l[3], p[0], p[1], p[2], p[3], ratio, note
        );
    }
    let cold = |kind| {
        report
            .cold_start_median_ms(kind)
            .map_or("–".into(), |ms| format!("{ms:.1} ms"))
    };
    let starts = |kind| {
        report
            .cold_starts_ms
            .iter()
            .filter(|(k, _)| *k == kind)
            .count()
    };
    let _ = writeln!(
        out,
        "\nCold start to first successful request (median): LetheDB {} over {} starts; peer {} over {} starts; ratio {}.",
        cold(Kind::LetheDb),
        starts(Kind::LetheDb),
        cold(Kind::Peer),
        starts(Kind::Peer),
        match (report.cold_start_median_ms(Kind::LetheDb), report.cold_start_median_ms(Kind::Peer)) {
            (Some(l), Some(p)) if l > 0.0 => format!("peer takes {:.1}× as long", p / l),
            _ => "–".into(),
        }
    );
    if let Some(rss) = report.extra.get("rss_after_load") {
        let _ = writeln!(
            out,
            "\nLetheDB after loading {} × {} B items ({:.0} items/s): RSS {} MB, peak {} MB, store file {} MB.",
            rss["items"], rss["item_bytes"], rss["load_items_per_sec"].as_f64().unwrap_or(0.0), rss["rss_mb"], rss["peak_rss_mb"], rss["store_file_mb"]
        );
    }
    let ttl_keys: Vec<&String> = report
        .extra
        .keys()
        .filter(|k| k.starts_with("ttl_mass_expiry_"))
        .collect();
    if !ttl_keys.is_empty() || report.extra.contains_key("ttl_deletion_lag") {
        out.push_str(
            "\n**Time to live (LetheDB only: the peer ignores `ttl` and `defaultTtl`)**\n\n",
        );
        out.push_str("| TTL workload | items | deletions/s idle | deletions/s overall | lag p50 ms | lag p99 ms | lag max ms | read p99 before ms | read p99 during ms |\n");
        out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for key in ttl_keys {
            let t = &report.extra[key];
            let lag = &t["deletion_lag_from_expiry"];
            let _ = writeln!(
                out,
                "| mass expiry (reads during the first {} s, then idle) | {} | {} | {} | {} | {} | {} | {} | {} |",
                t["reads_during_secs"], t["items"], whole(&t["sweep_rate_per_sec"]), whole(&t["sweep_rate_overall_per_sec"]), lag["p50_ms"], lag["p99_ms"], lag["max_ms"],
                t["read_baseline"]["p99_ms"], t["read_during_expiry"]["p99_ms"]
            );
        }
        if let Some(t) = report.extra.get("ttl_deletion_lag") {
            let lag = &t["deletion_lag"];
            let _ = writeln!(
                out,
                "| steady expiry, spare capacity (ttl {} s, {} expiring/s) | {} | – | – | {} | {} | {} | – | – |",
                t["ttl_secs"], whole(&t["expiry_rate_per_sec"]), t["items"], lag["p50_ms"], lag["p99_ms"], lag["max_ms"]
            );
        }
    }
    if let Some(t) = report.extra.get("ttl_throughput") {
        throughput_markdown(&mut out, t);
    }
    if let Some(a) = report.extra.get("ttl_accuracy") {
        let _ = writeln!(
            out,
            "\nTTL accuracy (LetheDB only): {} items with ttl 1–3 s, {} polls around their expiry: {} reads found an item at or after its expiry, {} got 404 before it, {} fell inside the uncertainty of the write instant.",
            a["items"], a["reads"], a["found_at_or_after_expiry"], a["missing_before_expiry"], a["undecided"]
        );
    }
    out.push_str("\n**Goals**\n\n| goal | target | measured | met |\n|---|---|---|---|\n");
    for goal in &report.goals {
        let met = match goal.met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "n/a",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            goal.name, goal.target, goal.measured, met
        );
    }
    if !report.failures.is_empty() {
        out.push_str("\n**Errors**\n\n");
        for failure in &report.failures {
            let _ = writeln!(out, "- {failure}");
        }
    }
    out
}

/// The table of the mass expiry under provisioned throughput, from its JSON.
fn throughput_markdown(out: &mut String, t: &Value) {
    let (a, b, d) = (&t["baseline"], &t["during_expiry"], &t["deletions"]);
    let _ = writeln!(
        out,
        "\n**Mass expiry under provisioned throughput (LetheDB only)**: {} RU/s per container, users at {}% of it: {} point reads/s of {} RU, open loop over {} connections, 429s counted and not retried; {} s per phase after {} s warm-up. Phase B's {} items ({} B, loaded at {} items/s) expire at one instant as it starts; a delete costs {} RU.\n",
        t["throughput_ru"],
        whole(&json!(t["user_load"].as_f64().unwrap_or(0.0) * 100.0)),
        whole(&t["rate_per_sec"]),
        t["read_charge_ru"],
        t["connections"],
        t["duration_secs"],
        t["warmup_secs"],
        t["expiring_items"],
        t["item_bytes"],
        whole(&t["load_items_per_sec"]),
        t["delete_charge_ru"],
    );
    out.push_str("| phase | expiring items | reads/s | user RU/s | p50 ms | p99 ms | 429s | deletions/s | expected deletions/s |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let percent = |phase: &Value| {
        format!(
            "{:.3}%",
            phase["throttled_fraction"].as_f64().unwrap_or(0.0) * 100.0
        )
    };
    let _ = writeln!(
        out,
        "| A: own container, no backlog | 0 | {} | {} | {} | {} | {} | – | – |",
        whole(&a["reads"]["ops_per_sec"]),
        whole(&a["charge_ru_per_sec"]),
        a["reads"]["p50_ms"],
        a["reads"]["p99_ms"],
        percent(a)
    );
    let _ = writeln!(
        out,
        "| B: backlog draining | {} | {} | {} | {} | {} | {} | {} | {} |",
        t["expiring_items"],
        whole(&b["reads"]["ops_per_sec"]),
        whole(&b["charge_ru_per_sec"]),
        b["reads"]["p50_ms"],
        b["reads"]["p99_ms"],
        percent(b),
        whole(&d["per_sec"]),
        whole(&d["expected_per_sec"])
    );
    let points = (b["throttled_fraction"].as_f64().unwrap_or(0.0)
        - a["throttled_fraction"].as_f64().unwrap_or(0.0))
        * 100.0;
    let _ = writeln!(
        out,
        "| B / A | – | – | – | {}× | {}× | {points:+.3} points | {}× expected | – |",
        t["p50_ratio"], t["p99_ratio"], d["ratio_to_expected"]
    );
    let quartiles = |phase: &Value| {
        let q = &phase["p99_ms_sub_window_quartiles"];
        format!("{} ms ({}–{})", q[1], q[0], q[2])
    };
    let batches = &d["sweeper_batches"];
    let _ = writeln!(
        out,
        "\np99 of each second, median (quartiles), whose spread is the noise within one phase: A {}, B {}. In B's window the sweeper committed {} batches (median {} items, largest {}; {} deletions/s by its log), the longest stretch without one {} ms; deletions per second over whole seconds: min {}, median {}, max {}; backlog left at the end {}.",
        quartiles(a),
        quartiles(b),
        batches["count"],
        batches["items_median"],
        batches["items_max"],
        whole(&batches["deleted_per_sec"]),
        whole(&batches["longest_gap_ms"]),
        whole(&d["per_second_min"]),
        whole(&d["per_second_median"]),
        whole(&d["per_second_max"]),
        d["backlog_at_end"],
    );
    // Where the time went, per phase: what a p99 change is made of.
    out.push_str("\n| phase | server Read p99 ms (histogram bucket) | 429s counted by the server | server CPU s/s | of which writer thread | server threads waiting for a core s/s | load generator CPU s/s | load generator waiting s/s | sends > 2 ms late | other processes CPU s/s | stolen CPU s/s |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (name, phase) in [("A", a), ("B", b)] {
        let server = &phase["server"];
        let by_thread = server["cpu_per_sec_by_thread"].as_object();
        let total: f64 = by_thread.map_or(0.0, |m| m.values().filter_map(Value::as_f64).sum());
        let writer = by_thread
            .and_then(|m| m.get("lethedb-writer"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {total:.2} | {writer:.2} | {} | {} | {} | {} | {} | {} |",
            server["read_p99_ms_at_most"],
            server["throttled"],
            server["server_run_queue_wait_per_sec"],
            server["load_generator_cpu_per_sec"],
            server["load_generator_run_queue_wait_per_sec"],
            phase["slipped_sends"],
            server["other_processes_cpu_per_sec"],
            server["steal_cpu_per_sec"],
        );
    }
}

fn to_json(report: &Report, config: &CompareConfig, peer: bool, launch: &Launch) -> Value {
    let measured = |m: &Option<Measured>| {
        m.as_ref().map(|m| {
            json!({"summary": m.summary.to_json(), "peak_rss_mb": round(mb(m.peak_rss_bytes), 1), "writes_per_commit": m.writes_per_commit.map(|w| round(w, 2))})
        })
    };
    json!({
        "config": {
            "smoke": config.smoke,
            "duration_secs": config.duration.as_secs_f64(),
            "warmup_secs": config.warmup.as_secs_f64(),
            "clients": config.clients,
            "query_clients": config.query_clients,
            "items": config.items,
            "item_bytes": config.item_bytes,
            "partitions": config.partitions,
            "page_items": config.page_items,
            "seed": config.seed,
            "tls": launch.tls,
            "peer": peer,
            "peer_cli": launch.peer_cli,
        },
        "workloads": report.rows.iter().map(|row| json!({
            "workload": row.workload,
            "lethedb": measured(&row.lethedb),
            "peer": measured(&row.peer),
            "ratio": match (&row.lethedb, &row.peer) {
                (Some(l), Some(p)) if p.summary.ops_per_sec > 0.0 => Some(round(l.summary.ops_per_sec / p.summary.ops_per_sec, 3)),
                _ => None,
            },
            "note": row.note,
        })).collect::<Vec<_>>(),
        "cold_start_ms": {
            "lethedb_median": report.cold_start_median_ms(Kind::LetheDb).map(|v| round(v, 2)),
            "peer_median": report.cold_start_median_ms(Kind::Peer).map(|v| round(v, 2)),
            "all": report.cold_starts_ms.iter().map(|(k, ms)| json!([k.label(), round(*ms, 2)])).collect::<Vec<_>>(),
        },
        "extra": report.extra,
        "goals": report.goals.iter().map(|g| json!({"goal": g.name, "target": g.target, "measured": g.measured, "met": g.met})).collect::<Vec<_>>(),
        "errors": report.failures,
    })
}
