//! Transactional batches and bulk: several item operations on one partition key in one writer
//! job. An atomic batch commits all of its operations or none (it takes a savepoint nested in
//! the writer's own and rolls back to it when an operation fails); a non-atomic one (bulk) reports each operation's
//! own outcome. Each operation follows exactly the rules of its single-item counterpart.

use crate::container::Container;
use crate::engine::Engine;
use crate::error::{EngineError, EngineResult};
use crate::items::{
    apply_delete, apply_write, current_version, prepare_body, StoredItem, WriteMode,
};
use crate::partition_key::PartitionKeyValue;
use crate::patch::{apply_patch_item, parse_patch};
use crate::records::writer_container;
use crate::request_units;
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

/// One operation's outcome.
#[derive(Clone, Debug)]
pub struct BatchResult {
    pub status: u16,
    pub request_units: f64,
    pub item: Option<StoredItem>,
    /// An error message for failed operations.
    pub message: Option<String>,
}

fn failure_status(error: &EngineError) -> Option<u16> {
    match error {
        EngineError::NotFound(_) => Some(404),
        EngineError::Conflict(_) => Some(409),
        EngineError::PreconditionFailed(_) => Some(412),
        EngineError::BadRequest(_) | EngineError::Query(_) => Some(400),
        EngineError::TooLarge(_) => Some(413),
        // Storage failures and a refusing writer fail the whole request.
        EngineError::Storage(_)
        | EngineError::Unavailable(_)
        | EngineError::WriterBusy(_)
        | EngineError::StorePoisoned(_) => None,
    }
}

/// Parses the request body: a JSON array of operations.
pub fn parse_batch(body: &Value) -> EngineResult<Vec<BatchOperation>> {
    let Value::Array(list) = body else {
        return Err(EngineError::BadRequest(
            "A batch body must be a JSON array of operations.".into(),
        ));
    };
    if list.is_empty() || list.len() > BATCH_OPERATIONS_MAX {
        return Err(EngineError::BadRequest(format!(
            "A batch must carry between 1 and {BATCH_OPERATIONS_MAX} operations."
        )));
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
                // Clients send it as a JSON string holding the header form.
                Some(Value::String(text)) => Some(PartitionKeyValue::from_header(text)?),
                Some(other) => Some(PartitionKeyValue::from_header(&other.to_string())?),
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

fn run_operation(
    context: &mut WriteContext<'_>,
    container: &Arc<Container>,
    default_key: Option<&PartitionKeyValue>,
    operation: BatchOperation,
) -> EngineResult<BatchResult> {
    let partition_key = operation.partition_key.or_else(|| default_key.cloned());
    let body = || {
        operation
            .body
            .clone()
            .ok_or_else(|| EngineError::BadRequest("The operation needs a 'resourceBody'.".into()))
    };
    let id = || {
        operation
            .id
            .clone()
            .ok_or_else(|| EngineError::BadRequest("The operation needs an 'id'.".into()))
    };
    let written = |status: u16, item: StoredItem| BatchResult {
        status,
        request_units: request_units::write(item.record.body.len()),
        item: Some(item),
        message: None,
    };
    match operation.kind.as_str() {
        "Create" | "Upsert" | "Replace" => {
            let (body_id, document, bytes) = prepare_body(body()?)?;
            let mode = match operation.kind.as_str() {
                "Create" => WriteMode::Create,
                "Upsert" => WriteMode::Upsert,
                _ => {
                    let url_id = id()?;
                    if url_id != body_id {
                        return Err(EngineError::BadRequest(
                            "The operation's id does not match its body's id.".into(),
                        ));
                    }
                    WriteMode::Replace(url_id)
                }
            };
            let outcome = apply_write(
                context,
                Arc::clone(container),
                mode,
                partition_key,
                body_id,
                document,
                bytes,
                operation.if_match,
            )?;
            Ok(written(
                if outcome.created { 201 } else { 200 },
                outcome.item,
            ))
        }
        "Read" => {
            let key = container.partition_key.point_key(partition_key)?;
            let record = current_version(context, container, &key, &id()?)?;
            let request_units = request_units::read(record.body.len());
            Ok(BatchResult {
                status: 200,
                request_units,
                item: Some(StoredItem {
                    container: Arc::clone(container),
                    record,
                }),
                message: None,
            })
        }
        "Delete" => {
            apply_delete(
                context,
                container,
                partition_key,
                &id()?,
                operation.if_match,
            )?;
            Ok(BatchResult {
                status: 204,
                request_units: request_units::write(0),
                item: None,
                message: None,
            })
        }
        "Patch" => {
            let (operations, condition) = parse_patch(&body()?)?;
            let outcome = apply_patch_item(
                context,
                Arc::clone(container),
                partition_key,
                &id()?,
                &operations,
                condition.as_deref(),
                operation.if_match,
            )?;
            Ok(written(200, outcome.item))
        }
        other => Err(EngineError::BadRequest(format!(
            "The batch operation type '{other}' is not supported."
        ))),
    }
}

impl Engine {
    /// Runs a batch in one writer job. Atomic: all or nothing, and on failure the failing
    /// operation's status with 424 for every other. Non-atomic: each operation on its own.
    pub async fn execute_batch(
        &self,
        database_id: &str,
        container_id: &str,
        partition_key: Option<PartitionKeyValue>,
        operations: Vec<BatchOperation>,
        atomic: bool,
    ) -> EngineResult<(Vec<BatchResult>, bool)> {
        let (database_id, container_id) = (database_id.to_string(), container_id.to_string());
        self.inner
            .writer
            .write(move |context| {
                let container = writer_container(context, &database_id, &container_id)?;
                if atomic && partition_key.is_none() && !container.partition_key.is_system_key() {
                    return Err(EngineError::BadRequest(
                        "A transactional batch needs a partition key.".into(),
                    ));
                }
                // Only an atomic batch undoes earlier operations when a later one fails.
                let savepoint = atomic.then(|| context.savepoint());
                let count = operations.len();
                let mut results = Vec::with_capacity(count);
                for (index, operation) in operations.into_iter().enumerate() {
                    match run_operation(context, &container, partition_key.as_ref(), operation) {
                        Ok(result) => results.push(result),
                        Err(error) => {
                            let Some(status) = failure_status(&error) else {
                                // The writer rolls the whole job back: it returns an error.
                                if let Some(savepoint) = savepoint {
                                    context.rollback_to(savepoint);
                                }
                                return Err(error);
                            };
                            let failed = BatchResult {
                                status,
                                request_units: 1.0,
                                item: None,
                                message: Some(error.to_string()),
                            };
                            if let Some(savepoint) = savepoint {
                                context.rollback_to(savepoint);
                                let mut all: Vec<BatchResult> = (0..count)
                                    .map(|_| BatchResult {
                                        status: 424,
                                        request_units: 0.0,
                                        item: None,
                                        message: None,
                                    })
                                    .collect();
                                all[index] = failed;
                                return Ok((all, false));
                            }
                            results.push(failed);
                        }
                    }
                }
                if let Some(savepoint) = savepoint {
                    context.release(savepoint);
                }
                Ok((results, true))
            })
            .await
    }
}
