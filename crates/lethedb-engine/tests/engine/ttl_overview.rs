//! A container's time-to-live figures: the "expiring soon" histogram, the backlog of expired
//! items the sweeper has not deleted yet, the sweeper's deletion total, and the preview of a
//! `defaultTtl` change, each checked against items placed at known instants.

use crate::common::*;

use lethedb_engine::{Engine, ExpiringCounts, ManualClock, TtlOverview, TtlPreview, WriteMode};
use serde_json::{json, Value};
use std::sync::Arc;

const START_MS: i64 = 1_800_000_000_000;

async fn write(engine: &Engine, item: Value) {
    engine
        .write_item(
            &resolved(engine, "c"),
            WriteMode::Upsert,
            pk("p"),
            item,
            None,
        )
        .await
        .expect("write");
}

async fn overview(engine: &Engine, proposed: Option<Option<i64>>) -> TtlOverview {
    let container = engine.read_container("db", "c").expect("container");
    engine
        .ttl_overview(&container, proposed)
        .await
        .expect("overview")
}

fn counts(next_minute: u64, next_hour: u64, next_day: u64) -> ExpiringCounts {
    ExpiringCounts {
        next_minute,
        next_hour,
        next_day,
    }
}

/// Items written at the start: `own-30s`, `own-2h` and `own-2d` with their own ttl, `permanent`
/// (`ttl: -1`), and `default-a`, `default-b` that follow the container's 600 s default.
async fn populated() -> (Engine, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine = engine_with_container(
        clock.clone(),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 600}),
    )
    .await;
    for (id, ttl) in [("own-30s", 30), ("own-2h", 7_200), ("own-2d", 172_800)] {
        write(&engine, json!({"id": id, "pk": "p", "ttl": ttl})).await;
    }
    write(&engine, json!({"id": "permanent", "pk": "p", "ttl": -1})).await;
    write(&engine, json!({"id": "default-a", "pk": "p"})).await;
    write(&engine, json!({"id": "default-b", "pk": "p"})).await;
    (engine, clock)
}

#[tokio::test]
async fn the_histogram_counts_what_expires_within_each_window() {
    let (engine, clock) = populated().await;
    let now = overview(&engine, None).await;
    assert_eq!(now.now_ms, START_MS);
    assert_eq!(now.default_ttl_secs, Some(600));
    // Within a minute: own-30s. Within an hour: the two defaults (600 s) too. Within a day:
    // own-2h. own-2d and the permanent item are beyond every window.
    assert_eq!(now.expiring, counts(1, 3, 4));
    assert_eq!((now.expired_unswept, now.oldest_expired_age_ms), (0, 0));
    assert!(now.complete);
    assert_eq!(now.preview, None);

    // 30 s later own-30s has expired, at that very instant, and waits for the sweeper.
    clock.advance_ms(30_000);
    let later = overview(&engine, None).await;
    assert_eq!(later.expiring, counts(0, 2, 3));
    assert_eq!((later.expired_unswept, later.oldest_expired_age_ms), (1, 0));
    clock.advance_ms(5_000);
    assert_eq!(overview(&engine, None).await.oldest_expired_age_ms, 5_000);

    // The sweeper deletes it: the backlog is gone and the total counts it.
    let (deleted, _) = engine.sweep_once(100).await.expect("sweep");
    assert_eq!(deleted, 1);
    let swept = overview(&engine, None).await;
    assert_eq!((swept.expired_unswept, swept.deleted_total), (0, 1));

    // A rewrite restarts the countdown: default-a now expires 600 s from now, still within the
    // hour, and the counts are unchanged.
    write(&engine, json!({"id": "default-a", "pk": "p", "v": 2})).await;
    assert_eq!(overview(&engine, None).await.expiring, counts(0, 2, 3));
}

#[tokio::test]
async fn a_preview_counts_what_a_new_default_would_expire_at_once() {
    let (engine, clock) = populated().await;
    clock.advance_ms(120_000);
    // A 60 s default: the two default items were written 120 s ago, so both expire at once.
    let shorter = overview(&engine, Some(Some(60))).await;
    assert_eq!(
        shorter.preview,
        Some(TtlPreview {
            default_ttl_secs: Some(60),
            expire_at_once: 2,
            expiring: counts(0, 0, 1),
        })
    );
    // The preview changes nothing.
    let after = overview(&engine, None).await;
    assert_eq!(after.default_ttl_secs, Some(600));
    assert_eq!(after.expiring, counts(0, 2, 3));
    // On without a default: nothing expires at once, the defaults never expire.
    let on = overview(&engine, Some(Some(-1))).await;
    assert_eq!(
        on.preview.map(|p| (p.expire_at_once, p.expiring)),
        Some((0, counts(0, 0, 1)))
    );
    // Off: nothing expires at all.
    let off = overview(&engine, Some(None)).await;
    assert_eq!(
        off.preview.map(|p| (p.expire_at_once, p.expiring)),
        Some((0, counts(0, 0, 0)))
    );

    // Saving the shorter default does exactly what the preview said.
    engine
        .replace_container(
            "db",
            "c",
            json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 60}),
            None,
        )
        .await
        .expect("replace");
    let saved = overview(&engine, None).await;
    // own-30s expired 90 s ago, and the two defaults now: three await the sweeper.
    assert_eq!(saved.expired_unswept, 3);
    assert_eq!(saved.oldest_expired_age_ms, 90_000);
    assert_eq!(saved.expiring, counts(0, 0, 1));
}
