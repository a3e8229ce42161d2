//! The redb store's redo log end to end: what a killed process leaves behind (the store file as
//! the operating system holds it, and the log) opens with every acknowledged commit, a
//! checkpoint empties the log and is never undone by an old log, and a store written before the
//! log (by the release before it) opens with its data.

use crate::api::{Storage, Table};
use crate::redb_store::{RedbStore, CACHE_BYTES_DEFAULT};
use crate::redo_log;
use crate::snapshot_test::get;
use redb::TableDefinition;
use std::path::{Path, PathBuf};

fn put(store: &RedbStore, key: &[u8], value: &[u8]) {
    let mut write = store.write().expect("write");
    write.put(Table::Items, key, value).expect("put");
    write.put(Table::ChangeLog, key, value).expect("put");
    write.commit().expect("commit");
}

/// What a process killed now leaves on disk, copied into `directory`: the store file as the
/// operating system has it (never synced since the last checkpoint) and the redo log.
/// (Also for `redb_staged_test.rs`.)
pub(crate) fn killed_copy(
    store: &RedbStore,
    store_path: &Path,
    directory: &Path,
    name: &str,
) -> PathBuf {
    settle(store);
    let copy = directory.join(name);
    std::fs::copy(store_path, &copy).expect("copy the store");
    let log = redo_log::path_for(store_path);
    std::fs::copy(&log, redo_log::path_for(&copy)).expect("copy log");
    let previous = redo_log::previous_path_for(&log);
    if previous.exists() {
        let copied = redo_log::previous_path_for(&redo_log::path_for(&copy));
        std::fs::copy(previous, copied).expect("copy the previous log");
    }
    copy
}

/// Waits for the store's flusher to be idle: files copied one after another while it writes
/// would not be one instant's state, as a crash leaves.
pub(crate) fn settle(store: &RedbStore) {
    drop(store.shared().exclusive());
}

fn open(path: &Path, checkpoint_log_bytes: u64) -> RedbStore {
    RedbStore::open_with_checkpoint(path, CACHE_BYTES_DEFAULT, checkpoint_log_bytes).expect("open")
}

#[test]
fn a_killed_process_loses_no_commit_the_log_holds() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("store.redb");
    let store = open(&path, u64::MAX);
    for number in 0..20u32 {
        put(&store, &number.to_be_bytes(), &[7; 1000]);
    }
    let copy = killed_copy(&store, &path, directory.path(), "copy.redb");
    // Without its log, the copy is the store as it was opened: the commits were never synced.
    let without_log = directory.path().join("without-log.redb");
    std::fs::copy(&copy, &without_log).expect("copy");
    let bare = open(&without_log, u64::MAX);
    assert_eq!(get(&bare, &0u32.to_be_bytes()), None);
    let recovered = open(&copy, u64::MAX);
    for number in 0..20u32 {
        assert_eq!(get(&recovered, &number.to_be_bytes()), Some(vec![7; 1000]));
    }
    // The replay was checkpointed: the log is empty and the data stays after another reopen.
    assert!(redo_log::read_redo_log(&redo_log::path_for(&copy))
        .expect("log")
        .is_empty());
    drop(recovered);
    assert!(get(&open(&copy, u64::MAX), &19u32.to_be_bytes()).is_some());
}

#[test]
fn a_checkpoint_empties_the_log_and_an_older_log_is_never_replayed_over_it() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("store.redb");
    // Every commit once the log holds a record checkpoints.
    let store = open(&path, 32);
    put(&store, b"gone", b"first");
    let old_log = std::fs::read(redo_log::path_for(&path)).expect("log");
    assert!(!old_log.is_empty());
    // Past the threshold: this commit is a checkpoint, and it deletes the key.
    let mut write = store.write().expect("write");
    write.delete(Table::Items, b"gone").expect("delete");
    write.commit().expect("commit");
    assert!(redo_log::read_redo_log(&redo_log::path_for(&path))
        .expect("log")
        .is_empty());
    // A crash after the checkpoint's commit but before the log was emptied: the old records
    // are still there, and must not bring the key back.
    let copy = killed_copy(&store, &path, directory.path(), "copy.redb");
    std::fs::write(redo_log::path_for(&copy), &old_log).expect("old log");
    assert_eq!(get(&open(&copy, 32), b"gone"), None);
}

#[test]
fn a_store_written_before_the_redo_log_opens_with_its_data() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("store.redb");
    {
        // The release before the log: the same tables, no log file, no `redo_log` table.
        let database = redb::Database::create(&path).expect("create");
        let write = database.begin_write().expect("write");
        let items: TableDefinition<'static, &'static [u8], &'static [u8]> =
            TableDefinition::new("items");
        write
            .open_table(items)
            .expect("items")
            .insert(b"old".as_slice(), b"item".as_slice())
            .expect("insert");
        write.commit().expect("commit");
    }
    assert!(!redo_log::path_for(&path).exists());
    let store = open(&path, u64::MAX);
    assert_eq!(get(&store, b"old"), Some(b"item".to_vec()));
    put(&store, b"new", b"item");
    let copy = killed_copy(&store, &path, directory.path(), "copy.redb");
    let recovered = open(&copy, u64::MAX);
    assert_eq!(get(&recovered, b"old"), Some(b"item".to_vec()));
    assert_eq!(get(&recovered, b"new"), Some(b"item".to_vec()));
}

#[test]
fn a_restored_snapshot_is_not_undone_by_the_log_of_what_followed_it() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("store.redb");
    let store = open(&path, u64::MAX);
    put(&store, b"kept", b"1");
    let snapshots = store.snapshots().expect("snapshots");
    snapshots.save("before").expect("save");
    put(&store, b"later", b"2");
    assert!(snapshots.restore("before").expect("restore"));
    let copy = killed_copy(&store, &path, directory.path(), "copy.redb");
    let recovered = open(&copy, u64::MAX);
    assert_eq!(get(&recovered, b"kept"), Some(b"1".to_vec()));
    assert_eq!(get(&recovered, b"later"), None);
}
