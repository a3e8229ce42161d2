//! The engine under failure and load: a panic in the writer poisons it visibly, a full writer
//! queue refuses writes at once, an operation that fails after writing leaves the rest of its
//! group committed and nothing of itself, and a scan runs off the async workers.

use crate::common::*;
use lethedb_engine::RangeFilter;

use lethedb_engine::writer::Writer;
use lethedb_engine::{
    Engine, EngineConfig, EngineError, ErrorCode, ManualClock, QueryRequest, StoredItem, WriteMode,
};
use lethedb_storage::{
    FailingStore, FaultPlan, MemoryStore, ReadTxn, Storage, StorageError, Table, WriteTxn,
};
use serde_json::json;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(1_800_000_000_000))
}

fn container_body() -> serde_json::Value {
    json!({"id": "c", "partitionKey": {"paths": ["/pk"]}})
}

async fn create(engine: &Engine, id: &str) -> Result<(), EngineError> {
    engine
        .write_item(
            &resolved(engine, "c"),
            WriteMode::Create,
            pk("p"),
            json!({"id": id, "pk": "p"}),
            None,
        )
        .await
        .map(|_| ())
}

fn read(engine: &Engine, id: &str) -> Result<StoredItem, EngineError> {
    let container = engine.read_container("db", "c").expect("container");
    engine.read_item(&container, pk("p"), id)
}

#[tokio::test]
async fn a_panic_in_the_writer_poisons_the_engine_and_reads_keep_working() {
    let plan = FaultPlan {
        panic_put: Some(60),
        ..FaultPlan::default()
    };
    let store = Arc::new(FailingStore::new(MemoryStore::new(), plan));
    let engine = engine_on_store(
        store.clone(),
        clock(),
        container_body(),
        crate::common::config(),
    )
    .await;
    assert_eq!(engine.poisoned(), None);
    let mut acknowledged = Vec::new();
    let mut in_flight = None;
    for i in 0..60 {
        let id = format!("i{i}");
        match create(&engine, &id).await {
            Ok(()) => acknowledged.push(id),
            Err(error) => {
                in_flight = Some(error);
                break;
            }
        }
    }
    assert!(
        matches!(
            in_flight,
            Some(EngineError {
                code: ErrorCode::StorePoisoned,
                ..
            })
        ),
        "the write in flight: {in_flight:?}"
    );
    assert!(!acknowledged.is_empty());
    assert_eq!(store.failures(), 1);
    let reason = engine.poisoned().expect("poisoned");
    assert!(reason.contains("panicked"), "{reason}");
    assert!(reason.contains("injected panic"), "{reason}");
    // Every later write is refused the same way, with the reason in its message.
    match create(&engine, "later").await {
        Err(error) if error.code == ErrorCode::StorePoisoned => {
            let message = error.to_string();
            assert!(message.contains("must be restarted"), "{message}");
        }
        other => panic!("a write after the panic: {other:?}"),
    }
    // Reads still work: every acknowledged item, and nothing else.
    for id in &acknowledged {
        assert!(read(&engine, id).is_ok(), "{id} lost");
    }
    let container = engine.read_container("db", "c").expect("container");
    let feed = engine
        .read_feed(&container, None, RangeFilter::everything(), 1000, None)
        .await
        .expect("feed");
    assert_eq!(feed.items.len(), acknowledged.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_writer_queue_refuses_writes_at_once() {
    const QUEUE: usize = 4;
    const WRITES: usize = 20;
    let store = Arc::new(FailingStore::new(MemoryStore::new(), FaultPlan::default()));
    let config = EngineConfig {
        write_batch_max: 1,
        writer_queue_jobs_max: QUEUE,
        ..crate::common::config()
    };
    let engine = engine_on_store(store.clone(), clock(), container_body(), config).await;
    store.hold_commits();
    let writes: Vec<_> = (0..WRITES)
        .map(|i| {
            let engine = engine.clone();
            tokio::spawn(async move { create(&engine, &format!("i{i}")).await })
        })
        .collect();
    // QUEUE jobs wait, and one more if the writer took a job (then stuck in its commit) before
    // the queue filled; every other write is refused at once.
    let refused_count = WRITES - 1 - QUEUE;
    for _ in 0..5_000 {
        if writes.iter().filter(|w| w.is_finished()).count() >= refused_count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (finished, waiting): (Vec<_>, Vec<_>) = writes
        .into_iter()
        .partition(tokio::task::JoinHandle::is_finished);
    assert!(
        finished.len() == refused_count || finished.len() == refused_count + 1,
        "{} writes refused",
        finished.len()
    );
    let accepted = waiting.len();
    for write in finished {
        let outcome = write.await.expect("task");
        assert!(
            matches!(
                outcome,
                Err(EngineError {
                    code: ErrorCode::WriterBusy,
                    ..
                })
            ),
            "{outcome:?}"
        );
    }
    store.release_commits();
    for write in waiting {
        write.await.expect("task").expect("a queued write commits");
    }
    let container = engine.read_container("db", "c").expect("container");
    let feed = engine
        .read_feed(&container, None, RangeFilter::everything(), 1000, None)
        .await
        .expect("feed");
    assert_eq!(feed.items.len(), accepted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_that_fails_after_writing_leaves_nothing_and_its_group_commits() {
    let store = Arc::new(FailingStore::new(MemoryStore::new(), FaultPlan::default()));
    let (writer, thread) = Writer::start(
        store.clone(),
        clock(),
        Default::default(),
        16,
        16,
        Some(1),
        || {},
    )
    .expect("writer");
    let writer = Arc::new(writer);
    let applied_first = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let put = |key: &'static [u8], fail: bool| {
        let writer = Arc::clone(&writer);
        let applied = Arc::clone(&applied_first);
        tokio::spawn(async move {
            writer
                .write(move |context| {
                    applied.store(true, std::sync::atomic::Ordering::SeqCst);
                    context.put(Table::Items, key, b"value")?;
                    context.put(Table::Counters, key, b"value")?;
                    if fail {
                        return Err(EngineError::with_message(
                            ErrorCode::InvalidDocument,
                            "failed after writing",
                        ));
                    }
                    Ok(())
                })
                .await
        })
    };
    // The first job holds the writer in its commit, so the next three queue into one group.
    store.hold_commits();
    let first = put(b"first", false);
    // Bounded waits: a regression fails the assertions below instead of hanging.
    for _ in 0..5_000 {
        if applied_first.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let group = [put(b"a", false), put(b"b", true), put(b"c", false)];
    for _ in 0..5_000 {
        if writer
            .stats
            .queued
            .load(std::sync::atomic::Ordering::SeqCst)
            == 3
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(
        writer
            .stats
            .queued
            .load(std::sync::atomic::Ordering::SeqCst),
        3
    );
    store.release_commits();
    first.await.expect("task").expect("first");
    let [a, b, c] = group;
    a.await.expect("task").expect("a commits");
    assert!(matches!(
        b.await.expect("task"),
        Err(EngineError {
            code: ErrorCode::InvalidDocument,
            ..
        })
    ));
    c.await.expect("task").expect("c commits");
    assert_eq!(
        writer
            .stats
            .commits
            .load(std::sync::atomic::Ordering::SeqCst),
        2
    );
    let reader = store.read().expect("read");
    for table in [Table::Items, Table::Counters] {
        assert!(reader.get(table, b"a").expect("get").is_some());
        assert!(reader.get(table, b"c").expect("get").is_some());
        assert_eq!(reader.get(table, b"b").expect("get"), None, "b was undone");
    }
    drop(reader);
    drop(writer);
    thread.join().expect("writer thread");
}

/// A store whose reads wait at a gate while it is armed, to see where a scan runs.
struct GatedStore {
    inner: MemoryStore,
    /// (armed, a reader is waiting, released by the test, the reader gave up waiting)
    gate: Mutex<(bool, bool, bool, bool)>,
    changed: Condvar,
}

impl Storage for GatedStore {
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StorageError> {
        let mut gate = self.gate.lock().expect("gate");
        if gate.0 {
            gate.1 = true;
            self.changed.notify_all();
            // A scan run inline on the only async worker would block the test's release
            // forever; the timeout turns that into a failed assertion instead of a hang.
            let (after, waited) = self
                .changed
                .wait_timeout_while(gate, Duration::from_secs(5), |gate| !gate.2)
                .expect("gate");
            gate = after;
            gate.3 = waited.timed_out();
            gate.0 = false;
        }
        drop(gate);
        self.inner.read()
    }

    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        self.inner.write()
    }

    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_scan_runs_off_the_async_worker() {
    let store = Arc::new(GatedStore {
        inner: MemoryStore::new(),
        gate: Mutex::new((false, false, false, false)),
        changed: Condvar::new(),
    });
    let engine = engine_on_store(
        store.clone(),
        clock(),
        container_body(),
        crate::common::config(),
    )
    .await;
    create(&engine, "i0").await.expect("create");
    let container = engine.read_container("db", "c").expect("container");
    store.gate.lock().expect("gate").0 = true;
    let query = {
        let engine = engine.clone();
        tokio::spawn(async move {
            let request = QueryRequest {
                text: "SELECT * FROM c".into(),
                enable_cross_partition: true,
                ..QueryRequest::default()
            };
            engine.query_items(&container, &request).await
        })
    };
    // This runtime has one thread: the test gets to release the gate only if the query's read
    // waits somewhere else (the blocking pool).
    let mut waited = false;
    for _ in 0..2_000 {
        tokio::time::sleep(Duration::from_millis(1)).await;
        if store.gate.lock().expect("gate").1 {
            waited = true;
            break;
        }
    }
    {
        let mut gate = store.gate.lock().expect("gate");
        gate.2 = true;
        store.changed.notify_all();
    }
    assert!(waited, "the scan's read never reached the gate");
    let page = page(query.await.expect("task").expect("query"));
    assert!(
        !store.gate.lock().expect("gate").3,
        "the scan blocked the only async worker until its read gave up"
    );
    assert_eq!(page.items.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweeper_runs_until_its_handle_stops_it() {
    let clock = clock();
    let engine = engine_with_container(
        clock.clone(),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 1}),
    )
    .await;
    create_items(&engine, 10).await;
    clock.advance_ms(2_000);
    let sweeper = engine.start_sweeper(lethedb_engine::SweeperConfig::default());
    let mut deleted = 0;
    for _ in 0..5_000 {
        deleted = engine
            .sweep_stats()
            .iter()
            .map(|stats| stats.deleted_total)
            .sum::<u64>();
        if deleted == 10 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(
        deleted, 10,
        "the running sweeper deleted every expired item"
    );
    // Stopping wakes the loop from its pause instead of waiting it out.
    let stopped = tokio::time::timeout(Duration::from_secs(5), sweeper.stop()).await;
    assert!(stopped.is_ok(), "the sweeper did not stop");
    assert_eq!(engine.poisoned(), None);
}
