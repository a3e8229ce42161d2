//! The item doors take the container their caller resolved, and the writer looks it up again
//! by name inside the job: a container deleted after it was resolved answers the same
//! not-found on every writing door as a request that names no container, and one deleted and
//! created again under the same name takes the write. Reads are not covered here: they read
//! the snapshot the resolved container describes.

use crate::common::{engine_with_container, pk, resolved, test_store_writes_by_shard};
use lethedb_engine::BatchMode;
use lethedb_engine::{
    parse_batch, Container, Engine, EngineResult, ErrorCode, ManualClock, PartitionKeyValue,
    RangeFilter, WriteMode,
};
use serde_json::json;
use std::sync::Arc;

fn container_body() -> serde_json::Value {
    json!({"id": "c", "partitionKey": {"paths": ["/pk"]}})
}

async fn engine() -> Engine {
    engine_with_container(
        Arc::new(ManualClock::new(1_800_000_000_000)),
        container_body(),
    )
    .await
}

/// What each writing door answers through `container`, in a fixed order: create, upsert,
/// replace, patch, delete, partition delete, batch, bulk.
async fn every_write(engine: &Engine, container: &Arc<Container>) -> Vec<EngineResult<()>> {
    let item = || json!({"id": "x", "pk": "p"});
    let patch = json!({"operations": [{"op": "set", "path": "/n", "value": 1}]});
    let batch = || parse_batch(&json!([{"operationType": "Upsert", "resourceBody": item()}]));
    let key = PartitionKeyValue::parse_json_text("[\"p\"]").expect("pk");
    vec![
        engine
            .write_item(container, WriteMode::Create, pk("p"), item(), None)
            .await
            .map(drop),
        engine
            .write_item(container, WriteMode::Upsert, pk("p"), item(), None)
            .await
            .map(drop),
        engine
            .write_item(
                container,
                WriteMode::Replace("x".into()),
                pk("p"),
                item(),
                None,
            )
            .await
            .map(drop),
        engine
            .patch_item(container, pk("p"), "x", patch, None)
            .await
            .map(drop),
        engine
            .delete_item(container, pk("p"), "x", None)
            .await
            .map(drop),
        engine.delete_partition(container, key).await.map(drop),
        engine
            .execute_batch(
                container,
                pk("p"),
                batch().expect("batch"),
                BatchMode::Atomic,
            )
            .await
            .map(drop),
        engine
            .execute_batch(
                container,
                None,
                batch().expect("bulk"),
                BatchMode::ContinueOnError,
            )
            .await
            .map(drop),
    ]
}

#[tokio::test]
async fn a_write_to_a_container_deleted_after_it_was_resolved_is_not_found() {
    let engine = engine().await;
    let container = resolved(&engine, "c");
    engine.delete_container("db", "c").await.expect("delete");
    for (door, outcome) in every_write(&engine, &container).await.iter().enumerate() {
        let code = outcome.as_ref().map_err(|error| error.code);
        assert_eq!(code, Err(ErrorCode::ContainerNotFound), "door {door}");
    }
    // The same answer as a lookup by name, which is what a request gets when it comes later.
    let looked_up = engine.read_container("db", "c").map(drop);
    assert_eq!(
        looked_up.map_err(|error| error.code),
        Err(ErrorCode::ContainerNotFound)
    );
}

#[tokio::test]
async fn a_write_through_a_replaced_container_goes_to_the_container_that_holds_the_name() {
    let engine = engine().await;
    let old = resolved(&engine, "c");
    engine.delete_container("db", "c").await.expect("delete");
    engine
        .create_container("db", container_body(), None)
        .await
        .expect("again");
    let new = resolved(&engine, "c");
    assert_ne!(old.number, new.number, "a new container");
    let create = |container: Arc<Container>| {
        let engine = engine.clone();
        async move {
            let body = json!({"id": "x", "pk": "p"});
            engine
                .write_item(&container, WriteMode::Create, pk("p"), body, None)
                .await
        }
    };
    match create(Arc::clone(&old)).await {
        Ok(_) => {}
        // A store whose shards commit side by side (fjall here) queued the write under the old
        // container's shard lock, which the new container's shard is not: it is refused as
        // busy, and the client's retry, resolving the name again, goes to the new container.
        Err(error) if error.code == ErrorCode::WriterBusy && test_store_writes_by_shard() => {
            create(Arc::clone(&new)).await.expect("the retry");
        }
        Err(error) => panic!("create: {error:?}"),
    }
    let feed = engine
        .read_feed(&new, None, RangeFilter::everything(), 10, None)
        .await
        .expect("feed");
    assert_eq!(feed.items.len(), 1);
}
