//! A store written before each shard kept its own TTL-event marks: its container kept one
//! watermark, and every shard starts from it. Events the old emitter logged are not logged
//! again (by a read, the maintenance or a purge), and every later expiry is logged once.

use crate::common::{pk, resolved, ttl_events_from};
use lethedb_engine::{ChangeFeedStart, Engine, ManualClock, WriteMode};
use lethedb_storage::{KeyRange, MemoryStore, Storage, Table};
use serde_json::json;
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;

const START_MS: i64 = 1_800_000_000_000;

/// The marker byte of a multi-shard container's counters key (after the container number).
const SHARD_COUNTERS_MARKER: u8 = b'S';

/// Makes the store look as one written before per-shard marks, after its emitter logged every
/// event of own-TTL expiries below `emitted_ms`: counters rows of 32 bytes, and the container's
/// change-feed state with the watermark.
fn forget_the_shard_marks(store: &MemoryStore, emitted_ms: i64) {
    let mut rows = Vec::new();
    {
        let reader: &dyn lethedb_storage::ReadTxn = &*store.read().expect("read");
        reader
            .scan(
                Table::Counters,
                &KeyRange::prefix(&[]),
                &mut |key, value| {
                    rows.push((key.to_vec(), value.to_vec()));
                    ControlFlow::Continue(())
                },
            )
            .expect("scan");
    }
    let mut write = store.write().expect("write");
    let mut marked = 0;
    let mut number = None;
    for (key, value) in rows {
        if key.get(8) == Some(&SHARD_COUNTERS_MARKER) && key.len() == 11 {
            number = Some(key[..8].to_vec());
            if value.len() > 32 {
                marked += 1;
                write.put(Table::Counters, &key, &value[..32]).expect("put");
            }
        }
    }
    assert!(marked > 0, "the new version kept marks in the counters");
    let mut state_key = number.expect("a container's counters");
    state_key.push(b'c');
    let state = json!({"own_emitted_ms": emitted_ms, "default_emitted_ms": null,
        "trimmed_lsn": 0, "indexed": false});
    write
        .put(Table::Counters, &state_key, state.to_string().as_bytes())
        .expect("put");
    write.commit().expect("commit");
}

async fn create(engine: &Engine, partition: &str, id: &str, ttl: i64) {
    let item = json!({"id": id, "pk": partition, "ttl": ttl});
    engine
        .write_item(
            &resolved(engine, "c"),
            WriteMode::Create,
            pk(partition),
            item,
            None,
        )
        .await
        .expect("create");
}

#[tokio::test]
async fn the_container_watermark_of_an_older_store_is_every_shards_start() {
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine =
        Engine::open(store.clone(), clock.clone(), crate::common::config()).expect("engine");
    engine
        .create_database(json!({"id": "db"}), None)
        .await
        .expect("db");
    let body = json!({"id": "c", "defaultTtl": -1,
        "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2}});
    engine
        .create_container("db", body, None)
        .await
        .expect("container");
    let start = ttl_events_from(&engine, "c", ChangeFeedStart::Now).await.1;
    let from = || ChangeFeedStart::Continuation {
        cursor: start.clone(),
    };
    let partitions: Vec<String> = (0..8).map(|n| format!("p{n}")).collect();
    for partition in &partitions {
        create(&engine, partition, &format!("{partition}-old"), 2).await;
        create(&engine, partition, &format!("{partition}-new"), 5).await;
    }
    clock.advance_ms(3_000);
    let (old, _) = ttl_events_from(&engine, "c", from()).await;
    assert_eq!(old.len(), 8, "the first expiries were logged");
    // As an older version would have left it: the watermark past the first expiries alone.
    forget_the_shard_marks(&store, START_MS + 3_001);

    clock.advance_ms(3_000);
    // A purge of some items first, the maintenance and a read: none logs an old event again.
    engine.sweep_once(5).await.expect("sweep");
    engine.maintain_change_feeds().await.expect("maintenance");
    let (events, _) = ttl_events_from(&engine, "c", from()).await;
    let expected: BTreeMap<String, usize> = partitions
        .iter()
        .flat_map(|partition| [format!("{partition}-old"), format!("{partition}-new")])
        .map(|id| (id, 1))
        .collect();
    assert_eq!(events, expected, "every expiry logged once");
}
