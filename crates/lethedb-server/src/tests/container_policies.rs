//! Container properties the service normalises or checks: the indexing policy's shape, the
//! change feed policy, computed properties (and their use in queries), partition key paths
//! with quoted segments, and unique keys (their policy, its 403 on a change, their 409).

use super::*;

async fn create_container(server: &Server, body: Value) -> Answer {
    server
        .send(
            "POST",
            "/dbs/db/colls",
            ("colls", "dbs/db"),
            Some(body),
            &[],
        )
        .await
}

#[tokio::test]
async fn the_indexing_policy_comes_back_in_the_current_shape() {
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
    assert_eq!(
        read.body["indexingPolicy"],
        json!({"indexingMode": "consistent", "automatic": true, "includedPaths": [{"path": "/*"}], "excludedPaths": [{"path": "/\"_etag\"/?"}]})
    );
    let legacy = create_container(
        &server,
        json!({"id": "legacy", "partitionKey": {"paths": ["/pk"], "kind": "Hash"},
               "indexingPolicy": {"includedPaths": [{"path": "/*", "indexes": [
                   {"kind": "Hash", "dataType": "String", "precision": 3},
                   {"kind": "Range", "dataType": "Number", "precision": -1}]}]}}),
    )
    .await;
    assert_eq!(legacy.status, StatusCode::CREATED, "{}", legacy.body);
    assert_eq!(
        legacy.body["indexingPolicy"]["includedPaths"],
        json!([{"path": "/*"}])
    );
}

#[tokio::test]
async fn the_change_feed_policy_is_kept_and_checked() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let kept = create_container(
        &server,
        json!({"id": "cf", "partitionKey": {"paths": ["/pk"], "kind": "Hash"},
               "changeFeedPolicy": {"retentionDuration": 10}}),
    )
    .await;
    assert_eq!(kept.status, StatusCode::CREATED, "{}", kept.body);
    assert_eq!(
        kept.body["changeFeedPolicy"],
        json!({"retentionDuration": 10})
    );
    for bad in [
        json!({"retentionDuration": -1}),
        json!({"retentionDuration": 1.5}),
        json!(5),
    ] {
        let refused = create_container(
            &server,
            json!({"id": "bad", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}, "changeFeedPolicy": bad}),
        )
        .await;
        check_error(
            &refused,
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "change feed policy",
        );
    }
}

#[tokio::test]
async fn computed_properties_are_checked_and_queried_by_name_only() {
    let server = Server::new();
    server
        .setup(
            json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash"},
        "computedProperties": [
            {"name": "cp_lower", "query": "SELECT VALUE LOWER(c.name) FROM c"},
            {"name": "cp_total", "query": "SELECT VALUE r.price * r.count FROM root r"}]}),
        )
        .await;
    server
        .create_item(json!({"id": "1", "pk": "p", "name": "Bob", "price": 2, "count": 3}))
        .await;
    server
        .create_item(json!({"id": "2", "pk": "p", "name": "al", "price": 10, "count": 1}))
        .await;
    let by_name = server
        .query(
            "SELECT c.id, c.cp_lower FROM c WHERE c.cp_total > 5 ORDER BY c.cp_lower",
            &[("x-ms-documentdb-partitionkey", "[\"p\"]")],
        )
        .await;
    assert_eq!(by_name.status, StatusCode::OK, "{}", by_name.body);
    assert_eq!(
        by_name.body["Documents"],
        json!([{"id": "2", "cp_lower": "al"}, {"id": "1", "cp_lower": "bob"}])
    );
    let star = server.query("SELECT * FROM c WHERE c.id = '1'", &[]).await;
    assert_eq!(star.body["Documents"][0].get("cp_lower"), None);
    assert_eq!(server.read_item("1", "p").await.body.get("cp_lower"), None);

    for (definitions, message) in [
        (
            json!([{"name": "id", "query": "SELECT VALUE c.a FROM c"}]),
            "reserved",
        ),
        (
            json!([{"name": "cp", "query": "SELECT c.a FROM c"}]),
            "SELECT VALUE",
        ),
        (
            json!([{"name": "cp", "query": "SELECT VALUE c.a FROM c WHERE c.a = 1"}]),
            "WHERE",
        ),
        (
            json!([{"name": "a", "query": "SELECT VALUE c.x FROM c"},
                {"name": "b", "query": "SELECT VALUE c.a FROM c"}]),
            "other computed properties",
        ),
    ] {
        let refused = create_container(
            &server,
            json!({"id": "bad", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}, "computedProperties": definitions}),
        )
        .await;
        check_error(&refused, StatusCode::BAD_REQUEST, "BadRequest", message);
    }
}

#[tokio::test]
async fn partition_key_paths_with_quoted_segments_match_documents() {
    let server = Server::new();
    server
        .setup(json!({"id": "c", "partitionKey": {"paths": ["/'level\" 1*()'/'le/vel2'"], "kind": "Hash", "version": 2}}))
        .await;
    let document = json!({"id": "a", "level\" 1*()": {"le/vel2": "v"}});
    let created = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(document.clone()),
            &[("x-ms-documentdb-partitionkey", "[\"v\"]")],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(server.read_item("a", "v").await.status, StatusCode::OK);
    let mismatch = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"id": "b", "level\" 1*()": {"le/vel2": "v"}})),
            &[("x-ms-documentdb-partitionkey", "[\"w\"]")],
        )
        .await;
    assert_eq!(mismatch.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn indexing_is_automatic_unless_the_mode_is_none_whatever_the_client_asks() {
    let server = Server::new();
    server.setup(partitioned()).await;
    for (id, policy, automatic) in [
        ("off", json!({"automatic": false}), true),
        (
            "lazy",
            json!({"indexingMode": "lazy", "automatic": false}),
            true,
        ),
        (
            "none",
            json!({"indexingMode": "none", "automatic": true}),
            false,
        ),
        (
            "none-off",
            json!({"indexingMode": "none", "automatic": false}),
            false,
        ),
    ] {
        let created = create_container(
            &server,
            json!({"id": id, "partitionKey": {"paths": ["/pk"], "kind": "Hash"}, "indexingPolicy": policy}),
        )
        .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
        assert_eq!(
            created.body["indexingPolicy"]["automatic"],
            json!(automatic),
            "{id}"
        );
    }
    let refused = create_container(
        &server,
        json!({"id": "bad", "partitionKey": {"paths": ["/pk"]}, "indexingPolicy": {"automatic": "no"}}),
    )
    .await;
    check_error(
        &refused,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "'automatic' must be a boolean",
    );
}

#[tokio::test]
async fn the_partition_key_version_is_echoed_only_when_sent() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let unversioned = create_container(
        &server,
        json!({"id": "v", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}}),
    )
    .await;
    assert_eq!(
        unversioned.status,
        StatusCode::CREATED,
        "{}",
        unversioned.body
    );
    assert_eq!(
        unversioned.body["partitionKey"],
        json!({"paths": ["/pk"], "kind": "Hash"})
    );
    let read = server
        .send(
            "GET",
            "/dbs/db/colls/v",
            ("colls", "dbs/db/colls/v"),
            None,
            &[],
        )
        .await;
    assert_eq!(
        read.body["partitionKey"],
        json!({"paths": ["/pk"], "kind": "Hash"})
    );
    let hierarchical = create_container(
        &server,
        json!({"id": "h", "partitionKey": {"paths": ["/a", "/b"], "kind": "MultiHash"}}),
    )
    .await;
    assert_eq!(
        hierarchical.status,
        StatusCode::CREATED,
        "{}",
        hierarchical.body
    );
    assert!(hierarchical.body["partitionKey"].get("version").is_none());
    // Sent, it comes back; the container behind `partitioned()` asked for version 2.
    let versioned = server
        .send(
            "GET",
            "/dbs/db/colls/c",
            ("colls", "dbs/db/colls/c"),
            None,
            &[],
        )
        .await;
    assert_eq!(versioned.body["partitionKey"]["version"], json!(2));
}

#[tokio::test]
async fn unique_keys_answer_as_the_service_does() {
    let server = Server::new();
    let policy = json!({"uniqueKeys": [{"paths": ["/email"]}]});
    let definition = json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}});
    let mut unique = definition.clone();
    unique["uniqueKeyPolicy"] = policy.clone();
    server.setup(unique).await;
    let refused = create_container(
        &server,
        json!({"id": "bad", "partitionKey": {"paths": ["/pk"]}, "uniqueKeyPolicy": {"uniqueKeys": [{"paths": ["/a/*"]}]}}),
    )
    .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        refused.body["message"],
        "Error parsing the unique key path '/a/*' at position 3. Make sure the unique key path does not contain wildcards and invalid characters."
    );
    let changed = server
        .send(
            "PUT",
            "/dbs/db/colls/c",
            ("colls", "dbs/db/colls/c"),
            Some(definition),
            &[],
        )
        .await;
    assert_eq!(changed.status, StatusCode::FORBIDDEN, "{}", changed.body);
    assert_eq!(changed.header("x-ms-substatus"), "0");
    assert_eq!(
        changed.body,
        json!({"code": "Forbidden", "message": "The unique index cannot be modified. To change the unique index, remove the collection and re-create a new one."})
    );
    let first = server
        .create_item(json!({"id": "a", "pk": "p", "email": "x"}))
        .await;
    assert_eq!(first.status, StatusCode::CREATED);
    let second = server
        .create_item(json!({"id": "b", "pk": "p", "email": "x"}))
        .await;
    assert_eq!(second.status, StatusCode::CONFLICT);
    assert_eq!(second.header("x-ms-substatus"), "0");
    assert_eq!(
        second.body,
        json!({"code": "Conflict", "message": "Entity with the specified id already exists in the system."})
    );
    let read = server
        .send(
            "GET",
            "/dbs/db/colls/c",
            ("colls", "dbs/db/colls/c"),
            None,
            &[],
        )
        .await;
    assert_eq!(read.body["uniqueKeyPolicy"], policy);
}

#[tokio::test]
async fn an_order_by_no_index_serves_is_the_service_s_400() {
    let server = Server::new();
    server
        .setup(
            json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash"},
            "indexingPolicy": {"excludedPaths": [{"path": "/secret/?"}]}}),
        )
        .await;
    server
        .create_item(json!({"id": "1", "pk": "p", "a": 1, "b": 2, "secret": 3}))
        .await;
    for (text, message) in [
        (
            "SELECT * FROM c ORDER BY c.a, c.b",
            "The order by query does not have a corresponding composite index that it can be served from.",
        ),
        (
            "SELECT * FROM c ORDER BY c.secret",
            "The index path corresponding to the specified order-by item is excluded.",
        ),
    ] {
        let refused = server.query(text, ONE_RANGE).await;
        check_error(&refused, StatusCode::BAD_REQUEST, "BadRequest", message);
        assert_eq!(refused.body["message"], json!(message));
        assert_eq!(refused.header("x-ms-substatus"), "0");
    }
    let served = server
        .query("SELECT VALUE c.id FROM c ORDER BY c.a", ONE_RANGE)
        .await;
    assert_eq!(served.body["Documents"], json!(["1"]), "{}", served.body);
}
