//! Headers and rules the Rust SDK relies on that the other SDKs do not exercise: the server's
//! time on every response, the session of a 404 point read, the intended container's `_rid`
//! (400/1024 after the container was deleted and created again), and 1001 on a partial
//! hierarchical key; no substatus on a refused patch, as on the SDK's own refusal.

use super::*;

fn hierarchical() -> Value {
    json!({"id": "c", "partitionKey": {"paths": ["/tenant", "/user"], "kind": "MultiHash", "version": 2}})
}

fn duration_ms(answer: &Answer) -> f64 {
    let text = answer.header("x-ms-request-duration-ms");
    text.parse()
        .unwrap_or_else(|_| panic!("x-ms-request-duration-ms {text:?}"))
}

#[tokio::test]
async fn every_response_says_how_long_the_server_spent() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let created = server.create_item(json!({"id": "a", "pk": "p"})).await;
    assert_eq!(created.status, StatusCode::CREATED);
    assert!(duration_ms(&created) >= 0.0);
    let missing = server.read_item("nope", "p").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert!(duration_ms(&missing) >= 0.0);
    let unsigned = server
        .raw(
            Request::builder()
                .uri("/dbs")
                .body(Body::empty())
                .expect("request"),
        )
        .await;
    assert_eq!(unsigned.status, StatusCode::UNAUTHORIZED);
    assert!(duration_ms(&unsigned) >= 0.0);
    let internal = server
        .raw(
            Request::builder()
                .uri("/_explorer/")
                .body(Body::empty())
                .expect("request"),
        )
        .await;
    assert!(duration_ms(&internal) >= 0.0);
}

#[tokio::test]
async fn a_point_read_that_finds_nothing_carries_the_session_it_saw() {
    let server = Server::new();
    let mut container = partitioned();
    container["defaultTtl"] = json!(-1);
    server.setup(container).await;
    for id in ["a", "b"] {
        let created = server.create_item(json!({"id": id, "pk": "p"})).await;
        assert_eq!(created.status, StatusCode::CREATED);
    }
    // A read names the LSN of the write that made the version it returns.
    let found = server.read_item("a", "p").await;
    assert_eq!(found.header("x-ms-item-lsn"), "1");
    assert_eq!(found.header("lsn"), "2");
    let missing = server.read_item("nope", "p").await;
    check_error(&missing, StatusCode::NOT_FOUND, "NotFound", "");
    assert_eq!(missing.header("lsn"), "2");
    assert_eq!(missing.header("x-ms-session-token"), "0:-1#2");
    assert_eq!(missing.header("x-ms-documentdb-partitionkeyrangeid"), "0");
    // No owner headers: the JavaScript SDK would merge the token into its container's.
    assert!(missing.headers.get("x-ms-alt-content-path").is_none());
    assert!(missing.headers.get("x-ms-content-path").is_none());
    // An expired item reads as missing, with the session all the same.
    let expiring = server
        .create_item(json!({"id": "gone", "pk": "p", "ttl": 1}))
        .await;
    assert_eq!(expiring.status, StatusCode::CREATED, "{}", expiring.body);
    server.clock.advance_ms(2_000);
    let expired = server.read_item("gone", "p").await;
    assert_eq!(expired.status, StatusCode::NOT_FOUND);
    assert_eq!(expired.header("x-ms-session-token"), "0:-1#3");
}

#[tokio::test]
async fn a_request_meant_for_a_container_deleted_and_created_again_is_a_400_1024() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let read = server
        .send(
            "GET",
            "/dbs/db/colls/c",
            ("colls", "dbs/db/colls/c"),
            None,
            &[],
        )
        .await;
    let old_rid = read.body["_rid"].as_str().expect("rid").to_string();
    let intended = [("x-ms-cosmos-intended-collection-rid", old_rid.as_str())];
    let created = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"id": "a", "pk": "p"})),
            &[("x-ms-documentdb-partitionkey", r#"["p"]"#), intended[0]],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let deleted = server
        .send(
            "DELETE",
            "/dbs/db/colls/c",
            ("colls", "dbs/db/colls/c"),
            None,
            &[],
        )
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let recreated = server
        .send(
            "POST",
            "/dbs/db/colls",
            ("colls", "dbs/db"),
            Some(partitioned()),
            &[],
        )
        .await;
    assert_eq!(recreated.status, StatusCode::CREATED);
    assert_ne!(recreated.body["_rid"], json!(old_rid));
    let stale = server
        .send(
            "GET",
            "/dbs/db/colls/c/docs/a",
            ("docs", "dbs/db/colls/c/docs/a"),
            None,
            &[("x-ms-documentdb-partitionkey", r#"["p"]"#), intended[0]],
        )
        .await;
    check_error(
        &stale,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Collection rid provided by the user does not match the existing collection.",
    );
    assert_eq!(stale.header("x-ms-substatus"), "1024");
    let stale_ranges = server
        .send(
            "GET",
            "/dbs/db/colls/c/pkranges",
            ("pkranges", "dbs/db/colls/c"),
            None,
            &intended,
        )
        .await;
    assert_eq!(stale_ranges.header("x-ms-substatus"), "1024");
    // The new container's rid, or none, is served.
    let new_rid = recreated.body["_rid"].as_str().expect("rid").to_string();
    let fresh = server
        .send(
            "GET",
            "/dbs/db/colls/c/pkranges",
            ("pkranges", "dbs/db/colls/c"),
            None,
            &[("x-ms-cosmos-intended-collection-rid", &new_rid)],
        )
        .await;
    assert_eq!(fresh.status, StatusCode::OK, "{}", fresh.body);
}

#[tokio::test]
async fn a_partial_hierarchical_key_on_a_point_operation_is_a_400_1001() {
    let server = Server::new();
    server.setup(hierarchical()).await;
    let created = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"id": "a", "tenant": "t", "user": "u"})),
            &[("x-ms-documentdb-partitionkey", r#"["t","u"]"#)],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let partial = [("x-ms-documentdb-partitionkey", r#"["t"]"#)];
    let doc = ("docs", "dbs/db/colls/c/docs/a");
    let answers = [
        server
            .send("GET", "/dbs/db/colls/c/docs/a", doc, None, &partial)
            .await,
        server
            .send(
                "PUT",
                "/dbs/db/colls/c/docs/a",
                doc,
                Some(json!({"id": "a", "tenant": "t", "user": "u"})),
                &partial,
            )
            .await,
        server
            .send("DELETE", "/dbs/db/colls/c/docs/a", doc, None, &partial)
            .await,
        server
            .send(
                "PATCH",
                "/dbs/db/colls/c/docs/a",
                doc,
                Some(json!({"operations": [{"op": "set", "path": "/n", "value": 1}]})),
                &partial,
            )
            .await,
    ];
    for answer in &answers {
        check_error(
            answer,
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "Partition key provided either doesn't correspond to definition in the collection",
        );
        assert_eq!(answer.header("x-ms-substatus"), "1001");
    }
}

#[tokio::test]
async fn index_metrics_are_reported_when_asked_for() {
    use base64::Engine as _;
    let server = Server::new();
    let mut container = partitioned();
    container["indexingPolicy"] =
        json!({"includedPaths": [{"path": "/*"}], "excludedPaths": [{"path": "/skip/?"}]});
    server.setup(container).await;
    let created = server
        .create_item(json!({"id": "a", "pk": "p", "name": "n"}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let text = "SELECT * FROM c WHERE c.name = 'n' AND c.skip > 1";
    let plain = server.query(text, &[]).await;
    assert_eq!(plain.status, StatusCode::OK, "{}", plain.body);
    assert!(plain.headers.get("x-ms-cosmos-index-utilization").is_none());
    let asked = server
        .query(text, &[("x-ms-cosmos-populateindexmetrics", "True")])
        .await;
    assert_eq!(asked.status, StatusCode::OK, "{}", asked.body);
    let report = base64::engine::general_purpose::STANDARD
        .decode(asked.header("x-ms-cosmos-index-utilization"))
        .expect("base64");
    let report: Value = serde_json::from_slice(&report).expect("json");
    assert_eq!(
        report["UtilizedSingleIndexes"][0]["IndexSpec"],
        json!("/name/?")
    );
    assert_eq!(
        report["PotentialSingleIndexes"][0]["IndexSpec"],
        json!("/skip/?")
    );
    assert_eq!(report["UtilizedCompositeIndexes"], json!([]));
}

#[tokio::test]
async fn a_query_naming_a_range_is_scoped_to_it_without_the_cross_partition_header() {
    let server = Server::new();
    let database = server
        .send("POST", "/dbs", ("dbs", ""), Some(json!({"id": "db"})), &[])
        .await;
    assert_eq!(database.status, StatusCode::CREATED);
    let created = server
        .send(
            "POST",
            "/dbs/db/colls",
            ("colls", "dbs/db"),
            Some(partitioned()),
            &[("x-ms-offer-throughput", "30000")],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let mut owner = std::collections::BTreeMap::new();
    for i in 0..20 {
        let created = server
            .create_item(json!({"id": format!("i{i}"), "pk": format!("p{i}")}))
            .await;
        let range = created
            .header("x-ms-documentdb-partitionkeyrangeid")
            .to_string();
        owner.insert(format!("i{i}"), range);
    }
    let ranges: std::collections::BTreeSet<String> = owner.values().cloned().collect();
    assert!(ranges.len() > 1, "items spread over ranges: {owner:?}");
    let query = |range: Option<String>| {
        let server = &server;
        async move {
            let mut headers = vec![
                ("content-type", "application/query+json".to_string()),
                ("x-ms-documentdb-isquery", "True".to_string()),
            ];
            if let Some(range) = range {
                headers.push(("x-ms-documentdb-partitionkeyrangeid", range));
            }
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            server
                .send(
                    "POST",
                    "/dbs/db/colls/c/docs",
                    ("docs", "dbs/db/colls/c"),
                    Some(json!({"query": "SELECT VALUE c.id FROM c"})),
                    &headers,
                )
                .await
        }
    };
    let unscoped = query(None).await;
    assert_eq!(
        unscoped.status,
        StatusCode::BAD_REQUEST,
        "{}",
        unscoped.body
    );
    for range in &ranges {
        let answer = query(Some(range.clone())).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        let mut ids: Vec<String> =
            serde_json::from_value(answer.body["Documents"].clone()).expect("ids");
        ids.sort();
        let mut expected: Vec<String> = owner
            .iter()
            .filter(|(_, owner)| *owner == range)
            .map(|(id, _)| id.clone())
            .collect();
        expected.sort();
        assert_eq!(ids, expected, "range {range}");
        assert_eq!(answer.header("x-ms-documentdb-partitionkeyrangeid"), range);
    }
}

#[tokio::test]
async fn a_refused_patch_carries_no_substatus_as_the_sdks_own_refusal() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let created = server
        .create_item(json!({"id": "a", "pk": "p", "name": "before"}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let doc = ("docs", "dbs/db/colls/c/docs/a");
    let pk = [("x-ms-documentdb-partitionkey", r#"["p"]"#)];
    // The three refusals the Rust SDK's test compares with its client-side patch.
    for operation in [
        json!({"op": "replace", "path": "/missing/leaf", "value": 1}),
        json!({"op": "incr", "path": "/name", "value": 1}),
        json!({"op": "set", "path": "/pk", "value": "moved"}),
    ] {
        let refused = server
            .send(
                "PATCH",
                "/dbs/db/colls/c/docs/a",
                doc,
                Some(json!({ "operations": [operation] })),
                &pk,
            )
            .await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{operation}");
        assert!(
            !refused.headers.contains_key("x-ms-substatus"),
            "{operation}: {:?}",
            refused.headers.get("x-ms-substatus")
        );
    }
    // Other refusals still say 0.
    let missing = server.read_item("nope", "p").await;
    assert_eq!(missing.header("x-ms-substatus"), "0");
}
