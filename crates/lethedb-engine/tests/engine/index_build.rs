//! Indexing-policy changes on a live container: the rebuild runs in bounded batches, reports
//! its progress, survives a restart where it stopped, leaves the index exactly as a rebuild
//! from the items would whatever writes, expiries, batches and further policy changes came in
//! between, drops the index for `indexingMode: none` and brings it back for `consistent`. The
//! helpers here serve `write_charges.rs` too.

use crate::common::*;
use lethedb_engine::BatchMode;
use lethedb_engine::{
    BatchOperation, Container, Engine, EngineError, ErrorCode, ManualClock, QueryRequest, WriteMode,
};
use lethedb_storage::{MemoryStore, RedbStore};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::Arc;

pub const START_MS: i64 = 1_800_000_000_000;

fn narrow_policy() -> Value {
    json!({
        "includedPaths": [{"path": "/n/?"}, {"path": "/o/*"}, {"path": "/missing/?"}],
        "excludedPaths": [{"path": "/*"}],
        "compositeIndexes": [[{"path": "/n", "order": "ascending"},
                              {"path": "/o/k", "order": "descending"}]]
    })
}

fn tags_policy() -> Value {
    json!({"includedPaths": [{"path": "/tags/[]/?"}], "excludedPaths": [{"path": "/*"}]})
}

fn none_policy() -> Value {
    json!({"indexingMode": "none"})
}

/// Replaces the indexing policy of container `c` (keeping `defaultTtl` when given).
pub async fn replace_policy(engine: &Engine, policy: Value, default_ttl: Option<i64>) {
    let mut body = json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "indexingPolicy": policy});
    if let Some(ttl) = default_ttl {
        body["defaultTtl"] = json!(ttl);
    }
    engine
        .replace_container("db", "c", body, None)
        .await
        .expect("replace");
}

pub fn current(engine: &Engine) -> Arc<Container> {
    engine.read_container("db", "c").expect("container")
}

/// Runs the builder until no rebuild is left; returns how many versions it rebuilt.
pub async fn build_to_the_end(engine: &Engine, batch: usize) -> u64 {
    let mut rebuilt = 0;
    for _ in 0..10_000 {
        let (count, more) = engine.build_indexes_once(batch).await.expect("build");
        rebuilt += count;
        if !more {
            return rebuilt;
        }
    }
    panic!("the rebuild never ended");
}

/// The index of `c` is exactly what its items call for, and no rebuild runs.
async fn assert_consistent(engine: &Engine) -> u64 {
    let container = current(engine);
    assert!(container.index_ready());
    assert_eq!(
        engine
            .index_transformation_progress(&container)
            .expect("progress"),
        100
    );
    let check = engine.check_index(&container).await.expect("check");
    assert!(check.is_consistent(), "{check:?}");
    check.stored
}

pub fn document(id: &str, n: u64) -> Value {
    json!({"id": id, "pk": "p", "n": n, "tags": [n % 3, "t"], "o": {"k": n % 5, "deep": {"x": n}}})
}

pub async fn create(engine: &Engine, id: &str, n: u64) -> f64 {
    engine
        .write_item(
            &current(engine),
            WriteMode::Create,
            pk("p"),
            document(id, n),
            None,
        )
        .await
        .expect("create")
        .request_units
}

/// The ids a cross-item query finds, which must be the model's whatever the index holds.
async fn queried_ids(engine: &Engine, text: &str) -> BTreeSet<String> {
    let outcome = engine
        .query_items(
            &current(engine),
            &QueryRequest {
                text: text.into(),
                range_id: Some("0".into()),
                ..QueryRequest::default()
            },
        )
        .await
        .expect("query");
    page(outcome)
        .items
        .iter()
        .map(|value| value.as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn a_policy_change_rebuilds_the_index_in_bounded_batches_with_progress() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine = engine_with_container(
        clock.clone(),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
    )
    .await;
    for i in 0..40 {
        create(&engine, &format!("i{i:02}"), i).await;
    }
    let before = assert_consistent(&engine).await;
    replace_policy(&engine, narrow_policy(), None).await;
    let container = current(&engine);
    assert!(
        !container.index_ready(),
        "the rebuild starts with the change"
    );
    assert_eq!(
        engine
            .index_transformation_progress(&container)
            .expect("progress"),
        0
    );
    let check = engine.check_index(&container).await.expect("check");
    assert!(check.rebuilding && !check.is_consistent(), "{check:?}");
    let mut seen = Vec::new();
    loop {
        let (rebuilt, more) = engine.build_indexes_once(7).await.expect("build");
        assert!(rebuilt <= 7, "a batch is bounded");
        seen.push(
            engine
                .index_transformation_progress(&current(&engine))
                .expect("progress"),
        );
        if !more {
            break;
        }
    }
    assert_eq!(seen.len(), 6, "40 versions in batches of 7: {seen:?}");
    assert_eq!(&seen[..5], &[17, 35, 52, 70, 87], "progress in percent");
    assert_eq!(seen[5], 100);
    let after = assert_consistent(&engine).await;
    assert!(
        after < before,
        "the narrow policy indexes less: {after} < {before}"
    );
    // Nothing more to do: the builder leaves the container alone.
    assert_eq!(
        engine.build_indexes_once(7).await.expect("build"),
        (0, false)
    );
}

#[tokio::test]
async fn a_change_on_an_empty_container_holds_at_once_and_an_unchanged_policy_rebuilds_nothing() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine = engine_with_container(
        clock.clone(),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
    )
    .await;
    replace_policy(&engine, narrow_policy(), None).await;
    assert!(current(&engine).index_ready());
    create(&engine, "a", 1).await;
    replace_policy(&engine, narrow_policy(), Some(60)).await;
    assert!(current(&engine).index_ready(), "only defaultTtl changed");
    assert_consistent(&engine).await;
}

#[tokio::test]
async fn none_drops_the_index_and_consistent_rebuilds_it() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine = engine_with_container(
        clock.clone(),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
    )
    .await;
    for i in 0..25 {
        create(&engine, &format!("i{i}"), i).await;
    }
    let full = assert_consistent(&engine).await;
    replace_policy(&engine, none_policy(), None).await;
    assert_eq!(build_to_the_end(&engine, 10).await, 25);
    assert_eq!(
        assert_consistent(&engine).await,
        0,
        "mode none keeps no entry"
    );
    // Queries by id and partition key still work, by scanning.
    let ids = queried_ids(&engine, "SELECT VALUE c.id FROM c WHERE c.id = 'i3'").await;
    assert_eq!(ids, BTreeSet::from(["i3".to_string()]));
    replace_policy(&engine, json!({"indexingMode": "consistent"}), None).await;
    build_to_the_end(&engine, 10).await;
    assert_eq!(
        assert_consistent(&engine).await,
        full,
        "the same index as before"
    );
}

#[tokio::test]
async fn mode_none_is_refused_while_ttl_is_on_and_nothing_is_rebuilt() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine = engine_with_container(
        clock.clone(),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 60}),
    )
    .await;
    create(&engine, "a", 1).await;
    let body = json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 60,
                      "indexingPolicy": none_policy()});
    let refused = engine.replace_container("db", "c", body, None).await;
    assert!(
        matches!(
            &refused,
            Err(EngineError {
                code: ErrorCode::InvalidTtl,
                ..
            })
        ),
        "{refused:?}"
    );
    let container = current(&engine);
    assert!(
        container.index_ready(),
        "a refused replace starts no rebuild"
    );
    assert_eq!(
        container.resource["indexingPolicy"]["indexingMode"],
        json!("consistent")
    );
    assert_consistent(&engine).await;
}

/// One random write on items `i0`..`i19` of partition `p`; NotFound and conflicts are fine.
async fn random_write(engine: &Engine, rng: &mut Rng, step: u64) {
    let container = current(engine);
    let id = format!("i{}", rng.below(20));
    let body = document(&id, step);
    let done = match rng.below(7) {
        0 => engine
            .write_item(&container, WriteMode::Create, pk("p"), body, None)
            .await
            .map(drop),
        1 => engine
            .write_item(&container, WriteMode::Upsert, pk("p"), body, None)
            .await
            .map(drop),
        2 => {
            // A rename: the replaced item's entries go with its old id.
            let mut renamed = body;
            renamed["id"] = json!(format!("i{}", rng.below(20)));
            engine
                .write_item(&container, WriteMode::Replace(id), pk("p"), renamed, None)
                .await
                .map(drop)
        }
        3 => {
            let patch = json!({"operations": [{"op": "set", "path": "/o/k", "value": step},
                                              {"op": "remove", "path": "/n"}]});
            engine
                .patch_item(&container, pk("p"), &id, patch, None)
                .await
                .map(drop)
        }
        4 => {
            let operations = vec![
                BatchOperation {
                    kind: "Upsert".into(),
                    id: None,
                    body: Some(body),
                    if_match: None,
                    partition_key: None,
                },
                BatchOperation {
                    kind: "Delete".into(),
                    id: Some(format!("i{}", rng.below(20))),
                    body: None,
                    if_match: None,
                    partition_key: None,
                },
            ];
            engine
                .execute_batch(&container, pk("p"), operations, BatchMode::ContinueOnError)
                .await
                .map(drop)
        }
        _ => engine
            .delete_item(&container, pk("p"), &id, None)
            .await
            .map(drop),
    };
    match done {
        Ok(())
        | Err(EngineError {
            code: ErrorCode::ItemNotFound | ErrorCode::ItemIdConflict | ErrorCode::InvalidPatch,
            ..
        }) => {}
        Err(other) => panic!("write: {other}"),
    }
}

/// The ids the read feed holds: what every query must find.
async fn stored_ids(engine: &Engine) -> BTreeSet<String> {
    let feed = engine
        .read_feed(
            &current(engine),
            None,
            lethedb_engine::RangeFilter::everything(),
            1000,
            None,
        )
        .await
        .expect("feed");
    feed.items
        .iter()
        .map(|item| {
            item.to_value().expect("value")["id"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn writes_expiries_and_further_changes_during_a_rebuild_leave_the_index_exact() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine = engine_with_container(
        clock.clone(),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 5}),
    )
    .await;
    let policies = [json!({}), narrow_policy(), tags_policy()];
    let mut rng = Rng(0x1dea);
    let mut changes = 0;
    for step in 0..1_500u64 {
        clock.advance_ms(rng.below(40) as i64);
        match rng.below(20) {
            0..=11 => random_write(&engine, &mut rng, step).await,
            12..=15 => {
                engine
                    .build_indexes_once(1 + rng.below(6) as usize)
                    .await
                    .expect("build");
            }
            // Expired items leave with their entries, whichever policy wrote them.
            16 => {
                engine
                    .sweep_once(1 + rng.below(5) as usize)
                    .await
                    .expect("sweep");
            }
            17 => {
                let policy = policies[rng.below(3) as usize].clone();
                replace_policy(&engine, policy, Some(5)).await;
                changes += 1;
            }
            _ => {
                let all = queried_ids(&engine, "SELECT VALUE c.id FROM c").await;
                assert_eq!(all, stored_ids(&engine).await, "queries see every item");
                if current(&engine).index_ready() {
                    assert_consistent(&engine).await;
                }
            }
        }
    }
    assert!(
        changes > 50,
        "{changes} policy changes, many during a rebuild"
    );
    build_to_the_end(&engine, 4).await;
    assert_consistent(&engine).await;
}

#[tokio::test]
async fn a_restart_resumes_the_rebuild_where_its_last_batch_stopped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("store.redb");
    let clock = Arc::new(ManualClock::new(START_MS));
    {
        let engine = engine_on_store(
            Arc::new(RedbStore::open(&path).expect("open")),
            clock.clone(),
            json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
            config(),
        )
        .await;
        for i in 0..30 {
            create(&engine, &format!("i{i:02}"), i).await;
        }
        replace_policy(&engine, tags_policy(), None).await;
        assert_eq!(
            engine.build_indexes_once(12).await.expect("build"),
            (12, true)
        );
        // A write behind the cursor and one ahead of it, before the crash.
        create(&engine, "i00b", 100).await;
        create(&engine, "i99", 99).await;
        assert!(engine.close(), "sole handle");
    }
    let engine = Engine::open(
        Arc::new(RedbStore::open(&path).expect("reopen")),
        clock.clone(),
        config(),
    )
    .expect("engine");
    let container = current(&engine);
    assert!(!container.index_ready(), "the rebuild outlives the restart");
    assert_eq!(
        engine
            .index_transformation_progress(&container)
            .expect("progress"),
        40
    );
    // The 12 versions done before the restart are not done again, nor the one written behind
    // the cursor: the 18 after it and the one written ahead of it are left.
    assert_eq!(build_to_the_end(&engine, 5).await, 19);
    assert_consistent(&engine).await;
}

#[tokio::test]
async fn the_rebuild_spends_only_what_users_left_of_the_throughput() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine =
        Engine::open(Arc::new(MemoryStore::new()), clock.clone(), config()).expect("engine");
    engine
        .create_database(json!({"id": "db"}), None)
        .await
        .expect("db");
    let throughput = lethedb_engine::Throughput::manual(400).expect("throughput");
    engine
        .create_container(
            "db",
            json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
            Some(throughput),
        )
        .await
        .expect("container");
    for i in 0..20 {
        create(&engine, &format!("i{i}"), i).await;
    }
    replace_policy(&engine, narrow_policy(), None).await;
    clock.advance_ms(1_000);
    let container = current(&engine);
    engine.charge(&container, 400.0);
    clock.advance_ms(1_000);
    assert_eq!(
        engine.build_indexes_once(100).await.expect("build"),
        (0, true),
        "users spent the last second's budget: nothing is left over"
    );
    clock.advance_ms(1_000);
    assert_eq!(
        engine.build_indexes_once(100).await.expect("build"),
        (20, false)
    );
    let totals = engine.budget_totals(&container).expect("totals");
    assert!(
        totals.sweeper_ru > 20.0,
        "charged to the background budget: {totals:?}"
    );
    assert_consistent(&engine).await;
}
