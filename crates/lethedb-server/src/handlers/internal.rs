//! Endpoints that are not Cosmos: the internal statistics, the Prometheus exposition and the
//! TLS certificate. All are read-only; the statistics, which name every database and
//! container, answer only a master-key signature.
//!
//! They are routed by `app`, not by `route`: no `Operation` names them and no metrics count
//! them.

use crate::access::{authenticate, Caller};
use crate::error::{ApiError, ApiResult, Code};
use crate::respond::Reply;
use crate::routes::ResourcePath;
use crate::state::AppState;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use lethedb_engine::ErrorCode;
use serde_json::{json, Value};

/// The path of the internal statistics. A client signs it as it would a Cosmos path of two
/// segments: resource type `_lethedb`, resource link `_lethedb/stats`.
pub const STATS_PATH: &str = "/_lethedb/stats";

/// Internal statistics: the writer's counters and the TTL sweeper's per-container backlog, lag
/// and deletions. Only for the master key: a missing or wrong signature gets the 401 of any
/// Cosmos request, a resource token or an Entra ID token a 403.
pub fn stats(state: &AppState, method: &Method, headers: &HeaderMap) -> ApiResult<Response> {
    let path = ResourcePath::parse(STATS_PATH)?;
    match authenticate(state, method, headers, &path)? {
        Caller::Master => {}
        Caller::Entra | Caller::Resource(_) => {
            return Err(ApiError::new(
                Code::Forbidden,
                "Only the master key may read /_lethedb/stats.",
            ))
        }
    }
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
    let mut body = json!({
        "writer": {
            "operations": operations,
            "commits": commits,
            "queued": queued,
            "lanes": state.engine.writer_lanes(),
        },
        "containers": containers,
        // Why the engine stopped accepting writes, if it did (a panic or a failed commit).
        "poisoned": state.engine.poisoned(),
    });
    // The redb store's flusher (absent on the other stores): transactions written into the
    // store file, how long that took, and how long commits waited for it.
    if let Some(flush) = state.engine.store_flush_stats() {
        body["store"] = json!({
            "flushes": flush.flushes,
            "checkpoints": flush.checkpoints,
            "flushBusyMs": flush.busy_micros as f64 / 1000.0,
            "writerWaits": flush.waits,
            "writerWaitMs": flush.wait_micros as f64 / 1000.0,
            "redoLogWrittenBytes": flush.log_bytes,
        });
    }
    Ok(Reply::value(StatusCode::OK, &body).finish())
}

/// The Prometheus text exposition.
pub async fn metrics(state: &AppState) -> ApiResult<Response> {
    let Some(metrics) = &state.metrics else {
        return Err(ApiError::from_code(Code::MetricsOff));
    };
    // The usage figures walk the catalog and the expired backlogs: the engine reads them on its
    // scan pool; rendering them is memory work.
    let usages = state.engine.container_usages().await.unwrap_or_default();
    let text = metrics.render(usages).map_err(|_| {
        ApiError::new(
            Code::Engine(ErrorCode::Internal),
            "the metrics could not be encoded",
        )
    })?;
    Ok(Reply::json(StatusCode::OK, text.into_bytes())
        .header("content-type", "text/plain; version=0.0.4; charset=utf-8")
        .finish())
}

/// `GET /metrics` on a main port that listens beyond loopback, without `--metrics-public`.
pub fn metrics_not_public() -> ApiError {
    ApiError::new(
        Code::Forbidden,
        "This server listens on a non-loopback address, so its main port does not serve /metrics. Start it with --metrics-public to serve metrics here to anyone who can connect, or with --metrics-bind ADDRESS to serve them on a port of their own.",
    )
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
