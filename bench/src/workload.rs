//! The throughput workloads: setup (database, container, preloaded items) and closed-loop runs
//! of point reads, creates, upserts, replaces, a read/write mix and queries.
//!
//! Every client owns one connection and sends its next request as soon as the last one
//! answered (a closed loop), so throughput is what the server sustains at that concurrency.
//! Each run starts with a short warm-up whose samples are dropped. A response with an
//! unexpected status, a transport failure or a query with the wrong number of rows is counted
//! as an error, never retried. This module knows the Cosmos request shapes; it does not start
//! servers or print tables.

use crate::cosmos::{partition_key_header, Client, ContainerPaths, Endpoint, Request};
use crate::stats::{Recorder, Summary};
use anyhow::{anyhow, bail};
use bytes::Bytes;
use hyper::Method;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The database every workload uses.
pub const DATABASE_ID: &str = "bench";
/// The filter of the cross-partition query: issue 6's `SELECT c.id, c.value FROM c WHERE
/// c.value > 500` with `value` in brackets, because VALUE is a reserved word of the query
/// language. The hosted service and the peer's parser reject the dotted form; LetheDB takes
/// both. Both servers get the same text.
pub const QUERY_FILTER: &str = r#"SELECT c.id, c[\"value\"] FROM c WHERE c[\"value\"] > 500"#;
/// The same filter within one partition.
pub const QUERY_PARTITION: &str =
    r#"SELECT c.id, c[\"value\"] FROM c WHERE c.pk = @pk AND c[\"value\"] > 500"#;
/// Item `value`s are uniform in `0..VALUE_RANGE`, so the filter keeps about half.
pub const VALUE_RANGE: u64 = 1000;
/// The longest error detail kept per sample.
const ERROR_DETAIL_CHARS_MAX: usize = 300;

/// A deterministic random stream (splitmix64): every run with the same seed sends the same
/// sequence, and it costs nothing next to a request.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound.max(1)
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Wall-clock milliseconds since the Unix epoch, with a fraction: the clock the server's
/// `_ts` and its logs use, so client and server instants compare directly on one machine.
pub fn unix_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// The shape of the preloaded data set.
#[derive(Clone, Debug)]
pub struct DataSet {
    pub items: usize,
    pub partitions: usize,
    pub item_bytes: usize,
    pub seed: u64,
}

impl DataSet {
    pub fn id(&self, index: usize) -> String {
        format!("i{index}")
    }
    pub fn pk(&self, index: usize) -> String {
        format!("p{}", index % self.partitions.max(1))
    }
    pub fn value(&self, index: usize) -> u64 {
        mix(self.seed ^ (index as u64).wrapping_mul(0x2545_F491_4F6C_DD1D)) % VALUE_RANGE
    }
    /// How many preloaded items the query filter keeps, in all and in partition `partition`.
    pub fn expected_rows(&self, partition: Option<usize>) -> u64 {
        (0..self.items)
            .filter(|&i| partition.is_none_or(|p| i % self.partitions.max(1) == p))
            .filter(|&i| self.value(i) > 500)
            .count() as u64
    }
}

/// One item's JSON, padded with a `payload` string so the whole body is `item_bytes` long
/// (or a little longer when the fixed fields alone exceed it).
pub fn item_body(id: &str, pk: &str, value: u64, extra: &str, item_bytes: usize) -> Bytes {
    let head = format!("{{\"id\":\"{id}\",\"pk\":\"{pk}\",\"value\":{value},{extra}\"payload\":\"");
    let tail = "\"}";
    let pad = item_bytes.saturating_sub(head.len() + tail.len());
    let mut body = String::with_capacity(head.len() + pad + tail.len());
    body.push_str(&head);
    body.extend(std::iter::repeat_n('x', pad));
    body.push_str(tail);
    Bytes::from(body)
}

fn detail(reply_body: &[u8]) -> String {
    String::from_utf8_lossy(reply_body)
        .chars()
        .take(ERROR_DETAIL_CHARS_MAX)
        .collect()
}

/// Creates the database if it does not exist yet.
pub async fn ensure_database(client: &mut Client) -> anyhow::Result<()> {
    let body = Bytes::from(format!("{{\"id\":\"{DATABASE_ID}\"}}"));
    let reply = client
        .send(&Request {
            method: Method::POST,
            path: "/dbs",
            resource_type: "dbs",
            resource_link: "",
            headers: &[("content-type", "application/json")],
            body,
        })
        .await?;
    match reply.status {
        200 | 201 | 409 => Ok(()),
        status => bail!("creating the database: {status} {}", detail(&reply.body)),
    }
}

fn container_body(container_id: &str, default_ttl_secs: Option<i64>) -> Bytes {
    let ttl = default_ttl_secs.map_or(String::new(), |t| format!(",\"defaultTtl\":{t}"));
    Bytes::from(format!(
        "{{\"id\":\"{container_id}\",\"partitionKey\":{{\"paths\":[\"/pk\"],\"kind\":\"Hash\",\"version\":2}}{ttl}}}"
    ))
}

/// Creates a container partitioned by `/pk`, with an optional `defaultTtl`.
pub async fn create_container(
    client: &mut Client,
    container_id: &str,
    default_ttl_secs: Option<i64>,
) -> anyhow::Result<ContainerPaths> {
    create_container_with_throughput(client, container_id, default_ttl_secs, None).await
}

/// Creates a container partitioned by `/pk`, with an optional `defaultTtl` and optional manual
/// throughput (`x-ms-offer-throughput`, RU/s).
pub async fn create_container_with_throughput(
    client: &mut Client,
    container_id: &str,
    default_ttl_secs: Option<i64>,
    throughput_ru: Option<u32>,
) -> anyhow::Result<ContainerPaths> {
    let link = format!("dbs/{DATABASE_ID}");
    let path = format!("/{link}/colls");
    let throughput = throughput_ru.map(|ru| ru.to_string());
    let mut headers = vec![("content-type", "application/json")];
    if let Some(ru) = &throughput {
        headers.push(("x-ms-offer-throughput", ru));
    }
    let reply = client
        .send(&Request {
            method: Method::POST,
            path: &path,
            resource_type: "colls",
            resource_link: &link,
            headers: &headers,
            body: container_body(container_id, default_ttl_secs),
        })
        .await?;
    match reply.status {
        200 | 201 | 409 => Ok(ContainerPaths::new(DATABASE_ID, container_id)),
        status => bail!(
            "creating container {container_id}: {status} {}",
            detail(&reply.body)
        ),
    }
}

/// Replaces a container's `defaultTtl` (the partition key stays as created).
pub async fn replace_default_ttl(
    client: &mut Client,
    paths: &ContainerPaths,
    default_ttl_secs: i64,
) -> anyhow::Result<()> {
    let path = format!("/{}", paths.link);
    let reply = client
        .send(&Request {
            method: Method::PUT,
            path: &path,
            resource_type: "colls",
            resource_link: &paths.link,
            headers: &[("content-type", "application/json")],
            body: container_body(&paths.container_id, Some(default_ttl_secs)),
        })
        .await?;
    if reply.status != 200 {
        bail!(
            "replacing defaultTtl: {} {}",
            reply.status,
            detail(&reply.body)
        );
    }
    Ok(())
}

/// Replaces a container's manual throughput through its offer, as the SDKs'
/// `replace_throughput` does: read the container's `_rid`, find the offer whose
/// `offerResourceId` it is, and put the offer back with new `content`.
pub async fn replace_throughput(
    client: &mut Client,
    paths: &ContainerPaths,
    throughput_ru: u32,
) -> anyhow::Result<()> {
    let container_path = format!("/{}", paths.link);
    let reply = client
        .send(&Request {
            method: Method::GET,
            path: &container_path,
            resource_type: "colls",
            resource_link: &paths.link,
            headers: &[],
            body: Bytes::new(),
        })
        .await?;
    if reply.status != 200 {
        bail!(
            "reading container {}: {} {}",
            paths.container_id,
            reply.status,
            detail(&reply.body)
        );
    }
    let container: serde_json::Value = serde_json::from_slice(&reply.body)?;
    let rid = container["_rid"]
        .as_str()
        .ok_or_else(|| anyhow!("container {} has no _rid", paths.container_id))?
        .to_string();
    let reply = client
        .send(&Request {
            method: Method::GET,
            path: "/offers",
            resource_type: "offers",
            resource_link: "",
            headers: &[],
            body: Bytes::new(),
        })
        .await?;
    if reply.status != 200 {
        bail!("reading offers: {} {}", reply.status, detail(&reply.body));
    }
    let offers: serde_json::Value = serde_json::from_slice(&reply.body)?;
    let mut offer = offers["Offers"]
        .as_array()
        .and_then(|all| {
            all.iter()
                .find(|o| o["offerResourceId"].as_str() == Some(rid.as_str()))
        })
        .cloned()
        .ok_or_else(|| anyhow!("no offer for container {}", paths.container_id))?;
    let offer_id = offer["id"]
        .as_str()
        .ok_or_else(|| anyhow!("an offer without id"))?
        .to_string();
    offer["content"] = serde_json::json!({"offerThroughput": throughput_ru});
    let path = format!("/offers/{offer_id}");
    // Offers are addressed by resource id, which clients sign lower-cased.
    let link = offer_id.to_ascii_lowercase();
    let reply = client
        .send(&Request {
            method: Method::PUT,
            path: &path,
            resource_type: "offers",
            resource_link: &link,
            headers: &[("content-type", "application/json")],
            body: Bytes::from(serde_json::to_vec(&offer)?),
        })
        .await?;
    if reply.status != 200 {
        bail!(
            "replacing the offer of {}: {} {}",
            paths.container_id,
            reply.status,
            detail(&reply.body)
        );
    }
    Ok(())
}

/// When each loaded item was sent and acknowledged (Unix ms), by index.
pub struct LoadTimes {
    pub sent_ms: Vec<f64>,
    pub acked_ms: Vec<f64>,
    /// The `_ts` the server reported for each item.
    pub ts_secs: Vec<i64>,
    pub elapsed: Duration,
}

/// Creates items `0..data.items` with `clients` concurrent connections. `extra(index)` adds
/// fields (such as `"ttl":2,`) to an item. Any status but 201 fails the load.
pub async fn load_items(
    endpoint: &Arc<Endpoint>,
    paths: &ContainerPaths,
    data: &DataSet,
    clients: usize,
    extra: Arc<dyn Fn(usize) -> String + Send + Sync>,
) -> anyhow::Result<LoadTimes> {
    load_item_range(endpoint, paths, data, 0..data.items, clients, extra).await
}

/// Creates the items of `indices` as [`load_items`] does; the times are indexed from
/// `indices.start`.
pub async fn load_item_range(
    endpoint: &Arc<Endpoint>,
    paths: &ContainerPaths,
    data: &DataSet,
    indices: std::ops::Range<usize>,
    clients: usize,
    extra: Arc<dyn Fn(usize) -> String + Send + Sync>,
) -> anyhow::Result<LoadTimes> {
    let first = indices.start;
    let count = indices.len();
    let next = Arc::new(AtomicUsize::new(first));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients.max(1) {
        let (endpoint, paths, data, next, extra, indices) = (
            Arc::clone(endpoint),
            paths.clone(),
            data.clone(),
            Arc::clone(&next),
            Arc::clone(&extra),
            indices.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut client = Client::new(endpoint);
            let mut times = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= indices.end {
                    return Ok::<_, anyhow::Error>(times);
                }
                let (id, pk) = (data.id(index), data.pk(index));
                let pk_header = partition_key_header(&pk);
                let body = item_body(&id, &pk, data.value(index), &extra(index), data.item_bytes);
                let sent_ms = unix_ms();
                let reply = client
                    .send(&Request {
                        method: Method::POST,
                        path: &paths.docs_path,
                        resource_type: "docs",
                        resource_link: &paths.link,
                        headers: &[
                            ("content-type", "application/json"),
                            ("x-ms-documentdb-partitionkey", &pk_header),
                        ],
                        body,
                    })
                    .await?;
                let acked_ms = unix_ms();
                if reply.status != 201 {
                    bail!(
                        "loading item {id}: {} {}",
                        reply.status,
                        detail(&reply.body)
                    );
                }
                times.push((index, sent_ms, acked_ms, json_ts(&reply.body)));
            }
        }));
    }
    let mut result = LoadTimes {
        sent_ms: vec![0.0; count],
        acked_ms: vec![0.0; count],
        ts_secs: vec![0; count],
        elapsed: Duration::ZERO,
    };
    for task in tasks {
        for (index, sent, acked, ts) in task.await?? {
            result.sent_ms[index - first] = sent;
            result.acked_ms[index - first] = acked;
            result.ts_secs[index - first] = ts;
        }
    }
    result.elapsed = started.elapsed();
    Ok(result)
}

/// The `_ts` of a returned resource, or 0 if absent. Scans for the field rather than parsing
/// the whole body.
pub fn json_ts(body: &[u8]) -> i64 {
    json_number_field(body, b"\"_ts\":").unwrap_or(0)
}

fn json_number_field(body: &[u8], key: &[u8]) -> Option<i64> {
    let at = body.windows(key.len()).rposition(|w| w == key)? + key.len();
    let digits: String = body[at..]
        .iter()
        .skip_while(|b| b.is_ascii_whitespace())
        .take_while(|b| b.is_ascii_digit() || **b == b'-')
        .map(|&b| b as char)
        .collect();
    digits.parse().ok()
}

/// The rows of one query page: `_count` if the server sent it, else the length of `Documents`.
fn page_rows(body: &[u8]) -> Option<u64> {
    if let Some(count) = json_number_field(body, b"\"_count\":") {
        return u64::try_from(count).ok();
    }
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    Some(value.get("Documents")?.as_array()?.len() as u64)
}

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
            Workload::Mixed => "mixed",
            Workload::QueryPartition => "query-partition",
            Workload::QueryCross => "query-cross",
        }
    }
}

/// How a closed-loop run is shaped.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub clients: usize,
    pub warmup: Duration,
    pub duration: Duration,
    pub page_items: usize,
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
    let paths = create_container(&mut client, container_id, None).await?;
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
    for worker in 0..config.clients.max(1) {
        let (endpoint, paths, config, expected) = (
            Arc::clone(endpoint),
            paths.clone(),
            config.clone(),
            Arc::clone(&expected_all),
        );
        tasks.push(tokio::spawn(async move {
            let mut client = Client::new(endpoint);
            let mut rng = Rng::new(config.data.seed ^ mix(worker as u64 + 1));
            let mut recorder = Recorder::default();
            let mut counter = 0u64;
            loop {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                // An operation still running at the deadline is abandoned and not counted, so
                // a server too slow to finish one operation in the window scores zero rather
                // than stretching the run.
                let operation = one_operation(
                    &mut client,
                    &paths,
                    workload,
                    &config,
                    &mut rng,
                    worker,
                    &mut counter,
                    &expected,
                );
                let Ok(outcome) =
                    tokio::time::timeout_at(tokio::time::Instant::from_std(deadline), operation)
                        .await
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
        }));
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

#[allow(clippy::too_many_arguments)]
async fn one_operation(
    client: &mut Client,
    paths: &ContainerPaths,
    workload: Workload,
    config: &RunConfig,
    rng: &mut Rng,
    worker: usize,
    counter: &mut u64,
    expected_rows: &[u64],
) -> Result<(), OpError> {
    let data = &config.data;
    let workload = match workload {
        Workload::Mixed if rng.below(100) < 80 => Workload::PointRead,
        Workload::Mixed => Workload::Upsert,
        other => other,
    };
    match workload {
        Workload::PointRead | Workload::Upsert | Workload::Replace => {
            let index = rng.below(data.items as u64) as usize;
            let (id, pk) = (data.id(index), data.pk(index));
            let pk_header = partition_key_header(&pk);
            let (item_path, item_link) = paths.item(&id);
            let (request, expected): (Request, &[u16]) = match workload {
                Workload::PointRead => (
                    Request {
                        method: Method::GET,
                        path: &item_path,
                        resource_type: "docs",
                        resource_link: &item_link,
                        headers: &[("x-ms-documentdb-partitionkey", &pk_header)],
                        body: Bytes::new(),
                    },
                    &[200],
                ),
                Workload::Upsert => (
                    Request {
                        method: Method::POST,
                        path: &paths.docs_path,
                        resource_type: "docs",
                        resource_link: &paths.link,
                        headers: &[
                            ("content-type", "application/json"),
                            ("x-ms-documentdb-partitionkey", &pk_header),
                            ("x-ms-documentdb-is-upsert", "true"),
                        ],
                        body: item_body(&id, &pk, rng.below(VALUE_RANGE), "", data.item_bytes),
                    },
                    &[200, 201],
                ),
                _ => (
                    Request {
                        method: Method::PUT,
                        path: &item_path,
                        resource_type: "docs",
                        resource_link: &item_link,
                        headers: &[
                            ("content-type", "application/json"),
                            ("x-ms-documentdb-partitionkey", &pk_header),
                        ],
                        body: item_body(&id, &pk, rng.below(VALUE_RANGE), "", data.item_bytes),
                    },
                    &[200],
                ),
            };
            send_expect(client, &request, expected).await
        }
        Workload::Create => {
            *counter += 1;
            let id = format!("n{}-{worker}-{counter}", data.seed);
            let pk = format!("p{}", rng.below(data.partitions as u64));
            let pk_header = partition_key_header(&pk);
            let request = Request {
                method: Method::POST,
                path: &paths.docs_path,
                resource_type: "docs",
                resource_link: &paths.link,
                headers: &[
                    ("content-type", "application/json"),
                    ("x-ms-documentdb-partitionkey", &pk_header),
                ],
                body: item_body(&id, &pk, rng.below(VALUE_RANGE), "", data.item_bytes),
            };
            send_expect(client, &request, &[201]).await
        }
        Workload::QueryPartition => {
            let partition = rng.below(data.partitions as u64) as usize;
            let pk = format!("p{partition}");
            let body = format!(
                "{{\"query\":\"{QUERY_PARTITION}\",\"parameters\":[{{\"name\":\"@pk\",\"value\":\"{pk}\"}}]}}"
            );
            let expected = expected_rows.get(partition).copied().unwrap_or(0);
            drain_query(client, paths, &body, Some(&pk), config.page_items, expected).await
        }
        Workload::QueryCross => {
            let body = format!("{{\"query\":\"{QUERY_FILTER}\",\"parameters\":[]}}");
            let expected = expected_rows.first().copied().unwrap_or(0);
            drain_query(client, paths, &body, None, config.page_items, expected).await
        }
        Workload::Mixed => Err(("internal".into(), "mixed was not resolved".into())),
    }
}

async fn send_expect(
    client: &mut Client,
    request: &Request<'_>,
    expected: &[u16],
) -> Result<(), OpError> {
    match client.send(request).await {
        Ok(reply) if expected.contains(&reply.status) => Ok(()),
        Ok(reply) => Err((
            format!("status {}", reply.status),
            format!(
                "{} {}: {}",
                request.method,
                request.path,
                detail(&reply.body)
            ),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_bodies_have_the_requested_size_and_parse() {
        let body = item_body("i1", "p1", 42, "\"ttl\":2,", 1024);
        assert_eq!(body.len(), 1024);
        let value: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(value["ttl"], 2);
        assert_eq!(value["value"], 42);
    }

    #[test]
    fn ts_and_count_are_found_without_a_full_parse() {
        assert_eq!(json_ts(br#"{"id":"a","_ts":1700000000}"#), 1_700_000_000);
        assert_eq!(page_rows(br#"{"Documents":[{},{}],"_count":2}"#), Some(2));
        assert_eq!(page_rows(br#"{"Documents":[{},{},{}]}"#), Some(3));
    }
}
