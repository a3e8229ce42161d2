//! Turns input values into rows and rows into results: FROM/JOIN fan-out, WHERE, projection,
//! and the `Accumulator` that holds state for GROUP BY, aggregates, DISTINCT and in-memory
//! ORDER BY. Subqueries run entirely here, over values of the current row.
//!
//! It does not page: `paging.rs` decides which rows of a document stream become a page and
//! what goes into a continuation token. All state is bounded by `ACCUMULATED_ROWS_MAX`.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::ControlFlow;

use serde_json::{Map, Value};

use crate::aggregates::AggregateState;
use crate::ast::{Expr, From, Projection, Query, Source};
use crate::context::{Context, Scope};
use crate::error::QueryError;
use crate::eval::{is_true, Evaluator};
use crate::ordering::{compare_ties, OrderingRules};
use crate::plan::{path_root, source_alias, QueryPlan};
use crate::value::{canonical_key, total_order};

/// The most rows, groups or distinct values one query (or subquery) may hold in memory.
pub const ACCUMULATED_ROWS_MAX: usize = 100_000;

/// The most rows the FROM clause may make of one document (or one subquery run): JOINs
/// multiply array lengths, and this keeps a hostile query from running for ever.
pub const DOCUMENT_ROWS_MAX: u64 = 1_000_000;

/// What a row visitor returns: keep going, or stop the scan.
pub type Flow = Result<ControlFlow<()>, QueryError>;

pub fn limit_error() -> QueryError {
    QueryError::LimitExceeded(format!(
        "the query needs to hold more than {ACCUMULATED_ROWS_MAX} rows, groups or distinct values in memory"
    ))
}

/// The values a source binds to its alias in the given scope: the elements of an array for
/// `x IN expr`, the results of a subquery, or the single value of a path (none if undefined).
pub fn expand<'a>(
    evaluator: &Evaluator<'_>,
    source: &Source,
    scope: Option<&'a Scope<'a>>,
) -> Result<Vec<Cow<'a, Value>>, QueryError> {
    match source {
        Source::Iterate { collection, .. } => Ok(match evaluator.eval(collection, scope)? {
            Some(Cow::Borrowed(Value::Array(items))) => items.iter().map(Cow::Borrowed).collect(),
            Some(Cow::Owned(Value::Array(items))) => items.into_iter().map(Cow::Owned).collect(),
            // Anything that is not an array is ignored.
            _ => Vec::new(),
        }),
        Source::Bind {
            collection: Expr::Subquery(query),
            ..
        } => Ok(evaluator
            .context
            .subqueries
            .run(evaluator.context, query, scope, None)?
            .into_iter()
            .map(Cow::Owned)
            .collect()),
        Source::Bind { collection, .. } => {
            Ok(evaluator.eval(collection, scope)?.into_iter().collect())
        }
    }
}

/// Calls `visit` once per row of the cross product of `sources`, each bound on top of `scope`.
pub fn join_rows<'a>(
    evaluator: &Evaluator<'_>,
    sources: &[Source],
    scope: Option<&'a Scope<'a>>,
    rows_count: &mut u64,
    visit: &mut dyn FnMut(Option<&Scope<'_>>) -> Flow,
) -> Flow {
    let Some((first, rest)) = sources.split_first() else {
        *rows_count += 1;
        if *rows_count > DOCUMENT_ROWS_MAX {
            return Err(QueryError::LimitExceeded(format!(
                "the FROM clause makes more than {DOCUMENT_ROWS_MAX} rows of one document"
            )));
        }
        return visit(scope);
    };
    let alias = source_alias(first)?;
    for value in &expand(evaluator, first, scope)? {
        let bound = Scope {
            name: alias,
            value,
            parent: scope,
        };
        if join_rows(evaluator, rest, Some(&bound), rows_count, visit)?.is_break() {
            return Ok(ControlFlow::Break(()));
        }
    }
    Ok(ControlFlow::Continue(()))
}

/// Calls `visit` for every row the FROM clause makes of one stored document.
pub fn document_rows(
    evaluator: &Evaluator<'_>,
    from: &From,
    document: &Value,
    visit: &mut dyn FnMut(Option<&Scope<'_>>) -> Flow,
) -> Flow {
    let source_collection = match &from.source {
        Source::Iterate { collection, .. } | Source::Bind { collection, .. } => collection,
    };
    let container_name = path_root(source_collection).unwrap_or("root");
    // The container name is visible only while the root collection expression is evaluated.
    let container = Scope {
        name: container_name,
        value: document,
        parent: None,
    };
    let alias = source_alias(&from.source)?;
    let mut rows_count = 0;
    for value in &expand(evaluator, &from.source, Some(&container))? {
        let bound = Scope {
            name: alias,
            value,
            parent: None,
        };
        if join_rows(evaluator, &from.joins, Some(&bound), &mut rows_count, visit)?.is_break() {
            return Ok(ControlFlow::Break(()));
        }
    }
    Ok(ControlFlow::Continue(()))
}

/// WHERE: only rows where the filter is exactly `true` pass.
pub fn passes_filter(
    evaluator: &Evaluator<'_>,
    query: &Query,
    scope: Option<&Scope<'_>>,
) -> Result<bool, QueryError> {
    match &query.filter {
        Some(filter) => Ok(is_true(&evaluator.eval(filter, scope)?)),
        None => Ok(true),
    }
}

/// The result of one row (or one group, with substitutions): `None` when the projection is
/// undefined, which leaves the row out of the results.
pub fn project(
    evaluator: &Evaluator<'_>,
    query: &Query,
    plan: &QueryPlan,
    scope: Option<&Scope<'_>>,
) -> Result<Option<Value>, QueryError> {
    match &query.select.projection {
        Projection::Star => Ok(scope.map(|scope| scope.value.clone())),
        Projection::Value(expr) => Ok(evaluator.eval(expr, scope)?.map(Cow::into_owned)),
        // Undefined properties are left out; a row whose properties are all undefined is `{}`.
        Projection::Items(items) => {
            let mut members = Map::new();
            for (item, name) in items.iter().zip(&plan.output_names) {
                if let Some(value) = evaluator.eval(&item.expr, scope)? {
                    members.insert(name.clone(), value.into_owned());
                }
            }
            Ok(Some(Value::Object(members)))
        }
    }
}

/// The ORDER BY values of a row.
pub fn sort_values(
    evaluator: &Evaluator<'_>,
    query: &Query,
    scope: Option<&Scope<'_>>,
) -> Result<Vec<Option<Value>>, QueryError> {
    query
        .order_by
        .iter()
        .map(|key| Ok(evaluator.eval(&key.expr, scope)?.map(Cow::into_owned)))
        .collect()
}

/// Compares two rows' ORDER BY values with each key's direction.
pub fn compare_sort_values(
    query: &Query,
    left: &[Option<Value>],
    right: &[Option<Value>],
) -> Ordering {
    for ((key, a), b) in query.order_by.iter().zip(left).zip(right) {
        let ordering = total_order(a.as_ref(), b.as_ref());
        let ordering = if key.descending {
            ordering.reverse()
        } else {
            ordering
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}

struct Group {
    keys: Vec<Option<Value>>,
    states: Vec<AggregateState>,
}

/// Collects the rows of a query that needs them all before answering: GROUP BY, aggregates,
/// DISTINCT, and ORDER BY when run in memory.
#[derive(Default)]
pub struct Accumulator {
    /// Ungrouped rows: their sort values, their document's tie-breaker, their output.
    rows: Vec<(Vec<Option<Value>>, Vec<u8>, Value)>,
    groups: Vec<Group>,
    group_index: HashMap<String, usize>,
    rules: OrderingRules,
}

impl Accumulator {
    /// An accumulator whose ORDER BY follows `rules` (see `ordering.rs`).
    pub fn with_rules(rules: OrderingRules) -> Self {
        Accumulator {
            rules,
            ..Accumulator::default()
        }
    }

    /// Holds the one group of an aggregate query without GROUP BY, with the values the engine
    /// computed for its aggregates (in the plan's order) instead of rows.
    pub fn set_covered(&mut self, values: Vec<Option<Value>>) {
        self.group_index.clear();
        self.groups = vec![Group {
            keys: Vec::new(),
            states: values.into_iter().map(AggregateState::Known).collect(),
        }];
    }

    /// Adds a row that already passed WHERE; `tie` orders it among rows with equal sort values
    /// (its document's tie-breaker, see `ordering::compare_ties`).
    pub fn push(
        &mut self,
        evaluator: &Evaluator<'_>,
        query: &Query,
        plan: &QueryPlan,
        scope: Option<&Scope<'_>>,
        tie: &[u8],
    ) -> Result<(), QueryError> {
        // An aggregate's ORDER BY sorts nothing, but the rows it would leave out are not counted.
        let sorts = !query.order_by.is_empty() && (!plan.grouped || self.rules.omit_undefined);
        let sort = if sorts {
            match self.rules.shape(sort_values(evaluator, query, scope)?) {
                Some(sort) => sort,
                None => return Ok(()),
            }
        } else {
            Vec::new()
        };
        if !plan.grouped {
            let Some(output) = project(evaluator, query, plan, scope)? else {
                return Ok(());
            };
            if self.rows.len() >= ACCUMULATED_ROWS_MAX {
                return Err(limit_error());
            }
            let tie = if sort.is_empty() {
                Vec::new()
            } else {
                tie.to_vec()
            };
            self.rows.push((sort, tie, output));
            return Ok(());
        }
        self.push_grouped(evaluator, query, plan, scope)
    }

    /// Adds a row to its group's aggregates.
    fn push_grouped(
        &mut self,
        evaluator: &Evaluator<'_>,
        query: &Query,
        plan: &QueryPlan,
        scope: Option<&Scope<'_>>,
    ) -> Result<(), QueryError> {
        let mut keys = Vec::with_capacity(query.group_by.len());
        let mut key_text = String::new();
        for expr in &query.group_by {
            let key = evaluator.eval(expr, scope)?.map(Cow::into_owned);
            key_text.push_str(&canonical_key(key.as_ref()));
            key_text.push('\u{0}');
            keys.push(key);
        }
        let index = if let Some(index) = self.group_index.get(&key_text) {
            *index
        } else {
            if self.groups.len() >= ACCUMULATED_ROWS_MAX {
                return Err(limit_error());
            }
            self.groups.push(Group {
                keys,
                states: plan.aggregates.iter().map(AggregateState::new).collect(),
            });
            self.group_index.insert(key_text, self.groups.len() - 1);
            self.groups.len() - 1
        };
        for (aggregate, state_index) in plan.aggregates.iter().zip(0..) {
            let argument = match aggregate {
                Expr::Call { args, .. } => match args.first() {
                    Some(argument) => evaluator.eval(argument, scope)?.map(Cow::into_owned),
                    None => None,
                },
                _ => None,
            };
            if let Some(group) = self.groups.get_mut(index) {
                if let Some(state) = group.states.get_mut(state_index) {
                    state.add(argument);
                    if state.held() > ACCUMULATED_ROWS_MAX {
                        return Err(limit_error());
                    }
                }
            }
        }
        Ok(())
    }

    /// The final results: groups projected, rows sorted, DISTINCT, then OFFSET/LIMIT and TOP.
    pub fn finish(
        mut self,
        context: &Context,
        query: &Query,
        plan: &QueryPlan,
    ) -> Result<Vec<Value>, QueryError> {
        let mut outputs = Vec::new();
        if plan.grouped {
            // Aggregates without GROUP BY answer even over no rows (COUNT is 0).
            if self.groups.is_empty() && query.group_by.is_empty() {
                self.groups.push(Group {
                    keys: Vec::new(),
                    states: plan.aggregates.iter().map(AggregateState::new).collect(),
                });
            }
            for group in &self.groups {
                let mut substitutions: Vec<(Expr, Option<Value>)> = query
                    .group_by
                    .iter()
                    .cloned()
                    .zip(group.keys.iter().cloned())
                    .collect();
                substitutions.extend(
                    plan.aggregates
                        .iter()
                        .cloned()
                        .zip(group.states.iter().map(AggregateState::result)),
                );
                let evaluator = Evaluator {
                    context,
                    substitutions: &substitutions,
                };
                if let Some(output) = project(&evaluator, query, plan, None)? {
                    outputs.push(output);
                }
            }
        } else {
            if !query.order_by.is_empty() {
                // Ties follow their documents; a stable sort keeps one document's rows in order.
                let first_descending = query.order_by.first().is_some_and(|key| key.descending);
                self.rows.sort_by(|a, b| {
                    compare_sort_values(query, &a.0, &b.0)
                        .then_with(|| compare_ties(first_descending, &a.1, &b.1))
                });
            }
            outputs = self.rows.into_iter().map(|(_, _, output)| output).collect();
        }
        if query.select.distinct {
            let mut seen = std::collections::HashSet::new();
            outputs.retain(|output| seen.insert(canonical_key(Some(output))));
        }
        let start = usize::try_from(plan.offset)
            .unwrap_or(usize::MAX)
            .min(outputs.len());
        let end = plan.end().map_or(outputs.len(), |end| {
            usize::try_from(end)
                .unwrap_or(usize::MAX)
                .min(outputs.len())
        });
        Ok(outputs.into_iter().take(end).skip(start).collect())
    }
}
