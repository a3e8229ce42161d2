//! Time to live on every access path, with the injected clock: for each cell of the spec's
//! matrix, an item is visible on every path 1 ms before its expiry instant and absent on every
//! path at it, whether or not the sweeper has run.

use crate::common::{page, pk, resolved};
use lethedb_engine::RangeFilter;

use lethedb_engine::{Engine, EngineError, ErrorCode, ManualClock, QueryRequest, WriteMode};
use serde_json::{json, Value};
use std::sync::Arc;

const START_MS: i64 = 1_800_000_000_500;

fn engine() -> (Engine, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(START_MS));
    let engine = Engine::open(
        crate::common::test_store(),
        clock.clone(),
        crate::common::config(),
    )
    .expect("engine");
    (engine, clock)
}

async fn container(engine: &Engine, name: &str, default_ttl: Option<i64>) {
    let _ = engine.create_database(json!({"id": "db"}), None).await;
    let mut body =
        json!({"id": name, "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2}});
    if let Some(ttl) = default_ttl {
        body["defaultTtl"] = json!(ttl);
    }
    engine
        .create_container("db", body, None)
        .await
        .expect("container");
}

async fn put(engine: &Engine, container: &str, id: &str, ttl: Option<i64>) -> String {
    let mut body = json!({"id": id, "pk": "p", "n": 1});
    if let Some(ttl) = ttl {
        body["ttl"] = json!(ttl);
    }
    let outcome = engine
        .write_item(
            &resolved(engine, container),
            WriteMode::Create,
            pk("p"),
            body,
            None,
        )
        .await
        .expect("create");
    outcome.item.etag()
}

/// Runs `text` on the container's one range, as the SDKs run a query whose aggregates or order
/// their pipeline combines.
async fn query(engine: &Engine, container: &str, text: &str, id: &str) -> Vec<Value> {
    let found = engine.read_container("db", container).expect("container");
    let request = QueryRequest {
        text: text.into(),
        parameters: vec![("@id".into(), json!(id))],
        range_id: Some("0".into()),
        page_items_max: Some(1000),
        ..QueryRequest::default()
    };
    page(engine.query_items(&found, &request).await.expect("query")).items
}

/// Checks every read-only path agrees that `id` is (or is not) there.
async fn check_reads(engine: &Engine, container: &str, id: &str, visible: bool) {
    let found = engine.read_container("db", container).expect("container");
    let read = engine.read_item(&found, pk("p"), id);
    assert_eq!(read.is_ok(), visible, "point read of {id}");
    if !visible {
        assert!(matches!(
            read,
            Err(EngineError {
                code: ErrorCode::ItemNotFound,
                ..
            })
        ));
    }
    let feed = engine
        .read_feed(&found, None, RangeFilter::everything(), 1000, None)
        .await
        .expect("feed");
    let in_feed = feed
        .items
        .iter()
        .any(|item| item.to_value().expect("value")["id"] == json!(id));
    assert_eq!(in_feed, visible, "read feed of {id}");
    let partition_feed = engine
        .read_feed(&found, pk("p"), RangeFilter::everything(), 1000, None)
        .await
        .expect("feed");
    let in_partition_feed = partition_feed
        .items
        .iter()
        .any(|item| item.to_value().expect("value")["id"] == json!(id));
    assert_eq!(in_partition_feed, visible, "partition read feed of {id}");
    let expected = usize::from(visible);
    assert_eq!(
        query(engine, container, "SELECT * FROM c WHERE c.id = @id", id)
            .await
            .len(),
        expected,
        "filter {id}"
    );
    assert_eq!(
        query(
            engine,
            container,
            "SELECT VALUE COUNT(1) FROM c WHERE c.id = @id",
            id
        )
        .await,
        vec![json!(expected)],
        "count {id}"
    );
    let ordered = query(
        engine,
        container,
        "SELECT c.id FROM c ORDER BY c.n DESC",
        id,
    )
    .await;
    assert_eq!(
        ordered.contains(&json!({"id": id})),
        visible,
        "order by {id}"
    );
    let grouped = query(
        engine,
        container,
        "SELECT c.pk, COUNT(1) AS n FROM c WHERE c.id = @id GROUP BY c.pk",
        id,
    )
    .await;
    assert_eq!(grouped.len(), expected, "group by {id}");
}

/// Checks every writing path on its own copy of the item (ids `{id}-replace` and so on).
async fn check_writes(
    engine: &Engine,
    name: &str,
    id: &str,
    etag_by_copy: &[(String, String)],
    visible: bool,
) {
    let etag = |copy: &str| {
        etag_by_copy
            .iter()
            .find(|(c, _)| c == copy)
            .map(|(_, e)| e.clone())
            .expect("etag")
    };
    let container = resolved(engine, name);
    let body = |copy: &str| json!({"id": format!("{id}-{copy}"), "pk": "p", "n": 2});
    let replace = engine
        .write_item(
            &container,
            WriteMode::Replace(format!("{id}-replace")),
            pk("p"),
            body("replace"),
            None,
        )
        .await;
    assert_eq!(replace.is_ok(), visible, "replace {id}");
    let delete = engine
        .delete_item(&container, pk("p"), &format!("{id}-delete"), None)
        .await;
    assert_eq!(delete.is_ok(), visible, "delete {id}");
    let patch = engine
        .patch_item(
            &container,
            pk("p"),
            &format!("{id}-patch"),
            json!({"operations": [{"op": "incr", "path": "/n", "value": 1}]}),
            None,
        )
        .await;
    match (visible, patch) {
        (true, Ok(_))
        | (
            false,
            Err(EngineError {
                code: ErrorCode::ItemNotFound,
                ..
            }),
        ) => {}
        (_, other) => panic!("patch {id} (visible: {visible}): {other:?}"),
    }
    let create = engine
        .write_item(&container, WriteMode::Create, pk("p"), body("create"), None)
        .await;
    match (visible, create) {
        (
            true,
            Err(EngineError {
                code: ErrorCode::ItemIdConflict,
                ..
            }),
        )
        | (false, Ok(_)) => {}
        (_, other) => panic!("create over {id} (visible: {visible}): {other:?}"),
    }
    let upsert = engine
        .write_item(&container, WriteMode::Upsert, pk("p"), body("upsert"), None)
        .await
        .expect("upsert");
    assert_eq!(
        upsert.created, !visible,
        "upsert {id} creates only when the old one expired"
    );
    let if_match = engine
        .write_item(
            &container,
            WriteMode::Upsert,
            pk("p"),
            body("ifmatch"),
            Some(etag("ifmatch")),
        )
        .await;
    // An upsert with If-Match replaces a visible item whose ETag matches and creates one that
    // is gone (expired), as the service's upsert creates a missing item whatever the condition.
    match (visible, if_match) {
        (true, Ok(outcome)) if !outcome.created => {}
        (false, Ok(outcome)) if outcome.created => {}
        (_, other) => panic!("If-Match on {id} (visible: {visible}): {other:?}"),
    }
}

const COPIES: [&str; 6] = ["replace", "delete", "create", "upsert", "ifmatch", "patch"];

/// One matrix cell: the item (with `item_ttl`) in a container (with `default_ttl`) expires
/// after `expires_after_secs`, or never.
async fn check_cell(
    name: &str,
    default_ttl: Option<i64>,
    item_ttl: Option<i64>,
    expires_after_secs: Option<i64>,
) {
    let (engine, clock) = engine();
    container(&engine, name, default_ttl).await;
    // Two sets of the item: one checked 1 ms before the instant, one at it.
    let mut etags = Vec::new();
    for set in ["before", "at"] {
        put(&engine, name, set, item_ttl).await;
        for copy in COPIES {
            let id = format!("{set}-{copy}");
            etags.push((
                set.to_string(),
                copy.to_string(),
                put(&engine, name, &id, item_ttl).await,
            ));
        }
    }
    let etags_of = |set: &str| -> Vec<(String, String)> {
        etags
            .iter()
            .filter(|(s, _, _)| s == set)
            .map(|(_, c, e)| (c.clone(), e.clone()))
            .collect()
    };
    let Some(secs) = expires_after_secs else {
        clock.advance_ms(400 * 86_400_000);
        check_reads(&engine, name, "before", true).await;
        check_writes(&engine, name, "before", &etags_of("before"), true).await;
        return;
    };
    let found = engine.read_container("db", name).expect("container");
    clock.set_ms(START_MS + secs * 1000 - 1);
    assert_eq!(
        engine.container_usage(&found).await.expect("usage").items,
        14,
        "{name}: all counted before"
    );
    check_reads(&engine, name, "before", true).await;
    check_reads(&engine, name, "at", true).await;
    check_writes(&engine, name, "before", &etags_of("before"), true).await;
    clock.set_ms(START_MS + secs * 1000);
    check_reads(&engine, name, "at", false).await;
    // Items of "before" that were rewritten 1 ms ago restarted their countdown.
    let rewritten_survivors = 4; // replace, upsert, ifmatch, patch
    assert_eq!(
        engine.container_usage(&found).await.expect("usage").items,
        rewritten_survivors,
        "{name}: expired not counted"
    );
    check_writes(&engine, name, "at", &etags_of("at"), false).await;
    // The sweeper has not run in any of this; running it changes nothing visible.
    engine.sweep_once(1000).await.expect("sweep");
    check_reads(&engine, name, "at", false).await;
}

#[tokio::test]
async fn matrix_container_off() {
    check_cell("off-absent", None, None, None).await;
    check_cell("off-never", None, Some(-1), None).await;
    check_cell("off-own", None, Some(5), None).await;
}

#[tokio::test]
async fn matrix_container_minus_one() {
    check_cell("never-absent", Some(-1), None, None).await;
    check_cell("never-never", Some(-1), Some(-1), None).await;
    check_cell("never-own", Some(-1), Some(5), Some(5)).await;
}

#[tokio::test]
async fn matrix_container_n() {
    check_cell("ten-absent", Some(10), None, Some(10)).await;
    check_cell("ten-never", Some(10), Some(-1), None).await;
    check_cell("ten-own-shorter", Some(10), Some(5), Some(5)).await;
    check_cell("ten-own-longer", Some(10), Some(15), Some(15)).await;
}

// The seed documents' three example tables (container null / -1 / 1000; item ttl absent ("null"
// in the tables, meaning not set), -1, 2000).

#[tokio::test]
async fn example_1_container_ttl_null() {
    check_cell("ex1-absent", None, None, None).await;
    check_cell("ex1-never", None, Some(-1), None).await;
    check_cell("ex1-2000", None, Some(2000), None).await;
}

#[tokio::test]
async fn example_2_container_ttl_minus_one() {
    check_cell("ex2-absent", Some(-1), None, None).await;
    check_cell("ex2-never", Some(-1), Some(-1), None).await;
    check_cell("ex2-2000", Some(-1), Some(2000), Some(2000)).await;
}

#[tokio::test]
async fn example_3_container_ttl_1000() {
    check_cell("ex3-absent", Some(1000), None, Some(1000)).await;
    check_cell("ex3-never", Some(1000), Some(-1), None).await;
    check_cell("ex3-2000", Some(1000), Some(2000), Some(2000)).await;
}

async fn replace_default(engine: &Engine, name: &str, default_ttl: Option<i64>) {
    let mut body =
        json!({"id": name, "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2}});
    if let Some(ttl) = default_ttl {
        body["defaultTtl"] = json!(ttl);
    }
    engine
        .replace_container("db", name, body, None)
        .await
        .expect("replace");
}

#[tokio::test]
async fn a_new_default_applies_at_once_without_reindexing() {
    let (engine, clock) = engine();
    container(&engine, "c", None).await;
    put(&engine, "c", "old", None).await;
    clock.advance_ms(60_000);
    check_reads(&engine, "c", "old", true).await;
    replace_default(&engine, "c", Some(30)).await;
    check_reads(&engine, "c", "old", false).await;
    put(&engine, "c", "new", None).await;
    clock.advance_ms(29_999);
    check_reads(&engine, "c", "new", true).await;
    clock.advance_ms(1);
    check_reads(&engine, "c", "new", false).await;
}

#[tokio::test]
async fn expiry_is_final_when_ttl_is_turned_off_or_raised() {
    for new_default in [None, Some(-1), Some(100_000)] {
        let (engine, clock) = engine();
        container(&engine, "c", Some(10)).await;
        put(&engine, "c", "expired", None).await;
        put(&engine, "c", "own", Some(5)).await;
        clock.advance_ms(8_000);
        put(&engine, "c", "alive", None).await;
        clock.advance_ms(4_000);
        check_reads(&engine, "c", "expired", false).await;
        check_reads(&engine, "c", "own", false).await;
        replace_default(&engine, "c", new_default).await;
        clock.advance_ms(1_000);
        check_reads(&engine, "c", "expired", false).await;
        check_reads(&engine, "c", "own", false).await;
        // Not expired at the change: follows the new setting from then on.
        clock.advance_ms(60_000);
        check_reads(&engine, "c", "alive", true).await;
        let found = engine.read_container("db", "c").expect("container");
        assert_eq!(
            engine.container_usage(&found).await.expect("usage").items,
            1,
            "{new_default:?}"
        );
    }
}

#[tokio::test]
async fn a_write_restarts_the_countdown() {
    let (engine, clock) = engine();
    container(&engine, "c", Some(10)).await;
    put(&engine, "c", "x", None).await;
    clock.advance_ms(9_000);
    engine
        .write_item(
            &resolved(&engine, "c"),
            WriteMode::Upsert,
            pk("p"),
            // `n` stays defined: ORDER BY c.n leaves out items without it (default policy).
            json!({"id": "x", "pk": "p", "n": 1, "ttl": 5}),
            None,
        )
        .await
        .expect("upsert");
    clock.advance_ms(4_999);
    check_reads(&engine, "c", "x", true).await;
    clock.advance_ms(1);
    check_reads(&engine, "c", "x", false).await;
}

#[tokio::test]
async fn the_server_never_rewrites_ttl() {
    let (engine, _clock) = engine();
    container(&engine, "on", Some(10)).await;
    container(&engine, "off", None).await;
    for (name, ttl) in [
        ("on", json!(5)),
        ("on", json!(-1)),
        ("off", json!("anything")),
        ("off", json!(0)),
        ("off", json!(null)),
    ] {
        let body = json!({"id": "t", "pk": "p", "ttl": ttl});
        let outcome = engine
            .write_item(
                &resolved(&engine, name),
                WriteMode::Upsert,
                pk("p"),
                body,
                None,
            )
            .await
            .expect("write");
        assert_eq!(outcome.item.to_value().expect("value")["ttl"], ttl);
    }
    let outcome = engine
        .write_item(
            &resolved(&engine, "on"),
            WriteMode::Upsert,
            pk("p"),
            json!({"id": "u", "pk": "p"}),
            None,
        )
        .await
        .expect("write");
    assert!(outcome.item.to_value().expect("value").get("ttl").is_none());
}

#[tokio::test]
async fn invalid_item_ttl_is_rejected_only_while_ttl_is_on() {
    let (engine, _clock) = engine();
    container(&engine, "on", Some(-1)).await;
    let on = resolved(&engine, "on");
    for ttl in [
        json!(0),
        json!(null),
        json!(-5),
        json!(1.5),
        json!("5"),
        json!(2_147_483_648_i64),
    ] {
        let body = json!({"id": "bad", "pk": "p", "ttl": ttl});
        let result = engine
            .write_item(&on, WriteMode::Create, pk("p"), body, None)
            .await;
        match result {
            Err(EngineError {
                code: ErrorCode::InvalidTtl,
                message: Some(message),
                ..
            }) => {
                assert!(message.starts_with("The input ttl '"), "{message}");
            }
            other => panic!("ttl {ttl}: {other:?}"),
        }
    }
    let found = engine.read_container("db", "on").expect("container");
    assert_eq!(
        engine.container_usage(&found).await.expect("usage").items,
        0,
        "nothing stored"
    );
}

#[tokio::test]
async fn indexing_mode_none_and_default_ttl_exclude_each_other() {
    let (engine, _clock) = engine();
    engine
        .create_database(json!({"id": "db"}), None)
        .await
        .expect("db");
    let none_with_ttl = json!({"id": "a", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 5, "indexingPolicy": {"indexingMode": "none", "automatic": false}});
    assert!(matches!(
        engine.create_container("db", none_with_ttl, None).await,
        Err(EngineError {
            code: ErrorCode::InvalidTtl,
            ..
        })
    ));
    container(&engine, "b", Some(5)).await;
    let to_none = json!({"id": "b", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 5, "indexingPolicy": {"indexingMode": "none", "automatic": false}});
    assert!(matches!(
        engine.replace_container("db", "b", to_none, None).await,
        Err(EngineError {
            code: ErrorCode::InvalidTtl,
            ..
        })
    ));
    container(&engine, "c", None).await;
    let none = json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "indexingPolicy": {"indexingMode": "none", "automatic": false}});
    engine
        .replace_container("db", "c", none, None)
        .await
        .expect("none without ttl");
    let add_ttl = json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 5, "indexingPolicy": {"indexingMode": "none", "automatic": false}});
    assert!(matches!(
        engine.replace_container("db", "c", add_ttl, None).await,
        Err(EngineError {
            code: ErrorCode::InvalidTtl,
            ..
        })
    ));
}
