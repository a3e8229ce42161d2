//! The document store against a model: random creates, upserts, replaces, patches and deletes
//! (with and without ETag conditions) on the engine and on a `BTreeMap`, after which every point
//! read, the read feed and a count query agree with the model.

use crate::common::*;

use lethedb_engine::{EngineError, ManualClock, QueryRequest, WriteMode};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

#[tokio::test]
async fn the_engine_agrees_with_a_btreemap() {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let engine = engine_with_container(
        clock.clone(),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
    )
    .await;
    let mut rng = Rng(0xfeed);
    // (pk, id) → (document n, etag)
    let mut model: BTreeMap<(String, String), (u64, String)> = BTreeMap::new();
    for step in 0..3_000u64 {
        clock.advance_ms(1);
        let partition = format!("p{}", rng.below(3));
        let id = format!("i{}", rng.below(12));
        let key = (partition.clone(), id.clone());
        let body = json!({"id": id, "pk": partition, "n": step});
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
                .write_item("db", "c", WriteMode::Create, pk(&partition), body, None)
                .await
            {
                Ok(outcome) => {
                    assert!(current.is_none(), "create succeeded over an existing item");
                    model.insert(key, (step, outcome.item.etag()));
                }
                Err(EngineError::Conflict(_)) => assert!(current.is_some()),
                Err(other) => panic!("create: {other}"),
            },
            1 => {
                let outcome = engine
                    .write_item("db", "c", WriteMode::Upsert, pk(&partition), body, None)
                    .await
                    .expect("upsert");
                assert_eq!(outcome.created, current.is_none());
                model.insert(key, (step, outcome.item.etag()));
            }
            2 => match engine
                .write_item(
                    "db",
                    "c",
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
                Err(EngineError::NotFound(_)) => assert!(current.is_none()),
                Err(EngineError::PreconditionFailed(_)) => assert!(stale),
                Err(other) => panic!("replace: {other}"),
            },
            3 => {
                let patch = json!({"operations": [{"op": "set", "path": "/n", "value": step}]});
                match engine
                    .patch_item("db", "c", pk(&partition), &id, patch, etag.clone())
                    .await
                {
                    Ok(outcome) => {
                        assert!(current.is_some() && !stale);
                        model.insert(key, (step, outcome.item.etag()));
                    }
                    Err(EngineError::NotFound(_)) => assert!(current.is_none()),
                    Err(EngineError::PreconditionFailed(_)) => assert!(stale),
                    Err(other) => panic!("patch: {other}"),
                }
            }
            _ => match engine
                .delete_item("db", "c", pk(&partition), &id, etag)
                .await
            {
                Ok(_) => {
                    assert!(current.is_some() && !stale);
                    model.remove(&key);
                }
                Err(EngineError::NotFound(_)) => assert!(current.is_none()),
                Err(EngineError::PreconditionFailed(_)) => assert!(stale),
                Err(other) => panic!("delete: {other}"),
            },
        }
    }
    let container = engine.read_container("db", "c").expect("container");
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
                None => assert!(matches!(found, Err(EngineError::NotFound(_)))),
            }
        }
    }
    let feed = engine
        .read_feed(&container, None, 1000, None)
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
    let count = engine
        .query_items(
            &container,
            &QueryRequest {
                text: "SELECT VALUE COUNT(1) FROM c".into(),
                enable_cross_partition: true,
                ..QueryRequest::default()
            },
        )
        .await
        .expect("count");
    assert_eq!(count.items, vec![Value::from(model.len())]);
    assert_eq!(
        engine
            .container_usage(&container)
            .await
            .expect("usage")
            .items,
        model.len() as u64
    );
}
