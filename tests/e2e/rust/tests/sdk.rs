//! The official Rust SDK (`azure_data_cosmos`) against the real `lethedb` binary: items sent in
//! the Cosmos binary JSON encoding, queries (the SDK's own ORDER BY pipeline included), batches,
//! patches, hierarchical keys, throughput, TTL expiry, a container deleted and created again,
//! index metrics, and the retries fault rules (`--faults`) cause. Each test starts its own server.

use azure_core::http::StatusCode;
use azure_data_cosmos::clients::ContainerClient;
use azure_data_cosmos::feed::FeedScope;
use azure_data_cosmos::models::{
    ContainerProperties, PatchInstructions, PatchOperation, ThroughputProperties,
};
use azure_data_cosmos::options::{CreateContainerOptions, QueryOptions};
use azure_data_cosmos::{PartitionKey, Query, TransactionalBatch};
use futures::StreamExt;
use lethedb_rust_sdk_e2e::{client_for, BinaryWatch, Server};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Order {
    id: String,
    pk: String,
    total: f64,
    count: i64,
    big: u64,
    small: i8,
    tags: Vec<String>,
    note: Option<String>,
}

fn order(id: &str, pk: &str, total: f64) -> Order {
    Order {
        id: id.into(),
        pk: pk.into(),
        total,
        count: i64::MIN,
        big: u64::MAX,
        small: -7,
        tags: vec!["é😀".into(), "quote \" and \\ tab\t".into()],
        note: None,
    }
}

async fn container(server_port: u16, properties: ContainerProperties) -> ContainerClient {
    container_with(server_port, properties, None).await
}

async fn container_with(
    server_port: u16,
    properties: ContainerProperties,
    options: Option<CreateContainerOptions>,
) -> ContainerClient {
    let client = client_for(server_port).await;
    let database_id = format!("db-{}", uuid::Uuid::new_v4().simple());
    client
        .create_database(&database_id, None)
        .await
        .expect("database");
    let database = client.database_client(&database_id);
    let id = properties.id.to_string();
    database
        .create_container(properties, options)
        .await
        .expect("container");
    database
        .container_client(&id, None)
        .await
        .expect("container client")
}

async fn query_all<T: DeserializeOwned + Send + 'static>(
    container: &ContainerClient,
    query: impl Into<Query>,
    scope: FeedScope,
) -> Vec<T> {
    let mut pages = container
        .query_items::<T>(query, scope, None)
        .await
        .expect("query")
        .into_pages();
    let mut items = Vec::new();
    while let Some(page) = pages.next().await {
        items.extend(page.expect("page").into_items());
    }
    items
}

#[tokio::test]
async fn items_go_out_in_binary_and_come_back_whole() {
    let mut watch = BinaryWatch::bind().await;
    let server = Server::start_with(&["--advertise-url", &watch.advertise_url()]);
    watch.relay_to(server.port);
    let items = container(watch.port, ContainerProperties::new("orders", "/pk".into())).await;
    let first = order("o1", "p", 12.5);
    let created = items
        .create_item("p", "o1", &first, None)
        .await
        .expect("create");
    assert_eq!(created.status().status_code(), StatusCode::Created);
    assert!(
        watch.binary_bodies() >= 1,
        "the SDK sent its item body in binary"
    );
    let read: Order = items
        .read_item("p", "o1", None)
        .await
        .expect("read")
        .into_model()
        .expect("model");
    assert_eq!(read, first);
    let replaced = Order {
        total: 99.25,
        note: Some("changed".into()),
        ..first.clone()
    };
    items
        .replace_item("p", "o1", &replaced, None)
        .await
        .expect("replace");
    let upserted = order("o2", "p", 0.1);
    items
        .upsert_item("p", "o2", &upserted, None)
        .await
        .expect("upsert");
    let sent_binary = watch.binary_bodies();
    assert!(
        sent_binary >= 3,
        "create, replace and upsert went in binary ({sent_binary})"
    );
    let read: Order = items
        .read_item("p", "o1", None)
        .await
        .expect("read")
        .into_model()
        .expect("model");
    assert_eq!(read, replaced);
    let read: Order = items
        .read_item("p", "o2", None)
        .await
        .expect("read")
        .into_model()
        .expect("model");
    assert_eq!(read, upserted);
    items.delete_item("p", "o1", None).await.expect("delete");
    let missing = items.read_item("p", "o1", None).await.expect_err("deleted");
    assert_eq!(missing.status().status_code(), StatusCode::NotFound);
    let conflict = items
        .create_item("p", "o2", &upserted, None)
        .await
        .expect_err("conflict");
    assert_eq!(conflict.status().status_code(), StatusCode::Conflict);
}

#[tokio::test]
async fn queries_run_single_partition_and_through_the_sdk_pipeline() {
    let server = Server::start();
    let items = container(
        server.port,
        ContainerProperties::new("orders", "/pk".into()),
    )
    .await;
    for n in 0..12 {
        let pk = format!("p{}", n % 3);
        items
            .create_item(
                pk.clone(),
                &format!("o{n:02}"),
                &order(&format!("o{n:02}"), &pk, f64::from(n)),
                None,
            )
            .await
            .expect("create");
    }
    let query = Query::from("SELECT VALUE c.id FROM c WHERE c.total >= @low")
        .with_parameter("@low", 6)
        .expect("parameter");
    let mut ids: Vec<String> = query_all(&items, query, FeedScope::partition("p0")).await;
    ids.sort();
    assert_eq!(ids, ["o06", "o09"]);
    let ordered: Vec<String> = query_all(
        &items,
        "SELECT VALUE c.id FROM c ORDER BY c.total DESC",
        FeedScope::full_container(),
    )
    .await;
    let expected: Vec<String> = (0..12).rev().map(|n| format!("o{n:02}")).collect();
    assert_eq!(ordered, expected);
    let top: Vec<String> = query_all(
        &items,
        "SELECT TOP 3 VALUE c.id FROM c ORDER BY c.total",
        FeedScope::full_container(),
    )
    .await;
    assert_eq!(top, ["o00", "o01", "o02"]);
    let mut everything: Vec<Value> =
        query_all(&items, "SELECT * FROM c", FeedScope::full_container()).await;
    assert_eq!(everything.len(), 12);
    everything.sort_by_key(|item| item["id"].as_str().unwrap_or_default().to_string());
    assert_eq!(everything[0]["big"], json!(u64::MAX));
}

#[tokio::test]
async fn index_metrics_come_back_when_asked_for() {
    let server = Server::start();
    let items = container(
        server.port,
        ContainerProperties::new("orders", "/pk".into()),
    )
    .await;
    items
        .create_item("p", "o1", &order("o1", "p", 1.0), None)
        .await
        .expect("create");
    let options = QueryOptions::default().with_populate_index_metrics(true);
    let mut pages = items
        .query_items::<Value>(
            "SELECT * FROM c WHERE c.total > 0",
            FeedScope::partition("p"),
            Some(options),
        )
        .await
        .expect("query")
        .into_pages();
    let page = pages.next().await.expect("a page").expect("page");
    let metrics = page.index_metrics().expect("index metrics");
    assert!(metrics.contains("/total/?"), "{metrics}");
}

#[tokio::test]
async fn a_transactional_batch_commits_whole_or_not_at_all() {
    let server = Server::start();
    let items = container(
        server.port,
        ContainerProperties::new("orders", "/pk".into()),
    )
    .await;
    let batch = TransactionalBatch::new("p")
        .create_item(order("b1", "p", 1.0))
        .expect("op")
        .upsert_item(order("b2", "p", 2.0), None)
        .expect("op")
        .read_item("b1", None);
    let response = items
        .execute_transactional_batch(batch, None)
        .await
        .expect("batch");
    let results = response.into_model().expect("model");
    let statuses: Vec<u16> = results.results().iter().map(|r| r.status_code()).collect();
    assert_eq!(statuses, [201, 201, 200]);
    let failing = TransactionalBatch::new("p")
        .create_item(order("b3", "p", 3.0))
        .expect("op")
        .create_item(order("b1", "p", 1.0))
        .expect("op");
    let answer = items.execute_transactional_batch(failing, None).await;
    let rolled_back = match answer {
        Ok(response) => {
            let results = response.into_model().expect("model");
            results
                .results()
                .iter()
                .map(|r| r.status_code())
                .collect::<Vec<_>>()
        }
        Err(error) => {
            assert_eq!(error.status().status_code(), StatusCode::Conflict);
            Vec::new()
        }
    };
    assert!(
        rolled_back.is_empty() || rolled_back == [424, 409],
        "{rolled_back:?}"
    );
    let b3 = items
        .read_item("p", "b3", None)
        .await
        .expect_err("rolled back");
    assert_eq!(b3.status().status_code(), StatusCode::NotFound);
}

#[tokio::test]
async fn patches_change_only_what_they_name() {
    let server = Server::start();
    let items = container(
        server.port,
        ContainerProperties::new("orders", "/pk".into()),
    )
    .await;
    items
        .create_item("p", "o1", &order("o1", "p", 10.0), None)
        .await
        .expect("create");
    let patch = PatchInstructions::from(vec![
        PatchOperation::set("/note", json!("patched")),
        PatchOperation::increment("/small", 2),
        PatchOperation::add("/tags/0", json!("first")),
    ]);
    items
        .patch_item("p", "o1", patch, None)
        .await
        .expect("patch");
    let read: Order = items
        .read_item("p", "o1", None)
        .await
        .expect("read")
        .into_model()
        .expect("model");
    assert_eq!(read.note.as_deref(), Some("patched"));
    assert_eq!(read.small, -5);
    assert_eq!(read.tags[0], "first");
    assert_eq!(read.total, 10.0);
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Session {
    id: String,
    tenant: String,
    user: String,
    n: u32,
}

#[tokio::test]
async fn hierarchical_keys_address_items_and_prefixes() {
    let server = Server::start();
    let items = container(
        server.port,
        ContainerProperties::new("sessions", ("/tenant", "/user").into()),
    )
    .await;
    for (n, (tenant, user)) in [("t1", "u1"), ("t1", "u2"), ("t2", "u1")]
        .into_iter()
        .enumerate()
    {
        let session = Session {
            id: format!("s{n}"),
            tenant: tenant.into(),
            user: user.into(),
            n: n as u32,
        };
        items
            .create_item(
                PartitionKey::from((tenant, user)),
                &session.id,
                &session,
                None,
            )
            .await
            .expect("create");
    }
    let read: Session = items
        .read_item(PartitionKey::from(("t1", "u2")), "s1", None)
        .await
        .expect("read")
        .into_model()
        .expect("model");
    assert_eq!(read.n, 1);
    let mut tenant_one: Vec<String> = query_all(
        &items,
        "SELECT VALUE c.id FROM c",
        FeedScope::partition(PartitionKey::from("t1")),
    )
    .await;
    tenant_one.sort();
    assert_eq!(tenant_one, ["s0", "s1"]);
    let partial = items
        .read_item(PartitionKey::from("t1"), "s0", None)
        .await
        .expect_err("a partial key cannot address an item");
    assert_eq!(partial.status().status_code(), StatusCode::BadRequest);
    assert_eq!(partial.status().sub_status().map(|s| s.value()), Some(1001));
}

#[tokio::test]
async fn throughput_is_read_and_replaced() {
    let server = Server::start();
    let manual = container_with(
        server.port,
        ContainerProperties::new("manual", "/pk".into()),
        Some(CreateContainerOptions::default().with_throughput(ThroughputProperties::manual(400))),
    )
    .await;
    let offer = manual
        .read_throughput(None)
        .await
        .expect("read")
        .expect("an offer");
    assert_eq!(offer.throughput(), Some(400));
    let replaced = manual
        .begin_replace_throughput(ThroughputProperties::manual(1000), None)
        .await
        .expect("replace")
        .await
        .expect("done")
        .into_model()
        .expect("model");
    assert_eq!(replaced.throughput(), Some(1000));
    let autoscale = container_with(
        server.port,
        ContainerProperties::new("auto", "/pk".into()),
        Some(
            CreateContainerOptions::default()
                .with_throughput(ThroughputProperties::autoscale(4000, Some(15))),
        ),
    )
    .await;
    let offer = autoscale
        .read_throughput(None)
        .await
        .expect("read")
        .expect("an offer");
    assert_eq!(offer.autoscale_maximum(), Some(4000));
    assert_eq!(offer.autoscale_increment(), Some(15));
}

#[tokio::test]
async fn items_expire_at_their_time_to_live() {
    let server = Server::start();
    let items = container(
        server.port,
        ContainerProperties::new("expiring", "/pk".into()).with_default_ttl(2u32),
    )
    .await;
    items
        .create_item("p", "short", &order("short", "p", 1.0), None)
        .await
        .expect("create");
    let mut kept = serde_json::to_value(order("kept", "p", 2.0)).expect("json");
    kept["ttl"] = json!(-1);
    items
        .create_item("p", "kept", &kept, None)
        .await
        .expect("create");
    items.read_item("p", "short", None).await.expect("alive");
    tokio::time::sleep(Duration::from_millis(2_600)).await;
    let gone = items
        .read_item("p", "short", None)
        .await
        .expect_err("expired");
    assert_eq!(gone.status().status_code(), StatusCode::NotFound);
    let ids: Vec<String> = query_all(
        &items,
        "SELECT VALUE c.id FROM c",
        FeedScope::partition("p"),
    )
    .await;
    assert_eq!(ids, ["kept"]);
}

#[tokio::test]
async fn a_container_deleted_and_created_again_is_followed_by_the_sdk() {
    let server = Server::start();
    let client = client_for(server.port).await;
    client.create_database("db", None).await.expect("database");
    let database = client.database_client("db");
    database
        .create_container(ContainerProperties::new("c", "/pk".into()), None)
        .await
        .expect("container");
    let items = database.container_client("c", None).await.expect("client");
    items
        .create_item("p", "o1", &order("o1", "p", 1.0), None)
        .await
        .expect("create");
    // The client caches the container and its one partition key range.
    let ids: Vec<String> = query_all(
        &items,
        "SELECT VALUE c.id FROM c",
        FeedScope::full_container(),
    )
    .await;
    assert_eq!(ids, ["o1"]);
    // Another application drops the container and makes a new one under the same name, with
    // throughput that lays it out over several ranges, and fills it.
    let other = client_for(server.port).await.database_client("db");
    other
        .container_client("c", None)
        .await
        .expect("client")
        .delete(None)
        .await
        .expect("delete");
    other
        .create_container(
            ContainerProperties::new("c", "/pk".into()),
            Some(
                CreateContainerOptions::default()
                    .with_throughput(ThroughputProperties::manual(30_000)),
            ),
        )
        .await
        .expect("recreate");
    let fresh = other.container_client("c", None).await.expect("client");
    for n in 0..20 {
        let pk = format!("p{n}");
        fresh
            .create_item(
                pk.clone(),
                &format!("n{n:02}"),
                &order(&format!("n{n:02}"), &pk, 1.0),
                None,
            )
            .await
            .expect("create");
    }
    // The first client's cached container is stale: the server refuses what it sends for the
    // old `_rid` (400/1024), the SDK refreshes the container and its ranges, and the query sees
    // every item of the new container rather than one range's share.
    let mut ids: Vec<String> = query_all(
        &items,
        "SELECT VALUE c.id FROM c",
        FeedScope::full_container(),
    )
    .await;
    ids.sort();
    let expected: Vec<String> = (0..20).map(|n| format!("n{n:02}")).collect();
    assert_eq!(ids, expected);
    items
        .create_item("p", "o2", &order("o2", "p", 2.0), None)
        .await
        .expect("create after recreate");
    let read: Order = fresh
        .read_item("p", "o2", None)
        .await
        .expect("read")
        .into_model()
        .expect("model");
    assert_eq!(read.id, "o2");
}

#[tokio::test]
async fn the_sdk_retries_what_fault_rules_answer_until_they_are_spent() {
    let rules = tempfile::NamedTempFile::new().expect("rules file");
    std::fs::write(
        rules.path(),
        json!([
            {"operation": "Create", "status": 429, "substatus": 3200, "retryAfterMs": 5, "count": 2},
            {"operation": "Read", "partitionKey": "p", "status": 503, "count": 1}
        ])
        .to_string(),
    )
    .expect("write rules");
    let path = rules.path().to_str().expect("a UTF-8 path");
    let server = Server::start_with(&["--faults", path]);
    let items = container(
        server.port,
        ContainerProperties::new("orders", "/pk".into()),
    )
    .await;
    let first = order("o1", "p", 1.0);
    // Two throttled attempts, then the one that creates it.
    let created = items
        .create_item("p", "o1", &first, None)
        .await
        .expect("create after the throttling");
    assert_eq!(created.status().status_code(), StatusCode::Created);
    assert_eq!(
        created.diagnostics().request_count(),
        3,
        "two 429s, then the create"
    );
    // One 503, then the read.
    let read = items
        .read_item("p", "o1", None)
        .await
        .expect("read after the 503");
    assert_eq!(
        read.diagnostics().request_count(),
        2,
        "the 503, then the read"
    );
    let read: Order = read.into_model().expect("model");
    assert_eq!(read, first);
}
