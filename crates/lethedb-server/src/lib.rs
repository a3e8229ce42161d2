//! LetheDB's wire protocol: the Azure Cosmos DB for NoSQL REST API (gateway mode) over HTTP(S).
//!
//! Every request goes through one handler, [`dispatch`]: parse the path, check the master-key
//! signature and the clock skew, then route by resource type and method to the engine. This
//! layer owns HTTP, headers, authorization, the JSON shapes of responses and error bodies; it
//! owns no data and decides nothing about time to live, which is the engine's.

pub mod auth;
pub mod cli;
mod error;
mod handlers;
pub mod metrics;
mod respond;
pub mod routes;
pub mod tls;

pub use error::{ApiError, ApiResult};

use auth::MasterKey;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use axum::Router;
use lethedb_engine::Engine;
use routes::ResourcePath;
use std::sync::Arc;

/// The largest request body accepted: one maximal item plus room for the envelope. Larger
/// bodies get 413 before they are parsed.
pub const REQUEST_BODY_BYTES_MAX: usize = lethedb_engine::ITEM_BYTES_MAX + 64 * 1024;
/// The deepest JSON nesting accepted (serde_json's own recursion limit, which we rely on).
pub const JSON_DEPTH_MAX: usize = 128;

/// What every request handler shares.
#[derive(Clone)]
pub struct AppState {
    pub engine: Engine,
    pub key: MasterKey,
    /// The PEM of the TLS certificate, served at `/_explorer/emulator.pem` in TLS mode.
    pub certificate_pem: Option<Arc<String>>,
    /// Request metrics; `None` when turned off.
    pub metrics: Option<Arc<metrics::Metrics>>,
    /// Whether `GET /metrics` is served on this router (it may have its own port instead).
    pub metrics_route: bool,
}

/// The Prometheus exposition, for a metrics listener of its own.
pub fn handlers_metrics(state: &AppState) -> ApiResult<axum::response::Response> {
    handlers::metrics(state)
}

/// The whole HTTP surface as a router, so tests can drive it without a socket.
pub fn app(state: AppState) -> Router {
    Router::new().fallback(dispatch).with_state(state)
}

/// The one entry point: authorization first, then routing.
pub async fn dispatch(State(state): State<AppState>, request: Request) -> Response {
    let started = std::time::Instant::now();
    let (parts, body) = request.into_parts();
    let mut observed: Option<(&'static str, ResourcePath)> = None;
    let result = async {
        if parts.uri.path() == "/_explorer/emulator.pem" && parts.method == Method::GET {
            return handlers::certificate(&state);
        }
        if parts.uri.path() == "/_lethedb/stats" && parts.method == Method::GET {
            return handlers::stats(&state);
        }
        if parts.uri.path() == "/metrics" && parts.method == Method::GET && state.metrics_route {
            return handlers::metrics(&state);
        }
        // Some clients leave `?` unescaped in item ids; Cosmos paths carry no query string, so
        // anything after `?` belongs to the last id.
        let full_path = match parts.uri.query() {
            Some(query) => format!("{}?{query}", parts.uri.path()),
            None => parts.uri.path().to_string(),
        };
        let mut path = ResourcePath::parse(&full_path)?;
        authorize(&state, &parts.method, &parts.headers, &path)?;
        handlers::resolve_resource_ids(&state.engine, &mut path)?;
        observed = Some((
            metrics::operation_name(&parts.method, &path, &parts.headers),
            path.clone(),
        ));
        let body = read_body(body).await?;
        handlers::route(&state, &parts, &path, body).await
    }
    .await;
    let mut response = match result {
        Ok(response) => response,
        Err(error) => error.into_response(),
    };
    respond::add_common_headers(&mut response, &parts.headers);
    if let (Some(metrics), Some((operation, path))) = (&state.metrics, observed) {
        let charge = response
            .headers()
            .get("x-ms-request-charge")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        metrics.observe(
            operation,
            &path,
            response.status(),
            started.elapsed().as_secs_f64(),
            charge,
        );
    }
    response
}

async fn read_body(body: Body) -> ApiResult<axum::body::Bytes> {
    axum::body::to_bytes(body, REQUEST_BODY_BYTES_MAX)
        .await
        .map_err(|_| ApiError::TooLarge("Request size is too large".into()))
}

/// Checks the master-key signature and the request date.
fn authorize(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    path: &ResourcePath,
) -> ApiResult<()> {
    let header = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| ApiError::Unauthorized("Required Header authorization is missing. Ensure a valid Authorization token is passed.".into()))?;
    let date = headers
        .get("x-ms-date")
        .or_else(|| headers.get("date"))
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            ApiError::Unauthorized(
                "Required Header x-ms-date is missing. Ensure a valid date header is passed."
                    .into(),
            )
        })?;
    let wrong_key = || {
        ApiError::Unauthorized(format!(
            "The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol. Server used the following payload to sign: '{}\n{}\n{}\n{}\n\n'",
            method.as_str().to_ascii_lowercase(),
            path.resource_type.to_ascii_lowercase(),
            path.link,
            date.to_ascii_lowercase()
        ))
    };
    let token = auth::parse_authorization(header).ok_or_else(wrong_key)?;
    if token.kind != "master" {
        return Err(ApiError::Unauthorized(
            "Only master-key authorization (type=master) is supported.".into(),
        ));
    }
    let verb = method.as_str();
    let links = [
        path.link.as_str(),
        path.raw_link.as_str(),
        &path.resource_id_link(),
    ];
    let signed = links.iter().any(|link| {
        state
            .key
            .verify(verb, &path.resource_type, link, date, &token.signature)
    });
    if !signed {
        return Err(wrong_key());
    }
    let sent = httpdate::parse_http_date(date).map_err(|_| {
        ApiError::Unauthorized(format!(
            "The x-ms-date header '{date}' is not a valid RFC 1123 date."
        ))
    })?;
    let sent_secs = match sent.duration_since(std::time::UNIX_EPOCH) {
        Ok(elapsed) => elapsed.as_secs() as i64,
        Err(_) => 0,
    };
    let now_secs = state.engine.now_ms().div_euclid(1000);
    if (now_secs - sent_secs).abs() > auth::CLOCK_SKEW_MAX_SECS {
        return Err(ApiError::Forbidden(format!(
            "The authorization token is not valid at the current time. Please create another token and retry (token start time: {date}, current server time: {}).",
            httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(now_secs.max(0) as u64))
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
