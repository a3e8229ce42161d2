//! Health probes, unauthenticated, for orchestrators and test harnesses that wait for a server:
//! `GET /alive` (the process answers HTTP), `GET /ready` (the engine serves: its writer runs,
//! it is not poisoned, its store answers a read) and `GET /status` (version, store kind,
//! uptime, readiness).
//!
//! They reveal nothing a caller without the key may not know: no path, no key, no resource, no
//! store error text (a reason is one of a few fixed phrases). They are not Cosmos operations:
//! no signature, no request charge, not counted in the request metrics.

use crate::respond::Reply;
use crate::state::AppState;
use axum::http::StatusCode;
use axum::response::Response;
use lethedb_engine::ErrorCode;
use serde_json::json;

/// The paths of the three probes.
pub const ALIVE_PATH: &str = "/alive";
pub const READY_PATH: &str = "/ready";
pub const STATUS_PATH: &str = "/status";

/// `GET /alive`: 200 whenever the process answers HTTP.
pub fn alive() -> Response {
    Reply::value(StatusCode::OK, &json!({"status": "alive"})).finish()
}

/// `GET /ready`: 200 when the engine serves, 503 with the reason otherwise.
pub async fn ready(state: &AppState) -> Response {
    match readiness(state).await {
        Ok(()) => Reply::value(StatusCode::OK, &json!({"status": "ready"})).finish(),
        Err(reason) => Reply::value(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"status": "unavailable", "reason": reason}),
        )
        .finish(),
    }
}

/// `GET /status`: what serves here, for how long, and whether it is ready.
pub async fn status(state: &AppState) -> Response {
    let engine = &state.engine;
    let readiness = readiness(state).await;
    let body = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "store": engine.store_kind(),
        "uptimeSeconds": engine.uptime().as_secs_f64(),
        "ready": readiness.is_ok(),
        "reason": readiness.err(),
    });
    Reply::value(StatusCode::OK, &body).finish()
}

/// Whether the engine serves, or why not, as a fixed phrase.
async fn readiness(state: &AppState) -> Result<(), &'static str> {
    state
        .engine
        .readiness()
        .await
        .map_err(|error| match error.code {
            ErrorCode::StorePoisoned => "the store is poisoned: restart the server",
            ErrorCode::WriterStopped => "the writer has stopped",
            _ => "the store does not answer",
        })
}
