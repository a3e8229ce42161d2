//! Doors for items: write (create, upsert, replace, with or without triggers), read, delete,
//! patch, delete a logical partition, batches and bulk, the read feed, and an item's id by its
//! `_rid`. Every item door takes the resolved container. Writes are writer jobs; the read feed
//! is a scan under the bound; `read_item`, `read_item_with_lsn`, `item_id_by_rid` and
//! `container_lsn` are the non-blocking fast paths (one or two point gets).

use crate::catalog::kinds::ResourceKind;
use crate::catalog::script_body::{TriggerOperation, TriggerType};
use crate::container::Container;
use crate::counters::{decode_counters, read_container_counters, read_counters};
use crate::engine::Engine;
use crate::error::{corrupted, writer_busy, EngineError, EngineResult, ErrorCode};
use crate::items::batch::{
    check_batch_partition_key, run_batch, BatchEntry, BatchMode, BatchOperation,
};
use crate::items::patch::{apply_patch_item, parse_patch};
use crate::items::purge::apply_delete_partition;
use crate::items::rules::document_partition_key;
use crate::items::rules::{prepare_body, WriteMode};
use crate::items::{
    apply_delete, apply_write, write_reads, Feed, ItemDeleted, ItemOutcome, StoredItem,
    WriteRequest,
};
use crate::partitions::partition_key::PartitionKeyValue;
use crate::partitions::ranges::RangeFilter;
use crate::partitions::shards::Shard;
use crate::records::writer_container;
use crate::scripts::execute::{
    transact, triggered_write, TriggeredOperation, TriggeredOutcome, TriggeredWrite,
};
use crate::throughput::request_units;
use crate::writer::WriteContext;
use crate::{keys, rids};
use lethedb_storage::Table;
use serde_json::Value;
use std::sync::Arc;

impl Engine {
    /// One page of a container's (or one partition's) items in key order. The continuation is
    /// the last key returned, so a feed resumes exactly after it even if items changed meanwhile.
    pub async fn read_feed(
        &self,
        container: &Arc<Container>,
        partition_key: Option<PartitionKeyValue>,
        filter: RangeFilter,
        page_items_max: usize,
        continuation: Option<&str>,
    ) -> EngineResult<Feed> {
        let container = Arc::clone(container);
        let continuation = continuation.map(str::to_string);
        self.run_scan(move |engine| {
            engine.read_feed_blocking(
                &container,
                partition_key,
                filter,
                page_items_max,
                continuation.as_deref(),
            )
        })
        .await
    }

    /// Runs an item write with its triggers in one transaction: the pre-triggers (which may
    /// replace the body), the write, then the post-triggers; an exception in any rolls all back.
    pub async fn write_item_with_triggers(
        &self,
        container: &Arc<Container>,
        write: TriggeredWrite,
    ) -> EngineResult<TriggeredOutcome> {
        let load = |ids: &[String], wanted: TriggerType| -> EngineResult<Vec<(String, String)>> {
            ids.iter()
                .map(|id| {
                    let trigger = self.read_script(
                        ResourceKind::Trigger,
                        &container.database_id,
                        &container.id,
                        id,
                    )?;
                    if trigger.trigger_type != Some(wanted) {
                        return Err(EngineError::with_message(
                            ErrorCode::TriggerNotApplicable,
                            format!("The trigger '{id}' is not a {wanted:?}-trigger."),
                        ));
                    }
                    let registered = trigger.trigger_operation.unwrap_or(TriggerOperation::All);
                    if !write.operation.admits(registered) {
                        return Err(EngineError::with_message(
                            ErrorCode::TriggerNotApplicable,
                            format!(
                                "The trigger '{id}' is registered for the operation {registered:?} and cannot run on a {} operation.",
                                write.operation.type_name()
                            ),
                        ));
                    }
                    Ok((trigger.id, trigger.body))
                })
                .collect()
        };
        let pre = load(&write.pre_triggers, TriggerType::Pre)?;
        let post = load(&write.post_triggers, TriggerType::Post)?;
        let partition = match (&write.partition_key, &write.operation) {
            (Some(sent), _) => container.partition_key.require_full(sent.clone())?,
            (
                None,
                TriggeredOperation::Create(body)
                | TriggeredOperation::Upsert(body)
                | TriggeredOperation::Replace(_, body),
            ) => container.partition_key.extract(body),
            (None, TriggeredOperation::Delete(_)) => container.partition_key.point_key(None)?,
        };
        let container = Arc::clone(container);
        self.run_script(move |engine| {
            let ((key, created, mut response_body), mut done) =
                transact(engine, &container, &partition, |view| {
                    triggered_write(engine, view, &write, &pre, &post)
                })?;
            if let Some(body) = &mut response_body {
                done.finalize(body);
            }
            Ok(TriggeredOutcome {
                item: key.and_then(|key| done.finals.remove(&key)),
                created,
                response_body,
                request_units: request_units::round_total(done.request_units),
                lsn: done.lsn,
            })
        })
        .await
    }

    /// Runs a batch in one writer job. Atomic: all or nothing, and on failure the failing
    /// operation's error with "not attempted" for every other; every write of a committed
    /// atomic batch takes the same, next LSN (as the service's batch does). Bulk: each operation
    /// on its own, or, told to stop on an error, none after the first failure (`BatchMode`). A failure of the service rather than of an operation fails the
    /// whole request. Returns the entries, whether the batch succeeded, and the container's
    /// LSN after it (for the session token).
    pub async fn execute_batch(
        &self,
        container: &Arc<Container>,
        partition_key: Option<PartitionKeyValue>,
        operations: Vec<BatchOperation>,
        mode: BatchMode,
    ) -> EngineResult<(Vec<BatchEntry>, bool, u64)> {
        // An atomic batch stays in one logical partition; bulk in those its operations name.
        let atomic = mode == BatchMode::Atomic;
        let points = if atomic {
            point_of(container, partition_key.as_ref()).map(|point| vec![point])
        } else {
            bulk_points(container, partition_key.as_ref(), &operations)
        };
        self.write_in_partitions(
            container,
            points.as_deref(),
            Vec::new(),
            move |context, container| {
                // An atomic batch is one logical partition, so one shard: its writes share
                // the shard's next LSN.
                let shard = partition_key.as_ref().map(|key| container.shard_of(key));
                if atomic {
                    check_batch_partition_key(&container, partition_key.as_ref())?;
                    let shard = shard.unwrap_or(Shard(0));
                    let lsn = read_counters(context.reader(), &container, shard)?.lsn;
                    context.pinned_lsn = Some(lsn + 1);
                }
                let outcome = run_batch(context, &container, partition_key, operations, mode);
                context.pinned_lsn = None;
                let (entries, succeeded) = outcome?;
                let lsn = match shard {
                    Some(shard) => read_counters(context.reader(), &container, shard)?.lsn,
                    None => read_container_counters(context.reader(), &container)?.lsn,
                };
                Ok((entries, succeeded, lsn))
            },
        )
        .await
    }

    /// Patches one visible item; returns the new version.
    pub async fn patch_item(
        &self,
        container: &Arc<Container>,
        partition_key: Option<PartitionKeyValue>,
        id: &str,
        body: Value,
        if_match: Option<String>,
    ) -> EngineResult<ItemOutcome> {
        let (operations, condition) = parse_patch(&body)?;
        let id = id.to_string();
        let point = point_of(container, partition_key.as_ref());
        let generation = self.inner.writer.written.generation();
        let mut outcome = self
            .write_in_partition(
                container,
                point.as_ref(),
                Vec::new(),
                move |context, container| {
                    apply_patch_item(
                        context,
                        container,
                        partition_key,
                        &id,
                        &operations,
                        condition.as_deref(),
                        if_match,
                    )
                },
            )
            .await?;
        self.remember_written(generation, &mut outcome);
        Ok(outcome)
    }

    /// Creates, upserts or replaces an item. `partition_key` is the request's header value, if
    /// sent; it must name the partition key the document holds.
    pub async fn write_item(
        &self,
        container: &Arc<Container>,
        mode: WriteMode,
        partition_key: Option<PartitionKeyValue>,
        body: Value,
        if_match: Option<String>,
    ) -> EngineResult<ItemOutcome> {
        let request = WriteRequest {
            mode,
            partition_key,
            body: prepare_body(body)?,
            if_match,
            replaced_document: None,
        };
        // Only a shared store fetches the keys a write will read; elsewhere the hint is waste.
        let reads = if self.inner.shared {
            write_reads(container, &request)
        } else {
            Vec::new()
        };
        let point = document_partition_key(container, &request.body.document).ok();
        // Read before the write: a snapshot restored after it clears the cache (`insert_in`).
        let generation = self.inner.writer.written.generation();
        let mut outcome = self
            .write_in_partition(
                container,
                point.as_ref(),
                reads,
                move |context, container| apply_write(context, container, request),
            )
            .await?;
        self.remember_written(generation, &mut outcome);
        Ok(outcome)
    }

    /// Puts the document of a committed write that replaced a version in the writer's cache
    /// (`Writer::written`), for the item's next write; `generation` is the cache's, read before
    /// the write was queued.
    fn remember_written(&self, generation: u64, outcome: &mut ItemOutcome) {
        if let Some((key, document)) = outcome.written.take() {
            let record = &outcome.item.record;
            let written = &self.inner.writer.written;
            written.insert_in(
                Some(generation),
                &key,
                record.lsn,
                document,
                record.body.len(),
            );
        }
    }

    /// Writes an item as an import does (`--seed` of an export): upserted with the instant it
    /// was last modified where it came from, so its `_ts` and the instant its time to live ends
    /// are kept (an instant in the future is taken as now). `None`, and nothing written, when
    /// it has already expired.
    pub async fn import_item(
        &self,
        container: &Arc<Container>,
        body: Value,
        last_modified_ms: i64,
    ) -> EngineResult<Option<ItemOutcome>> {
        let request = WriteRequest {
            mode: WriteMode::Upsert,
            partition_key: None,
            body: prepare_body(body)?,
            if_match: None,
            replaced_document: None,
        };
        let resolved = Arc::clone(container);
        self.inner
            .writer
            .write(move |context| {
                let container = current_container(context, &resolved)?;
                let now_ms = context.now_ms;
                let last_modified_ms = last_modified_ms.min(now_ms);
                let ttl = crate::ttl::item_ttl(&request.body.document);
                if container.ttl.is_expired(last_modified_ms, ttl, now_ms) {
                    return Ok(None);
                }
                // The write's instant is the group's: lent to this one write, then given back.
                context.now_ms = last_modified_ms;
                let outcome = apply_write(context, container, request);
                context.now_ms = now_ms;
                outcome.map(Some)
            })
            .await
    }

    /// Reads one item; expired items are not found.
    pub fn read_item(
        &self,
        container: &Arc<Container>,
        partition_key: Option<PartitionKeyValue>,
        id: &str,
    ) -> EngineResult<StoredItem> {
        self.read_item_in(container, partition_key, id, false)
            .map(|(item, _)| item)
    }

    /// Reads one item and, from the same snapshot, the container's latest LSN: the session
    /// token a read answers with is the partition's latest, not the item's own.
    /// On a shared store the read is awaited, holding no thread while PostgreSQL answers.
    pub async fn read_item_with_lsn(
        &self,
        container: &Arc<Container>,
        partition_key: Option<PartitionKeyValue>,
        id: &str,
    ) -> EngineResult<(StoredItem, u64)> {
        self.read_item_awaiting(container, partition_key, id, true)
            .await
    }

    /// Deletes one item; returns the container LSN of the deletion and its charge.
    pub async fn delete_item(
        &self,
        container: &Arc<Container>,
        partition_key: Option<PartitionKeyValue>,
        id: &str,
        if_match: Option<String>,
    ) -> EngineResult<ItemDeleted> {
        let id = id.to_string();
        let point = point_of(container, partition_key.as_ref());
        self.write_in_partition(
            container,
            point.as_ref(),
            Vec::new(),
            move |context, container| {
                apply_delete(context, &container, partition_key, &id, if_match)
            },
        )
        .await
    }

    /// Deletes every item of one logical partition (expired ones too) in one transaction;
    /// returns how many visible items went.
    pub async fn delete_partition(
        &self,
        container: &Arc<Container>,
        partition_key: PartitionKeyValue,
    ) -> EngineResult<u64> {
        let point = container
            .partition_key
            .require_full(partition_key.clone())
            .ok();
        self.write_in_partition(
            container,
            point.as_ref(),
            Vec::new(),
            move |context, container| apply_delete_partition(context, &container, partition_key),
        )
        .await
    }

    /// The id of the item whose `_rid` is `rid`, for clients that address items by `_self`.
    pub fn item_id_by_rid(&self, container: &Container, rid: &str) -> EngineResult<Option<String>> {
        let Some(document_number) = rids::document_number_of(rid) else {
            return Ok(None);
        };
        let reader = self.inner.store.read()?;
        let Some(suffix) = reader.get(
            Table::ResourceIds,
            &keys::resource_id_key(container.key_number(), document_number),
        )?
        else {
            return Ok(None);
        };
        Ok(keys::split_item_suffix(&suffix).map(|(_, id)| id.to_string()))
    }

    /// The container's current version (its shards' LSNs summed), for session tokens on reads.
    pub fn container_lsn(&self, container: &Container) -> EngineResult<u64> {
        let reader = self.inner.store.read()?;
        Ok(read_container_counters(&*reader, container)?.lsn)
    }

    /// The LSN of the shard of the logical partition `partition_key` (the container's version
    /// without one), for the session token of a point read that found nothing, for a caller on
    /// an asynchronous runtime: on a shared store, one awaited statement outside any
    /// transaction, holding no thread.
    pub async fn container_lsn_awaiting(
        &self,
        container: &Container,
        partition_key: Option<&PartitionKeyValue>,
    ) -> EngineResult<u64> {
        let Some(shard) = partition_key.map(|key| container.shard_of(key)) else {
            return self.container_lsn(container);
        };
        let key = container.counters_key(shard);
        if let Some(look) = self.inner.store.look_async(&[(Table::Counters, &key)]) {
            let [counters]: [Option<Vec<u8>>; 1] = look
                .await?
                .values
                .try_into()
                .map_err(|_| corrupted("a look's values"))?;
            return Ok(decode_counters(counters, shard)?.lsn);
        }
        let reader = self.inner.store.read()?;
        Ok(read_counters(&*reader, container, shard)?.lsn)
    }
}

/// The container a writer job works on: the one that now holds the resolved container's name,
/// looked up again inside the job. Between the request's lookup and the commit the container
/// may have been deleted (the job then fails with the same not-found as a request naming no
/// container), replaced by a new one of the same name (the job writes to the new one), or, on
/// a shared store, changed by another process; the writer's own cache of container definitions
/// is cleared whenever any of these can have happened.
fn current_container(
    context: &mut WriteContext<'_>,
    resolved: &Container,
) -> EngineResult<Arc<Container>> {
    writer_container(context, &resolved.database_id, &resolved.id)
}

/// The logical partitions a bulk request's operations write or read: each operation's own
/// key, else the request's, else (a create, upsert or replace) its document's; `None` when one
/// names none, and the request then runs under the store's lock.
fn bulk_points(
    container: &Container,
    partition_key: Option<&PartitionKeyValue>,
    operations: &[BatchOperation],
) -> Option<Vec<PartitionKeyValue>> {
    operations
        .iter()
        .map(|operation| {
            let named = operation.partition_key.as_ref().or(partition_key);
            point_of(container, named).or_else(|| {
                let writes = matches!(operation.kind.as_str(), "Create" | "Upsert" | "Replace");
                let body = operation
                    .body
                    .as_ref()
                    .filter(|_| writes && named.is_none())?;
                document_partition_key(container, body).ok()
            })
        })
        .collect()
}

/// The one logical partition a point operation names (its header's key, or the container's
/// only partition when it has no partition key), if it names one.
fn point_of(
    container: &Container,
    partition_key: Option<&PartitionKeyValue>,
) -> Option<PartitionKeyValue> {
    container
        .partition_key
        .point_key(partition_key.cloned())
        .ok()
}

/// [`current_container`] for a job queued under `resolved`'s shard locks
/// (`Writer::write_in_shards`): a container re-created under the same name since has other
/// shards, which the job does not hold, and one whose writes no longer stay in their shards
/// needs the store's lock, so either is refused as busy and the client's retry resolves the
/// definition again.
fn container_in_shards(
    context: &mut WriteContext<'_>,
    resolved: &Container,
    locked: bool,
) -> EngineResult<Arc<Container>> {
    let container = current_container(context, resolved)?;
    if locked && !(resolved.same_shards(&container) && container.writes_stay_in_shards()) {
        return Err(writer_busy());
    }
    Ok(container)
}

impl Engine {
    /// Queues an item operation on `container`: under the lock of the shard of
    /// `partition_key` alone when the store commits shards side by side (PostgreSQL, fjall), the
    /// key is known and the container's writes stay in their shards (so writes to other shards,
    /// from any lane or process, commit beside it), else under the store's. `operation` gets the container as the writer reads it again
    /// ([`container_in_shards`]).
    async fn write_in_partition<T, F>(
        &self,
        container: &Arc<Container>,
        partition_key: Option<&PartitionKeyValue>,
        prefetch: Vec<(Table, Vec<u8>)>,
        operation: F,
    ) -> EngineResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriteContext<'_>, Arc<Container>) -> EngineResult<T> + Send + 'static,
    {
        let partitions = partition_key.map(std::slice::from_ref);
        self.write_in_partitions(container, partitions, prefetch, operation)
            .await
    }

    /// [`Engine::write_in_partition`] for an operation on several logical partitions: under
    /// the locks of their shards.
    async fn write_in_partitions<T, F>(
        &self,
        container: &Arc<Container>,
        partition_keys: Option<&[PartitionKeyValue]>,
        prefetch: Vec<(Table, Vec<u8>)>,
        operation: F,
    ) -> EngineResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut WriteContext<'_>, Arc<Container>) -> EngineResult<T> + Send + 'static,
    {
        let resolved = Arc::clone(container);
        let operation = move |context: &mut WriteContext<'_>, locked: bool| {
            let current = container_in_shards(context, &resolved, locked)?;
            operation(context, current)
        };
        let writer = &self.inner.writer;
        let shard_local = self.inner.shard_writes && container.writes_stay_in_shards();
        match partition_keys.filter(|keys| shard_local && !keys.is_empty()) {
            Some(keys) => {
                let mut shards: Vec<u64> = keys
                    .iter()
                    .map(|key| container.shard_lock(container.shard_of(key)))
                    .collect();
                shards.sort_unstable();
                shards.dedup();
                writer
                    .write_in_shards(shards, prefetch, move |context| operation(context, true))
                    .await
            }
            None => {
                writer
                    .write_reading(prefetch, move |context| operation(context, false))
                    .await
            }
        }
    }
}
