//! The per-range query text of a client plan: what each partition key range runs so that the
//! SDK's own pipeline can merge, combine or deduplicate the answers across ranges.
//!
//! The shapes are the service's, which the SDKs' pipelines parse:
//! - ORDER BY: `SELECT c._rid, [{"item": k1}, ...] AS orderByItems, <projection> AS payload`
//!   with the filter placeholder the SDK fills in (`true` unless resuming);
//! - an aggregate's partial per range: `{"item": COUNT(x)}`, `{"item": SUM(x)}` (COUNTIF,
//!   MAKELIST and MAKESET alike),
//!   `{"item": {"sum": SUM(x), "count": COUNT(x)}}` for AVG, and for MIN and MAX
//!   `{"item": MIN(x), "item2": {"min": MIN(x), "count": COUNT(x)}}`;
//! - GROUP BY: `SELECT [{"item": g1}, ...] AS groupByItems, <payload> AS payload`;
//! - OFFSET n LIMIT m becomes `OFFSET 0 LIMIT n+m` on each range.
//!
//! Only text is produced here; `client_plan` decides which shape a query needs.

use std::fmt::Write as _;

use crate::ast::{Expr, Projection, Query, SortKey};
use crate::builtins::Builtin;
use crate::error::QueryError;
use crate::plan::{is_aggregate_call, source_alias, QueryPlan};
use crate::vectors;

/// What the SDKs put in place of this text before sending an ORDER BY query to a range.
pub const ORDER_BY_FILTER_PLACEHOLDER: &str = "{documentdb-formattableorderbyquery-filter}";

/// The service's refusal of an aggregate inside a larger expression across partitions.
const COMPOSITION: &str = "Compositions of aggregates and other expressions are not allowed.";

/// The aggregate operators the SDKs combine, named as the plan names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregateKind {
    Count,
    Sum,
    Average,
    Min,
    Max,
    CountIf,
    MakeList,
    MakeSet,
}

impl AggregateKind {
    pub fn name(self) -> &'static str {
        match self {
            AggregateKind::Count => "Count",
            AggregateKind::Sum => "Sum",
            AggregateKind::Average => "Average",
            AggregateKind::Min => "Min",
            AggregateKind::Max => "Max",
            AggregateKind::CountIf => "CountIf",
            AggregateKind::MakeList => "MakeList",
            AggregateKind::MakeSet => "MakeSet",
        }
    }

    fn of(expr: &Expr) -> Option<AggregateKind> {
        match expr {
            Expr::Call {
                builtin: Some(builtin),
                ..
            } => match builtin {
                Builtin::Count => Some(AggregateKind::Count),
                Builtin::Sum => Some(AggregateKind::Sum),
                Builtin::Average => Some(AggregateKind::Average),
                Builtin::Min => Some(AggregateKind::Min),
                Builtin::Max => Some(AggregateKind::Max),
                Builtin::CountIf => Some(AggregateKind::CountIf),
                Builtin::MakeList => Some(AggregateKind::MakeList),
                Builtin::MakeSet => Some(AggregateKind::MakeSet),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The kind of `expr` when it is exactly one aggregate call, `None` when it holds no aggregate,
/// and the service's error when an aggregate sits inside a larger expression.
pub fn aggregate_of(expr: &Expr) -> Result<Option<AggregateKind>, QueryError> {
    if is_aggregate_call(expr) {
        return Ok(AggregateKind::of(expr));
    }
    let mut nested = false;
    expr.walk(&mut |inner| nested |= is_aggregate_call(inner));
    if nested {
        Err(QueryError::semantic(COMPOSITION))
    } else {
        Ok(None)
    }
}

/// The partial result one range returns for an aggregate call, in the shape the SDKs' aggregators
/// read.
fn partial(call: &Expr, kind: AggregateKind) -> String {
    let argument = match call {
        Expr::Call { args, .. } => args.first().map(ToString::to_string).unwrap_or_default(),
        _ => String::new(),
    };
    match kind {
        // The SDKs add counts, sum sums, and concatenate lists (a set's union deduplicated).
        AggregateKind::Count
        | AggregateKind::Sum
        | AggregateKind::CountIf
        | AggregateKind::MakeList
        | AggregateKind::MakeSet => format!("{{\"item\": {call}}}"),
        AggregateKind::Average => {
            format!("{{\"item\": {{\"sum\": SUM({argument}), \"count\": COUNT({argument})}}}}")
        }
        AggregateKind::Min => format!(
            "{{\"item\": {call}, \"item2\": {{\"min\": {call}, \"count\": COUNT({argument})}}}}"
        ),
        AggregateKind::Max => format!(
            "{{\"item\": {call}, \"item2\": {{\"max\": {call}, \"count\": COUNT({argument})}}}}"
        ),
    }
}

/// A JSON object key as query text.
fn key(name: &str) -> String {
    serde_json::to_string(name).unwrap_or_default()
}

/// The clauses of a rewritten query, each written on its own line as the service does.
struct Clauses<'q> {
    query: &'q Query,
    head: String,
    projection: String,
    filter: Option<String>,
    order_by: bool,
    tail: Option<String>,
}

impl Clauses<'_> {
    fn render(&self) -> String {
        let query = self.query;
        let mut text = format!("SELECT {}{}", self.head, self.projection);
        if let Some(from) = &query.from {
            let _ = write!(text, "\nFROM {}", from.source);
            for join in &from.joins {
                let _ = write!(text, " JOIN {join}");
            }
        }
        if let Some(filter) = &self.filter {
            let _ = write!(text, "\nWHERE {filter}");
        }
        if !query.group_by.is_empty() {
            let keys: Vec<String> = query.group_by.iter().map(ToString::to_string).collect();
            let _ = write!(text, "\nGROUP BY {}", keys.join(", "));
        }
        if self.order_by && !query.order_by.is_empty() {
            let _ = write!(text, "\nORDER BY {}", order_by_list(&query.order_by));
        }
        if let Some(tail) = &self.tail {
            let _ = write!(text, "\n{tail}");
        }
        text
    }
}

fn order_by_list(keys: &[SortKey]) -> String {
    keys.iter()
        .map(|key| {
            // A vector score's direction follows from its distance function; the service
            // writes none and refuses one written.
            if key.descending && !vectors::is_vector_distance(&key.expr) {
                format!("{} DESC", key.expr)
            } else {
                key.expr.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The projection as written (`*`, `VALUE e`, or the items with their aliases).
fn projection_text(query: &Query) -> String {
    match &query.select.projection {
        Projection::Star => "*".into(),
        Projection::Value(expr) => format!("VALUE {expr}"),
        Projection::Items(items) => items
            .iter()
            .map(|item| match &item.alias {
                Some(alias) => format!("{} AS {alias}", item.expr),
                None => item.expr.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// `OFFSET 0 LIMIT offset+limit` when the query has OFFSET/LIMIT: each range returns enough for
/// the client to skip and take.
fn widened_offset_limit(plan: &QueryPlan) -> Option<String> {
    plan.limit
        .map(|limit| format!("OFFSET 0 LIMIT {}", plan.offset.saturating_add(limit)))
}

/// An ORDER BY query with `_rid`, the order-by items and the projection as the payload. TOP and
/// OFFSET/LIMIT stay (widened) unless DISTINCT needs every row.
pub fn order_by(query: &Query, plan: &QueryPlan) -> Result<String, QueryError> {
    let Some(from) = &query.from else {
        return Ok(String::new());
    };
    let alias = source_alias(&from.source)?;
    let items: Vec<String> = query
        .order_by
        .iter()
        .map(|key| format!("{{\"item\": {}}}", key.expr))
        .collect();
    let (payload, filter) = payload_and_filter(query, plan, alias);
    let distinct = query.select.distinct;
    let head = match (&query.select.top, distinct) {
        (Some(top), false) => format!("TOP {top} "),
        _ => String::new(),
    };
    Ok(Clauses {
        query,
        head,
        projection: format!(
            "{alias}._rid, [{}] AS orderByItems, {payload} AS payload",
            items.join(", ")
        ),
        filter: Some(filter),
        order_by: true,
        tail: if distinct {
            None
        } else {
            widened_offset_limit(plan)
        },
    }
    .render())
}

/// The projection as the payload of an ORDER BY row, and the filter with the SDK's
/// placeholder (which the SDKs replace with `true`) and, under `SELECT VALUE`, only rows whose
/// value is defined.
fn payload_and_filter(query: &Query, plan: &QueryPlan, alias: &str) -> (String, String) {
    let placeholder = format!("({ORDER_BY_FILTER_PLACEHOLDER})");
    let mut filter = match &query.filter {
        Some(filter) => format!("({filter} AND {placeholder})"),
        None => placeholder,
    };
    let payload = match &query.select.projection {
        Projection::Star => alias.to_string(),
        Projection::Value(expr) => {
            filter = format!("({filter} AND IS_DEFINED({expr}))");
            expr.to_string()
        }
        Projection::Items(items) => object_text(
            items
                .iter()
                .zip(&plan.output_names)
                .map(|(item, name)| (name.as_str(), item.expr.to_string())),
        ),
    };
    (payload, filter)
}

/// One component query of a hybrid search: each range's best `top` rows by the component's
/// score `scores[component]`, with every component's score beside the payload, as the SDKs'
/// hybrid pipelines read them (`_rid`, `orderByItems`, `payload.payload`,
/// `payload.componentScores`).
pub fn ranked_component(
    query: &Query,
    plan: &QueryPlan,
    top: Option<u64>,
    scores: &[String],
    component: usize,
    descending: bool,
) -> Result<String, QueryError> {
    let Some(from) = &query.from else {
        return Ok(String::new());
    };
    let alias = source_alias(&from.source)?;
    let (payload, filter) = payload_and_filter(query, plan, alias);
    let score = scores.get(component).cloned().unwrap_or_default();
    Ok(Clauses {
        query,
        head: top.map_or(String::new(), |top| format!("TOP {top} ")),
        projection: format!(
            "{alias}._rid, [{{\"item\": {score}}}] AS orderByItems, {{\"payload\": {payload}, \"componentScores\": [{}]}} AS payload",
            scores.join(", ")
        ),
        filter: Some(filter),
        order_by: false,
        tail: Some(format!(
            "ORDER BY {score} {}",
            if descending { "DESC" } else { "ASC" }
        )),
    }
    .render())
}

fn object_text<'a>(members: impl Iterator<Item = (&'a str, String)>) -> String {
    let members: Vec<String> = members
        .map(|(name, value)| format!("{}: {value}", key(name)))
        .collect();
    format!("{{{}}}", members.join(", "))
}

/// What an aggregate or GROUP BY query's projection contributes to the plan.
pub struct Grouping {
    pub aggregates: Vec<AggregateKind>,
    pub aliases: Vec<String>,
    pub alias_aggregates: Vec<(String, Option<AggregateKind>)>,
    pub rewritten: String,
}

/// An aggregate or GROUP BY query: per range, the group keys and each aggregate's partial.
/// TOP and OFFSET/LIMIT apply on the client to the combined groups, so they are dropped.
pub fn grouping(query: &Query, plan: &QueryPlan) -> Result<Grouping, QueryError> {
    let mut aggregates = Vec::new();
    let mut aliases = Vec::new();
    let mut alias_aggregates = Vec::new();
    let payload = match &query.select.projection {
        Projection::Star => "*".to_string(),
        Projection::Value(expr) => match aggregate_of(expr)? {
            Some(kind) => {
                aggregates.push(kind);
                format!("[{}]", partial(expr, kind))
            }
            None => expr.to_string(),
        },
        Projection::Items(items) => {
            let mut members = Vec::new();
            for (item, name) in items.iter().zip(&plan.output_names) {
                let kind = aggregate_of(&item.expr)?;
                aliases.push(name.clone());
                alias_aggregates.push((name.clone(), kind));
                let value = match kind {
                    Some(kind) => partial(&item.expr, kind),
                    None => item.expr.to_string(),
                };
                members.push((name.as_str(), value));
            }
            object_text(members.into_iter())
        }
    };
    let value = matches!(query.select.projection, Projection::Value(_));
    let projection = if query.group_by.is_empty() {
        if value {
            format!("VALUE {payload}")
        } else {
            format!("{payload} AS payload")
        }
    } else {
        let keys: Vec<String> = query
            .group_by
            .iter()
            .map(|expr| format!("{{\"item\": {expr}}}"))
            .collect();
        format!(
            "[{}] AS groupByItems, {payload} AS payload",
            keys.join(", ")
        )
    };
    let rewritten = Clauses {
        query,
        head: String::new(),
        projection,
        filter: query.filter.as_ref().map(ToString::to_string),
        order_by: true,
        tail: None,
    }
    .render();
    Ok(Grouping {
        aggregates,
        aliases,
        alias_aggregates,
        rewritten,
    })
}

/// A query the ranges run as written but without TOP (and with OFFSET/LIMIT widened, or dropped
/// under DISTINCT): the client applies them after merging.
pub fn without_top(query: &Query, plan: &QueryPlan) -> String {
    let distinct = query.select.distinct;
    Clauses {
        query,
        head: if distinct {
            "DISTINCT ".into()
        } else {
            String::new()
        },
        projection: projection_text(query),
        filter: query.filter.as_ref().map(ToString::to_string),
        order_by: true,
        tail: if distinct {
            None
        } else {
            widened_offset_limit(plan)
        },
    }
    .render()
}
