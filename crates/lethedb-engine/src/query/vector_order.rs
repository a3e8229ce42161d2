//! An `ORDER BY VectorDistance(...)` page fed from the container's vector set
//! (`search/vector_set.rs`) instead of a scan: the set, brought to the page's snapshot, scores
//! every vector in scope with a bounded error; the page then loads, through the scan's one
//! visibility check, every item the set cannot score (irregular values, changes newer than the
//! snapshot) and the scored items from the surely closest down, until the rows the query can
//! return (its TOP, or OFFSET + LIMIT) have passed the filter and no item left could beat the
//! last of them. The page sorts what it is pushed by the exact score, so its rows and
//! continuation are the scan's, which the verify mode checks.
//!
//! It decides only which documents to load; what the query means is the query crate's, and
//! what a set holds, `search/`'s.

use crate::catalog::search_policy::vector_embeddings;
use crate::clock::Stopwatch;
use crate::container::Container;
use crate::counters::read_container_counters;
use crate::error::EngineResult;
use crate::index::plan::IndexPlan;
use crate::keys;
use crate::query::scan::{ItemVisit, PageScan, ScanScope, ScanTally};
use crate::query::seek::{candidate_keys, IndexTally};
use crate::search::ann::AnnSpec;
use crate::search::ann_upkeep::index_pending;
use crate::search::kernels::Probe;
use crate::search::vector_set::{Scored, VectorSet};
use crate::search::vector_sync::sync;
use crate::search::VectorStores;
use lethedb_query::{Distance, PageRun, Prepared, VectorSearch};
use lethedb_storage::{KeyRange, ReadTxn, Table};
use serde_json::Value;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashSet};
use std::sync::{PoisonError, RwLock, RwLockReadGuard};

/// The fewest candidates scored items are taken in, and how many per row the query returns.
const BATCH_MIN: usize = 64;
const BATCH_PER_ROW: usize = 4;
/// The service's default `indexingSearchListSize` and `searchListSizeMultiplier`, and the
/// largest multiplier honoured.
const SEARCH_LIST_DEFAULT: usize = 100;
const SEARCH_LIST_MULTIPLIER_DEFAULT: f64 = 10.0;
const SEARCH_LIST_MULTIPLIER_MAX: f64 = 100.0;

/// A vector search the container's set can serve.
#[derive(Clone, Debug)]
pub(crate) struct VectorPlan {
    pub(crate) search: VectorSearch,
    pub(crate) dimensions: usize,
    /// The graph of the path's `quantizedFlat` or `diskANN` index, when the search may be
    /// approximate (not `bruteForce`, and by the index's own distance function).
    pub(crate) ann: Option<AnnSpec>,
    /// The filter's candidates from the range index, when they are few (`index/plan.rs`):
    /// only they are scored (the filter first), exactly.
    pub(crate) candidates: Option<IndexPlan>,
}

impl VectorPlan {
    /// The same search, exact (the verify mode compares pages with the scan, which an
    /// approximate page need not equal).
    pub(crate) fn exact(mut self) -> VectorPlan {
        self.ann = None;
        self.candidates = None;
        self
    }

    /// The same search over the filter's candidates `index` names.
    pub(crate) fn filtered(mut self, index: IndexPlan) -> VectorPlan {
        self.ann = None;
        self.candidates = Some(index);
        self
    }
}

/// The plan of a page whose query is a vector search over a path of the container's vector
/// embedding policy, with a vector of the policy's dimensions (any other length is `undefined`
/// for every regular item, which the scan serves).
pub(crate) fn vector_plan(prepared: &Prepared, container: &Container) -> Option<VectorPlan> {
    let search = prepared.vector_search()?;
    let embeddings = vector_embeddings(container.resource.get("vectorEmbeddingPolicy")).ok()?;
    let wanted = format!("/{}", search.path.join("/"));
    let embedding = embeddings
        .iter()
        .find(|embedding| embedding.path == wanted)?;
    let dimensions = usize::try_from(embedding.dimensions).ok()?;
    if search.vector.len() != dimensions {
        return None;
    }
    let ann = approximate_index(container, &wanted)
        .filter(|spec| !search.brute_force && spec.distance == search.distance);
    Some(VectorPlan {
        search,
        dimensions,
        ann,
        candidates: None,
    })
}

/// The graph a `quantizedFlat` or `diskANN` index on `path` asks for: the embedding's distance
/// function and the index's `indexingSearchListSize`.
fn approximate_index(container: &Container, path: &str) -> Option<AnnSpec> {
    let resource = &container.resource;
    let by_path = |list: Option<&Value>| {
        list?
            .as_array()?
            .iter()
            .find(|entry| entry.get("path").and_then(Value::as_str) == Some(path))
            .cloned()
    };
    let index = by_path(
        resource
            .get("indexingPolicy")
            .and_then(|policy| policy.get("vectorIndexes")),
    )?;
    let kind = index.get("type").and_then(Value::as_str)?;
    if !kind.eq_ignore_ascii_case("quantizedFlat") && !kind.eq_ignore_ascii_case("diskANN") {
        return None;
    }
    let embedding = by_path(
        resource
            .get("vectorEmbeddingPolicy")
            .and_then(|policy| policy.get("vectorEmbeddings")),
    )?;
    let distance = Distance::parse(embedding.get("distanceFunction")?.as_str()?)?;
    let search_list = index
        .get("indexingSearchListSize")
        .and_then(Value::as_u64)
        .map_or(SEARCH_LIST_DEFAULT, |size| size as usize);
    Some(AnnSpec {
        distance,
        search_list,
    })
}

/// A total order on closeness bounds, for the heap of the rows that passed.
#[derive(Clone, Copy, PartialEq)]
struct Bound(f64);

impl Eq for Bound {}
impl PartialOrd for Bound {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Bound {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The documents a vector page has pushed, and how it pushes one more.
struct Feed<'a, 'r> {
    reader: &'a dyn ReadTxn,
    visit: ItemVisit<'a>,
    run: &'r mut PageRun,
    pushed: HashSet<&'a [u8]>,
}

impl<'a> Feed<'a, '_> {
    /// Loads and pushes the item at `key` unless it was pushed already; whether a row of it
    /// passed the filter (a repeated key answers false).
    fn push(&mut self, key: &'a [u8]) -> EngineResult<bool> {
        if !self.pushed.insert(key) {
            return Ok(false);
        }
        load(self.reader, &mut self.visit, self.run, key)
    }
}

impl PageScan<'_> {
    /// Feeds `run` from the vector set of `plan`'s path, with what the page read of an
    /// approximate graph (one lookup when its candidates served the page); `None` when the set
    /// cannot serve this snapshot (it moved past it further than its journal remembers, or the
    /// query vector is out of range) and the page must scan.
    pub(crate) fn vector_order(
        &self,
        reader: &dyn ReadTxn,
        scope: &ScanScope,
        stores: &VectorStores,
        plan: &VectorPlan,
        run: &mut PageRun,
    ) -> EngineResult<Option<(ScanTally, IndexTally)>> {
        let started = Stopwatch::start();
        let Some(probe) = Probe::new(&plan.search.vector, plan.search.distance) else {
            return Ok(None);
        };
        let lsn = read_container_counters(reader, self.container)?.lsn;
        let set = stores.set(
            self.container.key_number(),
            &plan.search.path,
            plan.dimensions,
        );
        let set = synced(&set, reader, self.container, plan, lsn)?;
        let Some(changed) = set.changed_after(lsn) else {
            return Ok(None);
        };
        run.feed_in_sort_order()?;
        // A scope of the whole container admits every key of the set without comparing it.
        let whole = KeyRange::prefix(&keys::container_items_prefix(self.container.key_number()));
        let everything = scope.span.start == whole.start && scope.span.end == whole.end;
        let in_scope = |key: &[u8]| everything || scope.spans(key);
        let rows = usize::try_from(plan.search.rows).unwrap_or(usize::MAX);
        let mut feed = Feed {
            reader,
            visit: self.visitor(scope),
            run,
            pushed: HashSet::new(),
        };
        let mut forced: Vec<&[u8]> = changed.into_iter().filter(|key| in_scope(key)).collect();
        forced.extend(set.irregular_keys(&in_scope));
        forced.sort_unstable();
        for key in forced {
            feed.push(key)?;
        }
        let served = match plan.ann.filter(|_| set.ann_failure.is_none()) {
            Some(_) => feed_approximate(&set, &probe, plan, rows, &in_scope, &mut feed)?,
            None => false,
        };
        let mut index = IndexTally {
            lookups: u64::from(served),
            ..IndexTally::default()
        };
        if !served {
            let mut scored = match &plan.candidates {
                None => {
                    let mut undefined = Vec::new();
                    let scored = set.score(&probe, &in_scope, &mut undefined);
                    for slot in undefined {
                        feed.push(set.key(slot))?;
                    }
                    scored
                }
                Some(candidates) => {
                    let (keys, tally) =
                        candidate_keys(reader, self.container, candidates, scope, None)?;
                    index = tally;
                    let mut unscored = Vec::new();
                    let scored = set.score_keys(&probe, &keys, &mut unscored);
                    for key in unscored {
                        if !feed.pushed.contains(key) {
                            load(reader, &mut feed.visit, feed.run, key)?;
                        }
                    }
                    scored
                }
            };
            feed_best(&mut scored, rows, |slot| feed.push(set.key(slot)))?;
        }
        let mut tally = feed.visit.tally;
        tally.scan = started.elapsed();
        Ok(Some((tally, index)))
    }
}

/// Feeds the graph's candidates, closest first, until `rows` of them passed the filter;
/// whether they did (if not, the page goes on exactly). The graph is asked for the
/// `searchListSizeMultiplier` (default 10) times `rows` closest in scope.
fn feed_approximate<'a>(
    set: &'a VectorSet,
    probe: &Probe,
    plan: &VectorPlan,
    rows: usize,
    in_scope: &dyn Fn(&[u8]) -> bool,
    feed: &mut Feed<'a, '_>,
) -> EngineResult<bool> {
    let Some(ann) = &set.ann else {
        return Ok(false);
    };
    let multiplier = plan
        .search
        .search_list_multiplier
        .unwrap_or(SEARCH_LIST_MULTIPLIER_DEFAULT)
        .clamp(1.0, SEARCH_LIST_MULTIPLIER_MAX);
    let count = ((rows as f64) * multiplier).ceil() as usize;
    let count = count.clamp(rows, set.len().max(rows));
    let admit = |slot: u32| {
        set.in_ann.get(slot as usize) == Some(&true)
            && set.has_vector(slot)
            && in_scope(set.key(slot))
    };
    let Ok(candidates) = ann.search(&probe.vector, count, count, admit) else {
        return Ok(false);
    };
    let mut passed = 0;
    for slot in candidates {
        if passed >= rows {
            break;
        }
        if feed.push(set.key(slot))? {
            passed += 1;
        }
    }
    Ok(passed >= rows)
}

/// The set, brought to the snapshot whose container LSN is `lsn` unless it is already there
/// or past it, with its graph caught up when the plan uses one, for reading.
fn synced<'s>(
    set: &'s RwLock<VectorSet>,
    reader: &dyn ReadTxn,
    container: &Container,
    plan: &VectorPlan,
    lsn: u64,
) -> EngineResult<RwLockReadGuard<'s, VectorSet>> {
    let graph_ready = |set: &VectorSet| match plan.ann {
        None => true,
        Some(spec) => {
            set.ann_failure.is_some()
                || (set.ann.as_ref().is_some_and(|ann| ann.spec == spec)
                    && set.ann_pending.is_empty())
        }
    };
    loop {
        let reading = set.read().unwrap_or_else(PoisonError::into_inner);
        if reading.lsn.is_some_and(|at| at >= lsn) && graph_ready(&reading) {
            return Ok(reading);
        }
        drop(reading);
        let mut writing = set.write().unwrap_or_else(PoisonError::into_inner);
        if writing.lsn.is_none_or(|at| at < lsn) {
            sync(&mut writing, reader, container, &plan.search.path, lsn)?;
        }
        if let Some(spec) = plan.ann {
            writing.attach_ann(spec);
            index_pending(&mut writing);
        }
    }
}

/// Loads the item at `key` from the snapshot and pushes it through the scan's visibility
/// check; whether a row of it passed the filter.
fn load(
    reader: &dyn ReadTxn,
    visit: &mut ItemVisit<'_>,
    run: &mut PageRun,
    key: &[u8],
) -> EngineResult<bool> {
    // The set may hold an item the snapshot no longer has (a purge the log does not record).
    let Some(value) = reader.get(Table::Items, key)? else {
        return Ok(false);
    };
    let matched = run.rows_matched();
    // An ORDER BY page takes every document it is offered (it never answers `Break`).
    let _ = visit.item(run, key, &value)?;
    Ok(run.rows_matched() > matched)
}

/// Offers the scored slots to `offer` from the highest bound on their closeness down, in
/// batches, until `rows` of them passed (`offer` answers whether one did) and the next slot's
/// highest closeness is below the lowest of those rows: no slot left can then be among the
/// `rows` closest, nor tie with them.
fn feed_best(
    scored: &mut [Scored],
    rows: usize,
    mut offer: impl FnMut(u32) -> EngineResult<bool>,
) -> EngineResult<()> {
    let rows = rows.min(scored.len());
    if rows == 0 {
        return Ok(());
    }
    let batch = rows.saturating_mul(BATCH_PER_ROW).max(BATCH_MIN);
    let mut passed: BinaryHeap<Reverse<Bound>> = BinaryHeap::new();
    let mut rest = scored;
    while !rest.is_empty() {
        let taken = batch.min(rest.len());
        let closest_first = |a: &Scored, b: &Scored| b.closeness.high.total_cmp(&a.closeness.high);
        if taken < rest.len() {
            rest.select_nth_unstable_by(taken - 1, closest_first);
        }
        let (head, tail) = rest.split_at_mut(taken);
        head.sort_unstable_by(closest_first);
        for candidate in head.iter() {
            let settled = passed.len() >= rows
                && passed
                    .peek()
                    .is_some_and(|Reverse(lowest)| lowest.0 > candidate.closeness.high);
            if settled {
                return Ok(());
            }
            if offer(candidate.slot)? {
                passed.push(Reverse(Bound(candidate.closeness.low)));
                if passed.len() > rows {
                    passed.pop();
                }
            }
        }
        rest = tail;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::kernels::Closeness;

    fn scored(bounds: &[(f64, f64)]) -> Vec<Scored> {
        bounds
            .iter()
            .enumerate()
            .map(|(slot, &(low, high))| Scored {
                closeness: Closeness { low, high },
                slot: slot as u32,
            })
            .collect()
    }

    #[test]
    fn stops_once_nothing_left_can_make_the_top() {
        // Slot 1 fails the filter; slots 0 and 2 pass; slot 3 overlaps slot 2's bound and
        // must be offered; slot 4 cannot beat it.
        let mut slots = scored(&[(9.0, 10.0), (8.5, 9.5), (7.0, 8.0), (6.5, 7.5), (1.0, 6.0)]);
        let mut offered = Vec::new();
        feed_best(&mut slots, 2, |slot| {
            offered.push(slot);
            Ok(slot != 1)
        })
        .unwrap();
        assert_eq!(offered, vec![0, 1, 2, 3]);
    }

    #[test]
    fn takes_further_batches_when_the_filter_passes_few() {
        let bounds: Vec<(f64, f64)> = (0..500)
            .map(|i| (-f64::from(i), -f64::from(i) + 0.5))
            .collect();
        let mut slots = scored(&bounds);
        let mut offered = 0;
        feed_best(&mut slots, 3, |slot| {
            offered += 1;
            Ok(slot % 100 == 99)
        })
        .unwrap();
        // The third passing slot is 299; slot 300's closeness is at most -299.5, below 299's.
        assert_eq!(offered, 300);
    }
}
