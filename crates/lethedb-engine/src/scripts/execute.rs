//! The engine's entry points for scripts: executing a stored procedure, and an item write with
//! pre- and post-triggers.
//!
//! Both run the same way: on a blocking thread under the script permits, the script (or the
//! triggers around the write) runs against a `ScriptView` of a fresh snapshot, then what it
//! wrote is committed through the writer in one job (`commit.rs`). When a concurrent write
//! changed something the script read, the job fails and the whole execution runs again on a new
//! snapshot, up to `SCRIPT_ATTEMPTS_MAX` times, then the client is told to retry (449). A
//! script that wrote nothing commits nothing. A failure of the script (an exception, `abort`,
//! the time budget, the memory cap, a write outside its partition) leaves nothing behind,
//! because nothing was applied.

use super::commit::{self, CommitPlan, Committed};
use super::view::{ScriptView, ScriptWrite, ScriptWriteError};
use crate::catalog::script_body::TriggerOperation;
use crate::container::Container;
use crate::counters::read_counters;
use crate::engine::Engine;
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::items::rules::{Effect, WriteMode};
use crate::items::StoredItem;
use crate::limits::SCRIPT_ATTEMPTS_MAX;
use crate::partitions::partition_key::PartitionKeyValue;
use lethedb_scripts::{Failure, Invocation, Outcome};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Request units per millisecond a script computes, on top of its operations' charges.
pub(crate) const REQUEST_UNITS_PER_SCRIPT_MS: f64 = 1.0;

/// A stored procedure's answer.
#[derive(Debug)]
pub struct ScriptResponse {
    /// What the script set as the response body (`""` when it set nothing).
    pub body: Value,
    /// `console.log` output, when logging was asked for.
    pub log: Option<String>,
    pub request_units: f64,
    /// The container's LSN after the execution (for the session token).
    pub lsn: u64,
}

/// An item write named with triggers (`x-ms-documentdb-pre-trigger-include`, `...-post-...`).
#[derive(Clone, Debug)]
pub struct TriggeredWrite {
    pub operation: TriggeredOperation,
    pub partition_key: Option<PartitionKeyValue>,
    pub if_match: Option<String>,
    pub pre_triggers: Vec<String>,
    pub post_triggers: Vec<String>,
}

/// The write a triggered request makes.
#[derive(Clone, Debug)]
pub enum TriggeredOperation {
    Create(Value),
    Upsert(Value),
    /// Replace the item with this id by the body.
    Replace(String, Value),
    Delete(String),
}

impl TriggeredOperation {
    /// The name `getRequest().getOperationType()` returns.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            TriggeredOperation::Create(_) => "Create",
            TriggeredOperation::Upsert(_) => "Upsert",
            TriggeredOperation::Replace(..) => "Replace",
            TriggeredOperation::Delete(_) => "Delete",
        }
    }

    /// Whether a trigger registered for `registered` runs on it.
    pub(crate) fn admits(&self, registered: TriggerOperation) -> bool {
        use TriggerOperation as Registered;
        match self {
            TriggeredOperation::Create(_) => {
                matches!(registered, Registered::All | Registered::Create)
            }
            TriggeredOperation::Upsert(_) => !matches!(registered, Registered::Delete),
            TriggeredOperation::Replace(..) => matches!(
                registered,
                Registered::All | Registered::Replace | Registered::Update
            ),
            TriggeredOperation::Delete(_) => {
                matches!(registered, Registered::All | Registered::Delete)
            }
        }
    }
}

/// What a triggered write produced.
#[derive(Debug)]
pub struct TriggeredOutcome {
    /// The item written (`None` for a delete).
    pub item: Option<StoredItem>,
    /// Whether the write created the item.
    pub created: bool,
    /// What a post-trigger set as the response body, which the client gets instead of the
    /// item (its copies of written documents carry their committed system properties).
    pub response_body: Option<Value>,
    pub request_units: f64,
    pub lsn: u64,
}

/// Maps a sandbox failure to the engine's: the message the service gives, and a thrown
/// `Error(number, ...)`'s number as the substatus. An operation's failure that ended the
/// execution is the one the view kept (`ended_by`), so the client sees it as it would have
/// seen it from the same request.
fn script_error(failure: Failure, ended_by: Option<EngineError>) -> EngineError {
    match failure {
        Failure::Thrown {
            number, message, ..
        } => EngineError::with_message(
            ErrorCode::ScriptFailed,
            format!("Encountered exception while executing function. Exception = {message}"),
        )
        .with_substatus(number.and_then(|n| u32::try_from(n).ok())),
        Failure::Timeout => EngineError::new(ErrorCode::ScriptTimeout),
        Failure::OutOfMemory => EngineError::new(ErrorCode::ScriptOutOfMemory),
        Failure::Operation(error) => ended_by
            .unwrap_or_else(|| EngineError::with_message(ErrorCode::ScriptFailed, error.message)),
        Failure::Sandbox(message) => EngineError::with_message(
            ErrorCode::Internal,
            format!("the script sandbox failed: {message}"),
        ),
    }
}

/// Runs one script (a stored procedure, a trigger) against `view`.
pub(crate) fn run_in_view(
    engine: &Engine,
    source: &str,
    invocation: &Invocation,
    logging: bool,
    view: &mut ScriptView<'_>,
) -> EngineResult<Outcome> {
    let limits = &engine.inner.script_limits;
    lethedb_scripts::run(source, invocation, logging, view, limits)
        .map_err(|failure| script_error(failure, view.ended_by.take()))
}

/// Gives the writes' final system properties to every copy of a written document in `value`
/// (a script's response body): a copy carries a provisional `_etag` until the commit.
pub(crate) fn finalize(
    value: &mut Value,
    provisional: &HashMap<String, Vec<u8>>,
    finals: &HashMap<Vec<u8>, StoredItem>,
) {
    match value {
        Value::Array(items) => {
            for item in items {
                finalize(item, provisional, finals);
            }
        }
        Value::Object(map) => {
            let item = map
                .get("_etag")
                .and_then(Value::as_str)
                .and_then(|etag| provisional.get(etag))
                .and_then(|key| finals.get(key));
            if let Some(Ok(Value::Object(stored))) = item.map(StoredItem::to_value) {
                for name in ["_rid", "_self", "_etag", "_ts"] {
                    if let Some(value) = stored.get(name) {
                        map.insert(name.into(), value.clone());
                    }
                }
            }
            for (_, inner) in map.iter_mut() {
                finalize(inner, provisional, finals);
            }
        }
        _ => {}
    }
}

impl Engine {
    /// Runs `work` on a blocking thread under a script permit.
    pub(crate) async fn run_script<T, F>(&self, work: F) -> EngineResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Engine) -> EngineResult<T> + Send + 'static,
    {
        self.run_blocking(&self.inner.scripts, "script", work).await
    }

    /// Commits a view's writes through the writer (from a blocking thread).
    fn commit_view(&self, plan: CommitPlan) -> EngineResult<Committed> {
        let engine = self.clone();
        tokio::runtime::Handle::current().block_on(async move {
            let writer = &engine.inner.writer;
            // A script writes one logical partition: on a store that commits shards side by
            // side, under its shard's lock alone (`commit::apply` refuses a container that has
            // other shards since).
            if let Some(shard) = plan.shard_lock.filter(|_| engine.inner.shard_writes) {
                let shards = vec![shard];
                writer
                    .write_in_shards(shards, Vec::new(), move |context| {
                        commit::apply(context, plan)
                    })
                    .await
            } else {
                writer
                    .write(move |context| commit::apply(context, plan))
                    .await
            }
        })
    }
}

/// What a script transaction left once committed (or, writing nothing, once run).
pub(crate) struct Transacted {
    /// The written items as committed, by key.
    pub(crate) finals: HashMap<Vec<u8>, StoredItem>,
    /// The provisional ETags the script was shown, by the key of their item.
    provisional: HashMap<String, Vec<u8>>,
    /// The container's LSN after it.
    pub(crate) lsn: u64,
    /// What its operations cost.
    pub(crate) request_units: f64,
}

impl Transacted {
    /// Gives copies of written documents in `value` their committed system properties.
    pub(crate) fn finalize(&self, value: &mut Value) {
        finalize(value, &self.provisional, &self.finals);
    }
}

/// Runs `run` against a view of a fresh snapshot and commits what it wrote; when a concurrent
/// write changed what it read, runs it again, up to `SCRIPT_ATTEMPTS_MAX` times (then 449). A
/// run that wrote nothing commits nothing.
pub(crate) fn transact<T>(
    engine: &Engine,
    container: &Arc<Container>,
    partition: &PartitionKeyValue,
    mut run: impl FnMut(&mut ScriptView<'_>) -> EngineResult<T>,
) -> EngineResult<(T, Transacted)> {
    for _ in 0..SCRIPT_ATTEMPTS_MAX {
        let reader = engine.inner.store.read()?;
        let mut view = ScriptView::new(
            Arc::clone(container),
            &*reader,
            engine.now_in(&*reader),
            partition.clone(),
            engine.inner.wire_status,
        );
        let value = run(&mut view)?;
        let request_units = view.request_units;
        if view.writes.is_empty() {
            let lsn = read_counters(&*reader, container, container.shard_of(partition))?.lsn;
            let done = Transacted {
                finals: HashMap::new(),
                provisional: HashMap::new(),
                lsn,
                request_units,
            };
            return Ok((value, done));
        }
        let provisional = std::mem::take(&mut view.provisional_etags);
        let plan = plan_of(container, view);
        drop(reader);
        match engine.commit_view(plan) {
            Ok(committed) => {
                let done = Transacted {
                    finals: committed.finals,
                    provisional,
                    lsn: committed.lsn,
                    request_units: request_units + committed.request_units,
                };
                return Ok((value, done));
            }
            Err(error) if error.code == ErrorCode::ScriptConflict => continue,
            Err(error) => return Err(error),
        }
    }
    Err(commit::conflict())
}

/// The triggers and the write inside one view; returns the written item's key (none for a
/// delete), whether the write created it, and the response body a post-trigger set, if any.
pub(crate) fn triggered_write(
    engine: &Engine,
    view: &mut ScriptView<'_>,
    write: &TriggeredWrite,
    pre: &[(String, String)],
    post: &[(String, String)],
) -> EngineResult<(Option<Vec<u8>>, bool, Option<Value>)> {
    let operation = write.operation.type_name();
    let mut body = match &write.operation {
        TriggeredOperation::Create(body)
        | TriggeredOperation::Upsert(body)
        | TriggeredOperation::Replace(_, body) => body.clone(),
        TriggeredOperation::Delete(_) => Value::Null,
    };
    for (_, source) in pre {
        let invocation = Invocation::PreTrigger {
            operation,
            request_body: body.clone(),
        };
        body = run_in_view(engine, source, &invocation, false, view)?.request_body;
    }
    let (key, created, response) = triggered_operation(view, write, &body)?;
    let mut response = response;
    let mut replaced = None;
    for (_, source) in post {
        let invocation = Invocation::PostTrigger {
            operation,
            request_body: body.clone(),
            response_body: response.clone(),
        };
        let outcome = run_in_view(engine, source, &invocation, false, view)?;
        if outcome.response_set {
            // The next post-trigger sees, and the client gets, the body this one set.
            response = outcome.response_body.clone();
            replaced = Some(outcome.response_body);
        }
    }
    Ok((key, created, replaced))
}

/// The write itself, between the triggers, with the body the pre-triggers left: returns the
/// written item's key (none for a delete), whether it created the item, and the document.
fn triggered_operation(
    view: &mut ScriptView<'_>,
    write: &TriggeredWrite,
    body: &Value,
) -> EngineResult<(Option<Vec<u8>>, bool, Value)> {
    let (mode, replaced) = match &write.operation {
        TriggeredOperation::Create(_) => (WriteMode::Create, None),
        TriggeredOperation::Upsert(_) => (WriteMode::Upsert, None),
        TriggeredOperation::Replace(id, _) => {
            (WriteMode::Replace(id.clone()), Some(view.key_of(id)))
        }
        TriggeredOperation::Delete(id) => {
            let key = view.key_of(id);
            view.delete(key, write.if_match.as_deref())?;
            return Ok((None, false, Value::Null));
        }
    };
    let Value::Object(map) = body.clone() else {
        return Err(EngineError::new(ErrorCode::InvalidDocument));
    };
    let (document, effect) = match view.put(mode, replaced, map, false, write.if_match.as_deref()) {
        Ok(written) => written,
        Err(ScriptWriteError::Failed(error)) => return Err(error),
        Err(ScriptWriteError::OutsidePartition) => {
            return Err(EngineError::new(ErrorCode::PartitionKeyMismatch))
        }
    };
    let key = key_of_document(view, &document);
    Ok((Some(key), effect == Effect::Create, (*document).clone()))
}

fn key_of_document(view: &ScriptView<'_>, document: &Value) -> Vec<u8> {
    view.key_of(
        document
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    )
}

/// What a finished view leaves to commit.
fn plan_of(container: &Container, view: ScriptView<'_>) -> CommitPlan {
    let mut written_keys: Vec<Vec<u8>> = view
        .writes
        .iter()
        .map(|write| match write {
            ScriptWrite::Put { body, .. } => view.key_of(&body.id),
            ScriptWrite::Delete { id } => view.key_of(id),
        })
        .collect();
    written_keys.sort();
    written_keys.dedup();
    CommitPlan {
        database_id: container.database_id.clone(),
        container_id: container.id.clone(),
        container_number: container.number,
        shards: container.shards,
        shard_lock: container
            .writes_stay_in_shards()
            .then(|| container.shard_lock(container.shard_of(&view.partition))),
        partition: view.partition.clone(),
        reads: view.reads,
        writes: view.writes,
        written_keys,
    }
}

/// A body's arguments: the JSON array sent (an empty or `null` body means none; anything else
/// is one argument).
pub fn script_arguments(body: Option<Value>) -> Vec<Value> {
    match body {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(arguments)) => arguments,
        Some(other) => vec![other],
    }
}
