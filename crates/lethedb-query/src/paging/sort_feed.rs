//! Feeding an ORDER BY page in sort order: an engine that walks an index in the order the
//! query sorts by may push documents in any key order, learn when the page can no longer
//! change (`ordered_full`), and where a resumed page's walk starts (`resume_sort_values`).
//! The page itself is computed as for any other feed; only when to stop changes.

use super::{PageRun, RunState};
use crate::error::QueryError;
use serde_json::Value;

impl PageRun {
    /// Lets the engine push the documents of an ORDER BY page in any key order (it walks an
    /// index in the sort order): an ORDER BY page compares whole positions, so the key order
    /// only matters to streamed pages. Refused for any other page.
    pub fn feed_in_sort_order(&mut self) -> Result<(), QueryError> {
        if !matches!(self.state, RunState::Ordered(_)) {
            return Err(QueryError::Usage(
                "only an ORDER BY page may be fed in sort order".into(),
            ));
        }
        self.sort_order_feed = true;
        Ok(())
    }

    /// For an ORDER BY page: whether it already keeps every row it needs, so that no document
    /// sorting strictly after every one pushed so far can change it. An engine feeding the
    /// documents in sort order stops once this holds at a change of sort value.
    pub fn ordered_full(&self) -> bool {
        match &self.state {
            RunState::Ordered(run) => run.is_full(),
            _ => false,
        }
    }

    /// For an ORDER BY page resumed from a token: the sort values of the last row emitted, so
    /// an engine walking an index in sort order can start there.
    pub fn resume_sort_values(&self) -> Option<&[Option<Value>]> {
        match &self.state {
            RunState::Ordered(run) => run.last_sort_values(),
            _ => None,
        }
    }

    /// For an ORDER BY page resumed from a token: what the last row emitted broke its tie by
    /// (the document number it was pushed with, eight bytes big-endian, for documents pushed
    /// with `push_numbered`), so an index walk can start at that very entry.
    pub fn resume_tie(&self) -> Option<&[u8]> {
        match &self.state {
            RunState::Ordered(run) => run.last_tie(),
            _ => None,
        }
    }
}
