//! The **Ordered** strategy of a page (ORDER BY without GROUP BY, DISTINCT or aggregates):
//! every page re-scans from the start and keeps a bounded heap of the smallest rows after the
//! last emitted position, `page_items_max + 1` of them (plus what OFFSET skips).
//!
//! A row's position is its sort values (shaped by the container's `OrderingRules`), then its
//! document's tie-breaker in the first key's direction, then its row index within the document
//! (JOIN fan-out). The position of the last emitted row is the continuation; nothing else is
//! kept between pages.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::ops::ControlFlow;
use std::sync::Arc;

use serde_json::Value;

use super::pushed::Pushed;
use crate::error::QueryError;
use crate::exec::{self, Flow, ACCUMULATED_ROWS_MAX};
use crate::ordering::{compare_ties, OrderingRules};
use crate::prepared::PreparedInner;
use crate::token::{OrderedPosition, Position};

/// One row kept by an ORDER BY page, ordered by its position in the sorted stream.
struct OrderedEntry {
    position: OrderedPosition,
    output: Value,
    descending: Arc<[bool]>,
}

/// The order of two rows: their sort values with each key's direction, then their documents'
/// tie-breakers in the first key's direction, then their rows within one document.
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
    let first_descending = descending.first().copied().unwrap_or(false);
    compare_ties(first_descending, &left.tie, &right.tie).then(left.row.cmp(&right.row))
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

pub(super) struct OrderedRun {
    last: Option<OrderedPosition>,
    produced: u64,
    /// Rows still to skip for OFFSET before the first emitted one.
    offset_remaining: u64,
    /// How many of the smallest rows this page must keep.
    pub(super) needed: u64,
    heap: BinaryHeap<OrderedEntry>,
    descending: Arc<[bool]>,
    rules: OrderingRules,
}

impl OrderedRun {
    /// A page that keeps the rows after `last`, the token's position, of which `produced`
    /// were already emitted.
    pub(super) fn resume(
        prepared: &PreparedInner,
        last: Option<OrderedPosition>,
        produced: u64,
        page_items_max: usize,
        rules: OrderingRules,
    ) -> Result<Self, QueryError> {
        if let Some(last) = &last {
            if last.sort.len() != prepared.query.order_by.len() {
                return Err(QueryError::InvalidContinuation(
                    "the token has the wrong number of sort values".into(),
                ));
            }
        }
        let plan = &prepared.plan;
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
        Ok(OrderedRun {
            last,
            produced,
            offset_remaining,
            needed,
            heap: BinaryHeap::new(),
            descending,
            rules,
        })
    }

    /// Whether the page keeps every row it needs (see `PageRun::ordered_full`).
    pub(super) fn is_full(&self) -> bool {
        self.heap.len() as u64 >= self.needed
    }

    /// The tie-breaker of the last row emitted before this page, when resumed.
    pub(super) fn last_tie(&self) -> Option<&[u8]> {
        self.last.as_ref().map(|last| last.tie.as_slice())
    }

    /// The sort values of the last row emitted before this page, when resumed.
    pub(super) fn last_sort_values(&self) -> Option<&[Option<Value>]> {
        self.last.as_ref().map(|last| last.sort.as_slice())
    }

    /// Offers every matching row of one document to the heap; a scan in key order never stops
    /// early, since a later document may sort first. A row the index would leave out (see
    /// `OrderingRules`) is not a match.
    pub(super) fn push(&mut self, pushed: &Pushed<'_>, rows_matched: &mut u64) -> Flow {
        let query = &pushed.prepared.query;
        pushed.rows(|row, scope| {
            if !pushed.passes_filter(scope)? {
                return Ok(ControlFlow::Continue(()));
            }
            let sort = exec::sort_values(&pushed.evaluator, query, scope)?;
            let Some(sort) = self.rules.shape(sort) else {
                return Ok(ControlFlow::Continue(()));
            };
            *rows_matched += 1;
            let position = OrderedPosition {
                sort,
                tie: pushed.tie.to_vec(),
                row,
            };
            // The position is checked before the projection, which costs more.
            if !self.may_keep(&position) {
                return Ok(ControlFlow::Continue(()));
            }
            if let Some(output) = pushed.project(scope)? {
                self.keep(position, output)?;
            }
            Ok(ControlFlow::Continue(()))
        })
    }

    /// Whether a row at `position` could be on this page: after the last emitted row, and not
    /// larger than every row kept when the heap is full.
    fn may_keep(&self, position: &OrderedPosition) -> bool {
        let after_last = self.last.as_ref().is_none_or(|last| {
            compare_positions(&self.descending, position, last) == Ordering::Greater
        });
        let has_room = (self.heap.len() as u64) < self.needed
            || self.heap.peek().is_none_or(|largest| {
                compare_positions(&self.descending, position, &largest.position)
                    != Ordering::Greater
            });
        after_last && has_room
    }

    /// Keeps a row, dropping the largest when more than `needed` are kept.
    fn keep(&mut self, position: OrderedPosition, output: Value) -> Result<(), QueryError> {
        self.heap.push(OrderedEntry {
            position,
            output,
            descending: Arc::clone(&self.descending),
        });
        if self.heap.len() as u64 > self.needed {
            self.heap.pop();
        }
        if self.heap.len() > ACCUMULATED_ROWS_MAX {
            return Err(QueryError::LimitExceeded(format!(
                "an ORDER BY page needs more than {ACCUMULATED_ROWS_MAX} rows in memory; use a smaller page size or OFFSET"
            )));
        }
        Ok(())
    }

    /// The smallest kept rows after OFFSET, and the position after the last of them when more
    /// rows remain.
    pub(super) fn finish(
        self,
        scan_ended: bool,
        page_items_max: usize,
    ) -> Result<(Vec<Value>, Option<Position>), QueryError> {
        if !scan_ended {
            return Err(QueryError::Usage(
                "an ORDER BY page needs the whole scan: call finish(true) after the last document"
                    .into(),
            ));
        }
        let entries = self.heap.into_sorted_vec();
        let skip = usize::try_from(self.offset_remaining)
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
        let produced = self
            .produced
            .saturating_add(self.offset_remaining)
            .saturating_add(items.len() as u64);
        Ok((items, more.then_some(Position::Ordered { last, produced })))
    }
}
