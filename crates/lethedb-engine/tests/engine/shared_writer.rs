//! The writer's groups on a PostgreSQL store shared with another process: a group of
//! one-partition writes takes the shard locks free at once, commits the jobs of those shards,
//! and leaves the others for its next group, where they keep their order ahead of any later
//! job of the same shard; a bulk request takes the locks of its operations' shards only, and
//! the store's lock when one of its operations names no partition.
//!
//! Like `shared_store.rs`, they run when `LETHEDB_TEST_POSTGRES` names a database.

use crate::common::{pk, resolved};
use crate::shared_store::{database_url, fresh_schema, open_store, pair_in};
use lethedb_engine::{
    parse_batch, BatchMode, Container, Engine, EngineResult, ItemOutcome, WriteMode,
};
use lethedb_storage::Storage;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// How long the test lets spawned writes reach the writer's queue.
const QUEUE_WAIT: Duration = Duration::from_millis(1_000);

/// A partition whose shard is none of `taken`'s.
fn partition_outside(container: &Container, taken: &[&str]) -> String {
    let lock = |partition: &str| container.shard_lock_of(&pk(partition).expect("pk"));
    let locks: Vec<u64> = taken.iter().map(|partition| lock(partition)).collect();
    (0..1_000)
        .map(|n| format!("q{n}"))
        .find(|other| !locks.contains(&lock(other)))
        .expect("another shard")
}

/// A fresh schema's URL and name, and its second engine (one writer lane, so every job of a
/// test shares one queue) with container `v2` (`/pk`, hash v2, so partitions spread over the
/// shards).
async fn v2_engine() -> (String, String, Engine, Arc<Container>) {
    let (url, schema) = (database_url(), fresh_schema());
    let (_, engine, _) = pair_in(&url, &schema).await;
    let body =
        json!({"id": "v2", "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2}});
    engine
        .create_container("db", body, None)
        .await
        .expect("container");
    let container = resolved(&engine, "v2");
    (url, schema, engine, container)
}

/// Three partitions of three different shards: `p` and two found after it.
fn three_shards(container: &Container) -> (String, String, String) {
    let p = "p".to_string();
    let q = partition_outside(container, &[&p]);
    let r = partition_outside(container, &[&p, &q]);
    (p, q, r)
}

/// Waits until `queued` writes wait in `engine`'s writer queue, so writes spawned one after
/// another reach it in that order (spawned tasks may otherwise run in any order).
async fn wait_until_queued(engine: &Engine, queued: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while engine.writer_stats().2 < queued {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the writes never reached the queue"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Starts a write of `body` to partition `partition` through `engine`.
fn spawn_write(
    engine: &Engine,
    container: &Arc<Container>,
    mode: WriteMode,
    partition: &str,
    body: Value,
) -> JoinHandle<EngineResult<ItemOutcome>> {
    let (engine, container, partition) = (engine.clone(), Arc::clone(container), pk(partition));
    tokio::spawn(async move {
        engine
            .write_item(&container, mode, partition, body, None)
            .await
    })
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_group_commits_the_free_shards_and_its_deferred_jobs_keep_their_order() {
    let (url, schema, engine, container) = v2_engine().await;
    let (p, q, r) = three_shards(&container);
    let lock = |partition: &str| container.shard_lock_of(&pk(partition).expect("pk"));

    // Another process holds the shards of p and r.
    let holder = open_store(&url, &schema);
    let hold_p = holder
        .write_reading_shards(&[lock(&p)], &[])
        .expect("hold p");
    let hold_r = holder
        .write_reading_shards(&[lock(&r)], &[])
        .expect("hold r");
    // The writer's group of one write to r finds no shard free and waits for r...
    let z = spawn_write(
        &engine,
        &container,
        WriteMode::Create,
        &r,
        json!({"id": "z", "pk": r}),
    );
    tokio::time::sleep(QUEUE_WAIT).await;
    // ... while these queue behind it, to form one group once r is free: a create in p, one
    // in q, and a replace of the item the first creates.
    let create = json!({"id": "x", "pk": p, "n": 1});
    let x = spawn_write(&engine, &container, WriteMode::Create, &p, create);
    wait_until_queued(&engine, 1).await;
    let y = spawn_write(
        &engine,
        &container,
        WriteMode::Create,
        &q,
        json!({"id": "y", "pk": q}),
    );
    wait_until_queued(&engine, 2).await;
    let replace = json!({"id": "x", "pk": p, "n": 2});
    let x2 = spawn_write(
        &engine,
        &container,
        WriteMode::Replace("x".into()),
        &p,
        replace,
    );
    wait_until_queued(&engine, 3).await;
    drop(hold_r);
    z.await.expect("task").expect("z created once r was free");
    // The group takes q, free, and commits y; p's jobs wait for the next group.
    tokio::time::timeout(Duration::from_secs(10), y)
        .await
        .expect("the write to a free shard waited for a held one")
        .expect("task")
        .expect("y created");
    assert!(
        !x.is_finished() && !x2.is_finished(),
        "a write to a held shard went ahead"
    );
    drop(hold_p);
    x.await.expect("task").expect("x created");
    // The replace ran after the create it followed, though both had been deferred.
    x2.await.expect("task").expect("x replaced");
    let read = engine
        .read_item(&container, pk(&p), "x")
        .expect("x is there");
    let document: Value = serde_json::from_slice(&read.record.body).expect("json");
    assert_eq!(document["n"], 2);
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bulk_request_locks_only_the_shards_of_its_operations() {
    let (url, schema, engine, container) = v2_engine().await;
    let (p, q, r) = three_shards(&container);
    let bulk = |partitions: &[&str]| {
        let operations: Vec<Value> = partitions
            .iter()
            .enumerate()
            .map(|(n, partition)| {
                // One operation names its key, the other leaves it to its document.
                let mut operation = json!({"operationType": "Upsert",
                    "resourceBody": {"id": format!("b{n}"), "pk": partition}});
                if n == 0 {
                    operation["partitionKey"] = json!([partition]).to_string().into();
                }
                operation
            })
            .collect();
        let operations = parse_batch(&Value::Array(operations)).expect("parse");
        let (engine, container) = (engine.clone(), Arc::clone(&container));
        tokio::spawn(async move {
            engine
                .execute_batch(&container, None, operations, BatchMode::ContinueOnError)
                .await
        })
    };
    // Another process holds p's shard, as an open write of that partition does.
    let holder = open_store(&url, &schema);
    let lock = container.shard_lock_of(&pk(&p).expect("pk"));
    let hold_p = holder.write_reading_shards(&[lock], &[]).expect("hold p");
    // Bulk on q and r goes ahead (under the store's lock it would wait for the holder).
    let (entries, succeeded, _) = tokio::time::timeout(Duration::from_secs(10), bulk(&[&q, &r]))
        .await
        .expect("a bulk request on other shards waited for a held one")
        .expect("task")
        .expect("bulk");
    assert!(
        succeeded && entries.iter().all(Result::is_ok),
        "{entries:?}"
    );
    // Bulk that touches p waits for it, then commits.
    let touching = bulk(&[&q, &p]);
    tokio::time::sleep(QUEUE_WAIT).await;
    assert!(
        !touching.is_finished(),
        "a bulk request went ahead beside a held shard"
    );
    drop(hold_p);
    let (entries, _, _) = touching.await.expect("task").expect("bulk");
    assert!(entries.iter().all(Result::is_ok), "{entries:?}");
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bulk_request_with_an_operation_of_no_partition_takes_the_stores_lock() {
    let (url, schema, engine, container) = v2_engine().await;
    let (p, q, _) = three_shards(&container);
    // Another process holds p's shard (and the store's lock shared), as an open write does.
    let holder = open_store(&url, &schema);
    let lock = container.shard_lock_of(&pk(&p).expect("pk"));
    let hold_p = holder.write_reading_shards(&[lock], &[]).expect("hold p");
    // A delete that names no key, in a request that names none, could be in any partition: the
    // request waits for the store's lock, though its other operation is in a free shard.
    let operations = parse_batch(&json!([
        {"operationType": "Upsert", "resourceBody": {"id": "b", "pk": q}},
        {"operationType": "Delete", "id": "anywhere"},
    ]))
    .expect("parse");
    let bulk = {
        let (engine, container) = (engine.clone(), Arc::clone(&container));
        tokio::spawn(async move {
            engine
                .execute_batch(&container, None, operations, BatchMode::ContinueOnError)
                .await
        })
    };
    tokio::time::sleep(QUEUE_WAIT).await;
    assert!(
        !bulk.is_finished(),
        "a bulk request with an operation of no partition went ahead beside a held shard"
    );
    drop(hold_p);
    let (entries, _, _) = tokio::time::timeout(Duration::from_secs(10), bulk)
        .await
        .expect("the bulk request never ran after the shard was free")
        .expect("task")
        .expect("bulk");
    assert!(entries[0].is_ok(), "{entries:?}");
}
