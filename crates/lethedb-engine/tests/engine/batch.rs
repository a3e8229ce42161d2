//! Transactional batches: all or nothing, each operation with its single-item rules; bulk:
//! each operation on its own; partition deletes.

use crate::common::{atomic_batch, engine_with_container, pk, resolved};
use lethedb_engine::BatchMode;
use lethedb_engine::RangeFilter;

use lethedb_engine::ErrorCode;
use lethedb_engine::{parse_batch, BatchEffect, BatchEntry};
use lethedb_engine::{Engine, ManualClock, PartitionKeyValue, WriteMode};
use serde_json::json;
use std::sync::Arc;

async fn engine() -> Engine {
    let engine = engine_with_container(
        Arc::new(ManualClock::new(1_800_000_000_000)),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
    )
    .await;
    engine
        .write_item(
            &resolved(&engine, "c"),
            WriteMode::Create,
            pk("p"),
            json!({"id": "existing", "pk": "p", "n": 1}),
            None,
        )
        .await
        .expect("seed");
    engine
}

async fn ids(engine: &Engine) -> Vec<String> {
    let container = engine.read_container("db", "c").expect("container");
    let mut ids: Vec<String> = engine
        .read_feed(&container, None, RangeFilter::everything(), 1000, None)
        .await
        .expect("feed")
        .items
        .iter()
        .map(|item| {
            item.to_value().expect("value")["id"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    ids.sort();
    ids
}

/// Each entry's effect, or its error's code.
fn outcomes(results: &[BatchEntry]) -> Vec<Result<BatchEffect, ErrorCode>> {
    results
        .iter()
        .map(|entry| match entry {
            Ok(outcome) => Ok(outcome.effect),
            Err(error) => Err(error.code),
        })
        .collect()
}

#[tokio::test]
async fn a_successful_batch_applies_every_operation_in_order() {
    let engine = engine().await;
    let operations = parse_batch(&json!([
        {"operationType": "Create", "resourceBody": {"id": "a", "pk": "p"}},
        {"operationType": "Upsert", "resourceBody": {"id": "b", "pk": "p", "n": 1}},
        {"operationType": "Read", "id": "a"},
        {"operationType": "Patch", "id": "b", "resourceBody": {"operations": [{"op": "incr", "path": "/n", "value": 4}]}},
        {"operationType": "Replace", "id": "existing", "resourceBody": {"id": "existing", "pk": "p", "n": 2}},
        {"operationType": "Delete", "id": "a"}
    ]))
    .expect("parse");
    let (results, succeeded, _) = atomic_batch(&engine, operations).await;
    assert!(succeeded);
    assert_eq!(
        outcomes(&results),
        vec![
            Ok(BatchEffect::Created),
            Ok(BatchEffect::Created),
            Ok(BatchEffect::Read),
            Ok(BatchEffect::Replaced),
            Ok(BatchEffect::Replaced),
            Ok(BatchEffect::Deleted)
        ]
    );
    assert_eq!(
        results[3]
            .as_ref()
            .expect("patched")
            .item
            .as_ref()
            .expect("patched")
            .to_value()
            .expect("value")["n"],
        json!(5)
    );
    assert_eq!(ids(&engine).await, vec!["b", "existing"]);
}

#[tokio::test]
async fn a_failing_operation_undoes_the_whole_batch() {
    let engine = engine().await;
    let operations = parse_batch(&json!([
        {"operationType": "Create", "resourceBody": {"id": "a", "pk": "p"}},
        {"operationType": "Replace", "id": "existing", "resourceBody": {"id": "existing", "pk": "p", "n": 99}},
        {"operationType": "Delete", "id": "existing"},
        {"operationType": "Create", "resourceBody": {"id": "a", "pk": "p"}}
    ]))
    .expect("parse");
    let (results, succeeded, _) = atomic_batch(&engine, operations).await;
    assert!(!succeeded);
    assert_eq!(
        outcomes(&results),
        vec![
            Err(ErrorCode::BatchOperationNotAttempted),
            Err(ErrorCode::BatchOperationNotAttempted),
            Err(ErrorCode::BatchOperationNotAttempted),
            Err(ErrorCode::ItemIdConflict)
        ]
    );
    assert_eq!(
        ids(&engine).await,
        vec!["existing"],
        "nothing of the batch remains"
    );
    let container = engine.read_container("db", "c").expect("container");
    let existing = engine
        .read_item(&container, pk("p"), "existing")
        .expect("still there");
    assert_eq!(
        existing.to_value().expect("value")["n"],
        json!(1),
        "the replace was undone"
    );
    assert_eq!(
        engine
            .container_usage(&container)
            .await
            .expect("usage")
            .items,
        1,
        "counters were restored"
    );
}

#[tokio::test]
async fn bulk_operations_succeed_or_fail_one_by_one_with_their_own_keys() {
    let engine = engine().await;
    let operations = parse_batch(&json!([
        {"operationType": "Create", "partitionKey": "[\"x\"]", "resourceBody": {"id": "a", "pk": "x"}},
        {"operationType": "Create", "partitionKey": "[\"p\"]", "resourceBody": {"id": "existing", "pk": "p"}},
        {"operationType": "Create", "partitionKey": "[\"y\"]", "resourceBody": {"id": "b", "pk": "y"}}
    ]))
    .expect("parse");
    let (results, _, _) = engine
        .execute_batch(
            &resolved(&engine, "c"),
            None,
            operations,
            BatchMode::ContinueOnError,
        )
        .await
        .expect("bulk");
    assert_eq!(
        outcomes(&results),
        vec![
            Ok(BatchEffect::Created),
            Err(ErrorCode::ItemIdConflict),
            Ok(BatchEffect::Created)
        ]
    );
    assert_eq!(ids(&engine).await, vec!["a", "b", "existing"]);
}

#[tokio::test]
async fn bulk_told_to_stop_on_an_error_attempts_nothing_after_the_first_failure() {
    let engine = engine().await;
    let operations = parse_batch(&json!([
        {"operationType": "Create", "partitionKey": "[\"x\"]", "resourceBody": {"id": "a", "pk": "x"}},
        {"operationType": "Create", "partitionKey": "[\"p\"]", "resourceBody": {"id": "existing", "pk": "p"}},
        {"operationType": "Create", "partitionKey": "[\"y\"]", "resourceBody": {"id": "b", "pk": "y"}},
        {"operationType": "Delete", "partitionKey": "[\"p\"]", "id": "existing"}
    ]))
    .expect("parse");
    let (results, succeeded, _) = engine
        .execute_batch(
            &resolved(&engine, "c"),
            None,
            operations,
            BatchMode::StopOnError,
        )
        .await
        .expect("bulk");
    assert!(succeeded, "a bulk request itself succeeds");
    assert_eq!(
        outcomes(&results),
        vec![
            Ok(BatchEffect::Created),
            Err(ErrorCode::ItemIdConflict),
            Err(ErrorCode::BatchOperationNotAttempted),
            Err(ErrorCode::BatchOperationNotAttempted)
        ]
    );
    assert_eq!(
        ids(&engine).await,
        vec!["a", "existing"],
        "what came before the failure stays; nothing after it ran"
    );
}

#[tokio::test]
async fn deleting_a_partition_removes_only_its_items() {
    let engine = engine().await;
    engine
        .write_item(
            &resolved(&engine, "c"),
            WriteMode::Create,
            pk("q"),
            json!({"id": "other", "pk": "q"}),
            None,
        )
        .await
        .expect("other");
    engine
        .write_item(
            &resolved(&engine, "c"),
            WriteMode::Create,
            pk("p"),
            json!({"id": "second", "pk": "p"}),
            None,
        )
        .await
        .expect("second");
    let deleted = engine
        .delete_partition(
            &resolved(&engine, "c"),
            PartitionKeyValue::parse_json_text("[\"p\"]").expect("pk"),
        )
        .await
        .expect("delete");
    assert_eq!(deleted, 2);
    assert_eq!(ids(&engine).await, vec!["other"]);
}
