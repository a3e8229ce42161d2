//! Plans and their jobs interleaved by hand: a job whose shard changed since its plan's
//! snapshot (a write removed an expired version and logged its event, or another plan's job
//! moved the marks) looks again under the lock, so every expiry is logged exactly once; and a
//! plan only for moving marks moves none once its shard changed.

use crate::clock::ManualClock;
use crate::engine::{Engine, EngineConfig};
use crate::error::ErrorCode;
use crate::feed::change_feed::{ChangeFeedMode, ChangeFeedRequest, ChangeFeedStart};
use crate::feed::cursor::FeedCursor;
use crate::items::rules::WriteMode;
use crate::partitions::partition_key::PartitionKeyValue;
use crate::partitions::ranges::RangeFilter;
use lethedb_storage::MemoryStore;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

const START_MS: i64 = 1_800_000_000_000;

fn wire_status(_: ErrorCode) -> (u16, &'static str) {
    (400, "BadRequest")
}

fn partition(name: &str) -> Option<PartitionKeyValue> {
    PartitionKeyValue::parse_json_text(&json!([name]).to_string()).ok()
}

async fn engine() -> (Engine, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(START_MS));
    let store = Arc::new(MemoryStore::new());
    let engine =
        Engine::open(store, clock.clone(), EngineConfig::new(wire_status)).expect("engine");
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
    (engine, clock)
}

async fn upsert(engine: &Engine, partition_name: &str, id: &str, ttl: i64) {
    let container = engine.read_container("db", "c").expect("container");
    let body = json!({"id": id, "pk": partition_name, "ttl": ttl});
    engine
        .write_item(
            &container,
            WriteMode::Upsert,
            partition(partition_name),
            body,
            None,
        )
        .await
        .expect("upsert");
}

/// The TTL events after `cursor`, by item id.
async fn ttl_events(engine: &Engine, cursor: &FeedCursor) -> BTreeMap<String, usize> {
    let container = engine.read_container("db", "c").expect("container");
    let request = ChangeFeedRequest {
        mode: ChangeFeedMode::AllVersionsAndDeletes,
        start: ChangeFeedStart::Continuation {
            cursor: cursor.clone(),
        },
        partition_key: None,
        filter: RangeFilter::everything(),
        page_items_max: Some(1_000),
    };
    let page = engine
        .read_change_feed(&container, request)
        .await
        .expect("feed");
    let mut events = BTreeMap::new();
    for bytes in &page.entries {
        let entry: Value = serde_json::from_slice(bytes).expect("json");
        if entry["metadata"]["timeToLiveExpired"] == json!(true) {
            let id = entry["metadata"]["id"].as_str().expect("id").to_string();
            *events.entry(id).or_insert(0) += 1;
        }
    }
    events
}

async fn cursor_now(engine: &Engine) -> FeedCursor {
    let container = engine.read_container("db", "c").expect("container");
    let request = ChangeFeedRequest {
        mode: ChangeFeedMode::AllVersionsAndDeletes,
        start: ChangeFeedStart::Now,
        partition_key: None,
        filter: RangeFilter::everything(),
        page_items_max: None,
    };
    engine
        .read_change_feed(&container, request)
        .await
        .expect("now")
        .etag
}

#[tokio::test]
async fn stale_plans_look_again_and_log_each_expiry_once() {
    let (engine, clock) = engine().await;
    let start = cursor_now(&engine).await;
    for partition_name in ["p", "q", "r"] {
        for n in 0..4 {
            upsert(&engine, partition_name, &format!("{partition_name}{n}"), 1).await;
        }
    }
    clock.advance_ms(2_000);
    let container = engine.read_container("db", "c").expect("container");
    let every = container.shards_in(&RangeFilter::everything());
    // Two plans from one snapshot, as two processes would make them.
    let (first, second) = {
        let reader = engine.inner.store.read().expect("read");
        let now_ms = engine.now_in(&*reader);
        let plan = |level| {
            engine
                .plan_ttl_events(&*reader, &container, &every, now_ms, level)
                .expect("plan")
        };
        (plan(false), plan(false))
    };
    assert_eq!(
        first
            .shards
            .iter()
            .map(|shard| shard.events.len())
            .sum::<usize>(),
        12
    );
    // A write over an expired version logs its event before the plans' jobs run.
    upsert(&engine, "p", "p0", 3_600).await;
    assert!(engine
        .apply_ttl_plans(&container, first.shards)
        .await
        .expect("first"));
    assert!(engine
        .apply_ttl_plans(&container, second.shards)
        .await
        .expect("second"));
    let events = ttl_events(&engine, &start).await;
    let expected: BTreeMap<String, usize> = ["p", "q", "r"]
        .iter()
        .flat_map(|name| (0..4).map(move |n| (format!("{name}{n}"), 1)))
        .collect();
    assert_eq!(events, expected, "each expiry logged once");
}

#[tokio::test]
async fn a_plan_only_for_marks_moves_none_once_its_shard_changed() {
    let (engine, clock) = engine().await;
    let start = cursor_now(&engine).await;
    upsert(&engine, "p", "early", 1).await;
    clock.advance_ms(2_000);
    let container = engine.read_container("db", "c").expect("container");
    let p_shard = container.shard_of(&partition("p").expect("pk"));
    let every = container.shards_in(&RangeFilter::everything());
    // The event of `early` is logged; the other shards lag behind.
    let plan = {
        let reader = engine.inner.store.read().expect("read");
        let now_ms = engine.now_in(&*reader);
        engine
            .plan_ttl_events(&*reader, &container, &every, now_ms, false)
            .expect("plan")
    };
    assert!(engine
        .apply_ttl_plans(&container, plan.shards)
        .await
        .expect("apply"));
    // Enough logged entries below p's mark for a levelling plan.
    for n in 0..300 {
        upsert(&engine, "p", &format!("x{n}"), 1).await;
    }
    clock.advance_ms(2_000);
    let catch_up = {
        let reader = engine.inner.store.read().expect("read");
        let now_ms = engine.now_in(&*reader);
        engine
            .plan_ttl_events(&*reader, &container, &every, now_ms, false)
            .expect("plan")
    };
    assert!(engine
        .apply_ttl_plans(&container, catch_up.shards)
        .await
        .expect("apply"));
    // The 300 are logged but not purged: a levelling plan moves the lagging shards' marks.
    let level = {
        let reader = engine.inner.store.read().expect("read");
        let now_ms = engine.now_in(&*reader);
        engine
            .plan_ttl_events(&*reader, &container, &every, now_ms, true)
            .expect("plan")
    };
    let lagging: Vec<_> = level.shards.iter().map(|shard| shard.shard).collect();
    assert!(
        !lagging.is_empty() && !lagging.contains(&p_shard),
        "{lagging:?}"
    );
    assert!(level.shards.iter().all(super::ShardPlan::only_moves_marks));
    // One of them changes before the jobs run: its marks stay, the others move.
    let changed = lagging[0];
    let other = (0..2_000)
        .map(|n| format!("z{n}"))
        .find(|name| container.shard_of(&partition(name).expect("pk")) == changed)
        .expect("a partition of that shard");
    upsert(&engine, &other, "live", 3_600).await;
    assert!(engine
        .apply_ttl_plans(&container, level.shards)
        .await
        .expect("apply"));
    let reader = engine.inner.store.read().expect("read");
    let marks = |shard| {
        crate::counters::read_counters(&*reader, &container, shard)
            .expect("counters")
            .feed
    };
    assert_eq!(marks(changed), None, "a changed shard's marks stayed");
    assert!(lagging[1..].iter().all(|shard| marks(*shard).is_some()));
    drop(reader);
    let events = ttl_events(&engine, &start).await;
    assert_eq!(events.len(), 301);
    assert!(events.values().all(|count| *count == 1));
}
