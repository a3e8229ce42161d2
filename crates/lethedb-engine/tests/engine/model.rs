//! The document store against a model: random creates, upserts, replaces, patches and deletes
//! (with and without ETag conditions) on the engine and on a `BTreeMap`, after which every point
//! read, the read feed and a count query agree with the model. The same run goes through a
//! `FailingStore` whose put and commit fail once: every acknowledged write is still there,
//! nothing unacknowledged is, and after the failed commit writes are refused while reads work.
//! After both runs the index holds exactly the entries the items call for.

use crate::common::*;
use lethedb_engine::RangeFilter;

use lethedb_engine::{Engine, EngineError, ErrorCode, ManualClock, QueryRequest, WriteMode};
use lethedb_storage::{FailingStore, FaultPlan, MemoryStore};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// (pk, id) → (document n, etag)
type Model = BTreeMap<(String, String), (u64, String)>;

/// Whether a write was refused by a failing store (not by the rules of the operation).
fn refused(error: &EngineError) -> bool {
    matches!(
        error.code,
        ErrorCode::StorageUnavailable | ErrorCode::StorePoisoned
    )
}

#[tokio::test]
async fn the_engine_agrees_with_a_btreemap() {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let engine = engine_with_container(
        clock.clone(),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
    )
    .await;
    let (model, refusals) = drive(&engine, &clock, 3_000, false).await;
    assert_eq!(refusals, 0);
    check(&engine, &model).await;
}

#[tokio::test]
async fn a_failed_put_or_commit_acknowledges_nothing_and_loses_nothing_acknowledged() {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let plan = FaultPlan {
        fail_put: Some(300),
        fail_commit: Some(900),
        panic_put: None,
    };
    let store = Arc::new(FailingStore::new(MemoryStore::new(), plan));
    let engine = engine_on_store(
        store.clone(),
        clock.clone(),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
        crate::common::config(),
    )
    .await;
    let (model, refusals) = drive(&engine, &clock, 1_500, true).await;
    assert_eq!(store.failures(), 2, "both planned failures happened");
    // The failed put refused one write; the failed commit refused its own and every later one.
    assert!(refusals > 500, "{refusals} writes refused");
    let reason = engine
        .poisoned()
        .expect("a failed commit poisons the engine");
    assert!(reason.contains("commit"), "{reason}");
    let refused_write = engine
        .write_item(
            &resolved(&engine, "c"),
            WriteMode::Upsert,
            pk("p0"),
            json!({"id": "late", "pk": "p0"}),
            None,
        )
        .await;
    assert!(
        matches!(
            refused_write,
            Err(EngineError {
                code: ErrorCode::StorePoisoned,
                ..
            })
        ),
        "{refused_write:?}"
    );
    // Reads still work and agree with what was acknowledged.
    check(&engine, &model).await;
}

/// Runs `steps` random operations on the engine and the model. With `faults`, a write refused by
/// the store leaves the model unchanged (it was not acknowledged); without, none may be refused.
/// Returns the model and how many writes were refused.
async fn drive(engine: &Engine, clock: &ManualClock, steps: u64, faults: bool) -> (Model, u64) {
    let mut rng = Rng(0xfeed);
    let mut model = Model::new();
    let mut refusals = 0u64;
    let container = resolved(engine, "c");
    for step in 0..steps {
        clock.advance_ms(1);
        let partition = format!("p{}", rng.below(3));
        let id = format!("i{}", rng.below(12));
        let key = (partition.clone(), id.clone());
        let body = json!({"id": id, "pk": partition, "n": step,
            "tags": [step % 3, "t", step % 3], "o": {"k": step % 5}});
        let current = model.get(&key).cloned();
        let stale = rng.below(4) == 0;
        let etag = current.as_ref().map(|(_, etag)| {
            if stale {
                "\"stale\"".to_string()
            } else {
                etag.clone()
            }
        });
        match rng.below(5) {
            0 => match engine
                .write_item(&container, WriteMode::Create, pk(&partition), body, None)
                .await
            {
                Ok(outcome) => {
                    assert!(current.is_none(), "create succeeded over an existing item");
                    model.insert(key, (step, outcome.item.etag()));
                }
                Err(EngineError {
                    code: ErrorCode::ItemIdConflict,
                    ..
                }) => assert!(current.is_some()),
                Err(error) if faults && refused(&error) => refusals += 1,
                Err(other) => panic!("create: {other}"),
            },
            1 => match engine
                .write_item(&container, WriteMode::Upsert, pk(&partition), body, None)
                .await
            {
                Ok(outcome) => {
                    assert_eq!(outcome.created, current.is_none());
                    model.insert(key, (step, outcome.item.etag()));
                }
                Err(error) if faults && refused(&error) => refusals += 1,
                Err(other) => panic!("upsert: {other}"),
            },
            2 => match engine
                .write_item(
                    &container,
                    WriteMode::Replace(id.clone()),
                    pk(&partition),
                    body,
                    etag.clone(),
                )
                .await
            {
                Ok(outcome) => {
                    assert!(
                        current.is_some() && !stale,
                        "replace succeeded where it must not"
                    );
                    model.insert(key, (step, outcome.item.etag()));
                }
                Err(EngineError {
                    code: ErrorCode::ItemNotFound,
                    ..
                }) => assert!(current.is_none()),
                Err(EngineError {
                    code: ErrorCode::PreconditionFailed,
                    ..
                }) => assert!(stale),
                Err(error) if faults && refused(&error) => refusals += 1,
                Err(other) => panic!("replace: {other}"),
            },
            3 => {
                let patch = json!({"operations": [{"op": "set", "path": "/n", "value": step}]});
                match engine
                    .patch_item(&container, pk(&partition), &id, patch, etag.clone())
                    .await
                {
                    Ok(outcome) => {
                        assert!(current.is_some() && !stale);
                        model.insert(key, (step, outcome.item.etag()));
                    }
                    Err(EngineError {
                        code: ErrorCode::ItemNotFound,
                        ..
                    }) => assert!(current.is_none()),
                    Err(EngineError {
                        code: ErrorCode::PreconditionFailed,
                        ..
                    }) => assert!(stale),
                    Err(error) if faults && refused(&error) => refusals += 1,
                    Err(other) => panic!("patch: {other}"),
                }
            }
            _ => match engine
                .delete_item(&container, pk(&partition), &id, etag)
                .await
            {
                Ok(_) => {
                    assert!(current.is_some() && !stale);
                    model.remove(&key);
                }
                Err(EngineError {
                    code: ErrorCode::ItemNotFound,
                    ..
                }) => assert!(current.is_none()),
                Err(EngineError {
                    code: ErrorCode::PreconditionFailed,
                    ..
                }) => assert!(stale),
                Err(error) if faults && refused(&error) => refusals += 1,
                Err(other) => panic!("delete: {other}"),
            },
        }
    }
    (model, refusals)
}

/// Every point read, the read feed, a count query and the usage agree with the model, and the
/// index holds exactly the entries its items call for.
async fn check(engine: &Engine, model: &Model) {
    let container = engine.read_container("db", "c").expect("container");
    let index = engine.check_index(&container).await.expect("index check");
    assert!(index.is_consistent(), "{index:?}");
    assert!(index.stored > 0);
    for partition in ["p0", "p1", "p2"] {
        for i in 0..12 {
            let id = format!("i{i}");
            let found = engine.read_item(&container, pk(partition), &id);
            match model.get(&(partition.to_string(), id.clone())) {
                Some((n, etag)) => {
                    let item = found.expect("present in the model");
                    assert_eq!(item.to_value().expect("value")["n"], json!(n));
                    assert_eq!(&item.etag(), etag);
                }
                None => assert!(matches!(
                    found,
                    Err(EngineError {
                        code: ErrorCode::ItemNotFound,
                        ..
                    })
                )),
            }
        }
    }
    let feed = engine
        .read_feed(&container, None, RangeFilter::everything(), 1000, None)
        .await
        .expect("feed");
    let mut fed: Vec<(String, String)> = feed
        .items
        .iter()
        .map(|item| {
            let value = item.to_value().expect("value");
            (
                value["pk"].as_str().unwrap_or_default().to_string(),
                value["id"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    fed.sort();
    assert_eq!(fed, model.keys().cloned().collect::<Vec<_>>());
    // An aggregate over the whole container is the SDK's to combine, so it is asked of the
    // container's one range, as the SDK's pipeline asks it.
    let count = engine
        .query_items(
            &container,
            &QueryRequest {
                text: "SELECT VALUE COUNT(1) FROM c".into(),
                range_id: Some("0".into()),
                ..QueryRequest::default()
            },
        )
        .await
        .expect("count");
    assert_eq!(page(count).items, vec![Value::from(model.len())]);
    assert_eq!(
        engine
            .container_usage(&container)
            .await
            .expect("usage")
            .items,
        model.len() as u64
    );
}
