//! The comparison's report: what each section measured, typed, and the Markdown table and JSON
//! document written from it.
//!
//! Sections fill a [`Report`]; goals are judged from it in `goals.rs`. This module only
//! formats: it runs nothing and judges nothing. The TTL sections keep their figures as the JSON
//! they return (`extra`, in run order), which the JSON document carries unchanged and the
//! Markdown tables read.

use crate::config::CompareConfig;
use crate::servers::{Kind, Launch, Server};
use crate::stats::{round, Summary};
use crate::ttl::MassExpiry;
use crate::ttl_accuracy::AccuracyCounts;
use crate::ttl_throughput::TtlThroughput;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// One server's figures for one workload.
#[derive(Clone, Debug)]
pub struct Measured {
    pub summary: Summary,
    pub peak_rss_bytes: u64,
    /// Writes per durable commit over the server's life, from LetheDB's `/_lethedb/stats`.
    pub writes_per_commit: Option<f64>,
    /// Bytes the server process wrote to storage (`write_bytes` of `/proc/PID/io`) over its
    /// life, per write it committed: the preload's and the warmup's too, and not what a store
    /// still holds only in memory (fjall's memtables, already in its journal) when it stops.
    pub bytes_written_per_write: Option<f64>,
}

/// One line of the main table.
pub struct Row {
    pub workload: String,
    pub lethedb: Option<Measured>,
    pub peer: Option<Measured>,
    pub note: String,
}

/// A goal of issues 2, 3 and 6, with what was measured.
pub struct Goal {
    pub name: &'static str,
    pub target: String,
    pub measured: String,
    pub met: Option<bool>,
}

/// LetheDB's memory after loading many items, as the JSON reports it (MB to one decimal).
pub struct RssAfterLoad {
    pub items: usize,
    pub rss_mb: f64,
}

/// Everything one comparison measured, filled section by section.
#[derive(Default)]
pub struct Report {
    pub rows: Vec<Row>,
    pub cold_starts_ms: Vec<(Kind, f64)>,
    /// The hello-world server's point reads: the HTTP ceiling.
    pub hello: Option<Measured>,
    pub rss_after_load: Option<RssAfterLoad>,
    /// Each mass expiry, by its item count.
    pub mass_expiries: Vec<(usize, MassExpiry)>,
    pub accuracy: Option<AccuracyCounts>,
    pub throughput: Option<TtlThroughput>,
    /// Each section's figures as JSON, in run order: the document's `extra`.
    pub extra: serde_json::Map<String, Value>,
    pub goals: Vec<Goal>,
    pub failures: Vec<String>,
}

pub fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

impl Report {
    pub fn started(&mut self, server: &Server) {
        self.cold_starts_ms
            .push((server.kind, server.cold_start.as_secs_f64() * 1000.0));
    }

    pub fn cold_start_median_ms(&self, kind: Kind) -> Option<f64> {
        let mut starts: Vec<f64> = self
            .cold_starts_ms
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, ms)| *ms)
            .collect();
        starts.sort_by(f64::total_cmp);
        starts.get(starts.len() / 2).copied()
    }

    pub fn row(&self, name: &str) -> Option<&Row> {
        self.rows.iter().find(|row| row.workload == name)
    }
}

/// A JSON number printed without a fraction.
pub fn whole(value: &Value) -> String {
    value
        .as_f64()
        .map_or_else(|| value.to_string(), |v| format!("{v:.0}"))
}

fn cell(measured: Option<&Measured>) -> [String; 4] {
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

/// The Markdown document. `postgres_markdown` (the PostgreSQL rows, printed after the workload
/// table) is rendered by `pg_sections`, which imports this module and so cannot be called
/// from it.
pub fn markdown(
    report: &Report,
    config: &CompareConfig,
    peer: bool,
    launch: &Launch,
    postgres_markdown: &str,
) -> String {
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
    workload_table(&mut out, report, peer);
    out.push_str(postgres_markdown);
    cold_start_line(&mut out, report);
    lethedb_only(&mut out, report);
    goals_and_errors(&mut out, report);
    out
}

/// The main table: one row per workload, LetheDB and the peer side by side.
fn workload_table(out: &mut String, report: &Report, peer: bool) {
    out.push_str("| workload | LetheDB ops/s | p50 ms | p99 ms | peak RSS MB | peer ops/s | p50 ms | p99 ms | peak RSS MB | LetheDB/peer | notes |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for row in &report.rows {
        let l = cell(row.lethedb.as_ref());
        let p = cell(row.peer.as_ref());
        let ratio = match (&row.lethedb, &row.peer) {
            (Some(l), Some(p)) if p.summary.ops_per_sec > 0.0 => {
                format!("{:.2}×", l.summary.ops_per_sec / p.summary.ops_per_sec)
            }
            _ => "–".into(),
        };
        let mut note = row.note.clone();
        if let Some(per_commit) = row.lethedb.as_ref().and_then(|m| m.writes_per_commit) {
            // Point reads write nothing themselves: their servers' commits were the preload's.
            if !row.workload.starts_with("point-read") {
                let _ = write!(note, "; LetheDB {per_commit:.1} writes per commit");
                if let Some(bytes) = row.lethedb.as_ref().and_then(|m| m.bytes_written_per_write) {
                    let _ = write!(note, ", {bytes:.0} bytes written per write");
                }
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
}

fn cold_start_line(out: &mut String, report: &Report) {
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
}

/// Memory after a load, and the TTL sections, which only LetheDB runs.
fn lethedb_only(out: &mut String, report: &Report) {
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
        throughput_markdown(out, t);
    }
    if let Some(a) = report.extra.get("ttl_accuracy") {
        let _ = writeln!(
            out,
            "\nTTL accuracy (LetheDB only): {} items with ttl 1–3 s, {} polls around their expiry: {} reads found an item at or after its expiry, {} got 404 before it, {} fell inside the uncertainty of the write instant.",
            a["items"], a["reads"], a["found_at_or_after_expiry"], a["missing_before_expiry"], a["undecided"]
        );
    }
}

fn goals_and_errors(out: &mut String, report: &Report) {
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
}

/// The section of the mass expiry under provisioned throughput, from its JSON: the setup, a
/// table of both phases, the sweeper's pace in phase B, and where each phase's time went.
fn throughput_markdown(out: &mut String, t: &Value) {
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
    throughput_phases(out, t);
    throughput_sweep_line(out, t);
    throughput_server_table(out, t);
}

/// Reads, charges, latencies and 429s of phase A and B, their deletions, and B over A.
fn throughput_phases(out: &mut String, t: &Value) {
    let (a, b, d) = (&t["baseline"], &t["during_expiry"], &t["deletions"]);
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
}

/// The spread of p99 within each phase, and the sweeper's batches and deletion rates in B.
fn throughput_sweep_line(out: &mut String, t: &Value) {
    let (a, b, d) = (&t["baseline"], &t["during_expiry"], &t["deletions"]);
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
}

/// Where the time went, per phase: what a p99 change is made of.
fn throughput_server_table(out: &mut String, t: &Value) {
    let (a, b) = (&t["baseline"], &t["during_expiry"]);
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

pub fn to_json(report: &Report, config: &CompareConfig, peer: bool, launch: &Launch) -> Value {
    let measured = |m: &Option<Measured>| {
        m.as_ref().map(|m| {
            json!({"summary": m.summary.to_json(), "peak_rss_mb": round(mb(m.peak_rss_bytes), 1), "writes_per_commit": m.writes_per_commit.map(|w| round(w, 2)), "bytes_written_per_write": m.bytes_written_per_write.map(|b| round(b, 0))})
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
