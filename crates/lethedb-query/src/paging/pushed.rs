//! One document pushed into a page (`Pushed`): what its rows are evaluated against, and the
//! row, filter and projection steps every paging strategy shares. It keeps no state between
//! documents.

use serde_json::Value;

use crate::ast::From;
use crate::context::Scope;
use crate::error::QueryError;
use crate::eval::Evaluator;
use crate::exec::{self, Flow};
use crate::prepared::PreparedInner;

/// One pushed document with what its rows are evaluated against.
pub(super) struct Pushed<'a> {
    pub(super) evaluator: Evaluator<'a>,
    pub(super) prepared: &'a PreparedInner,
    pub(super) from: &'a From,
    pub(super) key: &'a [u8],
    /// The document's tie-breaker among rows with equal ORDER BY values.
    pub(super) tie: &'a [u8],
    pub(super) document: &'a Value,
}

impl Pushed<'_> {
    /// Calls `visit` for every row of the document with the row's index within the document.
    pub(super) fn rows(&self, mut visit: impl FnMut(u64, Option<&Scope<'_>>) -> Flow) -> Flow {
        let mut row_index: u64 = 0;
        exec::document_rows(&self.evaluator, self.from, self.document, &mut |scope| {
            let row = row_index;
            row_index += 1;
            visit(row, scope)
        })
    }

    pub(super) fn passes_filter(&self, scope: Option<&Scope<'_>>) -> Result<bool, QueryError> {
        exec::passes_filter(&self.evaluator, &self.prepared.query, scope)
    }

    pub(super) fn project(&self, scope: Option<&Scope<'_>>) -> Result<Option<Value>, QueryError> {
        exec::project(
            &self.evaluator,
            &self.prepared.query,
            &self.prepared.plan,
            scope,
        )
    }
}
