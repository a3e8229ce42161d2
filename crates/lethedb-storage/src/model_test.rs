//! A model test: random puts, deletes, scans, savepoints and commits on each backend, checked
//! against a `BTreeMap` that plays the part of the truth; the same history through a
//! [`FailingStore`] checks that a failed put or commit loses nothing already committed and makes
//! nothing of its own transaction durable.

use crate::{
    FailingStore, FaultPlan, KeyRange, MemoryStore, RedbStore, Storage, StorageError, Table,
};
use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};

/// A tiny deterministic generator, so failures replay.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn key(&mut self) -> Vec<u8> {
        let len = 1 + self.below(3) as usize;
        (0..len).map(|_| self.below(4) as u8 * 85).collect()
    }
    /// A value of 8 bytes mostly, sometimes around the ends of the redb store's body pieces
    /// (1,000 bytes each, `redb_bodies.rs`), so that bodies of one, two and three pieces are
    /// replaced and deleted in every order.
    fn value(&mut self) -> Vec<u8> {
        let len = match self.below(8) {
            0 => [0, 999, 1_000, 1_001, 2_000, 2_500][self.below(6) as usize],
            _ => 8,
        };
        let seed = self.next();
        (0..len).map(|at| (seed as usize + at * 7) as u8).collect()
    }
}

pub(crate) fn collect(
    txn: &dyn crate::ReadTxn,
    table: Table,
    range: &KeyRange,
    reverse: bool,
    limit: usize,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut visit = |key: &[u8], value: &[u8]| {
        out.push((key.to_vec(), value.to_vec()));
        if out.len() >= limit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let result = if reverse {
        txn.scan_rev(table, range, &mut visit)
    } else {
        txn.scan(table, range, &mut visit)
    };
    assert!(result.is_ok());
    out
}

pub(crate) fn expected(
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    range: &KeyRange,
    reverse: bool,
    limit: usize,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    if range.is_empty() {
        return Vec::new();
    }
    let entries = model.range((range.start.clone(), range.end.clone()));
    let all: Vec<_> = if reverse {
        entries.rev().map(|(k, v)| (k.clone(), v.clone())).collect()
    } else {
        entries.map(|(k, v)| (k.clone(), v.clone())).collect()
    };
    all.into_iter().take(limit).collect()
}

fn random_range(rng: &mut Rng) -> KeyRange {
    let a = rng.key();
    let b = rng.key();
    match rng.below(4) {
        0 => KeyRange::prefix(&a[..1]),
        1 => KeyRange::between(a, b),
        2 => KeyRange {
            start: Bound::Excluded(a),
            end: Bound::Unbounded,
        },
        _ => KeyRange {
            start: Bound::Unbounded,
            end: Bound::Included(b),
        },
    }
}

pub(crate) type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Runs a random history; returns the model of what is committed at the end. Injected failures
/// (from a [`FailingStore`]) are expected, never other errors.
/// Asserts that a snapshot of `store` holds exactly the items of `committed`.
fn assert_holds(store: &dyn Storage, committed: &Model) {
    let read = store.read().expect("begin read");
    let everything = KeyRange::prefix(&[]);
    assert_eq!(
        collect(&*read, Table::Items, &everything, false, usize::MAX),
        expected(committed, &everything, false, usize::MAX)
    );
}

pub(crate) fn run_model(store: &dyn Storage, seed: u64) -> Model {
    let mut rng = Rng(seed);
    let mut committed: Model = BTreeMap::new();
    for _round in 0..60 {
        let mut txn = match store.write() {
            Ok(txn) => txn,
            Err(StorageError::Poisoned) => {
                // After a failed commit nothing more is written; reads still see the last
                // durable state.
                assert_holds(store, &committed);
                return committed;
            }
            Err(other) => panic!("begin write: {other}"),
        };
        let mut pending = committed.clone();
        // Open savepoints, innermost last, with the model as it was when each was taken.
        let mut savepoints = Vec::new();
        for _op in 0..rng.below(24) {
            let key = rng.key();
            match rng.below(6) {
                0 | 1 => {
                    let value = rng.value();
                    match txn.put(Table::Items, &key, &value) {
                        Ok(()) => {
                            pending.insert(key, value);
                        }
                        // A failed put changes nothing.
                        Err(StorageError::Io(_)) => {}
                        Err(other) => panic!("put: {other}"),
                    }
                }
                2 => {
                    txn.delete(Table::Items, &key).expect("delete");
                    pending.remove(&key);
                }
                3 => {
                    savepoints.push((txn.savepoint(), pending.clone()));
                }
                4 => {
                    if let Some((savepoint, before)) = savepoints.pop() {
                        if rng.below(2) == 0 {
                            txn.rollback_to(savepoint);
                            pending = before;
                        } else {
                            txn.release(savepoint);
                        }
                    }
                }
                _ => {
                    let range = random_range(&mut rng);
                    let reverse = rng.below(2) == 0;
                    let limit = 1 + rng.below(6) as usize;
                    assert_eq!(
                        collect(&*txn, Table::Items, &range, reverse, limit),
                        expected(&pending, &range, reverse, limit),
                        "scan through the write transaction"
                    );
                    assert_eq!(
                        txn.get(Table::Items, &key).expect("get"),
                        pending.get(&key).cloned()
                    );
                }
            }
        }
        while let Some((savepoint, _)) = savepoints.pop() {
            txn.release(savepoint);
        }
        // A snapshot taken before the commit keeps seeing the old state afterwards.
        let before = store.read().expect("begin read");
        let outcome = txn.commit();
        let everything = KeyRange::prefix(&[]);
        assert_eq!(
            collect(&*before, Table::Items, &everything, false, usize::MAX),
            expected(&committed, &everything, false, usize::MAX)
        );
        match outcome {
            Ok(()) => committed = pending,
            // A failed commit makes nothing of its transaction visible.
            Err(StorageError::Io(_)) => {}
            Err(other) => panic!("commit: {other}"),
        }
        let after = store.read().expect("begin read");
        let range = random_range(&mut rng);
        assert_eq!(
            collect(&*after, Table::Items, &range, false, usize::MAX),
            expected(&committed, &range, false, usize::MAX)
        );
        assert!(collect(&*after, Table::Catalog, &everything, false, usize::MAX).is_empty());
    }
    committed
}

#[test]
fn memory_store_matches_the_model() {
    for seed in 1..20 {
        run_model(&MemoryStore::new(), seed);
    }
}

#[test]
fn redb_store_matches_the_model() {
    let dir = tempfile::tempdir().expect("temp dir");
    for seed in 1..4 {
        let store = RedbStore::open(&dir.path().join(format!("model-{seed}.redb"))).expect("open");
        run_model(&store, seed);
    }
}

#[test]
fn redb_store_matches_the_model_whenever_it_writes_its_staged_changes() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Every commit written into redb at once, every few commits, and only at the close.
    for staged_bytes in [0, 300, usize::MAX] {
        for seed in 4..7 {
            let path = dir
                .path()
                .join(format!("staged-{staged_bytes}-{seed}.redb"));
            let store = RedbStore::open(&path)
                .expect("open")
                .with_staged_bytes(staged_bytes);
            let committed = run_model(&store, seed);
            drop(store);
            assert_holds(&RedbStore::open(&path).expect("reopen"), &committed);
        }
    }
}

#[test]
fn failing_store_loses_nothing_committed() {
    for seed in 1..12 {
        for plan in [
            FaultPlan {
                fail_put: Some(1 + seed * 7),
                ..FaultPlan::default()
            },
            FaultPlan {
                fail_commit: Some(1 + seed % 5),
                ..FaultPlan::default()
            },
        ] {
            let store = FailingStore::new(MemoryStore::new(), plan);
            run_model(&store, seed);
            assert_eq!(
                store.failures(),
                1,
                "the planned failure happened ({plan:?})"
            );
        }
    }
}

#[test]
fn failing_store_over_redb_keeps_the_durable_state() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("failing.redb");
    let committed = {
        let plan = FaultPlan {
            fail_commit: Some(9),
            ..FaultPlan::default()
        };
        let store = FailingStore::new(RedbStore::open(&path).expect("open"), plan);
        let committed = run_model(&store, 5);
        assert!(matches!(store.write().err(), Some(StorageError::Poisoned)));
        committed
    };
    assert_holds(&RedbStore::open(&path).expect("reopen"), &committed);
}

#[test]
fn a_rolled_back_savepoint_leaves_the_transaction_as_it_was() {
    let store = MemoryStore::new();
    let mut txn = store.write().expect("write");
    txn.put(Table::Counters, b"a", b"1").expect("put");
    let outer = txn.savepoint();
    txn.put(Table::Counters, b"a", b"2").expect("put");
    let inner = txn.savepoint();
    txn.delete(Table::Counters, b"a").expect("delete");
    txn.put(Table::Counters, b"b", b"3").expect("put");
    txn.rollback_to(inner);
    assert_eq!(
        txn.get(Table::Counters, b"a").expect("get"),
        Some(b"2".to_vec())
    );
    assert_eq!(txn.get(Table::Counters, b"b").expect("get"), None);
    txn.rollback_to(outer);
    assert_eq!(
        txn.get(Table::Counters, b"a").expect("get"),
        Some(b"1".to_vec())
    );
    txn.commit().expect("commit");
    let read = store.read().expect("read");
    assert_eq!(
        read.get(Table::Counters, b"a").expect("get"),
        Some(b"1".to_vec())
    );
    assert_eq!(read.get(Table::Counters, b"b").expect("get"), None);
}

#[test]
fn a_held_commit_waits_for_its_release() {
    let store = std::sync::Arc::new(FailingStore::new(MemoryStore::new(), FaultPlan::default()));
    store.hold_commits();
    let writer = {
        let store = std::sync::Arc::clone(&store);
        std::thread::spawn(move || {
            let mut txn = store.write().expect("write");
            txn.put(Table::Counters, b"k", b"v").expect("put");
            txn.commit().expect("commit");
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(50));
    let read = store.read().expect("read");
    assert_eq!(read.get(Table::Counters, b"k").expect("get"), None, "held");
    store.release_commits();
    writer.join().expect("writer thread");
    let read = store.read().expect("read");
    assert_eq!(
        read.get(Table::Counters, b"k").expect("get"),
        Some(b"v".to_vec())
    );
}

#[test]
fn a_second_opener_of_a_durable_store_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("owned.redb");
    let _owner = RedbStore::open(&path).expect("open");
    match RedbStore::open(&path) {
        Err(StorageError::AlreadyOpen(at)) => assert!(at.ends_with("owned.redb")),
        Err(other) => panic!("expected AlreadyOpen, got {other}"),
        Ok(_) => panic!("a second opener must be refused"),
    }
}

#[test]
fn redb_store_keeps_committed_data_across_reopen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("reopen.redb");
    {
        let store = RedbStore::open(&path).expect("open");
        let mut txn = store.write().expect("write");
        txn.put(Table::Counters, b"k", b"v").expect("put");
        txn.commit().expect("commit");
        let mut uncommitted = store.write().expect("write");
        uncommitted
            .put(Table::Counters, b"lost", b"v")
            .expect("put");
        drop(uncommitted);
    }
    let store = RedbStore::open(&path).expect("reopen");
    let read = store.read().expect("read");
    assert_eq!(
        read.get(Table::Counters, b"k").expect("get"),
        Some(b"v".to_vec())
    );
    assert_eq!(read.get(Table::Counters, b"lost").expect("get"), None);
}

#[test]
fn prefix_successor_handles_carry() {
    assert_eq!(crate::prefix_successor(b"ab"), Some(b"ac".to_vec()));
    assert_eq!(crate::prefix_successor(&[1, 255]), Some(vec![2]));
    assert_eq!(crate::prefix_successor(&[255, 255]), None);
}
