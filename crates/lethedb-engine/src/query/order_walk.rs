//! An ORDER BY page served by walking the index in the order it sorts by: the entries of the
//! ORDER BY path are read forwards (ascending) or backwards (descending), each entry's item is
//! loaded, its visibility (expiry, the request's scope) checked as the scan checks it, and the
//! document pushed into the query crate's page, which re-checks the whole WHERE clause and
//! keeps the rows it needs. The walk stops at the first change of sort value after the page can
//! no longer change, so a page costs what it returns, not the container's size; a resumed page
//! seeks to the sort value its token ends at.
//!
//! Which pages may walk: a page that only sorts (no GROUP BY, DISTINCT or aggregate), by one key
//! that is a document path the policy indexes or by several that a composite index serves, on a
//! container whose index is ready. Which rows
//! the page holds does not change with the plan: a single-key ORDER BY returns what the index
//! holds under the policy, whichever plan runs (`docs/indexing.md`). A walk that loads more
//! than a share of the container gives up, and the caller scans instead.

use crate::clock::Stopwatch;
use crate::container::Container;
use crate::counters::read_container_counters;
use crate::error::{corrupted, EngineResult};
use crate::index::policy::{CompositeIndex, Coverage};
use crate::keys;
use crate::query::scan::{ItemVisit, PageScan, ScanScope, ScanTally};
use crate::query::seek::{indexed_item, item_in_scope};
use lethedb_query::{
    complement, encode_sort_key, sort_key_extent, sort_key_is_exact, PageRun, Prepared,
};
use lethedb_storage::{prefix_successor, KeyRange, ReadTxn, Table};
use std::ops::{Bound, ControlFlow};

/// Index entries read per storage scan: entries are collected first and their items loaded
/// after, so no read runs inside another's scan.
const WALK_CHUNK_ENTRIES: usize = 64;

/// The documents a walk may load, beyond a share of the container, before it gives up.
const WALK_LOADS_FLOOR: u64 = 256;

/// A walk over one path's index entries, or one composite index's (all of it, or the span of
/// its entries whose leading components equal the filter's equalities).
pub(crate) struct OrderWalk {
    /// The prefix of the entries walked (`keys::index_path_prefix` or
    /// `keys::index_composite_prefix`, then the sort keys an equality prefix fixes).
    prefix: Vec<u8>,
    /// Whether the walk reads the entries from the last to the first.
    descending: bool,
    /// Whether the first sort value walked is stored complemented (a descending composite
    /// component).
    first_complemented: bool,
    /// Whether entries of one sort value come in the order the page breaks ties in (`_rid`, in
    /// the walk's direction): true for one path's entries, which end with the document number.
    ties_in_order: bool,
    /// Which ORDER BY key the first sort value walked is (the keys an equality prefix fixes
    /// come before it in the token's resume values, not in the walk).
    resume_key: usize,
    /// Whether entries end with the document number complemented (a composite whose first
    /// component is descending).
    document_complemented: bool,
    /// For a one-key ORDER BY walked through a composite: the first byte of the walked
    /// component's undefined sort key, whose span holds items without the value and items
    /// whose value is an array or object (both undefined in a composite), read apart from the
    /// rest (see `PageScan::undefined_span`).
    undefined_span: Option<UndefinedSpan>,
    /// The paths the walk's equality prefix fixes (none for a whole index).
    pub(crate) fixed_paths: Vec<Vec<String>>,
    /// Whether each walked component is stored complemented, in order (one, uncomplemented,
    /// for a path's entries): where a component's key ends (`OrderWalk::group`).
    components: Vec<bool>,
}

/// Where a one-key ORDER BY walked through a composite puts the entries of its undefined span.
#[derive(Clone, Copy)]
struct UndefinedSpan {
    /// The first byte of the walked component's undefined sort key as stored.
    tag: u8,
    /// Pushed before the rest (a descending ORDER BY, where arrays and objects sort first and
    /// the items without the value, which the page leaves out, last), else after it.
    first: bool,
}

/// The sort-key tag of undefined (`lethedb_query::encode_sort_key(None, ..)`'s one byte).
const UNDEFINED_TAG: u8 = 0x01;

/// The walk a page of `prepared` may take on `container`, if any: the span of a composite
/// index whose leading components the filter's equalities fix and whose other components serve
/// the ORDER BY keys left (`span_walk`); else the ORDER BY path's entries for one key, the
/// composite index that serves the keys (read backwards when it serves them inverted) for
/// several. The caller has made sure the index is ready (`query/page.rs`).
pub(crate) fn order_walk(prepared: &Prepared, container: &Container) -> Option<OrderWalk> {
    if !prepared.sorts_rows() {
        return None;
    }
    let keys: Vec<(Vec<String>, bool)> =
        prepared.order_paths().into_iter().collect::<Option<_>>()?;
    let fixed = fixed_values(prepared);
    if let Some(walk) = span_walk(container, &keys, &fixed) {
        return Some(walk);
    }
    whole_walk(container, &keys)
}

/// The walk of one path's entries, or of the whole composite index that serves the keys.
fn whole_walk(container: &Container, keys: &[(Vec<String>, bool)]) -> Option<OrderWalk> {
    let number = container.key_number();
    let walk = |prefix, descending, ties_in_order, document_complemented, components: Vec<bool>| {
        OrderWalk {
            prefix,
            descending,
            first_complemented: components.first().copied().unwrap_or(false),
            ties_in_order,
            resume_key: 0,
            document_complemented,
            undefined_span: None,
            fixed_paths: Vec::new(),
            components,
        }
    };
    match keys {
        [(path, descending)] => container.index_policy.coverage(path).is_indexed().then(|| {
            let prefix = keys::index_path_prefix(number, path);
            walk(prefix, *descending, true, false, vec![false])
        }),
        several => {
            let (position, inverted) = container.index_policy.composite_for(several)?;
            let composite = container.index_policy.composites().get(position)?;
            if names_elements(composite) {
                return None;
            }
            let first_descending = composite.paths.first().is_some_and(|(_, desc)| *desc);
            Some(walk(
                keys::index_composite_prefix(number, u16::try_from(position).ok()?),
                inverted,
                false,
                first_descending,
                composite
                    .paths
                    .iter()
                    .map(|(_, descending)| *descending)
                    .collect(),
            ))
        }
    }
}

/// Whether a composite index names array elements (such an index has no entries).
fn names_elements(composite: &CompositeIndex) -> bool {
    composite
        .paths
        .iter()
        .any(|(path, _)| path.iter().any(|name| name == "[]"))
}

/// The paths the filter fixes with a top-level equality to a scalar (`c.a = @x`, a one-value
/// `IN`, a bare path), each with the sort key of its value: the one probe of a seek.
fn fixed_values(prepared: &Prepared) -> Vec<(Vec<String>, Vec<u8>)> {
    let mut fixed: Vec<(Vec<String>, Vec<u8>)> = Vec::new();
    for conjunct in prepared.index_conjuncts() {
        let [probe] = conjunct.probes.as_slice() else {
            continue;
        };
        let names_element = probe.path.iter().any(|name| name == "[]");
        if probe.seek && !names_element && !fixed.iter().any(|(path, _)| *path == probe.path) {
            fixed.push((probe.path.clone(), probe.start.clone()));
        }
    }
    fixed
}

/// The walk of the span of a composite index whose first components the filter fixes
/// (`fixed`) and whose remaining components are the ORDER BY keys that the fixed paths leave,
/// in order, with the same directions or the inverse of every one: only the entries that can
/// pass the equalities are read, in sort order. The widest fixed prefix wins. A one-key
/// ORDER BY follows the range index's rules (`query/ordering.rs`), which a composite does not
/// hold for arrays and objects: it is walked so only when the page leaves out undefined values
/// (its path is not explicitly included), see `UndefinedSpan`.
fn span_walk(
    container: &Container,
    keys: &[(Vec<String>, bool)],
    fixed: &[(Vec<String>, Vec<u8>)],
) -> Option<OrderWalk> {
    if fixed.is_empty() || keys.is_empty() {
        return None;
    }
    if let [(path, _)] = keys {
        if container.index_policy.coverage(path) != Coverage::Wildcard {
            return None;
        }
    }
    let mut best: Option<(usize, usize, bool)> = None;
    for (position, composite) in container.index_policy.composites().iter().enumerate() {
        if names_elements(composite) {
            continue;
        }
        let leading = composite
            .paths
            .iter()
            .take_while(|(path, _)| fixed.iter().any(|(fixed, _)| fixed == path))
            .count();
        for width in (1..=leading).rev() {
            if best.is_some_and(|(_, widest, _)| widest >= width) {
                break;
            }
            if let Some(inverted) = serves_rest(&composite.paths, width, keys) {
                best = Some((position, width, inverted));
                break;
            }
        }
    }
    let (position, width, inverted) = best?;
    span_of(container, keys, fixed, position, width, inverted)
}

/// Whether the components of `paths` after the first `width` are the ORDER BY keys whose
/// paths are not among those `width`, in order; `Some(inverted)` when they are, with the same
/// directions (`false`) or the inverse of every one (`true`).
fn serves_rest(
    paths: &[(Vec<String>, bool)],
    width: usize,
    keys: &[(Vec<String>, bool)],
) -> Option<bool> {
    let (prefix, rest) = paths.split_at(width);
    let wanted: Vec<&(Vec<String>, bool)> = keys
        .iter()
        .filter(|(path, _)| !prefix.iter().any(|(fixed, _)| fixed == path))
        .collect();
    if wanted.is_empty() || wanted.len() != rest.len() {
        return None;
    }
    if !rest
        .iter()
        .zip(&wanted)
        .all(|((path, _), (key, _))| path == key)
    {
        return None;
    }
    let same = rest
        .iter()
        .zip(&wanted)
        .map(|((_, indexed), (_, asked))| indexed == asked);
    if same.clone().all(|same| same) {
        Some(false)
    } else if same.clone().all(|same| !same) {
        Some(true)
    } else {
        None
    }
}

/// The walk of composite `position`'s span where its first `width` components equal the
/// filter's values.
fn span_of(
    container: &Container,
    keys: &[(Vec<String>, bool)],
    fixed: &[(Vec<String>, Vec<u8>)],
    position: usize,
    width: usize,
    inverted: bool,
) -> Option<OrderWalk> {
    let composite = container.index_policy.composites().get(position)?;
    let (prefix_paths, rest) = composite.paths.split_at(width);
    let mut prefix =
        keys::index_composite_prefix(container.key_number(), u16::try_from(position).ok()?);
    for (path, descending) in prefix_paths {
        let (_, value) = fixed.iter().find(|(fixed, _)| fixed == path)?;
        let start = prefix.len();
        prefix.extend_from_slice(value);
        if *descending {
            complement(&mut prefix[start..]);
        }
    }
    let (first_path, first_descending) = rest.first()?;
    let resume_key = keys.iter().position(|(path, _)| path == first_path)?;
    let undefined_span = matches!(keys, [_]).then(|| UndefinedSpan {
        tag: if *first_descending {
            !UNDEFINED_TAG
        } else {
            UNDEFINED_TAG
        },
        first: keys.first().is_some_and(|(_, descending)| *descending),
    });
    Some(OrderWalk {
        prefix,
        descending: inverted,
        first_complemented: *first_descending,
        ties_in_order: false,
        resume_key,
        document_complemented: composite.paths.first().is_some_and(|(_, desc)| *desc),
        undefined_span,
        fixed_paths: prefix_paths.iter().map(|(path, _)| path.clone()).collect(),
        components: rest.iter().map(|(_, descending)| *descending).collect(),
    })
}

impl OrderWalk {
    /// The entries a page reads: all of the walked prefix's, or from the resumed sort value on
    /// (in the walk's direction), that value's own entries included; never the undefined span
    /// a one-key walk through a composite reads apart (`UndefinedSpan`).
    /// With the document number the token breaks its tie by (`tie`), one path's walk starts at
    /// that very entry: the entries of one exact value come in `_rid` order, so those before it
    /// were all on earlier pages, and a deep page in a long run of equal values costs what the
    /// first does.
    fn range(&self, resume: Option<&[Option<serde_json::Value>]>, tie: Option<&[u8]>) -> KeyRange {
        let mut range = self.resumed_range(resume, tie);
        if let Some(span) = self.undefined_span {
            let mut bound = self.prefix.clone();
            if span.tag == UNDEFINED_TAG {
                // Stored ascending, undefined comes first: start after it.
                bound.push(UNDEFINED_TAG + 1);
                if matches!(&range.start, Bound::Included(start) if *start < bound) {
                    range.start = Bound::Included(bound);
                }
            } else {
                // Stored complemented, undefined comes last: end before it.
                bound.push(span.tag);
                let before = match &range.end {
                    Bound::Excluded(end) => *end > bound,
                    _ => true,
                };
                if before {
                    range.end = Bound::Excluded(bound);
                }
            }
        }
        range
    }

    /// [`OrderWalk::range`] before the undefined span is taken out.
    fn resumed_range(
        &self,
        resume: Option<&[Option<serde_json::Value>]>,
        tie: Option<&[u8]>,
    ) -> KeyRange {
        let end_of_path = prefix_successor(&self.prefix).map_or(Bound::Unbounded, Bound::Excluded);
        let Some(first) = resume.and_then(|values| values.get(self.resume_key)) else {
            return KeyRange {
                start: Bound::Included(self.prefix.clone()),
                end: end_of_path,
            };
        };
        let mut at = self.prefix.clone();
        encode_sort_key(first.as_ref(), &mut at);
        if self.first_complemented {
            complement(&mut at[self.prefix.len()..]);
        }
        if let Some(tie) = tie.filter(|tie| tie.len() == 8) {
            if self.next_tie_sorts_after(&at[self.prefix.len()..]) {
                at.extend_from_slice(tie);
            }
        }
        if self.descending {
            KeyRange {
                start: Bound::Included(self.prefix.clone()),
                end: prefix_successor(&at).map_or(end_of_path, Bound::Excluded),
            }
        } else {
            KeyRange {
                start: Bound::Included(at),
                end: end_of_path,
            }
        }
    }

    /// The part of an entry's sort values (`value`) that the page's order cannot reorder
    /// entries within: all of it when every component's key is exact, else up to and including
    /// the first cut one. Entries sharing a cut key stand for several values, and the entries
    /// after it in one such group are sorted by the next components rather than by the values
    /// themselves: the walk may stop only where this part changes, so the page sees the whole
    /// group and sorts it.
    fn group<'v>(&self, value: &'v [u8]) -> &'v [u8] {
        let mut end = 0;
        for complemented in &self.components {
            match value
                .get(end..)
                .and_then(|rest| sort_key_extent(rest, *complemented))
            {
                Some((length, exact)) => {
                    end += length;
                    if !exact {
                        return &value[..end];
                    }
                }
                None => return value,
            }
        }
        value
    }

    /// Whether an entry with these sort-value bytes sorts after every row pushed before it that
    /// has the same bytes: its ties come in `_rid` order, and its value was encoded exactly (a
    /// cut text may stand for several values, which the page sorts itself).
    fn next_tie_sorts_after(&self, value: &[u8]) -> bool {
        self.ties_in_order && sort_key_is_exact(value)
    }

    /// The next chunk of entries after (in the walk's direction) the last one read.
    fn chunk(&self, reader: &dyn ReadTxn, range: &KeyRange) -> EngineResult<Vec<Vec<u8>>> {
        chunk_of(reader, range, self.descending)
    }
}

/// The first entries of `range` (the last ones when `backwards`), at most a chunk.
fn chunk_of(reader: &dyn ReadTxn, range: &KeyRange, backwards: bool) -> EngineResult<Vec<Vec<u8>>> {
    let mut entries = Vec::with_capacity(WALK_CHUNK_ENTRIES);
    let mut visit = |key: &[u8], _: &[u8]| {
        entries.push(key.to_vec());
        if entries.len() >= WALK_CHUNK_ENTRIES {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    if backwards {
        reader.scan_rev(Table::Index, range, &mut visit)?;
    } else {
        reader.scan(Table::Index, range, &mut visit)?;
    }
    Ok(entries)
}

/// How one part of a walk ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Walked {
    /// Every entry was read.
    Ended,
    /// The page was decided (it could no longer change, or the query crate stopped it).
    Stopped,
    /// The walk loaded more than its share: the scan must decide the page.
    GaveUp,
}

/// A walk in progress: the page's visibility check and what it has loaded.
struct Walker<'a> {
    scan: &'a PageScan<'a>,
    reader: &'a dyn ReadTxn,
    scope: &'a ScanScope,
    walk: &'a OrderWalk,
    visit: ItemVisit<'a>,
    loads: u64,
    loads_max: u64,
}

impl PageScan<'_> {
    /// Feeds `run` in sort order from the index; `None` when the walk gave up (it loaded more
    /// than its share), and the caller must scan with a fresh page. A one-key walk through a
    /// composite pushes its undefined span first or last (`UndefinedSpan`).
    pub(crate) fn walk(
        &self,
        reader: &dyn ReadTxn,
        scope: &ScanScope,
        walk: &OrderWalk,
        run: &mut PageRun,
    ) -> EngineResult<Option<ScanTally>> {
        run.feed_in_sort_order()?;
        let started = Stopwatch::start();
        let loads_max =
            read_container_counters(reader, self.container)?.items / 4 + WALK_LOADS_FLOOR;
        let mut walker = Walker {
            scan: self,
            reader,
            scope,
            walk,
            visit: self.visitor(scope),
            loads: 0,
            loads_max,
        };
        let span = walk.undefined_span;
        let mut walked = Walked::Ended;
        if let Some(span) = span.filter(|span| span.first) {
            walked = walker.undefined_span(run, span)?;
        }
        if walked == Walked::Ended {
            walked = walker.sorted(run)?;
        }
        if let Some(span) = span.filter(|span| !span.first && walked == Walked::Ended) {
            walked = walker.undefined_span(run, span)?;
        }
        if walked == Walked::GaveUp {
            return Ok(None);
        }
        walker.visit.tally.scan = started.elapsed();
        Ok(Some(walker.visit.tally))
    }

    /// The key of one index entry's item, when it lies in the keys the page reads (its range
    /// or partition; visibility is the visitor's to check).
    fn entry_item_key(
        &self,
        reader: &dyn ReadTxn,
        scope: &ScanScope,
        walk: &OrderWalk,
        entry: &[u8],
    ) -> EngineResult<Option<Vec<u8>>> {
        let stored = keys::index_entry_document(entry).ok_or_else(|| corrupted("index entry"))?;
        let document = if walk.document_complemented {
            !stored
        } else {
            stored
        };
        item_in_scope(reader, self.container.key_number(), document, scope)
    }
}

impl Walker<'_> {
    /// Walks the entries in sort order from where the page resumes, stopping at the first
    /// change of sort value once the page can no longer change.
    fn sorted(&mut self, run: &mut PageRun) -> EngineResult<Walked> {
        let walk = self.walk;
        let mut range = walk.range(run.resume_sort_values(), run.resume_tie());
        let mut previous_value: Option<Vec<u8>> = None;
        loop {
            let entries = walk.chunk(self.reader, &range)?;
            let Some(last) = entries.last() else {
                return Ok(Walked::Ended);
            };
            if walk.descending {
                range.end = Bound::Excluded(last.clone());
            } else {
                range.start = Bound::Excluded(last.clone());
            }
            for entry in &entries {
                let value = entry
                    .get(walk.prefix.len()..entry.len().saturating_sub(8))
                    .ok_or_else(|| corrupted("index entry"))?;
                let changes = previous_value.as_deref() != Some(walk.group(value));
                if run.ordered_full() && (changes || walk.next_tie_sorts_after(value)) {
                    return Ok(Walked::Stopped);
                }
                if changes {
                    previous_value = Some(walk.group(value).to_vec());
                }
                let walked = self.load(run, entry)?;
                if walked != Walked::Ended {
                    return Ok(walked);
                }
            }
        }
    }

    /// Pushes every item of the undefined span, in no particular order: no stop is decided
    /// while it is read, and every row it holds sorts before (or after) every other row.
    fn undefined_span(&mut self, run: &mut PageRun, span: UndefinedSpan) -> EngineResult<Walked> {
        let mut start = self.walk.prefix.clone();
        start.push(span.tag);
        let mut range = KeyRange::prefix(&start);
        loop {
            let entries = chunk_of(self.reader, &range, false)?;
            let Some(last) = entries.last() else {
                return Ok(Walked::Ended);
            };
            range.start = Bound::Excluded(last.clone());
            for entry in &entries {
                let walked = self.load(run, entry)?;
                if walked != Walked::Ended {
                    return Ok(walked);
                }
            }
        }
    }

    /// Loads one entry's item and pushes it if visible: `Ended` to go on. An item outside the
    /// page's keys (another range) is skipped unloaded, and does not count against the budget.
    fn load(&mut self, run: &mut PageRun, entry: &[u8]) -> EngineResult<Walked> {
        let Some(item_key) = self
            .scan
            .entry_item_key(self.reader, self.scope, self.walk, entry)?
        else {
            return Ok(Walked::Ended);
        };
        if self.loads >= self.loads_max {
            return Ok(Walked::GaveUp);
        }
        self.loads += 1;
        let item = indexed_item(self.reader, &item_key)?;
        Ok(if self.visit.item(run, &item_key, &item)?.is_break() {
            Walked::Stopped
        } else {
            Walked::Ended
        })
    }
}
