//! The change feed on the engine with the injected clock: latest-version order and contents,
//! LSN groups kept whole, start positions, scopes, the all-versions shapes, and the TTL events
//! (emitted at the expiry instant, once, never for a rewritten item, at once when TTL is turned
//! on late, whether the sweeper ran before or not), and retention.

use crate::common::{atomic_batch, pk, resolved, upsert_document as upsert};
use lethedb_engine::BatchOperation;
use lethedb_engine::RangeFilter;
use lethedb_engine::{
    ChangeFeedMode, ChangeFeedPage, ChangeFeedRequest, ChangeFeedStart, Engine, EngineConfig,
    ErrorCode, FeedCursor, ManualClock,
};
use serde_json::{json, Value};
use std::sync::Arc;

const START_MS: i64 = 1_800_000_000_000;

async fn engine(default_ttl: Option<i64>) -> (Engine, Arc<ManualClock>) {
    engine_with(crate::common::config(), default_ttl, None).await
}

async fn engine_with(
    config: EngineConfig,
    default_ttl: Option<i64>,
    retention_minutes: Option<i64>,
) -> (Engine, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine = Engine::open(crate::common::test_store(), clock.clone(), config).expect("engine");
    engine
        .create_database(json!({"id": "db"}), None)
        .await
        .expect("db");
    let mut body =
        json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2}});
    if let Some(ttl) = default_ttl {
        body["defaultTtl"] = json!(ttl);
    }
    if let Some(minutes) = retention_minutes {
        body["changeFeedPolicy"] = json!({"retentionDuration": minutes});
    }
    engine
        .create_container("db", body, None)
        .await
        .expect("container");
    (engine, clock)
}

async fn read(
    engine: &Engine,
    mode: ChangeFeedMode,
    start: ChangeFeedStart,
    page: Option<usize>,
) -> Result<ChangeFeedPage, lethedb_engine::EngineError> {
    read_scoped(engine, mode, start, page, None).await
}

async fn read_scoped(
    engine: &Engine,
    mode: ChangeFeedMode,
    start: ChangeFeedStart,
    page: Option<usize>,
    partition: Option<&str>,
) -> Result<ChangeFeedPage, lethedb_engine::EngineError> {
    let container = engine.read_container("db", "c").expect("container");
    let request = ChangeFeedRequest {
        mode,
        start,
        partition_key: partition.and_then(pk),
        filter: RangeFilter::everything(),
        page_items_max: page,
    };
    engine.read_change_feed(&container, request).await
}

fn documents(page: &ChangeFeedPage) -> Vec<Value> {
    page.entries
        .iter()
        .map(|bytes| serde_json::from_slice(bytes).expect("json"))
        .collect()
}

fn ids(page: &ChangeFeedPage) -> Vec<String> {
    documents(page)
        .iter()
        .map(|d| d["id"].as_str().expect("id").to_string())
        .collect()
}

/// The page after a cursor, at the default page size.
async fn after(
    engine: &Engine,
    mode: ChangeFeedMode,
    cursor: &FeedCursor,
) -> Result<ChangeFeedPage, lethedb_engine::EngineError> {
    let cursor = cursor.clone();
    read(engine, mode, ChangeFeedStart::Continuation { cursor }, None).await
}

const LATEST: ChangeFeedMode = ChangeFeedMode::LatestVersion;
const ALL: ChangeFeedMode = ChangeFeedMode::AllVersionsAndDeletes;

#[tokio::test]
async fn latest_version_gives_current_versions_in_lsn_order() {
    let (engine, clock) = engine(None).await;
    for id in ["a", "b", "c"] {
        upsert(&engine, json!({"id": id, "pk": "p", "v": 1})).await;
        clock.advance_ms(10);
    }
    upsert(&engine, json!({"id": "a", "pk": "p", "v": 2})).await;
    engine
        .delete_item(&resolved(&engine, "c"), pk("p"), "b", None)
        .await
        .expect("delete");
    let page = read(&engine, LATEST, ChangeFeedStart::Beginning, None)
        .await
        .expect("page");
    assert_eq!(ids(&page), ["c", "a"]);
    let docs = documents(&page);
    assert_eq!(docs[1]["v"], json!(2));
    // The delete of "b" took the partition's next LSN after "a"'s second version.
    assert_eq!(docs[1]["_lsn"], json!(page.lsn - 1));
    assert!(!page.not_modified);
    // Nothing new after the page: 304 with the container's LSN, even after a delete.
    let again = after(&engine, LATEST, &page.etag).await.expect("page");
    assert!(again.not_modified);
    assert_eq!(again.etag, page.etag);
    // Now: nothing until the next write, which then comes alone.
    let now = read(&engine, LATEST, ChangeFeedStart::Now, None)
        .await
        .expect("now");
    assert!(now.not_modified);
    upsert(&engine, json!({"id": "d", "pk": "q"})).await;
    let next = after(&engine, LATEST, &now.etag).await.expect("next");
    assert_eq!(ids(&next), ["d"]);
    // A point in time: the versions written at or after it.
    let since = read(
        &engine,
        LATEST,
        ChangeFeedStart::PointInTime { ms: START_MS + 15 },
        None,
    )
    .await
    .expect("since");
    // Each logical partition's changes in order; the partitions' shards in shard order.
    let in_p: Vec<String> = ids(&since).into_iter().filter(|id| id != "d").collect();
    assert_eq!(in_p, ["c", "a"]);
    assert_eq!(ids(&since).len(), 3);
    // One logical partition.
    let scoped = read_scoped(&engine, LATEST, ChangeFeedStart::Beginning, None, Some("q"))
        .await
        .expect("scoped");
    assert_eq!(ids(&scoped), ["d"]);
}

#[tokio::test]
async fn pages_never_split_a_transaction() {
    let (engine, _clock) = engine(None).await;
    upsert(&engine, json!({"id": "first", "pk": "p"})).await;
    let operations = (0..5)
        .map(|i| BatchOperation {
            kind: "Create".into(),
            id: None,
            body: Some(json!({"id": format!("b{i}"), "pk": "p"})),
            if_match: None,
            partition_key: None,
        })
        .collect();
    atomic_batch(&engine, operations).await;
    upsert(&engine, json!({"id": "last", "pk": "p"})).await;
    let first = read(&engine, LATEST, ChangeFeedStart::Beginning, Some(2))
        .await
        .expect("page");
    // The page bound is 2, but the batch's five writes share one LSN and come together.
    assert_eq!(ids(&first), ["first", "b0", "b1", "b2", "b3", "b4"]);
    let rest = read(
        &engine,
        LATEST,
        ChangeFeedStart::Continuation {
            cursor: first.etag.clone(),
        },
        Some(2),
    )
    .await
    .expect("rest");
    assert_eq!(ids(&rest), ["last"]);
}

#[tokio::test]
async fn all_versions_logs_creates_replaces_and_deletes() {
    let (engine, _clock) = engine(None).await;
    let now = read(&engine, ALL, ChangeFeedStart::Now, None)
        .await
        .expect("now");
    assert!(now.not_modified);
    upsert(&engine, json!({"id": "a", "pk": "p", "v": 1})).await;
    upsert(&engine, json!({"id": "a", "pk": "p", "v": 2})).await;
    engine
        .delete_item(&resolved(&engine, "c"), pk("p"), "a", None)
        .await
        .expect("delete");
    let page = after(&engine, ALL, &now.etag).await.expect("page");
    let entries = documents(&page);
    let operations: Vec<&str> = entries
        .iter()
        .map(|e| e["metadata"]["operationType"].as_str().expect("op"))
        .collect();
    assert_eq!(operations, ["create", "replace", "delete"]);
    assert_eq!(entries[0]["current"]["v"], json!(1));
    assert!(entries[0]["metadata"].get("previousImageLSN").is_none());
    assert_eq!(
        entries[1]["metadata"]["previousImageLSN"],
        entries[0]["metadata"]["lsn"]
    );
    assert_eq!(entries[2]["current"], json!({}));
    assert!(entries[2].get("previous").is_none(), "{}", entries[2]);
    assert_eq!(entries[2]["metadata"]["id"], json!("a"));
    assert_eq!(entries[2]["metadata"]["partitionKey"], json!({"pk": "p"}));
    assert_eq!(entries[2]["metadata"]["timeToLiveExpired"], json!(false));
    assert!(entries[0]["metadata"].get("timeToLiveExpired").is_none());
    // Only now or a continuation.
    for start in [
        ChangeFeedStart::Beginning,
        ChangeFeedStart::PointInTime { ms: START_MS },
    ] {
        let refused = read(&engine, ALL, start, None).await.expect_err("refused");
        assert_eq!(refused.code, ErrorCode::ChangeFeedOutsideRetention);
        assert!(refused
            .message()
            .contains("You must read the change feed from within the retention period."));
    }
}

fn ttl_deletes(page: &ChangeFeedPage) -> Vec<(String, i64)> {
    documents(page)
        .iter()
        .filter(|e| e["metadata"]["timeToLiveExpired"] == json!(true))
        .map(|e| {
            (
                e["metadata"]["id"].as_str().expect("id").to_string(),
                e["metadata"]["crts"].as_i64().expect("crts"),
            )
        })
        .collect()
}

#[tokio::test]
async fn ttl_deletes_are_readable_at_the_expiry_instant_once_and_not_for_rewrites() {
    let (engine, clock) = engine(Some(-1)).await;
    let now = read(&engine, ALL, ChangeFeedStart::Now, None)
        .await
        .expect("now");
    upsert(&engine, json!({"id": "gone", "pk": "p", "ttl": 10})).await;
    upsert(&engine, json!({"id": "kept", "pk": "p", "ttl": 10})).await;
    let cursor = ChangeFeedStart::Continuation {
        cursor: now.etag.clone(),
    };
    // One millisecond before expiry "kept" is rewritten: its old expiry must emit nothing.
    clock.advance_ms(9_999);
    upsert(&engine, json!({"id": "kept", "pk": "p", "ttl": 10, "v": 2})).await;
    let before = read(&engine, ALL, cursor.clone(), None)
        .await
        .expect("before");
    assert!(ttl_deletes(&before).is_empty());
    // At the instant: the event is there, though nothing purged the item.
    clock.advance_ms(1);
    let at = read(&engine, ALL, cursor.clone(), None).await.expect("at");
    let expiry_secs = (START_MS + 10_000) / 1000;
    assert_eq!(ttl_deletes(&at), [("gone".to_string(), expiry_secs)]);
    // A latest-version reader never sees it again.
    let latest = read(&engine, LATEST, ChangeFeedStart::Beginning, None)
        .await
        .expect("latest");
    assert_eq!(ids(&latest), ["kept"]);
    // The sweeper's purge adds no second event; reading again finds the same single one.
    engine.sweep_once(1000).await.expect("sweep");
    let after = read(&engine, ALL, cursor, None).await.expect("after");
    assert_eq!(ttl_deletes(&after), [("gone".to_string(), expiry_secs)]);
}

#[tokio::test]
async fn a_sweep_before_any_reader_still_logs_the_event() {
    let (engine, clock) = engine(Some(5)).await;
    let now = read(&engine, ALL, ChangeFeedStart::Now, None)
        .await
        .expect("now");
    upsert(&engine, json!({"id": "a", "pk": "p"})).await;
    clock.advance_ms(5_000);
    let (deleted, _) = engine.sweep_once(1000).await.expect("sweep");
    assert_eq!(deleted, 1);
    let page = after(&engine, ALL, &now.etag).await.expect("page");
    assert_eq!(
        ttl_deletes(&page),
        [("a".to_string(), (START_MS + 5_000) / 1000)]
    );
}

#[tokio::test]
async fn turning_ttl_on_late_emits_every_old_expiry_at_once() {
    let (engine, clock) = engine(None).await;
    for id in ["a", "b", "c"] {
        upsert(&engine, json!({"id": id, "pk": "p"})).await;
    }
    let now = read(&engine, ALL, ChangeFeedStart::Now, None)
        .await
        .expect("now");
    clock.advance_ms(60_000);
    engine
        .replace_container(
            "db",
            "c",
            json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2}, "defaultTtl": 30}),
            None,
        )
        .await
        .expect("ttl on");
    let page = after(&engine, ALL, &now.etag).await.expect("page");
    let mut gone: Vec<String> = ttl_deletes(&page).into_iter().map(|(id, _)| id).collect();
    gone.sort();
    assert_eq!(gone, ["a", "b", "c"]);
    // Their LSNs come after the cursor handed out before.
    for entry in documents(&page) {
        assert!(entry["metadata"]["lsn"].as_u64().expect("lsn") > now.lsn);
    }
}

#[tokio::test]
async fn the_log_is_trimmed_past_its_retention() {
    let (engine, clock) = engine(None).await;
    let now = read(&engine, ALL, ChangeFeedStart::Now, None)
        .await
        .expect("now");
    upsert(&engine, json!({"id": "old", "pk": "p"})).await;
    // Past the default retention of 60 minutes, a read trims the old entry: a cursor from
    // before it is outside the retention period.
    clock.advance_ms(61 * 60_000);
    upsert(&engine, json!({"id": "new", "pk": "p"})).await;
    let refused = after(&engine, ALL, &now.etag).await.expect_err("trimmed");
    assert_eq!(refused.code, ErrorCode::ChangeFeedOutsideRetention);
    let latest = read(&engine, LATEST, ChangeFeedStart::Beginning, None)
        .await
        .expect("latest");
    assert_eq!(ids(&latest), ["old", "new"]);
}

/// Whether a cursor taken before one write is still within retention `minutes_later`.
async fn survives(engine: &Engine, clock: &ManualClock, minutes_later: i64) -> bool {
    let now = read(engine, ALL, ChangeFeedStart::Now, None)
        .await
        .expect("now");
    upsert(engine, json!({"id": "old", "pk": "p"})).await;
    clock.advance_ms(minutes_later * 60_000);
    read(
        engine,
        ALL,
        ChangeFeedStart::Continuation {
            cursor: now.etag.clone(),
        },
        None,
    )
    .await
    .is_ok()
}

#[tokio::test]
async fn retention_follows_the_server_default_and_the_container_policy() {
    let short = EngineConfig {
        change_log_retention_minutes: 5,
        ..crate::common::config()
    };
    let (engine, clock) = engine_with(short.clone(), None, None).await;
    assert!(
        !survives(&engine, &clock, 6).await,
        "the server default of 5 minutes"
    );
    let (engine, clock) = engine_with(short, None, Some(120)).await;
    assert!(
        survives(&engine, &clock, 61).await,
        "the container's 120 minutes win"
    );
    let (engine, clock) = engine_with(crate::common::config(), None, None).await;
    assert!(survives(&engine, &clock, 59).await, "60 minutes by default");
}

#[tokio::test]
async fn maintenance_emits_due_events_without_a_reader() {
    let (engine, clock) = engine(Some(-1)).await;
    upsert(&engine, json!({"id": "a", "pk": "p", "ttl": 2})).await;
    let container = engine.read_container("db", "c").expect("container");
    let before = engine.container_lsn(&container).expect("lsn");
    assert_eq!(engine.maintain_change_feeds().await.expect("idle"), 0);
    clock.advance_ms(2_000);
    assert_eq!(engine.maintain_change_feeds().await.expect("due"), 1);
    // The event took an LSN without anyone reading; a second pass has nothing to do.
    assert_eq!(engine.container_lsn(&container).expect("lsn"), before + 1);
    assert_eq!(engine.maintain_change_feeds().await.expect("done"), 0);
}

#[tokio::test]
async fn a_mass_expiry_is_logged_whole_over_several_bounded_jobs() {
    let (engine, clock) = engine(Some(-1)).await;
    let now = read(&engine, ALL, ChangeFeedStart::Now, None)
        .await
        .expect("now");
    // 4,500 items in five milliseconds of 900: the jobs' share (2,000) ends inside a
    // millisecond, which must still be emitted whole, once.
    for i in 0..4_500 {
        if i > 0 && i % 900 == 0 {
            clock.advance_ms(1);
        }
        upsert(
            &engine,
            json!({"id": format!("i{i}"), "pk": "p", "ttl": 10}),
        )
        .await;
    }
    let written = engine
        .read_container("db", "c")
        .map(|c| engine.container_lsn(&c).expect("lsn"))
        .expect("container");
    clock.advance_ms(10_000);
    let (_, commits_before, _) = engine.writer_stats();
    let mut cursor = now.etag.clone();
    let mut seen = std::collections::BTreeSet::new();
    loop {
        let page = after(&engine, ALL, &cursor).await.expect("page");
        if page.not_modified {
            break;
        }
        for (id, _) in ttl_deletes(&page) {
            assert!(seen.insert(id.clone()), "{id} logged twice");
        }
        cursor = page.etag.clone();
    }
    assert_eq!(seen.len(), 4_500);
    // In more than one job: 2,700 (the share, finished to its millisecond), then 1,800.
    let (_, commits_after, _) = engine.writer_stats();
    assert!(
        commits_after - commits_before >= 2,
        "one job emitted them all"
    );
    // Each event took its own LSN after the writes.
    assert_eq!(
        engine
            .container_lsn(&engine.read_container("db", "c").expect("container"))
            .expect("lsn"),
        written + 4_500
    );
}
