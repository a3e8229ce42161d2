//! The indexing policy shapes queries as on the service: an ORDER BY that no index serves is
//! refused with the service's message wherever the query runs (one partition, one range, the
//! SDKs' rewritten per-range query, the whole container) but not by the query plan; undefined
//! sort values are left out under a wildcard path and kept under an explicit path or a composite;
//! ties come back in document (`_rid`) order in the first key's direction, across pages; and a
//! policy is checked when a container is created or replaced.

use crate::common::{config, engine_on_store, page, pk, resolved, upsert_document};
use lethedb_engine::{Engine, EngineError, ErrorCode, ManualClock, QueryOutcome, QueryRequest};
use lethedb_query::ORDER_BY_FILTER_PLACEHOLDER;
use lethedb_storage::MemoryStore;
use serde_json::{json, Value};
use std::sync::Arc;

const NO_COMPOSITE: &str =
    "The order by query does not have a corresponding composite index that it can be served from.";
const EXCLUDED: &str = "The index path corresponding to the specified order-by item is excluded.";

/// An engine whose container `c` (partition key `/pk`, three ranges) has `policy`.
async fn engine_with(policy: Value) -> Engine {
    let config = lethedb_engine::EngineConfig {
        partition_key_ranges: Some(3),
        ..config()
    };
    engine_on_store(
        Arc::new(MemoryStore::new()),
        Arc::new(ManualClock::new(1_800_000_000_000)),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "indexingPolicy": policy}),
        config,
    )
    .await
}

/// One page of `text` on container `c` across partitions, with `scope` applied to the request.
async fn query(
    engine: &Engine,
    text: &str,
    scope: impl FnOnce(&mut QueryRequest),
) -> Result<QueryOutcome, EngineError> {
    let mut request = QueryRequest {
        text: text.into(),
        enable_cross_partition: true,
        ..QueryRequest::default()
    };
    scope(&mut request);
    engine.query_items(&resolved(engine, "c"), &request).await
}

/// Every row of `text` in one partition, page by page of `page_size`.
async fn rows(engine: &Engine, text: &str, page_size: usize) -> Vec<Value> {
    let mut results = Vec::new();
    let mut continuation: Option<String> = None;
    loop {
        let resume = continuation.clone();
        let outcome = query(engine, text, |request| {
            request.partition_key = pk("p");
            request.page_items_max = Some(page_size);
            request.continuation = resume;
        })
        .await
        .unwrap_or_else(|error| panic!("{text}: {error}"));
        let page = page(outcome);
        results.extend(page.items);
        match page.continuation {
            Some(token) => continuation = Some(token),
            None => return results,
        }
    }
}

fn assert_refused(outcome: Result<QueryOutcome, EngineError>, message: &str, case: &str) {
    match outcome {
        Err(error) => {
            assert_eq!(
                error.code,
                ErrorCode::OrderByWithoutIndex,
                "{case}: {error}"
            );
            assert_eq!(error.message(), message, "{case}");
        }
        Ok(_) => panic!("{case}: the query ran"),
    }
}

#[tokio::test]
async fn several_keys_need_a_composite_wherever_the_query_runs() {
    let engine = engine_with(json!({})).await;
    upsert_document(&engine, json!({"id": "1", "pk": "p", "a": 1, "b": 2})).await;
    let text = "SELECT * FROM c ORDER BY c.a, c.b";
    // Across ranges the gateway answers first, with the plan the SDK runs per range.
    let across = query(&engine, text, |_| {}).await;
    assert!(
        matches!(across, Ok(QueryOutcome::NeedsClientPipeline(_))),
        "{across:?}"
    );
    // A container without a partition key runs the query whole.
    let unpartitioned = engine_on_store(
        Arc::new(MemoryStore::new()),
        Arc::new(ManualClock::new(0)),
        json!({"id": "c"}),
        config(),
    )
    .await;
    upsert_document(&unpartitioned, json!({"id": "1", "a": 1, "b": 2})).await;
    assert_refused(
        query(&unpartitioned, text, |_| {}).await,
        NO_COMPOSITE,
        "container",
    );
    let pinned = "SELECT * FROM c WHERE c.pk = 'p' ORDER BY c.a, c.b";
    assert_refused(query(&engine, pinned, |_| {}).await, NO_COMPOSITE, "pinned");
    let in_partition = query(&engine, text, |request| request.partition_key = pk("p")).await;
    assert_refused(in_partition, NO_COMPOSITE, "partition");
    let system = "SELECT * FROM c ORDER BY c.id DESC, c._ts DESC";
    let system_keys = query(&engine, system, |request| request.partition_key = pk("p")).await;
    assert_refused(system_keys, NO_COMPOSITE, "id and _ts");
    // The gateway's plan does not look at the index; each range's rewritten query does.
    let container = resolved(&engine, "c");
    let plan = engine
        .query_plan(
            &container,
            &QueryRequest {
                text: text.into(),
                ..QueryRequest::default()
            },
        )
        .await
        .expect("the plan is served");
    assert!(plan.rewritten_query.contains("orderByItems"), "{plan:?}");
    let rewritten = plan
        .rewritten_query
        .replace(ORDER_BY_FILTER_PLACEHOLDER, "true");
    for range in ["0", "1", "2"] {
        let outcome = query(&engine, &rewritten, |request| {
            request.range_id = Some(range.into());
        })
        .await;
        assert_refused(outcome, NO_COMPOSITE, &format!("range {range}"));
    }
}

/// An aggregate without GROUP BY answers one row, so the service serves it under an ORDER BY of
/// several keys without a composite index (the JavaScript SDK's `SELECT VALUE AVG(r.key) FROM r
/// ... ORDER BY r.key, r.field` test); the SDK's rewritten per-range query runs too.
#[tokio::test]
async fn a_whole_aggregate_needs_no_index_for_its_order_by() {
    let engine = engine_with(json!({})).await;
    for (id, a) in [("1", 1), ("2", 3)] {
        upsert_document(&engine, json!({"id": id, "pk": "p", "a": a, "b": 2})).await;
    }
    let text = "SELECT VALUE AVG(c.a) FROM c WHERE IS_NUMBER(c.a) ORDER BY c.a, c.b";
    let in_partition = query(&engine, text, |request| request.partition_key = pk("p"))
        .await
        .expect("a whole aggregate is served");
    assert_eq!(page(in_partition).items, vec![json!(2)]);
    let container = resolved(&engine, "c");
    let plan = engine
        .query_plan(
            &container,
            &QueryRequest {
                text: text.into(),
                ..QueryRequest::default()
            },
        )
        .await
        .expect("the plan is served");
    for range in ["0", "1", "2"] {
        let outcome = query(&engine, &plan.rewritten_query, |request| {
            request.range_id = Some(range.into());
        })
        .await;
        assert!(outcome.is_ok(), "range {range}: {outcome:?}");
    }
    // A grouped query still needs its index.
    let grouped = "SELECT c.a, COUNT(1) AS n FROM c GROUP BY c.a ORDER BY c.a, c.b";
    let outcome = query(&engine, grouped, |request| request.partition_key = pk("p")).await;
    assert!(outcome.is_err(), "{outcome:?}");
}

#[tokio::test]
async fn a_composite_serves_its_directions_and_their_inverse_only() {
    let engine = engine_with(json!({"compositeIndexes": [
        [{"path": "/a", "order": "ascending"}, {"path": "/b", "order": "descending"}]]}))
    .await;
    for (id, a, b) in [("1", 1, 1), ("2", 1, 2), ("3", 0, 5)] {
        upsert_document(&engine, json!({"id": id, "pk": "p", "a": a, "b": b})).await;
    }
    let ids =
        |rows: Vec<Value>| -> Vec<Value> { rows.iter().map(|row| row["id"].clone()).collect() };
    let served = rows(&engine, "SELECT c.id FROM c ORDER BY c.a, c.b DESC", 1).await;
    assert_eq!(ids(served), [json!("3"), json!("2"), json!("1")]);
    let inverted = rows(&engine, "SELECT c.id FROM c ORDER BY c.a DESC, c.b ASC", 2).await;
    assert_eq!(ids(inverted), [json!("1"), json!("2"), json!("3")]);
    for text in [
        "SELECT c.id FROM c ORDER BY c.a, c.b",
        "SELECT c.id FROM c ORDER BY c.b DESC, c.a",
    ] {
        let outcome = query(&engine, text, |request| request.partition_key = pk("p")).await;
        assert_refused(outcome, NO_COMPOSITE, text);
    }
}

#[tokio::test]
async fn one_key_on_an_excluded_path_is_refused() {
    let engine = engine_with(json!({"includedPaths": [{"path": "/*"}],
        "excludedPaths": [{"path": "/secret/*"}, {"path": "/hidden/?"}]}))
    .await;
    upsert_document(
        &engine,
        json!({"id": "1", "pk": "p", "secret": {"x": 1}, "hidden": 2}),
    )
    .await;
    for text in [
        "SELECT * FROM c ORDER BY c.secret.x",
        "SELECT * FROM c ORDER BY c.hidden DESC",
    ] {
        let outcome = query(&engine, text, |request| request.partition_key = pk("p")).await;
        assert_refused(outcome, EXCLUDED, text);
    }
    // id and _ts are indexed whatever the paths say; a filter on an excluded path scans.
    let everything_excluded = engine_with(json!({"excludedPaths": [{"path": "/*"}]})).await;
    upsert_document(&everything_excluded, json!({"id": "1", "pk": "p", "n": 1})).await;
    assert_eq!(
        rows(
            &everything_excluded,
            "SELECT VALUE c.id FROM c ORDER BY c._ts",
            5
        )
        .await
        .len(),
        1
    );
    let filtered = rows(
        &everything_excluded,
        "SELECT VALUE c.id FROM c WHERE c.n = 1 ORDER BY c.id",
        5,
    )
    .await;
    assert_eq!(filtered, [json!("1")]);
    let none = engine_with(json!({"indexingMode": "none", "automatic": false})).await;
    let outcome = query(&none, "SELECT * FROM c ORDER BY c.id", |request| {
        request.partition_key = pk("p");
    })
    .await;
    assert_refused(outcome, EXCLUDED, "indexing mode none");
}

/// Items `u1`..`u3` without `x`, `d1` with `x` 2 and `d2` with `x` 1, in partition `p`.
async fn with_and_without_x(engine: &Engine) {
    for id in ["u1", "u2", "u3"] {
        upsert_document(engine, json!({"id": id, "pk": "p", "y": 0})).await;
    }
    upsert_document(engine, json!({"id": "d1", "pk": "p", "x": 2, "y": 1})).await;
    upsert_document(engine, json!({"id": "d2", "pk": "p", "x": 1, "y": 1})).await;
}

#[tokio::test]
async fn undefined_sort_values_follow_the_policy() {
    let wildcard = engine_with(json!({})).await;
    with_and_without_x(&wildcard).await;
    let ascending = rows(&wildcard, "SELECT VALUE c.id FROM c ORDER BY c.x", 1).await;
    assert_eq!(ascending, [json!("d2"), json!("d1")]);
    let count = rows(&wildcard, "SELECT VALUE COUNT(1) FROM c ORDER BY c.x", 10).await;
    assert_eq!(
        count,
        [json!(2)],
        "an aggregate counts what the ORDER BY returns"
    );
    let explicit = engine_with(json!({"includedPaths": [{"path": "/*"}, {"path": "/x/?"}]})).await;
    with_and_without_x(&explicit).await;
    let first = rows(&explicit, "SELECT VALUE c.id FROM c ORDER BY c.x", 2).await;
    assert_eq!(
        first,
        [
            json!("u1"),
            json!("u2"),
            json!("u3"),
            json!("d2"),
            json!("d1")
        ]
    );
    let last = rows(&explicit, "SELECT VALUE c.id FROM c ORDER BY c.x DESC", 2).await;
    assert_eq!(
        last,
        [
            json!("d1"),
            json!("d2"),
            json!("u3"),
            json!("u2"),
            json!("u1")
        ]
    );
    let composite = engine_with(json!({"compositeIndexes": [
        [{"path": "/y", "order": "ascending"}, {"path": "/x", "order": "ascending"}]]}))
    .await;
    with_and_without_x(&composite).await;
    let kept = rows(&composite, "SELECT VALUE c.id FROM c ORDER BY c.y, c.x", 1).await;
    assert_eq!(
        kept,
        [
            json!("u1"),
            json!("u2"),
            json!("u3"),
            json!("d2"),
            json!("d1")
        ]
    );
}

#[tokio::test]
async fn ties_come_back_in_document_order_in_the_first_key_direction() {
    let engine = engine_with(json!({})).await;
    // Created c, a, b: their document numbers run 1, 2, 3 while their keys run a, b, c. A
    // replace keeps the number.
    for id in ["c", "a", "b"] {
        upsert_document(&engine, json!({"id": id, "pk": "p", "x": 1})).await;
    }
    upsert_document(
        &engine,
        json!({"id": "a", "pk": "p", "x": 1, "replaced": true}),
    )
    .await;
    for page_size in [1, 2, 10] {
        let ascending = rows(&engine, "SELECT VALUE c.id FROM c ORDER BY c.x", page_size).await;
        assert_eq!(
            ascending,
            [json!("c"), json!("a"), json!("b")],
            "page size {page_size}"
        );
        let descending = rows(
            &engine,
            "SELECT VALUE c.id FROM c ORDER BY c.x DESC",
            page_size,
        )
        .await;
        assert_eq!(
            descending,
            [json!("b"), json!("a"), json!("c")],
            "page size {page_size}"
        );
    }
}

async fn create_container(engine: &Engine, policy: Value) -> Result<(), EngineError> {
    let body = json!({"id": "other", "partitionKey": {"paths": ["/pk"]}, "indexingPolicy": policy});
    engine.create_container("db", body, None).await.map(|_| ())
}

#[tokio::test]
async fn a_policy_is_checked_as_the_service_checks_it() {
    let engine = engine_with(json!({})).await;
    let path_message = |path: &str, position: usize| {
        format!("The indexing path '{path}' could not be accepted, failed near position '{position}'. Please ensure that the path is a valid path. Common errors include invalid characters or absence of quotes around labels.")
    };
    let refusals = [
        (json!({"includedPaths": [{"path": "/expiration"}]}), path_message("/expiration", 11)),
        (json!({"excludedPaths": [{"path": "/items/*/name/?"}]}), path_message("/items/*/name/?", 7)),
        (json!({"compositeIndexes": [[{"path": "/a/*"}, {"path": "/b"}]]}), path_message("/a/*", 3)),
        (json!({"includedPaths": [{"path": "/name/?"}]}), "The special mandatory indexing path \"/\" is not provided in any of the path type sets. Please provide this path in one of the sets.".to_string()),
    ];
    for (policy, message) in refusals {
        let error = create_container(&engine, policy.clone())
            .await
            .expect_err("refused");
        assert_eq!(error.code, ErrorCode::InvalidIndexingPolicy, "{policy}");
        assert_eq!(error.message(), message, "{policy}");
    }
    for policy in [
        json!({"compositeIndexes": [[{"path": "/a"}]]}),
        json!({"compositeIndexes": [[{"path": "/a"}, {"path": "/b", "order": "sideways"}]]}),
        json!({"includedPaths": [{"path": 5}]}),
    ] {
        let error = create_container(&engine, policy.clone())
            .await
            .expect_err("refused");
        assert_eq!(error.code, ErrorCode::InvalidIndexingPolicy, "{policy}");
    }
    let replaced = engine
        .replace_container(
            "db",
            "c",
            json!({"id": "c", "partitionKey": {"paths": ["/pk"]},
            "indexingPolicy": {"includedPaths": [{"path": "/x"}]}}),
            None,
        )
        .await;
    assert_eq!(
        replaced.err().map(|error| error.code),
        Some(ErrorCode::InvalidIndexingPolicy)
    );
    for policy in [
        json!({"includedPaths": [{"path": "/", "indexes": []}]}),
        json!({"includedPaths": [{"path": "/*"}, {"path": "/events/[]/{name, category}/?"}]}),
        json!({"compositeIndexes": [[{"path": "/_ts"}, {"path": "/_etag", "order": "Descending"}]]}),
    ] {
        create_container(&engine, policy.clone())
            .await
            .unwrap_or_else(|error| panic!("{policy}: {error}"));
        engine
            .delete_container("db", "other")
            .await
            .expect("delete");
    }
    create_container(&engine, json!({"excludedPaths": [{"path": "/big/*"}]}))
        .await
        .expect("create");
    let stored = engine.read_container("db", "other").expect("read");
    assert_eq!(
        stored.resource["indexingPolicy"]["includedPaths"],
        json!([{"path": "/*"}])
    );
}
