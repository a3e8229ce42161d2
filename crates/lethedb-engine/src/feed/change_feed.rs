//! Reading the change feed: the latest-version mode from the change index, the
//! all-versions-and-deletes mode from the change log (`change_log` writes both).
//!
//! A cursor is an LSN: a page holds what changed after it, in LSN order, and its ETag is the LSN
//! of its last entry. A page never splits one LSN (the writes of one transactional batch share
//! it), even past the page size. Nothing new is "not modified" with the container's current
//! LSN, answered from the counters alone when the cursor is already there (an idle poll scans
//! nothing). Before an all-versions read, the writer emits the TTL events that are due, so an
//! expired item's delete is readable from its expiry instant on.

use crate::container::Container;
use crate::engine::Engine;
use crate::error::{corrupted, EngineError, EngineResult, ErrorCode};
use crate::feed::change_log::{self, LogEntry, Operation};
use crate::items::{read_record, StoredItem};
use crate::keys;
use crate::limits::{PAGE_ITEMS_DEFAULT, PAGE_ITEMS_MAX};
use crate::partitions::partition_key::{PartitionKeyDefinition, PartitionKeyValue};
use crate::partitions::ranges::{RangeFilter, RangeMatcher};
use crate::records::{read_counters, writer_container};
use crate::scan_visit::try_scan;
use crate::ttl::expiry::record_is_expired;
use lethedb_storage::{KeyRange, ReadTxn, Table};
use serde_json::{json, Map, Value};
use std::ops::ControlFlow;
use std::sync::Arc;

/// Which change feed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeFeedMode {
    /// The latest version of each changed item (`A-IM: Incremental feed`).
    LatestVersion,
    /// Every create, replace and delete, TTL deletes included (`A-IM: Full-Fidelity Feed`).
    AllVersionsAndDeletes,
}

/// Where a read starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeFeedStart {
    Beginning,
    Now,
    /// The first versions written at or after this instant (milliseconds).
    PointInTime {
        ms: i64,
    },
    /// After this LSN (an earlier page's ETag).
    Continuation {
        lsn: u64,
    },
}

/// One change-feed read.
#[derive(Clone, Debug)]
pub struct ChangeFeedRequest {
    pub mode: ChangeFeedMode,
    pub start: ChangeFeedStart,
    /// One logical partition, or a prefix of a hierarchical key.
    pub partition_key: Option<PartitionKeyValue>,
    /// The partition key range and EPK range read.
    pub filter: RangeFilter,
    pub page_items_max: Option<usize>,
}

/// One page of the change feed.
#[derive(Debug)]
pub struct ChangeFeedPage {
    /// Each `Documents` element as JSON bytes.
    pub entries: Vec<Vec<u8>>,
    /// The LSN to resume after (the response's ETag).
    pub etag_lsn: u64,
    /// Nothing changed after the cursor.
    pub not_modified: bool,
    /// The container's latest LSN (the session token's).
    pub lsn: u64,
}

impl Engine {
    /// Emits every due TTL event of these containers (and trims their logs), in as many writer
    /// jobs as a mass expiry needs: each job emits a bounded share, so other writes (of every
    /// process, on a shared store) get their turn in between.
    pub(crate) async fn emit_due_ttl_events(
        &self,
        mut due: Vec<(String, String)>,
    ) -> EngineResult<()> {
        while !due.is_empty() {
            due = self
                .inner
                .writer
                .write(move |context| {
                    let mut unfinished = Vec::new();
                    for (database_id, container_id) in due {
                        let container = writer_container(context, &database_id, &container_id)?;
                        let emitted = change_log::emit_ttl_events(context, &container)?;
                        if emitted >= change_log::TTL_EVENTS_PER_JOB_MAX as u64 {
                            unfinished.push((database_id, container_id));
                        }
                    }
                    Ok(unfinished)
                })
                .await?;
        }
        Ok(())
    }

    pub(crate) fn read_change_feed_blocking(
        &self,
        container: &Arc<Container>,
        request: &ChangeFeedRequest,
    ) -> EngineResult<ChangeFeedPage> {
        let number = container.key_number();
        let reader = self.inner.store.read()?;
        let now_ms = self.now_in(&*reader);
        let current = read_counters(&*reader, number)?.lsn;
        let (cursor, since_ms) = match request.start {
            ChangeFeedStart::Beginning => (0, None),
            ChangeFeedStart::Now => (current, None),
            ChangeFeedStart::PointInTime { ms } => (0, Some(ms)),
            ChangeFeedStart::Continuation { lsn } => (lsn, None),
        };
        if request.mode == ChangeFeedMode::AllVersionsAndDeletes {
            let state = change_log::read_state(&*reader, number)?;
            if cursor < state.trimmed_lsn {
                return Err(EngineError::new(ErrorCode::ChangeFeedOutsideRetention));
            }
        }
        let not_modified = |etag_lsn| ChangeFeedPage {
            entries: Vec::new(),
            etag_lsn,
            not_modified: true,
            lsn: current,
        };
        // An idle poll: nothing was written after the cursor, so nothing is read.
        if cursor >= current {
            return Ok(not_modified(cursor));
        }
        let read = PageRead {
            reader: &*reader,
            container,
            request,
            now_ms,
            since_ms,
        };
        let (entries, last_lsn) = read.entries_after(cursor)?;
        match last_lsn {
            None => Ok(not_modified(current.max(cursor))),
            Some(etag_lsn) => Ok(ChangeFeedPage {
                entries,
                etag_lsn,
                not_modified: false,
                lsn: current,
            }),
        }
    }
}

/// One page's read of a container's change index or change log.
struct PageRead<'a> {
    reader: &'a dyn ReadTxn,
    container: &'a Arc<Container>,
    request: &'a ChangeFeedRequest,
    now_ms: i64,
    /// A point-in-time start: versions written before it are not in the feed.
    since_ms: Option<i64>,
}

impl PageRead<'_> {
    /// The entries after `cursor` in the request's scope, at most a page of them (but never one
    /// LSN split), with the LSN of the last one.
    fn entries_after(&self, cursor: u64) -> EngineResult<(Vec<Vec<u8>>, Option<u64>)> {
        let container = self.container;
        let number = container.key_number();
        let mut scope = Scope {
            matcher: RangeMatcher::new(self.request.filter.clone(), &container.partition_key),
            partition_key: self.request.partition_key.as_ref(),
            definition: &container.partition_key,
            number,
        };
        let page_max = self
            .request
            .page_items_max
            .unwrap_or(PAGE_ITEMS_DEFAULT)
            .clamp(1, PAGE_ITEMS_MAX);
        let table = match self.request.mode {
            ChangeFeedMode::LatestVersion => Table::ChangeIndex,
            ChangeFeedMode::AllVersionsAndDeletes => Table::ChangeLog,
        };
        let range = KeyRange::between(
            keys::change_index_from(number, cursor.saturating_add(1)),
            keys::change_index_from(number.saturating_add(1), 0),
        );
        let mut entries = Vec::new();
        let mut last_lsn = None;
        try_scan(self.reader, table, &range, &mut |key, value| {
            let (lsn, rest) =
                keys::split_change_index_key(key).ok_or_else(|| corrupted("change feed"))?;
            if entries.len() >= page_max && last_lsn != Some(lsn) {
                return Ok(ControlFlow::Break(()));
            }
            if let Some(bytes) = self.entry(&mut scope, lsn, rest, value)? {
                entries.push(bytes);
                last_lsn = Some(lsn);
            }
            Ok(ControlFlow::Continue(()))
        })?;
        Ok((entries, last_lsn))
    }

    /// The feed's entry for one change, if it is in scope and (latest version) still current.
    fn entry(
        &self,
        scope: &mut Scope<'_>,
        lsn: u64,
        item_suffix: &[u8],
        value: &[u8],
    ) -> EngineResult<Option<Vec<u8>>> {
        match self.request.mode {
            ChangeFeedMode::LatestVersion => latest_version(
                self.reader,
                self.container,
                scope,
                lsn,
                item_suffix,
                self.now_ms,
                self.since_ms,
            ),
            ChangeFeedMode::AllVersionsAndDeletes => {
                // The log is keyed by LSN alone: an entry of another range is skipped on its
                // item key, before its version is decoded.
                let suffix =
                    LogEntry::item_suffix_of(value).ok_or_else(|| corrupted("change log"))?;
                if !scope.admits(suffix) {
                    return Ok(None);
                }
                LogEntry::decode(value)
                    .ok_or_else(|| corrupted("change log"))
                    .map(|entry| all_versions(self.container, lsn, &entry))
            }
        }
    }
}

/// What a read covers: a range of EPKs and maybe one logical partition (or a prefix).
struct Scope<'a> {
    matcher: RangeMatcher<'a>,
    partition_key: Option<&'a PartitionKeyValue>,
    definition: &'a PartitionKeyDefinition,
    number: u64,
}

impl Scope<'_> {
    pub(crate) fn admits(&mut self, item_suffix: &[u8]) -> bool {
        let item_key = keys::item_key_from_suffix(self.number, item_suffix);
        if !self.matcher.admits(&item_key) {
            return false;
        }
        let Some(wanted) = self.partition_key else {
            return true;
        };
        let Some((partition, _)) = keys::split_item_suffix(item_suffix) else {
            return false;
        };
        if wanted.0.len() >= self.definition.paths.len() {
            return partition == wanted.encode().as_slice();
        }
        PartitionKeyValue::decode(partition).is_some_and(|value| {
            value.0.len() >= wanted.0.len() && value.0[..wanted.0.len()] == wanted.0[..]
        })
    }
}

/// An item's JSON with `_lsn` spliced in before its closing brace.
fn with_lsn(mut document: Vec<u8>, lsn: u64) -> Vec<u8> {
    if document.last() == Some(&b'}') {
        document.pop();
        document.extend_from_slice(format!(",\"_lsn\":{lsn}}}").as_bytes());
    }
    document
}

fn latest_version(
    reader: &dyn ReadTxn,
    container: &Arc<Container>,
    scope: &mut Scope<'_>,
    lsn: u64,
    item_suffix: &[u8],
    now_ms: i64,
    since_ms: Option<i64>,
) -> EngineResult<Option<Vec<u8>>> {
    if !scope.admits(item_suffix) {
        return Ok(None);
    }
    let key = keys::item_key_from_suffix(scope.number, item_suffix);
    let Some(record) = read_record(reader, &key)? else {
        return Ok(None);
    };
    if record.lsn != lsn
        || record_is_expired(container, &record, now_ms)
        || since_ms.is_some_and(|since| record.last_modified_ms < since)
    {
        return Ok(None);
    }
    let item = StoredItem {
        container: Arc::clone(container),
        record,
    };
    Ok(Some(with_lsn(item.to_json_bytes(), lsn)))
}

/// The all-versions entry of one change in scope.
fn all_versions(container: &Arc<Container>, lsn: u64, entry: &LogEntry) -> Option<Vec<u8>> {
    let crts = entry.at_ms.div_euclid(1000);
    let mut metadata = Map::new();
    let operation = match entry.operation {
        Operation::Create => "create",
        Operation::Replace => "replace",
        Operation::Delete => "delete",
    };
    metadata.insert("operationType".into(), json!(operation));
    metadata.insert("lsn".into(), json!(lsn));
    metadata.insert("crts".into(), json!(crts));
    if entry.operation != Operation::Create {
        metadata.insert("previousImageLSN".into(), json!(entry.previous_lsn));
    }
    let mut out = Vec::new();
    if let (Some(record), Operation::Create | Operation::Replace) = (&entry.record, entry.operation)
    {
        {
            let item = StoredItem {
                container: Arc::clone(container),
                record: record.clone(),
            };
            out.extend_from_slice(b"{\"current\":");
            out.extend_from_slice(&with_lsn(item.to_json_bytes(), lsn));
            out.extend_from_slice(b",\"metadata\":");
            out.extend_from_slice(Value::Object(metadata).to_string().as_bytes());
            out.push(b'}');
        }
    } else {
        {
            let (partition, id) = keys::split_item_suffix(&entry.item_suffix)?;
            let value = PartitionKeyValue::decode(partition)?;
            let key_object = partition_key_object(&container.partition_key, &value);
            metadata.insert("timeToLiveExpired".into(), json!(entry.ttl_expired));
            metadata.insert("id".into(), json!(id));
            metadata.insert("partitionKey".into(), key_object.clone());
            let mut previous = match key_object {
                Value::Object(map) => map,
                _ => Map::new(),
            };
            previous.insert("id".into(), json!(id));
            let envelope = json!({"current": {}, "previous": previous, "metadata": metadata});
            out.extend_from_slice(envelope.to_string().as_bytes());
        }
    }
    Some(out)
}

/// The partition key as the document held it: `{"tenant": "a"}`, nested for nested paths.
fn partition_key_object(definition: &PartitionKeyDefinition, value: &PartitionKeyValue) -> Value {
    let mut root = Map::new();
    for (path, part) in definition.paths.iter().zip(&value.0) {
        let part = part.to_json();
        if part.as_object().is_some_and(Map::is_empty) {
            continue; // undefined
        }
        let mut node = &mut root;
        for (index, segment) in path.iter().enumerate() {
            if index + 1 == path.len() {
                node.insert(segment.clone(), part.clone());
            } else {
                let child = node
                    .entry(segment.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                let Value::Object(map) = child else { break };
                node = map;
            }
        }
    }
    Value::Object(root)
}
