//! Containers over HTTP: queries, plans and partition key ranges, partition key definitions,
//! usage headers and deletion.

use super::*;

#[tokio::test]
async fn queries_plans_and_partition_key_ranges() {
    let server = Server::new();
    server.setup(partitioned()).await;
    for i in 0..5 {
        server
            .create_item(json!({"id": format!("i{i}"), "pk": "p", "v": i}))
            .await;
    }
    let filtered = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"query": "SELECT c.id FROM c WHERE c.v >= @v ORDER BY c.v DESC", "parameters": [{"name": "@v", "value": 3}]})),
            &[("content-type", "application/query+json"), ("x-ms-documentdb-isquery", "True"), ("x-ms-documentdb-partitionkey", "[\"p\"]")],
        )
        .await;
    assert_eq!(
        filtered.body["Documents"],
        json!([{"id": "i4"}, {"id": "i3"}])
    );
    let cross = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"query": "SELECT * FROM c"})),
            &[("content-type", "application/query+json")],
        )
        .await;
    // Even on one range the service refuses a query that names no partition key without the
    // cross-partition header (the emulator does, in the Python SDK's null-key test).
    check_error(
        &cross,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Cross partition query is required but disabled",
    );
    let plan = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"query": "SELECT DISTINCT c.v FROM c"})),
            &[
                ("x-ms-cosmos-is-query-plan-request", "True"),
                ("x-ms-cosmos-supported-query-features", "Distinct"),
            ],
        )
        .await;
    assert_eq!(plan.body["queryInfo"]["distinctType"], json!("Unordered"));
    assert_eq!(plan.body["queryRanges"][0]["max"], json!("FF"));
    let ranges = server
        .send(
            "GET",
            "/dbs/db/colls/c/pkranges",
            ("pkranges", "dbs/db/colls/c"),
            None,
            &[],
        )
        .await;
    assert_eq!(ranges.body["PartitionKeyRanges"][0]["id"], json!("0"));
    let etag = ranges.header("etag").to_string();
    let unchanged = server
        .send(
            "GET",
            "/dbs/db/colls/c/pkranges",
            ("pkranges", "dbs/db/colls/c"),
            None,
            &[("if-none-match", &etag)],
        )
        .await;
    assert_eq!(unchanged.status, StatusCode::NOT_MODIFIED);
}

#[tokio::test]
async fn containers_keep_their_partition_key_and_report_usage() {
    let server = Server::new();
    server.setup(partitioned()).await;
    server.create_item(json!({"id": "a", "pk": "p"})).await;
    let read = server
        .send(
            "GET",
            "/dbs/db/colls/c",
            ("colls", "dbs/db/colls/c"),
            None,
            &[],
        )
        .await;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(
        read.body["partitionKey"],
        json!({"paths": ["/pk"], "kind": "Hash", "version": 2})
    );
    assert_eq!(
        read.body["indexingPolicy"]["indexingMode"],
        json!("consistent")
    );
    assert!(read
        .header("x-ms-resource-usage")
        .contains("documentsCount=1;"));
    let changed_key = server
        .send(
            "PUT",
            "/dbs/db/colls/c",
            ("colls", "dbs/db/colls/c"),
            Some(json!({"id": "c", "partitionKey": {"paths": ["/other"], "kind": "Hash"}})),
            &[],
        )
        .await;
    check_error(
        &changed_key,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "partition key cannot be changed",
    );
    let no_kind = server
        .send(
            "POST",
            "/dbs/db/colls",
            ("colls", "dbs/db"),
            Some(json!({"id": "k", "partitionKey": {"paths": ["/pk"]}})),
            &[],
        )
        .await;
    assert_eq!(
        no_kind.body["partitionKey"]["kind"],
        json!("Hash"),
        "clients need the kind"
    );
    let invalid_ttl = server
        .send(
            "POST",
            "/dbs/db/colls",
            ("colls", "dbs/db"),
            Some(json!({"id": "t", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 0})),
            &[],
        )
        .await;
    check_error(
        &invalid_ttl,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "The input defaultTtl '0' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire.",
    );
    let deleted = server
        .send("DELETE", "/dbs/db", ("dbs", "dbs/db"), None, &[])
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let gone = server
        .send(
            "GET",
            "/dbs/db/colls/c",
            ("colls", "dbs/db/colls/c"),
            None,
            &[],
        )
        .await;
    check_error(&gone, StatusCode::NOT_FOUND, "NotFound", "Not Found");
}

/// `POST .../colls/{container}/operations/partitionkeydelete`, with the key header if given.
async fn delete_partition(server: &Server, container: &str, key: Option<&str>) -> Answer {
    let path = format!("/dbs/db/colls/{container}/operations/partitionkeydelete");
    let link = format!("dbs/db/colls/{container}");
    let headers: Vec<(&str, &str)> = key
        .map(|key| ("x-ms-documentdb-partitionkey", key))
        .into_iter()
        .collect();
    server
        .send("POST", &path, ("colls", &link), None, &headers)
        .await
}

/// A partition delete is not an item operation, so nothing admits its container before the
/// handler: the header is checked first, then the container is looked up, then the engine's
/// writer looks it up again. Each refusal keeps its answer.
#[tokio::test]
async fn a_partition_delete_needs_its_key_header_and_its_container() {
    let server = Server::new();
    server.setup(partitioned()).await;
    server.create_item(json!({"id": "a", "pk": "p"})).await;
    server.create_item(json!({"id": "b", "pk": "q"})).await;
    let without_key = delete_partition(&server, "missing", None).await;
    check_error(
        &without_key,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "needs the x-ms-documentdb-partitionkey header",
    );
    let missing = delete_partition(&server, "missing", Some("[\"p\"]")).await;
    check_error(&missing, StatusCode::NOT_FOUND, "NotFound", "");
    let deleted = delete_partition(&server, "c", Some("[\"p\"]")).await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.body);
    let feed = server
        .send(
            "GET",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            None,
            &[],
        )
        .await;
    assert_eq!(feed.body["Documents"].as_array().map(Vec::len), Some(1));
}
