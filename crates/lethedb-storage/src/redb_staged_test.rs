//! The redb store's staged changes end to end: what a killed process leaves behind opens with
//! every acknowledged commit whether it was staged, written into redb unsynced, or checkpointed;
//! snapshots save what was staged, a restore drops it, and nothing staged is lost when a
//! snapshot's checkpoint empties the log.

use crate::api::{Storage, Table};
use crate::redb_flush::Shared;
use crate::redb_store::{RedbStore, CACHE_BYTES_DEFAULT};
use crate::redo_log;
use crate::redo_log_test::{killed_copy, settle};
use crate::snapshot_test::{
    check_in_place_only_while_unread, check_readers_see_whole_commits_while_committing, get, put,
};
use std::path::Path;
use std::sync::atomic::AtomicBool;

fn open(path: &Path, checkpoint_log_bytes: u64, staged_bytes: usize) -> RedbStore {
    RedbStore::open_with_checkpoint(path, CACHE_BYTES_DEFAULT, checkpoint_log_bytes)
        .expect("open")
        .with_staged_bytes(staged_bytes)
}

#[test]
fn a_killed_process_loses_no_commit_whether_staged_written_unsynced_or_checkpointed() {
    let directory = tempfile::tempdir().expect("temporary directory");
    // Staged only; written into redb every few commits; checkpointed every few commits.
    for (case, checkpoint_bytes, staged_bytes) in [
        (0, u64::MAX, usize::MAX),
        (1, u64::MAX, 2500),
        (2, 5000, usize::MAX),
    ] {
        let path = directory.path().join(format!("store-{case}.redb"));
        let store = open(&path, checkpoint_bytes, staged_bytes);
        for number in 0..20u32 {
            put(&store, &number.to_be_bytes(), &[case; 1000]);
            // Replaced and deleted keys: the newest change must win on every side.
            put(&store, b"replaced", &number.to_be_bytes());
        }
        let mut write = store.write().expect("write");
        write
            .delete(Table::Items, &3u32.to_be_bytes())
            .expect("delete");
        write.commit().expect("commit");
        assert_eq!(get(&store, &3u32.to_be_bytes()), None);
        let copy = killed_copy(
            &store,
            &path,
            directory.path(),
            &format!("copy-{case}.redb"),
        );
        let recovered = open(&copy, u64::MAX, usize::MAX);
        for number in (0..20u32).filter(|number| *number != 3) {
            assert_eq!(
                get(&recovered, &number.to_be_bytes()),
                Some(vec![case; 1000]),
                "case {case}"
            );
        }
        assert_eq!(get(&recovered, &3u32.to_be_bytes()), None, "case {case}");
        assert_eq!(
            get(&recovered, b"replaced"),
            Some(19u32.to_be_bytes().to_vec())
        );
    }
}

#[test]
fn a_snapshot_holds_what_was_staged_and_its_checkpoints_lose_nothing_staged() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("store.redb");
    let store = open(&path, u64::MAX, usize::MAX);
    put(&store, b"before", b"1");
    let snapshots = store.snapshots().expect("snapshots");
    snapshots.save("first").expect("save");
    put(&store, b"after", b"2");
    // Deleting a snapshot checkpoints, which empties the log: the staged write must be in redb.
    snapshots.save("second").expect("save");
    put(&store, b"staged", b"3");
    assert!(snapshots.delete("second").expect("delete"));
    let copy = killed_copy(&store, &path, directory.path(), "copy.redb");
    let recovered = open(&copy, u64::MAX, usize::MAX);
    assert_eq!(get(&recovered, b"staged"), Some(b"3".to_vec()));
    // The first snapshot holds the staged write made before it, not the ones after.
    put(&store, b"later", b"4");
    assert!(snapshots.restore("first").expect("restore"));
    assert_eq!(get(&store, b"before"), Some(b"1".to_vec()));
    for gone in [&b"after"[..], b"staged", b"later"] {
        assert_eq!(get(&store, gone), None, "read live after the restore");
    }
    // And what follows the restore is staged over the restored state.
    put(&store, b"next", b"5");
    assert_eq!(get(&store, b"next"), Some(b"5".to_vec()));
    assert_eq!(get(&store, b"after"), None);
}

#[test]
fn a_reader_keeps_its_state_while_commits_are_staged_and_written_into_redb() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("store.redb");
    let store = open(&path, u64::MAX, 1500);
    put(&store, b"key", b"1");
    let reader = store.read().expect("read");
    // The first is staged, the second passes the bound and writes both into redb.
    put(&store, b"key", &[2; 1000]);
    put(&store, b"other", &[3; 1000]);
    assert_eq!(
        reader.get(Table::Items, b"key").expect("get"),
        Some(b"1".to_vec())
    );
    assert_eq!(reader.get(Table::Items, b"other").expect("get"), None);
    assert_eq!(get(&store, b"key"), Some(vec![2; 1000]));
    assert_eq!(get(&store, b"other"), Some(vec![3; 1000]));
}

#[test]
fn readers_after_a_flush_read_what_it_wrote_not_the_file_they_shared_before_it() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("store.redb");
    let store = open(&path, u64::MAX, 2500);
    put(&store, b"first", &[1; 1000]);
    // Readers now share a snapshot of the file that lacks `first` (it is staged), and one of
    // them keeps it.
    assert_eq!(get(&store, b"first"), Some(vec![1; 1000]));
    let held = store.read().expect("read");
    // These pass the bound: the flusher writes the staged changes into the file and lets
    // them go.
    for number in 0..4u32 {
        put(&store, &number.to_be_bytes(), &[2; 1000]);
    }
    drop(store.shared().exclusive());
    assert!(store.shared().staged().frozen.is_empty());
    assert!(store
        .shared()
        .staged()
        .active
        .get(Table::Items, b"first")
        .is_none());
    assert_eq!(get(&store, b"first"), Some(vec![1; 1000]));
    for number in 0..4u32 {
        assert_eq!(get(&store, &number.to_be_bytes()), Some(vec![2; 1000]));
    }
    assert_eq!(
        held.get(Table::Items, b"first").expect("get"),
        Some(vec![1; 1000])
    );
    assert_eq!(
        held.get(Table::Items, &3u32.to_be_bytes()).expect("get"),
        None
    );
}

#[test]
fn readers_share_one_snapshot_of_the_file_until_a_flush_lets_staged_changes_go() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("store.redb");
    let store = open(&path, u64::MAX, 2500);
    let file = |store: &RedbStore| store.shared().snapshot().expect("snapshot").1;
    let first = file(&store);
    put(&store, b"staged", &[1; 1000]);
    assert!(std::sync::Arc::ptr_eq(&first, &file(&store)));
    for number in 0..4u32 {
        put(&store, &number.to_be_bytes(), &[2; 1000]);
    }
    drop(store.shared().exclusive());
    let after = file(&store);
    assert!(!std::sync::Arc::ptr_eq(&first, &after));
    assert!(std::sync::Arc::ptr_eq(&after, &file(&store)));
}

#[test]
fn a_commit_stages_in_place_only_while_no_reader_holds_the_staged_changes() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let store = open(&directory.path().join("store.redb"), u64::MAX, usize::MAX);
    check_in_place_only_while_unread(&store, &|| {
        std::sync::Arc::as_ptr(&store.shared().staged()) as usize
    });
}

#[test]
fn readers_on_other_threads_see_whole_commits_while_the_writer_stages_and_flushes() {
    let directory = tempfile::tempdir().expect("temporary directory");
    // Flushed every few dozen commits, so readers also cross the flusher's hand-overs.
    let store = open(&directory.path().join("store.redb"), u64::MAX, 2_000);
    check_readers_see_whole_commits_while_committing(&store);
}

/// The generation stored in the closed store at `path`.
fn stored_generation(path: &Path) -> u64 {
    use redb::ReadableDatabase;
    let database = redb::Database::open(path).expect("open the file");
    let read = database.begin_read().expect("read");
    let state = read
        .open_table(crate::redb_flush::REDO_STATE)
        .expect("state");
    let generation = state
        .get(crate::redb_flush::GENERATION_KEY)
        .expect("get")
        .expect("a generation")
        .value();
    generation
}

fn changes(pairs: &[(&[u8], &[u8])]) -> crate::overlay::Changes {
    pairs
        .iter()
        .map(|(key, value)| (key.to_vec(), Some(bytes::Bytes::copy_from_slice(value))))
        .collect()
}

#[test]
fn a_cut_log_whose_checkpoint_never_committed_replays_both_of_its_files() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("store.redb");
    drop(open(&path, u64::MAX, usize::MAX));
    let generation = stored_generation(&path);
    // A process killed after a cut, before the flusher's checkpoint committed: the records
    // before the cut in the previous file, those after it in the current one, a generation on.
    let mut log = redo_log::RedoLog::open(&redo_log::path_for(&path)).expect("log");
    let before = changes(&[(b"a", b"1"), (b"b", b"1")]);
    log.append(generation, &[(Table::Items, &before)])
        .expect("append");
    log.cut().expect("cut");
    let after = changes(&[(b"b", b"2"), (b"c", b"2")]);
    log.append(generation + 1, &[(Table::Items, &after)])
        .expect("append");
    drop(log);
    let store = open(&path, u64::MAX, usize::MAX);
    assert_eq!(get(&store, b"a"), Some(b"1".to_vec()));
    assert_eq!(get(&store, b"b"), Some(b"2".to_vec()));
    assert_eq!(get(&store, b"c"), Some(b"2".to_vec()));
    // The replay was checkpointed: the previous file is gone and the log empty.
    let log_path = redo_log::path_for(&path);
    assert!(!redo_log::previous_path_for(&log_path).exists());
    assert!(redo_log::read_redo_log(&log_path).expect("log").is_empty());
}

#[test]
fn a_previous_file_left_after_its_checkpoint_committed_is_never_replayed() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("store.redb");
    drop(open(&path, u64::MAX, usize::MAX));
    let generation = stored_generation(&path);
    // The checkpoint after a cut committed (the store is at `generation`) and the process was
    // killed before it removed the file from before the cut, whose records are older.
    let mut log = redo_log::RedoLog::open(&redo_log::path_for(&path)).expect("log");
    let stale = changes(&[(b"stale", b"0")]);
    log.append(generation - 1, &[(Table::Items, &stale)])
        .expect("append");
    log.cut().expect("cut");
    let fresh = changes(&[(b"fresh", b"1")]);
    log.append(generation, &[(Table::Items, &fresh)])
        .expect("append");
    drop(log);
    let store = open(&path, u64::MAX, usize::MAX);
    assert_eq!(get(&store, b"stale"), None);
    assert_eq!(get(&store, b"fresh"), Some(b"1".to_vec()));
}

#[test]
fn the_flushers_checkpoint_cuts_the_log_and_a_killed_process_loses_nothing() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("store.redb");
    // Every commit after the log holds 3 KiB cuts it for a checkpoint the flusher takes.
    let store = open(&path, 3000, usize::MAX);
    for number in 0..40u32 {
        put(&store, &number.to_be_bytes(), &[9; 1000]);
    }
    // While the flusher is busy, commits leave the log uncut (however long a slow machine keeps
    // it busy); once it is idle, the next commit past the size cuts it.
    settle(&store);
    put(&store, &40u32.to_be_bytes(), &[9; 1000]);
    settle(&store);
    let log_path = redo_log::path_for(&path);
    assert!(!redo_log::previous_path_for(&log_path).exists());
    assert!(store.shared().redo().log.bytes() < 3000 + 2000);
    let copy = killed_copy(&store, &path, directory.path(), "copy.redb");
    let recovered = open(&copy, u64::MAX, usize::MAX);
    for number in 0..=40u32 {
        assert_eq!(get(&recovered, &number.to_be_bytes()), Some(vec![9; 1000]));
    }
}

#[test]
fn a_failed_flush_poisons_the_store_and_loses_no_acknowledged_commit() {
    check_a_failed_flush(|shared| &shared.fail_flushes);
}

#[test]
fn a_panicking_flush_poisons_the_store_and_leaves_no_commit_waiting() {
    check_a_failed_flush(|shared| &shared.panic_flushes);
}

fn check_a_failed_flush(injected: fn(&Shared) -> &AtomicBool) {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("store.redb");
    let store = open(&path, u64::MAX, 1500);
    injected(store.shared()).store(true, std::sync::atomic::Ordering::Release);
    put(&store, b"first", &[1; 1000]);
    // Past the bound: handed to the flusher, which fails.
    put(&store, b"second", &[2; 1000]);
    settle(&store);
    assert!(matches!(
        store.write().err(),
        Some(crate::api::StorageError::Poisoned)
    ));
    // What was acknowledged is still read: the frozen changes stay, and the log holds them.
    assert_eq!(get(&store, b"first"), Some(vec![1; 1000]));
    assert_eq!(get(&store, b"second"), Some(vec![2; 1000]));
    drop(store);
    let reopened = open(&path, u64::MAX, usize::MAX);
    assert_eq!(get(&reopened, b"first"), Some(vec![1; 1000]));
    assert_eq!(get(&reopened, b"second"), Some(vec![2; 1000]));
    assert!(reopened.write().is_ok());
}

#[test]
fn a_commit_that_fills_a_second_tier_waits_for_the_busy_flusher_and_is_counted() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("store.redb");
    let store = std::sync::Arc::new(open(&path, u64::MAX, 1500));
    let gate = store.shared().flush_gate.write().expect("gate");
    put(&*store, b"k1", &[1; 1000]);
    // Past the bound: frozen and handed to the flusher, which the gate holds.
    put(&*store, b"k2", &[2; 1000]);
    // The active tier refills past the bound, under twice it: no wait, the flusher is busy.
    put(&*store, b"k3", &[3; 1000]);
    assert_eq!(store.flush_stats().expect("stats").waits, 0);
    // Twice the bound: this commit waits until the flusher is done.
    let writer = {
        let store = std::sync::Arc::clone(&store);
        std::thread::spawn(move || put(&*store, b"k4", &[4; 2000]))
    };
    std::thread::sleep(std::time::Duration::from_millis(150));
    assert!(
        !writer.is_finished(),
        "the commit did not wait for the flusher"
    );
    // Readers are not held meanwhile, and see every acknowledged commit.
    assert_eq!(get(&*store, b"k3"), Some(vec![3; 1000]));
    drop(gate);
    writer.join().expect("writer");
    settle(&store);
    let stats = store.flush_stats().expect("stats");
    assert_eq!(stats.waits, 1);
    assert!(stats.wait_micros >= 100_000, "{stats:?}");
    assert!(stats.flushes >= 2, "{stats:?}");
    assert_eq!(stats.checkpoints, 0);
    let copy = killed_copy(&store, &path, directory.path(), "copy.redb");
    let recovered = open(&copy, u64::MAX, usize::MAX);
    for (key, value) in [
        (b"k1", vec![1; 1000]),
        (b"k2", vec![2; 1000]),
        (b"k3", vec![3; 1000]),
        (b"k4", vec![4; 2000]),
    ] {
        assert_eq!(get(&recovered, key), Some(value));
    }
}

#[test]
fn the_bytes_appended_to_the_log_are_counted() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("store.redb");
    let store = open(&path, u64::MAX, usize::MAX);
    assert_eq!(store.shared().flush_stats().log_bytes, 0);
    for number in 0..3u32 {
        put(&store, &number.to_be_bytes(), &[5; 100]);
    }
    // Each append writes its record and an end marker of a record header's 20 bytes.
    let records = store.shared().redo().log.bytes();
    assert!(records > 300);
    assert_eq!(store.shared().flush_stats().log_bytes, records + 3 * 20);
}
