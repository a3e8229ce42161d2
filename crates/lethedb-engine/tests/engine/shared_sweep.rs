//! The sweeper's purges on a PostgreSQL store shared by two engines: a purge takes the locks
//! of the shards whose items it deletes and no other, so it neither waits for nor holds back
//! a write of another shard (from any process), while a write of its own shard and it take
//! turns; whatever it purged stays gone, every live item stays, and each expiry's TTL event is
//! logged exactly once, whether a plan's job or the purge itself logged it.
//!
//! Like `shared_store.rs`, they run when `LETHEDB_TEST_POSTGRES` names a database.

use crate::common::{pk, resolved, ttl_events_from};
use crate::shared_store::{database_url, fresh_schema, open_store, pair_in};
use lethedb_engine::{
    ChangeFeedMode, ChangeFeedRequest, ChangeFeedStart, Container, Engine, ErrorCode, FeedCursor,
    RangeFilter, WriteMode,
};
use lethedb_storage::Storage;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

/// The container the tests purge: hash v2, whose logical partitions spread over the shards by
/// EPK (a hash v1 EPK starts with the same bits for every value, so all its partitions share
/// one shard).
pub(crate) const CONTAINER: &str = "v2";

/// Two engines on `schema` with container [`CONTAINER`] (`/pk`, hash v2, TTL on, no default).
pub(crate) async fn engines(url: &str, schema: &str) -> (Engine, Engine) {
    let (a, b, _) = pair_in(url, schema).await;
    let body = json!({"id": CONTAINER, "defaultTtl": -1,
        "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2}});
    a.create_container("db", body, None)
        .await
        .expect("container");
    (a, b)
}

/// Creates `count` items `{prefix}{i}` in partition `partition` through `engine`, with the
/// item-level `ttl` given.
pub(crate) async fn create(engine: &Engine, partition: &str, prefix: &str, count: usize, ttl: i64) {
    for i in 0..count {
        let body = json!({"id": format!("{prefix}{i}"), "pk": partition, "ttl": ttl});
        engine
            .write_item(
                &resolved(engine, CONTAINER),
                WriteMode::Create,
                pk(partition),
                body,
                None,
            )
            .await
            .expect("create");
    }
}

/// A partition whose shard is not `partition`'s.
fn partition_of_another_shard(container: &Container, partition: &str) -> String {
    let taken = container.shard_lock_of(&pk(partition).expect("pk"));
    (0..1_000)
        .map(|n| format!("q{n}"))
        .find(|other| container.shard_lock_of(&pk(other).expect("pk")) != taken)
        .expect("another shard")
}

/// Whether item `id` of `partition` is visible through `engine`.
fn visible(engine: &Engine, partition: &str, id: &str) -> bool {
    match engine.read_item(&resolved(engine, CONTAINER), pk(partition), id) {
        Ok(_) => true,
        Err(error) if error.code == ErrorCode::ItemNotFound => false,
        Err(error) => panic!("read: {error:?}"),
    }
}

/// Asserts that the container holds exactly `live` items, none expired and unswept.
async fn assert_only_live_items_left(engine: &Engine, live: u64) {
    let container = resolved(engine, CONTAINER);
    let usage = engine.container_usage(&container).await.expect("usage");
    assert_eq!(usage.items, live, "items left after the sweeps");
    let overview = engine.ttl_overview(&container, None).await.expect("ttl");
    assert_eq!(overview.expired_unswept, 0, "expired items left");
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_purge_locks_only_its_shard_so_other_shards_writes_never_wait_for_it() {
    let url = database_url();
    let schema = fresh_schema();
    let (a, b) = engines(&url, &schema).await;
    let container = resolved(&a, CONTAINER);
    let other = partition_of_another_shard(&container, "p");
    create(&a, "p", "gone", 30, 1).await;
    create(&a, "p", "live", 5, 3_600).await;
    create(&b, &other, "other", 3, 3_600).await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;

    // A transaction of the other shard stays open, holding what a write of a partition there
    // holds: the store-wide lock shared and that shard's lock. A purge under the store's lock
    // would wait for it; a purge of its own shard does not.
    let holder = open_store(&url, &schema);
    let other_lock = container.shard_lock_of(&pk(&other).expect("pk"));
    let open = holder
        .write_reading_shards(&[other_lock], &[])
        .expect("open");
    let swept = tokio::time::timeout(Duration::from_secs(5), a.sweep_once(1_000))
        .await
        .expect("the purge waited for a write of another shard")
        .expect("sweep");
    assert_eq!(swept.0, 30);
    drop(open);

    // The purge does lock its own shard: it waits for an open write of that shard.
    create(&b, "p", "later", 10, 1).await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let own_lock = container.shard_lock_of(&pk("p").expect("pk"));
    let open = holder.write_reading_shards(&[own_lock], &[]).expect("open");
    let sweeping = {
        let b = b.clone();
        tokio::spawn(async move { b.sweep_once(1_000).await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !sweeping.is_finished(),
        "a purge went ahead beside an open write of its shard"
    );
    drop(open);
    let (deleted, _) = sweeping.await.expect("task").expect("sweep");
    assert_eq!(deleted, 10);

    // Nothing purged comes back, nothing live went, nothing expired is left.
    assert_eq!(a.sweep_once(1_000).await.expect("sweep").0, 0);
    for i in 0..30 {
        assert!(!visible(&b, "p", &format!("gone{i}")), "gone{i} is back");
    }
    for i in 0..5 {
        assert!(visible(&b, "p", &format!("live{i}")), "live{i} was deleted");
    }
    for i in 0..3 {
        assert!(
            visible(&a, &other, &format!("other{i}")),
            "other{i} was deleted"
        );
    }
    assert_only_live_items_left(&a, 8).await;
}

/// Every TTL event after `cursor`, counted by item id.
pub(crate) async fn ttl_events_after(
    engine: &Engine,
    cursor: &FeedCursor,
) -> BTreeMap<String, usize> {
    let start = ChangeFeedStart::Continuation {
        cursor: cursor.clone(),
    };
    ttl_events_from(engine, CONTAINER, start).await.0
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_shards_purge_logs_each_ttl_event_once_whether_or_not_the_emitter_came_first() {
    let url = database_url();
    let (a, b) = engines(&url, &fresh_schema()).await;
    let container = resolved(&a, CONTAINER);
    let now = a
        .read_change_feed(
            &container,
            ChangeFeedRequest {
                mode: ChangeFeedMode::AllVersionsAndDeletes,
                start: ChangeFeedStart::Now,
                partition_key: None,
                filter: RangeFilter::everything(),
                page_items_max: None,
            },
        )
        .await
        .expect("now");
    // Items of several shards. The first expire and are logged by the emitter (a read of the
    // all-versions feed runs it) before any purge.
    let partitions: Vec<String> = (0..6).map(|n| format!("p{n}")).collect();
    for partition in &partitions {
        create(&a, partition, &format!("{partition}-early"), 4, 1).await;
        create(&a, partition, &format!("{partition}-kept"), 2, 3_600).await;
    }
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let early = ttl_events_after(&b, &now.etag).await;
    assert_eq!(early.len(), 24, "the emitter logged the first expiries");
    // The next expire with no reader and no emitter: each purge logs its own items' events.
    for partition in &partitions {
        create(&b, partition, &format!("{partition}-late"), 3, 1).await;
    }
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let mut deleted = 0;
    for _ in 0..20 {
        let (x, y) = tokio::join!(a.sweep_once(7), b.sweep_once(7));
        deleted += x.expect("sweep a").0 + y.expect("sweep b").0;
        if deleted >= 42 {
            break;
        }
    }
    assert_eq!(deleted, 6 * 7, "each expired item deleted once");
    let events = ttl_events_after(&a, &now.etag).await;
    let expected: BTreeMap<String, usize> = partitions
        .iter()
        .flat_map(|partition| {
            let early = (0..4).map(move |i| format!("{partition}-early{i}"));
            let late = (0..3).map(move |i| format!("{partition}-late{i}"));
            early.chain(late).map(|id| (id, 1))
        })
        .collect();
    assert_eq!(
        events, expected,
        "one event per expired item, none for a live one"
    );
    assert_only_live_items_left(&b, 12).await;
}
