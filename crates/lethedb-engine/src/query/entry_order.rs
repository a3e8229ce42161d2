//! A streamed page (no ORDER BY, GROUP BY, DISTINCT or aggregate) of a selective filter served
//! in the order of its index entries: the entries of the one conjunct the planner chose are
//! read from where the page resumes, each entry's item is loaded, checked as the scan checks
//! it and pushed at its entry's position (sort value, then document number), until the page
//! is full. A page resolves only the entries it reads, and a later page starts with one seek
//! to the entry its token names, so the page costs what it returns, not what the filter
//! matches.
//!
//! The order is pinned by the token: a page of this order is pushed in the key space of its
//! conjunct (`PageRun::use_key_space`, 1 + the conjunct's position among the query's served
//! conjuncts), and every later page continues in it. When the index can no longer serve it (a
//! policy change made it not ready, or stopped indexing the path), the page scans its scope,
//! computes each document's position from the document as the index computes its entry
//! (`index/entries.rs`), and pushes those after the token in that order: no row is skipped or
//! repeated. The verify mode compares the two (`query/page.rs`).
//!
//! Which conjuncts may: those whose probes all read one path's range index without array
//! steps, as disjoint ranges, where each document has at most one entry, so entry order pushes
//! each document once (a spatial index gives a geometry an entry per cell). Other plans keep the scan's order (`query/seek.rs`).

use crate::clock::Stopwatch;
use crate::container::Container;
use crate::error::{corrupted, invalid_continuation, EngineResult};
use crate::index::entries::lookup;
use crate::keys;
use crate::query::scan::{PageScan, ScanScope, ScanTally};
use crate::query::seek::{indexed_item, item_in_scope, IndexTally};
use crate::records::ItemRecord;
use crate::scan_visit::try_scan;
use lethedb_query::{encode_sort_key, IndexConjunct, IndexProbe, PageRun, ProbeKind};
use lethedb_storage::{KeyRange, ReadTxn, Table};
use serde_json::Value;
use std::ops::{Bound, ControlFlow};

/// Entries read per storage scan, at least: entries are collected first and their items
/// loaded after, so no read runs inside another's scan.
const CHUNK_ENTRIES_MIN: usize = 16;

/// Entries read per storage scan, at most.
const CHUNK_ENTRIES_MAX: usize = 1024;

/// The walk of one served conjunct's entries on one path.
#[derive(Clone, Debug)]
pub(crate) struct EntryWalk {
    /// The conjunct's position among the query's served conjuncts.
    conjunct: usize,
    path: Vec<String>,
    /// `keys::index_path_prefix` of the path.
    prefix: Vec<u8>,
    /// The conjunct's probes as ranges of sort keys, `[start, end)`, ascending and disjoint.
    ranges: Vec<(Vec<u8>, Vec<u8>)>,
}

/// The walk of served conjunct `conjunct` of `conjuncts`, if entry order can serve it: its
/// probes read one path without array steps, in disjoint ranges.
pub(crate) fn entry_walk(
    container: &Container,
    conjuncts: &[IndexConjunct],
    conjunct: usize,
) -> Option<EntryWalk> {
    let probes = &conjuncts.get(conjunct)?.probes;
    let path = &probes.first()?.path;
    let one_range_path = |probe: &IndexProbe| probe.path == *path && probe.kind == ProbeKind::Range;
    if path.iter().any(|name| name == "[]") || !probes.iter().all(one_range_path) {
        return None;
    }
    let mut ranges: Vec<(Vec<u8>, Vec<u8>)> = probes
        .iter()
        .filter(|probe| probe.start < probe.end)
        .map(|probe| (probe.start.clone(), probe.end.clone()))
        .collect();
    ranges.sort_unstable();
    if ranges.windows(2).any(|pair| pair[0].1 > pair[1].0) {
        return None;
    }
    Some(EntryWalk {
        conjunct,
        path: path.clone(),
        prefix: keys::index_path_prefix(container.key_number(), path),
        ranges,
    })
}

/// The walk a page resumed in key space `space` continues (`EntryWalk::space`); a token that
/// names no such walk is refused.
pub(crate) fn resumed_walk(
    container: &Container,
    conjuncts: &[IndexConjunct],
    space: u64,
) -> EngineResult<EntryWalk> {
    let conjunct = usize::try_from(space.saturating_sub(1)).map_err(|_| invalid_continuation())?;
    entry_walk(container, conjuncts, conjunct).ok_or_else(invalid_continuation)
}

impl EntryWalk {
    /// The key space of pages pushed in this walk's order.
    pub(crate) fn space(&self) -> u64 {
        self.conjunct as u64 + 1
    }

    /// Whether the container's index holds this walk's entries now (the caller has made sure
    /// it is ready): its policy indexes the path.
    pub(crate) fn indexed_in(&self, container: &Container) -> bool {
        container.index_policy.coverage(&self.path).is_indexed()
    }

    /// The ranges of entries a page reads: the probes' ranges after the position `after`.
    fn ranges_after(&self, after: Option<&[u8]>) -> Vec<KeyRange> {
        let full = |sort_key: &[u8]| [self.prefix.as_slice(), sort_key].concat();
        let mut out = Vec::new();
        for (start, end) in &self.ranges {
            let mut range = KeyRange::between(full(start), full(end));
            if let Some(after) = after {
                if after >= end.as_slice() {
                    continue;
                }
                if after >= start.as_slice() {
                    range.start = Bound::Excluded(full(after));
                }
            }
            out.push(range);
        }
        out
    }

    /// The position of a document in this walk's order, as its entry gives it: the sort key
    /// of its value at the path (undefined when it has none), then its document number.
    fn position_of(&self, document: &Value, document_number: u64) -> Vec<u8> {
        let mut position = Vec::new();
        encode_sort_key(lookup(document.as_object(), &self.path), &mut position);
        position.extend_from_slice(&document_number.to_be_bytes());
        position
    }
}

/// The next entries of `range` (at most `most`).
fn chunk(reader: &dyn ReadTxn, range: &KeyRange, most: usize) -> EngineResult<Vec<Vec<u8>>> {
    let mut entries = Vec::with_capacity(most);
    try_scan(reader, Table::Index, range, &mut |key, _| {
        entries.push(key.to_vec());
        Ok(if entries.len() >= most {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        })
    })?;
    Ok(entries)
}

impl PageScan<'_> {
    /// Feeds `run` in `walk`'s order from the index, from where it resumes, until the page is
    /// full or the entries end. `page_items_max` sizes the reads.
    pub(crate) fn walk_entries(
        &self,
        reader: &dyn ReadTxn,
        scope: &ScanScope,
        walk: &EntryWalk,
        run: &mut PageRun,
        page_items_max: usize,
    ) -> EngineResult<(ScanTally, IndexTally)> {
        run.use_key_space(walk.space())?;
        let started = Stopwatch::start();
        let most = page_items_max
            .saturating_add(1)
            .clamp(CHUNK_ENTRIES_MIN, CHUNK_ENTRIES_MAX);
        let mut index = IndexTally::default();
        let mut visit = self.visitor(scope);
        'ranges: for mut range in walk.ranges_after(run.resume_after()) {
            index.lookups += 1;
            loop {
                let entries = chunk(reader, &range, most)?;
                let Some(last) = entries.last() else {
                    break;
                };
                range.start = Bound::Excluded(last.clone());
                for entry in &entries {
                    index.entries += 1;
                    let position = entry
                        .get(walk.prefix.len()..)
                        .ok_or_else(|| corrupted("index entry"))?;
                    let Some((item_key, item)) = self.entry_item(reader, scope, entry)? else {
                        continue;
                    };
                    if visit.item_at(run, &item_key, &item, position)?.is_break() {
                        break 'ranges;
                    }
                }
                if entries.len() < most {
                    break;
                }
            }
        }
        visit.tally.scan = started.elapsed();
        Ok((visit.tally, index))
    }

    /// Feeds `run` in `walk`'s order without the index: every item of the scope after where
    /// the page resumes, ordered by the position its document gives it. What a page of the
    /// walk returns when the index cannot serve it, and what the verify mode checks the walk
    /// against; it holds the position and key of every item of the scope.
    pub(crate) fn scan_in_entry_order(
        &self,
        reader: &dyn ReadTxn,
        scope: &ScanScope,
        walk: &EntryWalk,
        run: &mut PageRun,
    ) -> EngineResult<ScanTally> {
        run.use_key_space(walk.space())?;
        let started = Stopwatch::start();
        let after = run.resume_after().map(<[u8]>::to_vec);
        let mut found = Vec::new();
        try_scan(reader, Table::Items, &scope.span, &mut |key, value| {
            let position = self.stored_position(walk, key, value)?;
            if after.as_ref().is_none_or(|after| position > *after) {
                found.push((position, key.to_vec()));
            }
            Ok(ControlFlow::Continue(()))
        })?;
        found.sort_unstable();
        let mut visit = self.visitor(scope);
        for (position, key) in &found {
            // Both come from one snapshot: a key just read has its item.
            let item = reader
                .get(Table::Items, key)?
                .ok_or_else(|| corrupted("item"))?;
            if visit.item_at(run, key, &item, position)?.is_break() {
                break;
            }
        }
        visit.tally.scan = started.elapsed();
        Ok(visit.tally)
    }

    /// The key and stored record of one path entry's item, when it lies in the keys the page
    /// reads (its range or partition; visibility is the visitor's to check).
    fn entry_item(
        &self,
        reader: &dyn ReadTxn,
        scope: &ScanScope,
        entry: &[u8],
    ) -> EngineResult<Option<(Vec<u8>, Vec<u8>)>> {
        let document = keys::index_entry_document(entry).ok_or_else(|| corrupted("index entry"))?;
        let Some(item_key) = item_in_scope(reader, self.container.key_number(), document, scope)?
        else {
            return Ok(None);
        };
        let item = indexed_item(reader, &item_key)?;
        Ok(Some((item_key, item)))
    }

    /// The position in `walk`'s order of the stored item `value` at `key`.
    fn stored_position(&self, walk: &EntryWalk, key: &[u8], value: &[u8]) -> EngineResult<Vec<u8>> {
        let (_, lsn, _) = ItemRecord::decode_header(value).ok_or_else(|| corrupted("item"))?;
        let document_number =
            ItemRecord::decode_document_number(value).ok_or_else(|| corrupted("item"))?;
        let document = self.document(key, lsn, value)?;
        Ok(walk.position_of(&document, document_number))
    }
}
