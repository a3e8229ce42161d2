//! The change log as both feeds' store (`feed/change_log.rs`, `feed/log_layout.rs`): a write
//! stores its document once and writes one feed key, a position; a replaced, deleted or
//! purged version's entry takes its body, so the all-versions feed returns each version; a
//! position survives trimming however old; the latest-version feed skips what is superseded;
//! a store written by the previous release (`tests/fixtures/change_log/`, written by
//! `examples/change_log_fixture.rs` on that release) is rewritten once when opened.

use crate::common::{atomic_batch, config, pk, resolved, upsert_document as upsert};
use lethedb_engine::{
    BatchOperation, ChangeFeedMode, ChangeFeedPage, ChangeFeedRequest, ChangeFeedStart, Engine,
    FeedCursor, ManualClock, RangeFilter,
};
use lethedb_storage::{FjallStore, KeyRange, MemoryStore, RedbStore, Storage, Table};
use serde_json::{json, Value};
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

const START_MS: i64 = 1_800_000_000_000;
const LATEST: ChangeFeedMode = ChangeFeedMode::LatestVersion;
const ALL: ChangeFeedMode = ChangeFeedMode::AllVersionsAndDeletes;
/// The previous release's store (main at `7b1adcd`): `a` created and replaced, `b` created,
/// `d` created and deleted, 61 minutes, `f` created, the log trimmed, `f` replaced.
const RELEASE_STORE: &str = include_str!("../fixtures/change_log/release-7b1adcd.json");

fn everything() -> KeyRange {
    KeyRange {
        start: Bound::Unbounded,
        end: Bound::Unbounded,
    }
}

/// Every row of one table.
fn rows(store: &dyn Storage, table: Table) -> Vec<(Vec<u8>, Vec<u8>)> {
    let reader = store.read().expect("read");
    let mut rows = Vec::new();
    reader
        .scan(table, &everything(), &mut |key, value| {
            rows.push((key.to_vec(), value.to_vec()));
            ControlFlow::Continue(())
        })
        .expect("scan");
    rows
}

/// How many change-log entries hold `text` (a body), and how many there are.
fn log_holding(store: &dyn Storage, text: &str) -> (usize, usize) {
    let entries = rows(store, Table::ChangeLog);
    let holding = entries
        .iter()
        .filter(|(_, value)| value.windows(text.len()).any(|w| w == text.as_bytes()))
        .count();
    (holding, entries.len())
}

async fn open(store: Arc<dyn Storage>, clock: Arc<ManualClock>) -> Engine {
    Engine::open(store, clock, config()).expect("engine")
}

async fn engine_on(store: Arc<MemoryStore>) -> (Engine, Arc<ManualClock>) {
    engine_with_ttl(store, None).await
}

/// [`engine_on`] with the container's `defaultTtl`.
async fn engine_with_ttl(
    store: Arc<MemoryStore>,
    default_ttl: Option<i64>,
) -> (Engine, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine = open(store, clock.clone()).await;
    engine
        .create_database(json!({"id": "db"}), None)
        .await
        .expect("db");
    let mut body =
        json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2}});
    if let Some(ttl) = default_ttl {
        body["defaultTtl"] = json!(ttl);
    }
    engine
        .create_container("db", body, None)
        .await
        .expect("container");
    (engine, clock)
}

async fn read(engine: &Engine, mode: ChangeFeedMode, start: ChangeFeedStart) -> ChangeFeedPage {
    let container = engine.read_container("db", "c").expect("container");
    let request = ChangeFeedRequest {
        mode,
        start,
        partition_key: None,
        filter: RangeFilter::everything(),
        page_items_max: None,
    };
    engine
        .read_change_feed(&container, request)
        .await
        .expect("feed")
}

async fn after(engine: &Engine, mode: ChangeFeedMode, cursor: &FeedCursor) -> Vec<Value> {
    let cursor = cursor.clone();
    let page = read(engine, mode, ChangeFeedStart::Continuation { cursor }).await;
    documents(&page)
}

fn documents(page: &ChangeFeedPage) -> Vec<Value> {
    page.entries
        .iter()
        .map(|bytes| serde_json::from_slice(bytes).expect("json"))
        .collect()
}

/// Each latest-version document's id and `v`.
fn latest(page: &ChangeFeedPage) -> Vec<(String, Value)> {
    documents(page)
        .iter()
        .map(|d| (d["id"].as_str().expect("id").to_string(), d["v"].clone()))
        .collect()
}

/// Each all-versions entry's operation, id and `v`.
fn changes(entries: &[Value]) -> Vec<(String, String, Value)> {
    entries
        .iter()
        .map(|entry| {
            let operation = entry["metadata"]["operationType"].as_str().expect("op");
            let id = entry["current"]["id"]
                .as_str()
                .or(entry["metadata"]["id"].as_str())
                .expect("id");
            (operation.into(), id.into(), entry["current"]["v"].clone())
        })
        .collect()
}

fn change(operation: &str, id: &str, v: Value) -> (String, String, Value) {
    (operation.into(), id.into(), v)
}

#[tokio::test]
async fn a_write_stores_its_document_once_and_a_replaced_version_takes_its_body() {
    let store = Arc::new(MemoryStore::new());
    let (engine, _clock) = engine_on(store.clone()).await;
    let now = read(&engine, ALL, ChangeFeedStart::Now).await;
    upsert(&engine, json!({"id": "a", "pk": "p", "v": "first-body"})).await;
    // One feed key, holding no body; no change-index entry.
    assert_eq!(log_holding(&*store, "first-body"), (0, 1));
    assert!(rows(&*store, Table::ChangeIndex).is_empty());
    upsert(&engine, json!({"id": "a", "pk": "p", "v": "second-body"})).await;
    // The replaced version's entry took its body; the current one's holds none.
    assert_eq!(log_holding(&*store, "first-body"), (1, 2));
    assert_eq!(log_holding(&*store, "second-body"), (0, 2));
    let entries = after(&engine, ALL, &now.etag).await;
    assert_eq!(
        changes(&entries),
        [
            change("create", "a", json!("first-body")),
            change("replace", "a", json!("second-body")),
        ]
    );
    engine
        .delete_item(&resolved(&engine, "c"), pk("p"), "a", None)
        .await
        .expect("delete");
    assert_eq!(log_holding(&*store, "second-body"), (1, 3));
    let entries = after(&engine, ALL, &now.etag).await;
    assert_eq!(
        changes(&entries),
        [
            change("create", "a", json!("first-body")),
            change("replace", "a", json!("second-body")),
            change("delete", "a", Value::Null),
        ]
    );
}

#[tokio::test]
async fn an_old_current_entry_survives_trimming_and_goes_when_replaced_past_retention() {
    let store = Arc::new(MemoryStore::new());
    let (engine, clock) = engine_on(store.clone()).await;
    upsert(&engine, json!({"id": "old", "pk": "p", "v": 1})).await;
    upsert(&engine, json!({"id": "gone", "pk": "p", "v": 1})).await;
    upsert(&engine, json!({"id": "gone", "pk": "p", "v": 2})).await;
    // Past the default retention of 60 minutes the maintenance trims the log: the replaced
    // version of `gone` goes, the positions of `old` and of `gone`'s current version stay.
    clock.advance_ms(61 * 60_000);
    engine.maintain_change_feeds().await.expect("maintain");
    assert_eq!(rows(&*store, Table::ChangeLog).len(), 2);
    let page = read(&engine, LATEST, ChangeFeedStart::Beginning).await;
    assert_eq!(
        latest(&page),
        [
            ("old".to_string(), json!(1)),
            ("gone".to_string(), json!(2))
        ]
    );
    // Replaced now, the old position is past retention: it goes, not kept with its body.
    let now = read(&engine, ALL, ChangeFeedStart::Now).await;
    upsert(&engine, json!({"id": "old", "pk": "p", "v": 2})).await;
    assert_eq!(rows(&*store, Table::ChangeLog).len(), 2);
    assert_eq!(
        changes(&after(&engine, ALL, &now.etag).await),
        [change("replace", "old", json!(2))]
    );
    let page = read(&engine, LATEST, ChangeFeedStart::Beginning).await;
    assert_eq!(
        latest(&page),
        [
            ("gone".to_string(), json!(2)),
            ("old".to_string(), json!(2))
        ]
    );
}

#[tokio::test]
async fn a_latest_version_read_skips_superseded_entries_even_within_one_lsn() {
    let store = Arc::new(MemoryStore::new());
    let (engine, _clock) = engine_on(store.clone()).await;
    let now = read(&engine, ALL, ChangeFeedStart::Now).await;
    upsert(&engine, json!({"id": "a", "pk": "p", "v": 1})).await;
    upsert(&engine, json!({"id": "b", "pk": "p", "v": 1})).await;
    upsert(&engine, json!({"id": "a", "pk": "p", "v": 2})).await;
    // One transactional batch, one LSN: `c` is created and replaced under it.
    let operation = |kind: &str, v: i64| BatchOperation {
        kind: kind.into(),
        id: Some("c".into()),
        body: Some(json!({"id": "c", "pk": "p", "v": v})),
        if_match: None,
        partition_key: None,
    };
    atomic_batch(
        &engine,
        vec![operation("Create", 1), operation("Replace", 2)],
    )
    .await;
    let page = read(&engine, LATEST, ChangeFeedStart::Beginning).await;
    assert_eq!(
        latest(&page),
        [
            ("b".to_string(), json!(1)),
            ("a".to_string(), json!(2)),
            ("c".to_string(), json!(2)),
        ]
    );
    assert_eq!(
        changes(&after(&engine, ALL, &now.etag).await),
        [
            change("create", "a", json!(1)),
            change("create", "b", json!(1)),
            change("replace", "a", json!(2)),
            change("create", "c", json!(1)),
            change("replace", "c", json!(2)),
        ]
    );
}

/// Writes the previous release's fixture into `store`, as that release left it.
fn load_release_store(store: &dyn Storage) {
    fn bytes(hex: &Value) -> Vec<u8> {
        let text = hex.as_str().expect("hex");
        (0..text.len())
            .step_by(2)
            .map(|at| u8::from_str_radix(&text[at..at + 2], 16).expect("hex"))
            .collect()
    }
    let tables: Value = serde_json::from_str(RELEASE_STORE).expect("fixture");
    let mut write = store.write().expect("write");
    for table in Table::ALL {
        let rows = tables[format!("{table:?}")].as_array().expect("table");
        for row in rows {
            write
                .put(table, &bytes(&row[0]), &bytes(&row[1]))
                .expect("put");
        }
    }
    write.commit().expect("commit");
}

#[tokio::test]
async fn a_store_of_the_previous_release_is_rewritten_once_when_opened() {
    rewritten_once(Arc::new(MemoryStore::new())).await;
}

#[tokio::test]
async fn a_redb_store_of_the_previous_release_is_rewritten_once_when_opened() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = RedbStore::open(&dir.path().join("lethedb.redb")).expect("redb");
    rewritten_once(Arc::new(store)).await;
}

#[tokio::test]
async fn a_fjall_store_of_the_previous_release_is_rewritten_once_when_opened() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store =
        FjallStore::open_with_memory(&dir.path().join("fjall"), 16 * 1024 * 1024).expect("fjall");
    rewritten_once(Arc::new(store)).await;
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_store_of_the_previous_release_is_rewritten_once_when_opened() {
    let url = crate::shared_store::database_url();
    let schema = crate::shared_store::fresh_schema();
    let store = crate::shared_store::open_store(&url, &schema);
    rewritten_once(Arc::new(store)).await;
}

/// The previous release's store, loaded into `store` and opened: rewritten once, then written
/// and opened again.
async fn rewritten_once(store: Arc<dyn Storage>) {
    load_release_store(&*store);
    assert_eq!(rows(&*store, Table::ChangeIndex).len(), 3, "the old layout");
    let clock = Arc::new(ManualClock::new(START_MS + 61 * 60_000));
    let engine = open(store.clone(), clock.clone()).await;
    // The change index is gone, and no current version's body is in the log twice: `a` and
    // `b` (trimmed by the old release) have positions again, `f`'s replace lost its copy, and
    // `f`'s create keeps the body it always held.
    assert!(rows(&*store, Table::ChangeIndex).is_empty());
    assert_eq!(log_holding(&*store, r#""v":2"#), (0, 4));
    assert_eq!(log_holding(&*store, r#""id":"f","pk":"q","v":1"#), (1, 4));
    // Shard by shard (`q`'s first here), each shard's in LSN order.
    let page = read(&engine, LATEST, ChangeFeedStart::Beginning).await;
    assert_eq!(
        latest(&page),
        [
            ("b".to_string(), json!(1)),
            ("f".to_string(), json!(2)),
            ("a".to_string(), json!(2)),
        ]
    );
    // Writes go on in the new layout: a replace of a rewritten position keeps the feeds whole.
    let now = read(&engine, ALL, ChangeFeedStart::Now).await;
    clock.advance_ms(1_000);
    upsert(&engine, json!({"id": "f", "pk": "q", "v": 3})).await;
    upsert(&engine, json!({"id": "b", "pk": "q", "v": 2})).await;
    assert_eq!(
        changes(&after(&engine, ALL, &now.etag).await),
        [
            change("replace", "f", json!(3)),
            change("replace", "b", json!(2))
        ]
    );
    assert!(engine.close());
    // Opened again, nothing is rewritten: the log is as the writes left it.
    let before = rows(&*store, Table::ChangeLog);
    let engine = open(store.clone(), clock).await;
    assert_eq!(rows(&*store, Table::ChangeLog), before);
    let page = read(&engine, LATEST, ChangeFeedStart::Beginning).await;
    assert_eq!(
        latest(&page),
        [
            ("f".to_string(), json!(3)),
            ("b".to_string(), json!(2)),
            ("a".to_string(), json!(2)),
        ]
    );
}

#[tokio::test]
async fn a_purged_version_keeps_its_create_in_the_all_versions_feed() {
    let store = Arc::new(MemoryStore::new());
    let (engine, clock) = engine_with_ttl(store.clone(), Some(-1)).await;
    let now = read(&engine, ALL, ChangeFeedStart::Now).await;
    upsert(
        &engine,
        json!({"id": "a", "pk": "p", "v": "short-lived", "ttl": 5}),
    )
    .await;
    clock.advance_ms(5_000);
    let (deleted, _) = engine.sweep_once(1000).await.expect("sweep");
    assert_eq!(deleted, 1);
    // The item is gone; its create entry took the body, beside the TTL event.
    assert!(rows(&*store, Table::Items).is_empty());
    assert_eq!(log_holding(&*store, "short-lived"), (1, 2));
    let entries = after(&engine, ALL, &now.etag).await;
    assert_eq!(
        changes(&entries),
        [
            change("create", "a", json!("short-lived")),
            change("delete", "a", Value::Null),
        ]
    );
    assert_eq!(entries[1]["metadata"]["timeToLiveExpired"], json!(true));
    let page = read(&engine, LATEST, ChangeFeedStart::Beginning).await;
    assert!(latest(&page).is_empty());
}

#[tokio::test]
async fn a_batch_replacing_many_items_written_under_one_lsn_keeps_every_replaced_body() {
    let store = Arc::new(MemoryStore::new());
    let (engine, _clock) = engine_on(store.clone()).await;
    let now = read(&engine, ALL, ChangeFeedStart::Now).await;
    let batch = |kind: &'static str, v: i64| {
        (0..40)
            .map(|i| BatchOperation {
                kind: kind.into(),
                id: Some(format!("i{i}")),
                body: Some(json!({"id": format!("i{i}"), "pk": "p", "v": v})),
                if_match: None,
                partition_key: None,
            })
            .collect::<Vec<_>>()
    };
    // The second batch creates under its LSN and replaces what it created, then what the
    // first wrote: each position is found whether the LSN's positions were kept or not.
    let mut second = batch("Create", 0)
        .into_iter()
        .map(|mut operation| {
            let id = operation.id.clone().expect("id");
            operation.id = Some(format!("{id}-new"));
            operation.body = Some(json!({"id": format!("{id}-new"), "pk": "p", "v": 0}));
            operation
        })
        .collect::<Vec<_>>();
    second.extend(second.clone().into_iter().map(|mut operation| {
        operation.kind = "Replace".into();
        operation.body = operation.body.map(|mut body| {
            body["v"] = json!(3);
            body
        });
        operation
    }));
    second.extend(batch("Replace", 2));
    for operations in [batch("Create", 1), second] {
        atomic_batch(&engine, operations).await;
    }
    let entries = after(&engine, ALL, &now.etag).await;
    let seen = changes(&entries);
    assert_eq!(seen.len(), 160);
    let count = |operation: &str, v: i64| {
        seen.iter()
            .filter(|(op, _, value)| op == operation && *value == json!(v))
            .count()
    };
    assert_eq!(
        [
            count("create", 1),
            count("create", 0),
            count("replace", 3),
            count("replace", 2)
        ],
        [40, 40, 40, 40]
    );
    // Every current version has its position, and no other entry is one.
    let page = read(&engine, LATEST, ChangeFeedStart::Beginning).await;
    assert_eq!(latest(&page).len(), 80);
    assert!(latest(&page)
        .iter()
        .all(|(_, v)| *v == json!(2) || *v == json!(3)));
}

#[tokio::test]
async fn a_restored_snapshot_of_the_previous_release_is_rewritten() {
    let store = Arc::new(MemoryStore::new());
    load_release_store(&*store);
    store
        .snapshots()
        .expect("snapshots")
        .save("release")
        .expect("save");
    let clock = Arc::new(ManualClock::new(START_MS + 61 * 60_000));
    let engine = open(store.clone(), clock).await;
    upsert(&engine, json!({"id": "a", "pk": "p", "v": 9})).await;
    assert!(engine.restore_snapshot("release").await.expect("restore"));
    assert!(rows(&*store, Table::ChangeIndex).is_empty());
    assert_eq!(log_holding(&*store, r#""v":2"#), (0, 4));
    let page = read(&engine, LATEST, ChangeFeedStart::Beginning).await;
    assert_eq!(
        latest(&page),
        [
            ("b".to_string(), json!(1)),
            ("f".to_string(), json!(2)),
            ("a".to_string(), json!(2)),
        ]
    );
}
