//! Writes whose outcome depends on what exists: a replace that renames, an upsert with a
//! condition, and transactional batches (request-level checks, session tokens).

use super::*;

#[tokio::test]
async fn a_replace_with_another_id_renames_the_item() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let created = server.create_item(json!({"id": "a", "pk": "p"})).await;
    let renamed = server
        .replace_item("a", "p", json!({"id": "b", "pk": "p", "v": 2}), &[])
        .await;
    assert_eq!(renamed.status, StatusCode::OK, "{}", renamed.body);
    assert_eq!(renamed.body["id"], json!("b"));
    assert_eq!(renamed.body["_rid"], created.body["_rid"]);
    assert_eq!(
        server.read_item("a", "p").await.status,
        StatusCode::NOT_FOUND
    );
    let read = server.read_item("b", "p").await;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(read.body["v"], json!(2));
    let all = server.query("SELECT VALUE c.id FROM c", &[]).await;
    assert_eq!(all.body["Documents"], json!(["b"]));

    // Onto an id that exists: 409, nothing changes.
    server.create_item(json!({"id": "c", "pk": "p"})).await;
    let taken = server
        .replace_item("b", "p", json!({"id": "c", "pk": "p"}), &[])
        .await;
    check_error(&taken, StatusCode::CONFLICT, "Conflict", "already exists");
    assert_eq!(server.read_item("b", "p").await.body["v"], json!(2));
    // The URL's item must exist, and a condition is checked against it.
    let missing = server
        .replace_item("ghost", "p", json!({"id": "d", "pk": "p"}), &[])
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let stale = server
        .replace_item(
            "b",
            "p",
            json!({"id": "d", "pk": "p"}),
            &[("if-match", created.header("etag"))],
        )
        .await;
    assert_eq!(stale.status, StatusCode::PRECONDITION_FAILED);
    let etag = server.read_item("b", "p").await.header("etag").to_string();
    let current = server
        .replace_item(
            "b",
            "p",
            json!({"id": "d", "pk": "p"}),
            &[("if-match", &etag)],
        )
        .await;
    assert_eq!(current.status, StatusCode::OK);
    assert_eq!(server.read_item("d", "p").await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_batch_replace_with_another_id_renames_the_item() {
    let server = Server::new();
    server.setup(partitioned()).await;
    server.create_item(json!({"id": "a", "pk": "p"})).await;
    server.create_item(json!({"id": "x", "pk": "p"})).await;
    let done = server
        .batch(
            json!([{"operationType": "Replace", "id": "a", "resourceBody": {"id": "b", "pk": "p"}}]),
            "[\"p\"]",
            &[],
        )
        .await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.body);
    assert_eq!(done.body[0]["statusCode"], json!(200));
    assert_eq!(done.body[0]["resourceBody"]["id"], json!("b"));
    assert_eq!(
        server.read_item("a", "p").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(server.read_item("b", "p").await.status, StatusCode::OK);
    let conflict = server
        .batch(
            json!([{"operationType": "Replace", "id": "b", "resourceBody": {"id": "x", "pk": "p"}}]),
            "[\"p\"]",
            &[],
        )
        .await;
    assert_eq!(conflict.status, StatusCode::MULTI_STATUS);
    assert_eq!(conflict.body[0]["statusCode"], json!(409));
    assert_eq!(server.read_item("b", "p").await.status, StatusCode::OK);
}

#[tokio::test]
async fn an_upsert_with_if_match_creates_a_missing_item_and_checks_an_existing_one() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let upsert = |body: Value, if_match: &'static str| {
        let server = &server;
        async move {
            server
                .send(
                    "POST",
                    "/dbs/db/colls/c/docs",
                    ("docs", "dbs/db/colls/c"),
                    Some(body),
                    &[
                        ("x-ms-documentdb-partitionkey", "[\"p\"]"),
                        ("x-ms-documentdb-is-upsert", "True"),
                        ("if-match", if_match),
                    ],
                )
                .await
        }
    };
    let created = upsert(
        json!({"id": "a", "pk": "p"}),
        "\"00000000-0000-0000-0000-000000000000\"",
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let star = upsert(json!({"id": "s", "pk": "p"}), "*").await;
    assert_eq!(star.status, StatusCode::CREATED, "{}", star.body);
    let stale = upsert(json!({"id": "a", "pk": "p", "v": 2}), "\"stale\"").await;
    assert_eq!(stale.status, StatusCode::PRECONDITION_FAILED);
    assert_eq!(server.read_item("a", "p").await.body.get("v"), None);
}

#[tokio::test]
async fn batch_request_checks_use_the_service_messages() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let empty = server.batch(json!([]), "[\"p\"]", &[]).await;
    check_error(
        &empty,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Batch request has no operations.",
    );
    let many: Vec<Value> = (0..101)
        .map(|n| json!({"operationType": "Create", "resourceBody": {"id": n.to_string(), "pk": "p"}}))
        .collect();
    let oversized = server.batch(Value::Array(many), "[\"p\"]", &[]).await;
    check_error(
        &oversized,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Batch request has more operations than what is supported.",
    );
    let hundred: Vec<Value> = (0..100)
        .map(|n| json!({"operationType": "Create", "resourceBody": {"id": n.to_string(), "pk": "p"}}))
        .collect();
    let full = server.batch(Value::Array(hundred), "[\"p\"]", &[]).await;
    assert_eq!(full.status, StatusCode::OK);
}

#[tokio::test]
async fn a_batch_with_a_partial_hierarchical_key_is_refused_as_a_whole() {
    let server = Server::new();
    server
        .setup(json!({"id": "c", "partitionKey": {"paths": ["/a", "/b"], "kind": "MultiHash", "version": 2}}))
        .await;
    let operations =
        json!([{"operationType": "Create", "resourceBody": {"id": "x", "a": "1", "b": "2"}}]);
    let partial = server.batch(operations.clone(), "[\"1\"]", &[]).await;
    check_error(
        &partial,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Partition key provided either doesn't correspond to definition in the collection or doesn't match partition key field values specified in the document.",
    );
    let whole = server.batch(operations, "[\"1\",\"2\"]", &[]).await;
    assert_eq!(whole.status, StatusCode::OK, "{}", whole.body);
}

#[tokio::test]
async fn a_batch_takes_one_lsn_and_its_session_token_matches_the_reads_around_it() {
    let server = Server::new();
    server.setup(partitioned()).await;
    for id in ["read", "replace", "delete"] {
        server.create_item(json!({"id": id, "pk": "p"})).await;
    }
    // A point read reports its item's LSN: the last one written is the container's.
    let before: u64 = server
        .read_item("delete", "p")
        .await
        .header("lsn")
        .parse()
        .expect("lsn");
    let done = server
        .batch(
            json!([
                {"operationType": "Create", "resourceBody": {"id": "new", "pk": "p"}},
                {"operationType": "Replace", "id": "replace", "resourceBody": {"id": "replace", "pk": "p", "v": 1}},
                {"operationType": "Upsert", "resourceBody": {"id": "up", "pk": "p"}},
                {"operationType": "Read", "id": "read"},
                {"operationType": "Delete", "id": "delete"},
            ]),
            "[\"p\"]",
            &[],
        )
        .await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.body);
    let lsn = before + 1;
    assert_eq!(done.header("lsn"), lsn.to_string());
    assert_eq!(done.header("x-ms-session-token"), format!("0:-1#{lsn}"));
    let after = server.read_item("new", "p").await;
    assert_eq!(after.header("lsn"), lsn.to_string());
    assert_eq!(after.header("x-ms-session-token"), format!("0:-1#{lsn}"));
    // A batch of reads writes nothing: the LSN stays.
    let reads = server
        .batch(
            json!([{"operationType": "Read", "id": "read"}]),
            "[\"p\"]",
            &[],
        )
        .await;
    assert_eq!(reads.header("lsn"), lsn.to_string());
    // A failed batch leaves the LSN where it was.
    let failed = server
        .batch(
            json!([
                {"operationType": "Create", "resourceBody": {"id": "other", "pk": "p"}},
                {"operationType": "Create", "resourceBody": {"id": "new", "pk": "p"}},
            ]),
            "[\"p\"]",
            &[],
        )
        .await;
    assert_eq!(failed.status, StatusCode::MULTI_STATUS);
    assert_eq!(failed.header("lsn"), lsn.to_string());
    let next = server.create_item(json!({"id": "later", "pk": "p"})).await;
    assert_eq!(next.header("lsn"), (lsn + 1).to_string());
}
