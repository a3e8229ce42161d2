//! TTL events on a PostgreSQL store shared by two engines: they are logged under the locks of
//! the shards they are logged in and no other, so neither an all-versions read nor a mass
//! expiry's events wait for a write of another shard (which holds the store-wide lock
//! shared), while they do wait for one of their own shard; and two engines logging at once,
//! by reads, by their maintenance and by purges, log each expiry exactly once.
//!
//! Like `shared_store.rs`, they run when `LETHEDB_TEST_POSTGRES` names a database.

use crate::common::{pk, resolved};
use crate::shared_store::{database_url, fresh_schema, open_store};
use crate::shared_sweep::{create, engines, ttl_events_after, CONTAINER};
use lethedb_engine::{
    ChangeFeedMode, ChangeFeedPage, ChangeFeedRequest, ChangeFeedStart, Container, Engine,
    RangeFilter,
};
use lethedb_storage::Storage;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// One page of the whole container's all-versions feed from `start`.
async fn all_versions(engine: &Engine, start: ChangeFeedStart) -> ChangeFeedPage {
    let request = ChangeFeedRequest {
        mode: ChangeFeedMode::AllVersionsAndDeletes,
        start,
        partition_key: None,
        filter: RangeFilter::everything(),
        page_items_max: Some(1_000),
    };
    engine
        .read_change_feed(&resolved(engine, CONTAINER), request)
        .await
        .expect("change feed")
}

/// The shard lock of every shard but `partition`'s (partitions enough to meet them all).
fn every_other_shard_lock(container: &Container, partition: &str) -> Vec<u64> {
    let own = container.shard_lock_of(&pk(partition).expect("pk"));
    let others: BTreeSet<u64> = (0..5_000)
        .map(|n| container.shard_lock_of(&pk(&format!("q{n}")).expect("pk")))
        .filter(|lock| *lock != own)
        .collect();
    assert_eq!(others.len(), 63, "partitions meet every other shard");
    others.into_iter().collect()
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_all_versions_read_and_a_mass_expiry_lock_only_the_shard_they_log_in() {
    let url = database_url();
    let schema = fresh_schema();
    let (a, b) = engines(&url, &schema).await;
    let container = resolved(&a, CONTAINER);
    let start = all_versions(&b, ChangeFeedStart::Now).await.etag;
    create(&a, "p", "first", 200, 1).await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;

    // Open transactions hold what writes of every other shard hold: the store-wide lock
    // shared and their shards' locks. Logging the events under the store's lock, or under
    // any other shard's, would wait for them.
    let holder = open_store(&url, &schema);
    let others = every_other_shard_lock(&container, "p");
    let open = holder.write_reading_shards(&others, &[]).expect("open");
    let events = tokio::time::timeout(Duration::from_secs(5), ttl_events_after(&b, &start))
        .await
        .expect("an all-versions read waited for writes of other shards");
    assert_eq!(events.len(), 200, "the read saw every event due before it");
    assert!(events.values().all(|count| *count == 1), "{events:?}");

    // A mass expiry, logged by the maintenance of the other engine with no reader: its events
    // go in while the other shards stay held.
    create(&b, "p", "second", 300, 1).await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let before = b.container_lsn(&container).expect("lsn");
    let maintaining = {
        let a = a.clone();
        tokio::spawn(async move { a.maintain_change_feeds().await })
    };
    let mut logged = 0;
    for _ in 0..50 {
        logged = b.container_lsn(&container).expect("lsn") - before;
        if logged >= 300 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(logged, 300, "the events waited for writes of other shards");
    drop(open);
    maintaining.await.expect("task").expect("maintenance");

    // They do lock their own shard: with a write of it open, a read's events wait.
    create(&a, "p", "third", 5, 1).await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let own = container.shard_lock_of(&pk("p").expect("pk"));
    let open = holder.write_reading_shards(&[own], &[]).expect("open");
    let reading = {
        let b = b.clone();
        let start = start.clone();
        tokio::spawn(async move { ttl_events_after(&b, &start).await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !reading.is_finished(),
        "events were logged beside an open write of their shard"
    );
    drop(open);
    let events = reading.await.expect("task");
    assert_eq!(events.len(), 505);
    assert!(events.values().all(|count| *count == 1), "{events:?}");
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_engines_logging_at_once_log_each_expiry_once() {
    let url = database_url();
    let (a, b) = engines(&url, &fresh_schema()).await;
    let start = all_versions(&a, ChangeFeedStart::Now).await.etag;
    let partitions: Vec<String> = (0..12).map(|n| format!("p{n}")).collect();
    for round in 0..3 {
        for (n, partition) in partitions.iter().enumerate() {
            let engine = if n % 2 == 0 { &a } else { &b };
            create(engine, partition, &format!("r{round}-{partition}-"), 10, 1).await;
        }
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        // Both engines' maintenance, a read through each and a purge race for the same events.
        let (x, y, _, _, z) = tokio::join!(
            a.maintain_change_feeds(),
            b.maintain_change_feeds(),
            all_versions(
                &a,
                ChangeFeedStart::Continuation {
                    cursor: start.clone()
                }
            ),
            all_versions(
                &b,
                ChangeFeedStart::Continuation {
                    cursor: start.clone()
                }
            ),
            b.sweep_once(40),
        );
        x.expect("maintenance a");
        y.expect("maintenance b");
        z.expect("sweep");
    }
    let events = ttl_events_after(&b, &start).await;
    let expected: BTreeMap<String, usize> = (0..3)
        .flat_map(|round| {
            partitions.iter().flat_map(move |partition| {
                (0..10).map(move |i| (format!("r{round}-{partition}-{i}"), 1))
            })
        })
        .collect();
    assert_eq!(events, expected, "each expiry logged exactly once");
}
