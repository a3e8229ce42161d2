//! `/_lethedb/faults`: the fault rules (`faults.rs`) a test manages over HTTP. `GET` lists them,
//! `POST` adds one (its body a rule, the answer the rule with its id, 201), `DELETE` removes them
//! all, and `DELETE /_lethedb/faults/{id}` removes one (404 when there is none).
//!
//! Only the master key may use it, signed as a Cosmos request whose resource type is
//! `_lethedb` and whose resource link is `_lethedb/faults`, whatever the rule id in the path.

use crate::access::{authenticate, Caller};
use crate::error::{ApiError, ApiResult, Code};
use crate::faults::parse_rule;
use crate::respond::Reply;
use crate::routes::ResourcePath;
use crate::state::AppState;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use serde_json::Value;

/// Where the fault rules are served.
pub const FAULTS_PATH: &str = "/_lethedb/faults";

/// Answers a request on the fault rules; `id` is the rule named after the path, if any.
pub fn faults(
    state: &AppState,
    (method, headers): (&Method, &HeaderMap),
    id: Option<&str>,
    body: &[u8],
) -> ApiResult<Response> {
    let path = ResourcePath::parse(FAULTS_PATH)?;
    match authenticate(state, method, headers, &path)? {
        Caller::Master => {}
        Caller::Entra | Caller::Resource(_) => {
            return Err(ApiError::new(
                Code::Forbidden,
                "Only the master key may manage fault rules.",
            ))
        }
    }
    let faults = &state.faults;
    match (method, id) {
        (&Method::GET, None) => {
            let rules = serde_json::to_value(faults.list()).unwrap_or(Value::Null);
            Ok(Reply::value(StatusCode::OK, &serde_json::json!({ "rules": rules })).finish())
        }
        (&Method::POST, None) => {
            let rule = parse_rule(body)?;
            let added = serde_json::to_value(faults.add(rule)).unwrap_or(Value::Null);
            Ok(Reply::value(StatusCode::CREATED, &added).finish())
        }
        (&Method::DELETE, None) => {
            faults.clear();
            Ok(Reply::empty(StatusCode::NO_CONTENT).finish())
        }
        (&Method::DELETE, Some(id)) if faults.remove(id) => {
            Ok(Reply::empty(StatusCode::NO_CONTENT).finish())
        }
        (&Method::DELETE, Some(id)) => Err(ApiError::new(
            Code::RouteNotFound,
            format!("There is no fault rule {id}."),
        )),
        _ => Err(ApiError::new(
            Code::MethodNotAllowed,
            "The fault rules answer GET, POST and DELETE; a rule by id answers DELETE.",
        )),
    }
}
