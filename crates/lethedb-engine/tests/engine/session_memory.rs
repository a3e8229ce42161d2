//! Session LSNs from memory on a store only this process writes: the writer raises the kept
//! shard sequences after every commit, so a point read answers its range's token without
//! reading the counters, and that token is the one the counters would have given (the sum of
//! the range's shard LSNs the store holds) after any kind of write: a sweeper's purge, a
//! partition delete, an atomic batch, a stored procedure; and not past it after a batch that
//! was undone.
//!
//! PostgreSQL keeps its counters read (other processes write it): `shared_sessions.rs`.

use crate::common::{atomic_batch, config, engine_on_store, pk, resolved};
use crate::counting_store::CountingStore;
use lethedb_engine::{
    parse_batch, Container, Engine, ManualClock, ResourceKind, ResourceParent, WriteMode,
};
use lethedb_storage::{RedbStore, Storage};
use serde_json::{json, Value};
use std::sync::Arc;

const START_MS: i64 = 1_800_000_000_000;

/// An engine on `store` with container `c` (partition key `/pk`, TTL on, one range).
async fn engine_on(store: Arc<dyn Storage>, clock: &Arc<ManualClock>) -> Engine {
    let container = json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": -1});
    engine_on_store(store, Arc::clone(clock), container, config()).await
}

async fn create(engine: &Engine, body: Value) -> u64 {
    let partition = body["pk"].as_str().expect("a pk").to_string();
    let written = engine
        .write_item(
            &resolved(engine, "c"),
            WriteMode::Create,
            pk(&partition),
            body,
            None,
        )
        .await
        .expect("create");
    written.item.record.lsn
}

/// The session LSN a point read of `id` in partition `p` answers, as the server's read
/// handler forms it: the range's sum, raised by the LSN the read returned.
async fn read_session(engine: &Engine, id: &str) -> u64 {
    let (item, seen) = engine
        .read_item_with_lsn(&resolved(engine, "c"), pk("p"), id)
        .await
        .expect("read");
    let container = &item.container;
    engine
        .range_session_lsn(container, range_of_p(container), Some(seen))
        .await
        .expect("session")
}

fn range_of_p(container: &Container) -> u32 {
    let key = container.partition_key.point_key(pk("p")).expect("point");
    container.range_of(&key)
}

/// What reading the counters gives: with one range, the container's version, the sum of the
/// sequences of every shard's LSN the store holds.
fn stored_session(engine: &Engine) -> u64 {
    let container = resolved(engine, "c");
    assert_eq!(
        container.ranges.ranges.len(),
        1,
        "one range covers every shard"
    );
    engine.container_lsn(&container).expect("counters")
}

/// A point read's token after `write` equals the counters' (and so rose by the write).
async fn token_follows(engine: &Engine, what: &str, write: impl std::future::Future<Output = ()>) {
    let before = read_session(engine, "keep").await;
    write.await;
    let after = read_session(engine, "keep").await;
    assert!(after > before, "{what}: the write moved no LSN ({before})");
    assert_eq!(
        after,
        stored_session(engine),
        "{what}: the point read's token"
    );
}

/// An engine on the test store with item `keep` in partition `p`, items that expire in a
/// second in `p`, `q` and `r`, and item `kept` in `r`.
async fn engine_with_items() -> (Engine, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine = engine_on(crate::common::test_store(), &clock).await;
    create(&engine, json!({"id": "keep", "pk": "p"})).await;
    for (id, partition) in [("doomed", "p"), ("elsewhere", "q"), ("gone", "r")] {
        create(&engine, json!({"id": id, "pk": partition, "ttl": 1})).await;
    }
    create(&engine, json!({"id": "kept", "pk": "r"})).await;
    (engine, clock)
}

#[tokio::test]
async fn a_point_read_after_a_sweeper_purge_answers_the_counters_token() {
    let (engine, clock) = engine_with_items().await;
    // Nobody is answered a token for the sweeper's purge of the expired items.
    token_follows(&engine, "sweeper", async {
        clock.advance_ms(2_000);
        while engine.sweep_once(100).await.expect("sweep").0 > 0 {}
    })
    .await;
}

#[tokio::test]
async fn a_point_read_after_a_partition_delete_answers_the_counters_token() {
    let (engine, _clock) = engine_with_items().await;
    token_follows(&engine, "partition delete", async {
        let container = resolved(&engine, "c");
        let deleted = engine.delete_partition(&container, pk("r").expect("key"));
        assert_eq!(deleted.await.expect("delete"), 2);
    })
    .await;
}

#[tokio::test]
async fn a_point_read_after_an_atomic_batch_answers_the_counters_token() {
    let (engine, _clock) = engine_with_items().await;
    token_follows(&engine, "atomic batch", async {
        let operations = parse_batch(&json!([
            {"operationType": "Create", "resourceBody": {"id": "b1", "pk": "p"}},
            {"operationType": "Upsert", "resourceBody": {"id": "b2", "pk": "p"}}
        ]))
        .expect("parse");
        assert!(atomic_batch(&engine, operations).await.1);
    })
    .await;
}

#[tokio::test]
async fn a_point_read_after_a_stored_procedure_answers_the_counters_token() {
    let (engine, _clock) = engine_with_items().await;
    let parent = ResourceParent::Container {
        database_id: "db".into(),
        container_id: "c".into(),
    };
    let body = "function () { var c = getContext().getCollection(); \
                c.createDocument(c.getSelfLink(), {id: 's1', pk: 'p'}); }";
    engine
        .create_resource(
            ResourceKind::StoredProcedure,
            parent,
            json!({"id": "s", "body": body}),
        )
        .await
        .expect("stored");
    token_follows(&engine, "stored procedure", async {
        let container = resolved(&engine, "c");
        engine
            .execute_stored_procedure(&container, "s", pk("p"), Vec::new(), false)
            .await
            .expect("executed");
    })
    .await;
}

/// Point reads on `store` (which only this process writes) after their container's
/// sequences were read once: each reads its item and no counters, and answers the counters'
/// token.
async fn point_reads_read_no_counters<S: Storage>(store: Arc<CountingStore<S>>) {
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine = engine_on(store.clone(), &clock).await;
    for id in ["a", "b", "c"] {
        create(&engine, json!({"id": id, "pk": "p"})).await;
    }
    read_session(&engine, "a").await;
    let stored = stored_session(&engine);
    store.taken();
    store.counters_taken();
    for id in ["a", "b", "c", "a"] {
        assert_eq!(read_session(&engine, id).await, stored);
    }
    assert_eq!(store.taken(), 4, "one item row per read");
    assert_eq!(store.counters_taken(), 0, "the reads read no counters");
    create(&engine, json!({"id": "d", "pk": "p"})).await;
    assert_eq!(read_session(&engine, "d").await, stored_session(&engine));
}

#[tokio::test]
async fn a_point_read_on_memory_reads_no_counters() {
    point_reads_read_no_counters(Arc::new(CountingStore::new())).await;
}

#[tokio::test]
async fn a_point_read_on_redb_reads_no_counters() {
    let dir = tempfile::tempdir().expect("temp dir");
    let redb = RedbStore::open(&dir.path().join("lethedb.redb")).expect("redb");
    point_reads_read_no_counters(Arc::new(CountingStore::over(redb))).await;
}

#[tokio::test]
async fn a_point_read_after_a_failed_batch_answers_the_counters_token() {
    let (engine, _clock) = engine_with_items().await;
    let before = read_session(&engine, "keep").await;
    // The second create conflicts: the batch is undone, the counters it wrote included.
    let operations = parse_batch(&json!([
        {"operationType": "Create", "resourceBody": {"id": "y", "pk": "p"}},
        {"operationType": "Create", "resourceBody": {"id": "keep", "pk": "p"}}
    ]))
    .expect("parse");
    assert!(
        !atomic_batch(&engine, operations).await.1,
        "the batch fails"
    );
    let after = read_session(&engine, "keep").await;
    assert_eq!(after, before, "an undone batch moved the token");
    assert_eq!(after, stored_session(&engine));
}
