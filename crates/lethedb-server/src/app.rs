//! The HTTP surface as axum routers: the explorer's page and files, the internal endpoints by
//! path, and the Cosmos dispatcher as the fallback for everything else. Tests drive [`app`] without a socket; the metrics port
//! serves [`metrics_router`], built from the same `/metrics` endpoint.
//!
//! This module composes; the endpoints' answers are `handlers::internal`'s, the Cosmos ones are
//! `cosmos::dispatch`'s. A wrong method on an internal path goes to the dispatcher, as it did
//! when these paths were compared inside it, so a client never sees axum's plain-text errors.

use crate::cosmos::dispatch;
use crate::error::{ApiError, ApiResult, Code};
use crate::explorer;
use crate::handlers::{self, INDEX_CHECK_PREFIX, THROUGHPUT_BUCKETS_PREFIX, TTL_OVERVIEW_PREFIX};
use crate::respond::add_common_headers;
use crate::state::{AppState, MetricsRoute};
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::handler::Handler;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, on, MethodFilter, MethodRouter};
use axum::Router;

/// Where the explorer's endpoints are nested.
const EXPLORER_PREFIX: &str = "/_explorer";

/// The whole HTTP surface.
pub fn app(state: AppState) -> Router {
    let internal = Router::new()
        .route(handlers::ALIVE_PATH, get_only(alive, dispatch))
        .route(handlers::READY_PATH, get_only(ready, dispatch))
        .route(handlers::STATUS_PATH, get_only(status, dispatch))
        .route(handlers::STATS_PATH, get_only(stats, dispatch))
        .route(
            &format!("{TTL_OVERVIEW_PREFIX}/{{*container}}"),
            get_only(ttl_overview, dispatch),
        )
        .route(
            &format!("{INDEX_CHECK_PREFIX}/{{*container}}"),
            get_only(index_check, dispatch),
        )
        .route(
            &format!("{THROUGHPUT_BUCKETS_PREFIX}/{{*container}}"),
            any(throughput_buckets),
        )
        .route(handlers::FAULTS_PATH, any(fault_rules))
        .route(handlers::RESET_PATH, any(reset))
        .route(handlers::SNAPSHOTS_PATH, any(snapshots))
        .route(
            &format!("{}/{{*name}}", handlers::SNAPSHOTS_PATH),
            any(snapshots),
        )
        .route(
            &format!("{}/{{id}}", handlers::FAULTS_PATH),
            any(fault_rule),
        )
        .route(
            &format!("{EXPLORER_PREFIX}/"),
            get_only(explorer_page, dispatch),
        );
    let internal = match state.metrics_route {
        MetricsRoute::Served => internal.route("/metrics", metrics_endpoint(dispatch)),
        MetricsRoute::LoopbackOnly => {
            internal.route("/metrics", get_only(metrics_not_public, dispatch))
        }
        MetricsRoute::OwnPort => internal,
    };
    Router::new()
        .nest(EXPLORER_PREFIX, explorer_router())
        .merge(internal)
        .route_layer(middleware::from_fn(common_headers))
        .fallback(dispatch)
        .with_state(state)
}

/// A router serving only the health probes, for a probe port of its own (`--probe-bind`).
pub fn probe_router(state: AppState) -> Router {
    Router::new()
        .route(handlers::ALIVE_PATH, get_only(alive, probe_port_only))
        .route(handlers::READY_PATH, get_only(ready, probe_port_only))
        .route(handlers::STATUS_PATH, get_only(status, probe_port_only))
        .fallback(probe_port_only)
        .layer(middleware::from_fn(common_headers))
        .with_state(state)
}

/// A router serving only `GET /metrics`, for a metrics port of its own.
pub fn metrics_router(state: AppState) -> Router {
    Router::new()
        .route("/metrics", metrics_endpoint(metrics_port_only))
        .fallback(metrics_port_only)
        .layer(middleware::from_fn(common_headers))
        .with_state(state)
}

/// `GET /metrics`, the same on the main port and on a metrics port; other methods go to
/// `other`.
fn metrics_endpoint<T: 'static>(other: impl Handler<T, AppState>) -> MethodRouter<AppState> {
    get_only(metrics, other)
}

/// `handler` for GET alone and `other` for every other method. axum would answer HEAD with a
/// GET handler, which these endpoints never did, so HEAD goes to `other` too.
fn get_only<T: 'static, U: 'static>(
    handler: impl Handler<T, AppState>,
    other: impl Handler<U, AppState>,
) -> MethodRouter<AppState> {
    on(MethodFilter::GET, handler)
        .on(MethodFilter::HEAD, other.clone())
        .fallback(other)
}

/// The explorer's endpoints, relative to [`EXPLORER_PREFIX`]: the prefix itself (a redirect to
/// the page, which `app` serves at `/_explorer/`), `/index.html` and the other files, and the
/// TLS certificate. A name that is none of them is a Cosmos
/// path (`outside_explorer`).
fn explorer_router() -> Router<AppState> {
    Router::new()
        .route("/", get_only(to_explorer_page, outside_explorer))
        .route("/emulator.pem", get_only(certificate, outside_explorer))
        .route("/{file}", get_only(explorer_file, outside_explorer))
}

async fn explorer_page() -> Response {
    match explorer::asset("") {
        Some(asset) => explorer::serve(asset),
        None => ApiError::from_code(Code::RouteNotFound).into_response(),
    }
}

async fn explorer_file(
    Path(file): Path<String>,
    state: State<AppState>,
    request: Request,
) -> Response {
    match explorer::asset(&file) {
        Some(asset) => explorer::serve(asset),
        None => outside_explorer(state, request).await,
    }
}

/// `/_explorer` without its slash: the page's modules are named relative to `/_explorer/`.
async fn to_explorer_page() -> Response {
    (
        StatusCode::PERMANENT_REDIRECT,
        [(header::LOCATION, format!("{EXPLORER_PREFIX}/"))],
    )
        .into_response()
}

/// The time-to-live overview; it authenticates like a Cosmos request (`handlers::ttl`).
async fn ttl_overview(State(state): State<AppState>, request: Request) -> Response {
    let uri = request.uri();
    let path = uri
        .path()
        .strip_prefix(TTL_OVERVIEW_PREFIX)
        .unwrap_or_default();
    answer(
        handlers::ttl_overview(
            &state,
            request.method(),
            request.headers(),
            path,
            uri.query(),
        )
        .await,
    )
}

/// The index check; it authenticates like a Cosmos request (`handlers::index_check`).
async fn index_check(State(state): State<AppState>, request: Request) -> Response {
    let path = request
        .uri()
        .path()
        .strip_prefix(INDEX_CHECK_PREFIX)
        .unwrap_or_default();
    answer(handlers::index_check(&state, request.method(), request.headers(), path).await)
}

/// A container's throughput buckets; they authenticate like a Cosmos request on the container
/// (`handlers::throughput_buckets`).
async fn throughput_buckets(
    State(state): State<AppState>,
    method: Method,
    headers: HeaderMap,
    uri: axum::http::Uri,
    body: Bytes,
) -> Response {
    let path = uri
        .path()
        .strip_prefix(THROUGHPUT_BUCKETS_PREFIX)
        .unwrap_or_default();
    answer(handlers::throughput_buckets(&state, (&method, &headers), path, &body).await)
}

/// The fault rules; they authenticate like a Cosmos request (`handlers::faults`).
async fn fault_rules(
    State(state): State<AppState>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(handlers::faults(&state, (&method, &headers), None, &body))
}

/// One fault rule, by id.
async fn fault_rule(
    State(state): State<AppState>,
    Path(id): Path<String>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(handlers::faults(
        &state,
        (&method, &headers),
        Some(&id),
        &body,
    ))
}

/// The snapshots; they authenticate like a Cosmos request (`handlers::snapshots`).
async fn snapshots(
    State(state): State<AppState>,
    method: Method,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let rest = uri
        .path()
        .strip_prefix(handlers::SNAPSHOTS_PATH)
        .unwrap_or_default();
    answer(handlers::snapshots(&state, (&method, &headers), rest).await)
}

/// The reset; it authenticates like a Cosmos request (`handlers::reset`).
async fn reset(State(state): State<AppState>, method: Method, headers: HeaderMap) -> Response {
    answer(handlers::reset(&state, &method, &headers).await)
}

async fn stats(State(state): State<AppState>, method: Method, headers: HeaderMap) -> Response {
    answer(handlers::stats(&state, &method, &headers))
}

async fn alive() -> Response {
    handlers::alive()
}

async fn ready(State(state): State<AppState>) -> Response {
    handlers::ready(&state).await
}

async fn status(State(state): State<AppState>) -> Response {
    handlers::status(&state).await
}

async fn metrics_not_public() -> Response {
    handlers::metrics_not_public().into_response()
}

/// A scrape reads every container's counters and TTL backlog through the engine's scan door,
/// so no request worker walks storage.
async fn metrics(State(state): State<AppState>) -> Response {
    answer(handlers::metrics(&state).await)
}

async fn certificate(State(state): State<AppState>) -> Response {
    answer(handlers::certificate(&state))
}

fn answer(result: ApiResult<Response>) -> Response {
    result.unwrap_or_else(IntoResponse::into_response)
}

/// A request under the explorer's prefix that the explorer does not serve is a Cosmos request:
/// nesting stripped the prefix, which is part of the Cosmos path, so it is put back first.
async fn outside_explorer(state: State<AppState>, mut request: Request) -> Response {
    let stripped = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    match format!("{EXPLORER_PREFIX}{stripped}").parse::<Uri>() {
        Ok(uri) => *request.uri_mut() = uri,
        Err(_) => return ApiError::from_code(Code::InvalidUri).into_response(),
    }
    dispatch(state, request).await
}

async fn probe_port_only(request: Request) -> Response {
    ApiError::new(
        Code::RouteNotFound,
        format!(
            "The probe port serves only GET /alive, /ready and /status, not {} {}.",
            request.method(),
            request.uri().path()
        ),
    )
    .into_response()
}

async fn metrics_port_only(request: Request) -> Response {
    ApiError::new(
        Code::RouteNotFound,
        format!(
            "The metrics port serves only GET /metrics, not {} {}.",
            request.method(),
            request.uri().path()
        ),
    )
    .into_response()
}

/// The headers every response carries, for the endpoints the dispatcher does not answer.
async fn common_headers(request: Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    let headers = request.headers().clone();
    let mut response = next.run(request).await;
    add_common_headers(&mut response, &headers, started.elapsed());
    response
}
