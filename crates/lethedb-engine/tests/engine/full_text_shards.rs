//! Full-text statistics counters kept per shard: a container with a full-text index answers
//! the hybrid pipelines' global statistics query from its shards' rows summed, with exactly
//! the numbers a scan gives (the verify mode runs the scan beside every served page), on a
//! store written before shard rows too (its container-wide counters are the base the shard
//! rows add to); and on a shared PostgreSQL store its writes take only their shard's lock.

use crate::common::{config, create_documents, engine_on_store, page, pk, resolved};
use crate::shared_store::{database_url, fresh_schema, open_store, real_now_ms};
use lethedb_engine::{Engine, EngineConfig, ManualClock, QueryPage, QueryRequest, WriteMode};
use lethedb_storage::{KeyRange, MemoryStore, Storage, Table};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

/// The kind byte of a statistics counter's shard row, and of a container-wide counter.
const SHARD_ROW_KIND: u8 = b'n';
const CONTAINER_COUNTER_KIND: u8 = b'N';

/// A container with a full-text index on `/text`, hash v2 (its partitions spread over shards).
fn container_body() -> Value {
    json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2},
        "indexingPolicy": {"includedPaths": [{"path": "/*"}],
            "fullTextIndexes": [{"path": "/text"}]},
        "fullTextPolicy": {"defaultLanguage": "en-US", "fullTextPaths": [{"path": "/text"}]}})
}

fn verifying() -> EngineConfig {
    EngineConfig {
        query_verify: true,
        ..config()
    }
}

fn document(n: u64) -> Value {
    let words = ["red", "blue", "bike", "trail", "zebra", "the"];
    let text: Vec<&str> = (0..2 + n % 5)
        .map(|i| words[((n * 7 + i * 3) % 6) as usize])
        .collect();
    json!({"id": format!("i{n}"), "pk": format!("p{}", n % 16), "text": text.join(" ")})
}

/// The global statistics query of a hybrid plan for "blue" and "zebra".
const STATISTICS: &str = "SELECT COUNT(1) AS documentCount, [{\"totalWordCount\": SUM(_FullTextWordCount(c.text)), \"hitCounts\": [COUNTIF(FullTextContains(c.text, \"blue\")), COUNTIF(FullTextContains(c.text, \"zebra\"))]}] AS fullTextStatistics\nFROM c";

/// The statistics, asserted to come from the counters (no document loaded); the verify mode
/// fails the query if a scan would answer otherwise.
async fn statistics(engine: &Engine) -> Value {
    let request = QueryRequest {
        text: STATISTICS.into(),
        populate_query_metrics: true,
        page_items_max: Some(100),
        range_id: Some("0".into()),
        ..QueryRequest::default()
    };
    let answer: QueryPage = page(
        engine
            .query_items(&resolved(engine, "c"), &request)
            .await
            .expect("statistics"),
    );
    let metrics = answer.metrics.as_ref().expect("metrics");
    assert_eq!(metrics.documents_retrieved, 0, "served from the counters");
    answer.items[0].clone()
}

/// The stored statistics rows of the store's one container: each key with its value.
fn rows(store: &MemoryStore, kind: u8) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut found = BTreeMap::new();
    let reader: &dyn lethedb_storage::ReadTxn = &*store.read().expect("read");
    reader
        .scan(Table::Index, &KeyRange::prefix(&[]), &mut |key, value| {
            if key.get(8) == Some(&kind) {
                found.insert(key.to_vec(), value.to_vec());
            }
            ControlFlow::Continue(())
        })
        .expect("scan");
    found
}

/// The container-wide counter key a shard row counts for: the row's path, then the stem's key
/// when it counts a stem's documents (`keys::full_text_shard_statistics_prefix`).
fn container_counter_of(row: &[u8]) -> Vec<u8> {
    let number = |at: usize, width: usize| -> usize {
        row[at..at + width]
            .iter()
            .fold(0, |value, byte| value << 8 | usize::from(*byte))
    };
    let mut at = 9;
    let segments = number(at, 2);
    at += 2;
    for _ in 0..segments {
        at += 4 + number(at, 4);
    }
    let mut counter = row[..at].to_vec();
    counter[8] = CONTAINER_COUNTER_KIND;
    if row[at] == 1 {
        let length = number(at + 1, 4);
        counter.extend_from_slice(&row[at + 5..at + 5 + length]);
    }
    counter
}

/// Makes the store look as one written before shard rows: each counter one container-wide
/// row of the shards' sum (unsigned), and no shard rows.
fn merge_shard_rows(store: &MemoryStore) {
    let shard_rows = rows(store, SHARD_ROW_KIND);
    let mut merged: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
    for (key, value) in &shard_rows {
        let value = i64::from_be_bytes(value.as_slice().try_into().expect("8 bytes"));
        *merged.entry(container_counter_of(key)).or_default() += value;
    }
    let mut write = store.write().expect("write");
    for key in shard_rows.keys() {
        write.delete(Table::Index, key).expect("delete");
    }
    for (key, value) in merged {
        let value = u64::try_from(value).expect("a count");
        write
            .put(Table::Index, &key, &value.to_be_bytes())
            .expect("put");
    }
    write.commit().expect("commit");
}

#[tokio::test]
async fn the_statistics_sum_the_shards_rows_over_an_older_stores_container_counters() {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let store = Arc::new(MemoryStore::new());
    let engine = engine_on_store(store.clone(), clock.clone(), container_body(), verifying()).await;
    create_documents(&engine, (0..160).map(document)).await;
    let before = statistics(&engine).await;
    assert_eq!(before["documentCount"], json!(160));
    let spread: std::collections::BTreeSet<Vec<u8>> = rows(&store, SHARD_ROW_KIND)
        .keys()
        .map(|key| key[key.len() - 2..].to_vec())
        .collect();
    assert!(spread.len() > 4, "the rows of several shards: {spread:?}");
    assert!(rows(&store, CONTAINER_COUNTER_KIND).is_empty());

    // The same store as an older version left it: the same numbers.
    assert!(engine.close(), "sole handle");
    merge_shard_rows(&store);
    let engine = Engine::open(store.clone(), clock, verifying()).expect("engine");
    assert_eq!(statistics(&engine).await, before);

    // Deletes, replaces and creates go to the shard rows, some below zero, over the base.
    let container = resolved(&engine, "c");
    for n in (0..160).step_by(3) {
        let partition = pk(&format!("p{}", n % 16));
        let id = format!("i{n}");
        if n % 2 == 0 {
            engine
                .delete_item(&container, partition, &id, None)
                .await
                .expect("delete");
        } else {
            let mut body = document(n + 1);
            body["id"] = json!(id);
            body["pk"] = json!(format!("p{}", n % 16));
            engine
                .write_item(&container, WriteMode::Replace(id), partition, body, None)
                .await
                .expect("replace");
        }
    }
    create_documents(&engine, (200..230).map(document)).await;
    let after = statistics(&engine).await;
    assert_eq!(after["documentCount"], json!(160 - 27 + 30));
    let negative = rows(&store, SHARD_ROW_KIND)
        .values()
        .any(|value| i64::from_be_bytes(value.as_slice().try_into().expect("8 bytes")) < 0);
    assert!(negative, "a shard's deletions count against the base");
    assert!(!rows(&store, CONTAINER_COUNTER_KIND).is_empty());
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_text_containers_write_takes_only_its_shards_lock() {
    let url = database_url();
    let schema = fresh_schema();
    let store = Arc::new(open_store(&url, &schema));
    let clock = Arc::new(ManualClock::new(real_now_ms()));
    let engine = engine_on_store(store.clone(), clock, container_body(), verifying()).await;
    create_documents(&engine, (0..16).map(document)).await;
    let container = resolved(&engine, "c");

    // Its statistics rows lie in its bucket: a replace and a delete send statements of one
    // bucket and commit rows of one.
    let before = store.bucket_statements();
    let body = json!({"id": "i1", "pk": "p1", "text": "zebra zebra trail"});
    engine
        .write_item(
            &container,
            WriteMode::Replace("i1".into()),
            pk("p1"),
            body,
            None,
        )
        .await
        .expect("replace");
    engine
        .delete_item(&container, pk("p1"), "i1", None)
        .await
        .expect("delete");
    let (one, several, across) = store.bucket_statements();
    assert!(one > before.0, "statements counted");
    assert_eq!(several - before.1, 0, "statements across buckets");
    assert_eq!(across - before.2, 0, "commits across buckets");
    let own = container.shard_lock_of(&pk("p1").expect("pk"));
    let other = (0..100)
        .map(|n| format!("q{n}"))
        .find(|partition| container.shard_lock_of(&pk(partition).expect("pk")) != own)
        .expect("another shard");

    // A write of another shard holds the store-wide lock shared and its shard's lock: a write
    // under the store's lock would wait for it.
    let holder = open_store(&url, &schema);
    let other_lock = container.shard_lock_of(&pk(&other).expect("pk"));
    let open = holder
        .write_reading_shards(&[other_lock], &[])
        .expect("open");
    let body = json!({"id": "new", "pk": "p1", "text": "blue zebra trail"});
    tokio::time::timeout(
        Duration::from_secs(5),
        engine.write_item(&container, WriteMode::Create, pk("p1"), body, None),
    )
    .await
    .expect("a full-text write waited for a write of another shard")
    .expect("create");

    // It does take its own shard's lock.
    let own_open = holder.write_reading_shards(&[own], &[]);
    drop(open);
    let own_open = own_open.expect("open");
    let writing = {
        let (engine, container) = (engine.clone(), Arc::clone(&container));
        tokio::spawn(async move {
            let body = json!({"id": "newer", "pk": "p1", "text": "red"});
            engine
                .write_item(&container, WriteMode::Create, pk("p1"), body, None)
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !writing.is_finished(),
        "a full-text write went ahead beside an open write of its shard"
    );
    drop(own_open);
    writing.await.expect("task").expect("create");
    assert_eq!(statistics(&engine).await["documentCount"], json!(17));
}
