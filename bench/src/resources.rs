//! The Cosmos resources the benchmarks set up around their items: the database, containers
//! (with `defaultTtl` and manual throughput) and their offers.
//!
//! Every call here is a one-off before or between measured phases; nothing here is on a hot
//! path, and nothing here touches items.

use crate::cosmos::{detail, Client, ContainerPaths, Request};
use anyhow::{anyhow, bail};
use bytes::Bytes;
use hyper::Method;

/// The database every workload uses.
pub const DATABASE_ID: &str = "bench";

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
    container_body_with(container_id, default_ttl_secs, "")
}

/// The container's body with `extra` (`,"name":value` pairs) appended to its fields.
fn container_body_with(container_id: &str, default_ttl_secs: Option<i64>, extra: &str) -> Bytes {
    let ttl = default_ttl_secs.map_or(String::new(), |t| format!(",\"defaultTtl\":{t}"));
    Bytes::from(format!(
        "{{\"id\":\"{container_id}\",\"partitionKey\":{{\"paths\":[\"/pk\"],\"kind\":\"Hash\",\"version\":2}}{ttl}{extra}}}"
    ))
}

/// Creates a container partitioned by `/pk` that indexes nothing (`indexingMode: none`, which
/// the service accepts only with `automatic: false`).
pub async fn create_unindexed_container(
    client: &mut Client,
    container_id: &str,
) -> anyhow::Result<ContainerPaths> {
    let policy = ",\"indexingPolicy\":{\"indexingMode\":\"none\",\"automatic\":false}";
    let body = container_body_with(container_id, None, policy);
    post_container(client, container_id, &[], body).await
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
    let throughput = throughput_ru.map(|ru| ru.to_string());
    let headers: Vec<(&str, &str)> = throughput
        .iter()
        .map(|ru| ("x-ms-offer-throughput", ru.as_str()))
        .collect();
    let body = container_body(container_id, default_ttl_secs);
    post_container(client, container_id, &headers, body).await
}

/// Posts a container's `body` (with `extra_headers`) to the bench's database; one that already
/// exists is taken as made.
async fn post_container(
    client: &mut Client,
    container_id: &str,
    extra_headers: &[(&str, &str)],
    body: Bytes,
) -> anyhow::Result<ContainerPaths> {
    let link = format!("dbs/{DATABASE_ID}");
    let path = format!("/{link}/colls");
    let mut headers = vec![("content-type", "application/json")];
    headers.extend_from_slice(extra_headers);
    let reply = client
        .send(&Request {
            method: Method::POST,
            path: &path,
            resource_type: "colls",
            resource_link: &link,
            headers: &headers,
            body,
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
    let body = container_body(&paths.container_id, Some(default_ttl_secs));
    replace_container(client, paths, body, "defaultTtl").await
}

/// Replaces a container's definition with `body` (a 200 or an error naming `what` changed).
pub async fn replace_container(
    client: &mut Client,
    paths: &ContainerPaths,
    body: Bytes,
    what: &str,
) -> anyhow::Result<()> {
    let path = format!("/{}", paths.link);
    let reply = client
        .send(&Request {
            method: Method::PUT,
            path: &path,
            resource_type: "colls",
            resource_link: &paths.link,
            headers: &[("content-type", "application/json")],
            body,
        })
        .await?;
    if reply.status != 200 {
        bail!("replacing {what}: {} {}", reply.status, detail(&reply.body));
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
