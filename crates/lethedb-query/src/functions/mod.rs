//! The built-in scalar functions of the language, dispatched on `Builtin` to one module per
//! family: `types`, `strings`, `math`, `arrays`, `dates`, `vectors`, `spatial`, `text`
//! (argument readers in `args`), and the grid a spatial index keys geometries by
//! (`spatial_grid`).
//!
//! As in the service, a function given arguments of the wrong type returns `undefined`
//! instead of failing; an unknown name or a wrong argument count is caught before execution
//! by `builtins::check_call`. Aggregates (COUNT, SUM, AVG, MIN, MAX) are computed by
//! `exec.rs`, and refused functions never get this far.

mod args;
mod arrays;
mod dates;
mod math;
mod spatial;
pub(crate) mod spatial_grid;
mod strings;
pub(crate) mod text;
mod types;
mod vectors;

use crate::full_text::Language;
use std::collections::HashMap;

use serde_json::Value;

use crate::ast::{for_each_child, for_each_query_expr, Expr, Query};
use crate::builtins::{Builtin, Family, Kind};
use crate::context::{Context, Regexes, Val};
use crate::error::QueryError;

/// Computes a scalar built-in over evaluated arguments (`None` is `undefined`); `language` is
/// that of the text a full-text function's first argument reads.
pub fn call(
    builtin: Builtin,
    args: &[Val<'_>],
    context: &Context,
    language: Language,
) -> Result<Option<Value>, QueryError> {
    match builtin.kind() {
        Kind::Scalar(Family::Types) => types::call(builtin, args),
        Kind::Scalar(Family::Strings) => strings::call(builtin, args, context),
        Kind::Scalar(Family::Math) => math::call(builtin, args),
        Kind::Scalar(Family::Arrays) => arrays::call(builtin, args),
        Kind::Scalar(Family::Dates) => dates::call(builtin, args, context),
        Kind::Scalar(Family::Vectors) => Ok(vectors::vector_distance(args)),
        Kind::Scalar(Family::Spatial) => Ok(spatial::call(builtin, args)),
        Kind::Scalar(Family::Text) => Ok(text::call(builtin, args, language)),
        // Only ORDER BY RANK holds these (`ranking.rs`), and it ranks without evaluating them.
        Kind::Scalar(Family::Rank) => Ok(None),
        Kind::Aggregate => Err(QueryError::semantic(format!(
            "Aggregate function '{}' is not allowed in this context.",
            builtin.name()
        ))),
        Kind::Refused => Err(QueryError::unsupported(format!(
            "the built-in function '{}' is not supported",
            builtin.name()
        ))),
    }
}

/// Compiles once every REGEXMATCH pattern of `query` (subqueries included) that is known
/// before any row: a literal or a bound parameter, with literal or parameter modifiers.
/// Patterns that would not compile are left to fail (or be undefined) when the call runs.
pub fn literal_regexes(query: &Query, parameters: &HashMap<String, Value>) -> Regexes {
    let constant = |expr: &Expr| expr.known_string(parameters);
    let mut regexes = Regexes::default();
    let mut pending = Vec::new();
    for_each_query_expr(query, &mut |expr| pending.push(expr));
    while let Some(expr) = pending.pop() {
        if let Expr::Call {
            args,
            builtin: Some(Builtin::RegexMatch),
            ..
        } = expr
        {
            let pattern = args.get(1).and_then(constant);
            let modifiers = match args.get(2) {
                None => Some(String::new()),
                Some(modifiers) => constant(modifiers),
            };
            if let (Some(pattern), Some(modifiers)) = (pattern, modifiers) {
                if let Ok(Some(regex)) = strings::compile_regex(&pattern, &modifiers) {
                    regexes.insert(&pattern, &modifiers, regex);
                }
            }
        }
        for_each_child(expr, &mut |child| pending.push(child));
    }
    regexes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse;
    use serde_json::json;

    #[test]
    fn known_regexmatch_patterns_are_compiled_once_at_prepare() -> Result<(), QueryError> {
        let query = parse(
            "SELECT VALUE [RegexMatch(c.a, 'ab+'), REGEXMATCH(c.b, @p, 'i'), \
             REGEXMATCH(c.c, '('), REGEXMATCH(c.d, c.e), \
             EXISTS(SELECT VALUE 1 WHERE REGEXMATCH(c.f, 'x', 'm'))] FROM c",
        )?;
        let parameters = HashMap::from([("p".to_string(), json!("cd"))]);
        let regexes = literal_regexes(&query, &parameters);
        assert!(regexes.get("ab+", "").is_some());
        assert!(regexes.get("cd", "i").is_some());
        assert!(regexes.get("cd", "").is_none());
        assert!(regexes.get("x", "m").is_some());
        // An invalid pattern is left for the call to answer undefined.
        assert!(regexes.get("(", "").is_none());
        Ok(())
    }
}
