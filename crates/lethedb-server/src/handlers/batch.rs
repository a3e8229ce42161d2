//! Transactional batches and bulk requests: one POST carrying many item operations, answered
//! with one result per operation.
//!
//! Atomicity and each operation's rules are the engine's; each operation's status is decided
//! here, a failed one's through the error table. Result bodies are written from the items'
//! stored bytes without parsing them.

use super::context::Context;
use crate::error::{ApiResult, Code};
use crate::json_text::{write_array, ObjectWriter};
use crate::request::{header, parse_json};
use crate::respond::Reply;
use axum::http::HeaderMap;
use axum::http::StatusCode;
use lethedb_engine::{entry_request_units, BatchEffect, BatchMode};
use lethedb_engine::{request_units, Container};
use std::sync::Arc;

/// The status a successful operation gets, as its single-item counterpart would.
fn success_status(effect: BatchEffect) -> StatusCode {
    match effect {
        BatchEffect::Created => StatusCode::CREATED,
        BatchEffect::Read | BatchEffect::Replaced => StatusCode::OK,
        BatchEffect::Deleted => StatusCode::NO_CONTENT,
    }
}

/// Transactional unless the client asks for bulk (non-atomic) explicitly; bulk goes on after a
/// failed operation unless `x-ms-cosmos-batch-continue-on-error` is false (the JavaScript SDK's
/// `continueOnError: false`).
fn batch_mode(headers: &HeaderMap) -> BatchMode {
    let is_true =
        |name: &str| header(headers, name).map(|value| value.eq_ignore_ascii_case("true"));
    match (
        is_true("x-ms-cosmos-batch-atomic"),
        is_true("x-ms-cosmos-batch-continue-on-error"),
    ) {
        (None | Some(true), _) => BatchMode::Atomic,
        (Some(false), Some(false)) => BatchMode::StopOnError,
        (Some(false), _) => BatchMode::ContinueOnError,
    }
}

pub async fn execute(context: &Context<'_>, container: &Arc<Container>) -> ApiResult<Reply> {
    let head = context.head;
    let operations = lethedb_engine::parse_batch(&parse_json(context.body)?)?;
    let mode = batch_mode(context.headers);
    let (results, succeeded, lsn) = context
        .state
        .engine
        .execute_batch(container, head.partition_key()?.cloned(), operations, mode)
        .await?;
    let minimal = head.prefers_minimal;
    let charge: f64 = results.iter().map(entry_request_units).sum();
    let entries = results.iter().map(|entry| {
        let request_units = entry_request_units(entry);
        match entry {
            Ok(outcome) => {
                let mut object = ObjectWriter::new()
                    .value("statusCode", success_status(outcome.effect).as_u16())
                    .value("requestCharge", request_units);
                if let Some(item) = &outcome.item {
                    object = object.value("eTag", item.etag());
                    if !minimal {
                        object = object.fragment("resourceBody", &item.to_json_bytes());
                    }
                }
                object.finish()
            }
            // A failed operation's status comes from the one error table, as a whole request's
            // would.
            Err(error) => {
                let code = Code::Engine(error.code);
                ObjectWriter::new()
                    .value("statusCode", code.status().as_u16())
                    .value("requestCharge", request_units)
                    .value("subStatusCode", code.substatus().unwrap_or(0))
                    .finish()
            }
        }
    });
    let mut body = Vec::new();
    write_array(&mut body, entries);
    let status = if succeeded {
        StatusCode::OK
    } else {
        StatusCode::MULTI_STATUS
    };
    let reply = Reply::json(status, body).charge(request_units::round_total(charge));
    // A transactional batch lives in one logical partition, so one range answers for it; a
    // bulk request the client did not route names every range.
    Ok(match head.partition_key()? {
        Some(value) if value.0.len() == container.partition_key.paths.len() => {
            let range = container.range_of(value);
            let lsn = context.range_lsn(container, range, Some(lsn), lsn).await;
            reply
                .range_scoped(container, context.path, lsn, range)
                .header("x-ms-documentdb-partitionkeyrangeid", range.to_string())
        }
        _ => {
            let lsn = context.scoped_lsn(container, head.range_id, lsn).await;
            reply.scoped_to(container, context.path, lsn, head.range_id)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn mode(pairs: &[(&'static str, &'static str)]) -> BatchMode {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, HeaderValue::from_static(value));
        }
        batch_mode(&headers)
    }

    #[test]
    fn bulk_stops_on_an_error_only_when_told_to() {
        const ATOMIC: &str = "x-ms-cosmos-batch-atomic";
        const CONTINUE: &str = "x-ms-cosmos-batch-continue-on-error";
        assert_eq!(mode(&[]), BatchMode::Atomic);
        assert_eq!(
            mode(&[(ATOMIC, "True"), (CONTINUE, "false")]),
            BatchMode::Atomic
        );
        assert_eq!(mode(&[(ATOMIC, "False")]), BatchMode::ContinueOnError);
        assert_eq!(
            mode(&[(ATOMIC, "False"), (CONTINUE, "true")]),
            BatchMode::ContinueOnError
        );
        assert_eq!(
            mode(&[(ATOMIC, "False"), (CONTINUE, "false")]),
            BatchMode::StopOnError
        );
    }
}
