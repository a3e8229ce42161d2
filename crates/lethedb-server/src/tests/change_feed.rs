//! The change feed over HTTP: the start headers, the `etag` cursor, 304 when nothing is new,
//! the all-versions refusal from the beginning, and a bad cursor.

use super::{check_error, partitioned, Server};
use axum::http::StatusCode;
use serde_json::json;

async fn feed(server: &Server, headers: &[(&str, &str)]) -> super::Answer {
    server
        .send(
            "GET",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            None,
            headers,
        )
        .await
}

#[tokio::test]
async fn the_change_feed_pages_by_etag_and_answers_304_when_nothing_is_new() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let latest = ("a-im", "Incremental Feed");
    let now = feed(&server, &[latest, ("if-none-match", "*")]).await;
    assert_eq!(now.status, StatusCode::NOT_MODIFIED);
    let start = now.header("etag").to_string();
    assert!(start.starts_with('"') && start.ends_with('"'), "{start}");
    server.create_item(json!({"id": "a", "pk": "p"})).await;
    server.create_item(json!({"id": "b", "pk": "q"})).await;
    let page = feed(&server, &[latest, ("if-none-match", &start)]).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.body["_count"], json!(2));
    // Partitions come shard by shard; each item is its shard's first write.
    for document in page.body["Documents"].as_array().expect("documents") {
        assert_eq!(document["_lsn"], json!(1));
    }
    // The cursor names the sequence reached in each shard of the container (64 of them): two
    // shards at 1, the rest at 0.
    let etag = page.header("etag").to_string();
    let sequences = etag
        .trim_matches('"')
        .strip_prefix("0:")
        .expect("every shard, from the first")
        .split('.')
        .collect::<Vec<_>>();
    assert_eq!(sequences.len(), 64, "{etag}");
    assert_eq!(sequences.iter().filter(|s| **s == "1").count(), 2, "{etag}");
    assert_eq!(
        sequences.iter().filter(|s| **s == "0").count(),
        62,
        "{etag}"
    );
    let idle = feed(&server, &[latest, ("if-none-match", &etag)]).await;
    assert_eq!(idle.status, StatusCode::NOT_MODIFIED);
    assert_eq!(idle.header("etag"), etag);
    // From the beginning, one partition.
    let scoped = feed(
        &server,
        &[latest, ("x-ms-documentdb-partitionkey", "[\"q\"]")],
    )
    .await;
    assert_eq!(scoped.body["Documents"][0]["id"], json!("b"));
    assert_eq!(scoped.body["_count"], json!(1));
    // If-Modified-Since far in the future finds nothing; a continuation wins over it.
    let future = "Fri, 01 Jan 2100 00:00:00 GMT";
    let none = feed(&server, &[latest, ("if-modified-since", future)]).await;
    assert_eq!(none.status, StatusCode::NOT_MODIFIED);
    let both = feed(
        &server,
        &[
            latest,
            ("if-modified-since", future),
            ("if-none-match", &start),
        ],
    )
    .await;
    assert_eq!(both.body["_count"], json!(2));
    let bad = feed(&server, &[latest, ("if-none-match", "\"x\"")]).await;
    check_error(&bad, StatusCode::BAD_REQUEST, "BadRequest", "If-None-Match");
}

#[tokio::test]
async fn all_versions_starts_only_from_now_or_a_continuation() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let all = ("a-im", "Full-Fidelity Feed");
    let refused = feed(&server, &[all]).await;
    check_error(
        &refused,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "You must read the change feed from within the retention period.",
    );
    let now = feed(&server, &[all, ("if-none-match", "*")]).await;
    assert_eq!(now.status, StatusCode::NOT_MODIFIED);
    server.create_item(json!({"id": "a", "pk": "p"})).await;
    let page = feed(&server, &[all, ("if-none-match", now.header("etag"))]).await;
    assert_eq!(
        page.body["Documents"][0]["metadata"]["operationType"],
        json!("create")
    );
    assert_eq!(page.body["Documents"][0]["current"]["id"], json!("a"));
}
