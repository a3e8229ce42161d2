//! The conjuncts of a WHERE clause that an index can serve (`Prepared::index_conjuncts`): each
//! is a union of probes, a document path and a range of sort keys (`sort_key.rs`), such that
//! every document for which the conjunct is true has a value at that path whose sort key falls
//! in one of the ranges. A caller that reads those ranges of an index therefore finds every
//! document the WHERE clause can select, and some it does not: it must evaluate the whole
//! clause on each candidate, which is what makes an index plan return what a scan returns.
//!
//! Only top-level AND-ed conjuncts over the root alias are looked at; an OR is served when each
//! of its sides is. The forms: `path = c`, `IN`, `<`, `<=`, `>`, `>=`, `BETWEEN` with constants
//! of one scalar type (comparisons across types are undefined, so a range stays inside its
//! constant's type), `STARTSWITH(path, 'p')` in its case-sensitive form, `IS_DEFINED` and the
//! type checks, `ARRAY_CONTAINS(path, scalar)` (an element equality on `path/[]`), and a bare
//! path (true only when it is `true`). A constant is a literal or a bound parameter, and only a
//! scalar one: arrays and objects are left to the evaluator. When in doubt a conjunct is not
//! served. `ST_WITHIN(path, g)` and `ST_INTERSECTS(path, g)` with a constant geometry `g`, and
//! `ST_DISTANCE(path, p) < r` (or `<=`) with a constant point `p` and number `r`, each either
//! way round, are served by the path's spatial index: their probes are ranges of grid cells
//! (`functions/spatial_grid.rs`, `ProbeKind::Spatial`), never exact. `FullTextContains(path,
//! t)` and `FullTextContainsAll(path, t, ...)` with constant string terms are served by the
//! entries of one stem of one term in the path's full-text index (the longest: the rarest, as
//! a guess), `FullTextContainsAny` by one such stem of each term (`ProbeKind::FullText`), never
//! exact: a document holding the stem may lack the term's other words. Nothing here reads an
//! index or knows a policy: which paths are indexed, and whether reading them is worth it, is
//! the caller's decision.

use std::collections::HashMap;

use serde_json::Value;

use crate::ast::{for_each_child, BinaryOp, Expr, Query, Source};
use crate::builtins::Builtin;
use crate::full_text::{full_text_stem_key, FullTextPolicy};
use crate::functions::spatial_grid::{distance_region, geometry_region};
use crate::functions::text::terms;
use crate::prepared::{document_path, root_alias, Mode, Prepared};
use crate::sort_key::{encode_sort_key, string_prefix_key, type_bounds, SORT_KEY_TEXT_BYTES_MAX};
use crate::value::type_rank;

/// The type rank after the last (see `type_bounds`): its start is above every sort key.
const RANK_END: u8 = 7;

/// Top-level properties the service adds to every document and indexes nowhere (`_ts` is
/// indexed from the version's own time; these are not indexed at all).
const UNINDEXED_SYSTEM_PROPERTIES: [&str; 4] = ["_rid", "_self", "_etag", "_attachments"];

/// One range of one path's index: sort keys in `[start, end)` of its range index, or cell
/// keys (`functions/spatial_grid.rs`) of its spatial index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexProbe {
    /// Property names from the document's root, `[]` for any element of an array.
    pub path: Vec<String>,
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    /// An equality (one value), which the service answers with an index seek; otherwise a
    /// range, an index scan.
    pub seek: bool,
    pub kind: ProbeKind,
}

/// Which index of a path a probe reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeKind {
    /// The range index: one entry per value, keyed by its sort key.
    Range,
    /// The spatial index: one entry per grid cell covering a geometry. A document may have
    /// several entries in one probe, and its entries say nothing of its value's order.
    Spatial,
    /// The full-text index: one entry per distinct stem of a text (`full_text_stem_key`), so
    /// a probe reads the documents whose text holds one stem, in no order of their values.
    FullText,
}

/// A conjunct an index can serve: the documents for which it is true are among those with an
/// entry in one of the probes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexConjunct {
    pub probes: Vec<IndexProbe>,
}

impl Prepared {
    /// The conjuncts of the WHERE clause an index can serve (see the module's documentation);
    /// empty when the query has no filter, its source is not the whole document, or the filter
    /// calls a user-defined function (which may fail on a document an index would skip).
    pub fn index_conjuncts(&self) -> Vec<IndexConjunct> {
        // A ranked page must read every document of its scope: the statistics count them all.
        if self.inner.mode == Mode::Ranked {
            return Vec::new();
        }
        let context = &self.inner.context;
        conjuncts(&self.inner.query, &context.parameters, &context.full_text)
    }
}

/// [`Prepared::index_conjuncts`] of `query` with `parameters` bound, texts stemmed in the
/// languages of `full_text`.
pub(crate) fn conjuncts(
    query: &Query,
    parameters: &HashMap<String, Value>,
    full_text: &FullTextPolicy,
) -> Vec<IndexConjunct> {
    let (Some(alias), Some(filter)) = (root_alias(query), query.filter.as_ref()) else {
        return Vec::new();
    };
    if joins_shadow(query, alias) || calls_udf(filter) {
        return Vec::new();
    }
    let reader = Reader {
        alias,
        parameters,
        full_text,
    };
    let mut out = Vec::new();
    let mut pending = vec![filter];
    while let Some(expr) = pending.pop() {
        if let Expr::Binary(BinaryOp::And, left, right) = expr {
            pending.push(right);
            pending.push(left);
        } else if let Some(probes) = reader.probes(expr) {
            out.push(IndexConjunct { probes });
        }
    }
    out
}

/// The conjuncts of `query`'s filter with `parameters` bound when an index serves each one
/// exactly: every top-level conjunct has probes, and a document has an entry in one of a
/// conjunct's probes exactly when the conjunct is true for it. Not when a constant's key is
/// inexact (a text cut at `SORT_KEY_TEXT_BYTES_MAX` bytes stands for every text sharing it),
/// a STARTSWITH prefix is that long, or an AND sits under an OR (one side's probes stand for
/// both); `None` then, and for a filter that calls a user-defined function or a JOIN.
pub(crate) fn exact_conjuncts(
    query: &Query,
    parameters: &HashMap<String, Value>,
    full_text: &FullTextPolicy,
) -> Option<Vec<IndexConjunct>> {
    let alias = root_alias(query)?;
    let filter = query.filter.as_ref()?;
    if query
        .from
        .as_ref()
        .is_some_and(|from| !from.joins.is_empty())
        || calls_udf(filter)
    {
        return None;
    }
    let reader = Reader {
        alias,
        parameters,
        full_text,
    };
    let mut out = Vec::new();
    let mut pending = vec![filter];
    while let Some(expr) = pending.pop() {
        if let Expr::Binary(BinaryOp::And, left, right) = expr {
            pending.push(right);
            pending.push(left);
            continue;
        }
        if !reader.is_exact(expr) {
            return None;
        }
        let probes = reader.probes(expr)?;
        // A spatial probe's cells hold geometries near the region, not only those in it, and
        // a full-text probe's stem texts lacking the term's other words.
        if probes.iter().any(|probe| probe.kind != ProbeKind::Range) {
            return None;
        }
        out.push(IndexConjunct { probes });
    }
    Some(out)
}

/// Whether a JOIN binds the root alias again, so that the filter's `alias.path` may name
/// something other than the document.
fn joins_shadow(query: &Query, alias: &str) -> bool {
    let Some(from) = &query.from else {
        return false;
    };
    from.joins.iter().any(|join| match join {
        Source::Iterate { alias: bound, .. } => bound == alias,
        Source::Bind {
            alias: Some(bound), ..
        } => bound == alias,
        Source::Bind {
            collection: Expr::Identifier(name),
            alias: None,
        } => name == alias,
        Source::Bind { .. } => false,
    })
}

/// Whether `expr` calls a user-defined function anywhere.
fn calls_udf(expr: &Expr) -> bool {
    if matches!(expr, Expr::UdfCall { .. }) {
        return true;
    }
    let mut found = false;
    for_each_child(expr, &mut |child| found = found || calls_udf(child));
    found
}

/// Reads the probes of one conjunct.
struct Reader<'a> {
    alias: &'a str,
    parameters: &'a HashMap<String, Value>,
    full_text: &'a FullTextPolicy,
}

impl Reader<'_> {
    /// The probes whose union holds every document for which `expr` is true, if known.
    fn probes(&self, expr: &Expr) -> Option<Vec<IndexProbe>> {
        match expr {
            // True when either side is: the union of both sides' probes.
            Expr::Binary(BinaryOp::Or, left, right) => {
                let mut probes = self.probes(left)?;
                probes.extend(self.probes(right)?);
                Some(probes)
            }
            // True only when both sides are: either side's probes hold it.
            Expr::Binary(BinaryOp::And, left, right) => {
                self.probes(left).or_else(|| self.probes(right))
            }
            Expr::Binary(op, left, right) => self.comparison(*op, left, right),
            Expr::Between {
                expr,
                low,
                high,
                negated: false,
            } => self.between(expr, low, high),
            Expr::In {
                expr,
                list,
                negated: false,
            } => {
                let path = self.path(expr)?;
                list.iter()
                    .map(|item| Some(equality(path.clone(), &self.constant(item)?)))
                    .collect()
            }
            Expr::Call {
                args,
                builtin: Some(Builtin::StWithin | Builtin::StIntersects),
                ..
            } => self.spatial_relation(args),
            Expr::Call {
                args,
                builtin:
                    Some(
                        builtin @ (Builtin::FullTextContains
                        | Builtin::FullTextContainsAll
                        | Builtin::FullTextContainsAny),
                    ),
                ..
            } => self.full_text_contains(*builtin, args),
            Expr::Call {
                args,
                builtin: Some(builtin),
                ..
            } => self.call(*builtin, args).map(|probe| vec![probe]),
            // A bare path passes the filter only when it is `true`.
            other => Some(vec![equality(self.path(other)?, &Value::Bool(true))]),
        }
    }

    /// Whether the probes of `expr` (when it has some) hold exactly the documents it is true
    /// for (see `exact_conjuncts`).
    fn is_exact(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Binary(BinaryOp::Or, left, right) => self.is_exact(left) && self.is_exact(right),
            Expr::Binary(BinaryOp::And, ..) => false,
            Expr::Call {
                args,
                builtin: Some(Builtin::StartsWith),
                ..
            } => match args.get(1).and_then(|prefix| self.constant(prefix)) {
                Some(Value::String(prefix)) => prefix.len() < SORT_KEY_TEXT_BYTES_MAX,
                _ => false,
            },
            _ => {
                let mut exact = true;
                self.constants_exact(expr, &mut exact);
                exact
            }
        }
    }

    /// Clears `exact` when a constant under `expr` has an inexact sort key.
    fn constants_exact(&self, expr: &Expr, exact: &mut bool) {
        if matches!(expr, Expr::Literal(_) | Expr::Parameter(_)) {
            if let Some(value) = self.constant(expr) {
                *exact &= sort_key(&value).1;
            }
            return;
        }
        for_each_child(expr, &mut |child| self.constants_exact(child, exact));
    }

    /// `path op constant` or `constant op path`.
    fn comparison(&self, op: BinaryOp, left: &Expr, right: &Expr) -> Option<Vec<IndexProbe>> {
        if let Some(probes) = self.distance(op, left, right) {
            return Some(probes);
        }
        let (path, value, op) = match (self.path(left), self.path(right)) {
            (Some(path), _) => (path, self.constant(right)?, op),
            (None, Some(path)) => (path, self.constant(left)?, flipped(op)?),
            (None, None) => return None,
        };
        let (type_start, type_end) = type_bounds(type_rank(Some(&value)));
        let (key, exact) = sort_key(&value);
        let after = successor(&key);
        // An inexact key (a cut text) stands for every value sharing it: a strict bound must
        // then keep them all, and the evaluator decides.
        let (start, end) = match op {
            BinaryOp::Equal => return Some(vec![equality(path, &value)]),
            BinaryOp::Less if exact => (type_start, key),
            BinaryOp::Less | BinaryOp::LessOrEqual => (type_start, after),
            BinaryOp::Greater if exact => (after, type_end),
            BinaryOp::Greater | BinaryOp::GreaterOrEqual => (key, type_end),
            _ => return None,
        };
        Some(vec![IndexProbe {
            path,
            start,
            end,
            seek: false,
            kind: ProbeKind::Range,
        }])
    }

    /// `path BETWEEN low AND high` with constants of one type.
    fn between(&self, expr: &Expr, low: &Expr, high: &Expr) -> Option<Vec<IndexProbe>> {
        let path = self.path(expr)?;
        let (low, high) = (self.constant(low)?, self.constant(high)?);
        if type_rank(Some(&low)) != type_rank(Some(&high)) {
            return None;
        }
        Some(vec![IndexProbe {
            path,
            start: sort_key(&low).0,
            end: successor(&sort_key(&high).0),
            seek: false,
            kind: ProbeKind::Range,
        }])
    }

    /// The built-ins an index serves.
    fn call(&self, builtin: Builtin, args: &[Expr]) -> Option<IndexProbe> {
        let path = self.path(args.first()?)?;
        let types = |first: u8, last: u8| IndexProbe {
            path: path.clone(),
            start: type_bounds(first).0,
            end: type_bounds(last + 1).0,
            seek: false,
            kind: ProbeKind::Range,
        };
        match builtin {
            Builtin::IsDefined => Some(types(1, RANK_END - 1)),
            Builtin::IsNull => Some(types(1, 1)),
            Builtin::IsBool => Some(types(2, 2)),
            Builtin::IsNumber => Some(types(3, 3)),
            Builtin::IsString => Some(types(4, 4)),
            Builtin::IsArray => Some(types(5, 5)),
            Builtin::IsObject => Some(types(6, 6)),
            Builtin::IsPrimitive => Some(types(1, 4)),
            Builtin::StartsWith if self.flag_is_false(args.get(2)) => {
                let Value::String(prefix) = self.constant(args.get(1)?)? else {
                    return None;
                };
                let start = string_prefix_key(&prefix);
                let end = successor(&start);
                Some(IndexProbe {
                    path,
                    start,
                    end,
                    seek: false,
                    kind: ProbeKind::Range,
                })
            }
            Builtin::ArrayContains if self.flag_is_false(args.get(2)) => {
                let mut elements = path;
                elements.push("[]".to_string());
                Some(equality(elements, &self.constant(args.get(1)?)?))
            }
            _ => None,
        }
    }

    /// `ST_WITHIN` or `ST_INTERSECTS` of a path and a constant geometry, either way round:
    /// true only where the two geometries' footprints meet (`functions/spatial_grid.rs`).
    fn spatial_relation(&self, args: &[Expr]) -> Option<Vec<IndexProbe>> {
        let [first, second] = args else {
            return None;
        };
        let (path, geometry) = self.path_and_geometry(first, second)?;
        Some(spatial_probes(path, geometry_region(&geometry)?))
    }

    /// A full-text predicate on a path with constant string terms: true only for texts holding
    /// every stem of a term (`functions/text.rs`), so the entries of one stem of one term hold
    /// them all (of every term for `FullTextContainsAny`). Not served when the evaluator would
    /// stem the text in another language than the path's entries are (`c["text"]` takes the
    /// default one), nor when a term has no words (true for no text; left to the evaluator).
    fn full_text_contains(&self, builtin: Builtin, args: &[Expr]) -> Option<Vec<IndexProbe>> {
        let (text, terms_given) = args.split_first()?;
        let path = self.path(text)?;
        let language = self.full_text.language_of_path(&path);
        if self.full_text.language_of(Some(text)) != language {
            return None;
        }
        let mut stems = Vec::new();
        for term in terms_given {
            let Value::String(term) = self.constant(term)? else {
                return None;
            };
            stems.push(terms(&term, language).into_iter().max_by_key(String::len)?);
        }
        if builtin != Builtin::FullTextContainsAny {
            // Every term must be found: the longest stem of all is the likeliest to be rare.
            stems = stems
                .into_iter()
                .max_by_key(String::len)
                .into_iter()
                .collect();
        }
        stems.sort_unstable();
        stems.dedup();
        let probe = |stem: &String| {
            let start = full_text_stem_key(stem);
            let end = successor(&start);
            IndexProbe {
                path: path.clone(),
                start,
                end,
                seek: true,
                kind: ProbeKind::FullText,
            }
        };
        Some(stems.iter().map(probe).collect())
    }

    /// `ST_DISTANCE(path, point) < r` or `<= r`, the call's arguments and the comparison's
    /// sides either way round: true only for geometries with a point within `r` meters.
    fn distance(&self, op: BinaryOp, left: &Expr, right: &Expr) -> Option<Vec<IndexProbe>> {
        let distance_args = |expr: &Expr| match expr {
            Expr::Call {
                args,
                builtin: Some(Builtin::StDistance),
                ..
            } => Some(args.clone()),
            _ => None,
        };
        let (args, bound, op) = match (distance_args(left), distance_args(right)) {
            (Some(args), _) => (args, right, op),
            (None, Some(args)) => (args, left, flipped(op)?),
            (None, None) => return None,
        };
        if !matches!(op, BinaryOp::Less | BinaryOp::LessOrEqual) {
            return None;
        }
        let meters = self.constant(bound)?.as_f64()?;
        let [first, second] = args.as_slice() else {
            return None;
        };
        let (path, point) = self.path_and_geometry(first, second)?;
        Some(spatial_probes(path, distance_region(&point, meters)?))
    }

    /// A document path and a constant, in either order.
    fn path_and_geometry(&self, first: &Expr, second: &Expr) -> Option<(Vec<String>, Value)> {
        match (self.path(first), self.path(second)) {
            (Some(path), None) => Some((path, self.known_value(second)?)),
            (None, Some(path)) => Some((path, self.known_value(first)?)),
            _ => None,
        }
    }

    /// A value known before any row: a literal, a bound parameter, or an array or object
    /// literal of them (a GeoJSON geometry written in the query).
    fn known_value(&self, expr: &Expr) -> Option<Value> {
        match expr {
            Expr::Literal(value) => Some(value.clone()),
            Expr::Parameter(name) => self.parameters.get(name).cloned(),
            Expr::Array(items) => items
                .iter()
                .map(|item| self.known_value(item))
                .collect::<Option<Vec<_>>>()
                .map(Value::Array),
            Expr::Object(members) => members
                .iter()
                .map(|(name, member)| Some((name.clone(), self.known_value(member)?)))
                .collect::<Option<serde_json::Map<_, _>>>()
                .map(Value::Object),
            _ => None,
        }
    }

    /// Whether an optional boolean argument is absent or the constant `false`.
    fn flag_is_false(&self, flag: Option<&Expr>) -> bool {
        match flag {
            None => true,
            Some(expr) => self.constant(expr) == Some(Value::Bool(false)),
        }
    }

    /// `alias.a.b` as a path an index holds: not the document itself, and not a system
    /// property no entry is made for.
    fn path(&self, expr: &Expr) -> Option<Vec<String>> {
        let path = document_path(expr, self.alias)?;
        let first = path.first()?;
        let unindexed = UNINDEXED_SYSTEM_PROPERTIES.contains(&first.as_str())
            || (first == "_ts" && path.len() > 1);
        (!unindexed).then_some(path)
    }

    /// A scalar literal, or a parameter bound to a scalar.
    fn constant(&self, expr: &Expr) -> Option<Value> {
        let value = match expr {
            Expr::Literal(value) => value.clone(),
            Expr::Parameter(name) => self.parameters.get(name)?.clone(),
            _ => return None,
        };
        matches!(
            value,
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_)
        )
        .then_some(value)
    }
}

/// The probes of a path's spatial index reading `ranges` of cell keys.
fn spatial_probes(path: Vec<String>, ranges: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<IndexProbe> {
    ranges
        .into_iter()
        .map(|(start, end)| IndexProbe {
            path: path.clone(),
            start,
            end,
            seek: false,
            kind: ProbeKind::Spatial,
        })
        .collect()
}

/// `a op b` as `b op' a`.
fn flipped(op: BinaryOp) -> Option<BinaryOp> {
    Some(match op {
        BinaryOp::Equal => BinaryOp::Equal,
        BinaryOp::Less => BinaryOp::Greater,
        BinaryOp::LessOrEqual => BinaryOp::GreaterOrEqual,
        BinaryOp::Greater => BinaryOp::Less,
        BinaryOp::GreaterOrEqual => BinaryOp::LessOrEqual,
        _ => return None,
    })
}

/// The probe of every entry of `path` equal to `value` (and, when its key is inexact, of every
/// value sharing the key).
fn equality(path: Vec<String>, value: &Value) -> IndexProbe {
    let start = sort_key(value).0;
    let end = successor(&start);
    IndexProbe {
        path,
        start,
        end,
        seek: true,
        kind: ProbeKind::Range,
    }
}

/// A value's sort key and whether it is exact.
fn sort_key(value: &Value) -> (Vec<u8>, bool) {
    let mut key = Vec::new();
    let exact = encode_sort_key(Some(value), &mut key);
    (key, exact)
}

/// The first byte string after every string that starts with `prefix`. Sort keys start with a
/// type tag below `0xFF`, so one always exists.
fn successor(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return end;
        }
    }
    end
}

#[cfg(test)]
mod tests;
