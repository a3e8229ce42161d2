//! Committing what a script wrote: one writer job that first re-checks every item the script
//! read (each must still have the version the script saw, or still be absent), then applies
//! its writes in order, each by the rules of its single-item counterpart, all under one LSN.
//! Any difference from what the script saw fails the job, which the writer rolls back whole,
//! and the caller runs the script again on a fresh snapshot. The writes are charged here, as
//! their single-item counterparts are (size and index terms), since only applying them tells
//! which index terms they change.

use super::view::ScriptWrite;
use crate::container::Container;
use crate::counters::read_counters;
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::items::{apply_delete, apply_write, read_record, StoredItem, WriteRequest};
use crate::partitions::partition_key::PartitionKeyValue;
use crate::records::writer_container;
use crate::ttl::expiry::record_is_expired;
use crate::writer::WriteContext;
use std::collections::HashMap;
use std::sync::Arc;

/// What a script's execution left to commit.
pub(crate) struct CommitPlan {
    pub(crate) database_id: String,
    pub(crate) container_id: String,
    /// The container the script ran against: a container deleted and recreated meanwhile is
    /// another one.
    pub(crate) container_number: u32,
    /// How many shards it has, and the lock of the one the script's logical partition is in
    /// when its writes stay in their shards (`Container::writes_stay_in_shards`).
    pub(crate) shards: u16,
    pub(crate) shard_lock: Option<u64>,
    pub(crate) partition: PartitionKeyValue,
    pub(crate) reads: HashMap<Vec<u8>, Option<u64>>,
    pub(crate) writes: Vec<ScriptWrite>,
    /// The keys of the items written, whose final versions the caller needs.
    pub(crate) written_keys: Vec<Vec<u8>>,
}

/// What a commit left: the final versions of the written items that still exist, by key, the
/// container's LSN after it, and what its writes cost.
pub(crate) struct Committed {
    pub(crate) finals: HashMap<Vec<u8>, StoredItem>,
    pub(crate) lsn: u64,
    pub(crate) request_units: f64,
}

/// The failure that sends the script back to run again.
pub(crate) fn conflict() -> EngineError {
    EngineError::new(ErrorCode::ScriptConflict)
}

/// Applies `plan` inside the writer; see the module's doc.
pub(crate) fn apply(context: &mut WriteContext<'_>, plan: CommitPlan) -> EngineResult<Committed> {
    let container = writer_container(context, &plan.database_id, &plan.container_id)?;
    let still_local = plan.shard_lock.is_none() || container.writes_stay_in_shards();
    if container.number != plan.container_number || container.shards != plan.shards || !still_local
    {
        return Err(conflict());
    }
    for (key, seen) in &plan.reads {
        let now = read_record(context.reader(), key)?
            .filter(|record| !record_is_expired(&container, record, context.now_ms))
            .map(|record| record.lsn);
        if now != *seen {
            return Err(conflict());
        }
    }
    // A script writes one logical partition, so one shard: its writes share the next LSN.
    let shard = container.shard_of(&plan.partition);
    let lsn = read_counters(context.reader(), &container, shard)?.lsn;
    context.pinned_lsn = Some(lsn + 1);
    let applied = apply_writes(context, &container, &plan.partition, plan.writes);
    context.pinned_lsn = None;
    let request_units = applied?;
    let mut finals = HashMap::new();
    for key in plan.written_keys {
        if let Some(record) = read_record(context.reader(), &key)? {
            let item = StoredItem {
                container: Arc::clone(&container),
                record,
            };
            finals.insert(key, item);
        }
    }
    let lsn = read_counters(context.reader(), &container, shard)?.lsn;
    Ok(Committed {
        finals,
        lsn,
        request_units,
    })
}

/// Applies the writes in order; returns what they cost.
fn apply_writes(
    context: &mut WriteContext<'_>,
    container: &Arc<Container>,
    partition: &PartitionKeyValue,
    writes: Vec<ScriptWrite>,
) -> EngineResult<f64> {
    let mut request_units = 0.0;
    for write in writes {
        let applied = match write {
            ScriptWrite::Put { mode, body } => {
                // The script's own conditions were met in its view; the read set, checked
                // above, says the state it met is still the state here.
                let request = WriteRequest {
                    mode,
                    partition_key: Some(partition.clone()),
                    body,
                    if_match: None,
                    replaced_document: None,
                };
                apply_write(context, Arc::clone(container), request)
                    .map(|outcome| outcome.request_units)
            }
            ScriptWrite::Delete { id } => {
                apply_delete(context, container, Some(partition.clone()), &id, None)
                    .map(|deleted| deleted.request_units)
            }
        };
        match applied {
            Ok(charge) => request_units += charge,
            Err(error) if error.code.is_service_failure() => return Err(error),
            // The script saw this operation succeed; failing now means the state moved.
            Err(_) => return Err(conflict()),
        }
    }
    Ok(request_units)
}
