//! Reading requests: the bodies (JSON documents, query bodies, Cosmos binary JSON), the
//! headers one handler alone reads (throughput on a create), and the engine's query requests
//! built from a body and the request head (`head.rs`), each turned into the engine's types or a
//! Cosmos-shaped 400.
//!
//! This module parses; it does not decide what a request is (that is `operation`) and does not
//! call the engine.

use crate::binary_json;
use crate::error::{ApiError, ApiResult, Code};
use crate::head::RequestHead;
use axum::body::{Body, Bytes};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue};
use lethedb_engine::QueryRequest;
use lethedb_engine::Throughput;
use serde_json::Value;

/// The header with which the SDKs name the container they mean by its `_rid` when they address
/// it by name.
pub(crate) const INTENDED_CONTAINER_HEADER: &str = "x-ms-cosmos-intended-collection-rid";

/// The largest request body accepted: one maximal item plus room for the envelope. Larger
/// bodies get 413 before they are parsed.
pub const REQUEST_BODY_BYTES_MAX: usize = lethedb_engine::ITEM_BYTES_MAX + 64 * 1024;
/// The deepest JSON nesting accepted (serde_json's own recursion limit, which we rely on).
pub const JSON_DEPTH_MAX: usize = 128;

/// A header's value, when present and visible ASCII.
pub fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Gives an HTTP/2 request the `Host` header its `:authority` stands for (RFC 9113, section
/// 8.3.1: hyper puts the authority in the URI), so that what reads the host, such as
/// `--advertise-url auto`, sees the one the client used whatever protocol it spoke. A request
/// that has a `Host` keeps it.
pub fn add_host_from_authority(parts: &mut Parts) {
    if parts.headers.contains_key(header::HOST) {
        return;
    }
    let Some(authority) = parts.uri.authority() else {
        return;
    };
    if let Ok(value) = HeaderValue::from_str(authority.as_str()) {
        parts.headers.insert(header::HOST, value);
    }
}

/// Whether a flag header says `true` (the SDKs send `True`).
pub fn header_is_true(headers: &HeaderMap, name: &str) -> bool {
    header(headers, name).is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// Provisioned throughput asked for on a create.
pub fn throughput(headers: &HeaderMap) -> ApiResult<Option<Throughput>> {
    Ok(Throughput::from_request(
        header(headers, "x-ms-offer-throughput"),
        header(headers, "x-ms-cosmos-offer-autopilot-settings"),
    )?)
}

/// Reads the whole body, refusing more than [`REQUEST_BODY_BYTES_MAX`] with 413.
pub async fn read_body(body: Body) -> ApiResult<Bytes> {
    axum::body::to_bytes(body, REQUEST_BODY_BYTES_MAX)
        .await
        .map_err(|_| ApiError::from_code(Code::RequestTooLarge))
}

/// A body in the Cosmos binary JSON encoding (first byte `0x80`, as the Rust SDK sends item
/// bodies) as the JSON text it stands for; any other body as it came. Decided once, before
/// anything reads the body, so every operation sees text.
pub fn text_body(body: Bytes) -> ApiResult<Bytes> {
    if !binary_json::is_binary(&body) {
        return Ok(body);
    }
    match binary_json::to_json_text(&body) {
        Ok(text) => Ok(Bytes::from(text)),
        Err(error) if error.problem == binary_json::Problem::TooLarge => {
            Err(ApiError::from_code(Code::RequestTooLarge))
        }
        Err(error) => Err(ApiError::new(
            Code::InvalidJson,
            format!("The request payload is invalid Cosmos binary JSON: {error}."),
        )),
    }
}

pub fn parse_json(body: &Bytes) -> ApiResult<Value> {
    if body.is_empty() {
        return Err(ApiError::new(
            Code::InvalidJson,
            "The request body is missing; a JSON body is required.",
        ));
    }
    serde_json::from_slice(body).map_err(|error| {
        ApiError::new(
            Code::InvalidJson,
            format!("The request payload is invalid JSON: {error}."),
        )
    })
}

/// Reads a query body `{"query": "...", "parameters": [{"name": "@p", "value": ...}]}`.
pub fn query_request(head: &RequestHead<'_>, body: &Bytes) -> ApiResult<QueryRequest> {
    let value = parse_json(body)?;
    let text = match value.get("query") {
        Some(Value::String(text)) => text.clone(),
        _ => return Err(ApiError::from_code(Code::InvalidQueryBody)),
    };
    let mut parameters = Vec::new();
    match value.get("parameters") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for parameter in list {
                let Some(name) = parameter.get("name").and_then(Value::as_str) else {
                    return Err(ApiError::new(
                        Code::InvalidQueryBody,
                        "Each query parameter needs a string 'name'.",
                    ));
                };
                // A parameter without a value is undefined: queries referring to it see nothing.
                if let Some(value) = parameter.get("value") {
                    parameters.push((name.to_string(), value.clone()));
                }
            }
        }
        Some(_) => {
            return Err(ApiError::new(
                Code::InvalidQueryBody,
                "The query 'parameters' must be an array.",
            ))
        }
    }
    Ok(QueryRequest {
        text,
        parameters,
        partition_key: head.partition_key()?.cloned(),
        page_items_max: head.page_items_max()?,
        continuation: head.continuation.map(str::to_string),
        enable_cross_partition: head.enable_cross_partition,
        effective_range: head.effective_range.clone(),
        range_id: head.range_id.map(str::to_string),
        populate_query_metrics: head.populate_query_metrics,
        populate_index_metrics: head.populate_index_metrics,
    })
}

/// A read feed is the query `SELECT * FROM root`, paged the same way.
pub fn feed_request(head: &RequestHead<'_>) -> ApiResult<QueryRequest> {
    Ok(QueryRequest {
        text: "SELECT * FROM root".into(),
        page_items_max: head.page_items_max()?,
        continuation: head.continuation.map(str::to_string),
        enable_cross_partition: true,
        ..QueryRequest::default()
    })
}
