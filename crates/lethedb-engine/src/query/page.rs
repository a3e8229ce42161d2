//! One page of a query over a container's items, run with the access the planner chose:
//! aggregates answered from index entries (`query/covered.rs`); for a selective filter, the
//! entries of its one served conjunct in index order when the page streams its rows
//! (`query/entry_order.rs`), else the candidates an index names pushed in item-key order
//! (`index/plan.rs`, `query/seek.rs`); an ORDER BY page's walk of the index in sort order
//! (`query/order_walk.rs`); or the scan of the request's scope. All push documents through the
//! same visibility check into the same `PageRun`. The item-key orders give the scan's page; the
//! entry order gives the page of a scan in entry order, and a page resumed from its token keeps
//! that order, with the index or without. No access reads the index while a policy change's
//! rebuild runs (`index::builder::index_ready_in`).
//!
//! The verify mode (`EngineConfig::query_verify`, `LETHEDB_QUERY_VERIFY=1` on the server) takes
//! the proof further on every page: whenever an index can serve the query, the page runs
//! through every access an index could give it (a covered answer, the filter's entries in index
//! order and its candidates whatever their count, the ORDER BY walk), and again as a scan in the
//! same order (the scope's scan, or its scan in entry order), and any difference in items,
//! continuation or failure is an internal error naming the query. What a query means
//! is the query crate's business; which keys the scope covers, `query/mod.rs`'s.

use crate::clock::Stopwatch;
use crate::container::Container;
use crate::counters::read_container_counters;
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::index::builder::index_ready_in;
use crate::index::plan::{self, IndexPlan, PlanScope};
use crate::index::plan_memory::{PlanKey, PlanMemory};
use crate::items::document_cache::DocumentCache;
use crate::query::covered::{answer, covered_plan, CoveredPlan};
use crate::query::document_order::{self, DOCUMENT_ORDER_SPACE};
use crate::query::entry_order::{entry_walk, resumed_walk, EntryWalk};
use crate::query::order_walk::{order_walk, OrderWalk};
use crate::query::scan::{PageScan, ScanScope, ScanTally};
use crate::query::seek::{candidate_keys, IndexTally};
use crate::query::text_rank::text_rank_plan;
use crate::query::vector_order::{vector_plan, VectorPlan};
use crate::search::VectorStores;
use lethedb_query::{IndexConjunct, OrderingRules, Page, PageRun, Prepared, TextRank};
use lethedb_storage::ReadTxn;
use std::sync::Arc;
use std::time::Duration;

/// How a page reads its documents.
enum Access {
    Scan,
    Index(IndexPlan),
    Walk(OrderWalk),
    /// Aggregates answered from index entries (`query/covered.rs`).
    Covered(CoveredPlan),
    /// A streamed page in the order of one conjunct's index entries, read from the index.
    Entries(EntryWalk),
    /// The same order from a scan of the scope, when the index cannot serve it.
    EntryScan(EntryWalk),
    /// An `ORDER BY VectorDistance(...)` page fed from the container's vector set.
    Vector(VectorPlan),
    /// The hybrid pipelines' full-text component page fed from the full-text impact entries.
    TextRank(TextRank),
    /// A streamed page over a range or the container in document (`_rid`) order, from the
    /// resource-id index (`query/document_order.rs`).
    Documents,
}

impl Access {
    /// What the verify mode checks this access against: a scan in the same order, if this
    /// access reads the index.
    fn baseline(&self) -> Option<Access> {
        match self {
            Access::Scan | Access::EntryScan(_) | Access::Documents => None,
            Access::Index(_)
            | Access::Walk(_)
            | Access::Covered(_)
            | Access::Vector(_)
            | Access::TextRank(_) => Some(Access::Scan),
            Access::Entries(walk) => Some(Access::EntryScan(walk.clone())),
        }
    }
}

/// What one page needs to run, whichever plan runs it.
pub(crate) struct PageInputs<'a> {
    pub(crate) reader: &'a dyn ReadTxn,
    /// What the index serving its ORDER BY does to its rows (`query/ordering.rs`).
    pub(crate) rules: OrderingRules,
    /// The queries recently found unselective (`index/plan_memory.rs`).
    pub(crate) plans: &'a PlanMemory,
    /// The decoded vectors of the containers' embeddings (`search/`).
    pub(crate) vectors: &'a VectorStores,
    pub(crate) container: &'a Arc<Container>,
    pub(crate) cache: &'a DocumentCache,
    pub(crate) prepared: &'a Prepared,
    pub(crate) scope: &'a ScanScope,
    /// The query's text, to name it when verification fails.
    pub(crate) text: &'a str,
    pub(crate) continuation: Option<&'a str>,
    pub(crate) page_items_max: usize,
    /// Whether to time each document's evaluation (the request asked for metrics).
    pub(crate) measure: bool,
    pub(crate) now_ms: i64,
}

/// A page and what producing it took.
pub(crate) struct RanPage {
    pub(crate) page: Page,
    pub(crate) tally: ScanTally,
    pub(crate) index: IndexTally,
    /// Ending the page (`PageRun::finish`): sorting, aggregates, the token.
    pub(crate) finish: Duration,
}

impl PageInputs<'_> {
    /// Plans the page and runs it; with `verify`, runs it through every access an index could
    /// give it and as a scan in the same order, compares, and answers the first access's page.
    pub(crate) fn run(&self, verify: bool) -> EngineResult<RanPage> {
        let planning = Stopwatch::start();
        let mut accesses = if verify {
            self.accesses()?
        } else {
            vec![self.plan(true)?]
        };
        if accesses.is_empty() {
            accesses.push(self.unindexed());
        }
        let planned = planning.elapsed();
        let outcome = self.run_with(&accesses[0]);
        if verify {
            self.verify(&accesses, &outcome)?;
        }
        let mut ran = outcome?;
        ran.index.time += planned;
        Ok(ran)
    }

    /// Checks each access against its baseline (`first` is the first access's page).
    fn verify(&self, accesses: &[Access], first: &EngineResult<RanPage>) -> EngineResult<()> {
        let mut scan = None;
        for (position, access) in accesses.iter().enumerate() {
            let Some(baseline) = access.baseline() else {
                continue;
            };
            let expected = match baseline {
                Access::Scan => scan.get_or_insert_with(|| self.run_with(&Access::Scan)),
                other => &self.run_with(&other),
            };
            if position == 0 {
                check_same(first, expected, self.text)?;
            } else {
                check_same(&self.run_with(access), expected, self.text)?;
            }
        }
        Ok(())
    }

    /// Every index access this page could take whatever the counts, for the verify mode: the
    /// entry order a token pins; else the covered answer, the filter's entries in index order
    /// and its candidates, the ORDER BY walk.
    fn accesses(&self) -> EngineResult<Vec<Access>> {
        let mut accesses = Vec::new();
        if !self.prepared.scans_documents() {
            return Ok(accesses);
        }
        let space = self.start()?.key_space();
        if space == DOCUMENT_ORDER_SPACE {
            return Ok(vec![Access::Documents]);
        }
        if space != 0 {
            return Ok(vec![self.resumed_entries(space)?]);
        }
        let vector = vector_plan(self.prepared, self.container);
        if let Some(vector) = &vector {
            accesses.push(Access::Vector(vector.clone().exact()));
        }
        if !index_ready_in(self.reader, self.container)? {
            return Ok(accesses);
        }
        if let Some(covered) = self.covered_plan() {
            accesses.push(Access::Covered(covered));
        }
        let conjuncts = self.prepared.index_conjuncts();
        if !conjuncts.is_empty() {
            if let Some(plan) = plan::forced(self.reader, self.container, &conjuncts)? {
                if let entries @ Access::Entries(_) = self.entry_order(plan.clone()) {
                    accesses.push(entries);
                }
                if let Some(vector) = &vector {
                    accesses.push(Access::Vector(vector.clone().filtered(plan.clone())));
                }
                accesses.push(Access::Index(plan));
            }
        }
        if let Some(walk) = order_walk(self.prepared, self.container) {
            accesses.push(Access::Walk(walk));
        }
        if let Some(rank) = self.text_rank() {
            accesses.push(Access::TextRank(rank));
        }
        Ok(accesses)
    }

    /// The access to run: the entry order a token pins, else aggregates the index answers
    /// (when `cover`), else the filter's entries or candidates when they are few
    /// (`index_plan`, `entry_order`), else an ORDER BY walk, else the scan.
    fn plan(&self, cover: bool) -> EngineResult<Access> {
        if !self.prepared.scans_documents() {
            return Ok(Access::Scan);
        }
        let space = self.start()?.key_space();
        if space == DOCUMENT_ORDER_SPACE {
            return Ok(Access::Documents);
        }
        if space != 0 {
            return self.resumed_entries(space);
        }
        let ready = index_ready_in(self.reader, self.container)?;
        if let Some(vector) = vector_plan(self.prepared, self.container) {
            // A selective filter is served first: its few candidates are scored exactly.
            let index = if ready { self.index_plan(None)? } else { None };
            return Ok(Access::Vector(match index {
                Some(index) => vector.filtered(index),
                None => vector,
            }));
        }
        if !ready {
            return Ok(self.unindexed());
        }
        if let Some(covered) = self.covered_plan().filter(|_| cover) {
            return Ok(Access::Covered(covered));
        }
        let walk = order_walk(self.prepared, self.container);
        if let Some(index) = self.index_plan(walk.as_ref())? {
            return Ok(self.entry_order(index));
        }
        // A selective filter is served first, as above; otherwise the ranking's entries.
        if let Some(rank) = self.text_rank() {
            return Ok(Access::TextRank(rank));
        }
        Ok(match walk {
            Some(walk) => Access::Walk(walk),
            None => self.unindexed(),
        })
    }

    /// The access of a page no index serves: a fresh streamed page over a range or the
    /// container walks in document order; any other, and a page resumed from a token of the
    /// item-key order, scans its scope.
    fn unindexed(&self) -> Access {
        if self.continuation.is_none()
            && document_order::serves(self.prepared, self.container, self.scope)
        {
            Access::Documents
        } else {
            Access::Scan
        }
    }

    /// The access of a page resumed in the entry order of key space `space`: the index's
    /// entries while it holds them, else the scan in that order.
    fn resumed_entries(&self, space: u64) -> EngineResult<Access> {
        let walk = resumed_walk(self.container, &self.prepared.index_conjuncts(), space)?;
        let served =
            index_ready_in(self.reader, self.container)? && walk.indexed_in(self.container);
        Ok(if served {
            Access::Entries(walk)
        } else {
            Access::EntryScan(walk)
        })
    }

    /// The access of a fresh page that `index` serves: the entry order of its one conjunct
    /// when the page streams its rows and nothing narrows the candidates (an intersection of
    /// several conjuncts is cheaper read whole), else the candidates in item-key order.
    fn entry_order(&self, index: IndexPlan) -> Access {
        if self.continuation.is_none() && index.narrow.is_empty() && self.prepared.streams_rows() {
            let conjuncts = self.prepared.index_conjuncts();
            if let Some(walk) = entry_walk(self.container, &conjuncts, index.drive.conjunct) {
                return Access::Entries(walk);
            }
        }
        Access::Index(index)
    }

    /// The index plan of the page's filter, if its candidates are few enough: at most an
    /// eighth of what the scan reads (`index/plan.rs`), and, when an ORDER BY walk could serve
    /// the page instead, fewer than the walk is expected to load (`prefers_candidates`).
    fn index_plan(&self, walk: Option<&OrderWalk>) -> EngineResult<Option<IndexPlan>> {
        let conjuncts = self.prepared.index_conjuncts();
        if conjuncts.is_empty() {
            return Ok(None);
        }
        let items = read_container_counters(self.reader, self.container)?.items;
        let chosen = match &self.scope.partition {
            None => self.container_plan(&conjuncts, items)?,
            Some(value) => {
                let scope = PlanScope::Partition(value);
                plan::choose(self.reader, self.container, &conjuncts, items, &scope)?
            }
        };
        Ok(chosen.filter(|chosen| match walk {
            None => true,
            Some(walk) => prefers_candidates(chosen, walk, self.page_items_max, items),
        }))
    }

    /// The index plan over the whole container (or a range of it), skipping the count for a
    /// query whose filter was recently found unselective on it (`index/plan_memory.rs`).
    fn container_plan(
        &self,
        conjuncts: &[IndexConjunct],
        items: u64,
    ) -> EngineResult<Option<IndexPlan>> {
        let key = PlanKey {
            container: self.container.key_number(),
            index_generation: self.container.index_generation,
            query: self.prepared.fingerprint(),
        };
        if self.plans.scans(&key, items) {
            return Ok(None);
        }
        let scope = PlanScope::Container { items };
        let chosen = plan::choose(self.reader, self.container, conjuncts, items, &scope)?;
        match &chosen {
            None => self.plans.remember_scan(key, items),
            Some(_) => self.plans.forget(&key),
        }
        Ok(chosen)
    }

    /// The covered plan of this page, if its aggregates may be answered from the index.
    fn covered_plan(&self) -> Option<CoveredPlan> {
        covered_plan(
            self.prepared,
            self.container,
            self.scope,
            self.continuation.is_some(),
        )
    }

    /// Runs a covered page: its aggregates from the index, or the plan it would have had
    /// without them when they cannot be given exactly (`query/covered.rs`).
    fn run_covered(&self, plan: &CoveredPlan) -> EngineResult<RanPage> {
        let started = Stopwatch::start();
        let Some(answer) = answer(self.reader, self.container, self.scope, plan, self.now_ms)?
        else {
            return self.run_with(&self.plan(false)?);
        };
        let mut index = answer.index;
        index.time = started.elapsed();
        let finishing = Stopwatch::start();
        let page = self
            .start()?
            .finish_covered(answer.values, answer.documents_loaded)?;
        Ok(RanPage {
            page,
            tally: ScanTally {
                retrieved_bytes: answer.retrieved_bytes,
                // The one document a numeric extreme loads is selected by the filter.
                documents_matched: answer.documents_loaded,
                ..ScanTally::default()
            },
            index,
            finish: finishing.elapsed(),
        })
    }

    /// Runs the page through `access`.
    fn run_with(&self, access: &Access) -> EngineResult<RanPage> {
        if let Access::Covered(plan) = access {
            return self.run_covered(plan);
        }
        let mut run = self.start()?;
        let (tally, index) = self.read(access, &mut run)?;
        let finishing = Stopwatch::start();
        let page = run.finish(!tally.page_full)?;
        Ok(RanPage {
            page,
            tally,
            index,
            finish: finishing.elapsed(),
        })
    }

    /// Pushes the page's documents into `run` through `access`.
    fn read(&self, access: &Access, run: &mut PageRun) -> EngineResult<(ScanTally, IndexTally)> {
        let scan = PageScan {
            container: self.container,
            cache: self.cache,
            now_ms: self.now_ms,
            measure: self.measure,
            // Without a filter no index serves the page, so every access agrees on where it
            // ends (a filter's candidates would skip the items the scan stops at).
            range_by_range: self.prepared.streams_rows()
                && !self.prepared.has_filter()
                && document_order::spans_ranges(self.container, self.scope),
        };
        Ok(match access {
            Access::Scan => (
                scan.run(self.reader, self.scope, run)?,
                IndexTally::default(),
            ),
            Access::Walk(walk) => {
                let tally = if let Some(tally) = scan.walk(self.reader, self.scope, walk, run)? {
                    tally
                } else {
                    // The walk loaded more than its share: the scan decides this page.
                    *run = self.start()?;
                    scan.run(self.reader, self.scope, run)?
                };
                (tally, IndexTally::default())
            }
            Access::Index(access) => {
                let (item_keys, index) = candidate_keys(
                    self.reader,
                    self.container,
                    access,
                    self.scope,
                    run.resume_after(),
                )?;
                let tally = scan.run_keys(self.reader, self.scope, &item_keys, run)?;
                (tally, index)
            }
            Access::Entries(walk) => {
                scan.walk_entries(self.reader, self.scope, walk, run, self.page_items_max)?
            }
            Access::EntryScan(walk) => (
                scan.scan_in_entry_order(self.reader, self.scope, walk, run)?,
                IndexTally::default(),
            ),
            Access::Vector(plan) => {
                let fed = scan.vector_order(self.reader, self.scope, self.vectors, plan, run)?;
                if let Some(fed) = fed {
                    fed
                } else {
                    // The set cannot serve this snapshot: the scan decides this page.
                    *run = self.start()?;
                    let tally = scan.run(self.reader, self.scope, run)?;
                    (tally, IndexTally::default())
                }
            }
            Access::TextRank(rank) => {
                if let Some(fed) = scan.text_rank(self.reader, self.scope, rank, run)? {
                    fed
                } else {
                    // The entries cannot decide this page: the scan does.
                    *run = self.start()?;
                    let tally = scan.run(self.reader, self.scope, run)?;
                    (tally, IndexTally::default())
                }
            }
            Access::Documents => (
                scan.walk_documents(self.reader, self.scope, run)?,
                IndexTally::default(),
            ),
            // Answered by `run_covered`, which reads no documents.
            Access::Covered(_) => (ScanTally::default(), IndexTally::default()),
        })
    }
}

impl PageInputs<'_> {
    /// The full-text ranking the index can serve on this page: a first page only (a resumed
    /// one scans from its token).
    fn text_rank(&self) -> Option<TextRank> {
        self.continuation
            .is_none()
            .then(|| text_rank_plan(self.prepared, self.container))
            .flatten()
    }

    /// A fresh run of this page.
    fn start(&self) -> EngineResult<PageRun> {
        Ok(self
            .prepared
            .start_page_with(self.continuation, self.page_items_max, self.rules)?)
    }
}

/// Whether a page that an ORDER BY walk could serve should rather load the filter's candidates
/// (`plan`, driven by `plan.drive_entries` entries) and sort them. A walk through the span of
/// an equality prefix reads only entries that pass those equalities, so it wins whenever its
/// equalities drive the plan. Otherwise, with `k` rows a page needs among `n` items of which
/// `c` are candidates spread evenly along the sort order, the walk loads about `k·n/c`
/// documents and the candidates `c`: the candidates are loaded when `c² ≤ k·n`. The bound is
/// the walk's expected cost, which a filter correlated with the sort order can exceed; the
/// walk then gives up after a quarter of the container and the page scans.
fn prefers_candidates(plan: &IndexPlan, walk: &OrderWalk, page_items: usize, items: u64) -> bool {
    let drive_fixed = plan.drive.ranges.len() == 1
        && plan.drive.seeks == 1
        && plan
            .drive
            .paths
            .iter()
            .all(|path| walk.fixed_paths.contains(path));
    if drive_fixed {
        return false;
    }
    let candidates = u128::from(plan.drive_entries);
    candidates * candidates <= (page_items as u128).saturating_mul(u128::from(items))
}

/// Fails when the index plan's page (`index`) and the scan's (`scan`) differ: in items, in
/// continuation, or in whether they failed.
fn check_same(
    index: &EngineResult<RanPage>,
    scan: &EngineResult<RanPage>,
    text: &str,
) -> EngineResult<()> {
    let difference = match (index, scan) {
        (Ok(index), Ok(scan)) if index.page.items != scan.page.items => Some(format!(
            "items {} from the index, {} from the scan",
            serde_json::Value::from(index.page.items.clone()),
            serde_json::Value::from(scan.page.items.clone()),
        )),
        (Ok(index), Ok(scan)) if index.page.continuation != scan.page.continuation => {
            Some(format!(
                "continuation {:?} from the index, {:?} from the scan",
                index.page.continuation, scan.page.continuation
            ))
        }
        (Ok(_), Ok(_)) | (Err(_), Err(_)) => None,
        (Ok(_), Err(error)) => Some(format!("the scan failed alone: {}", error.message())),
        (Err(error), Ok(_)) => Some(format!("the index failed alone: {}", error.message())),
    };
    match difference {
        None => Ok(()),
        Some(difference) => {
            tracing::error!(query = %text, %difference, "query verification failed");
            Err(EngineError::with_message(
                ErrorCode::Internal,
                format!(
                    "Query verification (LETHEDB_QUERY_VERIFY) failed: the index plan and the scan differ on a page of the query {text:?}: {difference}"
                ),
            ))
        }
    }
}
