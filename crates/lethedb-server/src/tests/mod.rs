//! In-process HTTP tests: the router driven without a socket, checking exact statuses, the
//! headers the SDKs read, and Cosmos-shaped bodies. Time is the engine's manual clock.
//!
//! This file holds the shared test server and checks; each resource area has its own file.

mod access;
mod binary_bodies;
mod bodies;
mod change_feed;
mod children;
mod client_encryption;
mod compatibility;
mod container_policies;
mod containers;
mod errors;
mod explorer;
mod failing_storage;
mod faults;
mod grant_table;
mod head;
mod headers;
mod health;
mod hostile;
mod index_check;
mod items;
mod operations;
mod query_metrics;
mod query_plans;
mod ranges;
mod router;
mod scripts_resources;
mod sdk_rules;
mod throughput;
mod throughput_buckets;
mod tokens;
mod users;
mod writes;

use crate::cli::EMULATOR_KEY;
use crate::{app, AppState};
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use lethedb_auth::MasterKey;
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
    /// The body exactly as sent, for checks on the JSON text itself.
    bytes: axum::body::Bytes,
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
        Server::with(|_| {})
    }

    /// A server whose state `configure` may change first (metrics off, a certificate, ...).
    fn with(configure: impl FnOnce(&mut AppState)) -> Server {
        Server::on_store(Arc::new(MemoryStore::new()), configure)
    }

    /// A server over `store` (a fault-injecting one, say).
    fn on_store(
        store: Arc<dyn lethedb_storage::Storage>,
        configure: impl FnOnce(&mut AppState),
    ) -> Server {
        let clock = Arc::new(ManualClock::new(START_MS));
        let engine = Engine::open(store, clock.clone(), EngineConfig::new(crate::wire_status))
            .expect("engine");
        let key = MasterKey::from_base64(EMULATOR_KEY).expect("key");
        let metrics = Some(Arc::new(crate::metrics::Metrics::new(engine.clone())));
        let mut state = AppState {
            entra_id: true,
            faults: Default::default(),
            seed: None,
            metrics,
            metrics_route: crate::MetricsRoute::Served,
            engine,
            key: key.clone(),
            certificate_pem: None,
            endpoint: "http://127.0.0.1:8081/".into(),
            gateway: crate::Gateway::Routing,
        };
        configure(&mut state);
        let router = app(state);
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
        let body = body.map(|b| b.to_string().into_bytes());
        self.send_bytes(method, path, signed, body, headers).await
    }

    /// Sends a request whose body is the given bytes as they are (binary JSON, say).
    async fn send_bytes(
        &self,
        method: &str,
        path: &str,
        signed: (&str, &str),
        body: Option<Vec<u8>>,
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
        let body = body.map_or(Body::empty(), Body::from);
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
            bytes,
        }
    }

    async fn setup(&self, container: Value) {
        let created = self
            .send("POST", "/dbs", ("dbs", ""), Some(json!({"id": "db"})), &[])
            .await;
        assert_eq!(created.status, StatusCode::CREATED);
        let created = self.create_container(container, &[]).await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    }

    /// Creates a container in database `db` (which must exist).
    async fn create_container(&self, container: Value, headers: &[(&str, &str)]) -> Answer {
        self.send(
            "POST",
            "/dbs/db/colls",
            ("colls", "dbs/db"),
            Some(container),
            headers,
        )
        .await
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

    /// A PUT of `body` on the item `id` (partition key value `pk`), with extra headers.
    async fn replace_item(
        &self,
        id: &str,
        pk: &str,
        body: Value,
        headers: &[(&str, &str)],
    ) -> Answer {
        let pk = json!([pk]).to_string();
        let mut all = vec![("x-ms-documentdb-partitionkey", pk.as_str())];
        all.extend_from_slice(headers);
        self.send(
            "PUT",
            &format!("/dbs/db/colls/c/docs/{id}"),
            ("docs", &format!("dbs/db/colls/c/docs/{id}")),
            Some(body),
            &all,
        )
        .await
    }

    /// A batch request with the request-level partition key header `pk` (JSON text).
    async fn batch(&self, operations: Value, pk: &str, headers: &[(&str, &str)]) -> Answer {
        let mut all = vec![
            ("x-ms-cosmos-is-batch-request", "True"),
            ("x-ms-documentdb-partitionkey", pk),
        ];
        all.extend_from_slice(headers);
        self.send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(operations),
            &all,
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

/// The header of a query the SDKs send to one partition key range (after a plan), which the
/// server runs whole rather than answering with the plan.
const ONE_RANGE: &[(&str, &str)] = &[("x-ms-documentdb-partitionkeyrangeid", "0")];

fn partitioned() -> Value {
    json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2}})
}
