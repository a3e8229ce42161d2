//! A streamed page (no ORDER BY, GROUP BY, DISTINCT or aggregate): results in the order the
//! engine pushes documents (ascending key order), the token holding the last fully consumed
//! key and how many rows of the next document were already handled.

use super::pushed::Pushed;
use crate::exec::Flow;
use crate::token::Position;
use serde_json::Value;
use std::ops::ControlFlow;

pub(super) struct StreamRun {
    pub(super) after: Option<Vec<u8>>,
    pub(super) at: Option<Vec<u8>>,
    pub(super) skip: u64,
    pub(super) produced: u64,
    /// The last document whose rows were all handled before the page filled.
    pub(super) consumed: Option<Vec<u8>>,
    pub(super) items: Vec<Value>,
    pub(super) next: Option<Position>,
    pub(super) done: bool,
}

impl StreamRun {
    pub(super) fn new(
        after: Option<Vec<u8>>,
        at: Option<Vec<u8>>,
        skip: u64,
        produced: u64,
    ) -> Self {
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

    /// Emits one document's rows in scan order; on the first result past a full page, notes
    /// where the next page starts and stops.
    pub(super) fn push(
        &mut self,
        pushed: &Pushed<'_>,
        page_items_max: u64,
        rows_matched: &mut u64,
    ) -> Flow {
        let was_full = self.items.len() as u64 >= page_items_max;
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
        if flow.is_continue() && !was_full {
            self.consumed = Some(pushed.key.to_vec());
        }
        Ok(flow)
    }

    /// The page's items and where the next page starts.
    pub(super) fn finish(self, scan_ended: bool) -> (Vec<Value>, Option<Position>) {
        let next = if self.next.is_some() {
            self.next
        } else if self.done || scan_ended {
            None
        } else {
            // The engine stopped on its own before the page filled: resume after the
            // last document it delivered.
            Some(Position::Stream {
                after: self.consumed,
                at: None,
                skip: 0,
                produced: self.produced,
            })
        };
        (self.items, next)
    }
}
