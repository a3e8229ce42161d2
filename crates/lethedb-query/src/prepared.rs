//! Preparing a query: parse, bind parameters, check, analyse, and choose how it is paged
//! (`Mode`). `Prepared` is what the engine holds between pages; it also answers the engine's
//! questions about the query before any document is read (does it scan, does it pin the
//! partition key).
//!
//! Paging itself is in `paging.rs`, which also adds `Prepared::start_page`; this module runs
//! no rows.

use crate::full_text::FullTextPolicy;
use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::ast::{for_each_child, for_each_query_expr};
use crate::ast::{BinaryOp, Expr, Query, SortKey, Source, UnaryOp};
use crate::context::{Context, LikePatterns, UdfHost};
use crate::error::QueryError;
use crate::functions;
use crate::parser;
use crate::plan::{self, QueryPlan};
use crate::ranking::{self, Ranking};
use crate::subquery::Subqueries;
use crate::token;
use crate::value;
use crate::vectors;

/// The most parameters one query may bind.
pub const PARAMETERS_MAX: usize = 1_000;

/// How a query is paged; see `paging.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Stream,
    Ordered,
    Materialized,
    NoSource,
    /// ORDER BY RANK: every row is kept and ranked once the scan has read every document of
    /// the scope, whose full-text statistics the scores need (`paging/ranked.rs`).
    Ranked,
}

pub struct PreparedInner {
    pub(crate) query: Query,
    pub(crate) plan: QueryPlan,
    pub(crate) context: Context,
    /// The text and bound values (`Prepared::fingerprint`).
    pub(crate) fingerprint: u64,
    /// What continuation tokens are bound to (`fingerprints`).
    pub(crate) token_fingerprint: u64,
    pub(crate) mode: Mode,
    /// The query as the client wrote it, when a container's computed properties rewrote it
    /// (see `computed.rs`): the client plan describes the written text, whose rewritten
    /// queries each range substitutes again.
    pub(crate) written: Option<Query>,
    /// The scoring expression of an ORDER BY RANK query (`ranking.rs`).
    pub(crate) ranking: Option<Arc<Ranking>>,
}

/// A parsed and checked query with its parameters bound. Cheap to clone; a `PageRun` keeps
/// its own reference, so it can outlive the `Prepared` it came from.
#[derive(Clone)]
pub struct Prepared {
    pub(crate) inner: Arc<PreparedInner>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("query", &self.inner.query.to_string())
            .finish()
    }
}

/// Parses `text`, binds `parameters` (names with or without the leading `@`) and checks
/// everything that can be checked without documents. `now_ms` (Unix milliseconds) is what
/// GetCurrentDateTime and friends return, for every page of this query.
pub fn prepare(
    text: &str,
    parameters: &[(String, Value)],
    now_ms: i64,
) -> Result<Prepared, QueryError> {
    prepare_with_udfs(text, parameters, now_ms, None)
}

/// [`prepare`] for a caller that has user-defined functions: `udf.name(...)` calls are checked
/// against `udfs` now and run through it per row.
pub fn prepare_with_udfs(
    text: &str,
    parameters: &[(String, Value)],
    now_ms: i64,
    udfs: Option<Arc<dyn UdfHost>>,
) -> Result<Prepared, QueryError> {
    prepare_parsed(parser::parse(text)?, text, parameters, now_ms, udfs).map(Prepared::new)
}

/// Prepares a query already parsed from `text` (and possibly rewritten, see `computed.rs`).
pub(crate) fn prepare_parsed(
    mut query: Query,
    text: &str,
    parameters: &[(String, Value)],
    now_ms: i64,
    udfs: Option<Arc<dyn UdfHost>>,
) -> Result<PreparedInner, QueryError> {
    if parameters.len() > PARAMETERS_MAX {
        return Err(QueryError::LimitExceeded(format!(
            "at most {PARAMETERS_MAX} parameters are allowed"
        )));
    }
    let mut bound = HashMap::new();
    for (name, value) in parameters {
        let bare = name.strip_prefix('@').unwrap_or(name);
        if bound.insert(bare.to_string(), value.clone()).is_some() {
            return Err(QueryError::semantic(format!(
                "Parameter '@{bare}' is specified more than once."
            )));
        }
    }
    vectors::orient(&mut query);
    plan::validate(&query, &bound, udfs.as_deref(), &[], true)?;
    let plan = plan::analyze(&query, &bound)?;
    let ranking = ranking::ranking(&query, &bound)?.map(Arc::new);
    if ranking.is_some() && (plan.grouped || query.select.distinct) {
        return Err(QueryError::semantic(
            "ORDER BY RANK cannot be combined with GROUP BY, DISTINCT or aggregates.",
        ));
    }
    let subqueries = Subqueries::prepare(&query, &bound);
    let regexes = functions::literal_regexes(&query, &bound);
    let like_patterns = literal_like_patterns(&query, &bound);
    let mode = if query.from.is_none() {
        Mode::NoSource
    } else if ranking.is_some() {
        Mode::Ranked
    } else if plan.grouped || query.select.distinct {
        Mode::Materialized
    } else if !query.order_by.is_empty() {
        Mode::Ordered
    } else {
        Mode::Stream
    };
    let (fingerprint, token_fingerprint) = fingerprints(&query, text, mode, &bound);
    Ok(PreparedInner {
        query,
        plan,
        context: Context {
            parameters: bound,
            now_ms,
            subqueries: Arc::new(subqueries),
            regexes,
            like_patterns,
            udfs,
            full_text: Arc::default(),
        },
        fingerprint,
        token_fingerprint,
        mode,
        written: None,
        ranking,
    })
}

impl Prepared {
    /// The same query reading full-text paths in the languages of a container's full-text
    /// policy (`full_text.rs`; English without one). Called on a query just prepared, which
    /// nothing else holds yet.
    pub fn with_full_text(mut self, policy: Arc<FullTextPolicy>) -> Prepared {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.context.full_text = policy,
            None => unreachable!("a prepared query is shared only after it is returned"),
        }
        self
    }

    pub(crate) fn new(inner: PreparedInner) -> Prepared {
        Prepared {
            inner: Arc::new(inner),
        }
    }

    /// The parsed query.
    pub fn query(&self) -> &Query {
        &self.inner.query
    }

    /// A hash of the query's text and bound parameter values: equal for two preparations of the
    /// same query. Continuation tokens are checked against a hash of their own (`fingerprints`).
    pub fn fingerprint(&self) -> u64 {
        self.inner.fingerprint
    }

    /// True when a page only sorts rows (ORDER BY without GROUP BY, DISTINCT or aggregates):
    /// such a page may be fed in sort order and decided early (`PageRun::ordered_full`).
    pub fn sorts_rows(&self) -> bool {
        self.inner.mode == Mode::Ordered
    }

    /// True when a page streams its rows in the order documents are pushed (no ORDER BY,
    /// GROUP BY, DISTINCT or aggregate): such a page may be pushed in another key space
    /// (`PageRun::use_key_space`).
    pub fn streams_rows(&self) -> bool {
        self.inner.mode == Mode::Stream
    }

    /// True for an aggregate without GROUP BY (`SELECT VALUE AVG(c.a) FROM c ORDER BY ...`): its
    /// answer is one row, so an ORDER BY orders nothing and needs no index to serve it.
    pub fn is_whole_aggregate(&self) -> bool {
        self.inner.plan.grouped && self.inner.query.group_by.is_empty()
    }

    /// True for a query with a WHERE clause.
    pub fn has_filter(&self) -> bool {
        self.inner.query.filter.is_some()
    }

    /// False for a query without FROM, which reads no documents (the engine may skip the scan
    /// and call `finish(true)` right away).
    pub fn scans_documents(&self) -> bool {
        self.inner.mode != Mode::NoSource
    }

    /// The document paths the WHERE clause reads (outermost first seen, each once), as lists of
    /// property names: what an index on the filter would serve. Empty when the query has no
    /// filter or its source is not the whole document.
    pub fn filter_paths(&self) -> Vec<Vec<String>> {
        let query = &self.inner.query;
        let (Some(alias), Some(filter)) = (root_alias(query), query.filter.as_ref()) else {
            return Vec::new();
        };
        let mut paths = Vec::new();
        collect_document_paths(filter, alias, &mut paths);
        paths
    }

    /// The document paths of the ORDER BY keys, in order, each with whether it sorts
    /// descending (`None` for a key that is not a document path).
    pub fn order_paths(&self) -> Vec<Option<(Vec<String>, bool)>> {
        let query = &self.inner.query;
        let Some(alias) = root_alias(query) else {
            return Vec::new();
        };
        query
            .order_by
            .iter()
            .map(|key| document_path(&key.expr, alias).map(|path| (path, key.descending)))
            .collect()
    }

    /// When the WHERE clause pins every partition key path to a constant with top-level
    /// AND-ed equalities, returns those values in path order. Paths are lists of property
    /// names, e.g. `[["tenant"], ["user", "id"]]`.
    pub fn partition_key_equality(
        &self,
        partition_key_paths: &[Vec<String>],
    ) -> Option<Vec<Value>> {
        pinned_values(
            &self.inner.query,
            &self.inner.context.parameters,
            partition_key_paths,
        )
    }
}

/// [`Prepared::partition_key_equality`] of `query` with `parameters` bound.
pub(crate) fn pinned_values(
    query: &Query,
    parameters: &HashMap<String, Value>,
    partition_key_paths: &[Vec<String>],
) -> Option<Vec<Value>> {
    let from = query.from.as_ref()?;
    // Only a root source that binds the whole document makes `alias.path` a document path.
    let alias = match &from.source {
        Source::Bind {
            collection: Expr::Identifier(container),
            alias,
        } => alias.as_deref().unwrap_or(container),
        _ => return None,
    };
    let mut conjuncts = Vec::new();
    let mut pending = vec![query.filter.as_ref()?];
    while let Some(expr) = pending.pop() {
        match expr {
            Expr::Binary(BinaryOp::And, left, right) => {
                pending.push(left);
                pending.push(right);
            }
            other => conjuncts.push(other),
        }
    }
    let constant = |expr: &Expr| match expr {
        Expr::Literal(value) => Some(value.clone()),
        Expr::Parameter(name) => parameters.get(name).cloned(),
        _ => None,
    };
    let mut values = Vec::with_capacity(partition_key_paths.len());
    for path in partition_key_paths {
        let pinned = conjuncts.iter().find_map(|conjunct| match conjunct {
            Expr::Binary(BinaryOp::Equal, left, right) => {
                if document_path(left, alias).as_deref() == Some(path.as_slice()) {
                    constant(right)
                } else if document_path(right, alias).as_deref() == Some(path.as_slice()) {
                    constant(left)
                } else {
                    None
                }
            }
            _ => None,
        })?;
        values.push(pinned);
    }
    Some(values)
}

/// Two hashes of the query: of its text and bound parameter values, equal for two preparations
/// of the same query; and of what a continuation token is bound to, which is the same except,
/// for an ORDER BY page, the conditions an SDK adds to the filter when it resumes.
///
/// Resuming an ORDER BY query across ranges, the SDKs (the JavaScript SDK from 4.x, the .NET
/// SDK) fill the `{documentdb-formattableorderbyquery-filter}` placeholder of the client plan's
/// range query with a comparison of the ORDER BY items against the last values they returned
/// (`c.sequence >= 4`) instead of `true`, and send the range's token with that text. An ORDER BY
/// token holds the last row's position in the sort, not a count of the rows before it, and every
/// row after that position passes such a condition, so the position means the same under either
/// text. Everything else stays bound: the source and joins, the projection, DISTINCT, TOP,
/// OFFSET/LIMIT (the token's count of rows produced is relative to them; the SDKs apply what is
/// left of them on the client and never rewrite them in the range query), the ORDER BY items and
/// directions, and any other condition. Other pages (streamed, materialized) bind the exact
/// text: their positions (a key, a row count, an index into the result) depend on the filter.
fn fingerprints(
    query: &Query,
    text: &str,
    mode: Mode,
    bound: &HashMap<String, Value>,
) -> (u64, u64) {
    let mut sorted_parameters: Vec<(&String, &Value)> = bound.iter().collect();
    sorted_parameters.sort_by(|a, b| a.0.cmp(b.0));
    let parameters_text = sorted_parameters
        .iter()
        .map(|(name, value)| format!("{name}={}", value::canonical_key(Some(value))))
        .collect::<Vec<_>>()
        .join("\u{0}");
    let exact = token::fingerprint(&[text.as_bytes(), parameters_text.as_bytes()]);
    if mode != Mode::Ordered {
        return (exact, exact);
    }
    let mut shape = query.clone();
    shape.filter = query
        .filter
        .as_ref()
        .and_then(|filter| without_resume_conditions(filter, &query.order_by));
    // The mode's name sets this text apart from every text hashed as written.
    let shape_text = format!("ordered\u{0}{shape}");
    let bound = token::fingerprint(&[shape_text.as_bytes(), parameters_text.as_bytes()]);
    (exact, bound)
}

/// `filter` without its top-level AND terms that are resume conditions, or `None` when none is
/// left.
fn without_resume_conditions(filter: &Expr, keys: &[SortKey]) -> Option<Expr> {
    let mut kept = Vec::new();
    collect_kept_terms(filter, keys, &mut kept);
    kept.into_iter()
        .reduce(|left, right| Expr::Binary(BinaryOp::And, Box::new(left), Box::new(right)))
}

fn collect_kept_terms(expr: &Expr, keys: &[SortKey], kept: &mut Vec<Expr>) {
    match expr {
        Expr::Binary(BinaryOp::And, left, right) => {
            collect_kept_terms(left, keys, kept);
            collect_kept_terms(right, keys, kept);
        }
        _ if is_resume_condition(expr, keys) => {}
        _ => kept.push(expr.clone()),
    }
}

/// `true`, or comparisons of ORDER BY items with constants joined by AND, OR and NOT: the
/// shapes of the filters the SDKs resume with. A comparison with a parameter is not one (no
/// SDK writes one), so it stays bound with the parameter's value.
fn is_resume_condition(expr: &Expr, keys: &[SortKey]) -> bool {
    let is_key = |expr: &Expr| keys.iter().any(|key| key.expr == *expr);
    match expr {
        Expr::Literal(Value::Bool(true)) => true,
        Expr::Unary(UnaryOp::Not, inner) => is_resume_condition(inner, keys),
        Expr::Binary(BinaryOp::And | BinaryOp::Or, left, right) => {
            is_resume_condition(left, keys) && is_resume_condition(right, keys)
        }
        Expr::Binary(
            BinaryOp::Equal
            | BinaryOp::NotEqual
            | BinaryOp::Less
            | BinaryOp::LessOrEqual
            | BinaryOp::Greater
            | BinaryOp::GreaterOrEqual,
            left,
            right,
        ) => (is_key(left) && is_constant(right)) || (is_constant(left) && is_key(right)),
        _ => false,
    }
}

/// A value written out in the text: a literal, a signed number, or an array or object of them.
fn is_constant(expr: &Expr) -> bool {
    match expr {
        Expr::Literal(_) | Expr::Undefined => true,
        Expr::Unary(UnaryOp::Negate | UnaryOp::Plus, inner) => is_constant(inner),
        Expr::Array(items) => items.iter().all(is_constant),
        Expr::Object(members) => members.iter().all(|(_, value)| is_constant(value)),
        _ => false,
    }
}

/// The alias of a root source that binds the whole document (`FROM c`), if that is the source.
pub(crate) fn root_alias(query: &Query) -> Option<&str> {
    match &query.from.as_ref()?.source {
        Source::Bind {
            collection: Expr::Identifier(container),
            alias,
        } => Some(alias.as_deref().unwrap_or(container)),
        _ => None,
    }
}

/// Every maximal document path under `expr` (`c.a.b` counts as `a/b`, not also `a`), once each.
fn collect_document_paths(expr: &Expr, alias: &str, paths: &mut Vec<Vec<String>>) {
    match document_path(expr, alias) {
        Some(path) if !path.is_empty() => {
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        _ => for_each_child(expr, &mut |child| {
            collect_document_paths(child, alias, paths);
        }),
    }
}

/// `alias.a.b` or `alias["a"]["b"]` as the property names `["a", "b"]`.
pub(crate) fn document_path(expr: &Expr, alias: &str) -> Option<Vec<String>> {
    let mut names = Vec::new();
    let mut current = expr;
    loop {
        match current {
            Expr::Identifier(name) if name == alias => break,
            Expr::Property(base, name) => {
                names.push(name.clone());
                current = base;
            }
            Expr::Index(base, index) => match &**index {
                Expr::Literal(Value::String(name)) => {
                    names.push(name.clone());
                    current = base;
                }
                _ => return None,
            },
            _ => return None,
        }
    }
    names.reverse();
    Some(names)
}

/// Compiles once every LIKE pattern of `query` (subqueries included) known before any row: a
/// literal or a bound parameter, with no escape or a one-character literal or parameter escape.
/// Anything else (including an escape that is not one character, which fails when the row is
/// matched) is left to the evaluator.
fn literal_like_patterns(query: &Query, parameters: &HashMap<String, Value>) -> LikePatterns {
    let constant = |expr: &Expr| expr.known_string(parameters);
    let mut patterns = LikePatterns::default();
    let mut pending = Vec::new();
    for_each_query_expr(query, &mut |expr| pending.push(expr));
    while let Some(expr) = pending.pop() {
        if let Expr::Like {
            pattern, escape, ..
        } = expr
        {
            let escape = match escape {
                None => Some(None),
                Some(escape) => constant(escape).and_then(|text| {
                    let mut characters = text.chars();
                    match (characters.next(), characters.next()) {
                        (Some(character), None) => Some(Some(character)),
                        _ => None,
                    }
                }),
            };
            if let (Some(pattern), Some(escape)) = (constant(pattern), escape) {
                patterns.insert(&pattern, escape);
            }
        }
        for_each_child(expr, &mut |child| pending.push(child));
    }
    patterns
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_like_patterns_are_compiled_once_at_prepare() -> Result<(), QueryError> {
        let query = parser::parse(
            "SELECT VALUE [c.a LIKE 'a%', c.b LIKE @p ESCAPE '!', c.c LIKE 'x' ESCAPE 'too long', \
             c.d LIKE c.e, EXISTS(SELECT VALUE 1 WHERE c.f NOT LIKE '_b')] FROM c",
        )?;
        let parameters = HashMap::from([("p".to_string(), json!("50!%"))]);
        let patterns = literal_like_patterns(&query, &parameters);
        assert!(patterns.get("a%", None).is_some_and(|p| p.matches("abc")));
        assert!(patterns
            .get("50!%", Some('!'))
            .is_some_and(|p| p.matches("50%")));
        assert!(patterns.get("50!%", None).is_none());
        assert!(patterns.get("_b", None).is_some_and(|p| p.matches("ab")));
        // An escape that is not one character fails when matched, so it is not compiled.
        assert!(patterns.get("x", None).is_none());
        Ok(())
    }
}
