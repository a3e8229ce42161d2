//! What a running LetheDB had counted at one instant, and what changed between two instants:
//! its `/metrics` (429s and RUs per container, the Read latency histogram, commits), the CPU
//! time of its threads and of this load generator (`/proc`), and the machine's busy and
//! stolen CPU time.
//!
//! It reads the Prometheus text format and `/proc` itself, for exactly what the throughput
//! workload reports; it judges nothing and starts no server. Linux only: elsewhere the `/proc`
//! figures are zero.

use crate::cosmos::{Client, Request};
use crate::stats::round;
use anyhow::bail;
use bytes::Bytes;
use hyper::Method;
use serde_json::{json, Value};
use std::time::Instant;

/// `GET`s a LetheDB route that answers JSON (`/_lethedb/stats`, signed with the master key),
/// failing on any status but 200.
pub async fn get_json(client: &mut Client, path: &str) -> anyhow::Result<Value> {
    let reply = get(client, path).await?;
    Ok(serde_json::from_slice(&reply)?)
}

/// The resource type and link a path is signed with, as the server derives them from any
/// Cosmos path: `/_lethedb/stats` is type `_lethedb`, link `_lethedb/stats` (the statistics
/// answer only the master key; `/metrics` needs no signature and ignores it).
fn signed_as(path: &str) -> (String, String) {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.len() {
        0 => (String::new(), String::new()),
        n if n % 2 == 0 => (segments[n - 2].to_string(), segments.join("/")),
        n => (segments[n - 1].to_string(), segments[..n - 1].join("/")),
    }
}

async fn get(client: &mut Client, path: &str) -> anyhow::Result<Bytes> {
    let (resource_type, resource_link) = signed_as(path);
    let reply = client
        .send(&Request {
            method: Method::GET,
            path,
            resource_type: &resource_type,
            resource_link: &resource_link,
            headers: &[],
            body: Bytes::new(),
        })
        .await?;
    if reply.status != 200 {
        bail!("GET {path}: {}", reply.status);
    }
    Ok(reply.body)
}

/// What the server had counted at one instant: its `/metrics` text and its threads' CPU time.
pub struct Snapshot {
    at: Instant,
    /// How long `GET /metrics` took.
    scrape_ms: f64,
    metrics: Vec<Sample>,
    /// CPU seconds by thread name (threads of one name summed).
    cpu_secs: Vec<(String, f64)>,
    /// This load generator's own CPU seconds.
    own_cpu_secs: f64,
    /// CPU seconds the whole machine spent busy, and stolen from it by the hypervisor.
    machine: MachineCpu,
    /// Seconds the server's threads, and this process's, spent runnable but waiting for a CPU.
    server_wait_secs: f64,
    own_wait_secs: f64,
}

impl Snapshot {
    pub async fn take(client: &mut Client, server_pid: Option<u32>) -> anyhow::Result<Snapshot> {
        let sent = Instant::now();
        let text = get(client, "/metrics").await?;
        Ok(Snapshot {
            at: Instant::now(),
            scrape_ms: sent.elapsed().as_secs_f64() * 1000.0,
            metrics: parse_metrics(&String::from_utf8_lossy(&text)),
            cpu_secs: server_pid.map(thread_cpu_secs).unwrap_or_default(),
            own_cpu_secs: process_cpu_secs("self").unwrap_or(0.0),
            machine: machine_cpu().unwrap_or_default(),
            server_wait_secs: server_pid.map_or(0.0, |pid| run_queue_wait_secs(&pid.to_string())),
            own_wait_secs: run_queue_wait_secs("self"),
        })
    }

    /// What changed since `before`, for the report: 429s and RUs of `container`, the Read
    /// latency the server measured, CPU per second of the server's threads and of the load
    /// generator.
    pub fn delta_json(&self, before: &Snapshot, container: &str) -> Value {
        let secs = self.at.duration_since(before.at).as_secs_f64().max(1e-9);
        let of_container = [
            ("database", crate::resources::DATABASE_ID),
            ("container", container),
        ];
        let counter = |name: &str| {
            metric_sum(&self.metrics, name, &of_container)
                - metric_sum(&before.metrics, name, &of_container)
        };
        let read_buckets = histogram_delta(
            &before.metrics,
            &self.metrics,
            "lethedb_request_duration_seconds_bucket",
            &[("operation", "Read")],
        );
        let cpu: serde_json::Map<String, Value> = self
            .cpu_secs
            .iter()
            .map(|(name, total)| {
                let earlier = before
                    .cpu_secs
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or(0.0, |(_, s)| *s);
                (name.clone(), json!(round((total - earlier) / secs, 3)))
            })
            .collect();
        let server_cpu: f64 = self.cpu_secs.iter().map(|(_, s)| s).sum::<f64>()
            - before.cpu_secs.iter().map(|(_, s)| s).sum::<f64>();
        let own_cpu = self.own_cpu_secs - before.own_cpu_secs;
        let busy = self.machine.busy_secs - before.machine.busy_secs;
        json!({
            "throttled": counter("lethedb_throttled_requests_total"),
            "user_ru_per_sec": round(counter("lethedb_request_units_total") / secs, 1),
            "read_p50_ms_at_most": histogram_quantile(&read_buckets, 0.50).map(|s| round(s * 1000.0, 3)),
            "read_p99_ms_at_most": histogram_quantile(&read_buckets, 0.99).map(|s| round(s * 1000.0, 3)),
            "commits": metric_sum(&self.metrics, "lethedb_commit_duration_seconds_count", &[])
                - metric_sum(&before.metrics, "lethedb_commit_duration_seconds_count", &[]),
            "cpu_per_sec_by_thread": cpu,
            "load_generator_cpu_per_sec": round((self.own_cpu_secs - before.own_cpu_secs) / secs, 3),
            "metrics_scrape_ms_after": round(self.scrape_ms, 1),
            // Whatever else ran on the machine meanwhile (other builds, tests, benchmarks): it
            // competes with the server and the load generator for the same cores.
            "other_processes_cpu_per_sec": round(((busy - server_cpu - own_cpu) / secs).max(0.0), 3),
            "steal_cpu_per_sec": round((self.machine.steal_secs - before.machine.steal_secs) / secs, 3),
            // Time runnable but not running: how much the threads queued for a core.
            "server_run_queue_wait_per_sec": round((self.server_wait_secs - before.server_wait_secs) / secs, 3),
            "load_generator_run_queue_wait_per_sec": round((self.own_wait_secs - before.own_wait_secs) / secs, 3),
        })
    }
}

/// One sample line of the Prometheus text format.
#[derive(Clone, Debug, PartialEq)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

/// Parses the sample lines of a Prometheus text exposition (label values without escapes,
/// which is all LetheDB writes).
fn parse_metrics(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .filter_map(|line| {
            let (head, value) = line.rsplit_once(' ')?;
            let value: f64 = match value.trim() {
                "+Inf" => f64::INFINITY,
                other => other.parse().ok()?,
            };
            let (name, labels) = match head.split_once('{') {
                Some((name, rest)) => (name, rest.strip_suffix('}')?),
                None => (head, ""),
            };
            let labels = labels
                .split(',')
                .filter(|pair| !pair.is_empty())
                .filter_map(|pair| {
                    let (key, value) = pair.split_once('=')?;
                    Some((key.to_string(), value.trim_matches('"').to_string()))
                })
                .collect();
            Some(Sample {
                name: name.to_string(),
                labels,
                value,
            })
        })
        .collect()
}

fn has_labels(sample: &Sample, wanted: &[(&str, &str)]) -> bool {
    wanted
        .iter()
        .all(|(k, v)| sample.labels.iter().any(|(sk, sv)| sk == k && sv == v))
}

/// The sum of the samples called `name` that carry every label of `wanted`.
fn metric_sum(samples: &[Sample], name: &str, wanted: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| s.name == name && has_labels(s, wanted))
        .map(|s| s.value)
        .sum()
}

/// Cumulative bucket counts `(upper bound, count)` gained between two readings, by bound.
fn histogram_delta(
    before: &[Sample],
    after: &[Sample],
    name: &str,
    wanted: &[(&str, &str)],
) -> Vec<(f64, f64)> {
    let buckets = |samples: &[Sample]| -> Vec<(f64, f64)> {
        let mut found: Vec<(f64, f64)> = samples
            .iter()
            .filter(|s| s.name == name && has_labels(s, wanted))
            .filter_map(|s| {
                let le = s.labels.iter().find(|(k, _)| k == "le")?.1.as_str();
                let bound = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().ok()?
                };
                Some((bound, s.value))
            })
            .collect();
        found.sort_by(|a, b| a.0.total_cmp(&b.0));
        found
    };
    let earlier = buckets(before);
    buckets(after)
        .into_iter()
        .map(|(bound, count)| {
            let old = earlier
                .iter()
                .find(|(b, _)| *b == bound)
                .map_or(0.0, |(_, c)| *c);
            (bound, count - old)
        })
        .collect()
}

/// The upper bound of the bucket holding the `quantile` of cumulative buckets (seconds).
fn histogram_quantile(buckets: &[(f64, f64)], quantile: f64) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    buckets
        .iter()
        .find(|(_, count)| *count >= quantile * total)
        .map(|(bound, _)| *bound)
}

/// CPU seconds of each named thread of a process (threads of one name summed), from
/// `/proc/PID/task/*/stat`.
fn thread_cpu_secs(pid: u32) -> Vec<(String, f64)> {
    let mut by_name: Vec<(String, f64)> = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return by_name;
    };
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let Some((name, secs)) = parse_stat(&stat) else {
            continue;
        };
        match by_name.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 += secs,
            None => by_name.push((name, secs)),
        }
    }
    by_name.sort_by(|a, b| a.0.cmp(&b.0));
    by_name
}

pub(crate) fn process_cpu_secs(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&stat).map(|(_, secs)| secs)
}

/// Clock ticks per second of `/proc` CPU times (`USER_HZ`, 100 on Linux).
const CLOCK_TICKS_PER_SEC: f64 = 100.0;

/// Seconds all threads of a process spent runnable but waiting for a CPU, from the second field
/// of `/proc/PID/task/*/schedstat` (nanoseconds).
fn run_queue_wait_secs(pid: &str) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0.0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().nth(1)?.parse::<f64>().ok())
        .sum::<f64>()
        / 1e9
}

/// The machine's CPU time from the `cpu` line of `/proc/stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct MachineCpu {
    /// user + nice + system + irq + softirq.
    busy_secs: f64,
    steal_secs: f64,
}

fn machine_cpu() -> Option<MachineCpu> {
    parse_machine_cpu(&std::fs::read_to_string("/proc/stat").ok()?)
}

fn parse_machine_cpu(stat: &str) -> Option<MachineCpu> {
    let line = stat.lines().find(|line| line.starts_with("cpu "))?;
    let ticks: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|field| field.parse().ok())
        .collect();
    let field = |index: usize| ticks.get(index).copied().unwrap_or(0.0);
    // user nice system idle iowait irq softirq steal ...
    Some(MachineCpu {
        busy_secs: (field(0) + field(1) + field(2) + field(5) + field(6)) / CLOCK_TICKS_PER_SEC,
        steal_secs: field(7) / CLOCK_TICKS_PER_SEC,
    })
}

/// `(name, user + system CPU seconds)` from a `/proc/.../stat` line.
fn parse_stat(stat: &str) -> Option<(String, f64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_string();
    let fields: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    // Fields 14 and 15 of stat(5), counted from the state (field 3) after the name.
    let user: f64 = fields.get(11)?.parse().ok()?;
    let system: f64 = fields.get(12)?.parse().ok()?;
    Some((name, (user + system) / CLOCK_TICKS_PER_SEC))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_paths_are_signed_as_the_server_derives_them() {
        let signed = |path| {
            let (resource_type, link) = signed_as(path);
            format!("{resource_type} {link}")
        };
        assert_eq!(signed("/_lethedb/stats"), "_lethedb _lethedb/stats");
        assert_eq!(signed("/metrics"), "metrics ");
        assert_eq!(signed("/"), " ");
    }

    #[test]
    fn prometheus_samples_parse_and_sum_by_label() {
        let text = "# HELP x y\nlethedb_throttled_requests_total{database=\"bench\",container=\"a\"} 3\nlethedb_throttled_requests_total{database=\"bench\",container=\"b\"} 4\nlethedb_request_duration_seconds_bucket{le=\"0.0001\",operation=\"Read\"} 5\nlethedb_request_duration_seconds_bucket{le=\"+Inf\",operation=\"Read\"} 10\nlethedb_writer_queue_depth 0\n";
        let samples = parse_metrics(text);
        assert_eq!(samples.len(), 5);
        assert_eq!(
            metric_sum(
                &samples,
                "lethedb_throttled_requests_total",
                &[("container", "b")]
            ),
            4.0
        );
        assert_eq!(
            metric_sum(&samples, "lethedb_throttled_requests_total", &[]),
            7.0
        );
        let buckets = histogram_delta(
            &[],
            &samples,
            "lethedb_request_duration_seconds_bucket",
            &[("operation", "Read")],
        );
        assert_eq!(buckets, vec![(0.0001, 5.0), (f64::INFINITY, 10.0)]);
        assert_eq!(histogram_quantile(&buckets, 0.5), Some(0.0001));
        assert_eq!(histogram_quantile(&buckets, 0.99), Some(f64::INFINITY));
    }

    #[test]
    fn proc_stat_names_and_cpu_seconds() {
        let stat = "123 (lethedb-writer) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0";
        assert_eq!(parse_stat(stat), Some(("lethedb-writer".into(), 3.0)));
        let machine = "cpu  100 20 30 900 5 6 4 10 0 0\ncpu0 50 10 15 450 2 3 2 5 0 0\n";
        assert_eq!(
            parse_machine_cpu(machine),
            Some(MachineCpu {
                busy_secs: 1.6,
                steal_secs: 0.1
            })
        );
    }
}
