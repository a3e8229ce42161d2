//! Shard locks against a real PostgreSQL: a transaction of some shards lets transactions of
//! other shards commit beside it, from another process, while one of the same shard or of the
//! whole store waits; and a transaction that takes only the shards free at once never waits
//! while one is free.
//!
//! They run like `tests.rs` (a database named by `LETHEDB_TEST_POSTGRES`), each in a schema
//! of its own.

use super::tests::{database_url, Schema};
use super::PgStore;
use crate::{Storage, Table};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Begins a write transaction on `store` in a thread (of the shards given, or store-wide),
/// writes `key`, commits, and returns how long the start waited.
fn write_in_thread(
    store: &Arc<PgStore>,
    shards: Option<Vec<u64>>,
    key: &'static [u8],
) -> std::thread::JoinHandle<Duration> {
    let store = Arc::clone(store);
    std::thread::spawn(move || {
        let started = Instant::now();
        let mut txn = match &shards {
            Some(shards) => store.write_reading_shards(shards, &[]).expect("write"),
            None => store.write().expect("write"),
        };
        let waited = started.elapsed();
        txn.put(Table::Counters, key, b"1").expect("put");
        txn.commit().expect("commit");
        waited
    })
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[test]
fn writes_of_other_shards_commit_beside_an_open_one_and_the_same_shard_or_the_store_waits() {
    let url = database_url();
    let schema = Schema::new(&url);
    let first = schema.open();
    let second = Arc::new(schema.open());
    let mut open = first.write_reading_shards(&[7, 1], &[]).expect("write");
    open.put(Table::Counters, b"a", b"1").expect("put");
    let other_waited = write_in_thread(&second, Some(vec![2]), b"b")
        .join()
        .expect("thread");
    // Started after: PostgreSQL queues a shared request behind a waiting exclusive one, so a
    // store-wide writer waiting first would hold the other shard's writer back too.
    let same_shard = write_in_thread(&second, Some(vec![3, 7]), b"c");
    let whole_store = write_in_thread(&second, None, b"d");
    std::thread::sleep(Duration::from_millis(300));
    open.commit().expect("commit");
    let (same_waited, store_waited) = (
        same_shard.join().expect("thread"),
        whole_store.join().expect("thread"),
    );
    assert!(
        other_waited < Duration::from_millis(250),
        "another shard's write waited for the open one ({other_waited:?})"
    );
    assert!(
        same_waited >= Duration::from_millis(250),
        "a write of a shard held by an open transaction began ({same_waited:?})"
    );
    assert!(
        store_waited >= Duration::from_millis(250),
        "a store-wide write began beside an open shard write ({store_waited:?})"
    );
    let read = first.read().expect("snapshot");
    for key in [b"a", b"b", b"c", b"d"] {
        assert_eq!(
            read.get(Table::Counters, key).expect("get"),
            Some(b"1".to_vec())
        );
    }
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[test]
fn a_transaction_of_free_shards_takes_those_at_once_and_waits_only_when_none_is_free() {
    let url = database_url();
    let schema = Schema::new(&url);
    let first = schema.open();
    let second = Arc::new(schema.open());
    let mut open = first.write_reading_shards(&[7], &[]).expect("write");
    open.put(Table::Counters, b"a", b"1").expect("put");
    let started = Instant::now();
    let (mut txn, acquired) = second
        .write_reading_free_shards(&[9, 7, 2], &[])
        .expect("write");
    assert!(started.elapsed() < Duration::from_millis(250), "it waited");
    assert_eq!(
        acquired,
        vec![2, 9],
        "the free shards, and not the held one"
    );
    txn.put(Table::Counters, b"b", b"1").expect("put");
    txn.commit().expect("commit");
    // Only held shards: it waits for them all, then holds them.
    let waiting = {
        let second = Arc::clone(&second);
        std::thread::spawn(move || {
            let started = Instant::now();
            let (mut txn, acquired) = second.write_reading_free_shards(&[7], &[]).expect("write");
            let waited = started.elapsed();
            let before = txn.get(Table::Counters, b"a").expect("get");
            txn.put(Table::Counters, b"c", b"1").expect("put");
            txn.commit().expect("commit");
            (waited, acquired, before)
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    open.commit().expect("commit");
    let (waited, acquired, before) = waiting.join().expect("thread");
    assert!(
        waited >= Duration::from_millis(250),
        "it began beside the holder ({waited:?})"
    );
    assert_eq!(acquired, vec![7]);
    assert_eq!(
        before,
        Some(b"1".to_vec()),
        "it reads what the holder committed"
    );
}
