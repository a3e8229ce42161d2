//! The client plan: the service's `partitionedQueryExecutionInfo` for a query, which tells the
//! SDKs what to run on each partition key range (`rewrittenQuery`, `queryRanges`) and what to do
//! on the client (merge ORDER BY streams, combine aggregate partials, merge groups, deduplicate,
//! apply TOP and OFFSET/LIMIT).
//!
//! Also here: which features a plan needs, so a client that does not declare them in
//! `x-ms-cosmos-supported-query-features` is refused as the service refuses it. The texts the
//! ranges run are in `client_rewrite`.

use serde_json::{json, Map, Value};

use crate::ast::{Projection, Query};
use crate::client_rewrite::{self, AggregateKind};
use crate::error::QueryError;
use crate::hybrid_plan::{hybrid_plan, HybridPlan};
use crate::plan::{self, QueryPlan};
use crate::prepared::{pinned_values, Prepared};
use crate::ranking;
use crate::vectors;

/// How the client deduplicates: not at all, consecutive equal results (ORDER BY), or by hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DistinctType {
    None,
    Ordered,
    Unordered,
}

impl DistinctType {
    pub fn name(self) -> &'static str {
        match self {
            DistinctType::None => "None",
            DistinctType::Ordered => "Ordered",
            DistinctType::Unordered => "Unordered",
        }
    }
}

/// A range of effective partition keys, as the plan writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryRange {
    pub min: String,
    pub max: String,
    pub min_inclusive: bool,
    pub max_inclusive: bool,
}

impl QueryRange {
    /// Every effective partition key: `["", "FF")`.
    pub fn full() -> QueryRange {
        QueryRange {
            min: String::new(),
            max: "FF".into(),
            min_inclusive: true,
            max_inclusive: false,
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "min": self.min,
            "max": self.max,
            "isMinInclusive": self.min_inclusive,
            "isMaxInclusive": self.max_inclusive,
        })
    }
}

/// The service's plan of one query.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientPlan {
    pub distinct: DistinctType,
    pub top: Option<u64>,
    pub offset: Option<u64>,
    pub limit: Option<u64>,
    /// One entry per ORDER BY key: true for descending.
    pub order_by_descending: Vec<bool>,
    pub order_by_expressions: Vec<String>,
    pub group_by_expressions: Vec<String>,
    pub group_by_aliases: Vec<String>,
    /// The aggregate of a `SELECT VALUE` aggregate query (at most one).
    pub aggregates: Vec<AggregateKind>,
    /// For a non-VALUE aggregate or GROUP BY query: each output name and its aggregate, if any.
    pub alias_aggregates: Vec<(String, Option<AggregateKind>)>,
    /// What each range runs; empty means the query as sent.
    pub rewritten_query: String,
    pub has_select_value: bool,
    /// Whether an ORDER BY key is a vector search score, which the SDKs merge by collecting
    /// every range's rows before answering (and refuse without TOP or LIMIT).
    pub has_non_streaming_order_by: bool,
    pub query_ranges: Vec<QueryRange>,
    /// For an ORDER BY RANK query: the hybrid search pipeline the SDKs run instead.
    pub hybrid: Option<HybridPlan>,
}

/// The features of `x-ms-cosmos-supported-query-features`, in the order the service lists them.
const FEATURES: [&str; 15] = [
    "Aggregate",
    "CompositeAggregate",
    "Distinct",
    "GroupBy",
    "MultipleAggregates",
    "MultipleOrderBy",
    "OffsetAndLimit",
    "OrderBy",
    "Top",
    "NonValueAggregate",
    "CountIf",
    "ListAndSetAggregate",
    "NonStreamingOrderBy",
    "HybridSearch",
    "WeightedRankFusion",
];

impl ClientPlan {
    /// Whether the client has work to do beyond concatenating the ranges' pages.
    pub fn needs_client_pipeline(&self) -> bool {
        self.distinct != DistinctType::None
            || self.top.is_some()
            || self.offset.is_some()
            || self.limit.is_some()
            || !self.order_by_descending.is_empty()
            || !self.aggregates.is_empty()
            || !self.group_by_expressions.is_empty()
            || !self.alias_aggregates.is_empty()
            || self.hybrid.is_some()
    }

    /// False when the query pins one partition key, so one range answers it whole.
    pub fn fans_out(&self) -> bool {
        !matches!(
            self.query_ranges.as_slice(),
            [range] if range.min == range.max && range.min_inclusive && range.max_inclusive
        )
    }

    fn has_aggregates(&self) -> bool {
        !self.aggregates.is_empty() || self.alias_aggregates.iter().any(|(_, kind)| kind.is_some())
    }

    /// Every aggregate the plan's ranges return partials of, with VALUE or under an alias.
    fn aggregate_kinds(&self) -> impl Iterator<Item = AggregateKind> + Clone + '_ {
        self.aggregates
            .iter()
            .copied()
            .chain(self.alias_aggregates.iter().filter_map(|(_, kind)| *kind))
    }

    /// The features this plan needs that `supported` (a comma list) lacks, in the service's order.
    pub fn missing_features(&self, supported: &str) -> Vec<&'static str> {
        let declared: Vec<&str> = supported.split(',').map(str::trim).collect();
        let mut needed = Vec::new();
        if self.has_aggregates() {
            let counted = self
                .alias_aggregates
                .iter()
                .filter(|(_, kind)| kind.is_some())
                .count();
            if self.aggregates.len() == 1 || counted == 1 {
                needed.push(if self.has_select_value {
                    "Aggregate"
                } else {
                    "NonValueAggregate"
                });
            } else {
                needed.push("NonValueAggregate");
                needed.push("MultipleAggregates");
            }
        }
        let kinds = self.aggregate_kinds();
        if kinds.clone().any(|kind| kind == AggregateKind::CountIf) {
            needed.push("CountIf");
        }
        if kinds
            .clone()
            .any(|kind| matches!(kind, AggregateKind::MakeList | AggregateKind::MakeSet))
        {
            needed.push("ListAndSetAggregate");
        }
        if self.distinct != DistinctType::None {
            needed.push("Distinct");
        }
        if !self.group_by_expressions.is_empty() {
            needed.push("GroupBy");
        }
        if self.offset.is_some() || self.limit.is_some() {
            needed.push("OffsetAndLimit");
        }
        match self.order_by_descending.len() {
            0 => {}
            1 => needed.push("OrderBy"),
            _ => needed.push("MultipleOrderBy"),
        }
        if self.top.is_some() {
            needed.push("Top");
        }
        if self.has_non_streaming_order_by {
            needed.push("NonStreamingOrderBy");
        }
        if let Some(hybrid) = &self.hybrid {
            needed.push("HybridSearch");
            if !hybrid.weights.is_empty() {
                needed.push("WeightedRankFusion");
            }
        }
        FEATURES
            .into_iter()
            .filter(|feature| needed.contains(feature) && !declared.contains(feature))
            .collect()
    }

    /// The service's refusal when the client does not support every feature the plan needs.
    pub fn unsupported_message(&self, supported: &str) -> Option<String> {
        let missing = self.missing_features(supported);
        if missing.is_empty() {
            return None;
        }
        let mut message = String::from(
            "Query contains 1 or more unsupported features. Upgrade your SDK to a version that does support the requested features:",
        );
        for feature in missing {
            message.push_str(&format!(
                "\nQuery contained {feature}, which the calling client does not support."
            ));
        }
        Some(message)
    }

    /// The plan as the service writes it (`partitionedQueryExecutionInfoVersion` 2): a hybrid
    /// search has `hybridSearchQueryInfo` in place of `queryInfo`.
    pub fn to_json(&self) -> Value {
        let ranges: Vec<Value> = self.query_ranges.iter().map(QueryRange::to_json).collect();
        if let Some(hybrid) = &self.hybrid {
            return json!({
                "partitionedQueryExecutionInfoVersion": 2,
                "hybridSearchQueryInfo": hybrid.to_json(),
                "queryRanges": ranges,
            });
        }
        let alias_map: Map<String, Value> = self
            .alias_aggregates
            .iter()
            .map(|(alias, kind)| {
                (
                    alias.clone(),
                    kind.map_or(Value::Null, |kind| Value::from(kind.name())),
                )
            })
            .collect();
        json!({
            "partitionedQueryExecutionInfoVersion": 2,
            "queryInfo": {
                "distinctType": self.distinct.name(),
                "top": self.top,
                "offset": self.offset,
                "limit": self.limit,
                "orderBy": self.order_by_descending.iter()
                    .map(|descending| if *descending { "Descending" } else { "Ascending" })
                    .collect::<Vec<_>>(),
                "orderByExpressions": self.order_by_expressions,
                "groupByExpressions": self.group_by_expressions,
                "groupByAliases": self.group_by_aliases,
                "aggregates": self.aggregates.iter().map(|kind| kind.name()).collect::<Vec<_>>(),
                "groupByAliasToAggregateType": alias_map,
                "rewrittenQuery": self.rewritten_query,
                "hasSelectValue": self.has_select_value,
                "dCountInfo": null,
                "hasNonStreamingOrderBy": self.has_non_streaming_order_by,
            },
            "queryRanges": ranges,
        })
    }
}

impl Prepared {
    /// The service's plan of this query over a container whose partition key has
    /// `partition_key_paths`. When the WHERE clause pins every path, `effective_range` maps the
    /// pinned values to their effective partition key range (a point: min == max), and one range
    /// answers the query whole; otherwise the plan covers every range.
    pub fn client_plan(
        &self,
        partition_key_paths: &[Vec<String>],
        effective_range: &dyn Fn(&[Value]) -> (String, String),
    ) -> Result<ClientPlan, QueryError> {
        let inner = &self.inner;
        let parameters = &inner.context.parameters;
        let analyzed;
        let (query, plan) = match &inner.written {
            None => (&inner.query, &inner.plan),
            Some(written) => {
                // The plan describes the text as written, checked as the client sent it.
                plan::validate(
                    written,
                    parameters,
                    inner.context.udfs.as_deref(),
                    &[],
                    true,
                )?;
                analyzed = plan::analyze(written, parameters)?;
                (written, &analyzed)
            }
        };
        let pinned = if partition_key_paths.is_empty() {
            None
        } else {
            pinned_values(query, parameters, partition_key_paths)
        };
        let query_ranges = match &pinned {
            Some(values) => vec![QueryRange::pinned(effective_range(values))],
            None => vec![QueryRange::full()],
        };
        let mut client = ClientPlan::as_written(query, plan, query_ranges);
        if let Some(ranking) = ranking::ranking(query, parameters)? {
            client.hybrid = Some(hybrid_plan(query, plan, &ranking)?);
        } else if query.from.is_none() {
            // Nothing is read: any range answers it as written.
            client.top = None;
            client.offset = None;
            client.limit = None;
        } else if pinned.is_some() && !plan.grouped && !query.select.distinct {
            // One partition streams the query as written; only TOP is left for the client.
            client.offset = None;
            client.limit = None;
        } else if plan.grouped {
            client.merge_groups(query, plan)?;
        } else if !query.order_by.is_empty() {
            client.merge_ordered(query, plan)?;
        } else {
            client.deduplicate_and_page(query, plan);
        }
        Ok(client)
    }
}

impl QueryRange {
    /// The range of a pinned partition key, from its effective `(min, max)`: one point when
    /// they are equal.
    fn pinned((min, max): (String, String)) -> QueryRange {
        let point = min == max;
        QueryRange {
            min,
            max,
            min_inclusive: true,
            max_inclusive: point,
        }
    }
}

impl ClientPlan {
    /// The plan that leaves the query as written on each range and applies TOP and
    /// OFFSET/LIMIT on the client.
    fn as_written(query: &Query, plan: &QueryPlan, query_ranges: Vec<QueryRange>) -> ClientPlan {
        ClientPlan {
            distinct: DistinctType::None,
            top: plan.top,
            offset: query.offset_limit.as_ref().map(|_| plan.offset),
            limit: plan.limit,
            order_by_descending: Vec::new(),
            order_by_expressions: Vec::new(),
            group_by_expressions: Vec::new(),
            group_by_aliases: Vec::new(),
            aggregates: Vec::new(),
            alias_aggregates: Vec::new(),
            rewritten_query: String::new(),
            has_select_value: matches!(query.select.projection, Projection::Value(_)),
            has_non_streaming_order_by: query
                .order_by
                .iter()
                .any(|key| vectors::is_vector_distance(&key.expr)),
            query_ranges,
            hybrid: None,
        }
    }

    /// GROUP BY or aggregates: each range returns partial groups that the client merges.
    fn merge_groups(&mut self, query: &Query, plan: &QueryPlan) -> Result<(), QueryError> {
        let grouping = client_rewrite::grouping(query, plan)?;
        self.group_by_expressions = query.group_by.iter().map(ToString::to_string).collect();
        self.aggregates = grouping.aggregates;
        self.group_by_aliases = grouping.aliases;
        self.alias_aggregates = grouping.alias_aggregates;
        self.rewritten_query = grouping.rewritten;
        if query.select.distinct {
            self.distinct = DistinctType::Unordered;
        }
        Ok(())
    }

    /// ORDER BY: each range returns its rows with their sort values, merged by the client.
    fn merge_ordered(&mut self, query: &Query, plan: &QueryPlan) -> Result<(), QueryError> {
        self.order_by_descending = query.order_by.iter().map(|key| key.descending).collect();
        self.order_by_expressions = query
            .order_by
            .iter()
            .map(|key| key.expr.to_string())
            .collect();
        self.distinct = if query.select.distinct {
            DistinctType::Ordered
        } else {
            DistinctType::None
        };
        self.rewritten_query = client_rewrite::order_by(query, plan)?;
        Ok(())
    }

    /// Neither grouped nor ordered: the client deduplicates DISTINCT results by hash; with
    /// LIMIT, or TOP under DISTINCT, the ranges run the query without them and the client
    /// applies them after merging.
    fn deduplicate_and_page(&mut self, query: &Query, plan: &QueryPlan) {
        if query.select.distinct {
            self.distinct = DistinctType::Unordered;
        }
        if (query.select.distinct && plan.top.is_some()) || plan.limit.is_some() {
            self.rewritten_query = client_rewrite::without_top(query, plan);
        }
    }
}
