//! `GET /_lethedb/index-check/dbs/{db}/colls/{coll}`: a container's stored index entries
//! against those its items call for (`Engine::check_index`), for crash tests and operators:
//! `{stored, storedBytes, itemBytes, missing, stale, rebuilding, consistent, progress}`.
//!
//! Not a Cosmos resource, but authenticated like the TTL overview beside it: a master-key
//! signature over `get`, `colls`, `dbs/{db}/colls/{coll}` and the date, checked before the
//! catalog is read (`signed_container_path`, which both share). The check walks every item, so
//! it is a scan under the engine's bound; this module only authenticates and shapes the JSON.

use crate::access::{authenticate, Caller};
use crate::error::{ApiError, ApiResult, Code};
use crate::respond::Reply;
use crate::routes::ResourcePath;
use crate::state::AppState;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use serde_json::json;

/// Where the endpoint lives; the rest of the path is the container's Cosmos path.
pub const INDEX_CHECK_PREFIX: &str = "/_lethedb/index-check";

/// The container path of an internal endpoint under `prefix`, once its master-key signature
/// holds (anything else is refused before the catalog is read, so a caller without the key
/// learns nothing, not even what exists). `what` names the endpoint in the refusal.
pub fn signed_container_path(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    (prefix, path): (&str, &str),
    what: &str,
) -> ApiResult<ResourcePath> {
    let resource = ResourcePath::parse(path)?;
    match authenticate(state, method, headers, &resource)? {
        Caller::Master => {}
        Caller::Entra | Caller::Resource(_) => {
            return Err(ApiError::new(
                Code::Forbidden,
                format!("The {what} is served to master-key requests only."),
            ))
        }
    }
    if resource.shape() != (vec!["dbs", "colls"], true) {
        return Err(ApiError::new(
            Code::UnknownResource,
            format!("{prefix} serves /dbs/{{db}}/colls/{{coll}} only."),
        ));
    }
    Ok(resource)
}

/// Answers one request; `path` is what follows [`INDEX_CHECK_PREFIX`].
pub async fn index_check(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    path: &str,
) -> ApiResult<Response> {
    let target = (INDEX_CHECK_PREFIX, path);
    let resource = signed_container_path(state, method, headers, target, "index check")?;
    let container = state
        .engine
        .read_container(resource.id(0), resource.id(1))?;
    let check = state.engine.check_index(&container).await?;
    let progress = state.engine.index_transformation_progress(&container)?;
    let body = json!({
        "database": container.database_id,
        "container": container.id,
        "stored": check.stored,
        "storedBytes": check.stored_bytes,
        "itemBytes": check.item_bytes,
        "missing": check.missing,
        "stale": check.stale,
        "rebuilding": check.rebuilding,
        "consistent": check.is_consistent(),
        "progress": progress,
    });
    Ok(Reply::value(StatusCode::OK, &body)
        .header("cache-control", "no-store")
        .finish())
}
