//! The engine's writer lanes on the fjall store, whose transactions of disjoint shards commit
//! side by side: a catalog change committed by one lane is seen by every other lane before it
//! applies anything, and creates spread over many partitions (so over every lane) all commit
//! and are all found again after the store is reopened.

use crate::common::{config, pk, resolved};
use lethedb_engine::{Engine, EngineConfig, ErrorCode, ManualClock, WriteMode};
use lethedb_storage::{FjallStore, Storage};
use serde_json::json;
use std::sync::Arc;

/// More partitions than lanes, so that every lane writes some.
const PARTITIONS: usize = 24;
const LANES: usize = 3;

fn lanes_config() -> EngineConfig {
    EngineConfig {
        writer_lanes: Some(LANES),
        ..config()
    }
}

fn open(path: &std::path::Path) -> Engine {
    let store: Arc<dyn Storage> = Arc::new(FjallStore::open(path).expect("fjall store"));
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    Engine::open(store, clock, lanes_config()).expect("engine")
}

async fn create_container(engine: &Engine) {
    engine
        .create_container(
            "db",
            json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2}}),
            None,
        )
        .await
        .expect("container");
}

/// Creates item `id` in each partition, all at once.
async fn create_everywhere(engine: &Engine, id: &str) {
    let container = resolved(engine, "c");
    let creates = (0..PARTITIONS).map(|partition| {
        let body = json!({"id": id, "pk": format!("p{partition}")});
        let (engine, container) = (engine.clone(), Arc::clone(&container));
        tokio::spawn(async move {
            let key = pk(&format!("p{partition}"));
            engine
                .write_item(&container, WriteMode::Create, key, body, None)
                .await
        })
    });
    for create in futures_join(creates.collect()).await {
        create.expect("create");
    }
}

async fn futures_join<T>(handles: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut outcomes = Vec::with_capacity(handles.len());
    for handle in handles {
        outcomes.push(handle.await.expect("task"));
    }
    outcomes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_container_made_again_is_what_every_lane_writes_to() {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = open(&dir.path().join("fjall"));
    engine
        .create_database(json!({"id": "db"}), None)
        .await
        .expect("db");
    create_container(&engine).await;
    // Every lane caches the first container's definition.
    create_everywhere(&engine, "old").await;
    engine.delete_container("db", "c").await.expect("delete");
    create_container(&engine).await;
    // A lane that kept the old definition would write to the deleted container or refuse.
    create_everywhere(&engine, "new").await;
    let container = resolved(&engine, "c");
    for partition in 0..PARTITIONS {
        let key = || pk(&format!("p{partition}"));
        engine
            .read_item(&container, key(), "new")
            .expect("the new item");
        let old = engine.read_item(&container, key(), "old").err();
        assert_eq!(old.map(|error| error.code), Some(ErrorCode::ItemNotFound));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn creates_on_every_lane_are_found_after_reopening() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("fjall");
    {
        let engine = open(&path);
        engine
            .create_database(json!({"id": "db"}), None)
            .await
            .expect("db");
        create_container(&engine).await;
        for round in 0..4 {
            create_everywhere(&engine, &format!("i{round}")).await;
        }
        assert!(engine.close(), "no other handle to the engine");
    }
    let engine = open(&path);
    let container = resolved(&engine, "c");
    for partition in 0..PARTITIONS {
        for round in 0..4 {
            engine
                .read_item(
                    &container,
                    pk(&format!("p{partition}")),
                    &format!("i{round}"),
                )
                .expect("found after reopening");
        }
    }
}
