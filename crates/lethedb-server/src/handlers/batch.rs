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
use axum::http::StatusCode;
use lethedb_engine::{entry_request_units, BatchEffect};
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

pub async fn execute(context: &Context<'_>, container: &Arc<Container>) -> ApiResult<Reply> {
    let head = context.head;
    let operations = lethedb_engine::parse_batch(&parse_json(context.body)?)?;
    // Transactional unless the client asks for bulk (non-atomic) explicitly.
    let atomic = header(context.headers, "x-ms-cosmos-batch-atomic")
        .is_none_or(|v| v.eq_ignore_ascii_case("true"));
    let (results, succeeded, lsn) = context
        .state
        .engine
        .execute_batch(
            container,
            head.partition_key()?.cloned(),
            operations,
            atomic,
        )
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
                    .value("subStatusCode", code.substatus())
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
            reply
                .range_scoped(container, context.path, lsn, range)
                .header("x-ms-documentdb-partitionkeyrangeid", range.to_string())
        }
        _ => reply.scoped_to(container, context.path, lsn, head.range_id),
    })
}
