//! Response headers the service sends on some operations only: `Content-Location`, and the
//! container's quota, usage and index-transformation headers.

use super::*;

#[tokio::test]
async fn content_location_names_the_request_url_on_reads_replaces_and_deletes() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let created = server.create_item(json!({"id": "a", "pk": "p"})).await;
    assert_eq!(created.status, StatusCode::CREATED);
    // Creates (POST, 201) carry none, as in the REST reference's examples.
    assert_eq!(created.headers.get("content-location"), None);

    let read = server.read_item("a", "p").await;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(
        read.header("content-location"),
        "http://127.0.0.1:8081/dbs/db/colls/c/docs/a"
    );
    let pk = json!(["p"]).to_string();
    let item_link = ("docs", "dbs/db/colls/c/docs/a");
    let replaced = server
        .send(
            "PUT",
            "/dbs/db/colls/c/docs/a",
            item_link,
            Some(json!({"id": "a", "pk": "p", "v": 2})),
            &[("x-ms-documentdb-partitionkey", &pk)],
        )
        .await;
    assert_eq!(replaced.status, StatusCode::OK);
    assert_eq!(
        replaced.header("content-location"),
        "http://127.0.0.1:8081/dbs/db/colls/c/docs/a"
    );
    let feed = server
        .send("GET", "/dbs/db/colls", ("colls", "dbs/db"), None, &[])
        .await;
    assert_eq!(
        feed.header("content-location"),
        "http://127.0.0.1:8081/dbs/db/colls"
    );
    let container = server
        .send(
            "GET",
            "/dbs/db/colls/c",
            ("colls", "dbs/db/colls/c"),
            None,
            &[],
        )
        .await;
    assert_eq!(
        container.header("content-location"),
        "http://127.0.0.1:8081/dbs/db/colls/c"
    );
    let query = server.query("SELECT * FROM c", &[]).await;
    assert_eq!(query.status, StatusCode::OK);
    assert_eq!(query.headers.get("content-location"), None);
    let deleted = server
        .send(
            "DELETE",
            "/dbs/db/colls/c/docs/a",
            item_link,
            None,
            &[("x-ms-documentdb-partitionkey", &pk)],
        )
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    assert_eq!(
        deleted.header("content-location"),
        "http://127.0.0.1:8081/dbs/db/colls/c/docs/a"
    );
    // Failures carry none.
    let missing = server.read_item("a", "p").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.headers.get("content-location"), None);
    let account = server.send("GET", "/", ("", ""), None, &[]).await;
    assert_eq!(account.headers.get("content-location"), None);
}

#[tokio::test]
async fn content_location_names_the_loopback_host_the_client_addressed() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let read_as = |host: &'static str| {
        let date = server.date(0);
        let authorization = server
            .key
            .authorization_header("GET", "dbs", "dbs/db", &date);
        server.raw(
            Request::builder()
                .uri("/dbs/db")
                .header("host", host)
                .header("x-ms-date", date)
                .header("authorization", authorization)
                .body(Body::empty())
                .expect("request"),
        )
    };
    // The server's endpoint is 127.0.0.1:8081; a client of localhost is told localhost.
    let local = read_as("localhost:8081").await;
    assert_eq!(local.status, StatusCode::OK, "{}", local.body);
    assert_eq!(
        local.header("content-location"),
        "http://localhost:8081/dbs/db"
    );
    // A host that is not a loopback name is never echoed: the endpoint stands.
    let other = read_as("proxy.internal:9000").await;
    assert_eq!(other.status, StatusCode::OK, "{}", other.body);
    assert_eq!(
        other.header("content-location"),
        "http://127.0.0.1:8081/dbs/db"
    );
}

#[tokio::test]
async fn content_location_keeps_the_path_as_addressed() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let database = server
        .send("GET", "/dbs/db", ("dbs", "dbs/db"), None, &[])
        .await;
    let rid = database.body["_rid"].as_str().expect("rid").to_string();
    let by_rid = server
        .send(
            "GET",
            &format!("/dbs/{rid}"),
            ("dbs", &rid.to_lowercase()),
            None,
            &[],
        )
        .await;
    assert_eq!(by_rid.status, StatusCode::OK, "{}", by_rid.body);
    assert_eq!(
        by_rid.header("content-location"),
        format!("http://127.0.0.1:8081/dbs/{rid}")
    );
}

#[tokio::test]
async fn container_reads_report_index_progress_and_quota_on_request() {
    let server = Server::new();
    server.setup(partitioned()).await;
    server.create_item(json!({"id": "a", "pk": "p"})).await;
    let link = ("colls", "dbs/db/colls/c");
    let plain = server.send("GET", "/dbs/db/colls/c", link, None, &[]).await;
    assert_eq!(
        plain.header("x-ms-documentdb-collection-index-transformation-progress"),
        "100"
    );
    assert_eq!(
        plain.header("x-ms-resource-quota"),
        "documentSize=10240;documentsSize=10485760;documentsCount=-1;collectionSize=10485760;"
    );
    let quota = server
        .send(
            "GET",
            "/dbs/db/colls/c",
            link,
            None,
            &[("x-ms-documentdb-populatequotainfo", "true")],
        )
        .await;
    assert_eq!(
        quota.header("x-ms-resource-quota"),
        "functions=25;storedProcedures=100;triggers=25;documentSize=10240;documentsSize=10485760;documentsCount=-1;collectionSize=10485760;"
    );
    assert_eq!(
        quota.header("x-ms-resource-usage"),
        "functions=0;storedProcedures=0;triggers=0;documentSize=0;documentsSize=1;documentsCount=1;collectionSize=1;"
    );
}

#[tokio::test]
async fn the_continuation_token_limit_is_checked_and_honoured() {
    let server = Server::new();
    server.setup(partitioned()).await;
    for n in 0..3 {
        server
            .create_item(json!({"id": format!("i{n}"), "pk": "p"}))
            .await;
    }
    let limit = "x-ms-documentdb-responsecontinuationtokenlimitinkb";
    let page = |value: &'static str| {
        let server = &server;
        async move {
            server
                .query(
                    "SELECT * FROM c",
                    &[("x-ms-max-item-count", "1"), (limit, value)],
                )
                .await
        }
    };
    let fits = page("1").await;
    assert_eq!(fits.status, StatusCode::OK, "{}", fits.body);
    assert!(!fits.header("x-ms-continuation").is_empty());
    let zero = page("0").await;
    check_error(
        &zero,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "The continuation token limit specified is not large enough to serialize the required attributes into the continuation token. Please provide a higher limit.",
    );
    for bad in ["-1", "1.5", "many"] {
        let refused = page(bad).await;
        check_error(&refused, StatusCode::BAD_REQUEST, "BadRequest", limit);
    }
    // A last page has no token to limit.
    let all = server.query("SELECT * FROM c", &[(limit, "0")]).await;
    assert_eq!(all.status, StatusCode::OK);
    // A token longer than a positive limit is sent whole (the service's always fits).
    // Two items with `s`: the ORDER BY leaves out items without it (default policy).
    for (id, letter) in [("long", "x"), ("longer", "w")] {
        server
            .create_item(json!({"id": id, "pk": "p", "s": letter.repeat(3000)}))
            .await;
    }
    let ordered = server
        .query(
            "SELECT c.id FROM c ORDER BY c.s DESC",
            &[
                ("x-ms-documentdb-partitionkey", "[\"p\"]"),
                ("x-ms-max-item-count", "1"),
                (limit, "1"),
            ],
        )
        .await;
    assert_eq!(ordered.status, StatusCode::OK, "{}", ordered.body);
    assert!(ordered.header("x-ms-continuation").len() > 1024);
    // Read feeds too.
    let feed = server
        .send(
            "GET",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            None,
            &[("x-ms-max-item-count", "1"), (limit, "0")],
        )
        .await;
    assert_eq!(feed.status, StatusCode::BAD_REQUEST);
}
