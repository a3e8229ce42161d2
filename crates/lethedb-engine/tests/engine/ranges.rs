//! Partition key ranges on the engine: a fixed count from the configuration, a layout that
//! survives a reopen, and splits driven by throughput only when the count is not fixed.

use lethedb_engine::Throughput;
use lethedb_engine::{Engine, EngineConfig, ManualClock};
use lethedb_storage::MemoryStore;
use serde_json::json;
use std::sync::Arc;

async fn engine(config: EngineConfig, throughput: u32) -> Engine {
    let store = Arc::new(MemoryStore::new());
    let engine = Engine::open(store, Arc::new(ManualClock::new(0)), config).expect("engine");
    engine
        .create_database(json!({"id": "db"}), None)
        .await
        .expect("db");
    engine
        .create_container(
            "db",
            json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2}}),
            Some(Throughput::Manual(throughput)),
        )
        .await
        .expect("container");
    engine
}

async fn raise(engine: &Engine, throughput: u32) {
    let offers = engine.list_offers().await.expect("offers");
    let mut offer = offers[0].clone();
    let id = offer["id"].as_str().expect("id").to_string();
    offer["content"]["offerThroughput"] = json!(throughput);
    engine.replace_offer(&id, offer).await.expect("replace");
}

fn ids(engine: &Engine) -> Vec<u32> {
    let container = engine.read_container("db", "c").expect("container");
    container
        .ranges
        .ranges
        .iter()
        .map(|range| range.id)
        .collect()
}

#[tokio::test]
async fn a_fixed_count_ignores_throughput_and_never_splits() {
    let config = EngineConfig {
        partition_key_ranges: Some(3),
        ..crate::common::config()
    };
    let engine = engine(config, 400).await;
    assert_eq!(ids(&engine), [0, 1, 2]);
    raise(&engine, 100_000).await;
    assert_eq!(ids(&engine), [0, 1, 2]);
}

#[tokio::test]
async fn throughput_splits_ranges_when_the_count_is_not_fixed() {
    // Created at 18,000 RU/s: three ranges of 6,000, as the service creates them.
    let engine = engine(crate::common::config(), 18_000).await;
    assert_eq!(ids(&engine), [0, 1, 2]);
    // Up to 30,000: the three still carry it (10,000 each), so nothing splits.
    raise(&engine, 30_000).await;
    assert_eq!(ids(&engine), [0, 1, 2]);
    raise(&engine, 40_000).await;
    // Range 0 (fewest ancestors, leftmost) halves into 3 and 4.
    assert_eq!(ids(&engine), [3, 4, 1, 2]);
    let container = engine.read_container("db", "c").expect("container");
    assert_eq!(container.ranges.ranges[0].parents, [0]);
    assert_eq!(container.ranges.generation, 1);
}
