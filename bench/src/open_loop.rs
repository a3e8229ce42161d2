//! Open-loop (fixed-rate) point reads: requests leave on a schedule whatever the server
//! answers, so a slow or refusing server cannot slow the load down, as it does closed-loop
//! clients, and a stall shows in the latencies instead of hiding in a lower rate.
//!
//! Request `k` is due at `start + k / rate`. Connection `c` of `n` sends requests `c`, `c + n`,
//! ... one at a time. When a request is due while its connection still waits for the previous
//! answer, it leaves as soon as that answer arrives and its latency counts from the instant it
//! was due (no coordinated omission); when the connection was idle, it sleeps until the due
//! instant and its latency counts from when it actually left, so the timer's millisecond
//! granularity is not counted as server time. A 429 is counted, never retried: the share of
//! refusals is one of the figures. Any other status but 200, or a transport failure, is an
//! error. This module knows nothing of TTL or of the servers under test.

use crate::cosmos::{Client, ContainerPaths, Endpoint, Reply};
use crate::data::{DataSet, Rng};
use crate::stats::{Recorder, Summary};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How late a send may leave after its due instant, on an idle connection, before it counts
/// as a slip of the schedule (the load generator itself fell behind).
const SLIP_TOLERANCE: Duration = Duration::from_millis(2);
/// The measured window is also cut into parts this long (or into [`SUB_WINDOWS_MIN`] parts of a
/// shorter window), each with its own p99: their spread shows how much p99 moves within one
/// unchanged phase, the noise a comparison of two phases has to beat.
pub const SUB_WINDOW: Duration = Duration::from_secs(1);
pub const SUB_WINDOWS_MIN: usize = 3;

/// The shape of one open-loop run.
#[derive(Clone, Debug)]
pub struct OpenLoopConfig {
    /// Requests per second.
    pub rate_per_sec: f64,
    /// Connections the schedule is spread over; enough that each one is idle most of the time.
    pub connections: usize,
    /// Requests due in the warm-up are sent but not counted.
    pub warmup: Duration,
    pub duration: Duration,
    /// The items read: uniformly among `first_item..first_item + data.items`.
    pub first_item: usize,
    pub data: DataSet,
}

/// What one open-loop run measured, over the requests due inside the measured window.
#[derive(Clone, Debug, Default)]
pub struct OpenLoopSummary {
    /// Latencies of the 200s and the errors; `ops_per_sec` is 200s per second.
    pub reads: Summary,
    /// The p99 of the 200s due in each consecutive part of the window ([`SUB_WINDOW`]).
    pub p99_ms_by_sub_window: Vec<f64>,
    /// Requests due in the window (200s, 429s and errors).
    pub sent: u64,
    pub throttled: u64,
    /// Request units charged to the answered requests (`x-ms-request-charge`).
    pub charge_ru: f64,
    /// Sends that left more than [`SLIP_TOLERANCE`] after their due instant on an idle
    /// connection: the load generator could not keep its own schedule.
    pub slipped: u64,
    pub duration: Duration,
}

impl OpenLoopSummary {
    pub fn throttled_fraction(&self) -> f64 {
        self.throttled as f64 / (self.sent.max(1)) as f64
    }

    pub fn charge_ru_per_sec(&self) -> f64 {
        self.charge_ru / self.duration.as_secs_f64().max(1e-9)
    }

    /// The first quartile, median and third quartile of the sub-windows' p99s.
    pub fn sub_window_p99_quartiles_ms(&self) -> [f64; 3] {
        let mut sorted = self.p99_ms_by_sub_window.clone();
        sorted.sort_by(f64::total_cmp);
        [0.25, 0.5, 0.75].map(|q| crate::stats::percentile_f64(&sorted, q))
    }

    pub fn to_json(&self) -> Value {
        json!({
            "p99_ms_sub_window_quartiles": self.sub_window_p99_quartiles_ms().map(|p| crate::stats::round(p, 3)),
            "reads": self.reads.to_json(),
            "p99_ms_by_sub_window": self.p99_ms_by_sub_window.iter().map(|p| crate::stats::round(*p, 3)).collect::<Vec<_>>(),
            "sent": self.sent,
            "throttled": self.throttled,
            "throttled_fraction": crate::stats::round(self.throttled_fraction(), 6),
            "charge_ru_per_sec": crate::stats::round(self.charge_ru_per_sec(), 1),
            "slipped_sends": self.slipped,
        })
    }
}

/// When each request is due, and the measured window and its parts.
#[derive(Clone, Copy)]
struct Schedule {
    connections: usize,
    interval: Duration,
    start: Instant,
    measure_from: Instant,
    deadline: Instant,
    sub_windows: usize,
    sub_window: Duration,
}

impl Schedule {
    fn new(config: &OpenLoopConfig) -> Schedule {
        // A moment for every connection task to start before the first request is due.
        let start = Instant::now() + Duration::from_millis(20);
        let measure_from = start + config.warmup;
        let sub_windows = ((config.duration.as_secs_f64() / SUB_WINDOW.as_secs_f64()) as usize)
            .max(SUB_WINDOWS_MIN);
        Schedule {
            connections: config.connections.max(1),
            interval: Duration::from_secs_f64(1.0 / config.rate_per_sec.max(1e-3)),
            start,
            measure_from,
            deadline: measure_from + config.duration,
            sub_windows,
            sub_window: config.duration / sub_windows as u32,
        }
    }

    /// The part of the measured window a request due at `due` falls in.
    fn sub_window_of(&self, due: Instant) -> usize {
        ((due - self.measure_from).as_secs_f64() / self.sub_window.as_secs_f64().max(1e-9)) as usize
    }
}

/// What one connection counted over the requests due in the measured window.
struct ConnectionTally {
    recorder: Recorder,
    sub_windows: Vec<Recorder>,
    sent: u64,
    throttled: u64,
    charge_ru: f64,
    slipped: u64,
}

impl ConnectionTally {
    fn new(schedule: &Schedule) -> ConnectionTally {
        ConnectionTally {
            recorder: Recorder::default(),
            sub_windows: std::iter::repeat_with(Recorder::default)
                .take(schedule.sub_windows)
                .collect(),
            sent: 0,
            throttled: 0,
            charge_ru: 0.0,
            slipped: 0,
        }
    }

    /// Counts the answer to a request due at `due` inside the measured window.
    fn count(
        &mut self,
        schedule: &Schedule,
        due: Instant,
        latency: Duration,
        outcome: anyhow::Result<Reply>,
    ) {
        self.sent += 1;
        let reply = match outcome {
            Ok(reply) => reply,
            Err(error) => {
                self.recorder
                    .error("transport".into(), format!("{error:#}"));
                return;
            }
        };
        self.charge_ru += reply.request_charge;
        match reply.status {
            200 => {
                self.recorder.record(latency);
                if let Some(recorder) = self.sub_windows.get_mut(schedule.sub_window_of(due)) {
                    recorder.record(latency);
                }
            }
            429 => self.throttled += 1,
            status => self.recorder.error(
                format!("status {status}"),
                String::from_utf8_lossy(&reply.body)
                    .chars()
                    .take(300)
                    .collect(),
            ),
        }
    }

    fn merge(&mut self, other: ConnectionTally) {
        self.recorder.merge(other.recorder);
        for (sum, part) in self.sub_windows.iter_mut().zip(other.sub_windows) {
            sum.merge(part);
        }
        self.sent += other.sent;
        self.throttled += other.throttled;
        self.charge_ru += other.charge_ru;
        self.slipped += other.slipped;
    }
}

/// Runs point reads at `config.rate_per_sec` for the warm-up and the measured window, then
/// waits for every answer.
pub async fn point_reads(
    endpoint: &Arc<Endpoint>,
    paths: &ContainerPaths,
    config: &OpenLoopConfig,
) -> anyhow::Result<OpenLoopSummary> {
    let schedule = Schedule::new(config);
    let mut tasks = Vec::new();
    for connection in 0..schedule.connections {
        let (endpoint, paths, data) = (Arc::clone(endpoint), paths.clone(), config.data.clone());
        let first_item = config.first_item;
        tasks.push(tokio::spawn(async move {
            connection_reads(endpoint, paths, data, first_item, connection, schedule).await
        }));
    }
    let mut total = ConnectionTally::new(&schedule);
    for task in tasks {
        total.merge(task.await?);
    }
    let p99_ms_by_sub_window = total
        .sub_windows
        .into_iter()
        .map(|part| part.summary(schedule.sub_window).p99_ms)
        .collect();
    Ok(OpenLoopSummary {
        reads: total.recorder.summary(config.duration),
        p99_ms_by_sub_window,
        sent: total.sent,
        throttled: total.throttled,
        charge_ru: total.charge_ru,
        slipped: total.slipped,
        duration: config.duration,
    })
}

/// Connection `connection`'s share of the schedule: requests `connection`, `connection + n`,
/// ... one at a time, each reading a random item of `first_item..first_item + data.items`.
async fn connection_reads(
    endpoint: Arc<Endpoint>,
    paths: ContainerPaths,
    data: DataSet,
    first_item: usize,
    connection: usize,
    schedule: Schedule,
) -> ConnectionTally {
    let mut client = Client::new(endpoint);
    let mut rng = Rng::new(data.seed ^ (0x0be2_1005 + connection as u64));
    let mut tally = ConnectionTally::new(&schedule);
    let mut index = connection as u32;
    loop {
        let due = schedule.start + schedule.interval * index;
        if due >= schedule.deadline {
            break;
        }
        index += schedule.connections as u32;
        let left = if Instant::now() < due {
            tokio::time::sleep_until(tokio::time::Instant::from_std(due)).await;
            let left = Instant::now();
            if left > due + SLIP_TOLERANCE && due >= schedule.measure_from {
                tally.slipped += 1;
            }
            left
        } else {
            due
        };
        let item = first_item + rng.below(data.items as u64) as usize;
        let (id, pk) = (data.id(item), data.pk(item));
        let outcome = client.read_item(&paths, &id, &pk).await;
        let latency = left.elapsed();
        if due >= schedule.measure_from {
            tally.count(&schedule, due, latency, outcome);
        }
    }
    tally
}
