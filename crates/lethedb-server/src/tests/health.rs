//! The health probes: `/alive`, `/ready` and `/status` answer without a signature, say whether
//! the engine serves (a poisoned store makes `/ready` 503 and `/status` not ready), reveal no
//! key, and leave every other method on their paths to the Cosmos dispatcher.

use super::{Answer, Server, StatusCode};
use crate::cli::EMULATOR_KEY;
use axum::body::Body;
use axum::http::Request;
use lethedb_storage::{FailingStore, FaultPlan, MemoryStore};
use serde_json::json;
use std::sync::Arc;

async fn unsigned(server: &Server, method: &str, path: &str) -> Answer {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "127.0.0.1:8081")
        .body(Body::empty())
        .expect("request");
    server.raw(request).await
}

#[tokio::test]
async fn the_probes_answer_without_a_signature_while_the_engine_serves() {
    let server = Server::new();
    let alive = unsigned(&server, "GET", "/alive").await;
    assert_eq!(alive.status, StatusCode::OK);
    assert_eq!(alive.body, json!({"status": "alive"}));
    let ready = unsigned(&server, "GET", "/ready").await;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.body);
    assert_eq!(ready.body, json!({"status": "ready"}));
    let status = unsigned(&server, "GET", "/status").await;
    assert_eq!(status.status, StatusCode::OK);
    assert_eq!(status.body["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(status.body["store"], "memory");
    assert_eq!(status.body["ready"], true);
    assert!(status.body["uptimeSeconds"]
        .as_f64()
        .is_some_and(|s| s >= 0.0));
    for answer in [&alive, &ready, &status] {
        let text = String::from_utf8_lossy(&answer.bytes);
        assert!(
            !text.contains(EMULATOR_KEY),
            "a probe shows the key: {text}"
        );
        assert_eq!(answer.header("content-type"), "application/json");
    }
}

#[tokio::test]
async fn a_poisoned_store_is_not_ready_but_still_alive() {
    // The open's commit (the change log's layout marker, `feed/log_layout.rs`) and the
    // catalog's two commits succeed; the first item's commit fails and poisons the engine.
    let server = Server::on_store(
        Arc::new(FailingStore::new(
            MemoryStore::new(),
            FaultPlan {
                fail_commit: Some(4),
                ..FaultPlan::default()
            },
        )),
        |_| {},
    );
    server
        .setup(json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}))
        .await;
    let refused = server.create_item(json!({"id": "a", "pk": "p"})).await;
    assert_eq!(
        refused.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        refused.body
    );
    let ready = unsigned(&server, "GET", "/ready").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(ready.body["status"], "unavailable");
    assert_eq!(
        ready.body["reason"],
        "the store is poisoned: restart the server"
    );
    let status = unsigned(&server, "GET", "/status").await;
    assert_eq!(status.status, StatusCode::OK);
    assert_eq!(status.body["ready"], false);
    assert_eq!(status.body["reason"], ready.body["reason"]);
    assert_eq!(
        unsigned(&server, "GET", "/alive").await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn other_methods_on_the_probe_paths_are_cosmos_requests() {
    let server = Server::new();
    for (method, path) in [
        ("POST", "/alive"),
        ("HEAD", "/ready"),
        ("DELETE", "/status"),
    ] {
        let answer = unsigned(&server, method, path).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{method} {path}");
    }
}
