//! The composed router: the internal endpoints by path, their answers when turned off, wrong
//! methods falling through to the Cosmos dispatcher, the metrics port's own router, and the
//! operation labels the metrics count.

use super::*;

/// Checks the headers every response carries, internal endpoints included.
fn check_common_headers(answer: &Answer) {
    assert_eq!(answer.header("x-ms-schemaversion"), "1.18");
    assert_eq!(answer.header("x-ms-serviceversion"), "version=2.14.0.0");
    assert!(!answer.header("x-ms-activity-id").is_empty());
    assert!(!answer.header("x-ms-request-charge").is_empty());
}

async fn get(server: &Server, path: &str) -> Answer {
    server
        .raw(Request::get(path).body(Body::empty()).expect("request"))
        .await
}

/// The statistics, signed with the master key as a Cosmos path of type `_lethedb`.
async fn signed_stats(server: &Server) -> Answer {
    server
        .send(
            "GET",
            "/_lethedb/stats",
            ("_lethedb", "_lethedb/stats"),
            None,
            &[],
        )
        .await
}

#[tokio::test]
async fn the_statistics_answer_only_the_master_key_and_metrics_no_signature() {
    let server = Server::new();
    let stats = signed_stats(&server).await;
    assert_eq!(stats.status, StatusCode::OK);
    assert_eq!(stats.header("content-type"), "application/json");
    assert_eq!(
        stats.body,
        json!({"writer": {"operations": 0, "commits": 0, "queued": 0, "lanes": 1}, "containers": [], "poisoned": null})
    );
    check_common_headers(&stats);
    let unsigned = get(&server, "/_lethedb/stats").await;
    check_error(
        &unsigned,
        StatusCode::UNAUTHORIZED,
        "Unauthorized",
        "authorization is missing",
    );
    check_common_headers(&unsigned);
    // Signed for another path, another verb or with another key: the 401 of any Cosmos path.
    let wrong_key = MasterKey::from_base64("c2VjcmV0LWtleQ==").expect("key");
    let date = server.date(0);
    for authorization in [
        server.key.authorization_header("GET", "", "", &date),
        server
            .key
            .authorization_header("GET", "dbs", "_lethedb/stats", &date),
        server
            .key
            .authorization_header("POST", "_lethedb", "_lethedb/stats", &date),
        wrong_key.authorization_header("GET", "_lethedb", "_lethedb/stats", &date),
    ] {
        let refused = server
            .raw(
                Request::get("/_lethedb/stats")
                    .header("x-ms-date", &date)
                    .header("authorization", authorization)
                    .body(Body::empty())
                    .expect("request"),
            )
            .await;
        check_error(
            &refused,
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            "'get\n_lethedb\n_lethedb/stats\n",
        );
    }
    let stale = server
        .raw(
            Request::get("/_lethedb/stats")
                .header("x-ms-date", server.date(-3600))
                .header(
                    "authorization",
                    server.key.authorization_header(
                        "GET",
                        "_lethedb",
                        "_lethedb/stats",
                        &server.date(-3600),
                    ),
                )
                .body(Body::empty())
                .expect("request"),
        )
        .await;
    check_error(
        &stale,
        StatusCode::FORBIDDEN,
        "Forbidden",
        "not valid at the current time",
    );
    let metrics = get(&server, "/metrics").await;
    assert_eq!(metrics.status, StatusCode::OK);
    assert_eq!(
        metrics.header("content-type"),
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = metrics.body.as_str().expect("text");
    assert!(text.contains("lethedb_writer_queue_depth"), "{text}");
    check_common_headers(&metrics);
    let activity = server
        .send(
            "GET",
            "/_lethedb/stats",
            ("_lethedb", "_lethedb/stats"),
            None,
            &[("x-ms-activity-id", "0b5cd4b4-7a31-4f5e-9d6a-1a2b3c4d5e6f")],
        )
        .await;
    assert_eq!(
        activity.header("x-ms-activity-id"),
        "0b5cd4b4-7a31-4f5e-9d6a-1a2b3c4d5e6f",
        "the client's activity id is echoed"
    );
}

#[tokio::test]
async fn a_resource_token_may_not_read_the_statistics() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let token = server
        .permission(
            "p",
            json!({"permissionMode": "All", "resource": "dbs/db"}),
            &[],
        )
        .await;
    let refused = server
        .send_as(&token, "GET", "/_lethedb/stats", None, &[])
        .await;
    check_error(
        &refused,
        StatusCode::FORBIDDEN,
        "Forbidden",
        "Only the master key may read /_lethedb/stats.",
    );
}

#[tokio::test]
async fn metrics_on_a_main_port_beyond_loopback_are_refused_unless_public() {
    let server = Server::with(|state| state.metrics_route = crate::MetricsRoute::LoopbackOnly);
    let refused = get(&server, "/metrics").await;
    check_error(
        &refused,
        StatusCode::FORBIDDEN,
        "Forbidden",
        "Start it with --metrics-public",
    );
    check_common_headers(&refused);
    assert!(!refused.bytes.windows(8).any(|w| w == b"lethedb_"));
    // Other methods are Cosmos requests, as on any server.
    let post = server
        .raw(
            Request::post("/metrics")
                .body(Body::empty())
                .expect("request"),
        )
        .await;
    check_error(
        &post,
        StatusCode::UNAUTHORIZED,
        "Unauthorized",
        "authorization is missing",
    );
}

#[tokio::test]
async fn the_certificate_is_served_only_in_tls_mode() {
    let without = Server::new();
    let missing = get(&without, "/_explorer/emulator.pem").await;
    check_error(
        &missing,
        StatusCode::NOT_FOUND,
        "NotFound",
        "This server does not serve TLS, so it has no certificate.",
    );
    check_common_headers(&missing);
    let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    let with = Server::with(|state| state.certificate_pem = Some(Arc::new(pem.to_string())));
    let served = get(&with, "/_explorer/emulator.pem").await;
    assert_eq!(served.status, StatusCode::OK);
    assert_eq!(served.header("content-type"), "application/x-pem-file");
    assert_eq!(served.bytes, pem.as_bytes());
    check_common_headers(&served);
}

#[tokio::test]
async fn metrics_turned_off_or_moved_elsewhere() {
    let off = Server::with(|state| state.metrics = None);
    let answer = get(&off, "/metrics").await;
    check_error(
        &answer,
        StatusCode::NOT_FOUND,
        "NotFound",
        "Metrics are turned off on this server.",
    );
    check_common_headers(&answer);
    // With metrics on a port of their own, the main port treats /metrics as a Cosmos path.
    let moved = Server::with(|state| state.metrics_route = crate::MetricsRoute::OwnPort);
    check_error(
        &get(&moved, "/metrics").await,
        StatusCode::UNAUTHORIZED,
        "Unauthorized",
        "authorization is missing",
    );
    let signed = moved
        .send("GET", "/metrics", ("metrics", ""), None, &[])
        .await;
    check_error(
        &signed,
        StatusCode::NOT_FOUND,
        "NotFound",
        "The resource type 'metrics' at '' is not supported by LetheDB.",
    );
}

#[tokio::test]
async fn other_methods_and_paths_near_internal_endpoints_are_cosmos_requests() {
    let server = Server::new();
    for (method, path) in [
        ("POST", "/metrics"),
        ("HEAD", "/metrics"),
        ("DELETE", "/_lethedb/stats"),
        ("POST", "/_explorer/emulator.pem"),
        // `GET /_explorer` redirects to the page (tests/explorer.rs); other names are Cosmos.
        ("GET", "/_explorer/other"),
        ("HEAD", "/_explorer/"),
        ("GET", "/_lethedb/ttl"),
        ("POST", "/_lethedb/ttl/dbs/db/colls/c"),
        ("GET", "/metrics/"),
    ] {
        let unsigned = server
            .raw(
                Request::builder()
                    .method(method)
                    .uri(path)
                    .body(Body::empty())
                    .expect("request"),
            )
            .await;
        assert_eq!(unsigned.status, StatusCode::UNAUTHORIZED, "{method} {path}");
        if method != "HEAD" {
            check_error(
                &unsigned,
                StatusCode::UNAUTHORIZED,
                "Unauthorized",
                "authorization is missing",
            );
        }
    }
    let signed = server
        .send("POST", "/metrics", ("metrics", ""), None, &[])
        .await;
    check_error(
        &signed,
        StatusCode::NOT_FOUND,
        "NotFound",
        "The resource type 'metrics' at '' is not supported by LetheDB.",
    );
    // The explorer's prefix is part of the Cosmos path, even for a path the explorer owns.
    for path in ["_explorer/emulator.pem", "_explorer/other"] {
        let signed = server
            .send("POST", &format!("/{path}"), ("_explorer", path), None, &[])
            .await;
        check_error(
            &signed,
            StatusCode::NOT_FOUND,
            "NotFound",
            &format!("The resource type '_explorer' at '{path}' is not supported by LetheDB."),
        );
    }
}

#[tokio::test]
async fn the_metrics_port_serves_only_metrics() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine = Engine::open(
        Arc::new(MemoryStore::new()),
        clock,
        EngineConfig::new(crate::wire_status),
    )
    .expect("engine");
    let state = AppState {
        entra_id: true,
        faults: Default::default(),
        seed: None,
        metrics: Some(Arc::new(crate::metrics::Metrics::new(engine.clone()))),
        metrics_route: crate::MetricsRoute::OwnPort,
        engine,
        key: MasterKey::from_base64(EMULATOR_KEY).expect("key"),
        certificate_pem: None,
        endpoint: "http://127.0.0.1:8081/".into(),
        gateway: crate::Gateway::Routing,
    };
    let server = Server {
        router: crate::metrics_router(state),
        clock: Arc::new(ManualClock::new(START_MS)),
        key: MasterKey::from_base64(EMULATOR_KEY).expect("key"),
    };
    let metrics = get(&server, "/metrics").await;
    assert_eq!(metrics.status, StatusCode::OK);
    assert!(metrics
        .body
        .as_str()
        .expect("text")
        .contains("lethedb_writer_queue_depth"));
    for (method, path) in [("GET", "/dbs"), ("GET", "/"), ("POST", "/metrics")] {
        let refused = server
            .raw(
                Request::builder()
                    .method(method)
                    .uri(path)
                    .body(Body::empty())
                    .expect("request"),
            )
            .await;
        check_error(
            &refused,
            StatusCode::NOT_FOUND,
            "NotFound",
            "The metrics port serves only GET /metrics",
        );
    }
}

#[tokio::test]
async fn metrics_count_requests_by_operation_name() {
    let server = Server::new();
    server.setup(partitioned()).await;
    server.create_item(json!({"id": "a", "pk": "p"})).await;
    server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!([{"operationType": "Read", "id": "a"}])),
            &[
                ("x-ms-cosmos-is-batch-request", "True"),
                ("x-ms-documentdb-partitionkey", "[\"p\"]"),
            ],
        )
        .await;
    server
        .send("GET", "/offers", ("offers", ""), None, &[])
        .await;
    server
        .send("PUT", "/dbs", ("dbs", ""), Some(json!({})), &[])
        .await;
    // Unauthenticated requests are not counted.
    get(&server, "/dbs").await;
    let text = get(&server, "/metrics").await.body;
    let text = text.as_str().expect("text");
    for expected in [
        "lethedb_requests_total{operation=\"CreateDatabase\",status=\"201\"} 1",
        "lethedb_requests_total{operation=\"CreateContainer\",status=\"201\"} 1",
        "lethedb_requests_total{operation=\"Create\",status=\"201\"} 1",
        "lethedb_requests_total{operation=\"Batch\",status=\"200\"} 1",
        "lethedb_requests_total{operation=\"ReadOfferFeed\",status=\"200\"} 1",
        "lethedb_requests_total{operation=\"Other\",status=\"405\"} 1",
        "lethedb_request_duration_seconds_count{operation=\"Batch\"} 1",
    ] {
        assert!(text.contains(expected), "{expected} missing from:\n{text}");
    }
    assert!(!text.contains("status=\"401\""), "{text}");
}
