//! A full writer queue over HTTP: the write is refused at once with 429, the retry delay the
//! SDKs wait for (`x-ms-retry-after-ms`) and substatus 0 (3200 means a spent request-unit budget), and nothing of it is written.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use lethedb_auth::MasterKey;
use lethedb_engine::{Engine, EngineConfig, EngineError, ErrorCode, ManualClock, WriteMode};
use lethedb_server::cli::EMULATOR_KEY;
use lethedb_server::{app, AppState};
use lethedb_storage::{FailingStore, FaultPlan, MemoryStore};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};
use tower::ServiceExt;

const NOW_MS: i64 = 1_800_000_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_writer_queue_answers_429_with_a_retry_delay() {
    let store = Arc::new(FailingStore::new(MemoryStore::new(), FaultPlan::default()));
    let config = EngineConfig {
        write_batch_max: 1,
        writer_queue_jobs_max: 1,
        ..EngineConfig::new(lethedb_server::wire_status)
    };
    let engine =
        Engine::open(store.clone(), Arc::new(ManualClock::new(NOW_MS)), config).expect("engine");
    engine
        .create_database(json!({"id": "db"}), None)
        .await
        .expect("db");
    engine
        .create_container(
            "db",
            json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
            None,
        )
        .await
        .expect("container");
    let container = engine.read_container("db", "c").expect("container");
    // A stalled disk: the writer holds one job in its commit, one waits, the rest are refused.
    store.hold_commits();
    // Should the queue never fill, the held commits still end, so the test fails, not hangs.
    let safety = {
        let store = Arc::clone(&store);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(10));
            store.release_commits();
        })
    };
    // Fillers go one at a time with a pause between, so the writer has taken the first (and is
    // stuck in its commit) before the queue fills; two refusals in a row mean it is full.
    let mut fillers = Vec::new();
    let mut refused_in_a_row = 0;
    for i in 0..50 {
        let (engine, container) = (engine.clone(), Arc::clone(&container));
        let filler = tokio::spawn(async move {
            engine
                .write_item(
                    &container,
                    WriteMode::Create,
                    lethedb_engine::PartitionKeyValue::parse_json_text("[\"p\"]").ok(),
                    json!({"id": format!("filler{i}"), "pk": "p"}),
                    None,
                )
                .await
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        refused_in_a_row = if filler.is_finished() {
            refused_in_a_row + 1
        } else {
            0
        };
        fillers.push(filler);
        if refused_in_a_row == 2 {
            break;
        }
    }
    let key = MasterKey::from_base64(EMULATOR_KEY).expect("key");
    let router = app(AppState {
        entra_id: true,
        faults: Default::default(),
        seed: None,
        engine: engine.clone(),
        key: key.clone(),
        certificate_pem: None,
        endpoint: "http://127.0.0.1:8081/".into(),
        metrics: None,
        metrics_route: lethedb_server::MetricsRoute::OwnPort,
        gateway: lethedb_server::Gateway::Routing,
    });
    let date = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_millis(NOW_MS as u64));
    let request = Request::builder()
        .method("POST")
        .uri("/dbs/db/colls/c/docs")
        .header("host", "127.0.0.1:8081")
        .header("x-ms-date", &date)
        .header(
            "authorization",
            key.authorization_header("POST", "docs", "dbs/db/colls/c", &date),
        )
        .header("x-ms-documentdb-partitionkey", "[\"p\"]")
        .header("content-type", "application/json")
        .body(Body::from(json!({"id": "refused", "pk": "p"}).to_string()))
        .expect("request");
    let response = router.oneshot(request).await.expect("response");
    let status = response.status();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (retry_after, substatus) = (header("x-ms-retry-after-ms"), header("x-ms-substatus"));
    store.release_commits();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    let retry_after_ms: i64 = retry_after.parse().expect("x-ms-retry-after-ms");
    assert_eq!(
        retry_after_ms,
        lethedb_engine::writer::WRITER_BUSY_RETRY_AFTER_MS
    );
    assert_eq!(substatus, "0");
    let mut refused = 0;
    for filler in fillers {
        match filler.await.expect("task") {
            Ok(_) => {}
            Err(EngineError {
                code: ErrorCode::WriterBusy,
                ..
            }) => refused += 1,
            Err(other) => panic!("filler: {other}"),
        }
    }
    assert!(refused >= 2);
    drop(safety);
    let container = engine.read_container("db", "c").expect("container");
    assert!(matches!(
        engine.read_item(
            &container,
            lethedb_engine::PartitionKeyValue::parse_json_text("[\"p\"]").ok(),
            "refused"
        ),
        Err(EngineError {
            code: ErrorCode::ItemNotFound,
            ..
        })
    ));
}
