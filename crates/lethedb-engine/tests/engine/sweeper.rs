//! The TTL sweeper: it physically deletes every expired item, never a live one, survives a
//! restart, and reports its backlog; its own loop, paced by a manual clock, does the same.

use crate::common::*;

use lethedb_engine::{Engine, EngineConfig, ManualClock, SweeperConfig, WriteMode};
use lethedb_storage::{KeyRange, RedbStore, Storage, Table};
use serde_json::json;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

const START_MS: i64 = 1_800_000_000_000;

fn count(store: &dyn Storage, table: Table) -> usize {
    let reader = store.read().expect("read");
    let mut n = 0;
    reader
        .scan(table, &KeyRange::prefix(&[]), &mut |_, _| {
            n += 1;
            ControlFlow::Continue(())
        })
        .expect("scan");
    n
}

async fn setup(engine: &Engine, default_ttl: i64) {
    engine
        .create_database(json!({"id": "db"}), None)
        .await
        .expect("db");
    engine
        .create_container(
            "db",
            json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": default_ttl}),
            None,
        )
        .await
        .expect("container");
}

async fn sweep_until_idle(engine: &Engine) -> u64 {
    let mut deleted = 0;
    loop {
        let (batch, more) = engine.sweep_once(5_000).await.expect("sweep");
        deleted += batch;
        if !more && batch == 0 {
            return deleted;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_expired_items_are_all_deleted() {
    let store = crate::common::test_store();
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine =
        Engine::open(store.clone(), clock.clone(), crate::common::config()).expect("engine");
    setup(&engine, 60).await;
    let total = 100_000;
    let writers: Vec<_> = (0..50)
        .map(|writer| {
            let engine = engine.clone();
            tokio::spawn(async move {
                for i in 0..total / 50 {
                    let id = format!("w{writer}-{i}");
                    let partition = format!("p{}", i % 16);
                    engine
                        .write_item(
                            &resolved(&engine, "c"),
                            WriteMode::Create,
                            pk(&partition),
                            json!({"id": id, "pk": partition}),
                            None,
                        )
                        .await
                        .expect("create");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("writer");
    }
    // One item that must outlive the sweep.
    engine
        .write_item(
            &resolved(&engine, "c"),
            WriteMode::Create,
            pk("keep"),
            json!({"id": "keep", "pk": "keep", "ttl": -1}),
            None,
        )
        .await
        .expect("keep");
    assert_eq!(count(&*store, Table::Items), total + 1);
    assert_eq!(
        sweep_until_idle(&engine).await,
        0,
        "nothing has expired yet"
    );
    clock.advance_ms(60_000);
    let deleted = sweep_until_idle(&engine).await;
    assert_eq!(deleted, total as u64);
    assert_eq!(
        count(&*store, Table::Items),
        1,
        "only the live item is left"
    );
    assert_eq!(count(&*store, Table::ResourceIds), 1);
    let container = engine.read_container("db", "c").expect("container");
    assert!(engine.read_item(&container, pk("keep"), "keep").is_ok());
    let stats = engine.sweep_stats();
    assert_eq!(stats.len(), 1);
    assert_eq!(
        (stats[0].backlog_items, stats[0].deleted_total),
        (0, total as u64)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewrite_at_the_expiry_instant_is_never_swept() {
    let mut rng = Rng(0x5eed);
    for round in 0..20 {
        let clock = Arc::new(ManualClock::new(START_MS));
        let engine = Engine::open(
            crate::common::test_store(),
            clock.clone(),
            crate::common::config(),
        )
        .expect("engine");
        setup(&engine, 10).await;
        let items = 200;
        create_items(&engine, items).await;
        clock.advance_ms(10_000);
        // At the expiry instant, rewrite a random subset while sweeps run concurrently.
        let rewritten: Vec<usize> = (0..items).filter(|_| rng.below(3) == 0).collect();
        let sweeper = {
            let engine = engine.clone();
            tokio::spawn(async move {
                for _ in 0..5 {
                    engine
                        .sweep_once(1 + (round % 7) * 10)
                        .await
                        .expect("sweep");
                    tokio::task::yield_now().await;
                }
            })
        };
        let writers: Vec<_> = rewritten
            .iter()
            .map(|&i| {
                let engine = engine.clone();
                tokio::spawn(async move {
                    engine
                        .write_item(
                            &resolved(&engine, "c"),
                            WriteMode::Upsert,
                            pk("p"),
                            json!({"id": format!("i{i}"), "pk": "p", "v": 2}),
                            None,
                        )
                        .await
                        .expect("rewrite")
                })
            })
            .collect();
        for writer in writers {
            writer.await.expect("writer");
        }
        sweeper.await.expect("sweeper");
        sweep_until_idle(&engine).await;
        let container = engine.read_container("db", "c").expect("container");
        for i in 0..items {
            let found = engine.read_item(&container, pk("p"), &format!("i{i}"));
            assert_eq!(
                found.is_ok(),
                rewritten.contains(&i),
                "round {round}, item i{i}"
            );
        }
        assert_eq!(
            engine
                .container_usage(&container)
                .await
                .expect("usage")
                .items,
            rewritten.len() as u64
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_items_stay_invisible_after_a_restart_and_the_sweeper_resumes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("store.redb");
    let clock = Arc::new(ManualClock::new(START_MS));
    {
        let engine = Engine::open(
            Arc::new(RedbStore::open(&path).expect("open")),
            clock.clone(),
            crate::common::config(),
        )
        .expect("engine");
        setup(&engine, 5).await;
        create_items(&engine, 100).await;
        clock.advance_ms(5_000);
        // Sweep part of the backlog, then stop.
        engine.sweep_once(30).await.expect("sweep");
        assert!(engine.close(), "sole handle");
    }
    let store = Arc::new(RedbStore::open(&path).expect("reopen"));
    let engine =
        Engine::open(store.clone(), clock.clone(), crate::common::config()).expect("engine");
    let container = engine.read_container("db", "c").expect("container");
    for i in 0..100 {
        assert!(
            engine
                .read_item(&container, pk("p"), &format!("i{i}"))
                .is_err(),
            "i{i} stays expired"
        );
    }
    assert_eq!(
        count(&*store, Table::Items),
        70,
        "30 were swept before the restart"
    );
    assert_eq!(sweep_until_idle(&engine).await, 70);
    assert_eq!(count(&*store, Table::Items), 0);
    assert_eq!(count(&*store, Table::Expiry), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweeper_spends_only_the_throughput_users_left_over() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let store = crate::common::test_store();
    let engine =
        Engine::open(store.clone(), clock.clone(), crate::common::config()).expect("engine");
    engine
        .create_database(json!({"id": "db"}), None)
        .await
        .expect("db");
    let throughput = lethedb_engine::Throughput::manual(400).expect("throughput");
    engine
        .create_container(
            "db",
            json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 1}),
            Some(throughput),
        )
        .await
        .expect("container");
    let container = engine.read_container("db", "c").expect("container");
    for i in 0..200 {
        engine
            .write_item(
                &resolved(&engine, "c"),
                WriteMode::Create,
                pk("p"),
                json!({"id": format!("i{i}"), "pk": "p"}),
                None,
            )
            .await
            .expect("create");
    }
    clock.advance_ms(5_000);
    // Users saturate every second's 400 RU: the sweeper deletes nothing, items stay invisible.
    for _ in 0..5 {
        assert_eq!(
            engine.admit(&container, lethedb_engine::Priority::High),
            Ok(())
        );
        engine.charge(&container, 400.0);
        assert!(
            engine
                .admit(&container, lethedb_engine::Priority::High)
                .is_err(),
            "the budget of this second is spent"
        );
        clock.advance_ms(1_000);
        let (deleted, _) = engine.sweep_once(10_000).await.expect("sweep");
        assert_eq!(deleted, 0, "no leftover, no deletion");
        assert!(engine.read_item(&container, pk("p"), "i0").is_err());
        // Users were never refused because of the sweeper.
        assert_eq!(
            engine.budget_totals(&container).expect("totals").sweeper_ru,
            0.0
        );
    }
    assert_eq!(count(&*store, Table::Items), 200);
    // Traffic stops: each second the sweeper takes what the 400 RU left over pay for, priced
    // by size (the index terms each delete also removes are charged once it is done).
    let per_delete = lethedb_engine::request_units::write(Some(40), None, 0);
    let per_second = (400.0 / per_delete).floor() as usize;
    clock.advance_ms(1_000);
    let (deleted, _) = engine.sweep_once(10_000).await.expect("sweep");
    assert_eq!(
        engine.admit(&container, lethedb_engine::Priority::High),
        Ok(()),
        "sweeping never spends the users' budget"
    );
    assert_eq!(deleted as usize, per_second);
    let (again, _) = engine.sweep_once(10_000).await.expect("sweep");
    assert_eq!(again, 0, "this second's allowance is spent");
    let mut seconds = 1;
    while count(&*store, Table::Items) > 0 {
        clock.advance_ms(1_000);
        engine.sweep_once(10_000).await.expect("sweep");
        seconds += 1;
        assert!(seconds < 100, "the backlog drains");
    }
    assert_eq!(seconds, 200_usize.div_ceil(per_second));
    let totals = engine.budget_totals(&container).expect("totals");
    assert!(totals.sweeper_ru <= 400.0 * seconds as f64);
    assert_eq!(
        totals.throttled, 5,
        "only the deliberate over-budget requests"
    );
}

#[tokio::test]
async fn each_of_several_instances_draws_on_its_share_of_a_containers_throughput() {
    let open = |instances: u32| {
        Engine::open(
            crate::common::test_store(),
            Arc::new(ManualClock::new(START_MS)),
            EngineConfig {
                throughput_instances: instances,
                ..crate::common::config()
            },
        )
        .expect("engine")
    };
    for (instances, share) in [(1, 400.0), (2, 200.0), (4, 100.0)] {
        let engine = open(instances);
        engine
            .create_database(json!({"id": "db"}), None)
            .await
            .expect("db");
        let container = engine
            .create_container(
                "db",
                json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}}),
                Some(lethedb_engine::Throughput::Manual(400)),
            )
            .await
            .expect("container");
        let (_, budget) = engine.budget_of(&container).expect("a budget");
        assert_eq!(budget, share, "{instances} instances");
    }
}

/// Yields to the sweeper's task until `done` holds, moving the manual clock by `step_ms` each
/// round so that the loop's pauses, which run on that clock, end.
async fn until(clock: &ManualClock, step_ms: i64, done: impl Fn() -> bool) {
    while !done() {
        clock.advance_ms(step_ms);
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweepers_own_loop_deletes_expired_items_as_the_manual_clock_moves() {
    let store = crate::common::test_store();
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine =
        Engine::open(store.clone(), clock.clone(), crate::common::config()).expect("engine");
    setup(&engine, 60).await;
    create_items(&engine, 25).await;
    engine
        .write_item(
            &resolved(&engine, "c"),
            WriteMode::Create,
            pk("keep"),
            json!({"id": "keep", "pk": "keep", "ttl": -1}),
            None,
        )
        .await
        .expect("keep");
    // Batches of 10: the loop needs several turns, each after a pause on the manual clock.
    let sweeper = engine.start_sweeper(SweeperConfig {
        batch_items_max: 10,
        ..SweeperConfig::default()
    });
    // The first turn visits the container with time standing still and finds nothing expired.
    until(&clock, 0, || !engine.sweep_stats().is_empty()).await;
    assert_eq!(engine.sweep_stats()[0].deleted_total, 0);
    assert_eq!(count(&*store, Table::Items), 26);
    clock.advance_ms(60_000);
    until(&clock, 1, || {
        engine
            .sweep_stats()
            .first()
            .is_some_and(|stats| stats.deleted_total == 25)
    })
    .await;
    sweeper.stop().await;
    assert_eq!(
        count(&*store, Table::Items),
        1,
        "only the live item is left"
    );
    assert_eq!(count(&*store, Table::ResourceIds), 1);
    assert_eq!(engine.sweep_stats()[0].backlog_items, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_batches_walking_on_from_the_last_one_miss_nothing_in_either_class() {
    // Each batch's walk begins after the last key the batch before chose in each class. Items
    // of one class that expire while the walk is in the other, and items that come in behind a
    // class's last key, must all still go.
    let store = crate::common::test_store();
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine =
        Engine::open(store.clone(), clock.clone(), crate::common::config()).expect("engine");
    setup(&engine, 60).await;
    let defaults = (0..10).map(|n| json!({"id": format!("default-{n}"), "pk": "p"}));
    let own = (0..10).map(|n| json!({"id": format!("own-{n}"), "pk": "p", "ttl": 5}));
    let keep = json!({"id": "keep", "pk": "p", "ttl": -1});
    create_documents(&engine, defaults.chain(own).chain([keep])).await;
    // The own-ttl items expire first: batches of three take them, the walk ending in that class.
    clock.advance_ms(6_000);
    let (first, more) = engine.sweep_once(3).await.expect("sweep");
    assert_eq!((first, more), (3, true));
    // Own-ttl items written now expire after the ones left; the defaults expire with them.
    let later = (0..5).map(|n| json!({"id": format!("later-{n}"), "pk": "p", "ttl": 5}));
    create_documents(&engine, later).await;
    clock.advance_ms(60_000);
    let mut deleted = first;
    loop {
        let (batch, more) = engine.sweep_once(3).await.expect("sweep");
        assert!(batch <= 3);
        deleted += batch;
        if batch == 0 && !more {
            break;
        }
    }
    assert_eq!(deleted, 25);
    assert_eq!(
        count(&*store, Table::Items),
        1,
        "only the live item is left"
    );
    assert_eq!(count(&*store, Table::Expiry), 0);
}
