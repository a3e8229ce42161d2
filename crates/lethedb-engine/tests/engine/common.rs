//! Helpers shared by the engine's integration tests: resolved containers, partition key values,
//! query pages, a deterministic random generator, and the engine's configuration with these
//! tests' own wire statuses.

use lethedb_engine::{
    ChangeFeedMode, ChangeFeedRequest, ChangeFeedStart, Engine, EngineConfig, ErrorCode,
    FeedCursor, PartitionKeyValue, RangeFilter,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// What a failure is on the wire, as these tests tell the engine (the server gives its one error
/// table; the engine has none): the statuses and code names a script's failed operation shows,
/// for the failures these tests make a script meet, as the service gives them.
pub fn wire_status(code: ErrorCode) -> (u16, &'static str) {
    match code {
        ErrorCode::ItemNotFound | ErrorCode::ResourceNotFound => (404, "NotFound"),
        ErrorCode::ItemIdConflict | ErrorCode::ResourceIdConflict => (409, "Conflict"),
        ErrorCode::PreconditionFailed => (412, "PreconditionFailed"),
        ErrorCode::ItemTooLarge => (413, "RequestEntityTooLarge"),
        code if code.is_service_failure() => (503, "ServiceUnavailable"),
        _ => (400, "BadRequest"),
    }
}

/// The default configuration, with [`wire_status`].
pub fn config() -> EngineConfig {
    EngineConfig::new(wire_status)
}

/// Container `id` of database `db`, resolved as the server resolves the container of an item
/// request before it calls the engine.
pub fn resolved(
    engine: &lethedb_engine::Engine,
    id: &str,
) -> std::sync::Arc<lethedb_engine::Container> {
    engine.read_container("db", id).expect("container")
}

/// The partition key header value for a single string key.
pub fn pk(value: &str) -> Option<PartitionKeyValue> {
    Some(PartitionKeyValue::parse_json_text(&serde_json::json!([value]).to_string()).expect("pk"))
}

/// The page a query came to; a query that needs the SDK's client pipeline fails the test.
pub fn page(outcome: lethedb_engine::QueryOutcome) -> lethedb_engine::QueryPage {
    match outcome {
        lethedb_engine::QueryOutcome::Page(page) => page,
        lethedb_engine::QueryOutcome::NeedsClientPipeline(pipeline) => {
            panic!("the query needs the client pipeline: {:?}", pipeline.plan)
        }
    }
}

/// A tiny deterministic generator (xorshift), so a failure replays.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// An engine on the test store ([`test_store`]) with database `db` and the container
/// `container` in it.
pub async fn engine_with_container(
    clock: std::sync::Arc<lethedb_engine::ManualClock>,
    container: serde_json::Value,
) -> lethedb_engine::Engine {
    engine_on_store(test_store(), clock, container, config()).await
}

/// The store these tests run the engine on: in memory, unless `LETHEDB_TEST_STORE=fjall`
/// names the fjall store, opened in a temporary directory of its own (removed with it), whose
/// engine runs a writer lane per core (`EngineConfig::writer_lanes`), or `redb` the redb store,
/// likewise, which hands its staged changes to its flusher every 4 KiB so that the tests read
/// through all three of its layers.
pub fn test_store() -> std::sync::Arc<dyn lethedb_storage::Storage> {
    match std::env::var("LETHEDB_TEST_STORE").as_deref() {
        Ok("fjall") => std::sync::Arc::new(temp_fjall()),
        Ok("redb") => std::sync::Arc::new(temp_redb()),
        Ok("memory") | Err(_) => std::sync::Arc::new(lethedb_storage::MemoryStore::new()),
        Ok(other) => panic!("LETHEDB_TEST_STORE={other}: expected memory, fjall or redb"),
    }
}

/// Whether [`test_store`] commits transactions of disjoint shards side by side (fjall), so
/// that a write queued under a container's shard lock is refused as busy once the container
/// was made again under its name.
pub fn test_store_writes_by_shard() -> bool {
    test_store().concurrent_shard_writes()
}

/// A durable store in a temporary directory that is removed when the store is dropped.
struct TempStore<S> {
    // Declared first, so the store is closed before its directory is removed.
    store: S,
    _dir: tempfile::TempDir,
}

impl<S> TempStore<S> {
    fn open(make: impl FnOnce(&std::path::Path) -> S) -> TempStore<S> {
        let dir = tempfile::tempdir().expect("temp dir");
        TempStore {
            store: make(dir.path()),
            _dir: dir,
        }
    }
}

fn temp_fjall() -> TempStore<lethedb_storage::FjallStore> {
    TempStore::open(|dir| {
        lethedb_storage::FjallStore::open_with_memory(&dir.join("fjall"), 16 * 1024 * 1024)
            .expect("fjall store")
    })
}

fn temp_redb() -> TempStore<lethedb_storage::RedbStore> {
    TempStore::open(|dir| {
        lethedb_storage::RedbStore::open_with_cache(&dir.join("lethedb.redb"), 16 * 1024 * 1024)
            .expect("redb store")
            .with_staged_bytes(4096)
    })
}

type Keys<'a> = &'a [(lethedb_storage::Table, &'a [u8])];
type Written<'a> = Result<Box<dyn lethedb_storage::WriteTxn + 'a>, lethedb_storage::StorageError>;

/// Every method passed to the store, so the wrapper changes nothing of what it does.
impl<S: lethedb_storage::Storage> lethedb_storage::Storage for TempStore<S> {
    fn read(
        &self,
    ) -> Result<Box<dyn lethedb_storage::ReadTxn + '_>, lethedb_storage::StorageError> {
        self.store.read()
    }
    fn write(&self) -> Written<'_> {
        self.store.write()
    }
    fn write_reading(&self, keys: Keys<'_>) -> Written<'_> {
        self.store.write_reading(keys)
    }
    fn write_reading_shards(&self, shards: &[u64], keys: Keys<'_>) -> Written<'_> {
        self.store.write_reading_shards(shards, keys)
    }
    fn write_reading_free_shards(
        &self,
        shards: &[u64],
        keys: Keys<'_>,
    ) -> Result<(Box<dyn lethedb_storage::WriteTxn + '_>, Vec<u64>), lethedb_storage::StorageError>
    {
        self.store.write_reading_free_shards(shards, keys)
    }
    fn concurrent_shard_writes(&self) -> bool {
        self.store.concurrent_shard_writes()
    }
    fn kind(&self) -> &'static str {
        self.store.kind()
    }
    fn snapshots(&self) -> Option<&dyn lethedb_storage::Snapshots> {
        self.store.snapshots()
    }
}

/// An engine on `store` with database `db` and the container `container` in it.
pub async fn engine_on_store(
    store: std::sync::Arc<dyn lethedb_storage::Storage>,
    clock: std::sync::Arc<lethedb_engine::ManualClock>,
    container: serde_json::Value,
    config: lethedb_engine::EngineConfig,
) -> lethedb_engine::Engine {
    let engine = lethedb_engine::Engine::open(store, clock, config).expect("engine");
    engine
        .create_database(serde_json::json!({"id": "db"}), None)
        .await
        .expect("db");
    engine
        .create_container("db", container, None)
        .await
        .expect("container");
    engine
}

/// Creates items `i0`..`i{count-1}` in partition `p` of container `c`.
pub async fn create_items(engine: &lethedb_engine::Engine, count: usize) {
    for i in 0..count {
        engine
            .write_item(
                &resolved(engine, "c"),
                lethedb_engine::WriteMode::Create,
                pk("p"),
                serde_json::json!({"id": format!("i{i}"), "pk": "p"}),
                None,
            )
            .await
            .expect("create");
    }
}

/// Creates each document in container `c` of database `db`, in the partition its `pk` names.
pub async fn create_documents(
    engine: &lethedb_engine::Engine,
    documents: impl IntoIterator<Item = serde_json::Value>,
) {
    let container = resolved(engine, "c");
    for document in documents {
        let partition = document["pk"].as_str().expect("a string pk").to_string();
        engine
            .write_item(
                &container,
                lethedb_engine::WriteMode::Create,
                pk(&partition),
                document,
                None,
            )
            .await
            .expect("create");
    }
}

/// Upserts `body` into container `c` of database `db`, in the partition its `pk` names (none
/// without one).
pub async fn upsert_document(engine: &lethedb_engine::Engine, body: serde_json::Value) {
    let partition = body["pk"].as_str().map(str::to_string);
    engine
        .write_item(
            &resolved(engine, "c"),
            lethedb_engine::WriteMode::Upsert,
            partition.as_deref().and_then(pk),
            body,
            None,
        )
        .await
        .expect("write");
}

/// The TTL events of container `container` (database `db`) from `start`, counted by item id,
/// read page after page to the end, and the cursor after them.
pub async fn ttl_events_from(
    engine: &Engine,
    container: &str,
    mut start: ChangeFeedStart,
) -> (BTreeMap<String, usize>, FeedCursor) {
    let container = resolved(engine, container);
    let mut events = BTreeMap::new();
    loop {
        let request = ChangeFeedRequest {
            mode: ChangeFeedMode::AllVersionsAndDeletes,
            start,
            partition_key: None,
            filter: RangeFilter::everything(),
            page_items_max: Some(1_000),
        };
        let page = engine
            .read_change_feed(&container, request)
            .await
            .expect("change feed");
        if page.not_modified {
            return (events, page.etag);
        }
        for bytes in &page.entries {
            let entry: Value = serde_json::from_slice(bytes).expect("json");
            if entry["metadata"]["timeToLiveExpired"] == json!(true) {
                let id = entry["metadata"]["id"].as_str().expect("id").to_string();
                *events.entry(id).or_insert(0) += 1;
            }
        }
        start = ChangeFeedStart::Continuation { cursor: page.etag };
    }
}

/// Runs `operations` as one atomic transactional batch in partition `p` of container `c`.
pub async fn atomic_batch(
    engine: &lethedb_engine::Engine,
    operations: Vec<lethedb_engine::BatchOperation>,
) -> (Vec<lethedb_engine::BatchEntry>, bool, u64) {
    engine
        .execute_batch(
            &resolved(engine, "c"),
            pk("p"),
            operations,
            lethedb_engine::BatchMode::Atomic,
        )
        .await
        .expect("batch")
}
