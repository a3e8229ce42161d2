//! The client plan of each query class, against the shapes the service gives the SDKs (the
//! rewritten queries of the .NET SDK's query-plan baselines, and what the Python and JavaScript
//! SDKs' pipelines read), and the refusal of features a client does not declare.

use lethedb_query::{prepare, prepare_with_computed, ClientPlan, ComputedProperties, QueryError};
use serde_json::{json, Value};

const PYTHON_FEATURES: &str = "Aggregate,CompositeAggregate,Distinct,MultipleOrderBy,OffsetAndLimit,OrderBy,Top,NonStreamingOrderBy,HybridSearch,CountIf,WeightedRankFusion";
const JS_FEATURES: &str = "NonValueAggregate,Aggregate,Distinct,MultipleOrderBy,OffsetAndLimit,OrderBy,Top,CompositeAggregate,GroupBy,MultipleAggregates,NonStreamingOrderBy,ListAndSetAggregate,CountIf,HybridSearch,WeightedRankFusion,HybridSearchSkipOrderByRewrite";

fn point(values: &[Value]) -> (String, String) {
    let text = Value::Array(values.to_vec()).to_string();
    (text.clone(), text)
}

fn plan_with(text: &str, parameters: &[(String, Value)]) -> Result<ClientPlan, QueryError> {
    prepare(text, parameters, 0)?.client_plan(&[vec!["key".to_string()]], &point)
}

fn plan(text: &str) -> Result<ClientPlan, QueryError> {
    plan_with(text, &[])
}

/// The rewritten query on one line, as the baselines are compared.
fn rewritten(plan: &ClientPlan) -> String {
    plan.rewritten_query.replace('\n', " ")
}

#[test]
fn a_plain_query_needs_no_client_pipeline() -> Result<(), QueryError> {
    let plan = plan("SELECT * FROM c WHERE c.blah = 5")?;
    assert!(!plan.needs_client_pipeline());
    assert!(plan.fans_out());
    assert_eq!(plan.rewritten_query, "");
    let json = plan.to_json();
    assert_eq!(json["partitionedQueryExecutionInfoVersion"], 2);
    assert_eq!(
        json["queryRanges"],
        json!([{"min": "", "max": "FF", "isMinInclusive": true, "isMaxInclusive": false}])
    );
    assert_eq!(json["queryInfo"]["distinctType"], "None");
    assert_eq!(json["queryInfo"]["dCountInfo"], Value::Null);
    assert_eq!(json["queryInfo"]["hasNonStreamingOrderBy"], false);
    Ok(())
}

#[test]
fn order_by_is_rewritten_with_rid_order_by_items_and_payload() -> Result<(), QueryError> {
    let plan = plan("SELECT * FROM Root r ORDER BY r.blah")?;
    assert_eq!(
        rewritten(&plan),
        "SELECT r._rid, [{\"item\": r.blah}] AS orderByItems, r AS payload FROM Root AS r WHERE ({documentdb-formattableorderbyquery-filter}) ORDER BY r.blah"
    );
    let json = plan.to_json();
    assert_eq!(json["queryInfo"]["orderBy"], json!(["Ascending"]));
    assert_eq!(json["queryInfo"]["orderByExpressions"], json!(["r.blah"]));
    assert_eq!(json["queryInfo"]["hasSelectValue"], false);

    let plan = self::plan("SELECT TOP 70 r[\"a\"] FROM Root r ORDER BY r.key DESC")?;
    assert_eq!(
        rewritten(&plan),
        "SELECT TOP 70 r._rid, [{\"item\": r.key}] AS orderByItems, {\"a\": r[\"a\"]} AS payload FROM Root AS r WHERE ({documentdb-formattableorderbyquery-filter}) ORDER BY r.key DESC"
    );
    assert_eq!(plan.top, Some(70));
    assert_eq!(
        plan.to_json()["queryInfo"]["orderBy"],
        json!(["Descending"])
    );
    Ok(())
}

#[test]
fn order_by_of_a_value_filters_out_undefined_payloads() -> Result<(), QueryError> {
    let plan = plan("SELECT VALUE c.blah FROM Root c ORDER BY c.key")?;
    assert_eq!(
        rewritten(&plan),
        "SELECT c._rid, [{\"item\": c.key}] AS orderByItems, c.blah AS payload FROM Root AS c WHERE (({documentdb-formattableorderbyquery-filter}) AND IS_DEFINED(c.blah)) ORDER BY c.key"
    );
    assert!(plan.has_select_value);
    Ok(())
}

#[test]
fn multiple_order_by_keys_and_a_filter() -> Result<(), QueryError> {
    let plan = plan(
        "SELECT c.property1, c.property2 FROM c WHERE c.property4 = 'asdf' ORDER BY c.orderByField1, c.orderByField2 DESC",
    )?;
    assert_eq!(
        rewritten(&plan),
        "SELECT c._rid, [{\"item\": c.orderByField1}, {\"item\": c.orderByField2}] AS orderByItems, {\"property1\": c.property1, \"property2\": c.property2} AS payload FROM c WHERE ((c.property4 = \"asdf\") AND ({documentdb-formattableorderbyquery-filter})) ORDER BY c.orderByField1, c.orderByField2 DESC"
    );
    assert_eq!(plan.missing_features(PYTHON_FEATURES), Vec::<&str>::new());
    assert_eq!(plan.missing_features("OrderBy"), vec!["MultipleOrderBy"]);
    Ok(())
}

#[test]
fn value_aggregates_are_rewritten_to_partials() -> Result<(), QueryError> {
    let cases = [
        ("SELECT VALUE COUNT(1) FROM c", "SELECT VALUE [{\"item\": COUNT(1)}] FROM c", "Count"),
        ("SELECT VALUE SUM(c.blah) FROM c", "SELECT VALUE [{\"item\": SUM(c.blah)}] FROM c", "Sum"),
        (
            "SELECT VALUE AVG(c.blah) FROM c",
            "SELECT VALUE [{\"item\": {\"sum\": SUM(c.blah), \"count\": COUNT(c.blah)}}] FROM c",
            "Average",
        ),
        (
            "SELECT VALUE MIN(c.blah) FROM c",
            "SELECT VALUE [{\"item\": MIN(c.blah), \"item2\": {\"min\": MIN(c.blah), \"count\": COUNT(c.blah)}}] FROM c",
            "Min",
        ),
        (
            "SELECT VALUE MAX(c.blah + 1) FROM c",
            "SELECT VALUE [{\"item\": MAX((c.blah + 1)), \"item2\": {\"max\": MAX((c.blah + 1)), \"count\": COUNT((c.blah + 1))}}] FROM c",
            "Max",
        ),
    ];
    for (text, expected, kind) in cases {
        let plan = plan(text)?;
        assert_eq!(rewritten(&plan), expected, "{text}");
        assert_eq!(
            plan.to_json()["queryInfo"]["aggregates"],
            json!([kind]),
            "{text}"
        );
        assert!(plan.has_select_value);
        assert!(plan.missing_features(PYTHON_FEATURES).is_empty());
    }
    Ok(())
}

#[test]
fn list_set_and_conditional_counts_are_rewritten_to_partials() -> Result<(), QueryError> {
    let cases = [
        (
            "SELECT VALUE MAKELIST(c.id) FROM c",
            "MAKELIST(c.id)",
            "MakeList",
            Some("ListAndSetAggregate"),
        ),
        (
            "SELECT VALUE MakeSet(c.id) FROM c",
            "MakeSet(c.id)",
            "MakeSet",
            Some("ListAndSetAggregate"),
        ),
        (
            "SELECT VALUE COUNTIF(c.valid) FROM c",
            "COUNTIF(c.valid)",
            "CountIf",
            None,
        ),
    ];
    for (text, call, kind, python_lacks) in cases {
        let plan = plan(text)?;
        assert_eq!(
            rewritten(&plan),
            format!("SELECT VALUE [{{\"item\": {call}}}] FROM c"),
            "{text}"
        );
        assert_eq!(plan.to_json()["queryInfo"]["aggregates"], json!([kind]));
        assert_eq!(
            plan.missing_features(PYTHON_FEATURES),
            Vec::from_iter(python_lacks)
        );
        assert!(plan.missing_features(JS_FEATURES).is_empty(), "{text}");
        assert_eq!(
            plan.missing_features("Aggregate"),
            [kind_feature(kind)],
            "{text}: a client that declares only Aggregate lacks the aggregate's own feature"
        );
    }
    let grouped = plan("SELECT c.zip, COUNTIF(c.valid) AS valid_count FROM c GROUP BY c.zip")?;
    assert_eq!(
        rewritten(&grouped),
        "SELECT [{\"item\": c.zip}] AS groupByItems, {\"zip\": c.zip, \"valid_count\": {\"item\": COUNTIF(c.valid)}} AS payload FROM c GROUP BY c.zip"
    );
    assert_eq!(
        grouped.to_json()["queryInfo"]["groupByAliasToAggregateType"],
        json!({"zip": null, "valid_count": "CountIf"})
    );
    Ok(())
}

fn kind_feature(kind: &str) -> &'static str {
    if kind == "CountIf" {
        "CountIf"
    } else {
        "ListAndSetAggregate"
    }
}

#[test]
fn an_aggregate_with_order_by_keeps_the_order_by_and_drops_top() -> Result<(), QueryError> {
    let plan = plan("SELECT TOP 5 VALUE AVG(c.age + 1) FROM Root r JOIN c IN r.children WHERE c.age > 1 ORDER BY c.name")?;
    assert_eq!(
        rewritten(&plan),
        "SELECT VALUE [{\"item\": {\"sum\": SUM((c.age + 1)), \"count\": COUNT((c.age + 1))}}] FROM Root AS r JOIN c IN r.children WHERE (c.age > 1) ORDER BY c.name"
    );
    assert!(plan.order_by_descending.is_empty());
    assert_eq!(plan.top, Some(5));
    Ok(())
}

#[test]
fn non_value_aggregates_are_group_by_without_keys() -> Result<(), QueryError> {
    let plan = plan("SELECT MIN(c.blah) AS min_blah, COUNT(1) FROM c")?;
    assert_eq!(
        rewritten(&plan),
        "SELECT {\"min_blah\": {\"item\": MIN(c.blah), \"item2\": {\"min\": MIN(c.blah), \"count\": COUNT(c.blah)}}, \"$1\": {\"item\": COUNT(1)}} AS payload FROM c"
    );
    let info = &plan.to_json()["queryInfo"];
    assert_eq!(info["aggregates"], json!([]));
    assert_eq!(info["groupByAliases"], json!(["min_blah", "$1"]));
    assert_eq!(
        info["groupByAliasToAggregateType"],
        json!({"min_blah": "Min", "$1": "Count"})
    );
    assert_eq!(
        plan.missing_features(PYTHON_FEATURES),
        vec!["MultipleAggregates", "NonValueAggregate"]
    );
    assert!(plan.missing_features(JS_FEATURES).is_empty());
    let single = self::plan("SELECT COUNT(1) FROM c")?;
    assert_eq!(
        single.unsupported_message(PYTHON_FEATURES).as_deref(),
        Some("Query contains 1 or more unsupported features. Upgrade your SDK to a version that does support the requested features:\nQuery contained NonValueAggregate, which the calling client does not support.")
    );
    Ok(())
}

#[test]
fn group_by_is_rewritten_to_group_by_items_and_partials() -> Result<(), QueryError> {
    let plan = plan("SELECT c.name, AVG(c.age) FROM c GROUP BY c.name")?;
    assert_eq!(
        rewritten(&plan),
        "SELECT [{\"item\": c.name}] AS groupByItems, {\"name\": c.name, \"$1\": {\"item\": {\"sum\": SUM(c.age), \"count\": COUNT(c.age)}}} AS payload FROM c GROUP BY c.name"
    );
    let info = &plan.to_json()["queryInfo"];
    assert_eq!(info["groupByExpressions"], json!(["c.name"]));
    assert_eq!(
        info["groupByAliasToAggregateType"],
        json!({"name": null, "$1": "Average"})
    );
    assert_eq!(
        plan.missing_features(PYTHON_FEATURES),
        vec!["GroupBy", "NonValueAggregate"]
    );

    let value = self::plan("SELECT VALUE COUNT(1) FROM c GROUP BY c.age")?;
    assert_eq!(
        rewritten(&value),
        "SELECT [{\"item\": c.age}] AS groupByItems, [{\"item\": COUNT(1)}] AS payload FROM c GROUP BY c.age"
    );
    assert_eq!(value.to_json()["queryInfo"]["aggregates"], json!(["Count"]));
    let keys = self::plan("SELECT TOP 5 VALUE c.name FROM c GROUP BY c.name")?;
    assert_eq!(
        rewritten(&keys),
        "SELECT [{\"item\": c.name}] AS groupByItems, c.name AS payload FROM c GROUP BY c.name"
    );
    assert_eq!(keys.top, Some(5));
    Ok(())
}

#[test]
fn compositions_of_aggregates_are_refused() {
    for text in [
        "SELECT VALUE {'sum': SUM(r)} FROM r",
        "SELECT VALUE [SUM(r)] FROM r",
        "SELECT VALUE FLOOR(AVG(r)) FROM r",
        "SELECT c.name, ABS(AVG(c.age)) AS a FROM c GROUP BY c.name",
    ] {
        let error = plan(text).map(|_| ()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("Compositions of aggregates and other expressions are not allowed."),
            "{text}: {error}"
        );
    }
}

#[test]
fn distinct_is_unordered_without_order_by_and_ordered_with_it() -> Result<(), QueryError> {
    let plain = plan("SELECT DISTINCT c.blah FROM c")?;
    assert_eq!(plain.to_json()["queryInfo"]["distinctType"], "Unordered");
    assert_eq!(plain.rewritten_query, "");
    let top = plan("SELECT DISTINCT TOP 5 VALUE c.name FROM c")?;
    assert_eq!(rewritten(&top), "SELECT DISTINCT VALUE c.name FROM c");
    assert_eq!(top.top, Some(5));
    let ordered = plan("SELECT DISTINCT VALUE c.blah FROM c ORDER BY c.blah")?;
    assert_eq!(ordered.to_json()["queryInfo"]["distinctType"], "Ordered");
    assert_eq!(
        rewritten(&ordered),
        "SELECT c._rid, [{\"item\": c.blah}] AS orderByItems, c.blah AS payload FROM c WHERE (({documentdb-formattableorderbyquery-filter}) AND IS_DEFINED(c.blah)) ORDER BY c.blah"
    );
    assert_eq!(plain.missing_features("OrderBy"), vec!["Distinct"]);
    Ok(())
}

#[test]
fn offset_limit_is_widened_per_range_and_top_stays_as_written() -> Result<(), QueryError> {
    let plan = plan("SELECT * FROM c WHERE c.blah = 5 OFFSET 1 LIMIT 2")?;
    assert_eq!(
        rewritten(&plan),
        "SELECT * FROM c WHERE (c.blah = 5) OFFSET 0 LIMIT 3"
    );
    assert_eq!((plan.offset, plan.limit), (Some(1), Some(2)));
    let parameters = [
        ("@o".to_string(), json!(42)),
        ("@l".to_string(), json!(1337)),
    ];
    let bound = plan_with("SELECT * FROM c OFFSET @o LIMIT @l", &parameters)?;
    assert_eq!(rewritten(&bound), "SELECT * FROM c OFFSET 0 LIMIT 1379");
    let ordered = self::plan("SELECT c.id FROM c ORDER BY c.id OFFSET 2 LIMIT 3")?;
    assert!(ordered
        .rewritten_query
        .ends_with("ORDER BY c.id\nOFFSET 0 LIMIT 5"));
    let top = self::plan("SELECT TOP 5 * FROM c")?;
    assert_eq!(top.top, Some(5));
    assert_eq!(top.rewritten_query, "");
    assert_eq!(top.missing_features("OrderBy"), vec!["Top"]);
    Ok(())
}

#[test]
fn a_pinned_partition_key_is_one_point_range() -> Result<(), QueryError> {
    let plan = plan("SELECT * FROM c WHERE c.key = 5 ORDER BY c.x OFFSET 1 LIMIT 2")?;
    assert!(!plan.fans_out());
    assert!(!plan.needs_client_pipeline());
    assert_eq!(
        plan.to_json()["queryRanges"],
        json!([{"min": "[5]", "max": "[5]", "isMinInclusive": true, "isMaxInclusive": true}])
    );
    let aggregate = self::plan("SELECT VALUE COUNT(1) FROM c WHERE c.key = 5")?;
    assert!(!aggregate.fans_out());
    assert_eq!(
        rewritten(&aggregate),
        "SELECT VALUE [{\"item\": COUNT(1)}] FROM c WHERE (c.key = 5)"
    );
    Ok(())
}

#[test]
fn every_rewritten_query_is_one_this_crate_runs() -> Result<(), QueryError> {
    for text in [
        "SELECT * FROM Root r ORDER BY r.blah",
        "SELECT TOP 3 c.a, c.b AS x FROM c WHERE c.a > 1 ORDER BY c.a DESC, c.b",
        "SELECT VALUE c.blah FROM c ORDER BY c.key",
        "SELECT DISTINCT VALUE c.blah FROM c ORDER BY c.blah",
        "SELECT VALUE AVG(c.x) FROM c WHERE c.y ORDER BY c.z",
        "SELECT VALUE MIN(c.x) FROM c",
        "SELECT MAX(c.x) AS m, COUNT(1) FROM c",
        "SELECT c.name, COUNT(1) AS n, MIN(c.age), AVG(c.age) FROM c GROUP BY c.name",
        "SELECT VALUE SUM(c.age) FROM c GROUP BY c.name",
        "SELECT DISTINCT TOP 2 c.x FROM c",
        "SELECT * FROM c OFFSET 1 LIMIT 2",
    ] {
        let plan = plan(text)?;
        let rewritten = plan
            .rewritten_query
            .replace(lethedb_query::ORDER_BY_FILTER_PLACEHOLDER, "true");
        assert!(!rewritten.is_empty(), "{text}");
        prepare(&rewritten, &[], 0)
            .map_err(|error| QueryError::Semantic(format!("{text} became {rewritten}: {error}")))?;
    }
    Ok(())
}

#[test]
fn computed_properties_leave_the_plan_of_the_written_text() -> Result<(), QueryError> {
    let computed = ComputedProperties::parse(&json!([
        {"name": "cp_lower", "query": "SELECT VALUE LOWER(c.name) FROM c"},
        {"name": "key", "query": "SELECT VALUE c.other FROM c"},
    ]))
    .map_err(QueryError::Semantic)?;
    let paths = [vec!["key".to_string()]];
    for text in [
        "SELECT c.id, c.cp_lower FROM c WHERE c.n > 5 ORDER BY c.cp_lower",
        "SELECT VALUE COUNT(1) FROM c WHERE c.key = 5",
        "SELECT c.cp_lower, COUNT(1) AS n FROM c GROUP BY c.cp_lower",
    ] {
        // The query runs with the computed values substituted, but its plan (the rewritten
        // text each range runs, the pinned partition key) is that of the text as written.
        let substituted = prepare_with_computed(
            text,
            &[],
            0,
            &computed,
            &lethedb_query::VectorPolicy::default(),
            None,
        )?;
        let written = prepare(text, &[], 0)?;
        assert_eq!(
            substituted.client_plan(&paths, &point)?,
            written.client_plan(&paths, &point)?,
            "{text}"
        );
    }
    Ok(())
}

#[test]
fn a_vector_order_by_is_non_streaming_and_sorts_by_its_distance_function() -> Result<(), QueryError>
{
    let text = "SELECT TOP 10 c._ts FROM c ORDER BY VectorDistance([0.5, 0.1], c.vector1, true, {dataType:'Float32', distanceFunction:'Euclidean'})";
    let euclidean = plan(text)?;
    let info = &euclidean.to_json()["queryInfo"];
    assert_eq!(info["hasNonStreamingOrderBy"], json!(true));
    assert_eq!(info["orderBy"], json!(["Ascending"]));
    assert_eq!(info["top"], json!(10));
    assert_eq!(
        rewritten(&euclidean),
        "SELECT TOP 10 c._rid, [{\"item\": VectorDistance([0.5, 0.1], c.vector1, true, {\"dataType\": \"Float32\", \"distanceFunction\": \"Euclidean\"})}] AS orderByItems, {\"_ts\": c._ts} AS payload FROM c WHERE ({documentdb-formattableorderbyquery-filter}) ORDER BY VectorDistance([0.5, 0.1], c.vector1, true, {\"dataType\": \"Float32\", \"distanceFunction\": \"Euclidean\"})"
    );
    assert!(euclidean.missing_features(PYTHON_FEATURES).is_empty());
    assert_eq!(
        euclidean.missing_features("OrderBy,Top"),
        vec!["NonStreamingOrderBy"]
    );
    for function in ["Cosine", "DotProduct"] {
        let text = format!("SELECT TOP 3 * FROM c ORDER BY VectorDistance(c.v, [1, 2], false, {{distanceFunction: '{function}'}})");
        assert_eq!(
            plan(&text)?.to_json()["queryInfo"]["orderBy"],
            json!(["Descending"]),
            "{function}"
        );
    }
    // Without a distance function the container's policy decides (cosine without one).
    let unnamed = "SELECT TOP 3 * FROM c ORDER BY VectorDistance(c.v, [1, 2])";
    assert_eq!(
        plan(unnamed)?.to_json()["queryInfo"]["orderBy"],
        json!(["Descending"])
    );
    let policy = lethedb_query::VectorPolicy::from_container(
        &json!({"vectorEmbeddingPolicy": {"vectorEmbeddings": [
        {"path": "/v", "dataType": "float32", "dimensions": 2, "distanceFunction": "euclidean"}]}}),
    );
    let prepared = prepare_with_computed(unnamed, &[], 0, &Default::default(), &policy, None)?;
    let by_policy = prepared.client_plan(&[vec!["pk".to_string()]], &point)?;
    assert_eq!(
        by_policy.to_json()["queryInfo"]["orderBy"],
        json!(["Ascending"])
    );
    let text = rewritten(&by_policy);
    assert!(
        text.ends_with("ORDER BY VectorDistance(c.v, [1, 2])"),
        "{text}"
    );
    Ok(())
}
