//! `/_lethedb/throughput-buckets/dbs/{db}/colls/{coll}`: a container's throughput buckets, which
//! the service sets through its control plane (the container's throughput settings) and
//! LetheDB, having none, here. `GET` answers them, `PUT` replaces them with the body's
//! `{"throughputBuckets": [{"id": 1, "maxThroughputPercentage": 50}]}` (an empty list removes
//! them). Master key only, signed as a request on the container itself, like the index check.
//! What a bucket does to requests is the engine's (`throughput/buckets.rs`).

use crate::error::{ApiError, ApiResult, Code};
use crate::handlers::index_check::signed_container_path;
use crate::respond::Reply;
use crate::state::AppState;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use serde_json::Value;

/// Where the buckets are served; the container's path follows.
pub const THROUGHPUT_BUCKETS_PREFIX: &str = "/_lethedb/throughput-buckets";

/// Answers one request; `path` is what follows [`THROUGHPUT_BUCKETS_PREFIX`].
pub async fn throughput_buckets(
    state: &AppState,
    (method, headers): (&Method, &HeaderMap),
    path: &str,
    body: &[u8],
) -> ApiResult<Response> {
    let target = (THROUGHPUT_BUCKETS_PREFIX, path);
    let resource = signed_container_path(state, method, headers, target, "throughput buckets")?;
    let (database, container) = (resource.id(0), resource.id(1));
    let answer = match *method {
        Method::GET => state.engine.throughput_buckets(database, container)?,
        Method::PUT => {
            let body: Value = serde_json::from_slice(body)
                .map_err(|_| ApiError::new(Code::InvalidJson, "The body must be a JSON object."))?;
            state
                .engine
                .set_throughput_buckets(database, container, &body)
                .await?
        }
        _ => {
            return Err(ApiError::new(
                Code::MethodNotAllowed,
                "The throughput buckets answer GET and PUT only.",
            ))
        }
    };
    Ok(Reply::value(StatusCode::OK, &answer).finish())
}
