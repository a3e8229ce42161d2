//! Items over HTTP: the lifecycle with the headers the SDKs read, read-feed paging and expiry
//! at the millisecond.

use super::*;

#[tokio::test]
async fn item_lifecycle_with_headers_the_sdks_read() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let created = server
        .create_item(json!({"id": "a", "pk": "p", "n": 1, "_ts": 5, "_etag": "\"mine\""}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let etag = created.header("etag").to_string();
    assert_eq!(created.body["_etag"], json!(etag));
    assert_eq!(
        created.body["_ts"],
        json!(START_MS / 1000),
        "a client-sent _ts is ignored"
    );
    for name in ["_rid", "_self", "_attachments"] {
        assert!(created.body[name].is_string(), "{name}");
    }
    assert!(created.header("x-ms-session-token").starts_with("0:-1#"));
    assert_eq!(created.header("x-ms-alt-content-path"), "dbs/db/colls/c");
    assert_eq!(created.header("x-ms-documentdb-partitionkeyrangeid"), "0");
    assert!(
        created
            .header("x-ms-request-charge")
            .parse::<f64>()
            .expect("charge")
            > 1.0
    );
    let duplicate = server.create_item(json!({"id": "a", "pk": "p"})).await;
    check_error(
        &duplicate,
        StatusCode::CONFLICT,
        "Conflict",
        "already exists",
    );
    let read = server.read_item("a", "p").await;
    assert_eq!(
        (read.status, read.body["n"].clone()),
        (StatusCode::OK, json!(1))
    );
    let pk = "[\"p\"]";
    let not_modified = server
        .send(
            "GET",
            "/dbs/db/colls/c/docs/a",
            ("docs", "dbs/db/colls/c/docs/a"),
            None,
            &[
                ("x-ms-documentdb-partitionkey", pk),
                ("if-none-match", &etag),
            ],
        )
        .await;
    assert_eq!(not_modified.status, StatusCode::NOT_MODIFIED);
    server.clock.advance_ms(1_000);
    let replaced = server
        .send(
            "PUT",
            "/dbs/db/colls/c/docs/a",
            ("docs", "dbs/db/colls/c/docs/a"),
            Some(json!({"id": "a", "pk": "p", "n": 2})),
            &[("x-ms-documentdb-partitionkey", pk), ("if-match", &etag)],
        )
        .await;
    assert_eq!(replaced.status, StatusCode::OK);
    assert_ne!(replaced.header("etag"), etag);
    let stale = server
        .send(
            "PUT",
            "/dbs/db/colls/c/docs/a",
            ("docs", "dbs/db/colls/c/docs/a"),
            Some(json!({"id": "a", "pk": "p", "n": 3})),
            &[("x-ms-documentdb-partitionkey", pk), ("if-match", &etag)],
        )
        .await;
    check_error(
        &stale,
        StatusCode::PRECONDITION_FAILED,
        "PreconditionFailed",
        "precondition",
    );
    let stale_delete = server
        .send(
            "DELETE",
            "/dbs/db/colls/c/docs/a",
            ("docs", "dbs/db/colls/c/docs/a"),
            None,
            &[("x-ms-documentdb-partitionkey", pk), ("if-match", &etag)],
        )
        .await;
    check_error(
        &stale_delete,
        StatusCode::PRECONDITION_FAILED,
        "PreconditionFailed",
        "precondition",
    );
    let upserted = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"id": "b", "pk": "p"})),
            &[
                ("x-ms-documentdb-partitionkey", pk),
                ("x-ms-documentdb-is-upsert", "True"),
            ],
        )
        .await;
    assert_eq!(upserted.status, StatusCode::CREATED);
    let deleted = server
        .send(
            "DELETE",
            "/dbs/db/colls/c/docs/a",
            ("docs", "dbs/db/colls/c/docs/a"),
            None,
            &[("x-ms-documentdb-partitionkey", pk)],
        )
        .await;
    assert_eq!(
        (deleted.status, deleted.body.clone()),
        (StatusCode::NO_CONTENT, Value::Null)
    );
    check_error(
        &server.read_item("a", "p").await,
        StatusCode::NOT_FOUND,
        "NotFound",
        "does not exist",
    );
    // Addressed by resource ids, as clients do with `_self`.
    let by_rid = upserted.body["_self"].as_str().expect("self").to_string();
    let rid = upserted.body["_rid"]
        .as_str()
        .expect("rid")
        .to_ascii_lowercase();
    let read = server
        .send(
            "GET",
            &format!("/{by_rid}"),
            ("docs", &rid),
            None,
            &[("x-ms-documentdb-partitionkey", pk)],
        )
        .await;
    assert_eq!(
        (read.status, read.body["id"].clone()),
        (StatusCode::OK, json!("b"))
    );
}

/// A replacement keeps the item's resource id, and its resource-id entry (which the writer no
/// longer rewrites when it is unchanged) still leads to the item's latest version.
#[tokio::test]
async fn an_item_replaced_and_upserted_is_still_found_by_its_self_link() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let pk = "[\"p\"]";
    let created = server
        .create_item(json!({"id": "r", "pk": "p", "n": 0}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let replaced = server
        .send(
            "PUT",
            "/dbs/db/colls/c/docs/r",
            ("docs", "dbs/db/colls/c/docs/r"),
            Some(json!({"id": "r", "pk": "p", "n": 1})),
            &[("x-ms-documentdb-partitionkey", pk)],
        )
        .await;
    assert_eq!(replaced.status, StatusCode::OK);
    let upserted = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"id": "r", "pk": "p", "n": 2})),
            &[
                ("x-ms-documentdb-partitionkey", pk),
                ("x-ms-documentdb-is-upsert", "True"),
            ],
        )
        .await;
    assert_eq!(upserted.status, StatusCode::OK);
    assert_eq!(upserted.body["_rid"], created.body["_rid"]);
    let self_link = upserted.body["_self"].as_str().expect("self").to_string();
    let rid = upserted.body["_rid"]
        .as_str()
        .expect("rid")
        .to_ascii_lowercase();
    let read = server
        .send(
            "GET",
            &format!("/{self_link}"),
            ("docs", &rid),
            None,
            &[("x-ms-documentdb-partitionkey", pk)],
        )
        .await;
    assert_eq!(
        (read.status, read.body["n"].clone()),
        (StatusCode::OK, json!(2))
    );
}

#[tokio::test]
async fn read_feed_pages_exactly() {
    let server = Server::new();
    server.setup(partitioned()).await;
    for i in 0..25 {
        server
            .create_item(json!({"id": format!("i{i:02}"), "pk": format!("p{}", i % 3)}))
            .await;
    }
    let mut seen = Vec::new();
    let mut continuation: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut headers = vec![("x-ms-max-item-count", "7")];
        if let Some(token) = &continuation {
            headers.push(("x-ms-continuation", token));
        }
        let page = server
            .send(
                "GET",
                "/dbs/db/colls/c/docs",
                ("docs", "dbs/db/colls/c"),
                None,
                &headers,
            )
            .await;
        assert_eq!(page.status, StatusCode::OK);
        pages += 1;
        let documents = page.body["Documents"]
            .as_array()
            .expect("documents")
            .clone();
        assert_eq!(page.header("x-ms-item-count"), documents.len().to_string());
        assert_eq!(page.body["_count"], json!(documents.len()));
        seen.extend(
            documents
                .iter()
                .map(|d| d["id"].as_str().unwrap_or_default().to_string()),
        );
        match page.headers.get("x-ms-continuation") {
            Some(token) => continuation = Some(token.to_str().expect("token").to_string()),
            None => break,
        }
    }
    assert_eq!(pages, 4);
    seen.sort();
    let expected: Vec<String> = (0..25).map(|i| format!("i{i:02}")).collect();
    assert_eq!(seen, expected);
}

/// A token LetheDB never wrote is a 400 whose message opens with the service's words, which
/// SDK tests and applications match on, whether a query or a read feed receives it.
#[tokio::test]
async fn a_junk_continuation_token_is_an_invalid_continuation_token() {
    let server = Server::new();
    server.setup(partitioned()).await;
    server.create_item(json!({"id": "a", "pk": "p"})).await;
    for junk in ["junk", "eyJub3QiOiJhIHRva2VuIn0="] {
        let query = server
            .query("SELECT * FROM c", &[("x-ms-continuation", junk)])
            .await;
        check_error(
            &query,
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "Invalid Continuation Token",
        );
        let feed = server
            .send(
                "GET",
                "/dbs/db/colls/c/docs",
                ("docs", "dbs/db/colls/c"),
                None,
                &[("x-ms-continuation", junk)],
            )
            .await;
        check_error(
            &feed,
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "Invalid Continuation Token",
        );
    }
}

#[tokio::test]
async fn expiry_over_http_at_the_millisecond() {
    let server = Server::new();
    let mut container = partitioned();
    container["defaultTtl"] = json!(10);
    server.setup(container).await;
    server.create_item(json!({"id": "a", "pk": "p"})).await;
    server.clock.advance_ms(9_999);
    assert_eq!(server.read_item("a", "p").await.status, StatusCode::OK);
    assert_eq!(
        server
            .query("SELECT VALUE COUNT(1) FROM c", ONE_RANGE)
            .await
            .body["Documents"],
        json!([1])
    );
    server.clock.advance_ms(1);
    check_error(
        &server.read_item("a", "p").await,
        StatusCode::NOT_FOUND,
        "NotFound",
        "",
    );
    assert_eq!(
        server
            .query("SELECT VALUE COUNT(1) FROM c", ONE_RANGE)
            .await
            .body["Documents"],
        json!([0])
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
    assert!(
        read.header("x-ms-resource-usage")
            .contains("documentsCount=0;"),
        "{}",
        read.header("x-ms-resource-usage")
    );
    let recreated = server.create_item(json!({"id": "a", "pk": "p"})).await;
    assert_eq!(recreated.status, StatusCode::CREATED);
    let invalid = server
        .create_item(json!({"id": "b", "pk": "p", "ttl": 0}))
        .await;
    check_error(
        &invalid,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "The input ttl '0' is invalid.",
    );
}

/// A negative `ttl` other than -1 is refused even in a container without TTL, as the service
/// refuses it in the JavaScript SDK's bulk tests: a plain create gets the 400, and so does that
/// operation of a bulk request.
#[tokio::test]
async fn a_negative_item_ttl_is_refused_in_a_container_without_ttl() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let refused = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"id": "a", "pk": "A", "ttl": -10})),
            &[("x-ms-documentdb-partitionkey", "[\"A\"]")],
        )
        .await;
    check_error(
        &refused,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "The input ttl '-10' is invalid.",
    );
    let bulk = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!([
                {"operationType": "Create", "partitionKey": "[\"A\"]",
                 "resourceBody": {"id": "b", "pk": "A", "ttl": -10}},
                {"operationType": "Create", "partitionKey": "[\"A\"]",
                 "resourceBody": {"id": "c", "pk": "A"}},
            ])),
            &[
                ("x-ms-cosmos-is-batch-request", "True"),
                ("x-ms-cosmos-batch-atomic", "False"),
                ("x-ms-documentdb-partitionkeyrangeid", "0"),
            ],
        )
        .await;
    assert_eq!(bulk.body[0]["statusCode"], json!(400), "{}", bulk.body);
    assert_eq!(bulk.body[0]["subStatusCode"], json!(0), "{}", bulk.body);
    let kept = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"id": "d", "pk": "A", "ttl": -1, "other": 0})),
            &[("x-ms-documentdb-partitionkey", "[\"A\"]")],
        )
        .await;
    assert_eq!(kept.status, StatusCode::CREATED, "{}", kept.body);
}

/// A point read on a store only this process writes takes its session from memory, without
/// reading the partition's counters: after the sweeper's purge, which answered nobody, it
/// answers the session headers that a read of the counters gives (a 404 in the same partition
/// reads them), moved by the purge, and the item's own LSN unchanged.
#[tokio::test]
async fn a_point_read_after_a_sweeper_purge_answers_what_the_counters_say() {
    let mut engine = None;
    let server = Server::with(|state| engine = Some(state.engine.clone()));
    let engine = engine.expect("the server's engine");
    server
        .setup(json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": -1}))
        .await;
    server.create_item(json!({"id": "keep", "pk": "p"})).await;
    let doomed = server
        .create_item(json!({"id": "doomed", "pk": "p", "ttl": 1}))
        .await;
    assert_eq!(doomed.status, StatusCode::CREATED);
    let before = server.read_item("keep", "p").await;
    server.clock.advance_ms(2_000);
    while engine.sweep_once(100).await.expect("sweep").0 > 0 {}
    // The found item first: the 404 raises the session by the counters it reads.
    let found = server.read_item("keep", "p").await;
    let missing = server.read_item("absent", "p").await;
    assert_eq!(found.status, StatusCode::OK);
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    for name in ["x-ms-session-token", "lsn", "x-ms-global-committed-lsn"] {
        assert_eq!(found.header(name), missing.header(name), "{name}");
        assert_ne!(
            found.header(name),
            before.header(name),
            "{name}: the purge moved it"
        );
    }
    assert_eq!(
        found.header("x-ms-item-lsn"),
        before.header("x-ms-item-lsn")
    );
}
