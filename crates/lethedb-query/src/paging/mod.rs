//! One page of a query over a stream of documents pushed by the engine in ascending key order.
//!
//! Three strategies, chosen by the query's shape:
//! - **Stream** (no ORDER BY, GROUP BY, DISTINCT or aggregate): results come out in scan order;
//!   the token holds the last fully consumed key plus how many fan-out rows of the next
//!   document were already handled. It looks one result ahead, so a page that is not full
//!   where its scope ends has no continuation; one that fills exactly there has one, as the
//!   service's backend, which reads no further than a full page, hands out (the next page is
//!   then empty). No state beyond the page. The engine may push in an
//!   order of its own (`key_space.rs`), which the token remembers.
//! - **Ordered** (ORDER BY only, `ordered.rs`): every page re-scans from the start and keeps a
//!   bounded heap of the smallest rows after the last emitted position (sort values, the
//!   document's tie-breaker, fan-out index), `page_items_max + 1` of them (plus what OFFSET
//!   skips).
//! - **Materialized** (GROUP BY, DISTINCT, aggregates, or no FROM): every page re-computes the
//!   whole result with state bounded by `ACCUMULATED_ROWS_MAX` and pages it by index.
//!
//! - **Ranked** (ORDER BY RANK, `ranked.rs`): every page reads the whole scope, tallies the
//!   full-text statistics of every document, and ranks every matching row at the end.
//!
//! ORDER BY (in the Ordered and Materialized strategies) follows the `OrderingRules` the page
//! was started with, and orders ties by the tie-breaker each document is pushed with.
//!
//! It does no I/O and never sees storage: keys are opaque bytes compared bytewise.

mod key_space;
mod ordered;
mod pushed;
mod ranked;
mod sort_feed;

use std::ops::ControlFlow;
use std::sync::Arc;

use serde_json::Value;

use crate::error::QueryError;
use crate::eval::Evaluator;
use crate::exec::{self, Accumulator, Flow};
use crate::ordering::OrderingRules;
use crate::prepared::{Mode, Prepared, PreparedInner};
use crate::ranking;
use crate::token::{self, Position};
use ordered::OrderedRun;
use pushed::Pushed;
use ranked::RankedRun;

/// One page of results.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub items: Vec<Value>,
    /// Where the next page starts; `None` on the last page.
    pub continuation: Option<String>,
    /// Documents the engine pushed for this page.
    pub documents_scanned: u64,
    /// Rows (after FROM/JOIN fan-out) that passed the WHERE clause.
    pub rows_matched: u64,
}

struct StreamRun {
    after: Option<Vec<u8>>,
    at: Option<Vec<u8>>,
    skip: u64,
    produced: u64,
    /// The last matching document whose rows were all handled before the page filled (only
    /// matching documents move a token, so a plan that loads no others writes the same).
    consumed: Option<Vec<u8>>,
    items: Vec<Value>,
    next: Option<Position>,
    done: bool,
    /// Which of the engine's orders the keys are in (`key_space.rs`).
    space: u64,
}

struct MaterializedRun {
    index: u64,
    accumulator: Accumulator,
}

enum RunState {
    Stream(StreamRun),
    Ordered(OrderedRun),
    Materialized(MaterializedRun),
    Ranked(RankedRun),
}

/// A page being computed. See `Prepared::start_page`.
pub struct PageRun {
    prepared: Arc<PreparedInner>,
    page_items_max: usize,
    documents_scanned: u64,
    rows_matched: u64,
    last_key: Option<Vec<u8>>,
    /// The engine was told to stop; further pushes are ignored.
    stopped: bool,
    /// The engine feeds documents in sort order rather than key order (`feed_in_sort_order`).
    sort_order_feed: bool,
    state: RunState,
}

impl Prepared {
    /// Begins one page. `continuation` is a token from an earlier `Page` of this same query
    /// (with the same parameters); anything else is refused with `InvalidContinuation`.
    pub fn start_page(
        &self,
        continuation: Option<&str>,
        page_items_max: usize,
    ) -> Result<PageRun, QueryError> {
        self.start_page_with(continuation, page_items_max, OrderingRules::default())
    }

    /// [`Prepared::start_page`] for a query whose ORDER BY an index serves: `rules` say which
    /// rows that index leaves out and how it compares values. Every page of a query must be
    /// run with the same rules.
    pub fn start_page_with(
        &self,
        continuation: Option<&str>,
        page_items_max: usize,
        rules: OrderingRules,
    ) -> Result<PageRun, QueryError> {
        PageRun::new(Arc::clone(&self.inner), continuation, page_items_max, rules)
    }
}

impl PageRun {
    pub(crate) fn new(
        prepared: Arc<PreparedInner>,
        continuation: Option<&str>,
        page_items_max: usize,
        rules: OrderingRules,
    ) -> Result<Self, QueryError> {
        if page_items_max == 0 {
            return Err(QueryError::Usage(
                "page_items_max must be at least 1".into(),
            ));
        }
        let position = continuation
            .map(|text| token::decode(text, prepared.token_fingerprint))
            .transpose()?;
        let page_items_max = match prepared.plan.top {
            Some(top) if ranking::is_component_query(&prepared.query) => {
                page_items_max.max(usize::try_from(top).unwrap_or(usize::MAX))
            }
            _ => page_items_max,
        };
        let mut state = RunState::resume(&prepared, position, page_items_max, rules)?;
        let stopped = state.decided_before_scan(&prepared);
        let mut last_key = None;
        if let RunState::Stream(stream) = &mut state {
            stream.done = stopped;
            last_key = stream.after.clone();
        }
        Ok(PageRun {
            prepared,
            page_items_max,
            documents_scanned: 0,
            rows_matched: 0,
            last_key,
            stopped,
            sort_order_feed: false,
            state,
        })
    }

    /// The storage key after which the engine must resume its scan (`None` = from the start).
    pub fn resume_after(&self) -> Option<&[u8]> {
        match &self.state {
            RunState::Stream(run) => run.after.as_deref(),
            _ => None,
        }
    }

    /// Rows (after FROM/JOIN fan-out) that passed the WHERE clause so far: a caller that compares
    /// it before and after a push learns whether that document matched.
    pub fn rows_matched(&self) -> u64 {
        self.rows_matched
    }

    /// Feeds the next document and its storage key; `Break` means the page is decided and the
    /// engine should stop scanning and call `finish(false)`. Rows with equal ORDER BY values
    /// come back in the order of their keys (in the first key's direction).
    pub fn push(&mut self, key: &[u8], document: &Value) -> Result<ControlFlow<()>, QueryError> {
        self.push_with_tie(key, key, document)
    }

    /// [`PageRun::push`] for a document with a number of its own (the service's `_rid` order):
    /// rows with equal ORDER BY values come back in the order of these numbers, in the first
    /// key's direction, whatever order the documents are pushed in.
    pub fn push_numbered(
        &mut self,
        key: &[u8],
        document_number: u64,
        document: &Value,
    ) -> Result<ControlFlow<()>, QueryError> {
        self.push_with_tie(key, &document_number.to_be_bytes(), document)
    }

    fn push_with_tie(
        &mut self,
        key: &[u8],
        tie: &[u8],
        document: &Value,
    ) -> Result<ControlFlow<()>, QueryError> {
        if self.stopped {
            return Ok(ControlFlow::Break(()));
        }
        self.count_document(key)?;
        let prepared = Arc::clone(&self.prepared);
        let Some(from) = &prepared.query.from else {
            self.stopped = true;
            return Ok(ControlFlow::Break(()));
        };
        let pushed = Pushed {
            evaluator: Evaluator::new(&prepared.context),
            prepared: &prepared,
            from,
            key,
            tie,
            document,
        };
        let rows_matched = &mut self.rows_matched;
        let flow = match &mut self.state {
            RunState::Stream(run) => run.push(&pushed, self.page_items_max as u64, rows_matched)?,
            RunState::Ordered(run) => run.push(&pushed, rows_matched)?,
            RunState::Materialized(run) => run.push(&pushed, rows_matched)?,
            RunState::Ranked(run) => run.push(&pushed, rows_matched)?,
        };
        if flow.is_break() {
            self.stopped = true;
        }
        Ok(flow)
    }

    /// Refuses a key that does not follow the last one pushed (or `resume_after`), then counts
    /// the document as scanned.
    fn count_document(&mut self, key: &[u8]) -> Result<(), QueryError> {
        if !self.sort_order_feed && self.last_key.as_deref().is_some_and(|last| key <= last) {
            return Err(QueryError::Usage(
                "documents must be pushed in strictly ascending key order after resume_after"
                    .into(),
            ));
        }
        self.last_key = Some(key.to_vec());
        self.documents_scanned += 1;
        Ok(())
    }

    /// For a covered aggregate page (`covered.rs`): its one group's aggregate values.
    pub(crate) fn set_covered(&mut self, values: Vec<Option<Value>>) -> Result<(), QueryError> {
        let RunState::Materialized(run) = &mut self.state else {
            return Err(QueryError::Usage(
                "only an aggregate page can be answered from an index".into(),
            ));
        };
        if values.len() != self.prepared.plan.aggregates.len() {
            return Err(QueryError::Usage("one value per aggregate call".into()));
        }
        run.accumulator.set_covered(values);
        Ok(())
    }

    /// Ends the page, after the engine got `Break` or ran out of documents (`exhausted`).
    pub fn finish(self, exhausted: bool) -> Result<Page, QueryError> {
        let fingerprint = self.prepared.token_fingerprint;
        let scan_ended = exhausted || self.stopped;
        let (items, next) = match self.state {
            RunState::Stream(run) => run.finish(scan_ended, self.last_key, self.page_items_max),
            RunState::Ordered(run) => run.finish(scan_ended, self.page_items_max)?,
            RunState::Materialized(run) => {
                run.finish(&self.prepared, scan_ended, self.page_items_max)?
            }
            RunState::Ranked(run) => run.finish(&self.prepared, scan_ended, self.page_items_max)?,
        };
        Ok(Page {
            items,
            continuation: next.map(|position| token::encode(fingerprint, &position)),
            documents_scanned: self.documents_scanned,
            rows_matched: self.rows_matched,
        })
    }
}

impl RunState {
    /// The state a page starts from: the query's strategy, resumed at the token's position.
    fn resume(
        prepared: &PreparedInner,
        position: Option<Position>,
        page_items_max: usize,
        rules: OrderingRules,
    ) -> Result<Self, QueryError> {
        Ok(match (prepared.mode, position) {
            (Mode::Stream, None) => RunState::Stream(StreamRun::new(None, None, 0, 0, 0)),
            (
                Mode::Stream,
                Some(Position::Stream {
                    after,
                    at,
                    skip,
                    produced,
                    space,
                }),
            ) => RunState::Stream(StreamRun::new(after, at, skip, produced, space)),
            (Mode::Ordered, None) => RunState::Ordered(OrderedRun::resume(
                prepared,
                None,
                0,
                page_items_max,
                rules,
            )?),
            (Mode::Ordered, Some(Position::Ordered { last, produced })) => RunState::Ordered(
                OrderedRun::resume(prepared, last, produced, page_items_max, rules)?,
            ),
            (Mode::Materialized | Mode::NoSource, None) => {
                RunState::Materialized(MaterializedRun::new(0, rules))
            }
            (Mode::Materialized | Mode::NoSource, Some(Position::Materialized { index })) => {
                RunState::Materialized(MaterializedRun::new(index, rules))
            }
            (Mode::Ranked, position) => RunState::Ranked(RankedRun::resume(prepared, position)?),
            (_, Some(_)) => {
                return Err(QueryError::InvalidContinuation(
                    "the token is of another kind".into(),
                ))
            }
        })
    }

    /// Whether the page is decided before any document is pushed: OFFSET/LIMIT already spent,
    /// or a query without FROM, whose one row needs no scan.
    fn decided_before_scan(&self, prepared: &PreparedInner) -> bool {
        match self {
            RunState::Ordered(run) => run.needed == 0,
            RunState::Stream(run) => prepared.plan.end().is_some_and(|end| run.produced >= end),
            RunState::Materialized(_) => prepared.mode == Mode::NoSource,
            RunState::Ranked(_) => false,
        }
    }
}

impl StreamRun {
    fn new(
        after: Option<Vec<u8>>,
        at: Option<Vec<u8>>,
        skip: u64,
        produced: u64,
        space: u64,
    ) -> Self {
        StreamRun {
            space,
            consumed: after.clone(),
            after,
            at,
            skip,
            produced,
            items: Vec::new(),
            next: None,
            done: false,
        }
    }

    /// Emits one document's rows in scan order; on the first result past a full page, notes
    /// where the next page starts and stops.
    fn push(&mut self, pushed: &Pushed<'_>, page_items_max: u64, rows_matched: &mut u64) -> Flow {
        let (was_full, matched_before) = (self.items.len() as u64 >= page_items_max, *rows_matched);
        let skip = if self.at.as_deref() == Some(pushed.key) {
            self.skip
        } else {
            0
        };
        let plan = &pushed.prepared.plan;
        let end = plan.end();
        let flow = pushed.rows(|row, scope| {
            if row < skip || !pushed.passes_filter(scope)? {
                return Ok(ControlFlow::Continue(()));
            }
            *rows_matched += 1;
            let Some(output) = pushed.project(scope)? else {
                return Ok(ControlFlow::Continue(()));
            };
            if self.items.len() as u64 >= page_items_max {
                // One more result exists: the next page starts at this row.
                self.next = Some(Position::Stream {
                    after: self.consumed.clone(),
                    at: Some(pushed.key.to_vec()),
                    skip: row,
                    produced: self.produced,
                    space: self.space,
                });
                return Ok(ControlFlow::Break(()));
            }
            if self.produced >= plan.offset {
                self.items.push(output);
            }
            // A forged token may carry any count (found by the `continuation` fuzz target).
            self.produced = self.produced.saturating_add(1);
            if end.is_some_and(|end| self.produced >= end) {
                self.done = true;
                return Ok(ControlFlow::Break(()));
            }
            Ok(ControlFlow::Continue(()))
        })?;
        if flow.is_continue() && !was_full && *rows_matched > matched_before {
            self.consumed = Some(pushed.key.to_vec());
        }
        Ok(flow)
    }

    /// The page's items and where the next page starts.
    fn finish(
        self,
        scan_ended: bool,
        last_key: Option<Vec<u8>>,
        page_items_max: usize,
    ) -> (Vec<Value>, Option<Position>) {
        let filled = !self.items.is_empty() && self.items.len() >= page_items_max;
        let next = if self.next.is_some() {
            self.next
        } else if self.done || (scan_ended && !filled) {
            None
        } else if scan_ended {
            // The page filled exactly as its scope ended. The service's backend stops reading
            // once a page is full, so it cannot know that nothing follows: it hands out a
            // token, and the page after it is empty (the JavaScript SDK's hierarchical
            // `readAll` test counts that page). Every result of the last document was used,
            // or the look-ahead above would have found the next one. The token names the last
            // document with a result, not the last one read, so that an index plan (which reads
            // only candidates) and a scan hand out the same token.
            Some(Position::Stream {
                after: self.consumed,
                at: None,
                skip: 0,
                produced: self.produced,
                space: self.space,
            })
        } else {
            // The engine stopped on its own before the page filled: resume after the
            // last document it delivered.
            Some(Position::Stream {
                after: last_key,
                at: None,
                skip: 0,
                produced: self.produced,
                space: self.space,
            })
        };
        (self.items, next)
    }
}

impl MaterializedRun {
    fn new(index: u64, rules: OrderingRules) -> Self {
        MaterializedRun {
            index,
            accumulator: Accumulator::with_rules(rules),
        }
    }

    /// Accumulates every matching row of one document.
    fn push(&mut self, pushed: &Pushed<'_>, rows_matched: &mut u64) -> Flow {
        let prepared = pushed.prepared;
        pushed.rows(|_, scope| {
            if pushed.passes_filter(scope)? {
                *rows_matched += 1;
                self.accumulator.push(
                    &pushed.evaluator,
                    &prepared.query,
                    &prepared.plan,
                    scope,
                    pushed.tie,
                )?;
            }
            Ok(ControlFlow::Continue(()))
        })
    }

    /// Computes the whole result and takes the page at the token's index.
    fn finish(
        mut self,
        prepared: &PreparedInner,
        scan_ended: bool,
        page_items_max: usize,
    ) -> Result<(Vec<Value>, Option<Position>), QueryError> {
        if !scan_ended {
            return Err(QueryError::Usage(
                "this query needs the whole scan: call finish(true) after the last document".into(),
            ));
        }
        if prepared.mode == Mode::NoSource {
            // Without FROM the query has exactly one row, with nothing bound.
            let evaluator = Evaluator::new(&prepared.context);
            if exec::passes_filter(&evaluator, &prepared.query, None)? {
                self.accumulator
                    .push(&evaluator, &prepared.query, &prepared.plan, None, &[])?;
            }
        }
        let results =
            self.accumulator
                .finish(&prepared.context, &prepared.query, &prepared.plan)?;
        let start = usize::try_from(self.index)
            .unwrap_or(usize::MAX)
            .min(results.len());
        let end = start.saturating_add(page_items_max).min(results.len());
        let next = (end < results.len()).then_some(Position::Materialized { index: end as u64 });
        Ok((results.into_iter().take(end).skip(start).collect(), next))
    }
}
