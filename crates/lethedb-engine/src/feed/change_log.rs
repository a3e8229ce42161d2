//! The change feed's stored side, written inside the writer's transactions: the change index
//! (each item's current version under its LSN, for the latest-version feed), the change log
//! (one entry per create, replace and delete, for the all-versions-and-deletes feed), each
//! shard's feed marks (how far its TTL events were emitted, `feed/ttl_events.rs`, and its log
//! trimmed), and the log's retention, shard by shard.

use crate::container::Container;
use crate::counters::{Counters, FeedMarks};
use crate::error::{corrupted, EngineResult};
use crate::keys;
use crate::partitions::shards::Shard;
use crate::records::ItemRecord;
use crate::writer::WriteContext;
use lethedb_storage::{Bytes, KeyRange, ReadTxn, Table};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::ControlFlow;

/// The fixed part of an encoded entry before the item key suffix: operation, TTL flag,
/// previous LSN, time and the suffix's length.
const ENTRY_HEADER_BYTES: usize = 22;
/// The most log entries one job trims in a shard, so a long-idle container's first read stays
/// short.
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
        encode_entry(
            self.operation,
            self.ttl_expired,
            self.previous_lsn,
            self.at_ms,
            &self.item_suffix,
            self.record.as_ref(),
        )
        .0
    }

    /// The item key suffix of an encoded entry, read without decoding the version it holds
    /// (so a feed of one range decodes only its own entries).
    pub(crate) fn item_suffix_of(bytes: &[u8]) -> Option<&[u8]> {
        let length = u32::from_be_bytes(bytes.get(18..ENTRY_HEADER_BYTES)?.try_into().ok()?);
        bytes.get(ENTRY_HEADER_BYTES..ENTRY_HEADER_BYTES + length as usize)
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
        let rest = bytes.get(ENTRY_HEADER_BYTES + item_suffix.len()..)?;
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

/// The encoded entry, and where the version it logs (an encoded [`ItemRecord`]) starts in it.
fn encode_entry(
    operation: Operation,
    ttl_expired: bool,
    previous_lsn: u64,
    at_ms: i64,
    item_suffix: &[u8],
    record: Option<&ItemRecord>,
) -> (Vec<u8>, usize) {
    let record_at = ENTRY_HEADER_BYTES + item_suffix.len();
    let mut out = Vec::with_capacity(record_at + record.map_or(0, ItemRecord::encoded_bytes));
    out.push(operation as u8);
    out.push(u8::from(ttl_expired));
    out.extend_from_slice(&previous_lsn.to_be_bytes());
    out.extend_from_slice(&at_ms.to_be_bytes());
    out.extend_from_slice(&(item_suffix.len() as u32).to_be_bytes());
    out.extend_from_slice(item_suffix);
    if let Some(record) = record {
        record.encode_into(&mut out);
    }
    (out, record_at)
}

/// A create's or replace's log entry, encoded once with the version it logs. The item itself
/// is stored as [`WriteEntry::record`], a slice of the same buffer, so a store that keeps
/// values in memory holds the document once for the item and its change-log version.
pub(crate) struct WriteEntry {
    bytes: Bytes,
    record_at: usize,
}

impl WriteEntry {
    /// The encoded version (what [`Table::Items`] holds), sharing the entry's buffer.
    pub(crate) fn record(&self) -> Bytes {
        self.bytes.slice(self.record_at..)
    }
}

/// The log entry of a write: a create when nothing visible was replaced, else a replace of
/// that version.
pub(crate) fn write_entry(
    item_key: &[u8],
    record: &ItemRecord,
    replaced_lsn: Option<u64>,
) -> WriteEntry {
    let operation = if replaced_lsn.is_some() {
        Operation::Replace
    } else {
        Operation::Create
    };
    let (bytes, record_at) = encode_entry(
        operation,
        false,
        replaced_lsn.unwrap_or(0),
        record.last_modified_ms,
        keys::item_key_suffix(item_key),
        Some(record),
    );
    WriteEntry {
        bytes: Bytes::from(bytes),
        record_at,
    }
}

/// A container's change-feed state: whether its change index covers old items, and, from
/// stores written before each shard kept its own marks (`Counters::feed`), the container-wide
/// TTL-event watermarks and trimmed horizons that every shard without marks of its own starts
/// from. Nothing moves those any more.
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
/// Every caller appends under an LSN its own transaction took from the shard's counters
/// (`items::next_lsn`, the TTL events' `counters.lsn += 1`), after every committed one, so
/// only this transaction's own entries can be there: they are looked up without asking the
/// store (a round trip per write on a shared store).
pub(crate) fn append(
    context: &mut WriteContext<'_>,
    container_number: u64,
    lsn: u64,
    entry: &LogEntry,
) -> EngineResult<()> {
    append_encoded(context, container_number, lsn, Bytes::from(entry.encode()))
}

/// [`append`] of an encoded entry.
fn append_encoded(
    context: &mut WriteContext<'_>,
    container_number: u64,
    lsn: u64,
    entry: Bytes,
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
    context.put_bytes(
        Table::ChangeLog,
        &keys::change_log_key(container_number, lsn, sequence),
        entry,
    )?;
    context.change_log_next = Some((container_number, lsn, sequence + 1));
    Ok(())
}

/// Logs a write under its version's LSN (`entry` from [`write_entry`]).
pub(crate) fn log_write(
    context: &mut WriteContext<'_>,
    container_number: u64,
    lsn: u64,
    entry: WriteEntry,
) -> EngineResult<()> {
    append_encoded(context, container_number, lsn, entry.bytes)
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

/// How far one shard's change feed got (`Counters::feed`): its own marks once a job of the
/// shard stored them, else, for a store written before per-shard marks, the container-wide
/// ones every shard started from. `counters` are the shard's.
pub(crate) fn shard_marks(
    reader: &dyn ReadTxn,
    container: &Container,
    shard: Shard,
    counters: &Counters,
) -> EngineResult<FeedMarks> {
    if let Some(marks) = counters.feed {
        return Ok(marks);
    }
    let state = read_state(reader, container.key_number())?;
    Ok(legacy_marks(&state, shard))
}

/// The marks a shard without its own starts from: the container-wide state's.
pub(crate) fn legacy_marks(state: &ChangeState, shard: Shard) -> FeedMarks {
    FeedMarks {
        own_emitted_ms: state.own_emitted_ms,
        default_emitted_ms: state.default_emitted_ms,
        trimmed_lsn: state.trimmed(shard),
    }
}

/// Every shard's trimmed LSN, in shard order (`counters` as `read_shard_counters` gives them).
pub(crate) fn trimmed_lsns(
    reader: &dyn ReadTxn,
    container: &Container,
    counters: &[(Shard, Counters)],
) -> EngineResult<Vec<(Shard, u64)>> {
    let mut legacy = None;
    let mut trimmed = Vec::with_capacity(counters.len());
    for (shard, counters) in counters {
        let lsn = if let Some(marks) = counters.feed {
            marks.trimmed_lsn
        } else {
            if legacy.is_none() {
                legacy = Some(read_state(reader, container.key_number())?);
            }
            legacy
                .as_ref()
                .map_or(shard.base_lsn(), |state| state.trimmed(*shard))
        };
        trimmed.push((*shard, lsn));
    }
    Ok(trimmed)
}

/// Whether the oldest log entry of `shard` is past the container's retention (one lookup).
pub(crate) fn trim_due(
    reader: &dyn ReadTxn,
    container: &Container,
    shard: Shard,
    before_ms: i64,
) -> EngineResult<bool> {
    let mut due = false;
    reader.scan(
        Table::ChangeLog,
        &shard_log_range(container, shard),
        &mut |_, value| {
            due = LogEntry::decode(value).is_some_and(|entry| entry.at_ms < before_ms);
            ControlFlow::Break(())
        },
    )?;
    Ok(due)
}

/// The time before which a container's log entries are past their retention at `now_ms`.
pub(crate) fn retained_from_ms(container: &Container, now_ms: i64, default_ms: i64) -> i64 {
    now_ms.saturating_sub(retention_ms(container, default_ms))
}

/// Deletes the log entries of `shard` older than `before_ms`, oldest first, at most
/// [`TRIM_ENTRIES_MAX`], and notes the last in `marks`. Returns how many went.
pub(crate) fn trim_shard(
    context: &mut WriteContext<'_>,
    container: &Container,
    shard: Shard,
    marks: &mut FeedMarks,
    before_ms: i64,
) -> EngineResult<usize> {
    let mut doomed = Vec::new();
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
    for key in &doomed {
        if let Some(lsn) = keys::change_log_lsn(key) {
            marks.trimmed_lsn = marks.trimmed_lsn.max(lsn);
        }
        context.delete(Table::ChangeLog, key)?;
    }
    Ok(doomed.len())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ttl::ItemTtl;

    #[test]
    fn a_write_entry_holds_the_item_record_the_item_is_stored_as() {
        let record = ItemRecord {
            last_modified_ms: 1_700_000_000_000,
            lsn: 42,
            document_number: 7,
            ttl: ItemTtl::Secs(30),
            body: br#"{"id":"a","pk":"p"}"#.to_vec(),
        };
        let item_key = keys::item_key_from_suffix(3, b"suffix-of-the-item");
        for replaced in [None, Some(41)] {
            let entry = write_entry(&item_key, &record, replaced);
            assert_eq!(entry.record(), record.encode());
            assert_eq!(
                entry.record().as_ptr(),
                entry.bytes[entry.record_at..].as_ptr()
            );
            let decoded = LogEntry::decode(&entry.bytes).expect("decodes");
            assert_eq!(decoded.record.as_ref(), Some(&record));
            assert_eq!(decoded.previous_lsn, replaced.unwrap_or(0));
            assert_eq!(decoded.item_suffix, keys::item_key_suffix(&item_key));
            let expected = match replaced {
                None => Operation::Create,
                Some(_) => Operation::Replace,
            };
            assert_eq!(decoded.operation, expected);
            assert_eq!(decoded.at_ms, record.last_modified_ms);
        }
    }
}
