//! The time-to-live sections of a comparison, LetheDB only (the peer ignores `ttl`): mass
//! expiry with the server idle, deletion lag with spare capacity, mass expiry under
//! provisioned throughput, and expiry accuracy.
//!
//! Each starts its own server, runs the workload from `ttl.rs` or `ttl_throughput.rs`, and
//! records the result and any errors in the [`Report`]; none formats or judges anything.

use crate::config::CompareConfig;
use crate::report::Report;
use crate::servers::{Kind, Launch};
use crate::sweep_log;
use crate::ttl;
use crate::ttl_accuracy;
use crate::ttl_throughput;
use std::time::Duration;

pub async fn mass_expiry(
    launch: &Launch,
    config: &CompareConfig,
    report: &mut Report,
) -> anyhow::Result<()> {
    for &items in &config.sweep_items {
        eprintln!("== ttl mass expiry of {items} items");
        let name = format!("ttl-sweep-{items}");
        let server = launch
            .start(
                Kind::LetheDb,
                &name,
                &["--log", sweep_log::SWEEP_LOG_FILTER],
            )
            .await?;
        report.started(&server);
        let outcome = ttl::mass_expiry(
            &server.endpoint,
            std::slice::from_ref(&server.log_path),
            &config.mass_expiry(items),
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
        report.mass_expiries.push((items, result));
    }
    Ok(())
}

pub async fn deletion_lag(
    launch: &Launch,
    config: &CompareConfig,
    report: &mut Report,
) -> anyhow::Result<()> {
    eprintln!("== ttl deletion lag with spare capacity");
    let server = launch
        .start(
            Kind::LetheDb,
            "ttl-lag",
            &["--log", sweep_log::SWEEP_LOG_FILTER],
        )
        .await?;
    report.started(&server);
    let outcome = ttl::deletion_lag(
        &server.endpoint,
        std::slice::from_ref(&server.log_path),
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
    Ok(())
}

pub async fn under_throughput(
    launch: &Launch,
    config: &CompareConfig,
    report: &mut Report,
) -> anyhow::Result<()> {
    eprintln!(
        "== ttl mass expiry of {} items under {} RU/s at 80% user load",
        config.throughput_items, config.throughput_ru
    );
    let server = launch
        .start(
            Kind::LetheDb,
            "ttl-throughput",
            &["--log", sweep_log::SWEEP_LOG_FILTER],
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
    report.throughput = Some(result);
    Ok(())
}

pub async fn accuracy(
    launch: &Launch,
    config: &CompareConfig,
    report: &mut Report,
) -> anyhow::Result<()> {
    eprintln!("== ttl accuracy");
    let server = launch.start(Kind::LetheDb, "ttl-accuracy", &[]).await?;
    report.started(&server);
    let outcome = ttl_accuracy::accuracy(
        &server.endpoint,
        &ttl_accuracy::AccuracyConfig {
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
    report.accuracy = Some(counts);
    Ok(())
}
