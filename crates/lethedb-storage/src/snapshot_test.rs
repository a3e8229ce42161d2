//! Named snapshots on each backend that keeps them: a restore brings back exactly the state
//! saved, can be repeated, forgets the snapshots saved after it and keeps those before it; a
//! store reopened from its file keeps its snapshots.

use crate::{MemoryStore, RedbStore, Storage, Table};

/// Writes one item key in its own commit (also for the redb tests).
pub(crate) fn put(store: &dyn Storage, key: &[u8], value: &[u8]) {
    let mut txn = store.write().expect("write");
    txn.put(Table::Items, key, value).expect("put");
    txn.commit().expect("commit");
}

pub(crate) fn get(store: &dyn Storage, key: &[u8]) -> Option<Vec<u8>> {
    store
        .read()
        .expect("read")
        .get(Table::Items, key)
        .expect("get")
}

/// Commits change the published state in place while no reader holds it, and on a copy while
/// one does, which keeps the state it began with. `published` says where the published state
/// is: the same place after a commit made in place, a new one after a copy.
pub(crate) fn check_in_place_only_while_unread(store: &dyn Storage, published: &dyn Fn() -> usize) {
    put(store, b"a", b"1");
    let before = published();
    put(store, b"b", b"1");
    assert_eq!(published(), before, "no reader held it: changed in place");
    let reader = store.read().expect("read");
    put(store, b"a", b"2");
    put(store, b"c", b"2");
    assert_ne!(published(), before, "a reader held it: changed on a copy");
    assert_eq!(
        reader.get(Table::Items, b"a").expect("get"),
        Some(b"1".to_vec())
    );
    assert_eq!(reader.get(Table::Items, b"c").expect("get"), None);
    // A reader taken after them keeps its state too.
    let later = store.read().expect("read");
    drop(reader);
    put(store, b"b", b"3");
    assert_eq!(
        later.get(Table::Items, b"b").expect("get"),
        Some(b"1".to_vec())
    );
    drop(later);
    let copied = published();
    put(store, b"d", b"4");
    assert_eq!(published(), copied, "no reader again: in place again");
    for (key, value) in [(b"a", b"2"), (b"b", b"3"), (b"c", b"2"), (b"d", b"4")] {
        assert_eq!(get(store, key), Some(value.to_vec()));
    }
}

/// Readers on other threads, while one writer commits changes in place or on copies: each
/// snapshot sees whole commits only (two keys every commit writes together always agree),
/// never an older state than one it saw before, and the writer's last commit at the end.
pub(crate) fn check_readers_see_whole_commits_while_committing(store: &dyn Storage) {
    const COMMITS: u32 = 2_000;
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                let mut seen = 0u32;
                while !done.load(std::sync::atomic::Ordering::Acquire) {
                    let reader = store.read().expect("read");
                    let value = |key: &[u8]| {
                        reader
                            .get(Table::Items, key)
                            .expect("get")
                            .map_or(0, |bytes| {
                                u32::from_be_bytes(bytes.try_into().expect("four bytes"))
                            })
                    };
                    let (x, y) = (value(b"x"), value(b"y"));
                    assert_eq!(x, y, "a snapshot saw half a commit");
                    assert!(x >= seen, "a later snapshot went back from {seen} to {x}");
                    seen = x;
                }
            });
        }
        for number in 1..=COMMITS {
            let mut write = store.write().expect("write");
            write
                .put(Table::Items, b"x", &number.to_be_bytes())
                .expect("put");
            // Keys of their own, so the maps grow and splits happen under the readers.
            write
                .put(
                    Table::Items,
                    &[b"k".as_slice(), &number.to_be_bytes()].concat(),
                    b"v",
                )
                .expect("put");
            write
                .put(Table::Items, b"y", &number.to_be_bytes())
                .expect("put");
            write.commit().expect("commit");
        }
        done.store(true, std::sync::atomic::Ordering::Release);
    });
    assert_eq!(get(store, b"x"), Some(COMMITS.to_be_bytes().to_vec()));
}

fn check(store: &dyn Storage) {
    let snapshots = store.snapshots().expect("this backend keeps snapshots");
    put(store, b"a", b"1");
    snapshots.save("first").expect("save");
    put(store, b"a", b"2");
    put(store, b"b", b"2");
    snapshots.save("second").expect("save");
    put(store, b"c", b"3");
    assert_eq!(snapshots.names().expect("names"), ["first", "second"]);

    assert!(snapshots.restore("second").expect("restore"));
    assert_eq!(
        (get(store, b"a"), get(store, b"c")),
        (Some(b"2".to_vec()), None)
    );
    put(store, b"c", b"4");
    assert!(
        snapshots.restore("second").expect("again"),
        "a snapshot restores twice"
    );
    assert_eq!(get(store, b"c"), None);

    assert!(snapshots.restore("first").expect("restore"));
    assert_eq!(
        (get(store, b"a"), get(store, b"b")),
        (Some(b"1".to_vec()), None)
    );
    assert_eq!(
        snapshots.names().expect("names"),
        ["first"],
        "later snapshots are gone"
    );
    assert!(!snapshots.restore("second").expect("restore"));
    assert!(snapshots.delete("first").expect("delete"));
    assert!(!snapshots.delete("first").expect("delete"));
    assert!(snapshots.names().expect("names").is_empty());
    assert_eq!(
        get(store, b"a"),
        Some(b"1".to_vec()),
        "deleting keeps the state"
    );
}

#[test]
fn the_memory_store_saves_and_restores_snapshots() {
    check(&MemoryStore::new());
}

#[test]
fn the_durable_store_saves_and_restores_snapshots_across_a_reopen() {
    let directory = tempfile::tempdir().expect("dir");
    let path = directory.path().join("store.redb");
    check(&RedbStore::open(&path).expect("open"));
    let store = RedbStore::open(&path).expect("reopen");
    let snapshots = store.snapshots().expect("snapshots");
    put(&store, b"x", b"1");
    snapshots.save("kept").expect("save");
    drop(store);
    let store = RedbStore::open(&path).expect("reopen");
    put(&store, b"x", b"2");
    assert!(store
        .snapshots()
        .expect("snapshots")
        .restore("kept")
        .expect("restore"));
    assert_eq!(get(&store, b"x"), Some(b"1".to_vec()));
}
