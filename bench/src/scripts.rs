//! Server-side JavaScript figures, against a running LetheDB (the peer runs no stored
//! procedures, so there is nothing to compare side by side): trivial stored-procedure
//! executions per second from several clients, items per second a bulk-import procedure
//! creates inside its executions, and what calling a trivial UDF on every item costs a query
//! over 20k items, as a ratio to the same query without it.

use crate::cosmos::{detail, Client, ContainerPaths, Endpoint, Request};
use crate::resources::{create_container, ensure_database};
use anyhow::bail;
use bytes::Bytes;
use hyper::Method;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    crate::stats::percentile_f64(values, 0.5)
}

/// Creates items `i{start}`.. in partition `pk` until `count` are done or an operation is
/// refused; returns how many it created (the client calls again for the rest).
const BULK_IMPORT: &str = r#"function bulkImport(pk, start, count) {
    const c = getContext().getCollection();
    let done = 0;
    next();
    function next() {
        if (done >= count) { getContext().getResponse().setBody(done); return; }
        const accepted = c.createDocument(c.getSelfLink(),
            {id: 'i' + (start + done), pk: pk, n: start + done, payload: 'x'.repeat(200)},
            function (err) { if (err) throw err; done++; next(); });
        if (!accepted) getContext().getResponse().setBody(done);
    }
}"#;

pub struct ScriptsConfig {
    pub clients: usize,
    pub duration: Duration,
    pub import_items: usize,
    pub rounds: usize,
}

async fn create_script(
    client: &mut Client,
    paths: &ContainerPaths,
    kind: &str,
    id: &str,
    body: &str,
) -> anyhow::Result<()> {
    let path = format!("/{}/{kind}", paths.link);
    let reply = client
        .send(&Request {
            method: Method::POST,
            path: &path,
            resource_type: kind,
            resource_link: &paths.link,
            headers: &[("content-type", "application/json")],
            body: Bytes::from(json!({"id": id, "body": body}).to_string()),
        })
        .await?;
    if reply.status != 201 {
        bail!("creating {kind}/{id}: {} {}", reply.status, reply.detail());
    }
    Ok(())
}

async fn execute(
    client: &mut Client,
    paths: &ContainerPaths,
    id: &str,
    partition: &str,
    arguments: &Value,
) -> anyhow::Result<Value> {
    let link = format!("{}/sprocs/{id}", paths.link);
    let path = format!("/{link}");
    let partition_header = json!([partition]).to_string();
    let reply = client
        .send(&Request {
            method: Method::POST,
            path: &path,
            resource_type: "sprocs",
            resource_link: &link,
            headers: &[
                ("content-type", "application/json"),
                ("x-ms-documentdb-partitionkey", &partition_header),
            ],
            body: Bytes::from(arguments.to_string()),
        })
        .await?;
    if reply.status != 200 {
        bail!("executing {id}: {} {}", reply.status, reply.detail());
    }
    Ok(serde_json::from_slice(&reply.body)?)
}

/// Every page of a query in partition `p`; returns the results counted.
async fn query_all(
    client: &mut Client,
    paths: &ContainerPaths,
    text: &str,
) -> anyhow::Result<usize> {
    let body = Bytes::from(json!({"query": text, "parameters": []}).to_string());
    let mut continuation: Option<String> = None;
    let mut count = 0;
    loop {
        let mut headers = vec![
            ("content-type", "application/query+json"),
            ("x-ms-documentdb-isquery", "true"),
            ("x-ms-documentdb-partitionkey", "[\"p\"]"),
            ("x-ms-max-item-count", "1000"),
        ];
        if let Some(token) = &continuation {
            headers.push(("x-ms-continuation", token.as_str()));
        }
        let reply = client
            .send(&Request {
                method: Method::POST,
                path: &paths.docs_path,
                resource_type: "docs",
                resource_link: &paths.link,
                headers: &headers,
                body: body.clone(),
            })
            .await?;
        if reply.status != 200 {
            bail!("query {text}: {} {}", reply.status, detail(&reply.body));
        }
        let page: Value = serde_json::from_slice(&reply.body)?;
        count += page["Documents"].as_array().map_or(0, Vec::len);
        continuation = reply.continuation;
        if continuation.is_none() {
            return Ok(count);
        }
    }
}

/// Runs the three measurements; prints and returns them as JSON.
pub async fn run(endpoint: Arc<Endpoint>, config: &ScriptsConfig) -> anyhow::Result<Value> {
    let mut client = Client::new(Arc::clone(&endpoint));
    ensure_database(&mut client).await?;
    let suffix = std::process::id();
    let paths = create_container(&mut client, &format!("scripts-{suffix}"), None).await?;
    create_script(
        &mut client,
        &paths,
        "sprocs",
        "noop",
        "function () { getContext().getResponse().setBody(1); }",
    )
    .await?;
    create_script(&mut client, &paths, "sprocs", "bulkImport", BULK_IMPORT).await?;
    create_script(
        &mut client,
        &paths,
        "udfs",
        "same",
        "function (n) { return n; }",
    )
    .await?;
    let mut rates = trivial_executions(&endpoint, &paths, config).await?;
    let mut import_rates = bulk_imports(&mut client, &paths, config).await?;
    let udf_costs = udf_query_costs(&mut client, &paths, config).await?;
    Ok(json!({
        "trivial_executions_per_sec": median(&mut rates),
        "bulk_import_items_per_sec": median(&mut import_rates),
        "query_items": config.import_items,
        "query_plain_ms": udf_costs.plain_ms,
        "query_udf_ms": udf_costs.udf_ms,
        "udf_query_cost_ratio": udf_costs.ratio,
        "clients": config.clients,
        "rounds": config.rounds,
    }))
}

/// Trivial executions per second, `clients` at a time, one rate per round.
async fn trivial_executions(
    endpoint: &Arc<Endpoint>,
    paths: &ContainerPaths,
    config: &ScriptsConfig,
) -> anyhow::Result<Vec<f64>> {
    let mut rates = Vec::new();
    for _ in 0..config.rounds {
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..config.clients {
            let (endpoint, paths, duration) =
                (Arc::clone(endpoint), paths.clone(), config.duration);
            tasks.push(tokio::spawn(async move {
                let mut client = Client::new(endpoint);
                let mut done = 0u64;
                while started.elapsed() < duration {
                    execute(&mut client, &paths, "noop", "p", &json!([])).await?;
                    done += 1;
                }
                anyhow::Ok(done)
            }));
        }
        let mut total = 0;
        for task in tasks {
            total += task.await??;
        }
        rates.push(total as f64 / started.elapsed().as_secs_f64());
    }
    Ok(rates)
}

/// Bulk import, one partition per round (`p`, then `p1`, `p2`...): items created per second of
/// execution, continuation pattern included.
async fn bulk_imports(
    client: &mut Client,
    paths: &ContainerPaths,
    config: &ScriptsConfig,
) -> anyhow::Result<Vec<f64>> {
    let mut import_rates = Vec::new();
    for round in 0..config.rounds {
        let partition = if round == 0 {
            "p".to_string()
        } else {
            format!("p{round}")
        };
        let started = Instant::now();
        let mut next = 0usize;
        while next < config.import_items {
            let arguments = json!([partition, next, config.import_items - next]);
            let done = execute(client, paths, "bulkImport", &partition, &arguments).await?;
            let done = done.as_u64().unwrap_or(0) as usize;
            if done == 0 {
                bail!("the bulk import made no progress");
            }
            next += done;
        }
        import_rates.push(config.import_items as f64 / started.elapsed().as_secs_f64());
    }
    Ok(import_rates)
}

/// The medians of a query over partition `p`'s imported items without and with a trivial UDF
/// per item, and of the ratio of the two.
struct UdfCosts {
    plain_ms: f64,
    udf_ms: f64,
    ratio: f64,
}

/// Times both queries `rounds` times; fails when either misses an imported item.
async fn udf_query_costs(
    client: &mut Client,
    paths: &ContainerPaths,
    config: &ScriptsConfig,
) -> anyhow::Result<UdfCosts> {
    let plain = "SELECT VALUE c.n FROM c";
    let with_udf = "SELECT VALUE udf.same(c.n) FROM c";
    let expected = config.import_items;
    let mut ratios = Vec::new();
    let (mut plain_ms, mut udf_ms) = (Vec::new(), Vec::new());
    for _ in 0..config.rounds {
        let started = Instant::now();
        let counted = query_all(client, paths, plain).await?;
        let plain_time = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let counted_udf = query_all(client, paths, with_udf).await?;
        let udf_time = started.elapsed().as_secs_f64();
        if counted != expected || counted_udf != expected {
            bail!("the queries counted {counted} and {counted_udf} of {expected} items");
        }
        plain_ms.push(plain_time * 1000.0);
        udf_ms.push(udf_time * 1000.0);
        ratios.push(udf_time / plain_time);
    }
    Ok(UdfCosts {
        plain_ms: median(&mut plain_ms),
        udf_ms: median(&mut udf_ms),
        ratio: median(&mut ratios),
    })
}
