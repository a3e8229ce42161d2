//! Unique keys: validated and fixed with their container, enforced per logical partition on
//! every write path (create, upsert, replace, patch, batches, bulk, stored procedures,
//! triggers), freed by deletes, replaces and expiry at its instant, and cleared with their
//! container. A refused write changes nothing.

use crate::common::{config, engine_on_store, pk, resolved};
use lethedb_engine::BatchMode;
use lethedb_engine::{
    parse_batch, BatchEntry, Engine, ErrorCode, ManualClock, PartitionKeyValue, RangeFilter,
    ResourceKind, ResourceParent, TriggeredOperation, TriggeredWrite, WriteMode,
};
use lethedb_storage::{KeyRange, Storage, Table};
use serde_json::{json, Value};
use std::ops::ControlFlow;
use std::sync::Arc;

const START_MS: i64 = 1_800_000_000_000;

/// An engine with container `c` (partitioned on `/pk`) of the given unique key policy and
/// default TTL, and the store under it.
struct World {
    engine: Engine,
    clock: Arc<ManualClock>,
    store: Arc<dyn Storage>,
}

async fn world(unique_keys: Value, default_ttl: Option<i64>) -> World {
    let clock = Arc::new(ManualClock::new(START_MS));
    let store = crate::common::test_store();
    let mut container = json!({
        "id": "c",
        "partitionKey": {"paths": ["/pk"], "kind": "Hash"},
        "uniqueKeyPolicy": {"uniqueKeys": unique_keys},
    });
    if let Some(ttl) = default_ttl {
        container["defaultTtl"] = json!(ttl);
    }
    let engine = engine_on_store(store.clone(), Arc::clone(&clock), container, config()).await;
    World {
        engine,
        clock,
        store,
    }
}

/// A unique key on `/email`.
fn email_key() -> Value {
    json!([{"paths": ["/email"]}])
}

impl World {
    async fn write(&self, mode: WriteMode, body: Value) -> Result<(), ErrorCode> {
        let partition = pk(body["pk"].as_str().unwrap_or_default());
        self.engine
            .write_item(&resolved(&self.engine, "c"), mode, partition, body, None)
            .await
            .map(drop)
            .map_err(|error| error.code)
    }

    async fn create(&self, body: Value) -> Result<(), ErrorCode> {
        self.write(WriteMode::Create, body).await
    }

    async fn delete(&self, partition: &str, id: &str) {
        self.engine
            .delete_item(&resolved(&self.engine, "c"), pk(partition), id, None)
            .await
            .expect("delete");
    }

    /// The ids of the visible items, sorted.
    async fn ids(&self) -> Vec<String> {
        let container = resolved(&self.engine, "c");
        let feed = self
            .engine
            .read_feed(&container, None, RangeFilter::everything(), 1000, None)
            .await
            .expect("feed");
        let mut ids: Vec<String> = feed
            .items
            .iter()
            .map(|item| {
                item.to_value().expect("value")["id"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .collect();
        ids.sort();
        ids
    }

    /// How many entries the index table holds (only claims, in these tests).
    /// The unique key claims in the index table (kind `U` after the container number; the
    /// table also holds the indexing policy's entries).
    fn index_entries(&self) -> usize {
        let reader = self.store.read().expect("read");
        let mut entries = 0;
        reader
            .scan(Table::Index, &KeyRange::prefix(&[]), &mut |key, _| {
                if key.get(8) == Some(&b'U') {
                    entries += 1;
                }
                ControlFlow::Continue(())
            })
            .expect("scan");
        entries
    }
}

const CONFLICT: Result<(), ErrorCode> = Err(ErrorCode::ItemIdConflict);

#[tokio::test]
async fn a_value_is_unique_within_its_logical_partition_only() {
    let world = world(email_key(), None).await;
    assert_eq!(
        world
            .create(json!({"id": "a", "pk": "p", "email": "x"}))
            .await,
        Ok(())
    );
    assert_eq!(
        world
            .create(json!({"id": "b", "pk": "p", "email": "x"}))
            .await,
        CONFLICT
    );
    assert_eq!(
        world
            .create(json!({"id": "c", "pk": "q", "email": "x"}))
            .await,
        Ok(())
    );
    // Values are compared as JSON: strings are case sensitive.
    assert_eq!(
        world
            .create(json!({"id": "d", "pk": "p", "email": "X"}))
            .await,
        Ok(())
    );
    assert_eq!(world.ids().await, ["a", "c", "d"]);
    assert_eq!(world.index_entries(), 3);
}

#[tokio::test]
async fn missing_values_count_as_null_and_collide() {
    let world = world(email_key(), None).await;
    assert_eq!(world.create(json!({"id": "a", "pk": "p"})).await, Ok(()));
    assert_eq!(world.create(json!({"id": "b", "pk": "p"})).await, CONFLICT);
    assert_eq!(
        world
            .create(json!({"id": "c", "pk": "p", "email": null}))
            .await,
        CONFLICT
    );
    assert_eq!(
        world
            .create(json!({"id": "d", "pk": "p", "email": 1}))
            .await,
        Ok(())
    );
    assert_eq!(
        world
            .create(json!({"id": "e", "pk": "q", "email": null}))
            .await,
        Ok(())
    );
    assert_eq!(world.ids().await, ["a", "d", "e"]);
}

#[tokio::test]
async fn values_equal_in_the_query_language_collide() {
    let world = world(email_key(), None).await;
    let pairs = [
        (json!(1), json!(1.0), true),
        (
            json!({"a": 1, "b": [2, 3]}),
            json!({"b": [2, 3], "a": 1.0}),
            true,
        ),
        (json!("1"), json!(1), false),
        (json!("true"), json!(true), false),
        (json!([1, 2]), json!([2, 1]), false),
    ];
    for (index, (first, second, collide)) in pairs.into_iter().enumerate() {
        let partition = format!("p{index}");
        let one = json!({"id": "one", "pk": partition, "email": first});
        assert_eq!(world.create(one).await, Ok(()));
        let two = json!({"id": "two", "pk": partition, "email": second});
        let expected = if collide { CONFLICT } else { Ok(()) };
        assert_eq!(world.create(two).await, expected, "pair {index}");
    }
}

#[tokio::test]
async fn a_key_combines_its_paths_and_each_key_holds_on_its_own() {
    let keys = json!([{"paths": ["/first", "/last"]}, {"paths": ["/phone"]}]);
    let world = world(keys, None).await;
    let person = |id: &str, first: &str, last: &str, phone: &str| json!({"id": id, "pk": "p", "first": first, "last": last, "phone": phone});
    assert_eq!(
        world.create(person("a", "ada", "lovelace", "1")).await,
        Ok(())
    );
    assert_eq!(world.create(person("b", "ada", "byron", "2")).await, Ok(()));
    assert_eq!(
        world.create(person("c", "ada", "lovelace", "3")).await,
        CONFLICT
    );
    assert_eq!(
        world.create(person("d", "alan", "turing", "1")).await,
        CONFLICT
    );
    assert_eq!(world.ids().await, ["a", "b"]);
    assert_eq!(world.index_entries(), 4);
}

#[tokio::test]
async fn upserts_replaces_and_patches_are_checked_and_free_what_they_change() {
    let world = world(email_key(), None).await;
    let item = |id: &str, email: &str| json!({"id": id, "pk": "p", "email": email});
    world.create(item("a", "x")).await.expect("a");
    world.create(item("b", "y")).await.expect("b");
    assert_eq!(
        world.write(WriteMode::Upsert, item("b", "x")).await,
        CONFLICT
    );
    assert_eq!(
        world.write(WriteMode::Upsert, item("n", "x")).await,
        CONFLICT
    );
    let replace_b = WriteMode::Replace("b".into());
    assert_eq!(
        world.write(replace_b.clone(), item("b", "x")).await,
        CONFLICT
    );
    let container = resolved(&world.engine, "c");
    let set_email =
        |email: &str| json!({"operations": [{"op": "set", "path": "/email", "value": email}]});
    let patched = world
        .engine
        .patch_item(&container, pk("p"), "b", set_email("x"), None)
        .await;
    assert_eq!(patched.map(drop).map_err(|error| error.code), CONFLICT);
    // An item keeps its own value when rewritten, and frees the one it leaves.
    assert_eq!(world.write(WriteMode::Upsert, item("a", "x")).await, Ok(()));
    assert_eq!(world.write(WriteMode::Upsert, item("a", "z")).await, Ok(()));
    assert_eq!(world.write(replace_b, item("b", "x")).await, Ok(()));
    let patched = world
        .engine
        .patch_item(&container, pk("p"), "a", set_email("y"), None)
        .await;
    assert!(patched.is_ok(), "y was freed by b's replace");
    assert_eq!(world.create(item("c", "z")).await, Ok(()));
    assert_eq!(world.index_entries(), 3);
}

#[tokio::test]
async fn a_rename_keeps_its_values_and_deletes_free_them() {
    let world = world(email_key(), None).await;
    let item = |id: &str, pk: &str, email: &str| json!({"id": id, "pk": pk, "email": email});
    world.create(item("a", "p", "x")).await.expect("a");
    let rename = WriteMode::Replace("a".into());
    assert_eq!(world.write(rename, item("a2", "p", "x")).await, Ok(()));
    assert_eq!(world.create(item("b", "p", "x")).await, CONFLICT);
    world.delete("p", "a2").await;
    assert_eq!(world.create(item("b", "p", "x")).await, Ok(()));
    world.create(item("c", "q", "x")).await.expect("c");
    let deleted = world
        .engine
        .delete_partition(
            &resolved(&world.engine, "c"),
            PartitionKeyValue::parse_json_text("[\"p\"]").expect("pk"),
        )
        .await
        .expect("partition");
    assert_eq!(deleted, 1);
    assert_eq!(world.index_entries(), 1);
    assert_eq!(world.create(item("d", "p", "x")).await, Ok(()));
}

/// Each entry's status as the service reports it in a batch: the code of its failure.
fn failures(results: &[BatchEntry]) -> Vec<Option<ErrorCode>> {
    results
        .iter()
        .map(|entry| entry.as_ref().err().map(|error| error.code))
        .collect()
}

#[tokio::test]
async fn a_batch_that_breaks_a_unique_key_fails_whole_and_bulk_fails_one() {
    let world = world(email_key(), None).await;
    world
        .create(json!({"id": "held", "pk": "p", "email": "h"}))
        .await
        .expect("held");
    let container = resolved(&world.engine, "c");
    for operations in [
        json!([
            {"operationType": "Create", "resourceBody": {"id": "a", "pk": "p", "email": "x"}},
            {"operationType": "Create", "resourceBody": {"id": "b", "pk": "p", "email": "x"}}
        ]),
        json!([
            {"operationType": "Create", "resourceBody": {"id": "a", "pk": "p", "email": "y"}},
            {"operationType": "Upsert", "resourceBody": {"id": "b", "pk": "p", "email": "h"}}
        ]),
    ] {
        let operations = parse_batch(&operations).expect("parse");
        let (results, succeeded, _) = world
            .engine
            .execute_batch(&container, pk("p"), operations, BatchMode::Atomic)
            .await
            .expect("batch");
        assert!(!succeeded);
        assert_eq!(
            failures(&results),
            [
                Some(ErrorCode::BatchOperationNotAttempted),
                Some(ErrorCode::ItemIdConflict)
            ]
        );
        assert_eq!(world.ids().await, ["held"]);
        assert_eq!(world.index_entries(), 1);
    }
    let bulk = parse_batch(&json!([
        {"operationType": "Create", "resourceBody": {"id": "a", "pk": "p", "email": "x"}},
        {"operationType": "Create", "resourceBody": {"id": "b", "pk": "p", "email": "x"}}
    ]))
    .expect("parse");
    let (results, _, _) = world
        .engine
        .execute_batch(&container, pk("p"), bulk, BatchMode::ContinueOnError)
        .await
        .expect("bulk");
    assert_eq!(failures(&results), [None, Some(ErrorCode::ItemIdConflict)]);
    assert_eq!(world.ids().await, ["a", "held"]);
}

/// Creates each body in order; answers the `err.number` of each creation (0 when it succeeded),
/// or throws the first failure when `rethrow`.
const CREATE_ALL: &str = r#"function (bodies, rethrow) {
    const c = getContext().getCollection();
    const numbers = [];
    next(0);
    function next(i) {
        if (i === bodies.length) { getContext().getResponse().setBody(numbers); return; }
        const accepted = c.createDocument(c.getSelfLink(), bodies[i], (err) => {
            if (err && rethrow) throw err;
            numbers.push(err ? err.number : 0);
            next(i + 1);
        });
        if (!accepted) throw new Error('not accepted');
    }
}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_procedures_and_triggers_meet_the_same_rule() {
    let world = world(email_key(), None).await;
    world
        .create(json!({"id": "held", "pk": "p", "email": "h"}))
        .await
        .expect("held");
    let parent = ResourceParent::Container {
        database_id: "db".into(),
        container_id: "c".into(),
    };
    let sproc = json!({"id": "create_all", "body": CREATE_ALL});
    world
        .engine
        .create_resource(ResourceKind::StoredProcedure, parent.clone(), sproc)
        .await
        .expect("sproc");
    let container = resolved(&world.engine, "c");
    let bodies = json!([
        {"id": "a", "pk": "p", "email": "h"},
        {"id": "b", "pk": "p", "email": "x"},
        {"id": "c", "pk": "p", "email": "x"},
        {"id": "d", "pk": "p", "email": "y"}
    ]);
    let response = world
        .engine
        .execute_stored_procedure(
            &container,
            "create_all",
            pk("p"),
            vec![bodies, json!(false)],
            false,
        )
        .await
        .expect("script");
    // Each refusal reaches the callback as the same request would get it: 409.
    assert_eq!(response.body, json!([409, 0, 409, 0]));
    assert_eq!(world.ids().await, ["b", "d", "held"]);
    // An uncaught refusal fails the whole call, and nothing the script wrote stays.
    let bodies =
        json!([{"id": "e", "pk": "p", "email": "e"}, {"id": "f", "pk": "p", "email": "x"}]);
    let failed = world
        .engine
        .execute_stored_procedure(
            &container,
            "create_all",
            pk("p"),
            vec![bodies, json!(true)],
            false,
        )
        .await
        .expect_err("thrown");
    assert_eq!(
        (failed.code, failed.substatus),
        (ErrorCode::ScriptFailed, Some(409))
    );
    assert_eq!(world.ids().await, ["b", "d", "held"]);
    // A pre-trigger that sets a held value makes the write it runs before a conflict.
    let take = r#"function () { const r = getContext().getRequest(); const d = r.getBody(); d.email = 'h'; r.setBody(d); }"#;
    let trigger =
        json!({"id": "take", "body": take, "triggerType": "Pre", "triggerOperation": "All"});
    world
        .engine
        .create_resource(ResourceKind::Trigger, parent, trigger)
        .await
        .expect("trigger");
    let write = TriggeredWrite {
        operation: TriggeredOperation::Create(json!({"id": "g", "pk": "p", "email": "g"})),
        partition_key: pk("p"),
        if_match: None,
        pre_triggers: vec!["take".into()],
        post_triggers: Vec::new(),
    };
    let refused = world
        .engine
        .write_item_with_triggers(&container, write)
        .await
        .expect_err("conflict");
    assert_eq!(refused.code, ErrorCode::ItemIdConflict);
    assert_eq!(world.ids().await, ["b", "d", "held"]);
    assert_eq!(world.index_entries(), 3);
}

#[tokio::test]
async fn a_value_is_free_at_its_holders_expiry_instant_before_any_purge() {
    let world = world(email_key(), Some(10)).await;
    world
        .create(json!({"id": "a", "pk": "p", "email": "x"}))
        .await
        .expect("a");
    world.clock.advance_ms(9_999);
    assert_eq!(
        world
            .create(json!({"id": "b", "pk": "p", "email": "x"}))
            .await,
        CONFLICT
    );
    world.clock.advance_ms(1);
    assert_eq!(
        world
            .create(json!({"id": "b", "pk": "p", "email": "x"}))
            .await,
        Ok(())
    );
    // Purging the expired holder leaves the new holder's claim alone.
    let mut purged = 0;
    loop {
        let (deleted, more) = world.engine.sweep_once(1_000).await.expect("sweep");
        purged += deleted;
        if !more && deleted == 0 {
            break;
        }
    }
    assert_eq!(purged, 1);
    assert_eq!(
        world
            .create(json!({"id": "c", "pk": "p", "email": "x"}))
            .await,
        CONFLICT
    );
    assert_eq!(world.ids().await, ["b"]);
    assert_eq!(world.index_entries(), 1);
}

#[tokio::test]
async fn claims_go_with_their_container_and_database() {
    let world = world(email_key(), None).await;
    for id in ["a", "b"] {
        world
            .create(json!({"id": id, "pk": id, "email": "x"}))
            .await
            .expect("item");
    }
    assert_eq!(world.index_entries(), 2);
    world
        .engine
        .delete_container("db", "c")
        .await
        .expect("delete container");
    assert_eq!(world.index_entries(), 0);
    let container = json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "uniqueKeyPolicy": {"uniqueKeys": email_key()}});
    world
        .engine
        .create_container("db", container, None)
        .await
        .expect("again");
    world
        .create(json!({"id": "a", "pk": "a", "email": "x"}))
        .await
        .expect("item");
    world
        .engine
        .delete_database("db")
        .await
        .expect("delete database");
    assert_eq!(world.index_entries(), 0);
}

#[tokio::test]
async fn the_policy_is_validated_returned_and_fixed_for_the_containers_life() {
    let world = world(email_key(), None).await;
    let resource = &resolved(&world.engine, "c").resource;
    assert_eq!(
        resource["uniqueKeyPolicy"],
        json!({"uniqueKeys": [{"paths": ["/email"]}]})
    );
    let plain = json!({"id": "plain", "partitionKey": {"paths": ["/pk"]}});
    let plain = world
        .engine
        .create_container("db", plain, None)
        .await
        .expect("plain");
    assert_eq!(plain.resource["uniqueKeyPolicy"], json!({"uniqueKeys": []}));
    let invalid = json!({"id": "bad", "partitionKey": {"paths": ["/pk"]}, "uniqueKeyPolicy": {"uniqueKeys": [{"paths": ["/a/*"]}]}});
    let refused = world
        .engine
        .create_container("db", invalid, None)
        .await
        .expect_err("invalid");
    assert_eq!(refused.code, ErrorCode::InvalidUniqueKeyPolicy);
    let replace = |policy: Option<Value>| {
        let mut body = json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 60});
        if let Some(policy) = policy {
            body["uniqueKeyPolicy"] = policy;
        }
        world.engine.replace_container("db", "c", body, None)
    };
    for changed in [
        None,
        Some(json!({"uniqueKeys": []})),
        Some(json!({"uniqueKeys": [{"paths": ["/name"]}]})),
    ] {
        let refused = replace(changed).await.expect_err("changed");
        assert_eq!(refused.code, ErrorCode::UniqueKeyPolicyChanged);
    }
    let replaced = replace(Some(json!({"uniqueKeys": [{"paths": ["/email"]}]})))
        .await
        .expect("same policy");
    assert_eq!(replaced.resource["defaultTtl"], json!(60));
    // Items written since still meet the key.
    world
        .create(json!({"id": "a", "pk": "p", "email": "x"}))
        .await
        .expect("a");
    assert_eq!(
        world
            .create(json!({"id": "b", "pk": "p", "email": "x"}))
            .await,
        CONFLICT
    );
}
