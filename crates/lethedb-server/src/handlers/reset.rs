//! `POST /_lethedb/reset`: every database deleted, then the `--seed` applied again, so each test
//! of a suite can start from the same data. Only the master key may reset, signed as a Cosmos
//! request whose resource type is `_lethedb` and whose resource link is `_lethedb/reset`.

use crate::access::{authenticate, Caller};
use crate::error::{ApiError, ApiResult, Code};
use crate::respond::Reply;
use crate::routes::ResourcePath;
use crate::state::AppState;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use lethedb_engine::ErrorCode;
use serde_json::{json, Value};

/// Where the reset is served.
pub const RESET_PATH: &str = "/_lethedb/reset";

/// Deletes every database and applies the seed again; answers what was deleted and seeded.
pub async fn reset(state: &AppState, method: &Method, headers: &HeaderMap) -> ApiResult<Response> {
    let path = ResourcePath::parse(RESET_PATH)?;
    match authenticate(state, method, headers, &path)? {
        Caller::Master => {}
        Caller::Entra | Caller::Resource(_) => {
            return Err(ApiError::new(
                Code::Forbidden,
                "Only the master key may reset the account.",
            ))
        }
    }
    if method != Method::POST {
        return Err(ApiError::new(
            Code::MethodNotAllowed,
            "The reset answers POST only.",
        ));
    }
    let engine = &state.engine;
    let mut deleted = 0;
    for database in engine.list_databases().await? {
        let Some(id) = database.get("id").and_then(Value::as_str) else {
            continue;
        };
        match engine.delete_database(id).await {
            Ok(()) => deleted += 1,
            // Deleted meanwhile by another request: the outcome is the same.
            Err(error) if error.code == ErrorCode::DatabaseNotFound => {}
            Err(error) => return Err(error.into()),
        }
    }
    let seeded = match &state.seed {
        Some(seed) => seed.apply(engine).await.map_err(|error| {
            ApiError::new(Code::Engine(ErrorCode::Internal), format!("{error:#}"))
        })?,
        None => Default::default(),
    };
    let body = json!({"deletedDatabases": deleted, "seeded": seeded});
    Ok(Reply::value(StatusCode::OK, &body).finish())
}
