//! In-process HTTP tests: the router driven without a socket, checking exact statuses, the
//! headers the SDKs read, and Cosmos-shaped bodies. Time is the engine's manual clock.

use crate::auth::MasterKey;
use crate::cli::EMULATOR_KEY;
use crate::{app, AppState};
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use lethedb_engine::{Engine, EngineConfig, ManualClock};
use lethedb_storage::MemoryStore;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};
use tower::ServiceExt;

const START_MS: i64 = 1_800_000_000_000;

struct Server {
    router: Router,
    clock: Arc<ManualClock>,
    key: MasterKey,
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
}

impl Answer {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

impl Server {
    fn new() -> Server {
        let clock = Arc::new(ManualClock::new(START_MS));
        let engine = Engine::open(
            Arc::new(MemoryStore::new()),
            clock.clone(),
            EngineConfig::default(),
        )
        .expect("engine");
        let key = MasterKey::from_base64(EMULATOR_KEY).expect("key");
        let metrics = Some(Arc::new(crate::metrics::Metrics::new(engine.clone())));
        let router = app(AppState {
            metrics,
            metrics_route: true,
            engine,
            key: key.clone(),
            certificate_pem: None,
        });
        Server { router, clock, key }
    }

    fn date(&self, offset_secs: i64) -> String {
        let secs = (START_MS / 1000) + offset_secs + (self.clock_ms() - START_MS) / 1000;
        httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs as u64))
    }

    fn clock_ms(&self) -> i64 {
        use lethedb_engine::Clock;
        self.clock.now_ms()
    }

    /// Sends a request signed for `resource_type` and `link`, with extra headers.
    async fn send(
        &self,
        method: &str,
        path: &str,
        signed: (&str, &str),
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Answer {
        let date = self.date(0);
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "127.0.0.1:8081")
            .header("x-ms-date", &date)
            .header(
                "authorization",
                self.key
                    .authorization_header(method, signed.0, signed.1, &date),
            );
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let body = body.map_or(Body::empty(), |b| Body::from(b.to_string()));
        self.raw(request.body(body).expect("request")).await
    }

    async fn raw(&self, request: Request<Body>) -> Answer {
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("response");
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            // Metrics are text; everything else must be JSON, which the tests check field by field.
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Answer {
            status,
            headers,
            body,
        }
    }

    async fn setup(&self, container: Value) {
        let created = self
            .send("POST", "/dbs", ("dbs", ""), Some(json!({"id": "db"})), &[])
            .await;
        assert_eq!(created.status, StatusCode::CREATED);
        let created = self
            .send(
                "POST",
                "/dbs/db/colls",
                ("colls", "dbs/db"),
                Some(container),
                &[],
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    }

    async fn create_item(&self, item: Value) -> Answer {
        let pk = json!([item["pk"]]).to_string();
        self.send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(item),
            &[("x-ms-documentdb-partitionkey", &pk)],
        )
        .await
    }

    async fn read_item(&self, id: &str, pk: &str) -> Answer {
        let pk = json!([pk]).to_string();
        self.send(
            "GET",
            &format!("/dbs/db/colls/c/docs/{id}"),
            ("docs", &format!("dbs/db/colls/c/docs/{id}")),
            None,
            &[("x-ms-documentdb-partitionkey", &pk)],
        )
        .await
    }

    async fn query(&self, text: &str, headers: &[(&str, &str)]) -> Answer {
        let mut all = vec![
            ("content-type", "application/query+json"),
            ("x-ms-documentdb-isquery", "True"),
            ("x-ms-documentdb-query-enablecrosspartition", "True"),
        ];
        all.extend_from_slice(headers);
        self.send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"query": text, "parameters": []})),
            &all,
        )
        .await
    }
}

/// Checks a Cosmos error: exact status and code, and a message containing `message_part`.
fn check_error(answer: &Answer, status: StatusCode, code: &str, message_part: &str) {
    assert_eq!(answer.status, status, "{}", answer.body);
    assert_eq!(answer.body["code"], json!(code), "{}", answer.body);
    let message = answer.body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(message_part),
        "message {message:?} lacks {message_part:?}"
    );
    assert_eq!(answer.header("content-type"), "application/json");
    assert!(!answer.header("x-ms-activity-id").is_empty());
}

fn partitioned() -> Value {
    json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2}})
}

#[tokio::test]
async fn the_account_names_the_endpoint_the_client_used() {
    let server = Server::new();
    let answer = server.send("GET", "/", ("", ""), None, &[]).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(
        answer.body["writableLocations"][0]["databaseAccountEndpoint"],
        json!("http://127.0.0.1:8081/")
    );
    assert_eq!(
        answer.body["userConsistencyPolicy"]["defaultConsistencyLevel"],
        json!("Session")
    );
    assert!(answer.body["queryEngineConfiguration"].is_string());
    assert_eq!(answer.header("x-ms-schemaversion"), "1.18");
}

#[tokio::test]
async fn authorization_failures() {
    let server = Server::new();
    let unsigned = server
        .raw(Request::get("/dbs").body(Body::empty()).expect("request"))
        .await;
    check_error(
        &unsigned,
        StatusCode::UNAUTHORIZED,
        "Unauthorized",
        "authorization is missing",
    );
    let date = server.date(0);
    let other_key = MasterKey::from_base64("c2VjcmV0LWtleS1mb3ItdGVzdHM=").expect("key");
    let wrong = Request::get("/dbs")
        .header("x-ms-date", &date)
        .header(
            "authorization",
            other_key.authorization_header("GET", "dbs", "", &date),
        )
        .body(Body::empty())
        .expect("request");
    check_error(
        &server.raw(wrong).await,
        StatusCode::UNAUTHORIZED,
        "Unauthorized",
        "wrong key",
    );
    // Signed for another resource.
    let misdirected = server
        .send("GET", "/dbs/x", ("dbs", "dbs/y"), None, &[])
        .await;
    check_error(
        &misdirected,
        StatusCode::UNAUTHORIZED,
        "Unauthorized",
        "dbs/x",
    );
    let old = server.date(-16 * 60);
    let stale = Request::get("/dbs")
        .header("x-ms-date", &old)
        .header(
            "authorization",
            server.key.authorization_header("GET", "dbs", "", &old),
        )
        .body(Body::empty())
        .expect("request");
    check_error(
        &server.raw(stale).await,
        StatusCode::FORBIDDEN,
        "Forbidden",
        "not valid at the current time",
    );
}

#[tokio::test]
async fn malformed_requests_get_cosmos_errors() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let unknown = server
        .send(
            "GET",
            "/nothing/here",
            ("nothing", "nothing/here"),
            None,
            &[],
        )
        .await;
    check_error(&unknown, StatusCode::NOT_FOUND, "NotFound", "not supported");
    assert!(
        unknown.headers.get("x-ms-substatus").is_none(),
        "a plain 404 has no substatus"
    );
    let wrong_method = server
        .send("PUT", "/dbs", ("dbs", ""), Some(json!({})), &[])
        .await;
    check_error(
        &wrong_method,
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        "PUT",
    );
    let date = server.date(0);
    let bad_json = Request::post("/dbs")
        .header("x-ms-date", &date)
        .header(
            "authorization",
            server.key.authorization_header("POST", "dbs", "", &date),
        )
        .body(Body::from("{\"id\": "))
        .expect("request");
    check_error(
        &server.raw(bad_json).await,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "invalid JSON",
    );
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let date = server.date(0);
    let too_deep = Request::post("/dbs")
        .header("x-ms-date", &date)
        .header(
            "authorization",
            server.key.authorization_header("POST", "dbs", "", &date),
        )
        .body(Body::from(format!("{{\"id\": \"x\", \"deep\": {deep}}}")))
        .expect("request");
    check_error(
        &server.raw(too_deep).await,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "recursion limit",
    );
    let no_id = server.create_item(json!({"pk": "a"})).await;
    check_error(&no_id, StatusCode::BAD_REQUEST, "BadRequest", "'id");
    let slash = server.create_item(json!({"id": "a/b", "pk": "a"})).await;
    check_error(&slash, StatusCode::BAD_REQUEST, "BadRequest", "not allowed");
    let long = server
        .create_item(json!({"id": "x".repeat(256), "pk": "a"}))
        .await;
    check_error(&long, StatusCode::BAD_REQUEST, "BadRequest", "255");
    let mismatch = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"id": "m", "pk": "a"})),
            &[("x-ms-documentdb-partitionkey", "[\"b\"]")],
        )
        .await;
    check_error(
        &mismatch,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "doesn't match",
    );
    let big = server
        .create_item(json!({"id": "big", "pk": "a", "blob": "x".repeat(2 * 1024 * 1024)}))
        .await;
    check_error(
        &big,
        StatusCode::PAYLOAD_TOO_LARGE,
        "RequestEntityTooLarge",
        "too large",
    );
    let huge = server
        .create_item(json!({"id": "huge", "pk": "a", "blob": "x".repeat(3 * 1024 * 1024)}))
        .await;
    check_error(
        &huge,
        StatusCode::PAYLOAD_TOO_LARGE,
        "RequestEntityTooLarge",
        "too large",
    );
    let bad_query = server.query("SELECT * FROM c WHERE", &[]).await;
    check_error(&bad_query, StatusCode::BAD_REQUEST, "BadRequest", "");
    // Nothing of the failed writes was stored.
    let all = server.query("SELECT VALUE COUNT(1) FROM c", &[]).await;
    assert_eq!(all.body["Documents"], json!([0]));
}

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
    check_error(
        &cross,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Cross partition query is required",
    );
    let plan = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"query": "SELECT DISTINCT c.v FROM c"})),
            &[("x-ms-cosmos-is-query-plan-request", "True")],
        )
        .await;
    assert_eq!(plan.body["queryInfo"]["distinctType"], json!("None"));
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
        server.query("SELECT VALUE COUNT(1) FROM c", &[]).await.body["Documents"],
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
        server.query("SELECT VALUE COUNT(1) FROM c", &[]).await.body["Documents"],
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

#[tokio::test]
async fn throughput_offers_and_429() {
    let server = Server::new();
    let created = server
        .send("POST", "/dbs", ("dbs", ""), Some(json!({"id": "db"})), &[])
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let bad = server
        .send(
            "POST",
            "/dbs/db/colls",
            ("colls", "dbs/db"),
            Some(partitioned()),
            &[("x-ms-offer-throughput", "450")],
        )
        .await;
    check_error(
        &bad,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "multiple of 100",
    );
    let created = server
        .send(
            "POST",
            "/dbs/db/colls",
            ("colls", "dbs/db"),
            Some(partitioned()),
            &[("x-ms-offer-throughput", "400")],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let offers = server
        .send("GET", "/offers", ("offers", ""), None, &[])
        .await;
    let offer = offers.body["Offers"][0].clone();
    assert_eq!(offer["content"]["offerThroughput"], json!(400));
    assert_eq!(offer["offerResourceId"], created.body["_rid"]);
    // Found by the query the SDKs send.
    let link = offer["resource"].as_str().expect("resource").to_string();
    let found = server
        .send(
            "POST",
            "/offers",
            ("offers", ""),
            Some(json!({"query": "SELECT * FROM root r WHERE r.resource = @link", "parameters": [{"name": "@link", "value": link}]})),
            &[("content-type", "application/query+json"), ("x-ms-documentdb-isquery", "True")],
        )
        .await;
    assert_eq!(found.body["Offers"].as_array().map(Vec::len), Some(1));
    // Spend the second's 400 RU: the next request is refused with a retry hint.
    let mut refused = None;
    for i in 0..200 {
        let answer = server
            .create_item(json!({"id": format!("i{i}"), "pk": "p"}))
            .await;
        if answer.status == StatusCode::TOO_MANY_REQUESTS {
            refused = Some(answer);
            break;
        }
        assert_eq!(answer.status, StatusCode::CREATED);
    }
    let refused = refused.expect("a 429 within 400 RU of writes");
    check_error(
        &refused,
        StatusCode::TOO_MANY_REQUESTS,
        "TooManyRequests",
        "Request rate is large",
    );
    assert_eq!(refused.header("x-ms-substatus"), "3200");
    assert!(
        refused
            .header("x-ms-retry-after-ms")
            .parse::<i64>()
            .expect("retry")
            > 0
    );
    server.clock.advance_ms(1_000);
    assert_eq!(
        server
            .create_item(json!({"id": "later", "pk": "p"}))
            .await
            .status,
        StatusCode::CREATED
    );
    // Raising the throughput through the offer raises the budget.
    let id = offer["id"].as_str().expect("id").to_string();
    let mut replaced = offer.clone();
    replaced["content"]["offerThroughput"] = json!(10_000);
    let answer = server
        .send(
            "PUT",
            &format!("/offers/{id}"),
            ("offers", &id.to_ascii_lowercase()),
            Some(replaced),
            &[],
        )
        .await;
    assert_eq!(
        (
            answer.status,
            answer.body["content"]["offerThroughput"].clone()
        ),
        (StatusCode::OK, json!(10_000))
    );
    server.clock.advance_ms(1_000);
    for i in 0..200 {
        assert_eq!(
            server
                .create_item(json!({"id": format!("more{i}"), "pk": "p"}))
                .await
                .status,
            StatusCode::CREATED
        );
    }
    let metrics = server
        .raw(
            Request::get("/metrics")
                .body(Body::empty())
                .expect("request"),
        )
        .await;
    assert_eq!(metrics.status, StatusCode::OK);
    let text = metrics.body.as_str().expect("text").to_string();
    for expected in [
        "lethedb_requests_total{operation=\"Create\",status=\"201\"}",
        "lethedb_throttled_requests_total{database=\"db\",container=\"c\"} 1",
        "lethedb_items{database=\"db\",container=\"c\"}",
        "lethedb_ttl_backlog_items{database=\"db\",container=\"c\"} 0",
        "lethedb_commit_duration_seconds_bucket",
        "lethedb_writer_queue_depth",
        "lethedb_request_units_total{database=\"db\",container=\"c\"}",
    ] {
        assert!(text.contains(expected), "{expected} missing from:\n{text}");
    }
}
