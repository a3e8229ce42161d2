//! The redb store file's layout: item bodies fill their leaves whatever order their keys come
//! in, keys that count up fill theirs, replaced and deleted items leave no body behind, and
//! the file reads back what was written after any number of flushes and a reopen.

use crate::api::{KeyRange, Storage, Table};
use crate::redb_bodies::{FIRST_PIECES, LATER_PIECES, PIECE_BYTES};
use crate::redb_store::RedbStore;
use redb::{ReadableDatabase, ReadableTableMetadata, TableDefinition};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::Path;

/// A 64-bit mix, so keys arrive in no order.
fn mix(n: u64) -> u64 {
    let mut x = n.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn item_key(n: u64) -> Vec<u8> {
    format!("c1\0p{}\0{:016x}", n % 7, mix(n)).into_bytes()
}

fn body(n: u64, len: usize) -> Vec<u8> {
    (0..len).map(|at| (n as usize + at) as u8).collect()
}

/// A store that hands its staged changes to the flusher every 64 KiB, so a load is many flushes.
fn open(path: &Path) -> RedbStore {
    RedbStore::open(path)
        .expect("open")
        .with_staged_bytes(64 * 1024)
}

/// `(entries, leaf pages)` of a redb table in the closed store at `path`.
fn table_stats<K: redb::Key + 'static, V: redb::Value + 'static>(
    path: &Path,
    definition: TableDefinition<'static, K, V>,
) -> (u64, u64) {
    let database = redb::Database::open(path).expect("open the file");
    let read = database.begin_read().expect("read");
    let table = read.open_table(definition).expect("table");
    let stats = table.stats().expect("stats");
    (table.len().expect("len"), stats.leaf_pages())
}

fn everything(store: &RedbStore, table: Table) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let read = store.read().expect("read");
    let mut all = BTreeMap::new();
    read.scan(table, &KeyRange::prefix(b""), &mut |key, value| {
        all.insert(key.to_vec(), value.to_vec());
        ControlFlow::Continue(())
    })
    .expect("scan");
    all
}

#[test]
fn item_bodies_fill_their_leaves_whatever_order_their_keys_arrive_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bodies.redb");
    let items = 3_000u64;
    {
        let store = open(&path);
        for first in (0..items).step_by(10) {
            let mut write = store.write().expect("write");
            for n in first..first + 10 {
                write
                    .put(Table::Items, &item_key(n), &body(n, 1_100))
                    .expect("put");
            }
            write.commit().expect("commit");
        }
    }
    let (firsts, first_leaves) = table_stats(&path, FIRST_PIECES);
    let (laters, later_leaves) = table_stats(&path, LATER_PIECES);
    assert_eq!((firsts, laters), (items, items));
    // Four first pieces of 1,000 bytes fill a 4 KiB leaf, and the 100-byte rests pack about
    // thirty to one. Whole 1,100-byte bodies went three to a leaf (1,000 leaves here); kept
    // under their random keys, or appended without a cursor, about two (1,500).
    assert!(
        first_leaves <= items / 4 + 10,
        "{first_leaves} leaves hold {items} first pieces"
    );
    assert!(
        later_leaves <= items / 25,
        "{later_leaves} leaves hold {items} later pieces"
    );
    let store = open(&path);
    let read = store.read().expect("read");
    for n in [0, 1, 1_234, items - 1] {
        assert_eq!(
            read.get(Table::Items, &item_key(n)).expect("get"),
            Some(body(n, 1_100))
        );
    }
}

#[test]
fn keys_that_count_up_fill_their_leaves_even_where_several_writers_interleave() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ordered.redb");
    // Eight writers each counting up, as the ids of several clients or the change log of
    // several containers: eight places in the table where keys are added in order.
    let (writers, per_writer) = (8u64, 2_500u64);
    {
        let store = open(&path);
        for n in 0..per_writer {
            let mut write = store.write().expect("write");
            for writer in 0..writers {
                let key = [&writer.to_be_bytes()[..], &n.to_be_bytes()].concat();
                write
                    .put(Table::ChangeLog, &key, &body(n, 44))
                    .expect("put");
            }
            write.commit().expect("commit");
        }
    }
    let (count, leaves) = table_stats::<&[u8], &[u8]>(&path, TableDefinition::new("change_log"));
    let entries = writers * per_writer;
    assert_eq!(count, entries);
    // 60 bytes of key and value (and redb's 4 bytes of offsets) to an entry: a full 4 KiB leaf
    // holds 64, and a leaf split in half, as one by one inserts leave them, 32.
    assert!(
        leaves <= entries / 50,
        "{leaves} leaves hold {entries} entries"
    );
}

#[test]
fn replaced_and_deleted_items_leave_no_body_behind_and_the_rest_read_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("churn.redb");
    let mut model = BTreeMap::new();
    {
        let store = open(&path);
        for round in 0..400u64 {
            let mut write = store.write().expect("write");
            for step in 0..8 {
                let n = mix(round * 8 + step) % 500;
                let key = item_key(n);
                if mix(n + round).is_multiple_of(4) {
                    write.delete(Table::Items, &key).expect("delete");
                    model.remove(&key);
                } else {
                    // Sizes from empty to larger than a page, around each piece's end.
                    let sizes = [0, 30, 999, 1_000, 1_001, 2_000, 2_001, 5_000];
                    let value = body(round, sizes[step as usize]);
                    write.put(Table::Items, &key, &value).expect("put");
                    model.insert(key, value);
                }
            }
            write.commit().expect("commit");
        }
        assert_eq!(everything(&store, Table::Items), model);
    }
    let (firsts, _) = table_stats(&path, FIRST_PIECES);
    let (laters, _) = table_stats(&path, LATER_PIECES);
    let later_pieces = model
        .values()
        .map(|body| body.len().saturating_sub(1) / PIECE_BYTES)
        .sum::<usize>();
    assert_eq!(
        (firsts, laters),
        (model.len() as u64, later_pieces as u64),
        "each item's pieces, none orphaned"
    );
    let store = open(&path);
    assert_eq!(everything(&store, Table::Items), model);
    let read = store.read().expect("read");
    let mut reversed = Vec::new();
    read.scan_rev(
        Table::Items,
        &KeyRange::prefix(b"c1\0p3\0"),
        &mut |key, _| {
            reversed.push(key.to_vec());
            ControlFlow::Continue(())
        },
    )
    .expect("scan");
    let expected: Vec<_> = model
        .keys()
        .filter(|key| key.starts_with(b"c1\0p3\0"))
        .rev()
        .cloned()
        .collect();
    assert_eq!(reversed, expected);
}
