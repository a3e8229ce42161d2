//! Reading requests: the headers the SDKs send (partition key, paging, preconditions,
//! throughput, query flags) and the bodies (JSON documents and query bodies), each turned into
//! the engine's types or a Cosmos-shaped 400.
//!
//! This module parses; it does not decide what a request is (that is `operation`) and does not
//! call the engine.

use crate::binary_json;
use crate::error::{ApiError, ApiResult, Code};
use axum::body::{Body, Bytes};
use axum::http::HeaderMap;
use lethedb_engine::Throughput;
use lethedb_engine::{PartitionKeyValue, QueryRequest};
use serde_json::Value;

/// The largest request body accepted: one maximal item plus room for the envelope. Larger
/// bodies get 413 before they are parsed.
pub const REQUEST_BODY_BYTES_MAX: usize = lethedb_engine::ITEM_BYTES_MAX + 64 * 1024;
/// The deepest JSON nesting accepted (serde_json's own recursion limit, which we rely on).
pub const JSON_DEPTH_MAX: usize = 128;

/// A header's value, when present and visible ASCII.
pub fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Whether a flag header says `true` (the SDKs send `True`).
pub fn header_is_true(headers: &HeaderMap, name: &str) -> bool {
    header(headers, name).is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// Whether a POST body is a query rather than a resource to create.
pub fn is_query(headers: &HeaderMap) -> bool {
    header_is_true(headers, "x-ms-documentdb-isquery")
        || header(headers, "content-type").is_some_and(|v| v.starts_with("application/query+json"))
}

pub fn partition_key(headers: &HeaderMap) -> ApiResult<Option<PartitionKeyValue>> {
    match header(headers, "x-ms-documentdb-partitionkey") {
        None => Ok(None),
        Some(text) => Ok(Some(PartitionKeyValue::parse_json_text(text)?)),
    }
}

/// Provisioned throughput asked for on a create.
pub fn throughput(headers: &HeaderMap) -> ApiResult<Option<Throughput>> {
    Ok(Throughput::from_request(
        header(headers, "x-ms-offer-throughput"),
        header(headers, "x-ms-cosmos-offer-autopilot-settings"),
    )?)
}

pub fn if_match(headers: &HeaderMap) -> Option<String> {
    header(headers, "if-match").map(str::to_string)
}

/// Whether the client already holds this version (`If-None-Match`), so 304 will do.
pub fn if_none_match(headers: &HeaderMap, etag: &str) -> bool {
    header(headers, "if-none-match") == Some(etag)
}

/// Whether the client asked for writes to answer without the document (`Prefer:
/// return=minimal`).
pub fn prefers_minimal(headers: &HeaderMap) -> bool {
    header(headers, "prefer").is_some_and(|v| v.contains("return=minimal"))
}

pub fn page_items_max(headers: &HeaderMap) -> ApiResult<Option<usize>> {
    match header(headers, "x-ms-max-item-count") {
        None => Ok(None),
        Some(text) => {
            let count: i64 = text.trim().parse().map_err(|_| {
                ApiError::new(
                    Code::BadRequestHeader,
                    format!("Invalid value '{text}' for header x-ms-max-item-count."),
                )
            })?;
            // -1 (and 0) ask for the service's dynamic page size.
            Ok((count > 0).then_some(count as usize))
        }
    }
}

pub fn continuation(headers: &HeaderMap) -> Option<String> {
    header(headers, "x-ms-continuation")
        .filter(|t| !t.is_empty())
        .map(str::to_string)
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
pub fn query_request(headers: &HeaderMap, body: &Bytes) -> ApiResult<QueryRequest> {
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
        partition_key: partition_key(headers)?,
        page_items_max: page_items_max(headers)?,
        continuation: continuation(headers),
        enable_cross_partition: header_is_true(
            headers,
            "x-ms-documentdb-query-enablecrosspartition",
        ),
        effective_range: epk_range(headers),
        range_id: range_id(headers).map(str::to_string),
        populate_query_metrics: header_is_true(headers, "x-ms-documentdb-populatequerymetrics"),
        populate_index_metrics: header_is_true(headers, "x-ms-cosmos-populateindexmetrics"),
    })
}

/// `x-ms-documentdb-partitionkeyrangeid`: the id of the partition key range a request runs on.
/// Clients send the bare id; a `collection rid,id` pair names the range after its comma.
pub fn range_id(headers: &HeaderMap) -> Option<&str> {
    header(headers, "x-ms-documentdb-partitionkeyrangeid")
        .map(|value| value.rsplit(',').next().unwrap_or(value).trim())
}

/// `x-ms-start-epk` and `x-ms-end-epk`: the effective partition keys a request is narrowed to.
pub fn epk_range(headers: &HeaderMap) -> Option<(String, String)> {
    header(headers, "x-ms-start-epk")
        .zip(header(headers, "x-ms-end-epk"))
        .map(|(start, end)| (start.to_ascii_uppercase(), end.to_ascii_uppercase()))
}

/// A read feed is the query `SELECT * FROM root`, paged the same way.
pub fn feed_request(headers: &HeaderMap) -> ApiResult<QueryRequest> {
    Ok(QueryRequest {
        text: "SELECT * FROM root".into(),
        page_items_max: page_items_max(headers)?,
        continuation: continuation(headers),
        enable_cross_partition: true,
        ..QueryRequest::default()
    })
}

/// The request header that caps continuation tokens, in KiB.
pub const CONTINUATION_LIMIT_HEADER: &str = "x-ms-documentdb-responsecontinuationtokenlimitinkb";

/// `x-ms-documentdb-responsecontinuationtokenlimitinkb`: the largest continuation token the
/// client accepts, in KiB (0 or more; absent: no limit).
pub fn continuation_limit_kb(headers: &HeaderMap) -> ApiResult<Option<u64>> {
    match header(headers, CONTINUATION_LIMIT_HEADER) {
        None => Ok(None),
        Some(text) => text.trim().parse::<u64>().map(Some).map_err(|_| {
            ApiError::new(
                Code::BadRequestHeader,
                format!("Invalid value '{text}' for header {CONTINUATION_LIMIT_HEADER}."),
            )
        }),
    }
}
