//! A store written by the release before the item layout that keeps bodies in arrival order
//! (`fixtures/redb_layout_1`, written by `examples/redb_layout_fixture.rs` on that release: one
//! session checkpointed into the file, one left in the redo log as by a crash) opens with this
//! release: the file's items move into the new layout, the log's commits replay onto it, and
//! every table reads what that release read. A snapshot that release saved restores, its items
//! moved the same way. A release before the layout refuses the moved file instead of reading it
//! as a store without items.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use lethedb_storage::{KeyRange, RedbStore, Storage, Table};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

type Dump = BTreeMap<String, Vec<[String; 2]>>;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/redb_layout_1")
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

fn expected(name: &str) -> Dump {
    let text = std::fs::read_to_string(fixture().join(name)).expect("the fixture's expectation");
    serde_json::from_str(&text).expect("parse the fixture's expectation")
}

/// A copy of the fixture's store and redo log in a scratch directory.
fn copy_of_fixture(dir: &Path) -> PathBuf {
    for file in ["lethedb.redb", "lethedb.redb.wal"] {
        std::fs::copy(fixture().join(file), dir.join(file)).expect("copy the fixture");
    }
    dir.join("lethedb.redb")
}

#[test]
fn a_store_of_the_earlier_item_layout_opens_with_everything_it_held() {
    let expected = expected("expected.json");
    assert!(expected["Items"].len() > 40, "the fixture holds items");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = copy_of_fixture(dir.path());
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
fn a_moved_store_is_refused_by_a_release_that_predates_the_layout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = copy_of_fixture(dir.path());
    drop(RedbStore::open(&path).expect("open and move"));
    // What an earlier release asks for first: the items table of keys and bodies.
    let database = redb::Database::open(&path).expect("open the file");
    let write = database.begin_write().expect("write");
    let earlier: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("items");
    let opened = write.open_table(earlier).map(drop);
    match opened {
        Err(redb::TableError::TableTypeMismatch { .. }) => {}
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(()) => panic!("an earlier release would read the moved store as one without items"),
    }
}

#[test]
fn a_snapshot_saved_in_the_earlier_layout_restores_with_its_items_moved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = copy_of_fixture(dir.path());
    let store = RedbStore::open(&path).expect("open the earlier layout");
    let snapshots = store.snapshots().expect("redb keeps snapshots");
    assert_eq!(snapshots.names().expect("names"), ["first"]);
    assert!(snapshots.restore("first").expect("restore"));
    let first = expected("expected-first.json");
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
