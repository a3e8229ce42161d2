//! One page of a query over a stream of documents pushed by the engine in ascending key order.
//!
//! Three strategies, chosen by the query's shape:
//! - **Stream** (no ORDER BY, GROUP BY, DISTINCT or aggregate): results come out in scan order;
//!   the token holds the last fully consumed key plus how many fan-out rows of the next
//!   document were already handled. It looks one result ahead, so a continuation is returned
//!   only when another result exists. No state beyond the page.
//! - **Ordered** (ORDER BY only): every page re-scans from the start and keeps a bounded heap
//!   of the smallest rows after the last emitted position (sort values, key, fan-out index),
//!   `page_items_max + 1` of them (plus what OFFSET skips).
//! - **Materialized** (GROUP BY, DISTINCT, aggregates, or no FROM): every page re-computes the
//!   whole result with state bounded by `ACCUMULATED_ROWS_MAX` and pages it by index.
//!
//! It does no I/O and never sees storage: keys are opaque bytes compared bytewise.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::ops::ControlFlow;
use std::sync::Arc;

use serde_json::Value;

use crate::error::QueryError;
use crate::eval::Evaluator;
use crate::exec::{self, Accumulator, ACCUMULATED_ROWS_MAX};
use crate::prepared::{Mode, Prepared, PreparedInner};
use crate::token::{self, OrderedPosition, Position};

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
    /// The last document whose rows were all handled before the page filled.
    consumed: Option<Vec<u8>>,
    items: Vec<Value>,
    next: Option<Position>,
    done: bool,
}

/// One row kept by an ORDER BY page, ordered by its position in the sorted stream.
struct OrderedEntry {
    position: OrderedPosition,
    output: Value,
    descending: Arc<[bool]>,
}

fn compare_positions(
    descending: &[bool],
    left: &OrderedPosition,
    right: &OrderedPosition,
) -> Ordering {
    for ((a, b), descending) in left.sort.iter().zip(&right.sort).zip(descending) {
        let ordering = crate::value::total_order(a.as_ref(), b.as_ref());
        let ordering = if *descending {
            ordering.reverse()
        } else {
            ordering
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    left.key.cmp(&right.key).then(left.row.cmp(&right.row))
}

impl PartialEq for OrderedEntry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for OrderedEntry {}
impl PartialOrd for OrderedEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrderedEntry {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_positions(&self.descending, &self.position, &other.position)
    }
}

struct OrderedRun {
    last: Option<OrderedPosition>,
    produced: u64,
    /// Rows still to skip for OFFSET before the first emitted one.
    offset_remaining: u64,
    /// How many of the smallest rows this page must keep.
    needed: u64,
    heap: BinaryHeap<OrderedEntry>,
    descending: Arc<[bool]>,
}

struct MaterializedRun {
    index: u64,
    accumulator: Accumulator,
}

enum RunState {
    Stream(StreamRun),
    Ordered(OrderedRun),
    Materialized(MaterializedRun),
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
        PageRun::new(Arc::clone(&self.inner), continuation, page_items_max)
    }
}

impl PageRun {
    pub(crate) fn new(
        prepared: Arc<PreparedInner>,
        continuation: Option<&str>,
        page_items_max: usize,
    ) -> Result<Self, QueryError> {
        if page_items_max == 0 {
            return Err(QueryError::Usage(
                "page_items_max must be at least 1".into(),
            ));
        }
        let position = continuation
            .map(|text| token::decode(text, prepared.fingerprint))
            .transpose()?;
        let plan = &prepared.plan;
        let state = match (prepared.mode, position) {
            (Mode::Stream, None) => RunState::Stream(StreamRun::new(None, None, 0, 0)),
            (
                Mode::Stream,
                Some(Position::Stream {
                    after,
                    at,
                    skip,
                    produced,
                }),
            ) => RunState::Stream(StreamRun::new(after, at, skip, produced)),
            (Mode::Ordered, position) => {
                let (last, produced) = match position {
                    None => (None, 0),
                    Some(Position::Ordered { last, produced }) => (last, produced),
                    Some(_) => {
                        return Err(QueryError::InvalidContinuation(
                            "the token is of another kind".into(),
                        ))
                    }
                };
                if let Some(last) = &last {
                    if last.sort.len() != prepared.query.order_by.len() {
                        return Err(QueryError::InvalidContinuation(
                            "the token has the wrong number of sort values".into(),
                        ));
                    }
                }
                let offset_remaining = plan.offset.saturating_sub(produced);
                let mut needed = offset_remaining
                    .saturating_add(page_items_max as u64)
                    .saturating_add(1);
                if let Some(end) = plan.end() {
                    needed = needed.min(end.saturating_sub(produced));
                }
                let descending: Arc<[bool]> = prepared
                    .query
                    .order_by
                    .iter()
                    .map(|key| key.descending)
                    .collect();
                RunState::Ordered(OrderedRun {
                    last,
                    produced,
                    offset_remaining,
                    needed,
                    heap: BinaryHeap::new(),
                    descending,
                })
            }
            (Mode::Materialized | Mode::NoSource, None) => {
                RunState::Materialized(MaterializedRun {
                    index: 0,
                    accumulator: Accumulator::default(),
                })
            }
            (Mode::Materialized | Mode::NoSource, Some(Position::Materialized { index })) => {
                RunState::Materialized(MaterializedRun {
                    index,
                    accumulator: Accumulator::default(),
                })
            }
            (_, Some(_)) => {
                return Err(QueryError::InvalidContinuation(
                    "the token is of another kind".into(),
                ))
            }
        };
        let stopped = match &state {
            RunState::Ordered(run) => run.needed == 0,
            RunState::Stream(run) => plan.end().is_some_and(|end| run.produced >= end),
            RunState::Materialized(_) => prepared.mode == Mode::NoSource,
        };
        let mut run = PageRun {
            prepared,
            page_items_max,
            documents_scanned: 0,
            rows_matched: 0,
            last_key: None,
            stopped,
            state,
        };
        if let RunState::Stream(stream) = &mut run.state {
            stream.done = run.stopped;
            run.last_key = stream.after.clone();
        }
        Ok(run)
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
    /// engine should stop scanning and call `finish(false)`.
    pub fn push(&mut self, key: &[u8], document: &Value) -> Result<ControlFlow<()>, QueryError> {
        if self.stopped {
            return Ok(ControlFlow::Break(()));
        }
        if self.last_key.as_deref().is_some_and(|last| key <= last) {
            return Err(QueryError::Usage(
                "documents must be pushed in strictly ascending key order after resume_after"
                    .into(),
            ));
        }
        self.last_key = Some(key.to_vec());
        self.documents_scanned += 1;
        let prepared = Arc::clone(&self.prepared);
        let query = &prepared.query;
        let plan = &prepared.plan;
        let Some(from) = &query.from else {
            self.stopped = true;
            return Ok(ControlFlow::Break(()));
        };
        let evaluator = Evaluator::new(&prepared.context);
        let page_items_max = self.page_items_max as u64;
        let rows_matched = &mut self.rows_matched;
        let mut row_index: u64 = 0;
        let flow = match &mut self.state {
            RunState::Stream(run) => {
                let was_full = run.items.len() as u64 >= page_items_max;
                let skip = if run.at.as_deref() == Some(key) {
                    run.skip
                } else {
                    0
                };
                let end = plan.end();
                let flow = exec::document_rows(&evaluator, from, document, &mut |scope| {
                    let row = row_index;
                    row_index += 1;
                    if row < skip || !exec::passes_filter(&evaluator, query, scope)? {
                        return Ok(ControlFlow::Continue(()));
                    }
                    *rows_matched += 1;
                    let Some(output) = exec::project(&evaluator, query, plan, scope)? else {
                        return Ok(ControlFlow::Continue(()));
                    };
                    if run.items.len() as u64 >= page_items_max {
                        // One more result exists: the next page starts at this row.
                        run.next = Some(Position::Stream {
                            after: run.consumed.clone(),
                            at: Some(key.to_vec()),
                            skip: row,
                            produced: run.produced,
                        });
                        return Ok(ControlFlow::Break(()));
                    }
                    if run.produced >= plan.offset {
                        run.items.push(output);
                    }
                    // A forged token may carry any count (found by the `continuation` fuzz target).
                    run.produced = run.produced.saturating_add(1);
                    if end.is_some_and(|end| run.produced >= end) {
                        run.done = true;
                        return Ok(ControlFlow::Break(()));
                    }
                    Ok(ControlFlow::Continue(()))
                })?;
                if flow.is_continue() && !was_full {
                    run.consumed = Some(key.to_vec());
                }
                flow
            }
            RunState::Ordered(run) => {
                let flow = exec::document_rows(&evaluator, from, document, &mut |scope| {
                    let row = row_index;
                    row_index += 1;
                    if !exec::passes_filter(&evaluator, query, scope)? {
                        return Ok(ControlFlow::Continue(()));
                    }
                    *rows_matched += 1;
                    let position = OrderedPosition {
                        sort: exec::sort_values(&evaluator, query, scope)?,
                        key: key.to_vec(),
                        row,
                    };
                    if run.last.as_ref().is_some_and(|last| {
                        compare_positions(&run.descending, &position, last) != Ordering::Greater
                    }) {
                        return Ok(ControlFlow::Continue(()));
                    }
                    let full = run.heap.len() as u64 >= run.needed;
                    if full
                        && run.heap.peek().is_some_and(|largest| {
                            compare_positions(&run.descending, &position, &largest.position)
                                == Ordering::Greater
                        })
                    {
                        return Ok(ControlFlow::Continue(()));
                    }
                    let Some(output) = exec::project(&evaluator, query, plan, scope)? else {
                        return Ok(ControlFlow::Continue(()));
                    };
                    run.heap.push(OrderedEntry {
                        position,
                        output,
                        descending: Arc::clone(&run.descending),
                    });
                    if run.heap.len() as u64 > run.needed {
                        run.heap.pop();
                    }
                    if run.heap.len() > ACCUMULATED_ROWS_MAX {
                        return Err(QueryError::LimitExceeded(format!(
                            "an ORDER BY page needs more than {ACCUMULATED_ROWS_MAX} rows in memory; use a smaller page size or OFFSET"
                        )));
                    }
                    Ok(ControlFlow::Continue(()))
                })?;
                flow
            }
            RunState::Materialized(run) => {
                exec::document_rows(&evaluator, from, document, &mut |scope| {
                    if exec::passes_filter(&evaluator, query, scope)? {
                        *rows_matched += 1;
                        run.accumulator.push(&evaluator, query, plan, scope)?;
                    }
                    Ok(ControlFlow::Continue(()))
                })?
            }
        };
        if flow.is_break() {
            self.stopped = true;
        }
        Ok(flow)
    }

    /// Ends the page, after the engine got `Break` or ran out of documents (`exhausted`).
    pub fn finish(self, exhausted: bool) -> Result<Page, QueryError> {
        let prepared = &self.prepared;
        let fingerprint = prepared.fingerprint;
        let page_items_max = self.page_items_max;
        let (items, next) = match self.state {
            RunState::Stream(run) => {
                let next = if run.next.is_some() {
                    run.next
                } else if run.done || exhausted || self.stopped {
                    None
                } else {
                    // The engine stopped on its own before the page filled: resume after the
                    // last document it delivered.
                    Some(Position::Stream {
                        after: run.consumed.clone(),
                        at: None,
                        skip: 0,
                        produced: run.produced,
                    })
                };
                (run.items, next)
            }
            RunState::Ordered(run) => {
                if !exhausted && !self.stopped {
                    return Err(QueryError::Usage("an ORDER BY page needs the whole scan: call finish(true) after the last document".into()));
                }
                let entries = run.heap.into_sorted_vec();
                let skip = usize::try_from(run.offset_remaining)
                    .unwrap_or(usize::MAX)
                    .min(entries.len());
                let available = entries.len() - skip;
                let more = available > page_items_max;
                let mut items = Vec::new();
                let mut last = None;
                for entry in entries.into_iter().skip(skip).take(page_items_max) {
                    items.push(entry.output);
                    last = Some(entry.position);
                }
                let produced = run
                    .produced
                    .saturating_add(run.offset_remaining)
                    .saturating_add(items.len() as u64);
                let next = if more {
                    Some(Position::Ordered { last, produced })
                } else {
                    None
                };
                (items, next)
            }
            RunState::Materialized(mut run) => {
                if !exhausted && !self.stopped {
                    return Err(QueryError::Usage("this query needs the whole scan: call finish(true) after the last document".into()));
                }
                if prepared.mode == Mode::NoSource {
                    // Without FROM the query has exactly one row, with nothing bound.
                    let evaluator = Evaluator::new(&prepared.context);
                    if exec::passes_filter(&evaluator, &prepared.query, None)? {
                        run.accumulator
                            .push(&evaluator, &prepared.query, &prepared.plan, None)?;
                    }
                }
                let results =
                    run.accumulator
                        .finish(&prepared.context, &prepared.query, &prepared.plan)?;
                let start = usize::try_from(run.index)
                    .unwrap_or(usize::MAX)
                    .min(results.len());
                let end = start.saturating_add(page_items_max).min(results.len());
                let next =
                    (end < results.len()).then_some(Position::Materialized { index: end as u64 });
                (results.into_iter().take(end).skip(start).collect(), next)
            }
        };
        Ok(Page {
            items,
            continuation: next.map(|position| token::encode(fingerprint, &position)),
            documents_scanned: self.documents_scanned,
            rows_matched: self.rows_matched,
        })
    }
}

impl StreamRun {
    fn new(after: Option<Vec<u8>>, at: Option<Vec<u8>>, skip: u64, produced: u64) -> Self {
        StreamRun {
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
}
