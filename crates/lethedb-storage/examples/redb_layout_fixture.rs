//! Writes the redb store fixture of `tests/redb_layout.rs`: a store written by the release this
//! is built with, through the storage interface, in two sessions. The first is stopped cleanly,
//! so its writes are in the store file; the second ends as if the process crashed, so its
//! writes are only in the redo log. Every table gets entries, and items of several sizes (empty,
//! small, about 1 KiB, larger than a page) are created, replaced and deleted. Beside the store
//! it writes `expected.json`: every table's entries after both sessions, each key in hex and
//! each value as its length and its 64-bit xxh3 hash. The first session also saves a snapshot,
//! `first`, whose entries are in `expected-first.json`.
//! Run on the release whose layout the fixture is to hold:
//! `cargo run -p lethedb-storage --example redb_layout_fixture -- DIR`.

use lethedb_storage::{KeyRange, RedbStore, Storage, StorageError, Table};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::Path;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A value's length and 64-bit xxh3 hash, as `tests/redb_layout.rs` compares them.
fn digest(value: &[u8]) -> String {
    format!("{}:{:016x}", value.len(), xxhash_rust::xxh3::xxh3_64(value))
}

/// A value of `len` bytes that differs with `seed`.
fn value(seed: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|at| (seed as usize * 31 + at * 7) as u8)
        .collect()
}

/// The item key of item `n` in partition `n % 5`.
fn item_key(n: u64) -> Vec<u8> {
    format!("c1\0p{}\0item-{n:04}", n % 5).into_bytes()
}

fn item_len(n: u64) -> usize {
    [0, 40, 1_100, 1_100, 1_100, 6_000][(n % 6) as usize]
}

/// One session's writes, `commits` of them, each touching every table.
fn session(store: &RedbStore, first: u64, commits: u64) -> Result<(), StorageError> {
    for commit in first..first + commits {
        let mut write = store.write()?;
        write.put(
            Table::Catalog,
            format!("db/{}", commit % 3).as_bytes(),
            &value(commit, 30),
        )?;
        for n in commit * 4..commit * 4 + 4 {
            write.put(Table::Items, &item_key(n), &value(n, item_len(n)))?;
            write.put(Table::ResourceIds, &n.to_be_bytes(), &item_key(n))?;
            write.put(
                Table::ChangeLog,
                &[b"c1".as_slice(), &n.to_be_bytes()].concat(),
                &item_key(n),
            )?;
            write.put(
                Table::Expiry,
                &[&(n * 1000).to_be_bytes()[..], &item_key(n)].concat(),
                b"",
            )?;
            write.put(
                Table::Index,
                &[b"c1\0v\0".as_slice(), &value(n, 6), &item_key(n)].concat(),
                b"",
            )?;
        }
        // Replace an earlier item with another size, and delete another.
        if commit >= 2 {
            let replaced = commit * 4 - 7;
            write.put(
                Table::Items,
                &item_key(replaced),
                &value(commit, item_len(commit + 3)),
            )?;
            write.delete(Table::Items, &item_key(commit * 4 - 5))?;
            write.delete(Table::ResourceIds, &(commit * 4 - 5).to_be_bytes())?;
        }
        write.put(Table::Counters, b"c1", &commit.to_be_bytes())?;
        write.commit()?;
    }
    Ok(())
}

fn dump(store: &RedbStore) -> Result<BTreeMap<String, Vec<[String; 2]>>, StorageError> {
    let read = store.read()?;
    let mut all = BTreeMap::new();
    for table in Table::ALL {
        let mut entries = Vec::new();
        read.scan(
            table,
            &KeyRange::prefix(b""),
            &mut |key: &[u8], value: &[u8]| {
                entries.push([hex(key), digest(value)]);
                ControlFlow::Continue(())
            },
        )?;
        all.insert(format!("{table:?}"), entries);
    }
    Ok(all)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: redb_layout_fixture DIR")?;
    let path = Path::new(&dir).join("lethedb.redb");
    std::fs::create_dir_all(&dir)?;
    // The first session stops cleanly: its writes are checkpointed into the file. A snapshot
    // of its state is saved, in this layout, under the name `first`.
    {
        let store = RedbStore::open(&path)?;
        session(&store, 0, 12)?;
        let snapshots = store.snapshots().ok_or("the redb store keeps snapshots")?;
        snapshots.save("first")?;
        std::fs::write(
            Path::new(&dir).join("expected-first.json"),
            serde_json::to_string_pretty(&dump(&store)?)?,
        )?;
    }
    // The second ends without a stop: its writes stay in the redo log only.
    let store = RedbStore::open(&path)?;
    session(&store, 12, 6)?;
    let expected = dump(&store)?;
    std::fs::write(
        Path::new(&dir).join("expected.json"),
        serde_json::to_string_pretty(&expected)?,
    )?;
    std::mem::forget(store);
    Ok(())
}
