//! The writer's cache of written documents (`Writer::written`): a write that replaces a version
//! leaves its document there once committed, the next write of the item removes the old
//! version's index entries computed from it instead of parsing the stored body, the index stays
//! what a rebuild gives, and a restored snapshot, an item written only once or a store other
//! processes share leaves nothing.

use crate::items::document_cache::DocumentCache;
use crate::{Engine, EngineConfig, ErrorCode, ManualClock, PartitionKeyValue, WriteMode};
use lethedb_storage::{MemoryStore, ReadTxn, Storage, StorageError, WriteTxn};
use serde_json::{json, Value};
use std::sync::Arc;

fn wire_status(_: ErrorCode) -> (u16, &'static str) {
    (400, "BadRequest")
}

fn pk() -> Option<PartitionKeyValue> {
    PartitionKeyValue::parse_json_text("[\"p\"]").ok()
}

/// A store in memory that says other processes write to it too, as PostgreSQL's does.
struct SharedMemory(MemoryStore);

impl Storage for SharedMemory {
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StorageError> {
        self.0.read()
    }
    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        self.0.write()
    }
    fn kind(&self) -> &'static str {
        "shared memory"
    }
    fn is_shared(&self) -> bool {
        true
    }
}

async fn engine() -> Engine {
    engine_on(Arc::new(MemoryStore::new())).await
}

async fn engine_on(store: Arc<dyn Storage>) -> Engine {
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let engine = Engine::open(store, clock, EngineConfig::new(wire_status)).expect("engine");
    engine
        .create_database(json!({"id": "db"}), None)
        .await
        .expect("db");
    engine
        .create_container(
            "db",
            json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
            None,
        )
        .await
        .expect("container");
    engine
}

/// Writes `document` under `mode`; returns the item's key and its new LSN.
async fn write(engine: &Engine, mode: WriteMode, document: Value) -> (Vec<u8>, u64) {
    let container = engine.read_container("db", "c").expect("container");
    let outcome = engine
        .write_item(&container, mode, pk(), document, None)
        .await
        .expect("write");
    let id = document_id(&outcome.item.record.body);
    let key = container.item_key(&outcome.partition_key, &id);
    (key, outcome.item.record.lsn)
}

fn document_id(body: &[u8]) -> String {
    let document: Value = serde_json::from_slice(body).expect("body");
    document["id"].as_str().expect("id").to_string()
}

/// Writes item `a` as `{"id": "a", "pk": "p", "n": n}`.
async fn write_n(engine: &Engine, mode: WriteMode, n: i64) -> (Vec<u8>, u64) {
    write(engine, mode, json!({"id": "a", "pk": "p", "n": n})).await
}

async fn index_is_rebuilt(engine: &Engine) -> bool {
    let container = engine.read_container("db", "c").expect("container");
    let check = engine.check_index(&container).await.expect("check");
    check.missing == 0 && check.stale == 0
}

fn written(engine: &Engine) -> &DocumentCache {
    &engine.inner.writer.written
}

#[tokio::test]
async fn a_replacing_write_leaves_its_document_for_the_next_one() {
    let engine = engine().await;
    let first = json!({"id": "a", "pk": "p", "n": 1, "tags": ["x", "y"], "f": 0.1});
    let (key, lsn) = write(&engine, WriteMode::Create, first).await;
    assert!(written(&engine).get(&key, lsn).is_none(), "written once");
    let second = json!({"id": "a", "pk": "p", "n": 2, "o": {"k": [1, 2.5, null]}, "f": -0.0});
    let (_, lsn) = write(&engine, WriteMode::Upsert, second.clone()).await;
    assert_eq!(written(&engine).get(&key, lsn).as_deref(), Some(&second));
    let third = json!({"id": "a", "pk": "p", "n": 3, "s": "t\u{e9}xt \"q\"", "f": 1e300});
    let (_, lsn) = write(&engine, WriteMode::Replace("a".into()), third.clone()).await;
    assert_eq!(written(&engine).get(&key, lsn).as_deref(), Some(&third));
    assert!(index_is_rebuilt(&engine).await);
}

#[tokio::test]
async fn the_next_write_removes_the_entries_of_the_cached_document() {
    let engine = engine().await;
    write_n(&engine, WriteMode::Create, 1).await;
    let (key, lsn) = write_n(&engine, WriteMode::Upsert, 2).await;
    // A document the version does not hold: its entries are the ones the next write removes,
    // so the stored `n: 2` entry is left behind, and the check finds it.
    let wrong = Arc::new(json!({"id": "a", "pk": "p", "n": 7}));
    written(&engine).insert(&key, lsn, wrong, 30);
    write_n(&engine, WriteMode::Upsert, 3).await;
    assert!(
        !index_is_rebuilt(&engine).await,
        "the cached document was not used"
    );
}

#[tokio::test]
async fn a_restored_snapshot_forgets_the_written_documents() {
    let engine = engine().await;
    write_n(&engine, WriteMode::Create, 1).await;
    engine.save_snapshot("s").await.expect("save");
    let (key, lsn) = write_n(&engine, WriteMode::Upsert, 2).await;
    assert!(written(&engine).get(&key, lsn).is_some());
    assert!(engine.restore_snapshot("s").await.expect("restore"));
    assert!(written(&engine).get(&key, lsn).is_none());
    // The restored store gives the same LSN to another version; its write parses the stored
    // body, and the index is what a rebuild gives.
    let (_, again) = write_n(&engine, WriteMode::Upsert, 9).await;
    assert_eq!(again, lsn);
    write_n(&engine, WriteMode::Upsert, 10).await;
    assert!(index_is_rebuilt(&engine).await);
}

/// Patches item `a` with `operations`; returns the patched version's LSN and document.
async fn patch(engine: &Engine, operations: Value) -> (u64, Value) {
    let container = engine.read_container("db", "c").expect("container");
    let patched = engine
        .patch_item(
            &container,
            pk(),
            "a",
            json!({ "operations": operations }),
            None,
        )
        .await
        .expect("patch");
    let record = &patched.item.record;
    let document = serde_json::from_slice(&record.body).expect("body");
    (record.lsn, document)
}

#[tokio::test]
async fn patches_read_and_leave_the_written_document() {
    let engine = engine().await;
    let (key, _) = write_n(&engine, WriteMode::Create, 1).await;
    let set = |n: i64| json!([{"op": "set", "path": "/n", "value": n}]);
    // Not cached: the patch parses the stored body once, for itself and for the index; then
    // cached: the next patch starts from the cached document.
    let mut lsn = 0;
    for n in [2, 3] {
        (lsn, _) = patch(&engine, set(n)).await;
        let expected = json!({"id": "a", "pk": "p", "n": n});
        assert_eq!(written(&engine).get(&key, lsn).as_deref(), Some(&expected));
    }
    assert!(index_is_rebuilt(&engine).await);
    // A document the version does not hold is what the next patch starts from: proof that it
    // is read (the stored item would say 3).
    written(&engine).insert(
        &key,
        lsn,
        Arc::new(json!({"id": "a", "pk": "p", "n": 40})),
        30,
    );
    let (_, document) = patch(&engine, json!([{"op": "incr", "path": "/n", "value": 1}])).await;
    assert_eq!(document["n"], json!(41));
}

#[tokio::test]
async fn a_store_other_processes_share_keeps_no_written_document() {
    let engine = engine_on(Arc::new(SharedMemory(MemoryStore::new()))).await;
    write_n(&engine, WriteMode::Create, 1).await;
    let (key, lsn) = write_n(&engine, WriteMode::Upsert, 2).await;
    assert!(written(&engine).get(&key, lsn).is_none());
    write_n(&engine, WriteMode::Upsert, 3).await;
    assert!(index_is_rebuilt(&engine).await);
}
