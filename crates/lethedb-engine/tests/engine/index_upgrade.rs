//! A store written before items kept index entries: its containers load as if their policy had
//! just replaced one that indexes nothing, so no query reads their empty index, and the builder
//! writes the entries in the background, after which queries read the index again.

use crate::common::{config, engine_on_store, page};
use crate::index_build::{build_to_the_end, create, current};
use lethedb_engine::{Engine, ManualClock, QueryRequest};
use lethedb_storage::{KeyRange, MemoryStore, Storage, Table};
use serde_json::{json, Value};
use std::ops::ControlFlow;
use std::sync::Arc;

/// Makes the store look as a store written before index entries: no entries, and container
/// records without their index format.
fn forget_the_index(store: &MemoryStore) {
    let mut write = store.write().expect("write");
    let mut entries = Vec::new();
    let mut containers = Vec::new();
    {
        let reader: &dyn lethedb_storage::ReadTxn = &*store.read().expect("read");
        reader
            .scan(Table::Index, &KeyRange::prefix(&[]), &mut |key, _| {
                entries.push(key.to_vec());
                ControlFlow::Continue(())
            })
            .expect("scan");
        reader
            .scan(
                Table::Catalog,
                &KeyRange::prefix(b"c"),
                &mut |key, value| {
                    containers.push((key.to_vec(), value.to_vec()));
                    ControlFlow::Continue(())
                },
            )
            .expect("scan");
    }
    for key in entries {
        write.delete(Table::Index, &key).expect("delete");
    }
    for (key, value) in containers {
        let mut record: Value = serde_json::from_slice(&value).expect("record");
        assert_eq!(record["index_format"], json!(4));
        record
            .as_object_mut()
            .expect("object")
            .remove("index_format");
        write
            .put(Table::Catalog, &key, record.to_string().as_bytes())
            .expect("put");
    }
    write.commit().expect("commit");
}

/// The ids `SELECT VALUE c.id FROM c WHERE c.n = 3` finds and the documents it loaded.
async fn find_three(engine: &Engine) -> (Vec<Value>, u64) {
    let request = QueryRequest {
        text: "SELECT VALUE c.id FROM c WHERE c.n = 3".into(),
        range_id: Some("0".into()),
        ..QueryRequest::default()
    };
    let result = page(
        engine
            .query_items(&current(engine), &request)
            .await
            .expect("query"),
    );
    (result.items, result.documents_scanned)
}

#[tokio::test]
async fn containers_from_before_the_index_are_indexed_in_the_background() {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let store = Arc::new(MemoryStore::new());
    let engine = engine_on_store(
        store.clone(),
        clock.clone(),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
        config(),
    )
    .await;
    for i in 0..20 {
        create(&engine, &format!("i{i:02}"), i).await;
    }
    assert_eq!(find_three(&engine).await, (vec![json!("i03")], 1));
    assert!(engine.close(), "sole handle");
    forget_the_index(&store);
    let engine = Engine::open(store.clone(), clock, config()).expect("engine");
    let container = current(&engine);
    assert!(!container.index_ready(), "an old container is not ready");
    // The empty index is not read: the page scans and still finds the item.
    assert_eq!(find_three(&engine).await, (vec![json!("i03")], 20));
    assert_eq!(build_to_the_end(&engine, 7).await, 20);
    let container = current(&engine);
    assert!(container.index_ready());
    let check = engine.check_index(&container).await.expect("check");
    assert!(check.is_consistent(), "{check:?}");
    assert_eq!(find_three(&engine).await, (vec![json!("i03")], 1));
}
