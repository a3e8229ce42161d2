//! What the engine needs to know to serve `ORDER BY VectorDistance(...)` from a store of
//! vectors instead of a scan: the document path the call reads, the constant vector it compares
//! with, the distance function, the `bruteForce` flag and search options, and how many rows the
//! query can ever return (its TOP, or OFFSET + LIMIT).
//!
//! It recognises only the shape whose every row is one document (`FROM c` without JOIN, one
//! ORDER BY key, no GROUP BY, DISTINCT or aggregate) and whose other arguments are constants;
//! anything else gets `None` and the engine scans. It decides nothing about which documents the
//! page holds: the engine pushes candidates and the page sorts them by the exact score, as
//! for any other feed.

use serde_json::Value;

use crate::ast::{Expr, Query};
use crate::builtins::Builtin;
use crate::eval::Evaluator;
use crate::prepared::{document_path, root_alias, Mode, Prepared};
use crate::value::as_number;
use crate::vectors::{Distance, DISTANCE_OPTION};

/// The option that widens an approximate search (the service's `searchListSizeMultiplier`).
const SEARCH_LIST_OPTION: &str = "searchListSizeMultiplier";

/// A vector search a query asks for, with every argument known.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorSearch {
    /// The document path of the vectors compared (`c.embedding` is `["embedding"]`).
    pub path: Vec<String>,
    /// The constant vector they are compared with.
    pub vector: Vec<f64>,
    pub distance: Distance,
    /// `VectorDistance`'s third argument: the exact search even where an index is approximate.
    pub brute_force: bool,
    /// The options' `searchListSizeMultiplier`, if given.
    pub search_list_multiplier: Option<f64>,
    /// How many rows the query returns at most over all its pages (TOP, or OFFSET + LIMIT).
    pub rows: u64,
}

impl Prepared {
    /// The vector search this query is, when it has the one shape a vector store may serve
    /// (see the module's documentation).
    pub fn vector_search(&self) -> Option<VectorSearch> {
        let inner = &self.inner;
        let query = &inner.query;
        if inner.mode != Mode::Ordered || query.order_by.len() != 1 || !one_row_each(query) {
            return None;
        }
        let rows = inner.plan.end()?;
        let alias = root_alias(query)?;
        let Expr::Call {
            args,
            builtin: Some(Builtin::VectorDistance),
            ..
        } = &query.order_by[0].expr
        else {
            return None;
        };
        let evaluator = Evaluator::new(&inner.context);
        let constant = |expr: &Expr| -> Option<Value> {
            if !is_constant(expr) {
                return None;
            }
            let value = evaluator.eval(expr, None).ok()?;
            Some(value.map_or(Value::Null, std::borrow::Cow::into_owned))
        };
        let (path, vector) = match (args.first(), args.get(1)) {
            (Some(left), Some(right)) => match document_path(left, alias) {
                Some(path) => (path, constant(right)?),
                None => (document_path(right, alias)?, constant(left)?),
            },
            _ => return None,
        };
        let brute_force = match args.get(2) {
            None => false,
            Some(flag) => constant(flag)?.as_bool()?,
        };
        let options = match args.get(3) {
            None => Value::Object(Default::default()),
            Some(options) => constant(options)?,
        };
        let (distance, search_list_multiplier) = read_options(&options)?;
        Some(VectorSearch {
            path,
            vector: numbers(&vector)?,
            distance,
            brute_force,
            search_list_multiplier,
            rows,
        })
    }
}

/// Whether each document gives the query at most one row: a whole-document source without
/// JOIN.
pub(crate) fn one_row_each(query: &Query) -> bool {
    query
        .from
        .as_ref()
        .is_some_and(|from| from.joins.is_empty() && root_alias(query).is_some())
}

/// Whether `expr` is made of literals and parameters only (its value is known before any row).
pub(crate) fn is_constant(expr: &Expr) -> bool {
    match expr {
        Expr::Literal(_) | Expr::Parameter(_) => true,
        Expr::Array(items) => items.iter().all(is_constant),
        Expr::Object(fields) => fields.iter().all(|(_, value)| is_constant(value)),
        Expr::Unary(_, operand) => is_constant(operand),
        _ => false,
    }
}

/// The distance function (cosine when none is named) and the search list multiplier of an
/// options object; `None` when the options are not an object or name an unknown function
/// (the call is then `undefined` for every row, which the scan serves).
fn read_options(options: &Value) -> Option<(Distance, Option<f64>)> {
    let options = options.as_object()?;
    let field = |name: &str| {
        options
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value)
    };
    let distance = match field(DISTANCE_OPTION) {
        None => Distance::Cosine,
        Some(name) => Distance::parse(name.as_str()?)?,
    };
    Some((distance, field(SEARCH_LIST_OPTION).and_then(as_number)))
}

/// The numbers of an array of numbers.
fn numbers(value: &Value) -> Option<Vec<f64>> {
    value.as_array()?.iter().map(as_number).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare;
    use serde_json::json;

    fn search(text: &str, parameters: &[(String, Value)]) -> Option<VectorSearch> {
        prepare(text, parameters, 0)
            .unwrap_or_else(|error| panic!("{text}: {error}"))
            .vector_search()
    }

    #[test]
    fn reads_a_top_k_vector_search() {
        let found = search(
            "SELECT TOP 3 c.id FROM c WHERE c.kind = 'a' ORDER BY VectorDistance(c.v, @q, true, {distanceFunction: 'euclidean', searchListSizeMultiplier: 20})",
            &[("@q".into(), json!([1, -2.5]))],
        );
        assert_eq!(
            found,
            Some(VectorSearch {
                path: vec!["v".into()],
                vector: vec![1.0, -2.5],
                distance: Distance::Euclidean,
                brute_force: true,
                search_list_multiplier: Some(20.0),
                rows: 3,
            })
        );
        let literal = search(
            "SELECT * FROM c ORDER BY VectorDistance([0.5, -1], c.a.b) OFFSET 2 LIMIT 4",
            &[],
        )
        .unwrap_or_else(|| panic!("a literal vector"));
        assert_eq!(literal.path, vec!["a".to_string(), "b".to_string()]);
        assert_eq!(literal.vector, vec![0.5, -1.0]);
        assert_eq!((literal.distance, literal.rows), (Distance::Cosine, 6));
    }

    #[test]
    fn declines_what_a_store_cannot_serve() {
        let q = || vec![("@q".to_string(), json!([1, 2]))];
        for text in [
            // No bound on the rows.
            "SELECT * FROM c ORDER BY VectorDistance(c.v, @q)",
            // Several rows per document.
            "SELECT TOP 1 c.id FROM c JOIN t IN c.tags ORDER BY VectorDistance(c.v, @q)",
            // Two keys, a vector that is not constant, a non-vector key.
            "SELECT TOP 1 * FROM c ORDER BY VectorDistance(c.v, @q), c.id",
            "SELECT TOP 1 * FROM c ORDER BY VectorDistance(c.v, c.w)",
            "SELECT TOP 1 * FROM c ORDER BY c.id",
            // An unknown distance function, options that are not an object.
            "SELECT TOP 1 * FROM c ORDER BY VectorDistance(c.v, @q, false, {distanceFunction: 'manhattan'})",
            "SELECT TOP 1 * FROM c ORDER BY VectorDistance(c.v, @q, false, 3)",
            "SELECT TOP 1 VALUE COUNT(1) FROM c",
        ] {
            assert_eq!(search(text, &q()), None, "{text}");
        }
    }
}
