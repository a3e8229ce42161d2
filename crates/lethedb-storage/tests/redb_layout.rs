//! Stores written by earlier releases open with this one. Each fixture was written by
//! `examples/redb_layout_fixture.rs` on its release (one session checkpointed into the file, one
//! left in the redo log as by a crash):
//! - `fixtures/redb_layout_1`, by the release before bodies were kept in arrival order, under
//!   their keys;
//! - `fixtures/redb_layout_2`, by the release before bodies were cut into pieces, each whole
//!   under its number.
//!
//! The file's items move into this layout, the log's commits replay onto it, and every table
//! reads what that release read. A snapshot that release saved restores, its items moved the
//! same way. The release refuses the moved file instead of reading it wrongly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use lethedb_storage::{KeyRange, RedbStore, Storage, Table};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

type Dump = BTreeMap<String, Vec<[String; 2]>>;

const BEFORE_ARRIVAL_ORDER: &str = "redb_layout_1";
const BEFORE_PIECES: &str = "redb_layout_2";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// As the fixture's `expected.json` holds a value: its length and 64-bit xxh3 hash.
fn digest(value: &[u8]) -> String {
    format!("{}:{:016x}", value.len(), xxhash_rust::xxh3::xxh3_64(value))
}

fn dump(store: &RedbStore) -> Dump {
    let read = store.read().expect("read");
    let mut all = BTreeMap::new();
    for table in Table::ALL {
        let mut entries = Vec::new();
        read.scan(table, &KeyRange::prefix(b""), &mut |key, value| {
            entries.push([hex(key), digest(value)]);
            ControlFlow::Continue(())
        })
        .expect("scan");
        all.insert(format!("{table:?}"), entries);
    }
    all
}

fn expected(fixture_name: &str, name: &str) -> Dump {
    let text = std::fs::read_to_string(fixture(fixture_name).join(name))
        .expect("the fixture's expectation");
    serde_json::from_str(&text).expect("parse the fixture's expectation")
}

/// A copy of the fixture's store and redo log in a scratch directory.
fn copy_of_fixture(name: &str, dir: &Path) -> PathBuf {
    for file in ["lethedb.redb", "lethedb.redb.wal"] {
        std::fs::copy(fixture(name).join(file), dir.join(file)).expect("copy the fixture");
    }
    dir.join("lethedb.redb")
}

#[test]
fn a_store_that_kept_items_under_their_keys_opens_with_everything_it_held() {
    opens_with_everything_it_held(BEFORE_ARRIVAL_ORDER);
}

#[test]
fn a_store_that_kept_bodies_whole_opens_with_everything_it_held() {
    opens_with_everything_it_held(BEFORE_PIECES);
}

fn opens_with_everything_it_held(name: &str) {
    let expected = expected(name, "expected.json");
    assert!(expected["Items"].len() > 40, "the fixture holds items");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = copy_of_fixture(name, dir.path());
    let store = RedbStore::open(&path).expect("open the earlier layout");
    assert_eq!(dump(&store), expected);
    // Point reads find the moved items, and writes go on over them.
    let [first_key, first_value] = expected["Items"][0].clone();
    let key: Vec<u8> = (0..first_key.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&first_key[at..at + 2], 16).expect("hex"))
        .collect();
    let read = store.read().expect("read");
    let found = read.get(Table::Items, &key).expect("get").expect("found");
    assert_eq!(digest(&found), first_value);
    drop(read);
    let mut write = store.write().expect("write");
    write.put(Table::Items, &key, b"replaced").expect("put");
    write.commit().expect("commit");
    drop(store);
    let store = RedbStore::open(&path).expect("reopen");
    let mut after = expected.clone();
    after.get_mut("Items").expect("items")[0][1] = digest(b"replaced");
    assert_eq!(dump(&store), after);
}

#[test]
fn a_moved_store_is_refused_by_the_release_that_kept_items_under_their_keys() {
    // What that release asks for first: the items table of keys and bodies.
    let earlier: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("items");
    refused_by(BEFORE_ARRIVAL_ORDER, earlier);
}

#[test]
fn a_moved_store_is_refused_by_the_release_that_kept_bodies_whole() {
    // What that release asks for first: the items table of numbers and whole bodies.
    let earlier: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("items");
    refused_by(BEFORE_PIECES, earlier);
}

fn refused_by<K: redb::Key + 'static>(
    name: &str,
    earlier: redb::TableDefinition<'static, K, &'static [u8]>,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = copy_of_fixture(name, dir.path());
    drop(RedbStore::open(&path).expect("open and move"));
    let database = redb::Database::open(&path).expect("open the file");
    let write = database.begin_write().expect("write");
    let opened = write.open_table(earlier).map(drop);
    match opened {
        Err(redb::TableError::TableTypeMismatch { .. }) => {}
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(()) => panic!("an earlier release would read the moved store wrongly"),
    }
}

#[test]
fn a_snapshot_that_kept_items_under_their_keys_restores_with_its_items_moved() {
    restores_with_its_items_moved(BEFORE_ARRIVAL_ORDER);
}

#[test]
fn a_snapshot_that_kept_bodies_whole_restores_with_its_items_moved() {
    restores_with_its_items_moved(BEFORE_PIECES);
}

fn restores_with_its_items_moved(name: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = copy_of_fixture(name, dir.path());
    let store = RedbStore::open(&path).expect("open the earlier layout");
    let snapshots = store.snapshots().expect("redb keeps snapshots");
    assert_eq!(snapshots.names().expect("names"), ["first"]);
    assert!(snapshots.restore("first").expect("restore"));
    let first = expected(name, "expected-first.json");
    assert!(first["Items"].len() > 30, "the snapshot holds items");
    assert_eq!(dump(&store), first);
    let mut write = store.write().expect("write");
    write
        .put(Table::Items, b"after the restore", b"new")
        .expect("put");
    write.commit().expect("commit");
    drop(store);
    let store = RedbStore::open(&path).expect("reopen");
    let read = store.read().expect("read");
    assert_eq!(
        read.get(Table::Items, b"after the restore").expect("get"),
        Some(b"new".to_vec())
    );
    drop(read);
    let mut after = first;
    after
        .get_mut("Items")
        .expect("items")
        .push([hex(b"after the restore"), digest(b"new")]);
    after.get_mut("Items").expect("items").sort();
    assert_eq!(dump(&store), after);
}
