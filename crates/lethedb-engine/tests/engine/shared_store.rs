//! Two engines on one PostgreSQL store, as two LetheDB processes behind a load balancer: each has
//! its own caches and writer, and a manual clock set far from the other's and from real time.
//! What one commits the other reads at once; definitions changed by one are current in the
//! other; both judge expiry by the store's clock, so they agree on the instant; racing writers
//! and sweepers never double anything.
//!
//! They run when `LETHEDB_TEST_POSTGRES` names a database (`scripts/test postgres` starts one),
//! each test in a schema of its own. Without one, `cargo test` reports them as ignored, with the
//! reason (the crate's `build.rs` sets the cfg they need); in the `postgres` stage
//! (`LETHEDB_TEST_POSTGRES_REQUIRED`) a missing database fails them.

use crate::common::{pk, resolved};
use lethedb_engine::{Buckets, Engine, ErrorCode, ManualClock, WriteMode};
use lethedb_storage::{PgOptions, PgStore};
use serde_json::json;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Both manual clocks are this far from real time, in opposite directions.
const SKEW_MS: i64 = 3_600_000;

/// The test database. These tests run only in a build that names one (`build.rs` sets the
/// cfg); the postgres stage's `LETHEDB_TEST_POSTGRES_REQUIRED` runs them even without, so
/// that a missing database fails here.
pub(crate) fn database_url() -> String {
    std::env::var("LETHEDB_TEST_POSTGRES")
        .ok()
        .filter(|url| !url.is_empty())
        .expect("LETHEDB_TEST_POSTGRES is not set, and the postgres stage requires it")
}

pub(crate) fn real_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64
}

/// Two engines on a fresh schema, with database `db` and container `c` (`/pk`, TTL on, no
/// default) created through the first.
async fn pair(url: &str) -> (Engine, Engine) {
    let (a, b, _) = pair_counting(url).await;
    (a, b)
}

/// [`pair`], with the second engine's store, whose round trips a test counts.
pub(crate) async fn pair_counting(url: &str) -> (Engine, Engine, Arc<PgStore>) {
    pair_in(url, &fresh_schema()).await
}

/// The store a server opens in `schema`: keys placed in the engine's buckets, here in tables
/// hash-partitioned by bucket, so every test on it also runs on that layout.
pub(crate) fn open_store(url: &str, schema: &str) -> PgStore {
    let mut options = PgOptions::new(Arc::new(Buckets));
    options.partitions = 4;
    PgStore::open_with(url, schema, options).expect("store")
}

/// A schema no other test uses.
pub(crate) fn fresh_schema() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "engine_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

/// [`pair_counting`] in `schema`, where a test may open a store of its own beside the engines.
pub(crate) async fn pair_in(url: &str, schema: &str) -> (Engine, Engine, Arc<PgStore>) {
    let open = |offset: i64, store: Arc<PgStore>, writer_lanes: usize| {
        Engine::open(
            store,
            Arc::new(ManualClock::new(real_now_ms() + offset)),
            lethedb_engine::EngineConfig {
                writer_lanes: Some(writer_lanes),
                ..crate::common::config()
            },
        )
        .expect("engine")
    };
    let store = || Arc::new(open_store(url, schema));
    let second = store();
    // The first engine writes through four lanes (transactions of disjoint shards side by
    // side), the second through one, so every test here races both shapes.
    let (a, b) = (
        open(SKEW_MS, store(), 4),
        open(-SKEW_MS, Arc::clone(&second), 1),
    );
    a.create_database(json!({"id": "db"}), None)
        .await
        .expect("db");
    a.create_container(
        "db",
        json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}, "defaultTtl": -1}),
        None,
    )
    .await
    .expect("container");
    (a, b, second)
}

fn visible(engine: &Engine, id: &str) -> bool {
    let container = engine.read_container("db", "c").expect("container");
    match engine.read_item(&container, pk("p"), id) {
        Ok(_) => true,
        Err(error) if error.code == ErrorCode::ItemNotFound => false,
        Err(error) => panic!("read: {error:?}"),
    }
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_on_one_engine_is_read_by_the_other_with_the_stores_time() {
    let url = database_url();
    let (a, b) = pair(&url).await;
    let before = real_now_ms();
    let written = a
        .write_item(
            &resolved(&a, "c"),
            WriteMode::Create,
            pk("p"),
            json!({"id": "x", "pk": "p", "z": 1, "a": 2}),
            None,
        )
        .await
        .expect("create");
    let container = b.read_container("db", "c").expect("container on b");
    let read = b.read_item(&container, pk("p"), "x").expect("read on b");
    assert_eq!(read.etag(), written.item.etag());
    assert_eq!(
        read.record.body,
        br#"{"id":"x","pk":"p","z":1,"a":2}"#.to_vec()
    );
    // Stamped by the store's clock, not by either engine's (an hour off each way).
    let stamped = read.record.last_modified_ms;
    assert!(
        (before - 5_000..real_now_ms() + 5_000).contains(&stamped),
        "stamped {stamped}, real time {before}"
    );
    // Both engines tell time by the store once they have read from it.
    assert!((a.now_ms() - b.now_ms()).abs() < 5_000);
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_default_ttl_set_through_one_engine_applies_at_once_in_the_other() {
    let url = database_url();
    let (a, b) = pair(&url).await;
    a.write_item(
        &resolved(&a, "c"),
        WriteMode::Create,
        pk("p"),
        json!({"id": "x", "pk": "p"}),
        None,
    )
    .await
    .expect("create");
    assert!(
        visible(&b, "x"),
        "b caches the container with TTL on and no default"
    );
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    b.replace_container(
        "db",
        "c",
        json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}, "defaultTtl": 1}),
        None,
    )
    .await
    .expect("replace on b");
    // The item is over a second old: expired under the new default, on both engines at once.
    assert!(!visible(&a, "x"), "a still used its cached definition");
    assert!(!visible(&b, "x"));
    a.delete_container("db", "c").await.expect("delete on a");
    let gone = b.read_container("db", "c").expect_err("deleted on a");
    assert_eq!(gone.code, ErrorCode::ContainerNotFound);
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_engines_see_an_item_expire_at_the_same_instant_whatever_their_clocks() {
    let url = database_url();
    let (a, b) = pair(&url).await;
    a.write_item(
        &resolved(&a, "c"),
        WriteMode::Create,
        pk("p"),
        json!({"id": "x", "pk": "p", "ttl": 1}),
        None,
    )
    .await
    .expect("create");
    assert!(visible(&a, "x") && visible(&b, "x"));
    // Reads alternate between the engines: once either has seen the item expired, neither
    // ever shows it again (with the engines' own clocks it would be gone on one at once and
    // alive on the other for two hours).
    let started = Instant::now();
    let mut expired_seen = false;
    let mut reads = 0;
    while started.elapsed() < Duration::from_secs(3) {
        for engine in [&a, &b] {
            let alive = visible(engine, "x");
            reads += 1;
            assert!(!(alive && expired_seen), "alive again after read {reads}");
            expired_seen |= !alive;
        }
    }
    assert!(expired_seen, "the item never expired");
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_creates_of_one_id_through_both_engines_let_exactly_one_win() {
    let url = database_url();
    let (a, b) = pair(&url).await;
    for round in 0..20 {
        let id = format!("r{round}");
        let create = |engine: Engine, id: String| async move {
            engine
                .write_item(
                    &resolved(&engine, "c"),
                    WriteMode::Create,
                    pk("p"),
                    json!({"id": id, "pk": "p"}),
                    None,
                )
                .await
        };
        let (first, second) = tokio::join!(
            tokio::spawn(create(a.clone(), id.clone())),
            tokio::spawn(create(b.clone(), id.clone()))
        );
        let outcomes = [first.expect("task"), second.expect("task")];
        let won = outcomes.iter().filter(|o| o.is_ok()).count();
        assert_eq!(won, 1, "round {round}: {outcomes:?}");
        assert!(outcomes
            .iter()
            .any(|o| matches!(o, Err(e) if e.code == ErrorCode::ItemIdConflict)));
    }
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sweepers_on_both_engines_delete_each_expired_item_once_and_no_live_one() {
    let url = database_url();
    let (a, b) = pair(&url).await;
    for i in 0..200 {
        let ttl = if i % 4 == 0 { 3_600 } else { 1 };
        a.write_item(
            &resolved(&a, "c"),
            WriteMode::Create,
            pk("p"),
            json!({"id": format!("i{i}"), "pk": "p", "ttl": ttl}),
            None,
        )
        .await
        .expect("create");
    }
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let mut deleted = 0;
    for _ in 0..50 {
        let (x, y) = tokio::join!(a.sweep_once(40), b.sweep_once(40));
        let ((da, more_a), (db, more_b)) = (x.expect("sweep a"), y.expect("sweep b"));
        deleted += da + db;
        if !more_a && !more_b && deleted >= 150 {
            break;
        }
    }
    assert_eq!(deleted, 150, "each expired item deleted exactly once");
    for i in (0..200).step_by(4) {
        assert!(visible(&b, &format!("i{i}")), "live item i{i} was deleted");
    }
    let container = a.read_container("db", "c").expect("container");
    assert_eq!(
        a.container_usage(&container).await.expect("usage").items,
        50
    );
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_point_read_is_one_round_trip_and_judges_by_the_definition_it_read() {
    let url = database_url();
    let (a, b, store) = pair_counting(&url).await;
    let create = |id: &'static str| {
        let container = resolved(&a, "c");
        let a = &a;
        async move {
            a.write_item(
                &container,
                WriteMode::Create,
                pk("p"),
                json!({"id": id, "pk": "p"}),
                None,
            )
            .await
            .expect("create")
        }
    };
    create("x").await;
    // Warm: the definition cached (a first look at a newer epoch only drops what was cached),
    // the statements prepared.
    for _ in 0..2 {
        let container = b.read_container("db", "c").expect("container on b");
        b.read_item_with_lsn(&container, pk("p"), "x")
            .await
            .expect("read");
    }
    let before = store.round_trips();
    let cached = b.container_for_point_read("db", "c").expect("cached");
    let (item, lsn) = b
        .read_item_with_lsn(&cached, pk("p"), "x")
        .await
        .expect("read");
    assert_eq!(
        store.round_trips() - before,
        1,
        "a warm point read waits once"
    );
    assert!(Arc::ptr_eq(&item.container, &cached) && lsn >= item.record.lsn);
    // Another instance gives the container a one-second default TTL; the item, written over a
    // second ago by the store's clock, has expired. The stale definition b cached is judged
    // against the one its read finds, still in one round trip.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    a.replace_container(
        "db",
        "c",
        json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}, "defaultTtl": 1}),
        None,
    )
    .await
    .expect("replace");
    let before = store.round_trips();
    let stale = b.container_for_point_read("db", "c").expect("cached");
    assert!(Arc::ptr_eq(&stale, &cached), "b has not looked since");
    let error = b
        .read_item_with_lsn(&stale, pk("p"), "x")
        .await
        .expect_err("expired");
    assert_eq!(error.code, ErrorCode::ItemNotFound);
    assert_eq!(store.round_trips() - before, 1);
    // Deleted and created again under the same name: the read finds the new container's items.
    a.delete_container("db", "c").await.expect("delete");
    a.create_container(
        "db",
        json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}}),
        None,
    )
    .await
    .expect("create again");
    create("y").await;
    let (item, _) = b
        .read_item_with_lsn(&stale, pk("p"), "y")
        .await
        .expect("the new one's item");
    assert_ne!(item.container.rid(), stale.rid());
    let error = b
        .read_item_with_lsn(&stale, pk("p"), "x")
        .await
        .expect_err("gone with the old one");
    assert_eq!(error.code, ErrorCode::ItemNotFound);
    a.delete_container("db", "c").await.expect("delete");
    let error = b
        .read_item_with_lsn(&stale, pk("p"), "y")
        .await
        .expect_err("no container");
    assert_eq!(error.code, ErrorCode::ContainerNotFound);
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_group_waits_twice_whatever_its_size() {
    let url = database_url();
    let (_a, b, store) = pair_counting(&url).await;
    let container = b.read_container("db", "c").expect("c");
    let write = |mode: WriteMode, id: String| {
        let (b, container) = (&b, Arc::clone(&container));
        async move {
            b.write_item(
                &container,
                mode,
                pk("p"),
                json!({"id": id, "pk": "p"}),
                None,
            )
            .await
            .expect("write")
        }
    };
    write(WriteMode::Create, "warm".into()).await;
    // The start (lock, clock, epoch) with the group's items and counters, and the changes
    // sent with COMMIT: nothing per key. A write that replaces a version rewrites that
    // version's change-log entry with its body blind, at the place the version's record keeps
    // (`records::LogPlace`): no read of it either.
    for mode in [WriteMode::Create, WriteMode::Upsert] {
        let before = store.round_trips();
        write(mode, "one".into()).await;
        assert_eq!(store.round_trips() - before, 2, "one write");
    }
    let before = store.round_trips();
    let mut burst = tokio::task::JoinSet::new();
    for i in 0..32 {
        let (b, container) = (b.clone(), Arc::clone(&container));
        burst.spawn(async move {
            let body = json!({"id": format!("burst{i}"), "pk": "p"});
            b.write_item(&container, WriteMode::Create, pk("p"), body, None)
                .await
        });
    }
    while let Some(done) = burst.join_next().await {
        done.expect("task").expect("create");
    }
    let waits = store.round_trips() - before;
    let groups = waits / 2;
    assert!(
        waits % 2 == 0 && groups < 32,
        "{waits} waits for 32 creates"
    );
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_admits_by_a_cached_definition_after_one_statement_that_says_it_is_current() {
    let url = database_url();
    let (a, b, store) = pair_counting(&url).await;
    // Warm, as for the point read: a first look at a newer epoch only drops what was cached.
    b.read_container_awaiting("db", "c").await.expect("warm");
    let warm = b.read_container_awaiting("db", "c").await.expect("warm");
    let before = store.round_trips();
    let cached = b.read_container_awaiting("db", "c").await.expect("cached");
    assert_eq!(store.round_trips() - before, 1, "one look at the epoch");
    assert!(Arc::ptr_eq(&warm, &cached), "served from the cache");
    // Another instance changes the container: the next admission sees the change.
    a.replace_container(
        "db",
        "c",
        json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}, "defaultTtl": 7}),
        None,
    )
    .await
    .expect("replace");
    let changed = b.read_container_awaiting("db", "c").await.expect("changed");
    assert!(!Arc::ptr_eq(&changed, &cached));
    assert_eq!(changed.resource["defaultTtl"], json!(7));
    a.delete_container("db", "c").await.expect("delete");
    let error = b
        .read_container_awaiting("db", "c")
        .await
        .expect_err("deleted");
    assert_eq!(error.code, ErrorCode::ContainerNotFound);
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lsn_a_missing_items_read_answers_with_is_one_awaited_statement() {
    let url = database_url();
    let (a, b, store) = pair_counting(&url).await;
    let container = resolved(&a, "c");
    let partition = pk("p");
    let before_write = b
        .container_lsn_awaiting(&container, partition.as_ref())
        .await
        .expect("lsn before");
    a.write_item(
        &container,
        WriteMode::Create,
        pk("p"),
        json!({"id": "x", "pk": "p"}),
        None,
    )
    .await
    .expect("create");
    let before = store.round_trips();
    let lsn = b
        .container_lsn_awaiting(&container, partition.as_ref())
        .await
        .expect("lsn");
    assert_eq!(store.round_trips() - before, 1, "one statement");
    assert!(lsn > before_write, "another instance's write is seen");
    // The partition's shard is the only one written: its sequence is the container's version.
    assert_eq!(
        lethedb_engine::lsn_sequence(lsn),
        b.container_lsn(&container).expect("lsn in a snapshot")
    );
}
