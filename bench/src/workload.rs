//! The throughput workloads: closed-loop runs of point reads, creates, upserts, replaces, a
//! read/write mix and queries, over a container that [`prepare`] creates and preloads.
//!
//! Every client owns one connection and sends its next request as soon as the last one
//! answered (a closed loop), so throughput is what the server sustains at that concurrency.
//! Each run starts with a short warm-up whose samples are dropped. A response with an
//! unexpected status, a transport failure or a query with the wrong number of rows is counted
//! as an error, never retried. This module knows which operation each workload sends and what
//! a correct answer is; it does not start servers or print tables.

use crate::cosmos::{
    detail, partition_key_header, Client, ContainerPaths, Endpoint, Reply, Request,
};
use crate::data::{item_body, mix, page_rows, DataSet, Rng, VALUE_RANGE};
use crate::load::load_items;
use crate::resources::{create_container, create_unindexed_container, ensure_database};
use crate::stats::{Recorder, Summary};
use anyhow::anyhow;
use bytes::Bytes;
use hyper::Method;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The filter of the cross-partition query: issue 6's `SELECT c.id, c.value FROM c WHERE
/// c.value > 500` with `value` in brackets, because VALUE is a reserved word of the query
/// language. The hosted service and the peer's parser reject the dotted form; LetheDB takes
/// both. Both servers get the same text.
pub const QUERY_FILTER: &str = r#"SELECT c.id, c[\"value\"] FROM c WHERE c[\"value\"] > 500"#;
/// The same filter within one partition.
pub const QUERY_PARTITION: &str =
    r#"SELECT c.id, c[\"value\"] FROM c WHERE c.pk = @pk AND c[\"value\"] > 500"#;

/// The workloads a closed-loop run can drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// GET one preloaded item by id and partition key.
    PointRead,
    /// POST a new item (acknowledged once durable).
    Create,
    /// POST with `x-ms-documentdb-is-upsert` over the preloaded ids.
    Upsert,
    /// PUT over the preloaded ids.
    Replace,
    /// PATCH over the preloaded ids: one `set` of `/value` (LetheDB only: not in `compare`).
    Patch,
    /// 80% point reads, 20% upserts.
    Mixed,
    /// The filter query within one partition (`c.pk = @pk` plus the partition key header).
    QueryPartition,
    /// The filter query across all partitions, every page drained.
    QueryCross,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::PointRead => "point-read",
            Workload::Create => "create",
            Workload::Upsert => "upsert",
            Workload::Replace => "replace",
            Workload::Patch => "patch",
            Workload::Mixed => "mixed",
            Workload::QueryPartition => "query-partition",
            Workload::QueryCross => "query-cross",
        }
    }

    /// Whether the workload writes, and so waits on the disk's sync.
    pub fn writes(self) -> bool {
        matches!(
            self,
            Workload::Create
                | Workload::Upsert
                | Workload::Replace
                | Workload::Patch
                | Workload::Mixed
        )
    }
}

/// How a closed-loop run is shaped.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub clients: usize,
    pub warmup: Duration,
    pub duration: Duration,
    pub page_items: usize,
    /// The container indexes nothing (`indexingMode: none`).
    pub indexing_none: bool,
    pub data: DataSet,
}

/// Creates the container and preloads the items a workload needs. Point reads against the
/// hello-world server skip this (`skip_setup`).
pub async fn prepare(
    endpoint: &Arc<Endpoint>,
    container_id: &str,
    config: &RunConfig,
    load_clients: usize,
) -> anyhow::Result<ContainerPaths> {
    let mut client = Client::new(Arc::clone(endpoint));
    ensure_database(&mut client).await?;
    let paths = if config.indexing_none {
        create_unindexed_container(&mut client, container_id).await?
    } else {
        create_container(&mut client, container_id, None).await?
    };
    load_items(
        endpoint,
        &paths,
        &config.data,
        load_clients,
        Arc::new(|_| String::new()),
    )
    .await?;
    Ok(paths)
}

/// Runs one workload with `config.clients` closed-loop clients; throughput is the operations
/// that completed within the measured window, divided by the window.
pub async fn run(
    endpoint: &Arc<Endpoint>,
    paths: &ContainerPaths,
    workload: Workload,
    config: &RunConfig,
) -> anyhow::Result<Summary> {
    run_on(std::slice::from_ref(endpoint), paths, workload, config).await
}

/// [`run`] against several servers that serve one store (instances on one PostgreSQL
/// database): client `i` talks to `endpoints[i % endpoints.len()]` for the whole run, as
/// clients spread over instances by a load balancer would, with nothing in between.
pub async fn run_on(
    endpoints: &[Arc<Endpoint>],
    paths: &ContainerPaths,
    workload: Workload,
    config: &RunConfig,
) -> anyhow::Result<Summary> {
    anyhow::ensure!(!endpoints.is_empty(), "no server to run against");
    let started = Instant::now();
    let measure_from = started + config.warmup;
    let deadline = measure_from + config.duration;
    let expected_all = Arc::new(if matches!(workload, Workload::QueryCross) {
        vec![config.data.expected_rows(None)]
    } else if matches!(workload, Workload::QueryPartition) {
        (0..config.data.partitions)
            .map(|p| config.data.expected_rows(Some(p)))
            .collect()
    } else {
        Vec::new()
    });
    let mut tasks = Vec::new();
    for index in 0..config.clients.max(1) {
        let worker = Worker {
            client: Client::new(Arc::clone(&endpoints[index % endpoints.len()])),
            paths: paths.clone(),
            workload,
            config: config.clone(),
            rng: Rng::new(config.data.seed ^ mix(index as u64 + 1)),
            index,
            created: 0,
            expected_rows: Arc::clone(&expected_all),
        };
        tasks.push(tokio::spawn(worker.run(measure_from, deadline)));
    }
    let mut total = Recorder::default();
    for task in tasks {
        total.merge(
            task.await
                .map_err(|e| anyhow!("a client task failed: {e}"))?,
        );
    }
    Ok(total.summary(config.duration))
}

type OpError = (String, String);

/// One closed-loop client: its connection, its random stream, and what it needs to build and
/// check each request.
struct Worker {
    client: Client,
    paths: ContainerPaths,
    workload: Workload,
    config: RunConfig,
    rng: Rng,
    /// This client's number, part of the ids it creates.
    index: usize,
    /// Items this client created so far, the last part of the ids it creates.
    created: u64,
    /// The rows a query must return: one count per partition, or one across partitions.
    expected_rows: Arc<Vec<u64>>,
}

impl Worker {
    /// Sends operations one after another until `deadline`, recording those that complete
    /// after `measure_from`.
    async fn run(mut self, measure_from: Instant, deadline: Instant) -> Recorder {
        let mut recorder = Recorder::default();
        loop {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            // An operation still running at the deadline is abandoned and not counted, so
            // a server too slow to finish one operation in the window scores zero rather
            // than stretching the run.
            let operation = self.one_operation();
            let Ok(outcome) =
                tokio::time::timeout_at(tokio::time::Instant::from_std(deadline), operation).await
            else {
                break;
            };
            let latency = now.elapsed();
            // Count what completed inside the window, even if it started in the warm-up:
            // for operations that take seconds (full scans) that is the fair count.
            if Instant::now() < measure_from {
                continue;
            }
            match outcome {
                Ok(()) => recorder.record(latency),
                Err((kind, message)) => recorder.error(kind, message),
            }
        }
        recorder
    }

    /// Sends one request of the workload (a mixed run draws a read or an upsert) and checks
    /// its answer.
    async fn one_operation(&mut self) -> Result<(), OpError> {
        let (client, paths, rng) = (&mut self.client, &self.paths, &mut self.rng);
        let data = &self.config.data;
        let workload = match self.workload {
            Workload::Mixed if rng.below(100) < 80 => Workload::PointRead,
            Workload::Mixed => Workload::Upsert,
            other => other,
        };
        match workload {
            Workload::Patch => {
                let index = rng.below(data.items as u64) as usize;
                let (id, pk) = (data.id(index), data.pk(index));
                let value = rng.below(VALUE_RANGE);
                let body = format!(
                    "{{\"operations\":[{{\"op\":\"set\",\"path\":\"/value\",\"value\":{value}}}]}}"
                );
                let (item, body) = ((paths, id.as_str(), pk.as_str()), Bytes::from(body));
                let patch = "application/json_patch+json";
                let reply = client.send_to_item(Method::PATCH, item, patch, body).await;
                expect(reply, &[200], || format!("PATCH {}", paths.item(&id).0))
            }
            Workload::PointRead | Workload::Upsert | Workload::Replace => {
                let index = rng.below(data.items as u64) as usize;
                let (id, pk) = (data.id(index), data.pk(index));
                match workload {
                    Workload::PointRead => {
                        let reply = client.read_item(paths, &id, &pk).await;
                        expect(reply, &[200], || format!("GET {}", paths.item(&id).0))
                    }
                    Workload::Upsert => {
                        let body = item_body(&id, &pk, rng.below(VALUE_RANGE), "", data.item_bytes);
                        let reply = client.upsert_item(paths, &pk, body).await;
                        expect(reply, &[200, 201], || format!("POST {}", paths.docs_path))
                    }
                    _ => {
                        let body = item_body(&id, &pk, rng.below(VALUE_RANGE), "", data.item_bytes);
                        let item = (paths, id.as_str(), pk.as_str());
                        let json = "application/json";
                        let reply = client.send_to_item(Method::PUT, item, json, body).await;
                        expect(reply, &[200], || format!("PUT {}", paths.item(&id).0))
                    }
                }
            }
            Workload::Create => {
                self.created += 1;
                let id = format!("n{}-{}-{}", data.seed, self.index, self.created);
                let pk = format!("p{}", rng.below(data.partitions as u64));
                let body = item_body(&id, &pk, rng.below(VALUE_RANGE), "", data.item_bytes);
                let reply = client.create_item(paths, &pk, body).await;
                expect(reply, &[201], || format!("POST {}", paths.docs_path))
            }
            Workload::QueryPartition => {
                let partition = rng.below(data.partitions as u64) as usize;
                let pk = format!("p{partition}");
                let body = format!(
                    "{{\"query\":\"{QUERY_PARTITION}\",\"parameters\":[{{\"name\":\"@pk\",\"value\":\"{pk}\"}}]}}"
                );
                let expected = self.expected_rows.get(partition).copied().unwrap_or(0);
                let page_items = self.config.page_items;
                drain_query(client, paths, &body, Some(&pk), page_items, expected).await
            }
            Workload::QueryCross => {
                let body = format!("{{\"query\":\"{QUERY_FILTER}\",\"parameters\":[]}}");
                let expected = self.expected_rows.first().copied().unwrap_or(0);
                let page_items = self.config.page_items;
                drain_query(client, paths, &body, None, page_items, expected).await
            }
            Workload::Mixed => Err(("internal".into(), "mixed was not resolved".into())),
        }
    }
}

/// Checks a reply's status; `what` names the request (method and path) in the error.
fn expect(
    reply: anyhow::Result<Reply>,
    expected: &[u16],
    what: impl FnOnce() -> String,
) -> Result<(), OpError> {
    match reply {
        Ok(reply) if expected.contains(&reply.status) => Ok(()),
        Ok(reply) => Err((
            format!("status {}", reply.status),
            format!("{}: {}", what(), reply.detail()),
        )),
        Err(error) => Err(("transport".into(), format!("{error:#}"))),
    }
}

/// Runs one query to its last page and checks the row count.
async fn drain_query(
    client: &mut Client,
    paths: &ContainerPaths,
    body: &str,
    pk: Option<&str>,
    page_items: usize,
    expected_rows: u64,
) -> Result<(), OpError> {
    let page_items = page_items.to_string();
    let pk_header = pk.map(partition_key_header);
    let mut continuation: Option<String> = None;
    let mut rows = 0u64;
    loop {
        let mut headers: Vec<(&str, &str)> = vec![
            ("content-type", "application/query+json"),
            ("x-ms-documentdb-isquery", "true"),
            ("x-ms-documentdb-query-enablecrosspartition", "true"),
            ("x-ms-max-item-count", &page_items),
        ];
        if let Some(pk_header) = &pk_header {
            headers.push(("x-ms-documentdb-partitionkey", pk_header));
        }
        if let Some(token) = &continuation {
            headers.push(("x-ms-continuation", token));
        }
        let request = Request {
            method: Method::POST,
            path: &paths.docs_path,
            resource_type: "docs",
            resource_link: &paths.link,
            headers: &headers,
            body: Bytes::from(body.to_string()),
        };
        let reply = match client.send(&request).await {
            Ok(reply) => reply,
            Err(error) => return Err(("transport".into(), format!("{error:#}"))),
        };
        if reply.status != 200 {
            return Err((
                format!("status {}", reply.status),
                format!("query: {}", detail(&reply.body)),
            ));
        }
        rows +=
            page_rows(&reply.body).ok_or_else(|| ("bad page".to_string(), detail(&reply.body)))?;
        continuation = reply.continuation.filter(|t| !t.is_empty());
        if continuation.is_none() {
            break;
        }
    }
    if rows != expected_rows {
        return Err((
            "wrong row count".into(),
            format!("query returned {rows} rows, expected {expected_rows}"),
        ));
    }
    Ok(())
}
