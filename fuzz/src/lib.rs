//! What the fuzz targets share: an engine on an in-memory store with one database and a few
//! containers (one per partition key definition the targets try), driven from a current-thread
//! tokio runtime, and renewed every so many inputs so that a long run's writes do not pile up.
//!
//! The engine is the real one (writer thread, group commit, scans on the blocking pool): a panic
//! on any of its threads aborts the process through libFuzzer's panic hook and counts as a crash.

use lethedb_engine::{
    Engine, EngineConfig, ManualClock, PartitionKeyDefinition, PartitionKeyValue, WriteMode,
};
use lethedb_storage::MemoryStore;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;

/// The engine's clock: fixed, so nothing written during a run expires under the target's feet.
pub const NOW_MS: i64 = 1_800_000_000_000;
/// The database every container lives in.
pub const DATABASE: &str = "db";
/// Inputs served by one engine before a fresh one replaces it (bounds memory in long runs).
const INPUTS_PER_ENGINE: u64 = 2_000;

/// The containers of the fuzzing engine: `(id, partitionKey definition)`. Every one has TTL on
/// without a default (`defaultTtl: -1`), so an item's own `ttl` is read and honoured.
pub fn container_definitions() -> Vec<(&'static str, Value)> {
    vec![
        ("v1", json!({"paths": ["/pk"], "kind": "Hash"})),
        (
            "v2",
            json!({"paths": ["/a/b"], "kind": "Hash", "version": 2}),
        ),
        (
            "hier",
            json!({"paths": ["/tenant", "/user", "/session"], "kind": "MultiHash", "version": 2}),
        ),
        ("system", Value::Null),
    ]
}

/// The partition key definitions of [`container_definitions`], parsed as the engine parses them.
pub fn definitions() -> Vec<(&'static str, PartitionKeyDefinition)> {
    container_definitions()
        .into_iter()
        .map(|(id, body)| {
            let definition = PartitionKeyDefinition::from_container_body(Some(&body))
                .unwrap_or_else(|error| panic!("definition {id}: {error:?}"));
            (id, definition)
        })
        .collect()
}

/// The documents every fresh engine holds in container `v2` (partition `["a"]` and `["b"]`), for
/// the targets that read, patch or batch over existing items.
pub fn base_documents() -> Vec<Value> {
    vec![
        json!({"id": "one", "a": {"b": "a"}, "n": 1, "tags": ["x", "y"], "nested": {"k": [1, {"z": 2}]}}),
        json!({"id": "two", "a": {"b": "a"}, "n": 2.5, "s": "text", "flag": true}),
        json!({"id": "three", "a": {"b": "b"}, "n": -3, "ttl": 3600}),
        json!({"id": "four", "a": {"b": "a"}, "arr": [], "obj": {}}),
    ]
}

/// A fuzzing engine and the runtime that drives it.
pub struct Harness {
    runtime: tokio::runtime::Runtime,
    engine: Option<Engine>,
    inputs: u64,
}

thread_local! {
    static HARNESS: RefCell<Option<Harness>> = const { RefCell::new(None) };
}

impl Harness {
    /// Runs `work` with this thread's harness, renewing the engine every
    /// [`INPUTS_PER_ENGINE`] inputs.
    pub fn with<T>(work: impl FnOnce(&mut Harness) -> T) -> T {
        HARNESS.with(|cell| {
            let mut slot = cell.borrow_mut();
            let harness = slot.get_or_insert_with(Harness::new);
            harness.inputs += 1;
            if harness.inputs % INPUTS_PER_ENGINE == 0 {
                harness.renew();
            }
            work(harness)
        })
    }

    fn new() -> Harness {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let mut harness = Harness {
            runtime,
            engine: None,
            inputs: 0,
        };
        harness.renew();
        harness
    }

    /// Replaces the engine with a fresh one holding only the containers and base documents.
    pub fn renew(&mut self) {
        if let Some(old) = self.engine.take() {
            old.close();
        }
        let engine = Engine::open(
            Arc::new(MemoryStore::new()),
            Arc::new(ManualClock::new(NOW_MS)),
            EngineConfig {
                rate_limit: false,
                ..EngineConfig::new(lethedb_server::wire_status)
            },
        )
        .expect("engine");
        self.runtime.block_on(async {
            engine
                .create_database(json!({"id": DATABASE}), None)
                .await
                .expect("database");
            for (id, partition_key) in container_definitions() {
                let mut body = json!({"id": id, "defaultTtl": -1});
                if !partition_key.is_null() {
                    body["partitionKey"] = partition_key;
                }
                engine
                    .create_container(DATABASE, body, None)
                    .await
                    .expect("container");
            }
            let v2 = engine.read_container(DATABASE, "v2").expect("v2");
            for document in base_documents() {
                let key = partition_key_of(&document["a"]["b"]);
                engine
                    .write_item(&v2, WriteMode::Create, key, document, None)
                    .await
                    .expect("base document");
            }
        });
        self.engine = Some(engine);
    }

    pub fn engine(&self) -> &Engine {
        self.engine.as_ref().expect("engine")
    }

    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }
}

/// The partition key header value `[value]`.
pub fn partition_key_of(value: &Value) -> Option<PartitionKeyValue> {
    PartitionKeyValue::parse_json_text(&json!([value]).to_string()).ok()
}

/// A document minus the system properties the engine drops from bodies and adds to answers, so
/// what was sent and what was stored can be compared.
pub fn without_system_properties(mut document: Value) -> Value {
    if let Value::Object(map) = &mut document {
        for name in ["_rid", "_self", "_etag", "_attachments", "_ts"] {
            map.shift_remove(name);
        }
    }
    document
}

/// Splits an input into its first line and the rest (`None` when there is no newline).
pub fn split_line(data: &[u8]) -> (&[u8], Option<&[u8]>) {
    match data.iter().position(|b| *b == b'\n') {
        Some(at) => (&data[..at], Some(&data[at + 1..])),
        None => (data, None),
    }
}

/// Every visible item of a container, in key order, and its LSN: what a failed write must leave
/// as it found it.
pub fn snapshot(harness: &Harness, container: &str) -> (Vec<lethedb_engine::StoredItem>, u64) {
    let engine = harness.engine();
    let handle = engine
        .read_container(DATABASE, container)
        .expect("container");
    let feed = harness
        .block_on(engine.read_feed(
            &handle,
            None,
            lethedb_engine::RangeFilter::everything(),
            lethedb_engine::PAGE_ITEMS_MAX,
            None,
        ))
        .expect("read feed");
    assert!(feed.continuation.is_none(), "the snapshot fits one page");
    let lsn = engine.container_lsn(&handle).expect("container lsn");
    (feed.items, lsn)
}

/// Whether two snapshots hold the same versions (same records in the same order) at the same LSN.
pub fn same_snapshot(
    a: &(Vec<lethedb_engine::StoredItem>, u64),
    b: &(Vec<lethedb_engine::StoredItem>, u64),
) -> bool {
    a.1 == b.1 && a.0.len() == b.0.len() && a.0.iter().zip(&b.0).all(|(x, y)| x.record == y.record)
}
