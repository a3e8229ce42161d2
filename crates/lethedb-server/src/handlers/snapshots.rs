//! `/_lethedb/snapshots`: named snapshots of the whole store (`Engine::save_snapshot` and
//! friends), so a test suite saves the data it starts from once and returns to it in an
//! instant. `GET` lists them; `POST /_lethedb/snapshots/{name}` saves one (201, replacing one of
//! that name), `POST /_lethedb/snapshots/{name}/restore` returns the store to it (404 when there
//! is none), `DELETE /_lethedb/snapshots/{name}` forgets it.
//!
//! Only the master key may use them, signed as a Cosmos request whose resource type is
//! `_lethedb` and whose resource link is `_lethedb/snapshots`, whatever the name in the path.

use crate::access::{authenticate, Caller};
use crate::error::{ApiError, ApiResult, Code};
use crate::respond::Reply;
use crate::routes::ResourcePath;
use crate::state::AppState;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use serde_json::json;

/// Where the snapshots are served.
pub const SNAPSHOTS_PATH: &str = "/_lethedb/snapshots";

/// Answers a request on the snapshots; `rest` is what follows [`SNAPSHOTS_PATH`] (`""`,
/// `/{name}` or `/{name}/restore`).
pub async fn snapshots(
    state: &AppState,
    (method, headers): (&Method, &HeaderMap),
    rest: &str,
) -> ApiResult<Response> {
    let path = ResourcePath::parse(SNAPSHOTS_PATH)?;
    match authenticate(state, method, headers, &path)? {
        Caller::Master => {}
        Caller::Entra | Caller::Resource(_) => {
            return Err(ApiError::new(
                Code::Forbidden,
                "Only the master key may manage snapshots.",
            ))
        }
    }
    let engine = &state.engine;
    let segments: Vec<&str> = rest.split('/').filter(|part| !part.is_empty()).collect();
    match (method, segments.as_slice()) {
        (&Method::GET, []) => {
            let names = engine.snapshot_names().await?;
            Ok(Reply::value(StatusCode::OK, &json!({ "snapshots": names })).finish())
        }
        (&Method::POST, [name]) => {
            engine.save_snapshot(name).await?;
            Ok(Reply::value(StatusCode::CREATED, &json!({ "name": name })).finish())
        }
        (&Method::POST, [name, "restore"]) => match engine.restore_snapshot(name).await? {
            true => Ok(Reply::value(StatusCode::OK, &json!({ "restored": name })).finish()),
            false => Err(no_snapshot(name)),
        },
        (&Method::DELETE, [name]) => match engine.delete_snapshot(name).await? {
            true => Ok(Reply::empty(StatusCode::NO_CONTENT).finish()),
            false => Err(no_snapshot(name)),
        },
        _ => Err(ApiError::new(
            Code::MethodNotAllowed,
            "The snapshots answer GET; a snapshot by name answers POST (save) and DELETE, and POST to its /restore.",
        )),
    }
}

fn no_snapshot(name: &str) -> ApiError {
    ApiError::new(
        Code::RouteNotFound,
        format!("There is no snapshot named {name}."),
    )
}
