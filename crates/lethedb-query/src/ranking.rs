//! `ORDER BY RANK`: the scoring expression a query ranks by (`FullTextScore`, `VectorDistance`,
//! or `RRF` fusing several of them, with optional weights), and the service's rules about
//! where the scoring functions may appear and what they take.
//!
//! It reads no document and computes no score: the page that ranks rows (`paging/ranked.rs`)
//! and the client plan (`hybrid_plan.rs`) take the components from here, and the arithmetic
//! from `scoring.rs`.

use std::collections::HashMap;

use serde_json::Value;

use crate::ast::{for_each_child, for_each_query_expr, Expr, Query};
use crate::builtins::Builtin;
use crate::error::QueryError;
use crate::vectors::{written_distance, Distance};

/// The service's refusal of `FullTextScore` anywhere but in `ORDER BY RANK`.
pub(crate) const FULL_TEXT_SCORE_PLACE: &str =
    "The FullTextScore function is only allowed in the ORDER BY RANK clause.";
/// The same refusal for `RRF`: the service's words for it are inferred from FullTextScore's.
pub(crate) const RRF_PLACE: &str = "The RRF function is only allowed in the ORDER BY RANK clause.";
/// `ORDER BY RANK` over anything but a scoring function (LetheDB's words).
pub(crate) const RANK_NEEDS_SCORE: &str =
    "The ORDER BY RANK clause requires a scoring function: FullTextScore, VectorDistance or RRF.";
/// One scoring function a rank is made of.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Component {
    /// `FullTextScore(path, terms...)`: BM25 of the terms over the path's text.
    FullText { path: Expr, terms: Vec<String> },
    /// `VectorDistance(...)`: the call itself, and whether a larger score is closer.
    Vector { call: Expr, larger_is_closer: bool },
}

/// The scoring expression of an `ORDER BY RANK` query.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ranking {
    pub(crate) components: Vec<Component>,
    /// The absolute weight of each component (1 when RRF names none).
    pub(crate) weights: Vec<f64>,
    /// Whether each component ranks its larger scores first: a full-text score or a similarity
    /// does, a euclidean distance does not, and a negative weight turns either round.
    pub(crate) descending: Vec<bool>,
    /// Whether RRF was given weights (the client needs `WeightedRankFusion`).
    pub(crate) weighted: bool,
}

/// Checks the service's rules on scoring functions and reads the rank of an `ORDER BY RANK`
/// query (`None` for any other query).
pub(crate) fn ranking(
    query: &Query,
    parameters: &HashMap<String, Value>,
) -> Result<Option<Ranking>, QueryError> {
    check_placement(query)?;
    if !query.order_by_rank {
        return Ok(None);
    }
    let Some(key) = query.order_by.first() else {
        return Err(QueryError::semantic(RANK_NEEDS_SCORE));
    };
    let (calls, weights) = match &key.expr {
        Expr::Call {
            args,
            builtin: Some(Builtin::ReciprocalRankFusion),
            ..
        } => fusion_arguments(args, parameters)?,
        expr => (vec![expr], None),
    };
    let components = calls
        .into_iter()
        .map(|call| component(call, parameters))
        .collect::<Result<Vec<_>, _>>()?;
    let weighted = weights.is_some();
    let weights = weights.unwrap_or_else(|| vec![1.0; components.len()]);
    let descending = components
        .iter()
        .zip(&weights)
        .map(|(component, weight)| {
            let best_first = match component {
                Component::FullText { .. } => true,
                Component::Vector {
                    larger_is_closer, ..
                } => *larger_is_closer,
            };
            best_first != (*weight < 0.0)
        })
        .collect();
    Ok(Some(Ranking {
        components,
        weights: weights.iter().map(|weight| weight.abs()).collect(),
        descending,
        weighted,
    }))
}

/// Refuses `FullTextScore` and `RRF` anywhere but as (or directly inside) the rank key.
fn check_placement(query: &Query) -> Result<(), QueryError> {
    let rank_key = query
        .order_by
        .first()
        .filter(|_| query.order_by_rank)
        .map(|key| &key.expr);
    let mut found = None;
    for_each_query_expr(query, &mut |expr| {
        if !rank_key.is_some_and(|key| std::ptr::eq(expr, key)) {
            return misplaced(expr, false, &mut found);
        }
        match expr {
            Expr::Call {
                args,
                builtin: Some(Builtin::ReciprocalRankFusion),
                ..
            } => args.iter().for_each(|arg| misplaced(arg, true, &mut found)),
            _ => misplaced(expr, true, &mut found),
        }
    });
    match found {
        Some(message) => Err(QueryError::semantic(message)),
        None => Ok(()),
    }
}

/// Records in `found` the first scoring call in `expr` (the node itself allowed when
/// `allowed`), descending into subqueries.
fn misplaced(expr: &Expr, allowed: bool, found: &mut Option<&'static str>) {
    if found.is_some() {
        return;
    }
    if let Expr::Call {
        builtin: Some(builtin),
        ..
    } = expr
    {
        let message = match builtin {
            Builtin::FullTextScore => Some(FULL_TEXT_SCORE_PLACE),
            Builtin::ReciprocalRankFusion => Some(RRF_PLACE),
            _ => None,
        };
        if let (Some(message), false) = (message, allowed) {
            *found = Some(message);
            return;
        }
    }
    for_each_child(expr, &mut |child| misplaced(child, false, found));
}

/// RRF's scoring arguments, and its weights when the last argument is an array (a literal or
/// a parameter) rather than a scoring function.
fn fusion_arguments<'a>(
    args: &'a [Expr],
    parameters: &HashMap<String, Value>,
) -> Result<(Vec<&'a Expr>, Option<Vec<f64>>), QueryError> {
    let (calls, weights) = match args.split_last() {
        Some((last, rest)) if !is_scoring_call(last) => (rest, Some(weights(last, parameters)?)),
        _ => (args, None),
    };
    if calls.is_empty() || !calls.iter().all(is_scoring_call) {
        return Err(QueryError::semantic(
            "The arguments of the RRF function must be FullTextScore or VectorDistance functions, optionally followed by an array of weights.",
        ));
    }
    if let Some(weights) = &weights {
        if weights.len() != calls.len() {
            return Err(QueryError::semantic(format!(
                "The RRF function has {} weights for {} scoring functions; it needs one weight per scoring function.",
                weights.len(),
                calls.len()
            )));
        }
    }
    Ok((calls.iter().collect(), weights))
}

fn is_scoring_call(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::Call {
            builtin: Some(Builtin::FullTextScore | Builtin::VectorDistance),
            ..
        }
    )
}

/// RRF's weights: an array of numbers, written or bound to a parameter.
fn weights(expr: &Expr, parameters: &HashMap<String, Value>) -> Result<Vec<f64>, QueryError> {
    let refusal = || {
        QueryError::semantic(
            "The weights of the RRF function must be an array of numbers, written in the query or passed as a parameter.",
        )
    };
    let values: Vec<Option<f64>> = match expr {
        Expr::Array(items) => items
            .iter()
            .map(|item| match item {
                Expr::Literal(value) => value.as_f64(),
                Expr::Parameter(name) => parameters.get(name).and_then(Value::as_f64),
                Expr::Unary(crate::ast::UnaryOp::Negate, operand) => match &**operand {
                    Expr::Literal(value) => value.as_f64().map(|number| -number),
                    _ => None,
                },
                _ => None,
            })
            .collect(),
        Expr::Parameter(name) => match parameters.get(name) {
            Some(Value::Array(items)) => items.iter().map(Value::as_f64).collect(),
            _ => return Err(refusal()),
        },
        Expr::Literal(Value::Array(items)) => items.iter().map(Value::as_f64).collect(),
        _ => return Err(refusal()),
    };
    values
        .into_iter()
        .collect::<Option<Vec<f64>>>()
        .ok_or_else(refusal)
}

/// One scoring function of a rank.
fn component(call: &Expr, parameters: &HashMap<String, Value>) -> Result<Component, QueryError> {
    match call {
        Expr::Call {
            args,
            builtin: Some(Builtin::FullTextScore),
            ..
        } => {
            let (path, terms) = args.split_first().ok_or_else(|| {
                QueryError::semantic(
                    "The FullTextScore function requires at least 2 argument(s), got 0.",
                )
            })?;
            Ok(Component::FullText {
                path: path.clone(),
                terms: score_terms(terms, parameters)?,
            })
        }
        Expr::Call {
            args,
            builtin: Some(Builtin::VectorDistance),
            ..
        } => Ok(Component::Vector {
            call: call.clone(),
            larger_is_closer: written_distance(args)
                .unwrap_or(Distance::Cosine)
                .larger_is_closer(),
        }),
        _ => Err(QueryError::semantic(RANK_NEEDS_SCORE)),
    }
}

/// FullTextScore's terms: strings, or one array of strings, each written or a parameter.
fn score_terms(
    args: &[Expr],
    parameters: &HashMap<String, Value>,
) -> Result<Vec<String>, QueryError> {
    let mut terms = Vec::new();
    for arg in args {
        let value = match arg {
            Expr::Literal(value) => Some(value.clone()),
            Expr::Parameter(name) => parameters.get(name).cloned(),
            Expr::Array(items) => items
                .iter()
                .map(|item| match item {
                    Expr::Literal(value) => Some(value.clone()),
                    Expr::Parameter(name) => parameters.get(name).cloned(),
                    _ => None,
                })
                .collect::<Option<Vec<Value>>>()
                .map(Value::Array),
            _ => None,
        };
        match value {
            Some(Value::String(term)) => terms.push(term),
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => terms.extend(
                items
                    .into_iter()
                    .filter_map(|item| item.as_str().map(str::to_string)),
            ),
            _ => {
                return Err(QueryError::semantic(
                    "The terms of the FullTextScore function must be strings, or an array of strings, written in the query or passed as parameters.",
                ))
            }
        }
    }
    if terms.is_empty() {
        return Err(QueryError::semantic(
            "The FullTextScore function requires at least one term.",
        ));
    }
    Ok(terms)
}

/// Whether `query` is a component query of a hybrid search (ordered by the internal
/// `_FullTextScore` or `_VectorScore` alone): the Python SDK reads only the first page of
/// each, so a range answers all of its TOP rows at once.
pub(crate) fn is_component_query(query: &Query) -> bool {
    matches!(
        query.order_by.as_slice(),
        [key] if matches!(
            key.expr,
            Expr::Call {
                builtin: Some(Builtin::FullTextScoreWithStatistics | Builtin::VectorScore),
                ..
            }
        )
    )
}
