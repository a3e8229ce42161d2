//! One page of a query, prepared once on the scan thread: its metrics are measured (counts and
//! sizes exact for a known data set, every phase timed inside the total), its index utilization
//! comes from the same preparation, and a whole-container query that the SDK's pipeline must run
//! comes back as the plan instead of a page.

use crate::common::{engine_with_container, page, pk, resolved};
use lethedb_engine::{ManualClock, QueryOutcome, QueryRequest, WriteMode};
use serde_json::json;
use std::sync::Arc;

/// Items `i1` to `i4` in partition `p`, with `n` from 1 to 4; returns their stored bytes.
async fn four_items(engine: &lethedb_engine::Engine) -> u64 {
    let mut stored_bytes = 0;
    for n in 1..=4 {
        let body = json!({"id": format!("i{n}"), "pk": "p", "n": n});
        stored_bytes += body.to_string().len() as u64;
        engine
            .write_item(
                &resolved(engine, "c"),
                WriteMode::Create,
                pk("p"),
                body,
                None,
            )
            .await
            .expect("create");
    }
    stored_bytes
}

#[tokio::test]
async fn a_page_is_measured_when_asked() {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let engine = engine_with_container(
        clock,
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
    )
    .await;
    let stored_bytes = four_items(&engine).await;
    let container = engine.read_container("db", "c").expect("container");
    let mut request = QueryRequest {
        text: "SELECT c.id FROM c WHERE c.n >= 3".into(),
        enable_cross_partition: true,
        ..QueryRequest::default()
    };
    let plain = page(
        engine
            .query_items(&container, &request)
            .await
            .expect("query"),
    );
    assert!(plain.metrics.is_none() && plain.index_utilization.is_none());
    request.populate_query_metrics = true;
    request.populate_index_metrics = true;
    let measured = page(
        engine
            .query_items(&container, &request)
            .await
            .expect("query"),
    );
    assert_eq!(measured.items, [json!({"id": "i3"}), json!({"id": "i4"})]);
    let metrics = measured.metrics.expect("metrics");
    assert_eq!(metrics.documents_retrieved, 4);
    assert_eq!(metrics.retrieved_document_bytes, stored_bytes);
    assert_eq!(metrics.documents_matched, 2);
    assert_eq!(metrics.documents_output, 2);
    let output_bytes = r#"{"id":"i3"}{"id":"i4"}"#.len() as u64;
    assert_eq!(metrics.output_document_bytes, output_bytes);
    assert_eq!(metrics.index_utilization_ratio(), 0.5);
    let parts =
        metrics.compile + metrics.document_load + metrics.runtime_execution + metrics.output_write;
    assert!(metrics.total >= parts, "{metrics:?}");
    assert!(metrics.compile > std::time::Duration::ZERO, "{metrics:?}");
    assert!(
        metrics.runtime_execution > std::time::Duration::ZERO,
        "{metrics:?}"
    );
    let report = measured.index_utilization.expect("index utilization");
    assert_eq!(
        report["UtilizedSingleIndexes"][0]["IndexSpec"],
        json!("/n/?")
    );
}

#[tokio::test]
async fn a_whole_container_query_needing_the_pipeline_comes_back_as_its_plan() {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let engine = engine_with_container(
        clock,
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
    )
    .await;
    four_items(&engine).await;
    let container = engine.read_container("db", "c").expect("container");
    let request = QueryRequest {
        text: "SELECT VALUE COUNT(1) FROM c".into(),
        enable_cross_partition: true,
        ..QueryRequest::default()
    };
    let outcome = engine
        .query_items(&container, &request)
        .await
        .expect("query");
    let QueryOutcome::NeedsClientPipeline(pipeline) = outcome else {
        panic!("a page: {outcome:?}");
    };
    assert!(pipeline.fan_out_allowed);
    assert_eq!(
        pipeline.plan.to_json()["queryInfo"]["aggregates"],
        json!(["Count"])
    );
    // Pinned to one partition, the same query is answered whole.
    let pinned = QueryRequest {
        partition_key: pk("p"),
        ..request
    };
    let counted = page(
        engine
            .query_items(&container, &pinned)
            .await
            .expect("query"),
    );
    assert_eq!(counted.items, [json!(4)]);
}
