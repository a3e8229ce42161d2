//! Aggregates answered from index entries without loading documents: `COUNT`, `COUNT(path)`,
//! `MIN(path)` and `MAX(path)` of a query the query crate finds coverable
//! (`Prepared::covered_aggregates`: nothing but those aggregates, a filter made only of
//! conjuncts an index serves exactly, or none), on a container whose policy indexes every path
//! they read. The selected documents are the intersection of the conjuncts' entries (or every
//! item, through the `id` path every item has one entry of), kept inside the request's scope
//! through the resource-id index (`seek::item_key_of`), never by loading them.
//!
//! Only where that is exact: never while an item of the container is expired and not yet
//! purged (an index entry says nothing of expiry, so the answer would count it), never for a
//! hierarchical key's prefix (which is checked on the document), never on a resumed page, and a
//! `MIN` or `MAX` whose extreme is a cut text is not answered. A number's key keeps its value
//! but not its spelling (`1`, `1.0`), so a numeric extreme loads the one document that holds
//! it (the first in key order among equal ones, which is the one the scan keeps). When an
//! answer is not exact, or reading the entries would cost more than the scan, the page scans.

use crate::container::Container;
use crate::counters::read_container_counters;
use crate::error::{corrupted, EngineResult};
use crate::index::entries::lookup;
use crate::index::maintain::read_statistics;
use crate::index::plan::{accesses, range_is_empty, IndexAccess};
use crate::items::StoredItem;
use crate::keys;
use crate::partitions::partition_key::PartitionKeyPart;
use crate::partitions::ranges::RangeMatcher;
use crate::query::scan::ScanScope;
use crate::query::seek::{indexed_item, item_key_of, IndexTally};
use crate::records::ItemRecord;
use crate::ttl::expiry::oldest_expired;
use lethedb_query::{
    decode_scalar_key, full_text_stem_key, type_bounds, CoveredAggregate, CoveredQuery,
    IndexConjunct, IndexProbe, Prepared, ProbeKind,
};
use lethedb_storage::{KeyRange, ReadTxn, Table};
use serde_json::Value;
use std::ops::ControlFlow;
use std::sync::Arc;

/// Entries a covered answer may read beyond what the scan of the container would load.
const COVERED_ENTRIES_FLOOR: u64 = 1_024;

/// The type rank of arrays (`type_bounds`): arrays and objects come from here on.
const RANK_ARRAY: u8 = 5;

/// A page the index can answer: the query's aggregates and one access per conjunct.
pub(crate) struct CoveredPlan {
    query: CoveredQuery,
    accesses: Vec<IndexAccess>,
    /// Whether it reads the full-text statistics (`index/maintain.rs`): its scope is then the
    /// whole container, without a filter, and its `COUNT` is the container's item count.
    statistics: bool,
}

/// The covered plan of a page of `prepared`, if its shape, the policy and the scope allow one
/// (expiry is checked when it runs: `answer`).
pub(crate) fn covered_plan(
    prepared: &Prepared,
    container: &Container,
    scope: &ScanScope,
    resumed: bool,
) -> Option<CoveredPlan> {
    if resumed || scope.partial_key.is_some() {
        return None;
    }
    let mut query = prepared.covered_aggregates()?;
    let policy = &container.index_policy;
    let readable = |path: &Vec<String>| {
        policy.coverage(path).is_indexed() && !path.iter().any(|name| name == "[]")
    };
    let statistics = query.aggregates.iter().any(|aggregate| {
        matches!(
            aggregate,
            CoveredAggregate::FullTextWords(_) | CoveredAggregate::FullTextHits(..)
        )
    });
    // The statistics are kept for the whole container: a narrower scope or a filter scans.
    let whole = scope.partition.is_none() && scope.filter.is_everything();
    if statistics && (!whole || !query.conjuncts.is_empty()) {
        return None;
    }
    let paths_indexed = query.aggregates.iter().all(|aggregate| match aggregate {
        CoveredAggregate::Count => statistics || readable(&vec!["id".to_string()]),
        CoveredAggregate::CountDefined(path)
        | CoveredAggregate::Min(path)
        | CoveredAggregate::Max(path) => readable(path),
        CoveredAggregate::FullTextWords(path) | CoveredAggregate::FullTextHits(path, _) => {
            policy.full_text_language(path).is_some()
        }
    });
    if !paths_indexed {
        return None;
    }
    match partition_conjunct(container, scope) {
        // The partition's own entries narrow the selection first.
        Some(conjunct) => query.conjuncts.insert(0, conjunct),
        // Without them, every item of the container would be looked up: its scan is cheaper.
        None if scope.partition.is_some() && query.conjuncts.is_empty() => return None,
        None => {}
    }
    let accesses = accesses(container, &query.conjuncts);
    (accesses.len() == query.conjuncts.len()).then_some(CoveredPlan {
        query,
        accesses,
        statistics,
    })
}

/// For a page scoped to one logical partition whose key is one indexed path: the equality of
/// that path to the partition's value, which every item of the partition passes (and perhaps
/// others sharing a cut key, which the scope check leaves out).
fn partition_conjunct(container: &Container, scope: &ScanScope) -> Option<IndexConjunct> {
    let value = scope.partition.as_ref()?;
    let [path] = container.partition_key.paths.as_slice() else {
        return None;
    };
    let [part] = value.0.as_slice() else {
        return None;
    };
    // Items without the key (or with an array or object there) have no entry of its value.
    if *part == PartitionKeyPart::Undefined || !container.index_policy.coverage(path).is_indexed() {
        return None;
    }
    let mut start = Vec::new();
    lethedb_query::encode_sort_key(Some(&part.to_json()), &mut start);
    let end = lethedb_storage::prefix_successor(&start)?;
    Some(IndexConjunct {
        probes: vec![IndexProbe {
            path: path.clone(),
            start,
            end,
            seek: true,
            kind: ProbeKind::Range,
        }],
    })
}

/// What a read for the first selected entry of a range found.
enum Found {
    /// The sort-value bytes of the first selected entry.
    Entry(Vec<u8>),
    /// No entry of the range is selected.
    Nothing,
    /// The read ran out of its allowance first.
    OutOfAllowance,
}

/// A covered page's values, one per aggregate, and what computing them read.
pub(crate) struct CoveredAnswer {
    pub(crate) values: Vec<Option<Value>>,
    pub(crate) documents_loaded: u64,
    pub(crate) retrieved_bytes: u64,
    pub(crate) index: IndexTally,
}

/// What answering reads: the snapshot, the scope, the selection, and what it read so far.
struct Selection<'a> {
    reader: &'a dyn ReadTxn,
    container: &'a Arc<Container>,
    scope: &'a ScanScope,
    matcher: RangeMatcher<'a>,
    /// The selected document numbers, ascending; `None`: every item.
    documents: Option<Vec<u64>>,
    /// Entries left to read before the answer costs more than the scan.
    entries_left: u64,
    answer: CoveredAnswer,
}

/// The values of `plan`'s aggregates at `now_ms`, or `None` when they cannot be given exactly
/// or cheaply (see the module's documentation), and the page must scan.
pub(crate) fn answer(
    reader: &dyn ReadTxn,
    container: &Arc<Container>,
    scope: &ScanScope,
    plan: &CoveredPlan,
    now_ms: i64,
) -> EngineResult<Option<CoveredAnswer>> {
    if oldest_expired(reader, container, now_ms)?.is_some() {
        return Ok(None);
    }
    let items = read_container_counters(reader, container)?.items;
    let mut selection = Selection {
        reader,
        container,
        scope,
        matcher: RangeMatcher::new(scope.filter.clone(), &container.partition_key),
        documents: None,
        entries_left: items.saturating_add(COVERED_ENTRIES_FLOOR),
        answer: CoveredAnswer {
            values: Vec::new(),
            documents_loaded: 0,
            retrieved_bytes: 0,
            index: IndexTally::default(),
        },
    };
    if !selection.select(&plan.accesses)? {
        return Ok(None);
    }
    for aggregate in &plan.query.aggregates {
        if plan.statistics {
            let value = statistics_value(reader, container, aggregate, items)?;
            selection.answer.index.lookups += 1;
            selection.answer.values.push(value);
            continue;
        }
        let Some(value) = selection.value(aggregate)? else {
            return Ok(None);
        };
        selection.answer.values.push(value);
    }
    Ok(Some(selection.answer))
}

impl Selection<'_> {
    /// Narrows the selection to the documents every access names; false when reading them
    /// would cost more than the scan.
    fn select(&mut self, accesses: &[IndexAccess]) -> EngineResult<bool> {
        for access in accesses {
            let mut named = Vec::new();
            for range in &access.ranges {
                let complete = self.read((range, 0), false, &mut |document, _| {
                    named.push(document);
                    ControlFlow::Continue(())
                })?;
                if !complete {
                    return Ok(false);
                }
            }
            named.sort_unstable();
            named.dedup();
            self.documents = Some(match self.documents.take() {
                None => named,
                Some(kept) => kept
                    .into_iter()
                    .filter(|document| named.binary_search(document).is_ok())
                    .collect(),
            });
            if self.documents.as_ref().is_some_and(|kept| !kept.is_empty()) {
                // A small selection bounds what the later reads are worth.
                let kept = self.documents.as_ref().map_or(0, Vec::len) as u64;
                self.entries_left = self
                    .entries_left
                    .min(kept.saturating_mul(8).saturating_add(COVERED_ENTRIES_FLOOR));
            }
        }
        Ok(true)
    }

    /// Reads the entries of `range` (from the last when `backwards`), handing each entry's
    /// document number and sort-value bytes to `visit` until it breaks; false when the read
    /// ran out of its allowance first.
    /// `prefix_bytes` is the length of the path's prefix, before the sort-value bytes.
    fn read(
        &mut self,
        (range, prefix_bytes): (&KeyRange, usize),
        backwards: bool,
        visit: &mut dyn FnMut(u64, &[u8]) -> ControlFlow<()>,
    ) -> EngineResult<bool> {
        self.answer.index.lookups += 1;
        if range_is_empty(range) {
            return Ok(true);
        }
        let reader = self.reader;
        let mut exhausted = false;
        let mut failure = None;
        let mut visitor = |key: &[u8], _: &[u8]| {
            if self.entries_left == 0 {
                exhausted = true;
                return ControlFlow::Break(());
            }
            self.entries_left -= 1;
            self.answer.index.entries += 1;
            let Some(document) = keys::index_entry_document(key) else {
                failure = Some(corrupted("index entry"));
                return ControlFlow::Break(());
            };
            let value = key
                .get(prefix_bytes.min(key.len())..key.len().saturating_sub(8))
                .unwrap_or_default();
            visit(document, value)
        };
        if backwards {
            reader.scan_rev(Table::Index, range, &mut visitor)?;
        } else {
            reader.scan(Table::Index, range, &mut visitor)?;
        }
        if let Some(failure) = failure {
            return Err(failure);
        }
        Ok(!exhausted)
    }
}

/// One aggregate of the hybrid pipelines' statistics query over the whole container (no item
/// expired: `answer`), from the container's counters: `COUNT` is its item count, a word total
/// and a stem's document count are the full-text statistics the writer keeps
/// (`index/maintain.rs`); a term of several words is the documents holding all of them, read
/// from the smallest of its stems' entries.
fn statistics_value(
    reader: &dyn ReadTxn,
    container: &Container,
    aggregate: &CoveredAggregate,
    items: u64,
) -> EngineResult<Option<Value>> {
    let number = container.key_number();
    let count = match aggregate {
        CoveredAggregate::Count => items,
        CoveredAggregate::FullTextWords(path) => {
            let counter = keys::index_full_text_statistics_prefix(number, path);
            read_statistics(reader, &counter)?
        }
        CoveredAggregate::FullTextHits(path, stems) => match stems.as_slice() {
            [] => 0,
            [stem] => {
                let mut counter = keys::index_full_text_statistics_prefix(number, path);
                counter.extend_from_slice(&full_text_stem_key(stem));
                read_statistics(reader, &counter)?
            }
            stems => documents_holding_all(reader, number, path, stems)?,
        },
        // Not part of a statistics plan (`covered_plan`).
        _ => return Err(corrupted("full-text statistics plan")),
    };
    Ok(Some(Value::from(count)))
}

/// How many documents have an entry of every one of `stems` at `path`.
fn documents_holding_all(
    reader: &dyn ReadTxn,
    number: u64,
    path: &[String],
    stems: &[String],
) -> EngineResult<u64> {
    let prefix = keys::index_full_text_prefix(number, path);
    let mut kept: Option<Vec<u64>> = None;
    for stem in stems {
        let range = KeyRange::prefix(&[prefix.as_slice(), &full_text_stem_key(stem)].concat());
        let mut named = Vec::new();
        reader.scan(Table::Index, &range, &mut |key, _| {
            named.extend(keys::index_entry_document(key));
            ControlFlow::Continue(())
        })?;
        kept = Some(match kept {
            None => named,
            Some(kept) => kept
                .into_iter()
                .filter(|document| named.binary_search(document).is_ok())
                .collect(),
        });
    }
    Ok(kept.map_or(0, |kept| kept.len() as u64))
}

impl Selection<'_> {
    /// One aggregate's value (`Some(None)` is undefined), or `None` when it cannot be given.
    fn value(&mut self, aggregate: &CoveredAggregate) -> EngineResult<Option<Option<Value>>> {
        match aggregate {
            CoveredAggregate::Count => self.count(&["id".to_string()], 0),
            CoveredAggregate::CountDefined(path) => self.count(path, 1),
            CoveredAggregate::Min(path) => self.extreme(path, false),
            CoveredAggregate::Max(path) => self.extreme(path, true),
            // Answered by `statistics_value`.
            CoveredAggregate::FullTextWords(_) | CoveredAggregate::FullTextHits(..) => Ok(None),
        }
    }

    /// How many selected documents have an entry of `path` from type rank `rank_from` on
    /// (0: any entry, for the `id` path every item has one of; 1: a defined value).
    fn count(&mut self, path: &[String], rank_from: u8) -> EngineResult<Option<Option<Value>>> {
        if let (Some(documents), 0) = (self.documents.clone(), rank_from) {
            let mut count = 0u64;
            for document in documents {
                count += u64::from(self.admits(document)?);
            }
            return Ok(Some(Some(Value::from(count))));
        }
        let (range, prefix_bytes) = self.path_range(path, rank_from, RANK_ARRAY + 2);
        let mut named = Vec::new();
        let complete = self.read((&range, prefix_bytes), false, &mut |document, _| {
            named.push(document);
            ControlFlow::Continue(())
        })?;
        if !complete {
            return Ok(None);
        }
        let mut count = 0u64;
        for document in named {
            count += u64::from(self.selected(document)?);
        }
        Ok(Some(Some(Value::from(count))))
    }

    /// The entries of `path` of type ranks `[from, to)`, and the length of the path's prefix.
    fn path_range(&self, path: &[String], from: u8, to: u8) -> (KeyRange, usize) {
        let prefix = keys::index_path_prefix(self.container.key_number(), path);
        let bound = |rank: u8| [prefix.as_slice(), &type_bounds(rank).0].concat();
        (KeyRange::between(bound(from), bound(to)), prefix.len())
    }

    /// Whether `document` is selected: named by every conjunct, and inside the scope.
    fn selected(&mut self, document: u64) -> EngineResult<bool> {
        if let Some(documents) = &self.documents {
            if documents.binary_search(&document).is_err() {
                return Ok(false);
            }
        }
        self.admits(document)
    }

    /// Whether `document` is inside the request's scope (its partition, range or EPK bounds),
    /// from its item key alone.
    fn admits(&mut self, document: u64) -> EngineResult<bool> {
        let number = self.container.key_number();
        let whole = self.scope.partition.is_none() && self.scope.partial_key.is_none();
        if whole && self.matcher.admits_everything() {
            return Ok(true);
        }
        let key = item_key_of(self.reader, number, document)?;
        Ok(self.scope.spans(&key) && self.matcher.admits(&key))
    }

    /// `MIN` (`maximum` false) or `MAX` of `path` over the selection: undefined when a
    /// selected value is an array or object or none is defined, else the least (greatest)
    /// scalar, in the language's order, which is the entries' order.
    fn extreme(&mut self, path: &[String], maximum: bool) -> EngineResult<Option<Option<Value>>> {
        let containers = self.path_range(path, RANK_ARRAY, RANK_ARRAY + 2);
        match self.first_selected(containers, false)? {
            Found::OutOfAllowance => return Ok(None),
            Found::Entry(_) => return Ok(Some(None)),
            Found::Nothing => {}
        }
        let scalars = self.path_range(path, 1, RANK_ARRAY);
        let key = match self.first_selected(scalars.clone(), maximum)? {
            Found::OutOfAllowance => return Ok(None),
            Found::Nothing => return Ok(Some(None)),
            Found::Entry(key) => key,
        };
        if let Some(value) = decode_scalar_key(&key) {
            return Ok(Some(Some(value)));
        }
        if !lethedb_query::sort_key_is_exact(&key) {
            return Ok(None);
        }
        self.number_of(path, scalars.1, &key)
            .map(|value| value.map(Some))
    }

    /// The first selected entry of a range in its order (from the last when `backwards`).
    fn first_selected(
        &mut self,
        (range, prefix_bytes): (KeyRange, usize),
        backwards: bool,
    ) -> EngineResult<Found> {
        let mut position = range.clone();
        loop {
            let mut chunk = Vec::new();
            let complete = self.read(
                (&position, prefix_bytes),
                backwards,
                &mut |document, value| {
                    chunk.push((document, value.to_vec()));
                    if chunk.len() >= 64 {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                },
            )?;
            if !complete {
                return Ok(Found::OutOfAllowance);
            }
            let Some((last_document, last_value)) = chunk.last().cloned() else {
                return Ok(Found::Nothing);
            };
            for (document, value) in chunk {
                if self.selected(document)? {
                    return Ok(Found::Entry(value));
                }
            }
            let mut last = position_key(&range, prefix_bytes, &last_value, last_document);
            if backwards {
                position.end = std::ops::Bound::Excluded(std::mem::take(&mut last));
            } else {
                position.start = std::ops::Bound::Excluded(last);
            }
        }
    }
}

impl Selection<'_> {
    /// The number a numeric extreme's key (`key`, of `path`) stands for, as the document that
    /// holds it spells it: the first selected one in item-key order, which is the one the scan
    /// keeps among equal values. `None` when the read ran out of its allowance.
    fn number_of(
        &mut self,
        path: &[String],
        prefix_bytes: usize,
        key: &[u8],
    ) -> EngineResult<Option<Value>> {
        let prefix = keys::index_path_prefix(self.container.key_number(), path);
        let start = [prefix.as_slice(), key].concat();
        let Some(end) = lethedb_storage::prefix_successor(&start) else {
            return Ok(None);
        };
        let mut named = Vec::new();
        let complete = self.read(
            (&KeyRange::between(start, end), prefix_bytes),
            false,
            &mut |document, _| {
                named.push(document);
                ControlFlow::Continue(())
            },
        )?;
        if !complete {
            return Ok(None);
        }
        let mut first: Option<Vec<u8>> = None;
        for document in named {
            if self.selected(document)? {
                let item_key = item_key_of(self.reader, self.container.key_number(), document)?;
                if first.as_ref().is_none_or(|first| item_key < *first) {
                    first = Some(item_key);
                }
            }
        }
        let Some(item_key) = first else {
            return Ok(None);
        };
        let stored = indexed_item(self.reader, &item_key)?;
        let record = ItemRecord::decode(&stored).ok_or_else(|| corrupted("item"))?;
        self.answer.documents_loaded += 1;
        self.answer.retrieved_bytes += ItemRecord::body_bytes(&stored) as u64;
        let document = StoredItem {
            container: Arc::clone(self.container),
            record,
        }
        .to_value()?;
        Ok(lookup(document.as_object(), path).cloned())
    }
}

/// The whole key of an entry read from `range` (its path's prefix is the first `prefix_bytes`
/// bytes of the range's start), from its sort-value bytes and document number.
fn position_key(range: &KeyRange, prefix_bytes: usize, value: &[u8], document: u64) -> Vec<u8> {
    let start = match &range.start {
        std::ops::Bound::Included(start) | std::ops::Bound::Excluded(start) => start.as_slice(),
        std::ops::Bound::Unbounded => &[],
    };
    let prefix = start.get(..prefix_bytes).unwrap_or(start);
    [prefix, value, &document.to_be_bytes()].concat()
}
