//! What evaluating an expression needs besides the expression: the row's bound aliases
//! ([`Scope`]), the query's parameters and clock ([`Context`]), and two hooks the evaluator calls
//! out through: the [`SubqueryRunner`] that `exec.rs` installs (so the evaluator runs
//! subqueries without importing the executor) and a [`UdfHost`] for user-defined functions,
//! which the engine fills once it stores them.
//!
//! This module holds types only; it evaluates nothing.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::ast::Query;
use crate::error::QueryError;

/// A value that may be `undefined` (`None`), borrowed from the row when possible.
pub type Val<'a> = Option<Cow<'a, Value>>;

/// One bound input alias, linked to the aliases bound before it (outer rows, earlier JOINs).
pub struct Scope<'a> {
    pub name: &'a str,
    pub value: &'a Value,
    pub parent: Option<&'a Scope<'a>>,
}

impl<'a> Scope<'a> {
    pub fn lookup(&self, name: &str) -> Option<&'a Value> {
        let mut current = Some(self);
        while let Some(scope) = current {
            if scope.name == name {
                return Some(scope.value);
            }
            current = scope.parent;
        }
        None
    }
}

/// What every evaluation needs besides the row: bound parameters, the injected clock, and the
/// hooks for subqueries and user-defined functions.
pub struct Context {
    pub parameters: HashMap<String, Value>,
    pub now_ms: i64,
    /// Runs `EXISTS`, `ARRAY` and scalar subqueries (the executor's, installed at prepare).
    pub subqueries: &'static dyn SubqueryRunner,
    /// User-defined functions, when the caller has any; without a host, `udf.name(...)` is
    /// refused at prepare time.
    pub udfs: Option<Arc<dyn UdfHost>>,
}

/// Runs a subquery over the values of the current row, stopping after `wanted` results when
/// the caller needs only the first (EXISTS, scalar subquery).
pub trait SubqueryRunner: Sync {
    fn run(
        &self,
        context: &Context,
        query: &Query,
        outer: Option<&Scope<'_>>,
        wanted: Option<usize>,
    ) -> Result<Vec<Value>, QueryError>;
}

/// The user-defined functions a query may call as `udf.name(...)`. The planner asks
/// [`UdfHost::defines`] at prepare time; the evaluator calls [`UdfHost::call`] per row with the
/// evaluated arguments (`None` is `undefined`) and takes `None` back as `undefined`.
pub trait UdfHost: Send + Sync {
    fn defines(&self, name: &str) -> bool;
    fn call(&self, name: &str, args: &[Option<Value>]) -> Result<Option<Value>, QueryError>;
}
