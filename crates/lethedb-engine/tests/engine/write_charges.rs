//! Writes are charged by the published model: the documents inserted and deleted by size, and
//! 0.2 RU per index term added or removed, so the same write costs less under a policy that
//! indexes less; a patch costs 0.4 RU more per operation; batches and stored procedures pay for
//! their writes as those would on their own.

use crate::common::*;
use crate::index_build::{build_to_the_end, create, current, document, replace_policy, START_MS};
use lethedb_engine::BatchMode;
use lethedb_engine::{BatchOperation, ManualClock, WriteMode};
use serde_json::json;
use std::sync::Arc;

/// An engine with container `c`, partitioned by `/pk`, under the default policy.
async fn engine_with_c(clock: Arc<ManualClock>) -> lethedb_engine::Engine {
    engine_with_container(
        clock,
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
    )
    .await
}

#[tokio::test]
async fn writes_are_charged_by_size_and_by_the_terms_the_policy_indexes() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine = engine_with_c(clock.clone()).await;
    // id, pk, n, tags, two tag values, o, o/k, o/deep, o/deep/x and _ts: 11 terms.
    assert_eq!(create(&engine, "a", 1).await, 7.15);
    let container = current(&engine);
    // The same second (no new `_ts` term): `n` leaves one value and takes another.
    let mut changed = document("a", 1);
    changed["n"] = json!(2);
    let replaced = engine
        .write_item(
            &container,
            WriteMode::Replace("a".into()),
            pk("p"),
            changed,
            None,
        )
        .await
        .expect("replace");
    assert_eq!(replaced.request_units, 10.3, "twice the size, two terms");
    let patch = json!({"operations": [{"op": "set", "path": "/n", "value": 3},
                                      {"op": "set", "path": "/extra", "value": true}]});
    let patched = engine
        .patch_item(&container, pk("p"), "a", patch, None)
        .await
        .expect("patch");
    // n: one removed and one added; extra: one added; then 0.4 per operation.
    assert_eq!(patched.request_units, 11.3);
    let deleted = engine
        .delete_item(&container, pk("p"), "a", None)
        .await
        .expect("delete");
    assert_eq!(
        deleted.request_units, 7.35,
        "the size and the 12 terms removed"
    );
    // A batch is charged as its operations are on their own.
    let operations = vec![BatchOperation {
        kind: "Create".into(),
        id: None,
        body: Some(document("b", 1)),
        if_match: None,
        partition_key: None,
    }];
    let (entries, _, _) = engine
        .execute_batch(&container, pk("p"), operations, BatchMode::Atomic)
        .await
        .expect("batch");
    assert_eq!(entries[0].as_ref().expect("created").request_units, 7.15);
    // Excluding everything leaves `id` and `_ts`: the same create costs less.
    replace_policy(
        &engine,
        json!({"includedPaths": [], "excludedPaths": [{"path": "/*"}]}),
        None,
    )
    .await;
    build_to_the_end(&engine, 10).await;
    assert_eq!(create(&engine, "c", 1).await, 5.35);
    // A larger document pays for its size.
    let big = json!({"id": "big", "pk": "p", "text": "x".repeat(8 * 1024)});
    let outcome = engine
        .write_item(&current(&engine), WriteMode::Create, pk("p"), big, None)
        .await
        .expect("create");
    assert!(
        outcome.request_units > 7.04 + 0.4,
        "{}",
        outcome.request_units
    );
}

#[tokio::test]
async fn a_stored_procedure_pays_for_the_terms_its_writes_change() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine = engine_with_c(clock.clone()).await;
    let body = "function make(id) { var doc = {id: id, pk: 'p'}; \
        for (var i = 0; i < 100; i++) { doc['f' + i] = i; } \
        __.createDocument(__.getSelfLink(), doc, function (error) { if (error) throw error; }); }";
    let parent = lethedb_engine::ResourceParent::Container {
        database_id: "db".into(),
        container_id: "c".into(),
    };
    engine
        .create_resource(
            lethedb_engine::ResourceKind::StoredProcedure,
            parent,
            json!({"id": "make", "body": body}),
        )
        .await
        .expect("sproc");
    let run = |id: &'static str| {
        let engine = engine.clone();
        async move {
            engine
                .execute_stored_procedure(
                    &current(&engine),
                    "make",
                    pk("p"),
                    vec![json!(id)],
                    false,
                )
                .await
                .expect("execute")
                .request_units
        }
    };
    let indexed = run("a").await;
    replace_policy(
        &engine,
        json!({"includedPaths": [], "excludedPaths": [{"path": "/*"}]}),
        None,
    )
    .await;
    build_to_the_end(&engine, 10).await;
    let excluded = run("b").await;
    // 100 properties more indexed: 20 RU more (the script's running time adds a little noise).
    assert!(indexed - excluded > 10.0, "{indexed} against {excluded}");
    assert!(excluded >= 5.35, "{excluded}");
}

#[tokio::test]
async fn an_unchanged_document_written_again_changes_only_its_ts_entry() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine = engine_with_c(clock.clone()).await;
    assert_eq!(create(&engine, "a", 1).await, 7.15);
    let write_again = |mode: WriteMode| {
        let engine = &engine;
        async move {
            engine
                .write_item(&current(engine), mode, pk("p"), document("a", 1), None)
                .await
                .expect("write")
                .request_units
        }
    };
    // The same second: the same entries, so no term is charged (the size is, twice).
    assert_eq!(write_again(WriteMode::Replace("a".into())).await, 9.9);
    // A later second: the old version's `_ts` entry goes and the new one's comes.
    clock.advance_ms(1_500);
    assert_eq!(write_again(WriteMode::Upsert).await, 10.3);
    let check = engine.check_index(&current(&engine)).await.expect("check");
    assert!(check.is_consistent(), "{check:?}");
}
