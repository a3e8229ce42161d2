//! One page of a query over a container's items, run with the access the planner chose: for a
//! selective filter, the entries of its one served conjunct in index order when the page
//! streams its rows (`query/entry_order.rs`), else the candidates an index names pushed in
//! item-key order (`index/plan.rs`, `query/seek.rs`); an ORDER BY page's walk of the index in
//! sort order (`query/order_walk.rs`); or the scan of the request's scope. All push documents
//! through the same visibility check into the same `PageRun`. The item-key orders give the
//! scan's page; the entry order gives the page of a scan in entry order, and a page resumed
//! from its token keeps that order, with the index or without. No access reads the index while
//! a policy change's rebuild runs (`index::builder::index_ready_in`).
//!
//! The verify mode (`EngineConfig::query_verify`, `LETHEDB_QUERY_VERIFY=1` on the server) takes
//! the proof further on every page: whenever an index can serve the query, the page runs
//! through the index, whatever the selectivity, and again as a scan in the same order (the
//! scope's scan, or its scan in entry order), and any difference in items, continuation or
//! failure is an internal error naming the query. What a query means
//! is the query crate's business; which keys the scope covers, `query/mod.rs`'s.

use crate::clock::Stopwatch;
use crate::container::Container;
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::index::builder::index_ready_in;
use crate::index::plan::{self, IndexPlan, PlanScope};
use crate::index::plan_memory::{PlanKey, PlanMemory};
use crate::items::document_cache::DocumentCache;
use crate::query::entry_order::{entry_walk, resumed_walk, EntryWalk};
use crate::query::order_walk::{order_walk, OrderWalk};
use crate::query::scan::{PageScan, ScanScope, ScanTally};
use crate::query::seek::{candidate_keys, IndexTally};
use crate::records::read_counters;
use lethedb_query::{IndexConjunct, OrderingRules, Page, PageRun, Prepared};
use lethedb_storage::ReadTxn;
use std::sync::Arc;
use std::time::Duration;

/// How a page reads its documents.
enum Access {
    Scan,
    Index(IndexPlan),
    Walk(OrderWalk),
    /// A streamed page in the order of one conjunct's index entries, read from the index.
    Entries(EntryWalk),
    /// The same order from a scan of the scope, when the index cannot serve it.
    EntryScan(EntryWalk),
}

impl Access {
    /// What the verify mode runs to check this access: a scan in the same order, if this
    /// access reads the index.
    fn baseline(self) -> Option<Access> {
        match self {
            Access::Scan | Access::EntryScan(_) => None,
            Access::Index(_) | Access::Walk(_) => Some(Access::Scan),
            Access::Entries(walk) => Some(Access::EntryScan(walk)),
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
    /// Plans the page and runs it; with `verify`, runs it both ways and compares.
    pub(crate) fn run(&self, verify: bool) -> EngineResult<RanPage> {
        let planning = Stopwatch::start();
        let access = self.plan(verify)?;
        let planned = planning.elapsed();
        let outcome = self.run_with(&access);
        if let Some(baseline) = access.baseline().filter(|_| verify) {
            check_same(&outcome, &self.run_with(&baseline), self.text)?;
        }
        let mut ran = outcome?;
        ran.index.time += planned;
        Ok(ran)
    }

    /// The access to run: the entry order a token pins, else an index plan for a selective
    /// filter, else an ORDER BY walk, else the scan.
    fn plan(&self, verify: bool) -> EngineResult<Access> {
        if !self.prepared.scans_documents() {
            return Ok(Access::Scan);
        }
        let space = self.start()?.key_space();
        if space != 0 {
            return self.resumed_entries(space);
        }
        if !index_ready_in(self.reader, self.container)? {
            return Ok(Access::Scan);
        }
        if let Some(index) = self.index_plan(verify)? {
            return Ok(self.entry_order(index));
        }
        Ok(match order_walk(self.prepared, self.container) {
            Some(walk) => Access::Walk(walk),
            None => Access::Scan,
        })
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

    /// The index plan of the page's filter, if one is selective enough (any, with `verify`).
    fn index_plan(&self, verify: bool) -> EngineResult<Option<IndexPlan>> {
        let conjuncts = self.prepared.index_conjuncts();
        if conjuncts.is_empty() {
            return Ok(None);
        }
        if verify {
            return plan::forced(self.reader, self.container, &conjuncts);
        }
        let items = read_counters(self.reader, self.container.key_number())?.items;
        let Some(value) = &self.scope.partition else {
            return self.container_plan(&conjuncts, items);
        };
        let scope = PlanScope::Partition(value);
        plan::choose(self.reader, self.container, &conjuncts, items, &scope)
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

    /// Runs the page through `access`.
    fn run_with(&self, access: &Access) -> EngineResult<RanPage> {
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
        })
    }
}

impl PageInputs<'_> {
    /// A fresh run of this page.
    fn start(&self) -> EngineResult<PageRun> {
        Ok(self
            .prepared
            .start_page_with(self.continuation, self.page_items_max, self.rules)?)
    }
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
