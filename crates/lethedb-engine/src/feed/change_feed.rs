//! Reading the change feed, both modes from the change log (`change_log` writes it): the
//! latest-version mode takes its positions (entries of versions still current) and skips the
//! rest, the all-versions-and-deletes mode takes every entry, a position's body from its item.
//!
//! A cursor ([`FeedCursor`]) is an LSN per shard of the read's scope: a page holds what changed
//! after it, shard after shard, each shard's changes in LSN order (so each logical partition's
//! in the order they happened, the only order the service promises), and its ETag is where the
//! page stopped in each shard. A page never splits one LSN (the writes of one transactional
//! batch share it), even past the page size. Nothing new is "not modified", answered from the
//! shards' counters alone when the cursor is already at them (an idle poll scans nothing).
//! Before an all-versions read, the writer emits the TTL events that are due, so an expired
//! item's delete is readable from its expiry instant on.

use crate::container::Container;
use crate::counters::read_shard_counters;
use crate::engine::Engine;
use crate::error::{corrupted, EngineError, EngineResult, ErrorCode};
use crate::feed::change_log::{self, LogEntry, Operation};
use crate::feed::cursor::FeedCursor;
use crate::items::{read_record, StoredItem};
use crate::keys;
use crate::limits::{PAGE_ITEMS_DEFAULT, PAGE_ITEMS_MAX};
use crate::partitions::partition_key::{PartitionKeyDefinition, PartitionKeyValue};
use crate::partitions::ranges::{RangeFilter, RangeMatcher};
use crate::partitions::shards::{sequence, Shard};
use crate::scan_visit::try_scan;
use crate::ttl::expiry::record_is_expired;
use lethedb_storage::{ReadTxn, Table};
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeFeedStart {
    Beginning,
    Now,
    /// The first versions written at or after this instant (milliseconds).
    PointInTime {
        ms: i64,
    },
    /// After an earlier page's ETag.
    Continuation {
        cursor: FeedCursor,
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
    /// Where to resume (the response's ETag).
    pub etag: FeedCursor,
    /// Nothing changed after the cursor.
    pub not_modified: bool,
    /// The scope's latest LSN, its shards' sequences summed (the session token's).
    pub lsn: u64,
}

impl Engine {
    pub(crate) fn read_change_feed_blocking(
        &self,
        container: &Arc<Container>,
        request: &ChangeFeedRequest,
    ) -> EngineResult<ChangeFeedPage> {
        let reader = self.inner.store.read()?;
        let now_ms = self.now_in(&*reader);
        let mut shards = Vec::new();
        // Every shard's LSN in one read of the counters (an idle poll reads nothing else).
        let counters = read_shard_counters(&*reader, container)?;
        for shard in container.shards_in(&request.filter) {
            let current = counters
                .get(usize::from(shard.0))
                .map_or(shard.base_lsn(), |(_, counters)| counters.lsn);
            let cursor = match &request.start {
                ChangeFeedStart::Beginning | ChangeFeedStart::PointInTime { .. } => {
                    shard.base_lsn()
                }
                ChangeFeedStart::Now => current,
                ChangeFeedStart::Continuation { cursor } => cursor.lsn_of(shard),
            };
            shards.push(ShardRead {
                shard,
                cursor,
                current,
            });
        }
        if request.mode == ChangeFeedMode::AllVersionsAndDeletes {
            let trimmed = change_log::trimmed_lsns(&*reader, container, &counters)?;
            let trimmed_of = |shard: Shard| {
                trimmed
                    .get(usize::from(shard.0))
                    .map_or(shard.base_lsn(), |(_, lsn)| *lsn)
            };
            if shards
                .iter()
                .any(|read| read.cursor < trimmed_of(read.shard))
            {
                return Err(EngineError::new(ErrorCode::ChangeFeedOutsideRetention));
            }
        }
        let lsn = shards.iter().map(|read| sequence(read.current)).sum();
        // An idle poll: nothing was written after the cursor, so nothing is read.
        if shards.iter().all(|read| read.cursor >= read.current) {
            return Ok(ChangeFeedPage {
                entries: Vec::new(),
                etag: cursor_of(container, &shards, |read| read.cursor),
                not_modified: true,
                lsn,
            });
        }
        let since_ms = match request.start {
            ChangeFeedStart::PointInTime { ms } => Some(ms),
            _ => None,
        };
        let read = PageRead {
            reader: &*reader,
            container,
            request,
            now_ms,
            since_ms,
        };
        let entries = read.entries_after(&mut shards)?;
        Ok(ChangeFeedPage {
            not_modified: entries.is_empty(),
            entries,
            etag: cursor_of(container, &shards, |read| read.cursor),
            lsn,
        })
    }
}

/// Where a read stands in one shard of its scope.
struct ShardRead {
    shard: Shard,
    /// The LSN after which it reads; moved as the page takes the shard's changes.
    cursor: u64,
    /// The shard's latest LSN in the snapshot.
    current: u64,
}

/// The cursor of these shards' positions.
fn cursor_of(
    container: &Container,
    shards: &[ShardRead],
    position: impl Fn(&ShardRead) -> u64,
) -> FeedCursor {
    let positions: Vec<(Shard, u64)> = shards
        .iter()
        .map(|read| (read.shard, position(read)))
        .collect();
    FeedCursor::of(&positions, container.shards)
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
    /// The entries after each shard's cursor in the request's scope, at most a page of them
    /// (but never one LSN split), shard after shard; moves each cursor to where the page
    /// stopped in it (a shard read to its end moves to its current LSN).
    fn entries_after(&self, shards: &mut [ShardRead]) -> EngineResult<Vec<Vec<u8>>> {
        let container = self.container;
        let mut scope = Scope {
            matcher: RangeMatcher::new(self.request.filter.clone(), &container.partition_key),
            partition_key: self.request.partition_key.as_ref(),
            definition: &container.partition_key,
            number: container.key_number(),
        };
        let page_max = self
            .request
            .page_items_max
            .unwrap_or(PAGE_ITEMS_DEFAULT)
            .clamp(1, PAGE_ITEMS_MAX);
        let mut entries = Vec::new();
        for read in shards.iter_mut().filter(|read| read.cursor < read.current) {
            let range = change_log::shard_log_after(container, read.shard, read.cursor);
            let mut reached = read.cursor;
            let mut full = false;
            try_scan(self.reader, Table::ChangeLog, &range, &mut |key, value| {
                let lsn = keys::change_log_lsn(key).ok_or_else(|| corrupted("change feed"))?;
                if lsn > read.current {
                    return Ok(ControlFlow::Break(()));
                }
                if entries.len() >= page_max && lsn != reached {
                    full = true;
                    return Ok(ControlFlow::Break(()));
                }
                if let Some(bytes) = self.entry(&mut scope, lsn, value)? {
                    entries.push(bytes);
                }
                reached = lsn;
                Ok(ControlFlow::Continue(()))
            })?;
            read.cursor = if full { reached } else { read.current };
            if full {
                break;
            }
        }
        Ok(entries)
    }

    /// The feed's entry for one change, if it is in scope and (latest version) still current.
    fn entry(
        &self,
        scope: &mut Scope<'_>,
        lsn: u64,
        value: &[u8],
    ) -> EngineResult<Option<Vec<u8>>> {
        // The log is keyed by LSN alone: an entry of another range is skipped on its item key,
        // before anything else is decoded.
        let suffix = LogEntry::item_suffix_of(value).ok_or_else(|| corrupted("change log"))?;
        match self.request.mode {
            // Only a position records a current version: a delete, or a version that took its
            // body when it was replaced, is not in this feed.
            ChangeFeedMode::LatestVersion if !LogEntry::is_position(value) => Ok(None),
            ChangeFeedMode::LatestVersion => latest_version(
                self.reader,
                self.container,
                scope,
                lsn,
                suffix,
                self.now_ms,
                self.since_ms,
            ),
            ChangeFeedMode::AllVersionsAndDeletes => {
                if !scope.admits(suffix) {
                    return Ok(None);
                }
                let mut entry = LogEntry::decode(value).ok_or_else(|| corrupted("change log"))?;
                if entry.holds_position() {
                    // The version is the item's current one (a retired one holds its body).
                    let key = keys::item_key_from_suffix(scope.number, suffix);
                    entry.record = read_record(self.reader, &key)?;
                    if entry.record.as_ref().is_none_or(|record| record.lsn != lsn) {
                        return Err(corrupted("change log"));
                    }
                }
                Ok(all_versions(self.container, lsn, &entry))
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

/// An item's JSON with `_lsn` (the sequence clients see) spliced in before its closing brace.
fn with_lsn(mut document: Vec<u8>, lsn: u64) -> Vec<u8> {
    if document.last() == Some(&b'}') {
        document.pop();
        let lsn = sequence(lsn);
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
    metadata.insert("lsn".into(), json!(sequence(lsn)));
    metadata.insert("crts".into(), json!(crts));
    if entry.operation != Operation::Create {
        metadata.insert(
            "previousImageLSN".into(),
            json!(sequence(entry.previous_lsn)),
        );
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
            metadata.insert("partitionKey".into(), key_object);
            // No `previous`: the service returns no earlier version for a delete (its id and
            // partition key are in the metadata), and an SDK that finds one reads it as the
            // deleted document (the JavaScript SDK decrypts it for client-side encryption).
            let envelope = json!({"current": {}, "metadata": metadata});
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
