//! The hybrid search part of the client plan (`hybridSearchQueryInfo`) for an `ORDER BY RANK`
//! query across ranges, in the shape the SDKs' hybrid pipelines read: a global statistics
//! query each range answers with its document count and, per full-text component, its total
//! word count and each term's hit count; one component query per scoring function, whose
//! placeholders the SDK fills with the summed statistics; the weights, skip and take.
//!
//! The internal functions the texts call (`_FullTextWordCount`, `_FullTextScore` with the
//! statistics written in, `_VectorScore`) are the service's names, from the .NET and
//! JavaScript SDKs' unit tests; what they compute here is `functions/text.rs`'s and
//! `functions/vectors.rs`'s.

use serde_json::{json, Value};

use crate::ast::{Expr, Query};
use crate::builtins::Builtin;
use crate::client_rewrite;
use crate::error::QueryError;
use crate::plan::QueryPlan;
use crate::ranking::{Component, Ranking};

/// The placeholder of the summed document count.
pub const TOTAL_DOCUMENT_COUNT: &str =
    "{documentdb-formattablehybridsearchquery-totaldocumentcount}";
/// How many rows of each component each range returns, per row the query takes: the service's
/// plan asks 120 for `TOP 10` (seen in the .NET SDK's unit test); the factor is inferred.
const COMPONENT_ROWS_PER_TAKEN: u64 = 12;
/// The fewest rows of each component a range returns.
const COMPONENT_ROWS_MIN: u64 = 120;

/// One component query of the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentPlan {
    pub top: Option<u64>,
    pub descending: bool,
    pub order_by_expression: String,
    pub rewritten_query: String,
}

/// The plan's `hybridSearchQueryInfo`.
#[derive(Clone, Debug, PartialEq)]
pub struct HybridPlan {
    pub global_statistics_query: String,
    pub components: Vec<ComponentPlan>,
    /// The absolute weight of each component; empty when RRF was given none.
    pub weights: Vec<f64>,
    pub skip: Option<u64>,
    pub take: Option<u64>,
    pub requires_global_statistics: bool,
}

/// The hybrid plan of `query`, which ranks by `ranking`.
pub(crate) fn hybrid_plan(
    query: &Query,
    plan: &QueryPlan,
    ranking: &Ranking,
) -> Result<HybridPlan, QueryError> {
    let skip = query.offset_limit.as_ref().map(|_| plan.offset);
    let take = plan.top.or(plan.limit);
    let top = take.map(|take| {
        (skip.unwrap_or(0).saturating_add(take))
            .saturating_mul(COMPONENT_ROWS_PER_TAKEN)
            .max(COMPONENT_ROWS_MIN)
    });
    let scores: Vec<String> = ranking
        .components
        .iter()
        .enumerate()
        .map(|(index, component)| score_text(index, component))
        .collect();
    let components = scores
        .iter()
        .zip(&ranking.descending)
        .enumerate()
        .map(|(index, (score, descending))| {
            Ok(ComponentPlan {
                top,
                descending: *descending,
                order_by_expression: score.clone(),
                rewritten_query: client_rewrite::ranked_component(
                    query,
                    plan,
                    top,
                    &scores,
                    index,
                    *descending,
                )?,
            })
        })
        .collect::<Result<Vec<_>, QueryError>>()?;
    Ok(HybridPlan {
        global_statistics_query: statistics_query(query, ranking),
        components,
        weights: if ranking.weighted {
            ranking.weights.clone()
        } else {
            Vec::new()
        },
        skip,
        take,
        requires_global_statistics: ranking
            .components
            .iter()
            .any(|component| matches!(component, Component::FullText { .. })),
    })
}

/// A component's score as the component queries write it: `_FullTextScore` with the
/// statistics' placeholders (numbered by the component), or `_VectorScore` with the
/// `VectorDistance` call's arguments.
fn score_text(index: usize, component: &Component) -> String {
    match component {
        Component::FullText { path, terms } => format!(
            "_FullTextScore({path}, {}, {TOTAL_DOCUMENT_COUNT}, {{documentdb-formattablehybridsearchquery-totalwordcount-{index}}}, {{documentdb-formattablehybridsearchquery-hitcountsarray-{index}}})",
            Value::from(terms.clone())
        ),
        Component::Vector { call, .. } => match call {
            Expr::Call { args, .. } => Expr::Call {
                name: "_VectorScore".into(),
                args: args.clone(),
                builtin: Some(Builtin::VectorScore),
            }
            .to_string(),
            other => other.to_string(),
        },
    }
}

/// The global statistics query: the range's document count and, per full-text component in
/// order, the total word count of its path and how many documents hold each term.
fn statistics_query(query: &Query, ranking: &Ranking) -> String {
    let statistics: Vec<String> = ranking
        .components
        .iter()
        .filter_map(|component| match component {
            Component::FullText { path, terms } => {
                let hits: Vec<String> = terms
                    .iter()
                    .map(|term| {
                        format!(
                            "COUNTIF(FullTextContains({path}, {}))",
                            Value::from(term.as_str())
                        )
                    })
                    .collect();
                Some(format!(
                    "{{\"totalWordCount\": SUM(_FullTextWordCount({path})), \"hitCounts\": [{}]}}",
                    hits.join(", ")
                ))
            }
            Component::Vector { .. } => None,
        })
        .collect();
    let source = query
        .from
        .as_ref()
        .map_or_else(|| "c".to_string(), |from| from.source.to_string());
    format!(
        "SELECT COUNT(1) AS documentCount, [{}] AS fullTextStatistics\nFROM {source}",
        statistics.join(", ")
    )
}

impl HybridPlan {
    /// `hybridSearchQueryInfo` as the service writes it.
    pub fn to_json(&self) -> Value {
        let components: Vec<Value> = self
            .components
            .iter()
            .map(|component| {
                json!({
                    "distinctType": "None",
                    "top": component.top,
                    "offset": null,
                    "limit": null,
                    "orderBy": [if component.descending { "Descending" } else { "Ascending" }],
                    "orderByExpressions": [component.order_by_expression],
                    "groupByExpressions": [],
                    "groupByAliases": [],
                    "aggregates": [],
                    "groupByAliasToAggregateType": {},
                    "rewrittenQuery": component.rewritten_query,
                    "hasSelectValue": false,
                    "dCountInfo": null,
                    "hasNonStreamingOrderBy": true,
                })
            })
            .collect();
        let mut info = json!({
            "globalStatisticsQuery": self.global_statistics_query,
            "componentQueryInfos": components,
            "componentWithoutPayloadQueryInfos": [],
            "projectionQueryInfo": null,
            "skip": self.skip,
            "take": self.take,
            "requiresGlobalStatistics": self.requires_global_statistics,
        });
        if !self.weights.is_empty() {
            info["componentWeights"] = json!(self.weights);
        }
        info
    }
}
