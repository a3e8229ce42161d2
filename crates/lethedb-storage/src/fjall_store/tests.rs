//! The fjall store's own tests: the storage model, durability across reopening, a second
//! opener refused, transactions of disjoint shards side by side and of one shard in turn, the
//! store-wide lock, the catalog epoch, and the poison a failed sync leaves.

use super::FjallStore;
use crate::model_test::{collect, expected, run_model};
use crate::{FailingStore, FaultPlan, KeyRange, Storage, StorageError, Table};
use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// Long enough that a transaction which could begin would have begun.
const BLOCKED_MS: u64 = 150;

fn open(dir: &tempfile::TempDir, name: &str) -> FjallStore {
    FjallStore::open_with_memory(&dir.path().join(name), 16 * 1024 * 1024).expect("open")
}

fn get(store: &FjallStore, table: Table, key: &[u8]) -> Option<Vec<u8>> {
    store.read().expect("read").get(table, key).expect("get")
}

#[test]
fn fjall_store_matches_the_model() {
    let dir = tempfile::tempdir().expect("temp dir");
    for seed in 1..6 {
        run_model(&open(&dir, &format!("model-{seed}")), seed);
    }
}

#[test]
fn failing_store_over_fjall_keeps_the_durable_state() {
    let dir = tempfile::tempdir().expect("temp dir");
    let committed = {
        let plan = FaultPlan {
            fail_commit: Some(9),
            ..FaultPlan::default()
        };
        let store = FailingStore::new(open(&dir, "failing"), plan);
        let committed = run_model(&store, 5);
        assert!(matches!(store.write().err(), Some(StorageError::Poisoned)));
        committed
    };
    let reopened = open(&dir, "failing");
    let read = reopened.read().expect("read");
    let everything = KeyRange::prefix(&[]);
    assert_eq!(
        collect(&*read, Table::Items, &everything, false, usize::MAX),
        expected(&committed, &everything, false, usize::MAX)
    );
}

#[test]
fn a_second_opener_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let _owner = open(&dir, "owned");
    match FjallStore::open(&dir.path().join("owned")) {
        Err(StorageError::AlreadyOpen(at)) => assert!(at.ends_with("owned")),
        Err(other) => panic!("expected AlreadyOpen, got {other}"),
        Ok(_) => panic!("a second opener must be refused"),
    }
}

#[test]
fn committed_writes_survive_reopening_and_uncommitted_ones_do_not() {
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let store = open(&dir, "reopen");
        let mut txn = store.write().expect("write");
        txn.put(Table::Counters, b"k", b"v").expect("put");
        txn.put(Table::Items, b"big", &[7; 4096]).expect("put");
        txn.commit().expect("commit");
        let mut txn = store.write_reading_shards(&[3], &[]).expect("write");
        txn.put(Table::Items, b"s3", b"in a shard").expect("put");
        txn.delete(Table::Counters, b"k").expect("delete");
        txn.commit().expect("commit");
        let mut uncommitted = store.write().expect("write");
        uncommitted
            .put(Table::Counters, b"lost", b"v")
            .expect("put");
        drop(uncommitted);
    }
    let store = open(&dir, "reopen");
    assert_eq!(get(&store, Table::Counters, b"k"), None);
    assert_eq!(get(&store, Table::Items, b"big"), Some(vec![7; 4096]));
    assert_eq!(
        get(&store, Table::Items, b"s3"),
        Some(b"in a shard".to_vec())
    );
    assert_eq!(get(&store, Table::Counters, b"lost"), None);
}

/// Runs `begin_and_commit` on another thread; the receiver hears when it has committed.
fn on_thread(
    store: &Arc<FjallStore>,
    begin_and_commit: impl FnOnce(&FjallStore) + Send + 'static,
) -> (mpsc::Receiver<()>, std::thread::JoinHandle<()>) {
    let (done, heard) = mpsc::channel();
    let store = Arc::clone(store);
    let handle = std::thread::spawn(move || {
        begin_and_commit(&store);
        let _ = done.send(());
    });
    (heard, handle)
}

fn put_in_shards(store: &FjallStore, shards: &[u64], key: &[u8]) {
    let mut txn = store.write_reading_shards(shards, &[]).expect("write");
    txn.put(Table::Items, key, b"v").expect("put");
    txn.commit().expect("commit");
}

#[test]
fn transactions_of_disjoint_shards_commit_side_by_side() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(open(&dir, "disjoint"));
    let mut first = store.write_reading_shards(&[1], &[]).expect("write");
    first.put(Table::Items, b"one", b"v").expect("put");
    let (heard, handle) = on_thread(&store, |store| put_in_shards(store, &[2, 4], b"two"));
    heard
        .recv_timeout(Duration::from_secs(10))
        .expect("shard 2 committed while shard 1's transaction was open");
    first.commit().expect("commit");
    handle.join().expect("thread");
    assert!(get(&store, Table::Items, b"one").is_some());
    assert!(get(&store, Table::Items, b"two").is_some());
}

#[test]
fn a_transaction_of_a_held_shard_waits_and_then_sees_its_commit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(open(&dir, "same"));
    let mut first = store.write_reading_shards(&[1, 2], &[]).expect("write");
    first.put(Table::Items, b"k", b"first").expect("put");
    let (heard, handle) = on_thread(&store, |store| {
        let mut txn = store.write_reading_shards(&[2], &[]).expect("write");
        let seen = txn.get(Table::Items, b"k").expect("get");
        assert_eq!(
            seen,
            Some(b"first".to_vec()),
            "begun after the first commit"
        );
        txn.put(Table::Items, b"k", b"second").expect("put");
        txn.commit().expect("commit");
    });
    assert!(heard
        .recv_timeout(Duration::from_millis(BLOCKED_MS))
        .is_err());
    first.commit().expect("commit");
    heard.recv_timeout(Duration::from_secs(10)).expect("ran");
    handle.join().expect("thread");
    assert_eq!(get(&store, Table::Items, b"k"), Some(b"second".to_vec()));
}

#[test]
fn the_store_wide_lock_waits_for_shards_and_shards_wait_for_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(open(&dir, "wide"));
    let shard = store.write_reading_shards(&[5], &[]).expect("write");
    let (heard, handle) = on_thread(&store, |store| {
        let mut txn = store.write().expect("write");
        txn.put(Table::Catalog, b"c", b"v").expect("put");
        txn.commit().expect("commit");
    });
    assert!(heard
        .recv_timeout(Duration::from_millis(BLOCKED_MS))
        .is_err());
    drop(shard);
    heard.recv_timeout(Duration::from_secs(10)).expect("ran");
    handle.join().expect("thread");

    let wide = store.write().expect("write");
    let (heard, handle) = on_thread(&store, |store| put_in_shards(store, &[6], b"six"));
    assert!(heard
        .recv_timeout(Duration::from_millis(BLOCKED_MS))
        .is_err());
    drop(wide);
    heard.recv_timeout(Duration::from_secs(10)).expect("ran");
    handle.join().expect("thread");
}

#[test]
fn free_shards_are_taken_and_held_ones_left() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(&dir, "free");
    let held = store.write_reading_shards(&[1], &[]).expect("write");
    let (txn, taken) = store
        .write_reading_free_shards(&[3, 1, 2], &[])
        .expect("write");
    assert_eq!(taken, vec![2, 3]);
    drop(txn);
    drop(held);
    let (_txn, taken) = store
        .write_reading_free_shards(&[1, 1], &[])
        .expect("write");
    assert_eq!(taken, vec![1]);
}

#[test]
fn a_catalog_change_moves_the_epoch_the_next_transaction_reads() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(&dir, "epoch");
    let before = store.write().expect("write").catalog_epoch();
    put_in_shards(&store, &[1], b"item");
    assert_eq!(store.write().expect("write").catalog_epoch(), before);
    let mut txn = store.write().expect("write");
    txn.put(Table::Catalog, b"db", b"v").expect("put");
    txn.commit().expect("commit");
    let after = store.write_reading_shards(&[1], &[]).expect("write");
    assert_eq!(after.catalog_epoch(), before.map(|epoch| epoch + 1));
}

#[test]
fn a_failed_sync_poisons_the_store_and_reads_go_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(&dir, "poison");
    put_in_shards(&store, &[1], b"kept");
    store.fail_syncs();
    let mut txn = store.write_reading_shards(&[2], &[]).expect("write");
    txn.put(Table::Items, b"unsynced", b"v").expect("put");
    assert!(matches!(txn.commit(), Err(StorageError::Io(_))));
    assert!(matches!(store.write().err(), Some(StorageError::Poisoned)));
    assert!(matches!(
        store.write_reading_shards(&[1], &[]).err(),
        Some(StorageError::Poisoned)
    ));
    assert!(matches!(
        store.write_reading_free_shards(&[1], &[]).err(),
        Some(StorageError::Poisoned)
    ));
    assert!(get(&store, Table::Items, b"kept").is_some());
}

/// The model across lanes: threads write their own shards' keys side by side, each checked
/// against its own map, and all of them are found again after reopening.
#[test]
fn lanes_of_disjoint_shards_match_their_models_across_reopening() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lanes = 4u8;
    let models = {
        let store = Arc::new(open(&dir, "lanes"));
        let threads: Vec<_> = (0..lanes)
            .map(|lane| {
                let store = Arc::clone(&store);
                std::thread::spawn(move || lane_history(&store, lane))
            })
            .collect();
        threads
            .into_iter()
            .map(|thread| thread.join().expect("lane"))
            .collect::<Vec<_>>()
    };
    let store = open(&dir, "lanes");
    let read = store.read().expect("read");
    for (lane, model) in models.iter().enumerate() {
        let range = KeyRange::prefix(&[lane as u8]);
        assert_eq!(
            collect(&*read, Table::Items, &range, false, usize::MAX),
            expected(model, &range, false, usize::MAX)
        );
    }
}

/// One lane's random puts and deletes of its own keys, committed in 40 transactions; its model.
fn lane_history(store: &FjallStore, lane: u8) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut state = 0x9e37_79b9_u64 + u64::from(lane);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut model = BTreeMap::new();
    for round in 0..40u64 {
        let mut txn = store
            .write_reading_shards(&[u64::from(lane)], &[])
            .expect("write");
        let mut pending = model.clone();
        for _ in 0..next() % 16 {
            let key = vec![lane, (next() % 24) as u8];
            if next() % 3 == 0 {
                txn.delete(Table::Items, &key).expect("delete");
                pending.remove(&key);
            } else {
                let value = round.to_le_bytes().to_vec();
                txn.put(Table::Items, &key, &value).expect("put");
                pending.insert(key, value);
            }
        }
        let range = KeyRange::prefix(&[lane]);
        assert_eq!(
            collect(&*txn, Table::Items, &range, false, usize::MAX),
            expected(&pending, &range, false, usize::MAX)
        );
        txn.commit().expect("commit");
        model = pending;
    }
    model
}
