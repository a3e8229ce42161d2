//! The SDKs' client pipelines over HTTP: the query-plan endpoint, the refusal of features a
//! client does not declare, the 400/1004 answer (with the plan) to a cross-partition query that
//! needs the pipeline, and the per-range rewritten queries the SDKs then send.

use super::*;

const JS_FEATURES: &str = "NonValueAggregate,Aggregate,Distinct,MultipleOrderBy,OffsetAndLimit,OrderBy,Top,CompositeAggregate,GroupBy,MultipleAggregates,NonStreamingOrderBy,ListAndSetAggregate,CountIf,HybridSearch,WeightedRankFusion,HybridSearchSkipOrderByRewrite";
const PYTHON_FEATURES: &str = "Aggregate,CompositeAggregate,Distinct,MultipleOrderBy,OffsetAndLimit,OrderBy,Top,NonStreamingOrderBy,HybridSearch,CountIf,WeightedRankFusion";

impl Server {
    async fn plan(&self, text: &str, features: Option<&str>) -> Answer {
        let mut headers = vec![
            ("content-type", "application/query+json"),
            ("x-ms-cosmos-is-query-plan-request", "True"),
        ];
        if let Some(features) = features {
            headers.push(("x-ms-cosmos-supported-query-features", features));
        }
        self.send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"query": text})),
            &headers,
        )
        .await
    }

    async fn with_items(&self) {
        self.setup(partitioned()).await;
        for (i, v) in [3, 1, 4, 1, 5, 9, 2, 6].into_iter().enumerate() {
            let created = self
                .create_item(json!({"id": format!("i{i}"), "pk": format!("p{}", i % 3), "v": v}))
                .await;
            assert_eq!(created.status, StatusCode::CREATED);
        }
    }
}

#[tokio::test]
async fn the_plan_describes_the_client_pipeline() {
    let server = Server::new();
    server.with_items().await;
    let plan = server
        .plan("SELECT * FROM c ORDER BY c.v DESC", Some(JS_FEATURES))
        .await;
    assert_eq!(plan.status, StatusCode::OK, "{}", plan.body);
    let info = &plan.body["queryInfo"];
    assert_eq!(info["orderBy"], json!(["Descending"]));
    assert_eq!(info["orderByExpressions"], json!(["c.v"]));
    assert_eq!(
        info["rewrittenQuery"],
        json!("SELECT c._rid, [{\"item\": c.v}] AS orderByItems, c AS payload\nFROM c\nWHERE ({documentdb-formattableorderbyquery-filter})\nORDER BY c.v DESC")
    );
    assert_eq!(
        plan.body["queryRanges"],
        json!([{"min": "", "max": "FF", "isMinInclusive": true, "isMaxInclusive": false}])
    );
    let aggregate = server
        .plan("SELECT VALUE AVG(c.v) FROM c", Some(PYTHON_FEATURES))
        .await;
    assert_eq!(
        aggregate.body["queryInfo"]["aggregates"],
        json!(["Average"])
    );
    assert_eq!(aggregate.body["queryInfo"]["hasSelectValue"], json!(true));
    // A pinned partition key is one point range: its effective partition key.
    let pinned = server
        .plan("SELECT * FROM c WHERE c.pk = 'p1' ORDER BY c.v", Some(""))
        .await;
    assert_eq!(pinned.status, StatusCode::OK, "{}", pinned.body);
    let range = &pinned.body["queryRanges"][0];
    assert_eq!(range["min"], range["max"]);
    assert_eq!(range["isMaxInclusive"], json!(true));
    assert_ne!(range["min"], json!(""));
}

#[tokio::test]
async fn a_plan_needing_undeclared_features_is_refused() {
    let server = Server::new();
    server.with_items().await;
    let refused = server
        .plan(
            "SELECT c.pk, COUNT(1) AS n FROM c GROUP BY c.pk",
            Some(PYTHON_FEATURES),
        )
        .await;
    check_error(
        &refused,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Query contains 1 or more unsupported features. Upgrade your SDK to a version that does support the requested features:\nQuery contained GroupBy, which the calling client does not support.\nQuery contained NonValueAggregate, which the calling client does not support.",
    );
    assert_eq!(refused.header("x-ms-substatus"), "0");
    let no_list = server.plan("SELECT VALUE COUNT(1) FROM c", None).await;
    check_error(
        &no_list,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Query contained Aggregate, which the calling client does not support.",
    );
    let composition = server
        .plan("SELECT VALUE COUNT(1) + 1 FROM c", Some(JS_FEATURES))
        .await;
    check_error(
        &composition,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Compositions of aggregates and other expressions are not allowed.",
    );
}

#[tokio::test]
async fn a_cross_partition_query_needing_the_pipeline_answers_with_the_plan() {
    let server = Server::new();
    server.with_items().await;
    let answer = server.query("SELECT * FROM c ORDER BY c.v", &[]).await;
    check_error(
        &answer,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "The provided cross partition query can not be directly served by the gateway.",
    );
    assert_eq!(answer.header("x-ms-substatus"), "1004");
    let info: Value = serde_json::from_str(
        answer.body["additionalErrorInfo"]
            .as_str()
            .unwrap_or_default(),
    )
    .expect("plan");
    assert_eq!(info["queryInfo"]["orderBy"], json!(["Ascending"]));
    // Without the cross-partition header one range refuses the query across it, with the
    // plan, as several ranges do.
    let no_header = &[("content-type", "application/query+json")];
    let single = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"query": "SELECT TOP 1 * FROM c"})),
            no_header,
        )
        .await;
    check_error(
        &single,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Cross partition query is required",
    );
    assert!(single.body["additionalErrorInfo"].is_string());
    let several = Server::new();
    several
        .send("POST", "/dbs", ("dbs", ""), Some(json!({"id": "db"})), &[])
        .await;
    let created = several
        .send(
            "POST",
            "/dbs/db/colls",
            ("colls", "dbs/db"),
            Some(partitioned()),
            &[("x-ms-offer-throughput", "50000")],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let disabled = several
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"query": "SELECT TOP 1 * FROM c"})),
            no_header,
        )
        .await;
    check_error(
        &disabled,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Cross partition query is required",
    );
    assert!(disabled.body["additionalErrorInfo"].is_string());
    // Plain queries, a partition key header, or a WHERE that pins the key run whole here.
    let plain = server.query("SELECT VALUE c.v FROM c", &[]).await;
    assert_eq!(plain.status, StatusCode::OK);
    let keyed = server
        .query(
            "SELECT VALUE COUNT(1) FROM c",
            &[("x-ms-documentdb-partitionkey", "[\"p0\"]")],
        )
        .await;
    assert_eq!(keyed.body["Documents"], json!([3]));
    let pinned = server
        .query(
            "SELECT VALUE c.v FROM c WHERE c.pk = 'p1' ORDER BY c.v",
            &[],
        )
        .await;
    assert_eq!(pinned.body["Documents"], json!([1, 5, 6]));
}

#[tokio::test]
async fn each_range_runs_the_rewritten_queries() {
    let server = Server::new();
    server.with_items().await;
    let range = [("x-ms-documentdb-partitionkeyrangeid", "0")];
    let ordered = server
        .query(
            "SELECT c._rid, [{\"item\": c.v}] AS orderByItems, {\"v\": c.v} AS payload\nFROM c\nWHERE (true)\nORDER BY c.v DESC",
            &[range[0], ("x-ms-max-item-count", "3")],
        )
        .await;
    assert_eq!(ordered.status, StatusCode::OK, "{}", ordered.body);
    let documents = ordered.body["Documents"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(documents.len(), 3);
    assert!(documents[0]["_rid"].is_string());
    assert_eq!(documents[0]["orderByItems"], json!([{"item": 9}]));
    assert_eq!(documents[2]["payload"], json!({"v": 5}));
    assert!(!ordered.header("x-ms-continuation").is_empty());
    let aggregates = server
        .query(
            "SELECT VALUE [{\"item\": MIN(c.v), \"item2\": {\"min\": MIN(c.v), \"count\": COUNT(c.v)}}]\nFROM c",
            &range,
        )
        .await;
    assert_eq!(
        aggregates.body["Documents"],
        json!([[{"item": 1, "item2": {"min": 1, "count": 8}}]])
    );
    let empty = server
        .query(
            "SELECT VALUE [{\"item\": {\"sum\": SUM(c.v), \"count\": COUNT(c.v)}}]\nFROM c\nWHERE false",
            &range,
        )
        .await;
    assert_eq!(
        empty.body["Documents"],
        json!([[{"item": {"sum": 0, "count": 0}}]])
    );
    let groups = server
        .query(
            "SELECT [{\"item\": c.pk}] AS groupByItems, {\"pk\": c.pk, \"n\": {\"item\": COUNT(1)}} AS payload\nFROM c\nGROUP BY c.pk",
            &range,
        )
        .await;
    let groups = groups.body["Documents"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(groups.len(), 3);
    assert_eq!(groups[0]["payload"]["n"], json!({"item": 3}));
}
