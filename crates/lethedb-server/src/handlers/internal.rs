//! Endpoints that are not Cosmos: the internal statistics, the Prometheus exposition and the
//! TLS certificate. They are unauthenticated and read-only.
//!
//! They are routed by `app`, not by `route`: no `Operation` names them and no metrics count
//! them.

use crate::error::{ApiError, ApiResult, Code};
use crate::respond::Reply;
use crate::state::AppState;
use axum::http::StatusCode;
use axum::response::Response;
use lethedb_engine::ErrorCode;
use serde_json::{json, Value};

/// Internal statistics: the writer's counters and the TTL sweeper's per-container backlog, lag
/// and deletions. Read-only and unauthenticated, like a metrics endpoint.
pub fn stats(state: &AppState) -> ApiResult<Response> {
    let (operations, commits, queued) = state.engine.writer_stats();
    let containers: Vec<Value> = state
        .engine
        .sweep_stats()
        .into_iter()
        .map(|s| {
            json!({
                "database": s.database_id,
                "container": s.container_id,
                "ttlBacklogItems": s.backlog_items,
                "oldestExpiredAgeMs": s.oldest_expired_age_ms,
                "ttlDeletedTotal": s.deleted_total,
            })
        })
        .collect();
    let body = json!({
        "writer": {"operations": operations, "commits": commits, "queued": queued},
        "containers": containers,
        // Why the engine stopped accepting writes, if it did (a panic or a failed commit).
        "poisoned": state.engine.poisoned(),
    });
    Ok(Reply::value(StatusCode::OK, &body).finish())
}

/// The Prometheus text exposition.
pub fn metrics(state: &AppState) -> ApiResult<Response> {
    let Some(metrics) = &state.metrics else {
        return Err(ApiError::from_code(Code::MetricsOff));
    };
    let text = metrics.render().map_err(|_| {
        ApiError::new(
            Code::Engine(ErrorCode::Internal),
            "the metrics could not be encoded",
        )
    })?;
    Ok(Reply::json(StatusCode::OK, text.into_bytes())
        .header("content-type", "text/plain; version=0.0.4; charset=utf-8")
        .finish())
}

/// The PEM of the certificate this server serves TLS with, so clients can trust it.
pub fn certificate(state: &AppState) -> ApiResult<Response> {
    match &state.certificate_pem {
        Some(pem) => Ok(Reply::json(StatusCode::OK, pem.as_bytes().to_vec())
            .header("content-type", "application/x-pem-file")
            .finish()),
        None => Err(ApiError::from_code(Code::NoCertificate)),
    }
}
