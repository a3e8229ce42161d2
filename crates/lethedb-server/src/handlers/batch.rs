//! Transactional batches and bulk requests: one POST carrying many item operations, answered
//! with one result per operation.
//!
//! Atomicity and each operation's rules are the engine's. Result bodies are written from the
//! items' stored bytes without parsing them.

use super::context::Context;
use crate::error::ApiResult;
use crate::json_text::{write_array, ObjectWriter};
use crate::request::{header, parse_json, partition_key, prefers_minimal};
use crate::respond::Reply;
use axum::http::StatusCode;
use lethedb_engine::{request_units, Container};
use std::sync::Arc;

pub async fn execute(context: &Context<'_>, container: &Arc<Container>) -> ApiResult<Reply> {
    let headers = context.headers;
    let operations = lethedb_engine::batch::parse_batch(&parse_json(context.body)?)?;
    // Transactional unless the client asks for bulk (non-atomic) explicitly.
    let atomic =
        header(headers, "x-ms-cosmos-batch-atomic").is_none_or(|v| v.eq_ignore_ascii_case("true"));
    let (results, succeeded) = context
        .state
        .engine
        .execute_batch(
            context.path.id(0),
            context.path.id(1),
            partition_key(headers)?,
            operations,
            atomic,
        )
        .await?;
    let minimal = prefers_minimal(headers);
    let charge: f64 = results.iter().map(|r| r.request_units).sum();
    let lsn = results
        .iter()
        .filter_map(|r| r.item.as_ref().map(|i| i.record.lsn))
        .max()
        .unwrap_or(0);
    let entries = results.iter().map(|result| {
        let mut entry = ObjectWriter::new()
            .value("statusCode", result.status)
            .value("requestCharge", result.request_units);
        if let Some(item) = &result.item {
            entry = entry.value("eTag", item.etag());
            if !minimal {
                entry = entry.fragment("resourceBody", &item.to_json_bytes());
            }
        }
        if result.status >= 400 {
            entry = entry.value("subStatusCode", 0);
        }
        entry.finish()
    });
    let mut body = Vec::new();
    write_array(&mut body, entries);
    let status = if succeeded {
        StatusCode::OK
    } else {
        StatusCode::MULTI_STATUS
    };
    Ok(Reply::json(status, body)
        .charge(request_units::round_total(charge))
        .container_scoped(container, context.path, lsn))
}
