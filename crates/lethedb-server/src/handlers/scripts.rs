//! Executing stored procedures (`POST dbs/{db}/colls/{c}/sprocs/{id}`), and item writes that
//! name triggers (`x-ms-documentdb-pre-trigger-include`, `x-ms-documentdb-post-trigger-include`).
//!
//! The body of an execution is the JSON array of the procedure's arguments (empty or `null`:
//! none); the answer is the JSON of what the script set as its response body. With
//! `x-ms-documentdb-script-enable-logging: true` the script's `console.log` output comes back
//! URL-encoded in `x-ms-documentdb-script-log-results`. What scripts may do, and the
//! transaction they run in, are the engine's (`lethedb_engine` scripts).

use super::context::Context;
use crate::error::{ApiError, ApiResult, Code};
use crate::request::{header, header_is_true};
use crate::respond::Reply;
use axum::http::StatusCode;
use lethedb_engine::{script_arguments, Container, TriggeredOperation, TriggeredWrite};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::Value;
use std::sync::Arc;

/// What `encodeURIComponent` leaves alone: the SDKs' own tests compare the header with it.
const URI_COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// The largest log header sent; longer output is cut at a character boundary.
const SCRIPT_LOG_BYTES_MAX: usize = 8 * 1024;

fn arguments(body: &[u8]) -> ApiResult<Vec<Value>> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let value: Value =
        serde_json::from_slice(body).map_err(|_| ApiError::from_code(Code::InvalidJson))?;
    Ok(script_arguments(Some(value)))
}

fn encoded_log(log: &str) -> String {
    let mut end = log.len().min(SCRIPT_LOG_BYTES_MAX);
    while !log.is_char_boundary(end) {
        end -= 1;
    }
    utf8_percent_encode(&log[..end], URI_COMPONENT).to_string()
}

pub async fn execute(context: &Context<'_>, container: &Arc<Container>) -> ApiResult<Reply> {
    let key = context.head.partition_key()?.cloned();
    let range = key.as_ref().map_or(0, |value| container.range_of(value));
    let logging = header_is_true(context.headers, "x-ms-documentdb-script-enable-logging");
    let response = context
        .state
        .engine
        .execute_stored_procedure(
            container,
            context.path.id(2),
            key,
            arguments(context.body)?,
            logging,
        )
        .await?;
    let lsn = context
        .range_lsn(container, range, Some(response.lsn), response.lsn)
        .await;
    let mut reply = Reply::value(StatusCode::OK, &response.body)
        .charge(response.request_units)
        .range_scoped(container, context.path, lsn, range);
    if let Some(log) = response.log.filter(|log| !log.is_empty()) {
        reply = reply.header("x-ms-documentdb-script-log-results", encoded_log(&log));
    }
    Ok(reply)
}

/// The trigger ids a header names (a comma-separated list).
fn triggers(context: &Context<'_>, name: &str) -> Vec<String> {
    header(context.headers, name)
        .map(|list| {
            list.split(',')
                .map(str::trim)
                .filter(|id| !id.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The triggers an item write names, if any: `(pre, post)`.
pub fn named_triggers(context: &Context<'_>) -> Option<(Vec<String>, Vec<String>)> {
    let pre = triggers(context, "x-ms-documentdb-pre-trigger-include");
    let post = triggers(context, "x-ms-documentdb-post-trigger-include");
    (!pre.is_empty() || !post.is_empty()).then_some((pre, post))
}

/// An item write with its triggers, answered as the write alone would be.
pub async fn triggered_write(
    context: &Context<'_>,
    container: &Arc<Container>,
    operation: TriggeredOperation,
    (pre_triggers, post_triggers): (Vec<String>, Vec<String>),
) -> ApiResult<Reply> {
    let key = context.head.partition_key()?.cloned();
    let range = key.as_ref().map_or(0, |value| container.range_of(value));
    let deleting = matches!(operation, TriggeredOperation::Delete(_));
    let outcome = context
        .state
        .engine
        .write_item_with_triggers(
            container,
            TriggeredWrite {
                operation,
                partition_key: key,
                if_match: context.head.if_match.map(str::to_string),
                pre_triggers,
                post_triggers,
            },
        )
        .await?;
    let reply = match (&outcome.item, deleting) {
        (Some(item), false) => {
            let status = if outcome.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            let body = match &outcome.response_body {
                _ if context.head.prefers_minimal => Vec::new(),
                Some(replaced) => serde_json::to_vec(replaced).unwrap_or_default(),
                None => item.to_json_bytes(),
            };
            Reply::json(status, body).header("etag", item.etag())
        }
        _ => Reply::empty(StatusCode::NO_CONTENT),
    };
    let lsn = context
        .range_lsn(container, range, Some(outcome.lsn), outcome.lsn)
        .await;
    Ok(reply
        .charge(outcome.request_units)
        .range_scoped(container, context.path, lsn, range))
}
