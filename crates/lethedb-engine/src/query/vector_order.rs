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
use crate::error::EngineResult;
use crate::query::scan::{ItemVisit, PageScan, ScanScope, ScanTally};
use crate::records::read_counters;
use crate::search::kernels::Probe;
use crate::search::vector_set::{Scored, VectorSet};
use crate::search::vector_sync::sync;
use crate::search::VectorStores;
use lethedb_query::{PageRun, Prepared, VectorSearch};
use lethedb_storage::{ReadTxn, Table};
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashSet};
use std::sync::{PoisonError, RwLock, RwLockReadGuard};

/// The fewest candidates scored items are taken in, and how many per row the query returns.
const BATCH_MIN: usize = 64;
const BATCH_PER_ROW: usize = 4;

/// A vector search the container's set can serve.
#[derive(Clone, Debug)]
pub(crate) struct VectorPlan {
    pub(crate) search: VectorSearch,
    pub(crate) dimensions: usize,
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
    (search.vector.len() == dimensions).then_some(VectorPlan { search, dimensions })
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

impl PageScan<'_> {
    /// Feeds `run` from the vector set of `plan`'s path; `None` when the set cannot serve this
    /// snapshot (it moved past it further than its journal remembers, or the query vector is
    /// out of range) and the page must scan.
    pub(crate) fn vector_order(
        &self,
        reader: &dyn ReadTxn,
        scope: &ScanScope,
        stores: &VectorStores,
        plan: &VectorPlan,
        run: &mut PageRun,
    ) -> EngineResult<Option<ScanTally>> {
        let started = Stopwatch::start();
        let Some(probe) = Probe::new(&plan.search.vector, plan.search.distance) else {
            return Ok(None);
        };
        let lsn = read_counters(reader, self.container.key_number())?.lsn;
        let set = stores.set(
            self.container.key_number(),
            &plan.search.path,
            plan.dimensions,
        );
        let set = synced(&set, reader, self.container, &plan.search.path, lsn)?;
        let Some(changed) = set.changed_after(lsn) else {
            return Ok(None);
        };
        run.feed_in_sort_order()?;
        let in_scope = |key: &[u8]| scope.spans(key);
        let mut undefined = Vec::new();
        let mut scored = set.score(&probe, &in_scope, &mut undefined);
        let mut forced: Vec<&[u8]> = changed.into_iter().filter(|key| in_scope(key)).collect();
        forced.extend(set.irregular_keys(&in_scope));
        forced.extend(undefined.iter().map(|&slot| set.key(slot)));
        forced.sort_unstable();
        forced.dedup();
        let mut visit = self.visitor(scope);
        for key in &forced {
            load(reader, &mut visit, run, key)?;
        }
        let forced: HashSet<&[u8]> = forced.into_iter().collect();
        let rows = usize::try_from(plan.search.rows).unwrap_or(usize::MAX);
        feed_best(&mut scored, rows, |slot| {
            let key = set.key(slot);
            if forced.contains(key) {
                return Ok(false);
            }
            load(reader, &mut visit, run, key)
        })?;
        visit.tally.scan = started.elapsed();
        Ok(Some(visit.tally))
    }
}

/// The set, brought to the snapshot whose container LSN is `lsn` unless it is already there
/// or past it, for reading.
fn synced<'s>(
    set: &'s RwLock<VectorSet>,
    reader: &dyn ReadTxn,
    container: &Container,
    path: &[String],
    lsn: u64,
) -> EngineResult<RwLockReadGuard<'s, VectorSet>> {
    loop {
        let reading = set.read().unwrap_or_else(PoisonError::into_inner);
        if reading.lsn.is_some_and(|at| at >= lsn) {
            return Ok(reading);
        }
        drop(reading);
        let mut writing = set.write().unwrap_or_else(PoisonError::into_inner);
        if writing.lsn.is_none_or(|at| at < lsn) {
            sync(&mut writing, reader, container, path, lsn)?;
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
