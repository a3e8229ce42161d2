//! The side-by-side comparison: every section (`sections.rs`) against LetheDB and the peer in
//! turn, in one run on one machine, then the goals (`goals.rs`) and the table of figures,
//! ratios and goals (`report.rs`) written to the results directory.
//!
//! Each workload gets a freshly started server with an empty store, so peak RSS (`VmHWM`)
//! belongs to that workload alone and no workload inherits another's data. Absolute figures
//! depend on the machine and on whatever else it runs; the ratios, taken minutes apart on the
//! same machine, are the figures to compare. The run fails (non-zero exit) only on errors: a
//! LetheDB workload that saw an unexpected status, or a TTL accuracy violation. It never fails
//! on a time.

use crate::config::CompareConfig;
use crate::goals;
use crate::report::{self, Report};
use crate::sections::SECTIONS;
use crate::servers::Launch;

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
    for section in SECTIONS {
        section.run(launch, config, peer, &mut report).await?;
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
    if let Some(postgres) = crate::pg_sections::to_json(&report) {
        report.extra.insert("postgres".into(), postgres);
    }
    let mut postgres_markdown = String::new();
    crate::pg_sections::markdown(&mut postgres_markdown, &report);
    goals::evaluate(&mut report, config);
    let markdown = report::markdown(&report, config, peer, launch, &postgres_markdown);
    let json = report::to_json(&report, config, peer, launch);
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
