//! The scan of one page of a query over a container's items (`PageScan`): it reads the keys of
//! a `ScanScope` (one partition, a prefix of a hierarchical key, a range, or the whole
//! container), hides expired items, decodes each visible document once (or takes it from the
//! document cache) and pushes it into the query crate's `PageRun` until the page is full.
//!
//! It decides nothing: which keys a page reads, and whether the SDK's client pipeline must run
//! the query instead, are decided in `query/mod.rs` before any key is read; what a query means is
//! the query crate's business.

use crate::clock::Stopwatch;
use crate::container::Container;
use crate::error::{corrupted, invalid_continuation, EngineResult};
use crate::items::document_cache::DocumentCache;
use crate::items::StoredItem;
use crate::keys;
use crate::partitions::partition_key::{PartitionKeyPart, PartitionKeyValue};
use crate::partitions::ranges::{RangeFilter, RangeMatcher};
use crate::records::ItemRecord;
use crate::scan_visit::{range_contains, resumed_after, try_scan};
use crate::ttl::expiry::is_expired;
use lethedb_query::PageRun;
use lethedb_storage::{KeyRange, ReadTxn, Table};
use serde_json::Value;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

/// The partition key values a WHERE clause pins, as a partition key value.
pub(crate) fn parts_from_values(values: Vec<Value>) -> PartitionKeyValue {
    PartitionKeyValue(
        values
            .into_iter()
            .map(|value| PartitionKeyPart::from_value(&value))
            .collect(),
    )
}

/// The keys one page of a query reads (decided in `query/mod.rs`).
pub(crate) struct ScanScope {
    /// The ranges (and EPK bounds) the request names.
    pub(crate) filter: RangeFilter,
    /// The prefix a continuation must resume inside: one partition for a whole key, else the
    /// container (a token from a parent range stays good in its children).
    pub(crate) outer: Vec<u8>,
    /// The keys read: one partition, or the span of the range or hierarchical prefix (the
    /// whole container for one stored before range-local storage).
    pub(crate) span: KeyRange,
    /// A prefix of a hierarchical key, checked on each document.
    pub(crate) partial_key: Option<PartitionKeyValue>,
    /// The whole key of the one partition `span` covers, if it covers one.
    pub(crate) partition: Option<PartitionKeyValue>,
}

impl ScanScope {
    /// The keys to scan, after the key a continuation resumes from.
    pub(crate) fn key_range(
        &self,
        number: u64,
        resume_after: Option<&[u8]>,
    ) -> EngineResult<KeyRange> {
        let Some(after) = resume_after else {
            return Ok(self.span.clone());
        };
        let start = keys::item_key_from_suffix(number, after);
        if start < self.outer {
            // A token from another scope cannot move the scan outside this one.
            return Err(invalid_continuation());
        }
        Ok(resumed_after(&self.span, start))
    }

    /// Whether the item key `key` lies in the keys the scope reads.
    pub(crate) fn spans(&self, key: &[u8]) -> bool {
        range_contains(&self.span, key)
    }

    /// Whether a document is inside the scope's prefix of a hierarchical key, if it has one.
    pub(crate) fn admits_partial_key(&self, container: &Container, document: &Value) -> bool {
        self.partial_key.as_ref().is_none_or(|prefix| {
            let full = container.partition_key.extract(document);
            full.0[..prefix.0.len()] == prefix.0[..]
        })
    }
}

/// What a page's scan saw, for the page and its metrics.
#[derive(Debug, Default)]
pub(crate) struct ScanTally {
    /// The query crate stopped the scan: the page is decided before the scope's end.
    pub(crate) page_full: bool,
    /// The whole scan, storage included.
    pub(crate) scan: Duration,
    /// The part of `scan` spent evaluating (measured only when asked).
    pub(crate) execution: Duration,
    /// The stored bytes of the documents pushed (their bodies, as compact JSON).
    pub(crate) retrieved_bytes: u64,
    /// Documents pushed of which at least one row passed the WHERE clause.
    pub(crate) documents_matched: u64,
}

/// What a scan knows of one stored item besides its document: the key it is pushed at (its
/// item key's suffix, or its position in another key space), its document number (the `_rid`
/// order of ties) and the size of its stored body.
struct Stored<'a> {
    position: &'a [u8],
    document_number: u64,
    bytes: usize,
}

/// The scan of one page: it decides visibility and decodes; `PageRun` evaluates.
pub(crate) struct PageScan<'a> {
    pub(crate) container: &'a Arc<Container>,
    pub(crate) cache: &'a DocumentCache,
    pub(crate) now_ms: i64,
    /// Whether to time each document's evaluation (`x-ms-documentdb-populatequerymetrics`).
    pub(crate) measure: bool,
    /// Whether a page ends where its documents pass into another partition key range, as a
    /// streamed page without a filter the service's gateway serves across ranges does
    /// (`RangePages`).
    pub(crate) range_by_range: bool,
}

impl PageScan<'_> {
    /// Scans `scope` from where `run` resumes, pushing each visible document until the page is
    /// full or the scope ends.
    pub(crate) fn run(
        &self,
        reader: &dyn ReadTxn,
        scope: &ScanScope,
        run: &mut PageRun,
    ) -> EngineResult<ScanTally> {
        let started = Stopwatch::start();
        let range = scope.key_range(self.container.key_number(), run.resume_after())?;
        let mut visit = self.visitor(scope);
        try_scan(reader, Table::Items, &range, &mut |key, value| {
            visit.item(run, key, value)
        })?;
        visit.tally.scan = started.elapsed();
        Ok(visit.tally)
    }

    /// Reads the items of `item_keys` (ascending, inside the scope, after where `run`
    /// resumes: an index plan's candidates) and pushes each visible document, exactly as the
    /// scan pushes it, until the page is full.
    pub(crate) fn run_keys(
        &self,
        reader: &dyn ReadTxn,
        scope: &ScanScope,
        item_keys: &[Vec<u8>],
        run: &mut PageRun,
    ) -> EngineResult<ScanTally> {
        let started = Stopwatch::start();
        let mut visit = self.visitor(scope);
        for key in item_keys {
            // A candidate deleted since its entry was read cannot be: both come from one
            // snapshot. A missing item is skipped as the scan would never have met it.
            let Some(value) = reader.get(Table::Items, key)? else {
                continue;
            };
            if visit.item(run, key, &value)?.is_break() {
                break;
            }
        }
        visit.tally.scan = started.elapsed();
        Ok(visit.tally)
    }

    pub(crate) fn visitor<'s>(&'s self, scope: &'s ScanScope) -> ItemVisit<'s> {
        ItemVisit {
            scan: self,
            scope,
            matcher: RangeMatcher::new(scope.filter.clone(), &self.container.partition_key),
            tally: ScanTally::default(),
            ranges: self.range_by_range.then(RangePages::default),
        }
    }

    /// The parsed document of an item record, from the cache when it holds this version.
    pub(crate) fn document(&self, key: &[u8], lsn: u64, value: &[u8]) -> EngineResult<Arc<Value>> {
        if let Some(document) = self.cache.get(key, lsn) {
            return Ok(document);
        }
        let record = ItemRecord::decode(value).ok_or_else(|| corrupted("item"))?;
        let item = StoredItem {
            container: Arc::clone(self.container),
            record,
        };
        let document = Arc::new(item.to_value()?);
        self.cache
            .insert(key, lsn, Arc::clone(&document), value.len());
        Ok(document)
    }

    /// Hands one visible document to the page and counts what it cost. Its document number
    /// orders it among rows with equal ORDER BY values, as the service's `_rid` does.
    fn push(
        &self,
        run: &mut PageRun,
        stored: &Stored<'_>,
        document: &Value,
        tally: &mut ScanTally,
    ) -> EngineResult<ControlFlow<()>> {
        let matched_before = run.rows_matched();
        let timer = self.measure.then(Stopwatch::start);
        let flow = run.push_numbered(stored.position, stored.document_number, document)?;
        if let Some(timer) = timer {
            tally.execution += timer.elapsed();
        }
        tally.retrieved_bytes += stored.bytes as u64;
        if run.rows_matched() > matched_before {
            tally.documents_matched += 1;
        }
        tally.page_full = flow.is_break();
        Ok(flow)
    }
}

/// The one visibility check both plans make of an item: expiry and the range from the header,
/// then the hierarchical prefix from the document, then the push.
pub(crate) struct ItemVisit<'s> {
    scan: &'s PageScan<'s>,
    scope: &'s ScanScope,
    matcher: RangeMatcher<'s>,
    pub(crate) tally: ScanTally,
    ranges: Option<RangePages>,
}

/// The range a page's results come from, for a page that ends where they would pass into
/// another range: the service's gateway serves a streamed query across ranges one range's page
/// at a time, so a page holds one range's results and the next page starts in the next range
/// (the JavaScript SDK's cross-partition tests compare what those pages cost with what its own
/// per-range requests cost).
#[derive(Default)]
struct RangePages {
    /// The range of the page's results (of its first document while none matched).
    range: Option<u32>,
    last_partition: Vec<u8>,
    last_range: Option<u32>,
}

impl RangePages {
    /// Whether the item at `key` lies in another range than the page's results, which then
    /// end before it; while the page has none, the page moves to the item's range.
    fn ends_before(&mut self, container: &Container, key: &[u8], matched: bool) -> bool {
        let Some(partition) = keys::partition_bytes(key) else {
            return false;
        };
        if self.last_partition.is_empty() || partition != self.last_partition.as_slice() {
            self.last_range = PartitionKeyValue::decode(partition).map(|value| {
                let epk = value.effective(&container.partition_key);
                container.ranges.owner(&epk).id
            });
            self.last_partition.clear();
            self.last_partition.extend_from_slice(partition);
        }
        let Some(range) = self.last_range else {
            return false;
        };
        match self.range {
            Some(current) if current != range && matched => true,
            _ => {
                self.range = Some(range);
                false
            }
        }
    }
}

impl ItemVisit<'_> {
    /// Pushes the item at `key` (its stored record `value`) if it is visible in the scope.
    pub(crate) fn item(
        &mut self,
        run: &mut PageRun,
        key: &[u8],
        value: &[u8],
    ) -> EngineResult<ControlFlow<()>> {
        self.item_at(run, key, value, keys::item_key_suffix(key))
    }

    /// [`ItemVisit::item`] for a page pushed in another key space: the item is pushed at
    /// `position` (`PageRun::use_key_space`).
    pub(crate) fn item_at(
        &mut self,
        run: &mut PageRun,
        key: &[u8],
        value: &[u8],
        position: &[u8],
    ) -> EngineResult<ControlFlow<()>> {
        let scan = self.scan;
        // The header decides visibility without copying or parsing the body.
        let (last_modified_ms, lsn, ttl) =
            ItemRecord::decode_header(value).ok_or_else(|| corrupted("item"))?;
        if is_expired(scan.container, last_modified_ms, ttl, scan.now_ms)
            || !self.matcher.admits(key)
        {
            return Ok(ControlFlow::Continue(()));
        }
        let matched = run.rows_matched() > 0;
        if let Some(ranges) = &mut self.ranges {
            if ranges.ends_before(scan.container, key, matched) {
                self.tally.page_full = true;
                return Ok(ControlFlow::Break(()));
            }
        }
        let document = scan.document(key, lsn, value)?;
        if !self.scope.admits_partial_key(scan.container, &document) {
            return Ok(ControlFlow::Continue(()));
        }
        let document_number =
            ItemRecord::decode_document_number(value).ok_or_else(|| corrupted("item"))?;
        let stored = Stored {
            position,
            document_number,
            bytes: ItemRecord::body_bytes(value),
        };
        scan.push(run, &stored, &document, &mut self.tally)
    }
}
