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
