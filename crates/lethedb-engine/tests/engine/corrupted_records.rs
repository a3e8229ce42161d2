//! A stored record that cannot be read fails every scan that meets it with `StoreCorrupted`
//! rather than being skipped or half-read: the read feed, a query, the range statistics, a
//! partition delete (which leaves the partition as it was), a stored procedure's read feed and
//! query, and a catalog listing. The records are spoiled in the store behind the engine's back.

use crate::common::{config, engine_on_store, pk, resolved};
use lethedb_engine::{
    Engine, EngineResult, ErrorCode, ManualClock, PartitionKeyValue, QueryRequest, RangeFilter,
    ResourceKind, ResourceParent, WriteMode,
};
use lethedb_storage::{KeyRange, MemoryStore, Storage, Table};
use serde_json::{json, Value};
use std::ops::ControlFlow;
use std::sync::Arc;

/// An engine whose container `c` holds `a` and `b` in partition `p`, and the store under it.
async fn engine() -> (Engine, Arc<MemoryStore>) {
    let store = Arc::new(MemoryStore::new());
    let engine = engine_on_store(
        Arc::clone(&store) as Arc<dyn Storage>,
        Arc::new(ManualClock::new(1_800_000_000_000)),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}}),
        config(),
    )
    .await;
    for id in ["a", "b"] {
        engine
            .write_item(
                &resolved(&engine, "c"),
                WriteMode::Create,
                pk("p"),
                json!({"id": id, "pk": "p"}),
                None,
            )
            .await
            .expect("create");
    }
    (engine, store)
}

/// Overwrites with bytes no reader can decode the first record of `table` that `matches`.
fn spoil(store: &MemoryStore, table: Table, matches: impl Fn(&[u8]) -> bool) {
    let mut key = None;
    let reader = store.read().expect("read");
    reader
        .scan(table, &KeyRange::prefix(&[]), &mut |found, value| {
            if matches(value) {
                key = Some(found.to_vec());
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        })
        .expect("scan");
    drop(reader);
    let key = key.expect("a record to spoil");
    let mut writer = store.write().expect("write");
    writer.put(table, &key, b"\x01").expect("put");
    writer.commit().expect("commit");
}

/// Spoils the stored record of item `id` (its body holds `"id":"{id}"`).
fn spoil_item(store: &MemoryStore, id: &str) {
    let needle = format!("\"id\":\"{id}\"");
    spoil(store, Table::Items, |value| {
        value
            .windows(needle.len())
            .any(|window| window == needle.as_bytes())
    });
}

fn code<T>(outcome: EngineResult<T>) -> Option<ErrorCode> {
    outcome.err().map(|error| error.code)
}

#[tokio::test]
async fn scans_over_items_fail_on_a_corrupted_item() {
    let (engine, store) = engine().await;
    spoil_item(&store, "b");
    let container = resolved(&engine, "c");
    let feed = engine
        .read_feed(&container, None, RangeFilter::everything(), 10, None)
        .await;
    assert_eq!(code(feed), Some(ErrorCode::StoreCorrupted), "read feed");
    let query = QueryRequest {
        text: "SELECT * FROM c".into(),
        partition_key: pk("p"),
        ..QueryRequest::default()
    };
    let query = engine.query_items(&container, &query).await;
    assert_eq!(code(query), Some(ErrorCode::StoreCorrupted), "query");
    let statistics = engine.range_statistics(&container).await;
    assert_eq!(
        code(statistics),
        Some(ErrorCode::StoreCorrupted),
        "statistics"
    );
    let key = PartitionKeyValue::parse_json_text("[\"p\"]").expect("pk");
    let deleted = engine.delete_partition(&container, key).await;
    assert_eq!(
        code(deleted),
        Some(ErrorCode::StoreCorrupted),
        "partition delete"
    );
    let still_there = engine.read_item(&container, pk("p"), "a").map(drop);
    assert_eq!(code(still_there), None, "the failed delete left `a`");
}

#[tokio::test]
async fn a_scripts_read_feed_and_query_fail_on_a_corrupted_item() {
    let (engine, store) = engine().await;
    let parent = ResourceParent::Container {
        database_id: "db".into(),
        container_id: "c".into(),
    };
    let bodies = [
        ("feed", "function () { var c = getContext().getCollection(); c.readDocuments(c.getSelfLink(), {}, function (err, found) { if (err) throw err; getContext().getResponse().setBody(found.length); }); }"),
        ("query", "function () { var c = getContext().getCollection(); c.queryDocuments(c.getSelfLink(), 'SELECT * FROM r', {}, function (err, found) { if (err) throw err; getContext().getResponse().setBody(found.length); }); }"),
    ];
    for (id, body) in bodies {
        engine
            .create_resource(
                ResourceKind::StoredProcedure,
                parent.clone(),
                json!({"id": id, "body": body}),
            )
            .await
            .expect("stored procedure");
    }
    let run = |id: &'static str| {
        let engine = engine.clone();
        async move {
            engine
                .execute_stored_procedure(&resolved(&engine, "c"), id, pk("p"), Vec::new(), false)
                .await
                .map(|response| response.body)
        }
    };
    for (id, _) in bodies {
        assert_eq!(run(id).await.expect(id), json!(2), "{id} before");
    }
    spoil_item(&store, "b");
    for (id, _) in bodies {
        assert_eq!(code(run(id).await), Some(ErrorCode::StoreCorrupted), "{id}");
    }
}

#[tokio::test]
async fn a_catalog_listing_fails_on_a_corrupted_record() {
    let (engine, store) = engine().await;
    engine
        .create_database(json!({"id": "other"}), None)
        .await
        .expect("database");
    spoil(&store, Table::Catalog, |value| {
        serde_json::from_slice::<Value>(value)
            .is_ok_and(|record| record["resource"]["id"] == "other")
    });
    let listed = engine.list_databases().await;
    assert_eq!(code(listed), Some(ErrorCode::StoreCorrupted));
}
