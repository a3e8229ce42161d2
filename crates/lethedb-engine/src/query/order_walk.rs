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
use crate::error::{corrupted, EngineResult};
use crate::keys;
use crate::query::scan::{PageScan, ScanScope, ScanTally};
use crate::query::seek::item_key_of;
use crate::records::read_counters;
use lethedb_query::{complement, encode_sort_key, sort_key_is_exact, PageRun, Prepared};
use lethedb_storage::{prefix_successor, KeyRange, ReadTxn, Table};
use std::ops::{Bound, ControlFlow};

/// Index entries read per storage scan: entries are collected first and their items loaded
/// after, so no read runs inside another's scan.
const WALK_CHUNK_ENTRIES: usize = 64;

/// The documents a walk may load, beyond a share of the container, before it gives up.
const WALK_LOADS_FLOOR: u64 = 256;

/// A walk over one path's index entries, or one composite index's.
pub(crate) struct OrderWalk {
    /// The prefix of the entries walked (`keys::index_path_prefix` or
    /// `keys::index_composite_prefix`).
    prefix: Vec<u8>,
    /// Whether the walk reads the entries from the last to the first.
    descending: bool,
    /// Whether the first sort value is stored complemented (a descending composite component).
    first_complemented: bool,
    /// Whether entries of one sort value come in the order the page breaks ties in (`_rid`, in
    /// the walk's direction): true for one path's entries, which end with the document number.
    ties_in_order: bool,
}

/// The walk a page of `prepared` may take on `container`, if any: the ORDER BY path's entries
/// for one key, the composite index that serves the keys (read backwards when it serves them
/// inverted) for several. The caller has made sure the index is ready (`query/page.rs`).
pub(crate) fn order_walk(prepared: &Prepared, container: &Container) -> Option<OrderWalk> {
    if !prepared.sorts_rows() {
        return None;
    }
    let keys: Option<Vec<(Vec<String>, bool)>> = prepared.order_paths().into_iter().collect();
    let number = container.key_number();
    match keys?.as_slice() {
        [(path, descending)] => {
            container
                .index_policy
                .coverage(path)
                .is_indexed()
                .then(|| OrderWalk {
                    prefix: keys::index_path_prefix(number, path),
                    descending: *descending,
                    first_complemented: false,
                    ties_in_order: true,
                })
        }
        several => {
            let (position, inverted) = container.index_policy.composite_for(several)?;
            let composite = container.index_policy.composites().get(position)?;
            if composite
                .paths
                .iter()
                .any(|(path, _)| path.iter().any(|name| name == "[]"))
            {
                return None;
            }
            Some(OrderWalk {
                prefix: keys::index_composite_prefix(number, u16::try_from(position).ok()?),
                descending: inverted,
                first_complemented: composite.paths.first().is_some_and(|(_, desc)| *desc),
                ties_in_order: false,
            })
        }
    }
}

impl OrderWalk {
    /// The entries a page reads: all of the path's, or from the resumed sort value on (in the
    /// walk's direction), that value's own entries included.
    /// With the document number the token breaks its tie by (`tie`), one path's walk starts at
    /// that very entry: the entries of one exact value come in `_rid` order, so those before it
    /// were all on earlier pages, and a deep page in a long run of equal values costs what the
    /// first does.
    fn range(&self, resume: Option<&[Option<serde_json::Value>]>, tie: Option<&[u8]>) -> KeyRange {
        let end_of_path = prefix_successor(&self.prefix).map_or(Bound::Unbounded, Bound::Excluded);
        let Some(first) = resume.and_then(|values| values.first()) else {
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

    /// Whether an entry with these sort-value bytes sorts after every row pushed before it that
    /// has the same bytes: its ties come in `_rid` order, and its value was encoded exactly (a
    /// cut text may stand for several values, which the page sorts itself).
    fn next_tie_sorts_after(&self, value: &[u8]) -> bool {
        self.ties_in_order && sort_key_is_exact(value)
    }

    /// The next chunk of entries after (in the walk's direction) the last one read.
    fn chunk(&self, reader: &dyn ReadTxn, range: &KeyRange) -> EngineResult<Vec<Vec<u8>>> {
        let mut entries = Vec::with_capacity(WALK_CHUNK_ENTRIES);
        let mut visit = |key: &[u8], _: &[u8]| {
            entries.push(key.to_vec());
            if entries.len() >= WALK_CHUNK_ENTRIES {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        if self.descending {
            reader.scan_rev(Table::Index, range, &mut visit)?;
        } else {
            reader.scan(Table::Index, range, &mut visit)?;
        }
        Ok(entries)
    }
}

impl PageScan<'_> {
    /// Feeds `run` in sort order from the index; `None` when the walk gave up (it loaded more
    /// than its share), and the caller must scan with a fresh page.
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
            read_counters(reader, self.container.key_number())?.items / 4 + WALK_LOADS_FLOOR;
        let mut range = walk.range(run.resume_sort_values(), run.resume_tie());
        let mut visit = self.visitor(scope);
        let mut previous_value: Option<Vec<u8>> = None;
        let mut loads = 0u64;
        'walk: loop {
            let entries = walk.chunk(reader, &range)?;
            let Some(last) = entries.last() else {
                break;
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
                let changes = previous_value.as_deref() != Some(value);
                if run.ordered_full() && (changes || walk.next_tie_sorts_after(value)) {
                    visit.tally.scan = started.elapsed();
                    return Ok(Some(visit.tally));
                }
                if changes {
                    previous_value = Some(value.to_vec());
                }
                if loads >= loads_max {
                    return Ok(None);
                }
                loads += 1;
                let Some((item_key, item)) = self.entry_item(reader, scope, entry)? else {
                    continue;
                };
                if visit.item(run, &item_key, &item)?.is_break() {
                    break 'walk;
                }
            }
        }
        visit.tally.scan = started.elapsed();
        Ok(Some(visit.tally))
    }

    /// The key and stored record of one index entry's item, when it is inside the page's
    /// partition scope (visibility is the visitor's to check).
    pub(crate) fn entry_item(
        &self,
        reader: &dyn ReadTxn,
        scope: &ScanScope,
        entry: &[u8],
    ) -> EngineResult<Option<(Vec<u8>, Vec<u8>)>> {
        let document = keys::index_entry_document(entry).ok_or_else(|| corrupted("index entry"))?;
        let item_key = item_key_of(reader, self.container.key_number(), document)?;
        if !item_key.starts_with(&scope.prefix) {
            return Ok(None);
        }
        let item = reader
            .get(Table::Items, &item_key)?
            .ok_or_else(|| corrupted("index entry without its item"))?;
        Ok(Some((item_key, item)))
    }
}
