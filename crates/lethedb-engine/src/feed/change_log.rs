//! The change feed's stored side, written inside the writer's transactions: the change index
//! (each item's current version under its LSN, for the latest-version feed), the change log
//! (one entry per create, replace and delete, for the all-versions-and-deletes feed), the TTL
//! events, and the log's retention.
//!
//! TTL events are LetheDB's own: the service logs a TTL delete when it purges the item, which
//! can be long after it expired. Here an expired item's delete entry is written as soon as
//! anyone could observe it missing: before every all-versions read and before every sweeper
//! purge of a whole container, the emitter appends a delete entry (`timeToLiveExpired`) for
//! every expiry-index entry between the container's watermark and the current expiry bound,
//! then moves the watermark. A job that removes an expired version within its shard alone (a
//! write over it, a partition delete, the sweeper's purge of a shard on a shared store) logs
//! that version's event itself when it lies above the watermark, since it may not move the
//! container-wide watermark. The bounds never move back (expiry is final), so each expiry is
//! emitted once; a rewrite before the expiry instant moves the item's index entry, so nothing
//! is emitted for it.

use crate::container::Container;
use crate::counters::{Counters, ShardCounters};
use crate::error::{corrupted, EngineResult};
use crate::keys::{self, ExpiryClass};
use crate::partitions::ranges::RangeFilter;
use crate::partitions::shards::Shard;
use crate::records::{ExpiryEntry, ItemRecord};
use crate::ttl::expiry::{expired_at_ms, expiry_placement};
use crate::writer::WriteContext;
use lethedb_storage::{KeyRange, ReadTxn, Table};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::ControlFlow;

/// The most log entries one emitter run trims, so a long-idle container's first read stays short.
const TRIM_ENTRIES_MAX: usize = 10_000;
/// How long a container's change log keeps entries: its `changeFeedPolicy.retentionDuration`
/// (minutes) when positive, else the server's default.
pub(crate) fn retention_ms(container: &Container, default_ms: i64) -> i64 {
    container
        .resource
        .get("changeFeedPolicy")
        .and_then(|policy| policy.get("retentionDuration"))
        .and_then(serde_json::Value::as_i64)
        .filter(|minutes| *minutes > 0)
        .map_or(default_ms, |minutes| minutes.saturating_mul(60_000))
}

/// What a change-log entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operation {
    Create = 0,
    Replace = 1,
    Delete = 2,
}

/// One decoded change-log entry.
pub(crate) struct LogEntry {
    pub(crate) operation: Operation,
    pub(crate) ttl_expired: bool,
    pub(crate) previous_lsn: u64,
    /// When it happened (for a TTL delete, the expiry instant), in milliseconds.
    pub(crate) at_ms: i64,
    /// The item key's suffix: the partition's place and the id (`keys.rs`).
    pub(crate) item_suffix: Vec<u8>,
    /// The version written, for creates and replaces.
    pub(crate) record: Option<ItemRecord>,
}

impl LogEntry {
    fn encode(&self) -> Vec<u8> {
        let record = self.record.as_ref().map(ItemRecord::encode);
        let mut out =
            Vec::with_capacity(22 + self.item_suffix.len() + record.as_ref().map_or(0, Vec::len));
        out.push(self.operation as u8);
        out.push(u8::from(self.ttl_expired));
        out.extend_from_slice(&self.previous_lsn.to_be_bytes());
        out.extend_from_slice(&self.at_ms.to_be_bytes());
        out.extend_from_slice(&(self.item_suffix.len() as u32).to_be_bytes());
        out.extend_from_slice(&self.item_suffix);
        if let Some(record) = record {
            out.extend_from_slice(&record);
        }
        out
    }

    /// The item key suffix of an encoded entry, read without decoding the version it holds
    /// (so a feed of one range decodes only its own entries).
    pub(crate) fn item_suffix_of(bytes: &[u8]) -> Option<&[u8]> {
        let length = u32::from_be_bytes(bytes.get(18..22)?.try_into().ok()?) as usize;
        bytes.get(22..22 + length)
    }

    pub(crate) fn decode(bytes: &[u8]) -> Option<LogEntry> {
        let operation = match bytes.first()? {
            0 => Operation::Create,
            1 => Operation::Replace,
            2 => Operation::Delete,
            _ => return None,
        };
        let ttl_expired = *bytes.get(1)? == 1;
        let previous_lsn = u64::from_be_bytes(bytes.get(2..10)?.try_into().ok()?);
        let at_ms = i64::from_be_bytes(bytes.get(10..18)?.try_into().ok()?);
        let item_suffix = LogEntry::item_suffix_of(bytes)?.to_vec();
        let rest = bytes.get(22 + item_suffix.len()..)?;
        let record = if operation == Operation::Delete {
            None
        } else {
            Some(ItemRecord::decode(rest)?)
        };
        Some(LogEntry {
            operation,
            ttl_expired,
            previous_lsn,
            at_ms,
            item_suffix,
            record,
        })
    }
}

/// A container's change-feed state: the TTL-event watermarks and the log's trimmed horizon.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct ChangeState {
    /// Expiry-index keys of each class below these times have had their events emitted.
    pub(crate) own_emitted_ms: Option<i64>,
    pub(crate) default_emitted_ms: Option<i64>,
    /// Every log entry at or below this LSN has been trimmed (the first shard's, in a
    /// multi-shard container).
    pub(crate) trimmed_lsn: u64,
    /// The other shards' trimmed LSNs, by shard, for a multi-shard container.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) trimmed_shards: BTreeMap<u16, u64>,
    /// Whether the change index covers items stored before it existed.
    pub(crate) indexed: bool,
}

impl ChangeState {
    /// Every entry of `lsn`'s shard at or below it has been trimmed.
    fn note_trimmed(&mut self, lsn: u64) {
        match Shard::of_lsn(lsn) {
            Shard(0) => self.trimmed_lsn = self.trimmed_lsn.max(lsn),
            Shard(shard) => {
                let trimmed = self.trimmed_shards.entry(shard).or_insert(lsn);
                *trimmed = (*trimmed).max(lsn);
            }
        }
    }

    /// The LSN of `shard` at or below which its entries are trimmed.
    pub(crate) fn trimmed(&self, shard: Shard) -> u64 {
        match shard {
            Shard(0) => self.trimmed_lsn,
            Shard(other) => self
                .trimmed_shards
                .get(&other)
                .copied()
                .unwrap_or(shard.base_lsn()),
        }
    }
}

pub(crate) fn read_state(reader: &dyn ReadTxn, container_number: u64) -> EngineResult<ChangeState> {
    match reader.get(Table::Counters, &keys::change_state_key(container_number))? {
        None => Ok(ChangeState::default()),
        Some(bytes) => serde_json::from_slice(&bytes).map_err(|_| corrupted("change feed state")),
    }
}

fn store_state(
    context: &mut WriteContext<'_>,
    container_number: u64,
    state: &ChangeState,
) -> EngineResult<()> {
    let bytes = serde_json::to_vec(state).map_err(|_| corrupted("change feed state"))?;
    context.put(
        Table::Counters,
        &keys::change_state_key(container_number),
        &bytes,
    )
}

/// Indexes a stored version under its LSN.
pub(crate) fn index_version(
    context: &mut WriteContext<'_>,
    container_number: u64,
    item_key: &[u8],
    lsn: u64,
) -> EngineResult<()> {
    let key = keys::change_index_key(container_number, lsn, keys::item_key_suffix(item_key));
    context.put(Table::ChangeIndex, &key, &[])
}

/// Removes a version's index entry.
pub(crate) fn unindex_version(
    context: &mut WriteContext<'_>,
    container_number: u64,
    item_key: &[u8],
    lsn: u64,
) -> EngineResult<()> {
    let key = keys::change_index_key(container_number, lsn, keys::item_key_suffix(item_key));
    context.delete(Table::ChangeIndex, &key)
}

/// Appends one entry under `lsn`, after any the same transaction already wrote under it.
/// Every caller appends under an LSN its own transaction took from the container's counters
/// (`items::next_lsn`, the TTL events' `counters.lsn += 1`), after every committed one, so
/// only this transaction's own entries can be there: they are looked up without asking the
/// store (a round trip per write on a shared store).
pub(crate) fn append(
    context: &mut WriteContext<'_>,
    container_number: u64,
    lsn: u64,
    entry: &LogEntry,
) -> EngineResult<()> {
    let first = keys::change_log_key(container_number, lsn, 0);
    // Most LSNs hold one entry: a point lookup settles it. A transaction's later entries take
    // the sequence the previous append left, if its entry is still there (a rolled-back
    // savepoint may have removed it); only otherwise are the entries counted.
    let mut sequence = 0u32;
    let hinted = match context.change_log_next {
        Some((container, hinted_lsn, next))
            if container == container_number && hinted_lsn == lsn && next > 0 =>
        {
            let last = keys::change_log_key(container_number, lsn, next - 1);
            context.holds_own(Table::ChangeLog, &last).then_some(next)
        }
        _ => None,
    };
    if let Some(next) = hinted {
        sequence = next;
    } else if context.holds_own(Table::ChangeLog, &first) {
        let end = keys::change_index_from(container_number, lsn.saturating_add(1));
        context.scan(
            Table::ChangeLog,
            &KeyRange::between(first, end),
            &mut |_, _| {
                sequence += 1;
                ControlFlow::Continue(())
            },
        )?;
    }
    context.put(
        Table::ChangeLog,
        &keys::change_log_key(container_number, lsn, sequence),
        &entry.encode(),
    )?;
    context.change_log_next = Some((container_number, lsn, sequence + 1));
    Ok(())
}

/// Logs a write: a create when nothing visible was replaced, else a replace of that version.
pub(crate) fn log_write(
    context: &mut WriteContext<'_>,
    container_number: u64,
    item_key: &[u8],
    record: &ItemRecord,
    replaced_lsn: Option<u64>,
) -> EngineResult<()> {
    let entry = LogEntry {
        operation: if replaced_lsn.is_some() {
            Operation::Replace
        } else {
            Operation::Create
        },
        ttl_expired: false,
        previous_lsn: replaced_lsn.unwrap_or(0),
        at_ms: record.last_modified_ms,
        item_suffix: keys::item_key_suffix(item_key).to_vec(),
        record: Some(record.clone()),
    };
    append(context, container_number, record.lsn, &entry)
}

/// Logs the delete of a visible version.
pub(crate) fn log_delete(
    context: &mut WriteContext<'_>,
    container_number: u64,
    item_key: &[u8],
    deleted_lsn: u64,
    lsn: u64,
) -> EngineResult<()> {
    let entry = LogEntry {
        operation: Operation::Delete,
        ttl_expired: false,
        previous_lsn: deleted_lsn,
        at_ms: context.now_ms,
        item_suffix: keys::item_key_suffix(item_key).to_vec(),
        record: None,
    };
    append(context, container_number, lsn, &entry)
}

/// Whether any expiry has happened since the last emitter run (a bounded lookup, no scan of
/// the backlog), so readers know whether to ask the writer to emit first.
pub(crate) fn ttl_events_pending(
    reader: &dyn ReadTxn,
    container: &Container,
    now_ms: i64,
) -> EngineResult<bool> {
    let state = read_state(reader, container.key_number())?;
    let mut pending = false;
    for (_, range) in unemitted_ranges(container, &state, now_ms) {
        reader.scan(Table::Expiry, &range, &mut |_, _| {
            pending = true;
            ControlFlow::Break(())
        })?;
        if pending {
            break;
        }
    }
    Ok(pending)
}

/// Whether the oldest log entry of any shard is past the container's retention (a lookup
/// per shard).
pub(crate) fn trim_due(
    reader: &dyn ReadTxn,
    container: &Container,
    now_ms: i64,
    default_retention_ms: i64,
) -> EngineResult<bool> {
    let before_ms = now_ms.saturating_sub(retention_ms(container, default_retention_ms));
    let mut due = false;
    for shard in container.shards_in(&RangeFilter::everything()) {
        reader.scan(
            Table::ChangeLog,
            &shard_log_range(container, shard),
            &mut |_, value| {
                due = LogEntry::decode(value).is_some_and(|entry| entry.at_ms < before_ms);
                ControlFlow::Break(())
            },
        )?;
        if due {
            break;
        }
    }
    Ok(due)
}

/// The parts of each expiry-index class that expired since the watermarks.
fn unemitted_ranges(
    container: &Container,
    state: &ChangeState,
    now_ms: i64,
) -> Vec<(ExpiryClass, KeyRange)> {
    let number = container.key_number();
    [
        (
            ExpiryClass::Own,
            state.own_emitted_ms,
            container.ttl.own_expiry_bound_ms(now_ms),
        ),
        (
            ExpiryClass::Default,
            state.default_emitted_ms,
            container.ttl.default_modified_bound_ms(now_ms),
        ),
    ]
    .into_iter()
    .filter(|(_, from, to)| *to != i64::MIN && from.is_none_or(|from| from < *to))
    .map(|(class, from, to)| {
        let start = match from {
            Some(from) => keys::expiry_bound(number, class, from),
            None => keys::expiry_prefix(number, class),
        };
        (
            class,
            KeyRange::between(start, keys::expiry_bound(number, class, to)),
        )
    })
    .collect()
}

/// The most TTL events one writer job emits. A mass expiry is emitted over several jobs, each
/// ending at a millisecond boundary, so no one transaction runs long (on a shared store it holds
/// the writers of every process).
pub(crate) const TTL_EVENTS_PER_JOB_MAX: usize = 2_000;

/// How far one class's emission got in this job.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reached {
    /// Not scanned: the job's share was used up before it.
    Untouched,
    /// Every due entry emitted.
    Bound,
    /// Stopped before the first entry of this millisecond.
    Before(i64),
}

/// Emits the TTL delete events due at `now`, then trims the log past its retention. Each event
/// takes a new LSN, so it comes after every cursor already handed out. Returns how many events
/// were emitted.
pub(crate) fn emit_ttl_events(
    context: &mut WriteContext<'_>,
    container: &Container,
) -> EngineResult<u64> {
    let retention_ms = retention_ms(container, context.change_log_retention_default_ms);
    let number = container.key_number();
    let now_ms = context.now_ms;
    let mut state = read_state(context.reader(), number)?;
    let mut due: Vec<(Vec<u8>, ExpiryEntry)> = Vec::new();
    let mut reached = [Reached::Untouched; 2];
    for (class, range) in unemitted_ranges(container, &state, now_ms) {
        if due.len() >= TTL_EVENTS_PER_JOB_MAX {
            break;
        }
        let mut class_reached = Reached::Bound;
        let mut last_ms = None;
        context.scan(Table::Expiry, &range, &mut |key, value| {
            let time_ms = keys::split_expiry_key(key).map(|(time_ms, _)| time_ms);
            if due.len() >= TTL_EVENTS_PER_JOB_MAX && time_ms != last_ms {
                if let Some(time_ms) = time_ms {
                    class_reached = Reached::Before(time_ms);
                    return ControlFlow::Break(());
                }
            }
            last_ms = time_ms;
            if let Some(entry) = ExpiryEntry::decode(value) {
                due.push((key.to_vec(), entry));
            }
            ControlFlow::Continue(())
        })?;
        reached[class as usize] = class_reached;
    }
    let emitted = due.len() as u64;
    if !due.is_empty() {
        let mut counters = ShardCounters::new(container);
        for (expiry_key, entry) in &due {
            let Some((_, suffix)) = keys::split_expiry_key(expiry_key) else {
                continue;
            };
            // The event takes the next LSN of the item's own shard.
            let shard_counters = counters.of(context, container.shard_of_suffix(suffix))?;
            shard_counters.lsn += 1;
            let lsn = shard_counters.lsn;
            let at_ms = expired_at_ms(container, expiry_key).unwrap_or(now_ms);
            let event = LogEntry {
                operation: Operation::Delete,
                ttl_expired: true,
                previous_lsn: entry.lsn,
                at_ms,
                item_suffix: suffix.to_vec(),
                record: None,
            };
            append(context, number, lsn, &event)?;
        }
        counters.store(context)?;
    }
    let advance = |reached: Reached, bound: i64, emitted: Option<i64>| match reached {
        Reached::Before(time_ms) => Some(time_ms),
        Reached::Bound => Some(bound).filter(|bound| *bound != i64::MIN).or(emitted),
        Reached::Untouched => emitted,
    };
    state.own_emitted_ms = advance(
        reached[ExpiryClass::Own as usize],
        container.ttl.own_expiry_bound_ms(now_ms),
        state.own_emitted_ms,
    );
    state.default_emitted_ms = advance(
        reached[ExpiryClass::Default as usize],
        container.ttl.default_modified_bound_ms(now_ms),
        state.default_emitted_ms,
    );
    trim(
        context,
        container,
        &mut state,
        now_ms.saturating_sub(retention_ms),
    )?;
    store_state(context, number, &state)?;
    Ok(emitted)
}

/// Logs the TTL delete event of one expired version that a write of its logical partition is
/// about to remove, unless the emitter has already (its expiry-index entry lies below its
/// class's watermark): what [`emit_ttl_events`] would log for it, under the next LSN of its
/// shard (`counters`). The version's expiry-index entry goes with it, so the emitter never logs
/// it again. It touches nothing outside the version's shard but reads the container's
/// watermarks, which only a container-wide job moves.
pub(crate) fn emit_ttl_event_of(
    context: &mut WriteContext<'_>,
    container: &Container,
    item_key: &[u8],
    record: &ItemRecord,
    counters: &mut Counters,
) -> EngineResult<()> {
    let state = read_state(context.reader(), container.key_number())?;
    emit_ttl_event_below(context, container, &state, item_key, record, counters)
}

/// [`emit_ttl_event_of`] with the container's watermarks already read (`state`), for a job
/// that removes many expired versions of its shards (the sweeper's purge within shards): the
/// watermarks cannot move under it, since only a container-wide job moves them.
pub(crate) fn emit_ttl_event_below(
    context: &mut WriteContext<'_>,
    container: &Container,
    state: &ChangeState,
    item_key: &[u8],
    record: &ItemRecord,
    counters: &mut Counters,
) -> EngineResult<()> {
    let Some((class, time_ms)) = expiry_placement(record.last_modified_ms, record.ttl) else {
        return Ok(());
    };
    let emitted = match class {
        ExpiryClass::Own => state.own_emitted_ms,
        ExpiryClass::Default => state.default_emitted_ms,
    };
    if emitted.is_some_and(|emitted| time_ms < emitted) {
        return Ok(());
    }
    let suffix = keys::item_key_suffix(item_key);
    let expiry_key = keys::expiry_key(container.key_number(), class, time_ms, suffix);
    counters.lsn += 1;
    let event = LogEntry {
        operation: Operation::Delete,
        ttl_expired: true,
        previous_lsn: record.lsn,
        at_ms: expired_at_ms(container, &expiry_key).unwrap_or(context.now_ms),
        item_suffix: suffix.to_vec(),
        record: None,
    };
    append(context, container.key_number(), counters.lsn, &event)
}

/// Deletes the log entries older than `before_ms`, each shard's oldest first, at most
/// [`TRIM_ENTRIES_MAX`] in all.
fn trim(
    context: &mut WriteContext<'_>,
    container: &Container,
    state: &mut ChangeState,
    before_ms: i64,
) -> EngineResult<()> {
    let mut doomed = Vec::new();
    for shard in container.shards_in(&RangeFilter::everything()) {
        context.scan(
            Table::ChangeLog,
            &shard_log_range(container, shard),
            &mut |key, value| match LogEntry::decode(value) {
                Some(entry) if entry.at_ms < before_ms && doomed.len() < TRIM_ENTRIES_MAX => {
                    doomed.push(key.to_vec());
                    ControlFlow::Continue(())
                }
                _ => ControlFlow::Break(()),
            },
        )?;
    }
    for key in doomed {
        if let Some(lsn) = keys::change_log_lsn(&key) {
            state.note_trimmed(lsn);
        }
        context.delete(Table::ChangeLog, &key)?;
    }
    Ok(())
}

/// Every change-index or change-log key of one shard of a container: its LSNs are one run.
pub(crate) fn shard_log_range(container: &Container, shard: Shard) -> KeyRange {
    shard_log_after(container, shard, shard.base_lsn())
}

/// The change-index or change-log keys of one shard of a container after `lsn` (one of the
/// shard's own).
pub(crate) fn shard_log_after(container: &Container, shard: Shard, lsn: u64) -> KeyRange {
    let number = container.key_number();
    let end = if container.shards <= 1 {
        keys::change_index_from(number.saturating_add(1), 0)
    } else {
        keys::change_index_from(number, Shard(shard.0 + 1).base_lsn())
    };
    KeyRange::between(keys::change_index_from(number, lsn.saturating_add(1)), end)
}

/// Indexes every stored item of a container under its LSN (stores written before the change
/// feed existed), once.
pub(crate) fn backfill_index(
    context: &mut WriteContext<'_>,
    container_number: u64,
) -> EngineResult<()> {
    let mut state = read_state(context.reader(), container_number)?;
    if state.indexed {
        return Ok(());
    }
    let mut versions = Vec::new();
    context.scan(
        Table::Items,
        &KeyRange::prefix(&keys::container_items_prefix(container_number)),
        &mut |key, value| {
            if let Some((_, lsn, _)) = ItemRecord::decode_header(value) {
                versions.push((key.to_vec(), lsn));
            }
            ControlFlow::Continue(())
        },
    )?;
    for (key, lsn) in versions {
        index_version(context, container_number, &key, lsn)?;
    }
    state.indexed = true;
    store_state(context, container_number, &state)
}
