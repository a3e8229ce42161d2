//! What a workload on PostgreSQL costs, and where: the CPU seconds per operation of the LetheDB
//! instances, of PostgreSQL's processes and of this load generator, and how often a sample of
//! `pg_locks` found a transaction waiting for a lock. With everything on one machine the ops/s
//! say little about several machines; the CPU per operation of each part says which part a
//! second machine would relieve, and the lock samples say whether writers wait for each other.
//!
//! It reads `/proc` (Linux, PostgreSQL on this machine) and PostgreSQL's own views over a
//! connection of its own; it runs no workload and judges nothing.

use crate::server_snapshot::process_cpu_secs;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::NoTls;

/// How often `pg_locks` is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);

/// A probe running beside a workload.
pub struct PgCost {
    client: Arc<tokio_postgres::Client>,
    instance_pids: Vec<u32>,
    instances_before: f64,
    postgres_before: HashMap<u32, f64>,
    own_before: f64,
    stop: Arc<AtomicBool>,
    sampler: tokio::task::JoinHandle<LockSamples>,
}

/// What the `pg_locks` samples found.
#[derive(Default)]
struct LockSamples {
    samples: u64,
    /// Samples with at least one lock request not granted.
    waiting: u64,
    /// Ungranted requests, summed over the samples.
    waiters: u64,
    /// Of those, requests for advisory locks (the store's and the shards' locks).
    advisory_waiters: u64,
}

/// The summed CPU seconds of processes.
fn cpu_of(pids: &[u32]) -> f64 {
    pids.iter()
        .filter_map(|pid| process_cpu_secs(&pid.to_string()))
        .sum()
}

/// The CPU seconds of each of PostgreSQL's processes on this machine (every backend and
/// auxiliary process of the server `client` is connected to).
async fn postgres_cpu(client: &tokio_postgres::Client) -> anyhow::Result<HashMap<u32, f64>> {
    let rows = client
        .query("SELECT pid FROM pg_stat_activity", &[])
        .await?;
    Ok(rows
        .iter()
        .filter_map(|row| u32::try_from(row.get::<_, i32>(0)).ok())
        .filter_map(|pid| Some((pid, process_cpu_secs(&pid.to_string())?)))
        .collect())
}

impl PgCost {
    /// Starts sampling the server at `url`, with the instances' process ids.
    pub async fn start(url: &str, instance_pids: Vec<u32>) -> anyhow::Result<PgCost> {
        let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
        tokio::spawn(connection);
        let client = Arc::new(client);
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = tokio::spawn(sample_locks(Arc::clone(&client), Arc::clone(&stop)));
        Ok(PgCost {
            instances_before: cpu_of(&instance_pids),
            postgres_before: postgres_cpu(&client).await?,
            own_before: process_cpu_secs("self").unwrap_or(0.0),
            client,
            instance_pids,
            stop,
            sampler,
        })
    }

    /// Stops sampling; the costs of `operations` operations since the start, as JSON.
    pub async fn finish(self, operations: u64) -> anyhow::Result<Value> {
        self.stop.store(true, Ordering::Relaxed);
        let locks = self.sampler.await?;
        let instances = cpu_of(&self.instance_pids) - self.instances_before;
        // A backend that started during the run counts from zero; one that ended is lost.
        let postgres: f64 = postgres_cpu(&self.client)
            .await?
            .iter()
            .map(|(pid, now)| now - self.postgres_before.get(pid).copied().unwrap_or(0.0))
            .sum();
        let own = process_cpu_secs("self").unwrap_or(0.0) - self.own_before;
        let per_op = |secs: f64| secs * 1e6 / operations.max(1) as f64;
        let samples = locks.samples.max(1) as f64;
        Ok(json!({
            "cpu_us_per_op": {
                "instances": per_op(instances),
                "postgres": per_op(postgres),
                "load_generator": per_op(own),
            },
            "lock_samples": locks.samples,
            "lock_samples_waiting": locks.waiting as f64 / samples,
            "lock_waiters_mean": locks.waiters as f64 / samples,
            "advisory_waiters_mean": locks.advisory_waiters as f64 / samples,
        }))
    }
}

/// Samples `pg_locks` until told to stop.
async fn sample_locks(client: Arc<tokio_postgres::Client>, stop: Arc<AtomicBool>) -> LockSamples {
    let mut found = LockSamples::default();
    let query = "SELECT count(*), count(*) FILTER (WHERE locktype = 'advisory') \
                 FROM pg_locks WHERE NOT granted";
    while !stop.load(Ordering::Relaxed) {
        if let Ok(row) = client.query_one(query, &[]).await {
            let waiters: i64 = row.get(0);
            let advisory: i64 = row.get(1);
            found.samples += 1;
            found.waiting += u64::from(waiters > 0);
            found.waiters += waiters.unsigned_abs();
            found.advisory_waiters += advisory.unsigned_abs();
        }
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
    found
}

/// One line for a report: CPU per operation by part, and the lock samples.
pub fn describe(cost: &Value) -> String {
    let cpu = &cost["cpu_us_per_op"];
    let number = |value: &Value| value.as_f64().unwrap_or(0.0);
    format!(
        "CPU µs/op: instances {:.0}, PostgreSQL {:.0}, load generator {:.0}; lock waits in {:.1}% of {} pg_locks samples (mean {:.2} waiting, {:.2} of them advisory)",
        number(&cpu["instances"]),
        number(&cpu["postgres"]),
        number(&cpu["load_generator"]),
        number(&cost["lock_samples_waiting"]) * 100.0,
        cost["lock_samples"].as_u64().unwrap_or(0),
        number(&cost["lock_waiters_mean"]),
        number(&cost["advisory_waiters_mean"]),
    )
}
