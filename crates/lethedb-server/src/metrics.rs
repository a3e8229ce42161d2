//! `GET /metrics` in the Prometheus text format: request counts and latencies by operation,
//! request units and 429s per container (counted as requests pass), and, read from the engine at
//! scrape time, items and bytes per container (expired excluded), the TTL backlog, the age of
//! the oldest expired item, sweeper deletions, the writer's queue and commit latency.
//!
//! This module observes; it changes nothing and decides nothing: the operation label is the
//! [`Operation`] the dispatcher classified, by its stable name.

use axum::http::StatusCode;
use lethedb_engine::writer::COMMIT_LATENCY_BOUNDS_SECS;
use lethedb_engine::{Container, Engine, Usage};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use crate::operation::Operation;
use crate::routes::ResourcePath;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    operation: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    operation: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ContainerLabels {
    database: String,
    container: String,
}

/// The server's metrics registry.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<OperationLabels, Histogram>,
    request_units: Family<ContainerLabels, Counter<f64, AtomicU64>>,
    throttled: Family<ContainerLabels, Counter>,
    /// The containers and their usage as the scrape read them (through the engine's scan door,
    /// before rendering), for the collector's per-container series.
    usages: ContainerUsages,
    /// Held through a whole render, so that two scrapes at once never encode each other's
    /// usage figures.
    rendering: Mutex<()>,
}

/// Every container with its usage, `None` where it could not be read.
type ContainerUsages = Arc<Mutex<Vec<(Arc<Container>, Option<Usage>)>>>;

/// One finished Cosmos request, as the metrics see it.
pub struct Observed<'a> {
    /// What the request was; `None` when it named no operation (unknown resource type, wrong
    /// verb), counted under the label `Other`.
    pub operation: Option<Operation>,
    /// The path with resource ids resolved, for the per-container series.
    pub path: &'a ResourcePath,
    pub status: StatusCode,
    pub seconds: f64,
    pub request_units: f64,
}

impl Metrics {
    pub fn new(engine: Engine) -> Metrics {
        let mut registry = Registry::with_prefix("lethedb");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "requests",
            "Requests by operation and status code",
            requests.clone(),
        );
        let latency = Family::<OperationLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.000_05, 2.0, 16))
        });
        registry.register(
            "request_duration_seconds",
            "Request latency by operation",
            latency.clone(),
        );
        let request_units = Family::<ContainerLabels, Counter<f64, AtomicU64>>::default();
        registry.register(
            "request_units",
            "Request units charged to user requests per container",
            request_units.clone(),
        );
        let throttled = Family::<ContainerLabels, Counter>::default();
        registry.register(
            "throttled_requests",
            "Requests refused with 429 per container",
            throttled.clone(),
        );
        let usages = ContainerUsages::default();
        registry.register_collector(Box::new(EngineCollector {
            engine,
            usages: Arc::clone(&usages),
        }));
        Metrics {
            usages,
            rendering: Mutex::new(()),
            registry,
            requests,
            latency,
            request_units,
            throttled,
        }
    }

    /// Records one finished request.
    pub fn observe(&self, observed: Observed<'_>) {
        let Observed {
            operation,
            path,
            status,
            seconds,
            request_units,
        } = observed;
        let operation = operation.map_or("Other", Operation::name);
        self.requests
            .get_or_create(&RequestLabels {
                operation,
                status: status.as_u16(),
            })
            .inc();
        self.latency
            .get_or_create(&OperationLabels { operation })
            .observe(seconds);
        if path.segments.len() >= 4 && path.segments[0] == "dbs" {
            let labels = ContainerLabels {
                database: path.id(0).to_string(),
                container: path.id(1).to_string(),
            };
            if request_units > 0.0 {
                self.request_units
                    .get_or_create(&labels)
                    .inc_by(request_units);
            }
            if status == StatusCode::TOO_MANY_REQUESTS {
                self.throttled.get_or_create(&labels).inc();
            }
        }
    }

    /// The text exposition, with the containers' usage as `usages` gives it (read through
    /// `Engine::container_usages`, off the request workers).
    pub fn render(
        &self,
        usages: Vec<(Arc<Container>, Option<Usage>)>,
    ) -> Result<String, std::fmt::Error> {
        let _rendering = self.rendering.lock();
        if let Ok(mut held) = self.usages.lock() {
            *held = usages;
        }
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

/// Reads the engine's state at scrape time.
struct EngineCollector {
    engine: Engine,
    usages: ContainerUsages,
}

impl std::fmt::Debug for EngineCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EngineCollector")
    }
}

fn gauge_family(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: &[(ContainerLabels, f64)],
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in rows {
        ConstGauge::new(*value).encode(metric.encode_family(labels)?)?;
    }
    Ok(())
}

/// The per-container series read at scrape time, one row per container each.
#[derive(Default)]
struct ContainerRows {
    items: Vec<(ContainerLabels, f64)>,
    bytes: Vec<(ContainerLabels, f64)>,
    backlog: Vec<(ContainerLabels, f64)>,
    oldest: Vec<(ContainerLabels, f64)>,
    deleted: Vec<(ContainerLabels, u64)>,
}

impl EngineCollector {
    /// Reads each container's usage and sweep figures.
    fn container_rows(&self) -> ContainerRows {
        let containers = self
            .usages
            .lock()
            .map(|held| held.clone())
            .unwrap_or_default();
        let sweep: HashMap<(String, String), lethedb_engine::SweepStats> = self
            .engine
            .sweep_stats()
            .into_iter()
            .map(|s| ((s.database_id.clone(), s.container_id.clone()), s))
            .collect();
        let mut rows = ContainerRows::default();
        for (container, usage) in &containers {
            let labels = ContainerLabels {
                database: container.database_id.clone(),
                container: container.id.clone(),
            };
            if let Some(usage) = usage {
                rows.items.push((labels.clone(), usage.items as f64));
                rows.bytes.push((labels.clone(), usage.bytes as f64));
            }
            let stats = sweep
                .get(&(container.database_id.clone(), container.id.clone()))
                .cloned()
                .unwrap_or_default();
            rows.backlog
                .push((labels.clone(), stats.backlog_items as f64));
            rows.oldest
                .push((labels.clone(), stats.oldest_expired_age_ms as f64 / 1000.0));
            rows.deleted.push((labels, stats.deleted_total));
        }
        rows
    }

    /// The engine-wide series: poisoning, the writer's queue, work and commit latency.
    fn encode_writer(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        // 1 once the engine stopped accepting writes after an internal error (the log and
        // `/_lethedb/stats` say why); a restart clears it.
        let poisoned = i64::from(self.engine.poisoned().is_some());
        ConstGauge::new(poisoned).encode(encoder.encode_descriptor(
            "engine_poisoned",
            "Whether the engine stopped accepting writes after an internal error",
            None,
            MetricType::Gauge,
        )?)?;
        let (operations, commits, queued) = self.engine.writer_stats();
        ConstGauge::new(queued as i64).encode(encoder.encode_descriptor(
            "writer_queue_depth",
            "Writes waiting for the writer",
            None,
            MetricType::Gauge,
        )?)?;
        ConstCounter::new(operations).encode(encoder.encode_descriptor(
            "writer_operations",
            "Writes applied by the writer",
            None,
            MetricType::Counter,
        )?)?;
        ConstCounter::new(commits).encode(encoder.encode_descriptor(
            "writer_commits",
            "Durable commits (each carries one or more writes)",
            None,
            MetricType::Counter,
        )?)?;
        if let Some(flush) = self.engine.store_flush_stats() {
            encode_flush(encoder, flush)?;
        }
        let (counts, sum_secs) = self.engine.commit_latency();
        let total: u64 = counts.iter().sum();
        let buckets: Vec<(f64, u64)> = COMMIT_LATENCY_BOUNDS_SECS
            .iter()
            .copied()
            .chain(std::iter::once(f64::MAX))
            .zip(counts.iter().copied())
            .collect();
        let mut metric = encoder.encode_descriptor(
            "commit_duration_seconds",
            "Durable commit latency",
            None,
            MetricType::Histogram,
        )?;
        metric.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            sum_secs, total, &buckets, None,
        )
    }
}

/// The redb store's flusher: transactions written into the store file, time spent writing
/// them, and commits that waited for it.
fn encode_flush(
    encoder: &mut DescriptorEncoder,
    flush: lethedb_storage::FlushStats,
) -> Result<(), std::fmt::Error> {
    let counters = [
        (
            "store_flushes",
            "Staged changes written into the store file",
            flush.flushes as f64,
        ),
        (
            "store_checkpoints",
            "Flushes that were synced checkpoints",
            flush.checkpoints as f64,
        ),
        (
            "store_flush_seconds",
            "Time spent writing staged changes into the store file",
            flush.busy_micros as f64 / 1e6,
        ),
        (
            "store_flush_waits",
            "Commits that waited for the flusher",
            flush.waits as f64,
        ),
        (
            "store_flush_wait_seconds",
            "Time commits waited for the flusher",
            flush.wait_micros as f64 / 1e6,
        ),
        (
            "store_redo_log_written_bytes",
            "Bytes appended to the redo log",
            flush.log_bytes as f64,
        ),
    ];
    for (name, help, value) in counters {
        ConstCounter::new(value).encode(encoder.encode_descriptor(
            name,
            help,
            None,
            MetricType::Counter,
        )?)?;
    }
    Ok(())
}

impl Collector for EngineCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let rows = self.container_rows();
        gauge_family(
            &mut encoder,
            "items",
            "Items per container, expired ones excluded",
            &rows.items,
        )?;
        gauge_family(
            &mut encoder,
            "item_bytes",
            "Document bytes per container, expired ones excluded",
            &rows.bytes,
        )?;
        gauge_family(
            &mut encoder,
            "ttl_backlog_items",
            "Expired items not yet deleted by the sweeper",
            &rows.backlog,
        )?;
        gauge_family(
            &mut encoder,
            "ttl_oldest_expired_age_seconds",
            "How long ago the oldest not-yet-deleted item expired",
            &rows.oldest,
        )?;
        let mut metric = encoder.encode_descriptor(
            "ttl_deletions",
            "Items deleted by the TTL sweeper",
            None,
            MetricType::Counter,
        )?;
        for (labels, value) in &rows.deleted {
            ConstCounter::new(*value).encode(metric.encode_family(labels)?)?;
        }
        self.encode_writer(&mut encoder)
    }
}
