//! The error table pinned whole: every code's response (status, substatus, the headers the SDKs
//! read, and the JSON body with the activity id redacted) compared with one reviewed snapshot,
//! the rules a row cannot show (hidden detail stays in the log, a 429 says when to retry), and a
//! substatus other than 0 through the whole router.

use super::{check_error, partitioned, Server};
use crate::error::{ApiError, Code};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use http_body_util::BodyExt;
use lethedb_engine::{EngineError, ErrorCode};

/// A failure as a handler raises it: engine codes through the engine's error, so the snapshot
/// shows what the conversion does; wire codes with their default message.
fn raise(code: Code) -> ApiError {
    match code {
        Code::Engine(engine_code) => ApiError::from(EngineError::new(engine_code)),
        Code::TooManyRequests => ApiError::too_many_requests(250),
        Code::ThroughputBucketSpent => ApiError::throughput_bucket_spent(250),
        other => ApiError::from_code(other),
    }
}

/// One response as text: status, substatus, content type, retry-after (when sent), and body.
async fn render(error: ApiError) -> String {
    let response = error.into_response();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("-")
            .to_string()
    };
    let activity_id = header("x-ms-activity-id");
    assert_ne!(activity_id, "-", "every error names its activity id");
    let mut line = format!(
        "{} substatus={} content-type={} request-charge={}",
        response.status().as_u16(),
        header("x-ms-substatus"),
        header("content-type"),
        header("x-ms-request-charge"),
    );
    if response.headers().contains_key("x-ms-retry-after-ms") {
        line.push_str(&format!(
            " retry-after-ms={}",
            header("x-ms-retry-after-ms")
        ));
    }
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let body = String::from_utf8_lossy(&bytes).replace(&activity_id, "[activity-id]");
    format!("{line}\n  {body}")
}

#[tokio::test]
async fn every_code_renders_the_row_of_the_one_table() {
    let mut rendered = Vec::new();
    for code in Code::ALL {
        rendered.push(format!("{code:?}: {}", render(raise(*code)).await));
    }
    insta::assert_snapshot!(rendered.join("\n"));
}

#[tokio::test]
async fn a_hidden_message_goes_to_the_log_not_to_the_client() {
    for code in [
        ErrorCode::StoreCorrupted,
        ErrorCode::StorageUnavailable,
        ErrorCode::Internal,
    ] {
        let error = EngineError::with_message(code, "a stored item could not be read at page 7");
        let text = render(ApiError::from(error)).await;
        assert!(
            !text.contains("page 7"),
            "{code:?} leaked its detail: {text}"
        );
        assert!(text.contains("ActivityId: [activity-id]"), "{text}");
    }
}

#[tokio::test]
async fn corruption_is_a_500_and_a_poisoned_store_says_to_restart() {
    let corrupted = render(ApiError::from(EngineError::new(ErrorCode::StoreCorrupted))).await;
    assert!(corrupted.starts_with("500 "), "{corrupted}");
    let poisoned = render(ApiError::from(EngineError::new(ErrorCode::StorePoisoned))).await;
    assert!(poisoned.starts_with("503 "), "{poisoned}");
    assert!(poisoned.contains("restart the server"), "{poisoned}");
}

#[tokio::test]
async fn every_429_says_when_to_retry() {
    for code in Code::ALL {
        if code.status() == StatusCode::TOO_MANY_REQUESTS {
            let text = render(raise(*code)).await;
            assert!(text.contains(" retry-after-ms="), "{code:?}: {text}");
        }
    }
    let soon = render(ApiError::too_many_requests(0)).await;
    assert!(
        soon.contains(" retry-after-ms=1"),
        "never ask for 0 ms: {soon}"
    );
}

#[test]
fn the_table_lists_each_code_once() {
    let mut seen = std::collections::HashSet::new();
    for code in Code::ALL {
        assert!(seen.insert(*code), "{code:?} has two rows");
    }
    assert!(seen.contains(&Code::Engine(ErrorCode::WriterBusy)));
}

#[tokio::test]
async fn a_partition_key_that_does_not_match_the_document_is_400_with_substatus_1001() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let mismatch = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(serde_json::json!({"id": "a", "pk": "p"})),
            &[("x-ms-documentdb-partitionkey", "[\"q\"]")],
        )
        .await;
    check_error(
        &mismatch,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "PartitionKey extracted from document doesn't match the one specified in the header.",
    );
    assert_eq!(mismatch.header("x-ms-substatus"), "1001");
}
