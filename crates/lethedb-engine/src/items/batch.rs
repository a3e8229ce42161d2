//! Transactional batches and bulk: several item operations on one partition key in one writer
//! job. An atomic batch commits all of its operations or none (a savepoint undoes what earlier
//! operations wrote when a later one fails); a non-atomic one (bulk) reports each operation's
//! own outcome, or, told to stop on an error, attempts none after the first failure. Each operation follows exactly the rules of its single-item counterpart.

use crate::container::Container;
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::items::patch::{apply_patch_item, parse_patch};
use crate::items::rules::{prepare_body, WriteMode};
use crate::items::{
    apply_delete, apply_write, current_version, ItemOutcome, StoredItem, WriteRequest,
};
use crate::partitions::partition_key::PartitionKeyValue;
use crate::throughput::request_units;
use crate::writer::WriteContext;
use serde_json::Value;
use std::sync::Arc;

/// The most operations one batch may carry (the service's limit).
pub const BATCH_OPERATIONS_MAX: usize = 100;

/// One operation of a batch, as sent.
#[derive(Clone, Debug)]
pub struct BatchOperation {
    /// `Create`, `Upsert`, `Read`, `Replace`, `Delete` or `Patch`.
    pub kind: String,
    pub id: Option<String>,
    pub body: Option<Value>,
    pub if_match: Option<String>,
    /// The operation's own partition key (bulk); otherwise the request's applies.
    pub partition_key: Option<PartitionKeyValue>,
}

/// What a successful operation did; the wire layer picks its status from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchEffect {
    /// A new item was written (create, or an upsert that found none).
    Created,
    /// The item was read.
    Read,
    /// An existing item was replaced (replace, patch, or an upsert that found one).
    Replaced,
    /// The item was deleted.
    Deleted,
}

/// One successful operation's outcome.
#[derive(Clone, Debug)]
pub struct BatchOutcome {
    pub effect: BatchEffect,
    pub request_units: f64,
    pub item: Option<StoredItem>,
}

/// One operation's entry in a batch's answer: its outcome, or why it failed. An operation an
/// atomic batch did not attempt because another failed carries
/// [`ErrorCode::BatchOperationNotAttempted`].
pub type BatchEntry = Result<BatchOutcome, EngineError>;

/// How a batch treats a failed operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchMode {
    /// A transactional batch: one failure undoes every operation, and each other one is "not
    /// attempted" (424).
    Atomic,
    /// Bulk: every operation runs, and each reports its own outcome.
    ContinueOnError,
    /// Bulk with `x-ms-cosmos-batch-continue-on-error: false`: the operations before the first
    /// failure keep their effects and outcomes, and those after it are "not attempted" (424),
    /// as the service answers them.
    StopOnError,
}

/// What a failed operation costs: one unit, as the service charges; one not attempted is free.
const FAILED_OPERATION_REQUEST_UNITS: f64 = 1.0;

/// The request units an entry costs.
pub fn entry_request_units(entry: &BatchEntry) -> f64 {
    match entry {
        Ok(outcome) => outcome.request_units,
        Err(error) if error.code == ErrorCode::BatchOperationNotAttempted => 0.0,
        Err(_) => FAILED_OPERATION_REQUEST_UNITS,
    }
}

/// Parses the request body: a JSON array of operations.
pub fn parse_batch(body: &Value) -> EngineResult<Vec<BatchOperation>> {
    let Value::Array(list) = body else {
        return Err(EngineError::with_message(
            ErrorCode::InvalidBatch,
            "A batch body must be a JSON array of operations.",
        ));
    };
    // The service's messages (the SDKs' own tests against it expect them).
    if list.is_empty() {
        return Err(EngineError::with_message(
            ErrorCode::InvalidBatch,
            "Batch request has no operations.",
        ));
    }
    if list.len() > BATCH_OPERATIONS_MAX {
        return Err(EngineError::with_message(
            ErrorCode::InvalidBatch,
            "Batch request has more operations than what is supported.",
        ));
    }
    list.iter()
        .map(|raw| {
            let kind = raw
                .get("operationType")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let partition_key = match raw.get("partitionKey") {
                None | Some(Value::Null) => None,
                // Clients send it as a JSON string holding the value as JSON text.
                Some(Value::String(text)) => Some(PartitionKeyValue::parse_json_text(text)?),
                Some(other) => Some(PartitionKeyValue::parse_json_text(&other.to_string())?),
            };
            Ok(BatchOperation {
                kind,
                id: raw.get("id").and_then(Value::as_str).map(str::to_string),
                body: raw.get("resourceBody").cloned(),
                if_match: raw
                    .get("ifMatch")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                partition_key,
            })
        })
        .collect()
}

impl BatchOperation {
    /// The operation's `resourceBody`, which writes and patches need.
    fn take_body(&mut self) -> EngineResult<Value> {
        self.body.take().ok_or_else(|| {
            EngineError::with_message(
                ErrorCode::InvalidBatch,
                "The operation needs a 'resourceBody'.",
            )
        })
    }

    /// The operation's `id`, which reads, replaces, deletes and patches need.
    fn take_id(&mut self) -> EngineResult<String> {
        self.id.take().ok_or_else(|| {
            EngineError::with_message(ErrorCode::InvalidBatch, "The operation needs an 'id'.")
        })
    }
}

/// Runs one operation of a batch by the rules of its single-item counterpart.
fn run_operation(
    context: &mut WriteContext<'_>,
    container: &Arc<Container>,
    default_key: Option<&PartitionKeyValue>,
    mut operation: BatchOperation,
) -> EngineResult<BatchOutcome> {
    let partition_key = operation
        .partition_key
        .take()
        .or_else(|| default_key.cloned());
    match operation.kind.as_str() {
        "Create" | "Upsert" | "Replace" => run_write(context, container, partition_key, operation),
        "Read" => {
            let key = container.partition_key.point_key(partition_key)?;
            let record = current_version(context, container, &key, &operation.take_id()?)?;
            Ok(BatchOutcome {
                effect: BatchEffect::Read,
                request_units: request_units::read(record.body.len()),
                item: Some(StoredItem {
                    container: Arc::clone(container),
                    record,
                }),
            })
        }
        "Delete" => {
            let id = operation.take_id()?;
            let deleted = apply_delete(context, container, partition_key, &id, operation.if_match)?;
            Ok(BatchOutcome {
                effect: BatchEffect::Deleted,
                request_units: deleted.request_units,
                item: None,
            })
        }
        "Patch" => {
            let (operations, condition) = parse_patch(&operation.take_body()?)?;
            let outcome = apply_patch_item(
                context,
                Arc::clone(container),
                partition_key,
                &operation.take_id()?,
                &operations,
                condition.as_deref(),
                operation.if_match,
            )?;
            Ok(written(BatchEffect::Replaced, outcome))
        }
        other => Err(EngineError::with_message(
            ErrorCode::InvalidBatch,
            format!("The batch operation type '{other}' is not supported."),
        )),
    }
}

/// A create, upsert or replace of a batch.
fn run_write(
    context: &mut WriteContext<'_>,
    container: &Arc<Container>,
    partition_key: Option<PartitionKeyValue>,
    mut operation: BatchOperation,
) -> EngineResult<BatchOutcome> {
    let body = prepare_body(operation.take_body()?)?;
    let mode = match operation.kind.as_str() {
        "Create" => WriteMode::Create,
        "Upsert" => WriteMode::Upsert,
        // A body with another id renames the item, as a single replace does.
        _ => WriteMode::Replace(operation.take_id()?),
    };
    let request = WriteRequest {
        mode,
        partition_key,
        body,
        if_match: operation.if_match,
        replaced_document: None,
    };
    let outcome = apply_write(context, Arc::clone(container), request)?;
    let effect = if outcome.created {
        BatchEffect::Created
    } else {
        BatchEffect::Replaced
    };
    Ok(written(effect, outcome))
}

/// The outcome of an operation that wrote an item, charged as its single-item counterpart is.
fn written(effect: BatchEffect, outcome: ItemOutcome) -> BatchOutcome {
    BatchOutcome {
        effect,
        request_units: outcome.request_units,
        item: Some(outcome.item),
    }
}

/// A transactional batch needs its partition key, whole: a partial hierarchical key is refused
/// for the request, as the service does.
pub(crate) fn check_batch_partition_key(
    container: &Container,
    partition_key: Option<&PartitionKeyValue>,
) -> EngineResult<()> {
    match partition_key {
        None if container.partition_key.is_system_key() => Ok(()),
        None => Err(EngineError::with_message(
            ErrorCode::PartitionKeyMissing,
            "A transactional batch needs a partition key.",
        )),
        Some(key) => container
            .partition_key
            .require_full(key.clone())
            .map(|_| ())
            .map_err(|_| {
                EngineError::with_message(
                    ErrorCode::PartitionKeyMismatch,
                    BATCH_PARTITION_KEY_MISMATCH,
                )
            }),
    }
}

/// The service's message for a batch whose partition key does not fit the container.
const BATCH_PARTITION_KEY_MISMATCH: &str = "Partition key provided either doesn't correspond to definition in the collection or doesn't match partition key field values specified in the document.";

/// The operations of one batch, each in its own savepoint and the whole in another: a failed
/// operation leaves nothing behind, and in an atomic batch undoes the ones before it.
pub(crate) fn run_batch(
    context: &mut WriteContext<'_>,
    container: &Arc<Container>,
    partition_key: Option<PartitionKeyValue>,
    operations: Vec<BatchOperation>,
    mode: BatchMode,
) -> EngineResult<(Vec<BatchEntry>, bool)> {
    let batch_savepoint = context.savepoint();
    let count = operations.len();
    let mut results = Vec::with_capacity(count);
    for (index, operation) in operations.into_iter().enumerate() {
        let operation_savepoint = context.savepoint();
        match run_operation(context, container, partition_key.as_ref(), operation) {
            Ok(outcome) => {
                context.release(operation_savepoint);
                results.push(Ok(outcome));
            }
            Err(error) => {
                context.rollback_to(operation_savepoint);
                if error.code.is_service_failure() {
                    context.rollback_to(batch_savepoint);
                    return Err(error);
                }
                match mode {
                    BatchMode::Atomic => {
                        context.rollback_to(batch_savepoint);
                        let mut all: Vec<BatchEntry> =
                            (0..count).map(|_| not_attempted()).collect();
                        all[index] = Err(error);
                        return Ok((all, false));
                    }
                    BatchMode::StopOnError => {
                        results.push(Err(error));
                        results.extend((index + 1..count).map(|_| not_attempted()));
                        break;
                    }
                    BatchMode::ContinueOnError => results.push(Err(error)),
                }
            }
        }
    }
    context.release(batch_savepoint);
    Ok((results, true))
}

fn not_attempted() -> BatchEntry {
    Err(EngineError::new(ErrorCode::BatchOperationNotAttempted))
}
