//! The transaction rules of server-side scripts: all of a script's writes commit or none do
//! (an exception, `abort`, the time budget, a write to another partition), they share one LSN,
//! expired items are invisible to scripts, and a concurrent write between what a script read and
//! its commit never becomes a lost update.

use super::common::{engine_on_store, page, pk, resolved};
use lethedb_engine::{
    Engine, EngineConfig, ErrorCode, ManualClock, ResourceKind, ResourceParent, ScriptLimits,
    TriggeredOperation, TriggeredWrite, WriteMode,
};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

async fn engine(ttl: Option<i64>) -> (Engine, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let mut container = json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}});
    if let Some(ttl) = ttl {
        container["defaultTtl"] = json!(ttl);
    }
    let config = EngineConfig {
        script_limits: ScriptLimits {
            budget: Duration::from_millis(500),
            ..ScriptLimits::default()
        },
        ..crate::common::config()
    };
    let store = crate::common::test_store();
    let engine = engine_on_store(store, Arc::clone(&clock), container, config).await;
    (engine, clock)
}

fn parent() -> ResourceParent {
    ResourceParent::Container {
        database_id: "db".into(),
        container_id: "c".into(),
    }
}

async fn store_script(engine: &Engine, kind: ResourceKind, resource: Value) {
    engine
        .create_resource(kind, parent(), resource)
        .await
        .expect("script stored");
}

async fn sproc(engine: &Engine, id: &str, body: &str) {
    store_script(
        engine,
        ResourceKind::StoredProcedure,
        json!({"id": id, "body": body}),
    )
    .await;
}

async fn execute(
    engine: &Engine,
    id: &str,
    partition: &str,
    arguments: Vec<Value>,
) -> Result<Value, lethedb_engine::EngineError> {
    let container = engine.read_container("db", "c").expect("container");
    engine
        .execute_stored_procedure(&container, id, pk(partition), arguments, false)
        .await
        .map(|response| response.body)
}

async fn ids(engine: &Engine) -> Vec<String> {
    let container = engine.read_container("db", "c").expect("container");
    let feed = engine
        .read_feed(
            &container,
            None,
            lethedb_engine::RangeFilter::everything(),
            1000,
            None,
        )
        .await
        .expect("feed");
    feed.items
        .iter()
        .map(|item| {
            item.to_value().expect("json")["id"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

/// Creates `count` items then throws after them (or not): the script of most tests here.
const CREATE_THEN: &str = r#"function (count, fail) {
    const c = getContext().getCollection();
    let done = 0;
    next();
    function next() {
        if (done === count) {
            if (fail === 'throw') throw new Error(409, 'stop after ' + done);
            if (fail === 'abort') getContext().abort('aborted');
            if (fail === 'loop') while (true) {}
            if (fail === 'elsewhere') { c.createDocument(c.getSelfLink(), {id: 'x', pk: 'other'}, () => {}); return; }
            getContext().getResponse().setBody(done);
            return;
        }
        c.createDocument(c.getSelfLink(), {id: 'i' + done, pk: 'p'}, (err) => { if (err) throw err; done++; next(); });
    }
}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_of_a_script_commits_together_under_one_lsn() {
    let (engine, _) = engine(None).await;
    sproc(&engine, "create", CREATE_THEN).await;
    assert_eq!(
        execute(&engine, "create", "p", vec![json!(5)])
            .await
            .unwrap(),
        json!(5)
    );
    assert_eq!(ids(&engine).await.len(), 5);
    let container = engine.read_container("db", "c").unwrap();
    let lsns: std::collections::HashSet<u64> = (0..5)
        .map(|i| {
            engine
                .read_item(&container, pk("p"), &format!("i{i}"))
                .unwrap()
                .record
                .lsn
        })
        .collect();
    assert_eq!(lsns.len(), 1, "one LSN for the whole script: {lsns:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_that_fails_after_writing_leaves_nothing() {
    let (engine, _) = engine(None).await;
    sproc(&engine, "create", CREATE_THEN).await;
    let thrown = execute(&engine, "create", "p", vec![json!(3), json!("throw")])
        .await
        .unwrap_err();
    assert_eq!(thrown.code, ErrorCode::ScriptFailed);
    assert_eq!(thrown.substatus, Some(409));
    assert!(thrown.to_string().contains("stop after 3"), "{thrown}");
    let aborted = execute(&engine, "create", "p", vec![json!(3), json!("abort")])
        .await
        .unwrap_err();
    assert_eq!(aborted.code, ErrorCode::ScriptFailed);
    let timed_out = execute(&engine, "create", "p", vec![json!(3), json!("loop")])
        .await
        .unwrap_err();
    assert_eq!(timed_out.code, ErrorCode::ScriptTimeout);
    let elsewhere = execute(&engine, "create", "p", vec![json!(3), json!("elsewhere")])
        .await
        .unwrap_err();
    assert_eq!(elsewhere.code, ErrorCode::ScriptFailed);
    assert!(
        elsewhere.to_string().contains("partition key"),
        "{elsewhere}"
    );
    assert!(
        ids(&engine).await.is_empty(),
        "nothing of any failed script stays"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_see_the_partition_and_the_scripts_own_writes_but_no_expired_item() {
    let (engine, clock) = engine(Some(10)).await;
    for (id, partition) in [("a", "p"), ("b", "p"), ("c", "q")] {
        engine
            .write_item(
                &resolved(&engine, "c"),
                WriteMode::Create,
                pk(partition),
                json!({"id": id, "pk": partition}),
                None,
            )
            .await
            .unwrap();
    }
    engine
        .write_item(
            &resolved(&engine, "c"),
            WriteMode::Create,
            pk("p"),
            json!({"id": "short", "pk": "p", "ttl": 1}),
            None,
        )
        .await
        .unwrap();
    clock.advance_ms(1_500);
    let source = r#"function () {
        const c = getContext().getCollection();
        c.createDocument(c.getSelfLink(), {id: 'new', pk: 'p'}, () => {
            c.queryDocuments(c.getSelfLink(), 'SELECT VALUE r.id FROM r', {}, (err, found) => {
                if (err) throw err;
                c.readDocument(c.getAltLink() + '/docs/short', {}, (missing) => {
                    getContext().getResponse().setBody({found: found.sort(), expired: missing.number});
                });
            });
        });
    }"#;
    sproc(&engine, "look", source).await;
    assert_eq!(
        execute(&engine, "look", "p", vec![]).await.unwrap(),
        json!({"found": ["a", "b", "new"], "expired": 404})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_write_between_read_and_commit_is_never_a_lost_update() {
    let (engine, _) = engine(None).await;
    engine
        .write_item(
            &resolved(&engine, "c"),
            WriteMode::Create,
            pk("p"),
            json!({"id": "counter", "pk": "p", "n": 0}),
            None,
        )
        .await
        .unwrap();
    // Reads the counter, spins long enough for the other writer to get in, then writes n + 1.
    let source = r#"function () {
        const c = getContext().getCollection();
        c.readDocument(c.getAltLink() + '/docs/counter', {}, (err, doc) => {
            if (err) throw err;
            const until = Date.now() + 50;
            while (Date.now() < until) {}
            doc.n += 1;
            // Refused past 80 % of the budget (a loaded machine): fail rather than end as a no-op.
            if (!c.replaceDocument(doc._self, doc, {etag: doc._etag}, (err) => { if (err) throw err; })) {
                throw new Error(449, 'not accepted');
            }
        });
    }"#;
    sproc(&engine, "increment", source).await;
    let counter = |engine: &Engine| {
        let container = engine.read_container("db", "c").unwrap();
        engine
            .read_item(&container, pk("p"), "counter")
            .unwrap()
            .to_value()
            .unwrap()
    };
    let increment_directly = |engine: Engine| async move {
        let mut doc = counter(&engine);
        let etag = doc["_etag"].as_str().unwrap().to_string();
        doc["n"] = json!(doc["n"].as_i64().unwrap() + 1);
        engine
            .write_item(
                &resolved(&engine, "c"),
                WriteMode::Replace("counter".into()),
                pk("p"),
                doc,
                Some(etag),
            )
            .await
            .is_ok()
    };
    // One write lands while the script spins: its first attempt cannot commit, its second does.
    let script = {
        let engine = engine.clone();
        tokio::spawn(async move { execute(&engine, "increment", "p", vec![]).await })
    };
    tokio::time::sleep(Duration::from_millis(15)).await;
    assert!(increment_directly(engine.clone()).await);
    script
        .await
        .unwrap()
        .expect("the script is run again and commits");
    assert_eq!(counter(&engine)["n"], json!(2));
    // Under a stream of writes, whatever succeeds is counted exactly once.
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let engine = engine.clone();
        tasks.push(tokio::spawn(async move {
            execute(&engine, "increment", "p", vec![]).await
        }));
    }
    let mut direct = 0;
    for _ in 0..20 {
        if increment_directly(engine.clone()).await {
            direct += 1;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut scripts = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => scripts += 1,
            Err(error) => assert!(
                matches!(
                    error.code,
                    ErrorCode::ScriptConflict | ErrorCode::ScriptFailed
                ),
                "{error}"
            ),
        }
    }
    assert_eq!(counter(&engine)["n"], json!(2 + direct + scripts));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_response_body_carries_the_committed_system_properties() {
    let (engine, _) = engine(None).await;
    let source = r#"function () {
        const c = getContext().getCollection();
        c.createDocument(c.getSelfLink(), {id: 'made', pk: 'p'}, (err, doc) => {
            getContext().getResponse().setBody(doc);
        });
    }"#;
    sproc(&engine, "make", source).await;
    let body = execute(&engine, "make", "p", vec![]).await.unwrap();
    let container = engine.read_container("db", "c").unwrap();
    let stored = engine
        .read_item(&container, pk("p"), "made")
        .unwrap()
        .to_value()
        .unwrap();
    for name in ["_rid", "_self", "_etag", "_ts"] {
        assert_eq!(body[name], stored[name], "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn triggers_run_in_the_writes_transaction() {
    let (engine, _) = engine(None).await;
    let stamp = r#"function () { const r = getContext().getRequest(); const d = r.getBody(); d.stamped = true; r.setBody(d); }"#;
    store_script(
        &engine,
        ResourceKind::Trigger,
        json!({"id": "stamp", "body": stamp, "triggerType": "pre", "triggerOperation": "all"}),
    )
    .await;
    let refuse = r#"function () { if (getContext().getResponse().getBody().bad) throw new Error('refused'); }"#;
    store_script(&engine, ResourceKind::Trigger, json!({"id": "refuse", "body": refuse, "triggerType": "Post", "triggerOperation": "Create"})).await;
    store_script(&engine, ResourceKind::Trigger, json!({"id": "ondelete", "body": stamp, "triggerType": "pre", "triggerOperation": "delete"})).await;
    let container = engine.read_container("db", "c").unwrap();
    let write = |body: Value, pre: &[&str], post: &[&str]| TriggeredWrite {
        operation: TriggeredOperation::Create(body),
        partition_key: pk("p"),
        if_match: None,
        pre_triggers: pre.iter().map(ToString::to_string).collect(),
        post_triggers: post.iter().map(ToString::to_string).collect(),
    };
    let outcome = engine
        .write_item_with_triggers(
            &container,
            write(json!({"id": "a", "pk": "p"}), &["stamp"], &["refuse"]),
        )
        .await
        .unwrap();
    assert!(outcome.created);
    assert_eq!(
        outcome.item.unwrap().to_value().unwrap()["stamped"],
        json!(true)
    );
    let refused = engine
        .write_item_with_triggers(
            &container,
            write(json!({"id": "b", "pk": "p", "bad": true}), &[], &["refuse"]),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::ScriptFailed);
    let wrong = engine
        .write_item_with_triggers(
            &container,
            write(json!({"id": "c", "pk": "p"}), &["ondelete"], &[]),
        )
        .await
        .unwrap_err();
    assert_eq!(wrong.code, ErrorCode::TriggerNotApplicable);
    let wrong_type = engine
        .write_item_with_triggers(
            &container,
            write(json!({"id": "c", "pk": "p"}), &["refuse"], &[]),
        )
        .await
        .unwrap_err();
    assert_eq!(wrong_type.code, ErrorCode::TriggerNotApplicable);
    assert_eq!(ids(&engine).await, vec!["a".to_string()]);
}

async fn query(engine: &Engine, text: &str) -> Result<Vec<Value>, lethedb_engine::EngineError> {
    let container = engine.read_container("db", "c").expect("container");
    let request = lethedb_engine::QueryRequest {
        text: text.into(),
        partition_key: pk("p"),
        page_items_max: Some(1000),
        ..Default::default()
    };
    engine
        .query_items(&container, &request)
        .await
        .map(|outcome| page(outcome).items)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_defined_functions_run_in_projections_filters_and_ordering() {
    let (engine, _) = engine(None).await;
    for (id, income) in [("a", 500), ("b", 20_000), ("c", 8_000)] {
        engine
            .write_item(
                &resolved(&engine, "c"),
                WriteMode::Create,
                pk("p"),
                json!({"id": id, "pk": "p", "income": income}),
                None,
            )
            .await
            .unwrap();
    }
    let tax = "function tax(income) { return income > 1000 ? income * 0.1 : 0; }";
    store_script(
        &engine,
        ResourceKind::UserDefinedFunction,
        json!({"id": "tax", "body": tax}),
    )
    .await;
    store_script(
        &engine,
        ResourceKind::UserDefinedFunction,
        json!({"id": "negate", "body": "function (n) { return -n; }"}),
    )
    .await;
    store_script(
        &engine,
        ResourceKind::UserDefinedFunction,
        json!({"id": "fail", "body": "function () { throw 'no input'; }"}),
    )
    .await;
    assert_eq!(
        query(
            &engine,
            "SELECT c.id, udf.tax(c.income) AS tax FROM c WHERE udf.tax(c.income) > 100"
        )
        .await
        .unwrap(),
        vec![
            json!({"id": "b", "tax": 2000}),
            json!({"id": "c", "tax": 800})
        ]
    );
    assert_eq!(
        query(
            &engine,
            "SELECT VALUE c.id FROM c ORDER BY udf.negate(c.income)"
        )
        .await
        .unwrap(),
        vec![json!("b"), json!("c"), json!("a")]
    );
    let missing = query(&engine, "SELECT VALUE udf.nope(c.income) FROM c")
        .await
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::QuerySemantic, "{missing}");
    let thrown = query(&engine, "SELECT VALUE udf.fail(c.income) FROM c")
        .await
        .unwrap_err();
    assert_eq!(thrown.code, ErrorCode::ScriptFailed, "{thrown}");
    assert!(thrown.to_string().contains("no input"), "{thrown}");
}

#[tokio::test]
async fn a_body_that_does_not_compile_is_stored_and_fails_when_it_runs() {
    let (engine, _) = engine(None).await;
    // As the SDKs' suites store them: a syntax error, prose with line separators, and a
    // method's source without its object.
    let bodies = [
        (
            "broken",
            "function () {\n  var a = 1;\n  a = +;\n}",
            "unexpected token in expression: ';'",
        ),
        (
            "prose",
            "Line Separator (\u{2028}) & Paragraph",
            "Unexpected identifier 'Separator'",
        ),
        (
            "method",
            "serverScript() { var x = 10; }",
            "Unexpected token '{'",
        ),
    ];
    for (id, body, _) in bodies {
        sproc(&engine, id, body).await;
    }
    for (id, _, reason) in bodies {
        let error = execute(&engine, id, "p", vec![])
            .await
            .expect_err("does not compile");
        assert_eq!(error.code, ErrorCode::ScriptFailed, "{id}");
        assert!(
            error
                .to_string()
                .contains(&format!("SyntaxError: {reason}")),
            "{id}: {error}"
        );
    }
    assert!(ids(&engine).await.is_empty(), "nothing written");
}
