//! The TTL accuracy workload: a client polling each item around its expiry instant, so that a
//! read that finds an item after it expired, or misses it before, is seen.
//!
//! The write instant is only known within bounds (between the send and the acknowledgement,
//! and within the second of `_ts`), so polls inside that uncertainty are counted as undecided,
//! never as errors. This module starts no server and judges no goal.

use crate::cosmos::{Client, ContainerPaths, Endpoint};
use crate::data::{item_body, json_ts, unix_ms, Rng};
use crate::resources::{create_container, ensure_database};
use anyhow::{bail, Context as _};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// The shape of the accuracy workload.
#[derive(Clone, Debug)]
pub struct AccuracyConfig {
    pub items: usize,
    pub seed: u64,
    /// How long before and after each expiry instant an item is polled.
    pub window: Duration,
    /// The pause between two polls of one item.
    pub poll_interval: Duration,
}

/// Counts of what the pollers saw, judged by the rule in [`accuracy`].
#[derive(Clone, Debug, Default)]
pub struct AccuracyCounts {
    pub reads: u64,
    /// 200 for a read sent at or after the latest possible expiry instant: an error.
    pub found_after_expiry: u64,
    /// 404 for a read answered before the earliest possible expiry instant: an error.
    pub missing_before_expiry: u64,
    /// Reads whose time span overlaps the expiry uncertainty: either answer is right.
    pub undecided: u64,
    pub other_errors: u64,
}

/// TTL accuracy: `items` items with `ttl` 1, 2 or 3 s are each polled every `poll_interval`
/// from `window` before to `window` after their expiry instant.
///
/// The rule. An item's expiry instant is `last_modified_ms + ttl * 1000`. The client does not
/// see `last_modified_ms`, only that it lies in `[max(sent, _ts * 1000), min(acked, _ts * 1000 +
/// 999)]` (`sent` and `acked` bracket the create; `_ts` is whole seconds), which gives an
/// earliest and latest expiry instant `[e_lo, e_hi]`. A read is handled by the server at some
/// instant in `[read sent, read answered]`, and the server judges with whole milliseconds
/// (`now_ms >= expiry`). So a 200 is certainly wrong when the read was sent at or after
/// `e_hi`, and a 404 is certainly wrong when it was answered before `e_lo`; every other read is
/// counted as undecided. Client and server read the same system clock.
pub async fn accuracy(
    endpoint: &Arc<Endpoint>,
    config: &AccuracyConfig,
) -> anyhow::Result<(AccuracyCounts, Value)> {
    let mut client = Client::new(Arc::clone(endpoint));
    ensure_database(&mut client).await?;
    let paths = create_container(&mut client, "accuracy", Some(-1)).await?;
    let mut rng = Rng::new(config.seed);
    let mut tasks = Vec::new();
    for index in 0..config.items {
        let ttl_secs = 1 + rng.below(3) as i64;
        let id = format!("a{index}");
        let pk = format!("p{}", index % 4);
        let body = item_body(&id, &pk, 0, &format!("\"ttl\":{ttl_secs},"), 256);
        let sent = unix_ms();
        let reply = client.create_item(&paths, &pk, body).await?;
        let acked = unix_ms();
        if reply.status != 201 {
            bail!("creating accuracy item {id}: {}", reply.status);
        }
        let ts_ms = json_ts(&reply.body) as f64 * 1000.0;
        let written_lo = sent.max(ts_ms);
        let written_hi = acked.min(ts_ms + 999.0);
        let (e_lo, e_hi) = (
            written_lo.floor() + (ttl_secs * 1000) as f64,
            written_hi.ceil() + (ttl_secs * 1000) as f64,
        );
        let (endpoint, paths, config) = (Arc::clone(endpoint), paths.clone(), config.clone());
        tasks.push(tokio::spawn(async move {
            poll_item(&endpoint, &paths, &id, &pk, e_lo, e_hi, &config).await
        }));
        // Spread the writes so expiry instants fall at different milliseconds of the second.
        tokio::time::sleep(Duration::from_millis(1 + rng.below(7))).await;
    }
    let mut counts = AccuracyCounts::default();
    for task in tasks {
        let item = task.await.context("a poller failed")??;
        counts.reads += item.reads;
        counts.found_after_expiry += item.found_after_expiry;
        counts.missing_before_expiry += item.missing_before_expiry;
        counts.undecided += item.undecided;
        counts.other_errors += item.other_errors;
    }
    let json = json!({
        "items": config.items,
        "reads": counts.reads,
        "found_at_or_after_expiry": counts.found_after_expiry,
        "missing_before_expiry": counts.missing_before_expiry,
        "undecided": counts.undecided,
        "other_errors": counts.other_errors,
    });
    Ok((counts, json))
}

async fn poll_item(
    endpoint: &Arc<Endpoint>,
    paths: &ContainerPaths,
    id: &str,
    pk: &str,
    e_lo: f64,
    e_hi: f64,
    config: &AccuracyConfig,
) -> anyhow::Result<AccuracyCounts> {
    let window_ms = config.window.as_secs_f64() * 1000.0;
    let start_ms = e_lo - window_ms;
    let wait = (start_ms - unix_ms()).max(0.0);
    tokio::time::sleep(Duration::from_secs_f64(wait / 1000.0)).await;
    let mut client = Client::new(Arc::clone(endpoint));
    let mut counts = AccuracyCounts::default();
    while unix_ms() < e_hi + window_ms {
        let sent = unix_ms();
        let reply = client.read_item(paths, id, pk).await;
        let answered = unix_ms();
        counts.reads += 1;
        match reply.map(|r| r.status) {
            Ok(200) if sent >= e_hi => counts.found_after_expiry += 1,
            Ok(404) if answered < e_lo => counts.missing_before_expiry += 1,
            Ok(200) if answered < e_lo => {}
            Ok(404) if sent >= e_hi => {}
            Ok(200 | 404) => counts.undecided += 1,
            _ => counts.other_errors += 1,
        }
        tokio::time::sleep(config.poll_interval).await;
    }
    Ok(counts)
}
