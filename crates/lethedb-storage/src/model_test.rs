//! A model test: random puts, deletes, scans and commits on each backend, checked against a
//! `BTreeMap` that plays the part of the truth.

use crate::{KeyRange, MemoryStore, RedbStore, Storage, Table};
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
}

fn collect(
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

fn expected(
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

fn run_model(store: &dyn Storage, seed: u64) {
    let mut rng = Rng(seed);
    let mut committed: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for _round in 0..60 {
        let mut txn = store.write().expect("begin write");
        let mut pending = committed.clone();
        for _op in 0..rng.below(20) {
            let key = rng.key();
            match rng.below(4) {
                0 | 1 => {
                    let value = rng.next().to_le_bytes().to_vec();
                    txn.put(Table::Items, &key, &value).expect("put");
                    pending.insert(key, value);
                }
                2 => {
                    txn.delete(Table::Items, &key).expect("delete");
                    pending.remove(&key);
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
        // A snapshot taken before the commit keeps seeing the old state afterwards.
        let before = store.read().expect("begin read");
        txn.commit().expect("commit");
        let everything = KeyRange::prefix(&[]);
        assert_eq!(
            collect(&*before, Table::Items, &everything, false, usize::MAX),
            expected(&committed, &everything, false, usize::MAX)
        );
        committed = pending;
        let after = store.read().expect("begin read");
        let range = random_range(&mut rng);
        assert_eq!(
            collect(&*after, Table::Items, &range, false, usize::MAX),
            expected(&committed, &range, false, usize::MAX)
        );
        assert!(collect(&*after, Table::Catalog, &everything, false, usize::MAX).is_empty());
    }
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
