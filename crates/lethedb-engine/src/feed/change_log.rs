//! The change feed's stored side, written inside the writer's transactions: the change log
//! (one entry per create, replace and delete under its LSN, for both feeds), each shard's feed
//! marks (how far its TTL events were emitted, `feed/ttl_events.rs`, and its log trimmed), and
//! the log's retention, shard by shard.
//!
//! The log is also the latest-version feed's index. While the version a create's or replace's
//! entry records is the item's current one, the entry holds only its position (operation, time,
//! previous LSN, item key suffix) and readers take the body from the item; when that version is
//! replaced, deleted or purged, its entry takes the body ([`retire_version`]), or goes if it is
//! past retention. So a write stores its document once and writes one feed key, and trimming
//! never removes an entry whose version is current (the latest-version feed needs it however
//! old). Stores written before this layout are rewritten once when opened (`log_layout.rs`).

use crate::container::Container;
use crate::counters::{Counters, FeedMarks};
use crate::error::{corrupted, EngineResult};
use crate::keys;
use crate::partitions::shards::Shard;
use crate::records::ItemRecord;
use crate::writer::WriteContext;
use lethedb_storage::{Bytes, KeyRange, ReadTxn, Table};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
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
    /// The version written, for creates and replaces once it is no longer current; `None` for
    /// deletes and for a position (the version is the item's current one).
    pub(crate) record: Option<ItemRecord>,
}

impl LogEntry {
    pub(crate) fn encode(&self) -> Vec<u8> {
        encode_entry(
            self.operation,
            self.ttl_expired,
            self.previous_lsn,
            self.at_ms,
            &self.item_suffix,
            self.record.as_ref(),
        )
    }

    /// The item key suffix of an encoded entry, read without decoding the version it holds
    /// (so a feed of one range decodes only its own entries).
    pub(crate) fn item_suffix_of(bytes: &[u8]) -> Option<&[u8]> {
        let length = u32::from_be_bytes(bytes.get(18..ENTRY_HEADER_BYTES)?.try_into().ok()?);
        bytes.get(ENTRY_HEADER_BYTES..ENTRY_HEADER_BYTES + length as usize)
    }

    /// Whether an encoded entry is a position: a create or replace whose version is still the
    /// item's current one (it holds no body), read without decoding anything else.
    pub(crate) fn is_position(bytes: &[u8]) -> bool {
        bytes
            .first()
            .is_some_and(|operation| *operation != Operation::Delete as u8)
            && LogEntry::item_suffix_of(bytes)
                .is_some_and(|suffix| bytes.len() == ENTRY_HEADER_BYTES + suffix.len())
    }

    /// Whether this entry is a position (see [`LogEntry::is_position`]).
    pub(crate) fn holds_position(&self) -> bool {
        self.operation != Operation::Delete && self.record.is_none()
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
        let record = if operation == Operation::Delete || rest.is_empty() {
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

/// An encoded entry: the fixed header, the item key suffix, and the version it logs, if any.
fn encode_entry(
    operation: Operation,
    ttl_expired: bool,
    previous_lsn: u64,
    at_ms: i64,
    item_suffix: &[u8],
    record: Option<&ItemRecord>,
) -> Vec<u8> {
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
    out
}

/// A create's or replace's log entry, a position (no body: the item holds it).
pub(crate) struct WriteEntry {
    bytes: Vec<u8>,
}

/// The log entry of a write: a create when nothing visible was replaced, else a replace of
/// that version.
pub(crate) fn write_entry(
    item_key: &[u8],
    record: &ItemRecord,
    replaced_lsn: Option<u64>,
) -> WriteEntry {
    WriteEntry {
        bytes: written(item_key, record, replaced_lsn).encode(),
    }
}

/// [`write_entry`]'s entry, decoded.
fn written(item_key: &[u8], record: &ItemRecord, replaced_lsn: Option<u64>) -> LogEntry {
    LogEntry {
        operation: match replaced_lsn {
            Some(_) => Operation::Replace,
            None => Operation::Create,
        },
        ttl_expired: false,
        previous_lsn: replaced_lsn.unwrap_or(0),
        at_ms: record.last_modified_ms,
        item_suffix: keys::item_key_suffix(item_key).to_vec(),
        record: None,
    }
}

/// A container's change-feed state, from stores written before each shard kept its own marks (`Counters::feed`), the container-wide
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
    /// Whether the change index of an earlier layout covered items stored before it existed.
    /// Nothing reads it since the log holds positions (`log_layout.rs` gives every item one);
    /// kept so that the rows of every release parse.
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

/// How many entries an LSN holds before a scan of it keeps its positions by item
/// ([`WriteContext::change_log_positions`]).
const POSITIONS_KEPT_FROM: usize = 16;

/// The key and entry of the position that records the version at `lsn` of the item stored
/// under `item_key`, if the log holds one. Only a current version has a position, so there is
/// at most one (a transactional batch may log several writes of one item under one LSN, all
/// but the last already holding their bodies).
fn position_of(
    context: &mut WriteContext<'_>,
    container_number: u64,
    item_key: &[u8],
    lsn: u64,
) -> EngineResult<Option<(Vec<u8>, LogEntry)>> {
    let suffix = keys::item_key_suffix(item_key);
    let hinted = match &context.change_log_positions {
        Some((container, hinted_lsn, positions))
            if *container == container_number && *hinted_lsn == lsn =>
        {
            positions.get(suffix).cloned()
        }
        _ => None,
    };
    // A hint is used only if the key still holds this item's position (a rolled-back
    // savepoint, or this transaction's own writes, may have changed it since the scan).
    if let Some(key) = hinted {
        if let Some(value) = context.get(Table::ChangeLog, &key)? {
            if LogEntry::is_position(&value) && LogEntry::item_suffix_of(&value) == Some(suffix) {
                let entry = LogEntry::decode(&value).ok_or_else(|| corrupted("change log"))?;
                return Ok(Some((key, entry)));
            }
        }
    }
    let range = KeyRange::between(
        keys::change_index_from(container_number, lsn),
        keys::change_index_from(container_number, lsn.saturating_add(1)),
    );
    let (mut found, mut positions, mut entries) = (None, HashMap::new(), 0usize);
    context.scan(Table::ChangeLog, &range, &mut |key, value| {
        entries += 1;
        if LogEntry::is_position(value) {
            let Some(at) = LogEntry::item_suffix_of(value) else {
                return ControlFlow::Continue(());
            };
            if at == suffix {
                found = Some((key.to_vec(), value.to_vec()));
            } else {
                positions.insert(at.to_vec(), key.to_vec());
            }
        }
        ControlFlow::Continue(())
    })?;
    if entries >= POSITIONS_KEPT_FROM {
        context.change_log_positions = Some((container_number, lsn, positions));
    }
    match found {
        None => Ok(None),
        Some((key, value)) => {
            let entry = LogEntry::decode(&value).ok_or_else(|| corrupted("change log"))?;
            Ok(Some((key, entry)))
        }
    }
}

/// The version `record`, stored under `item_key`, stops being current (replaced, deleted or
/// purged): its position takes the body, so the all-versions feed still returns the version,
/// or goes when it is past the container's retention (trimming would have removed it).
pub(crate) fn retire_version(
    context: &mut WriteContext<'_>,
    container: &Container,
    item_key: &[u8],
    record: &ItemRecord,
) -> EngineResult<()> {
    let number = container.key_number();
    // A record that knows its entry's place rewrites it blind; an earlier release's looks.
    let found = match record.log_place {
        Some(place) => Some((
            keys::change_log_key(number, record.lsn, place.sequence),
            written(item_key, record, place.replaced_lsn),
        )),
        None => position_of(context, number, item_key, record.lsn)?,
    };
    let Some((key, mut entry)) = found else {
        return Ok(());
    };
    let retained_from_ms = retained_from_ms(
        container,
        context.now_ms,
        context.change_log_retention_default_ms,
    );
    if entry.at_ms < retained_from_ms {
        return context.delete(Table::ChangeLog, &key);
    }
    entry.record = Some(record.clone());
    context.put(Table::ChangeLog, &key, &entry.encode())
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
    append_encoded(context, container_number, lsn, Bytes::from(entry.encode()))?;
    Ok(())
}

/// [`append`] of an encoded entry.
fn append_encoded(
    context: &mut WriteContext<'_>,
    container_number: u64,
    lsn: u64,
    entry: Bytes,
) -> EngineResult<u32> {
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
    Ok(sequence)
}

/// Logs a write under its version's LSN (`entry` from [`write_entry`]); returns the entry's
/// sequence under it, which the version's record keeps ([`crate::records::LogPlace`]).
pub(crate) fn log_write(
    context: &mut WriteContext<'_>,
    container_number: u64,
    lsn: u64,
    entry: WriteEntry,
) -> EngineResult<u32> {
    let sequence = append_encoded(
        context,
        container_number,
        lsn,
        Bytes::from(entry.bytes.clone()),
    )?;
    // A position appended under the LSN whose positions are kept joins them.
    if let Some((container, kept_lsn, positions)) = &mut context.change_log_positions {
        if *container == container_number && *kept_lsn == lsn {
            if let Some(suffix) = LogEntry::item_suffix_of(&entry.bytes) {
                let key = keys::change_log_key(container_number, lsn, sequence);
                positions.insert(suffix.to_vec(), key);
            }
        }
    }
    Ok(sequence)
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

/// Whether the oldest log entry of `shard` after its trimmed LSN is past the container's
/// retention (one lookup).
pub(crate) fn trim_due(
    reader: &dyn ReadTxn,
    container: &Container,
    (shard, trimmed_lsn): (Shard, u64),
    before_ms: i64,
) -> EngineResult<bool> {
    let mut due = false;
    reader.scan(
        Table::ChangeLog,
        &shard_log_after(container, shard, trimmed_lsn.max(shard.base_lsn())),
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

/// Deletes the log entries of `shard` after its trimmed LSN that are older than `before_ms`,
/// oldest first, walking at most [`TRIM_ENTRIES_MAX`], and notes the last walked in `marks`.
/// A position stays (its version is current, and the latest-version feed needs it however
/// old); when its version is replaced, [`retire_version`] removes it, as it is past retention.
/// So the trimmed LSN means "every entry at or below it whose version is not current is gone",
/// and the next walk starts after it. Returns how many went.
pub(crate) fn trim_shard(
    context: &mut WriteContext<'_>,
    container: &Container,
    shard: Shard,
    marks: &mut FeedMarks,
    before_ms: i64,
) -> EngineResult<usize> {
    let (mut doomed, mut walked) = (Vec::new(), Vec::new());
    let from = marks.trimmed_lsn.max(shard.base_lsn());
    context.scan(
        Table::ChangeLog,
        &shard_log_after(container, shard, from),
        &mut |key, value| match LogEntry::decode(value) {
            Some(entry) if entry.at_ms < before_ms && walked.len() < TRIM_ENTRIES_MAX => {
                walked.push(key.to_vec());
                if !entry.holds_position() {
                    doomed.push(key.to_vec());
                }
                ControlFlow::Continue(())
            }
            _ => ControlFlow::Break(()),
        },
    )?;
    for key in &walked {
        if let Some(lsn) = keys::change_log_lsn(key) {
            marks.trimmed_lsn = marks.trimmed_lsn.max(lsn);
        }
    }
    for key in &doomed {
        context.delete(Table::ChangeLog, key)?;
    }
    Ok(doomed.len())
}

/// The change-log keys of one shard of a container after `lsn` (one of the
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ttl::ItemTtl;

    #[test]
    fn a_write_entry_is_a_position_and_a_retired_one_holds_the_version() {
        let record = ItemRecord {
            last_modified_ms: 1_700_000_000_000,
            lsn: 42,
            document_number: 7,
            ttl: ItemTtl::Secs(30),
            log_place: None,
            body: br#"{"id":"a","pk":"p"}"#.to_vec(),
        };
        let item_key = keys::item_key_from_suffix(3, b"suffix-of-the-item");
        for replaced in [None, Some(41)] {
            let entry = write_entry(&item_key, &record, replaced);
            assert!(LogEntry::is_position(&entry.bytes));
            let mut decoded = LogEntry::decode(&entry.bytes).expect("decodes");
            assert!(decoded.holds_position());
            assert_eq!(decoded.record, None);
            assert_eq!(decoded.previous_lsn, replaced.unwrap_or(0));
            assert_eq!(decoded.item_suffix, keys::item_key_suffix(&item_key));
            let expected = match replaced {
                None => Operation::Create,
                Some(_) => Operation::Replace,
            };
            assert_eq!(decoded.operation, expected);
            assert_eq!(decoded.at_ms, record.last_modified_ms);
            decoded.record = Some(record.clone());
            let retired = decoded.encode();
            assert!(!LogEntry::is_position(&retired));
            let again = LogEntry::decode(&retired).expect("decodes");
            assert_eq!(again.record.as_ref(), Some(&record));
            assert!(!again.holds_position());
        }
        let delete = LogEntry {
            operation: Operation::Delete,
            ttl_expired: false,
            previous_lsn: 42,
            at_ms: 1,
            item_suffix: b"suffix".to_vec(),
            record: None,
        };
        assert!(!LogEntry::is_position(&delete.encode()));
    }
}
