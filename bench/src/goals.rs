//! The goals of issues 2, 3, 6 and 16, judged from a finished [`Report`].
//!
//! [`GOALS`] lists every rule in the order the table prints them; each rule reads the typed
//! report and yields the goals it can judge (none when its section did not run, one per mass
//! expiry for the sweep). Throughput goals against the peer or the hello-world ceiling are rows
//! of [`RATIO_GOALS`]. This module measures nothing and formats no tables.

use crate::config::CompareConfig;
use crate::report::{whole, Goal, Report};
use crate::servers::Kind;
use crate::stats::round;
use crate::ttl_throughput;

/// One goal rule: the goals it judges from the report.
type Rule = fn(&Report, &CompareConfig) -> Vec<Goal>;

/// Every goal rule, in table order.
const GOALS: &[Rule] = &[
    ratio_goals,
    full_scan_query,
    cold_start,
    rss_after_load,
    ttl_accuracy,
    mass_expiry,
    deletion_lag,
    ttl_under_throughput,
];

/// What a LetheDB workload's throughput is compared with.
enum Against {
    /// The same workload on the peer.
    Peer,
    /// Point reads on the hello-world server.
    Hello,
}

/// A goal that LetheDB's operations per second be at least `factor` times another figure.
struct RatioGoal {
    name: &'static str,
    workload: &'static str,
    against: Against,
    factor: f64,
    /// How the target names what is compared with.
    what: &'static str,
}

const RATIO_GOALS: &[RatioGoal] = &[
    RatioGoal {
        name: "point reads vs peer",
        workload: "point-read",
        against: Against::Peer,
        factor: 5.0,
        what: "peer",
    },
    RatioGoal {
        name: "point reads vs hello world",
        workload: "point-read",
        against: Against::Hello,
        factor: 0.75,
        what: "hello-world axum",
    },
    RatioGoal {
        name: "durable creates vs peer",
        workload: "create",
        against: Against::Peer,
        factor: 2.0,
        what: "peer",
    },
    RatioGoal {
        name: "durable upserts vs peer",
        workload: "upsert",
        against: Against::Peer,
        factor: 2.0,
        what: "peer",
    },
    RatioGoal {
        name: "durable replaces vs peer",
        workload: "replace",
        against: Against::Peer,
        factor: 2.0,
        what: "peer",
    },
    RatioGoal {
        name: "in-memory creates vs peer",
        workload: "create (in-memory)",
        against: Against::Peer,
        factor: 3.0,
        what: "peer",
    },
    RatioGoal {
        name: "in-memory upserts vs peer",
        workload: "upsert (in-memory)",
        against: Against::Peer,
        factor: 3.0,
        what: "peer",
    },
    RatioGoal {
        name: "in-memory replaces vs peer",
        workload: "replace (in-memory)",
        against: Against::Peer,
        factor: 3.0,
        what: "peer",
    },
];

/// Judges every goal into `report.goals`.
pub fn evaluate(report: &mut Report, config: &CompareConfig) {
    report.goals = GOALS.iter().flat_map(|rule| rule(report, config)).collect();
}

fn ops(report: &Report, name: &str, peer: bool) -> Option<f64> {
    let row = report.row(name)?;
    let measured = if peer { &row.peer } else { &row.lethedb };
    measured.as_ref().map(|m| m.summary.ops_per_sec)
}

fn ratio_goals(report: &Report, _config: &CompareConfig) -> Vec<Goal> {
    RATIO_GOALS
        .iter()
        .map(|goal| {
            let lethedb = ops(report, goal.workload, false);
            let other = match goal.against {
                Against::Peer => ops(report, goal.workload, true),
                // The figure as the JSON reports it (one decimal), as this goal always read it.
                Against::Hello => report
                    .hello
                    .as_ref()
                    .map(|hello| round(hello.summary.ops_per_sec, 1)),
            };
            let (measured, met) = match (lethedb, other) {
                (Some(l), Some(o)) if o > 0.0 => (
                    format!("{:.2}× ({l:.0} vs {o:.0} per s)", l / o),
                    Some(l / o >= goal.factor),
                ),
                _ => ("not measured".to_string(), None),
            };
            Goal {
                name: goal.name,
                target: format!("≥ {}× {}", goal.factor, goal.what),
                measured,
                met,
            }
        })
        .collect()
}

fn full_scan_query(report: &Report, _config: &CompareConfig) -> Vec<Goal> {
    let query = ops(report, "query-cross", false);
    vec![Goal {
        name: "full-scan query",
        target: "≥ 50 queries/s".into(),
        measured: query.map_or("not measured".into(), |q| format!("{q:.1} queries/s")),
        met: query.map(|q| q >= 50.0),
    }]
}

fn cold_start(report: &Report, _config: &CompareConfig) -> Vec<Goal> {
    let cold = report.cold_start_median_ms(Kind::LetheDb);
    vec![Goal {
        name: "cold start (median)",
        target: "≤ 50 ms".into(),
        measured: cold.map_or("not measured".into(), |c| format!("{c:.1} ms")),
        met: cold.map(|c| c <= 50.0),
    }]
}

fn rss_after_load(report: &Report, _config: &CompareConfig) -> Vec<Goal> {
    let Some(rss) = &report.rss_after_load else {
        return Vec::new();
    };
    vec![Goal {
        name: "RSS with 1M × 1 KiB items",
        target: "≤ 200 MB".into(),
        measured: format!("{:.1} MB after {} items", rss.rss_mb, rss.items),
        met: (rss.items >= 1_000_000).then_some(rss.rss_mb <= 200.0),
    }]
}

fn ttl_accuracy(report: &Report, _config: &CompareConfig) -> Vec<Goal> {
    let Some(counts) = &report.accuracy else {
        return Vec::new();
    };
    vec![Goal {
        name: "TTL accuracy",
        target: "0 found after expiry, 0 missing before".into(),
        measured: format!(
            "{} and {} ({} reads, {} undecided)",
            counts.found_after_expiry, counts.missing_before_expiry, counts.reads, counts.undecided
        ),
        met: Some(counts.found_after_expiry == 0 && counts.missing_before_expiry == 0),
    }]
}

fn mass_expiry(report: &Report, config: &CompareConfig) -> Vec<Goal> {
    let mut goals = Vec::new();
    for (items, result) in &report.mass_expiries {
        goals.push(Goal {
            name: "sweep rate, idle",
            target: "≥ 50,000 deletions/s".into(),
            measured: format!(
                "{:.0} deletions/s ({items} items)",
                result.sweep_rate_per_sec
            ),
            // A smoke run's few items say nothing about the rate.
            met: (!config.smoke || *items >= 100_000)
                .then_some(result.sweep_rate_per_sec >= 50_000.0),
        });
        let (base, during) = (result.read_baseline.p99_ms, result.read_during.p99_ms);
        goals.push(Goal {
            name: "read p99 during mass expiry",
            target: "≤ 1.2× baseline".into(),
            measured: format!(
                "{:.2}× ({during:.2} vs {base:.2} ms, {items} items)",
                during / base.max(1e-9)
            ),
            met: Some(during <= base * 1.2),
        });
    }
    goals
}

fn deletion_lag(report: &Report, _config: &CompareConfig) -> Vec<Goal> {
    // The deletion-lag workload reports only its JSON, so this rule reads that.
    let Some(lag) = report.extra.get("ttl_deletion_lag") else {
        return Vec::new();
    };
    let p99 = lag["deletion_lag"]["p99_ms"].as_f64().unwrap_or(f64::MAX);
    vec![Goal {
        name: "deletion lag p99, spare capacity",
        target: "≤ 1 s".into(),
        measured: format!(
            "{p99:.0} ms ({} items expiring at {} /s)",
            lag["items"],
            whole(&lag["expiry_rate_per_sec"])
        ),
        met: Some(p99 <= 1000.0),
    }]
}

fn ttl_under_throughput(report: &Report, config: &CompareConfig) -> Vec<Goal> {
    let Some(result) = &report.throughput else {
        return Vec::new();
    };
    let mut goals = Vec::new();
    let (base, during) = (&result.baseline, &result.during);
    let items = config.throughput_items;
    let ru = config.throughput_ru;
    let ratio = during.reads.p99_ms / base.reads.p99_ms.max(1e-9);
    let per_second_ratio =
        during.sub_window_p99_quartiles_ms()[1] / base.sub_window_p99_quartiles_ms()[1].max(1e-9);
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
    goals
}
