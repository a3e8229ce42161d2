//! One page of a query over a container's items, run with the access the planner chose
//! (`index/plan.rs`): the scan of the request's scope, or the candidates an index names
//! (`query/seek.rs`). Both push documents through the same visibility check into the same
//! `PageRun`, in item-key order, so both give the same page.
//!
//! The verify mode (`EngineConfig::query_verify`, `LETHEDB_QUERY_VERIFY=1` on the server) takes
//! the proof further on every page: whenever an index can serve the query, the page runs
//! through the index, whatever the selectivity, and again as a scan, and any difference in
//! items, continuation or failure is an internal error naming the query. What a query means
//! is the query crate's business; which keys the scope covers, `query/mod.rs`'s.

use crate::clock::Stopwatch;
use crate::container::Container;
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::index::plan::{self, IndexPlan, PlanScope};
use crate::items::document_cache::DocumentCache;
use crate::query::scan::{PageScan, ScanScope, ScanTally};
use crate::query::seek::{candidate_keys, IndexTally};
use crate::records::read_counters;
use lethedb_query::{Page, Prepared};
use lethedb_storage::ReadTxn;
use std::sync::Arc;
use std::time::Duration;

/// What one page needs to run, whichever plan runs it.
pub(crate) struct PageInputs<'a> {
    pub(crate) reader: &'a dyn ReadTxn,
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
        let outcome = self.run_with(access.as_ref());
        if verify && access.is_some() {
            check_same(&outcome, &self.run_with(None), self.text)?;
        }
        let mut ran = outcome?;
        ran.index.time += planned;
        Ok(ran)
    }

    /// The index plan to run, or `None` for the scan.
    fn plan(&self, verify: bool) -> EngineResult<Option<IndexPlan>> {
        if !self.prepared.scans_documents() {
            return Ok(None);
        }
        let conjuncts = self.prepared.index_conjuncts();
        if conjuncts.is_empty() {
            return Ok(None);
        }
        if verify {
            return plan::forced(self.reader, self.container, &conjuncts);
        }
        let items = read_counters(self.reader, self.container.key_number())?.items;
        let scope = match &self.scope.partition {
            Some(value) => PlanScope::Partition(value),
            None => PlanScope::Container { items },
        };
        plan::choose(self.reader, self.container, &conjuncts, items, &scope)
    }

    /// Runs the page through `access`, or through the scan.
    fn run_with(&self, access: Option<&IndexPlan>) -> EngineResult<RanPage> {
        let mut run = self
            .prepared
            .start_page(self.continuation, self.page_items_max)?;
        let scan = PageScan {
            container: self.container,
            cache: self.cache,
            now_ms: self.now_ms,
            measure: self.measure,
        };
        let (tally, index) = match access {
            None => (
                scan.run(self.reader, self.scope, &mut run)?,
                IndexTally::default(),
            ),
            Some(access) => {
                let (item_keys, index) = candidate_keys(
                    self.reader,
                    self.container,
                    access,
                    self.scope,
                    run.resume_after(),
                )?;
                let tally = scan.run_keys(self.reader, self.scope, &item_keys, &mut run)?;
                (tally, index)
            }
        };
        let finishing = Stopwatch::start();
        let page = run.finish(!tally.page_full)?;
        Ok(RanPage {
            page,
            tally,
            index,
            finish: finishing.elapsed(),
        })
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
