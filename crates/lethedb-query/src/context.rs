//! What an expression is evaluated in: the bound input aliases of a row (`Scope`), the
//! query's bound parameters, clock and the REGEXMATCH and LIKE patterns compiled once (`Context`), and two hooks the evaluator calls through
//! without knowing who fills them: a `SubqueryRunner` (installed by `exec.rs`) and a
//! `UdfHost` (user-defined functions, which the caller supplies: the engine, once it stores UDFs).
//!
//! This module evaluates nothing itself. It exists so that `eval.rs` reaches subqueries through
//! a trait object instead of importing `exec.rs`, which imports `eval.rs`.

use crate::full_text::FullTextPolicy;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use regex::Regex;
use serde_json::Value;

use crate::ast::Query;
use crate::error::QueryError;
use crate::like::LikePattern;

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

/// Runs a subquery (`EXISTS`, `ARRAY(...)`, a scalar subquery, or a subquery in FROM) over the
/// values already bound in `outer`, returning at most `wanted` results.
pub trait SubqueryRunner: Send + Sync {
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
/// evaluated arguments (`None` is `undefined`) and takes `None` back as `undefined`. Without a
/// host, `udf.name(...)` is refused at prepare.
pub trait UdfHost: Send + Sync {
    fn defines(&self, name: &str) -> bool;
    fn call(&self, name: &str, args: &[Option<Value>]) -> Result<Option<Value>, QueryError>;
}

/// REGEXMATCH patterns compiled once at prepare time (literal or parameter patterns),
/// by pattern and then modifiers. A pattern not here is compiled when the call runs.
#[derive(Default)]
pub struct Regexes {
    compiled: HashMap<String, Vec<(String, Regex)>>,
}

impl Regexes {
    pub fn insert(&mut self, pattern: &str, modifiers: &str, regex: Regex) {
        let entries = self.compiled.entry(pattern.to_string()).or_default();
        if !entries.iter().any(|(known, _)| known == modifiers) {
            entries.push((modifiers.to_string(), regex));
        }
    }

    pub fn get(&self, pattern: &str, modifiers: &str) -> Option<&Regex> {
        self.compiled
            .get(pattern)?
            .iter()
            .find(|(known, _)| known == modifiers)
            .map(|(_, regex)| regex)
    }
}

/// LIKE patterns compiled once at prepare time (literal or parameter patterns, with their
/// escape character), by pattern. A pattern not here is compiled when the row is matched.
#[derive(Default)]
pub struct LikePatterns {
    compiled: HashMap<String, Vec<(Option<char>, LikePattern)>>,
}

impl LikePatterns {
    pub fn insert(&mut self, pattern: &str, escape: Option<char>) {
        let entries = self.compiled.entry(pattern.to_string()).or_default();
        if !entries.iter().any(|(known, _)| *known == escape) {
            entries.push((escape, LikePattern::new(pattern, escape)));
        }
    }

    pub fn get(&self, pattern: &str, escape: Option<char>) -> Option<&LikePattern> {
        self.compiled
            .get(pattern)?
            .iter()
            .find(|(known, _)| *known == escape)
            .map(|(_, compiled)| compiled)
    }
}

/// What every evaluation needs besides the row: bound parameters, the injected clock, and the
/// hooks for subqueries and user-defined functions.
pub struct Context {
    pub parameters: HashMap<String, Value>,
    pub now_ms: i64,
    pub subqueries: Arc<dyn SubqueryRunner>,
    pub regexes: Regexes,
    pub like_patterns: LikePatterns,
    /// User-defined functions, when the caller has any (see [`UdfHost`]).
    pub udfs: Option<Arc<dyn UdfHost>>,
    /// The language of each full-text path, for the full-text functions.
    pub full_text: Arc<FullTextPolicy>,
}
