//! Script resources in the generic catalog: a stored procedure's, trigger's or user-defined
//! function's body is checked on create, replace and upsert (a `body` string that compiles, a
//! trigger's type and operation), stored as sent, and looked up by what it is for the code that
//! runs scripts (`read_script`, `list_udfs`).

use crate::common::engine_with_container;

use lethedb_engine::{
    Engine, EngineError, ErrorCode, ManualClock, ResourceKind, ResourceParent, ScriptResource,
    TriggerOperation, TriggerType,
};
use serde_json::json;
use std::sync::Arc;

async fn engine() -> Engine {
    engine_with_container(
        Arc::new(ManualClock::new(1_800_000_000_000)),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
    )
    .await
}

fn container() -> ResourceParent {
    ResourceParent::Container {
        database_id: "db".into(),
        container_id: "c".into(),
    }
}

fn code_of<T: std::fmt::Debug>(result: Result<T, EngineError>) -> (ErrorCode, String) {
    let error = result.expect_err("refused");
    (error.code, error.to_string())
}

#[tokio::test]
async fn every_write_of_a_script_needs_a_body_and_stores_it_as_sent() {
    let engine = engine().await;
    // A body that does not compile is stored, as the service stores it; it fails when it runs
    // (tests/engine/scripts.rs).
    let broken = json!({"id": "s", "body": "function () {\n  var a = 1;\n  a = +;\n}"});
    for kind in [
        ResourceKind::StoredProcedure,
        ResourceKind::UserDefinedFunction,
    ] {
        let (code, _) = code_of(
            engine
                .create_resource(kind, container(), json!({"id": "s"}))
                .await,
        );
        assert_eq!(code, ErrorCode::InvalidDocument, "{kind:?}");
        engine
            .create_resource(kind, container(), broken.clone())
            .await
            .expect("stored as sent");
        engine
            .replace_resource(
                kind,
                container(),
                "s",
                json!({"id": "s", "body": "function () {}"}),
                None,
            )
            .await
            .expect("replaced");
        let (code, _) = code_of(
            engine
                .replace_resource(kind, container(), "s", json!({"id": "s"}), None)
                .await,
        );
        assert_eq!(code, ErrorCode::InvalidDocument, "replace {kind:?}");
        let (code, _) = code_of(
            engine
                .upsert_resource(kind, container(), json!({"id": "s", "body": 7}))
                .await,
        );
        assert_eq!(code, ErrorCode::InvalidDocument, "upsert {kind:?}");
        // Nothing refused was stored.
        assert_eq!(
            engine.read_resource(kind, &container(), "s").expect("kept")["body"],
            json!("function () {}")
        );
        engine
            .upsert_resource(kind, container(), broken.clone())
            .await
            .expect("upserted as sent");
        assert_eq!(
            engine.read_resource(kind, &container(), "s").expect("kept")["body"],
            broken["body"]
        );
    }
    let (code, _) = code_of(
        engine
            .create_resource(
                ResourceKind::Trigger,
                container(),
                json!({"id": "t", "body": "function () {}", "triggerType": "Pre"}),
            )
            .await,
    );
    assert_eq!(code, ErrorCode::InvalidDocument);
}

#[tokio::test]
async fn scripts_are_stored_as_sent_and_read_by_what_they_are() {
    let engine = engine().await;
    let created = engine
        .create_resource(
            ResourceKind::Trigger,
            container(),
            json!({"id": "t", "body": "function () {}", "triggerType": "pre", "triggerOperation": "Insert"}),
        )
        .await
        .expect("trigger");
    assert_eq!(created["triggerType"], json!("pre"));
    assert_eq!(created["triggerOperation"], json!("Insert"));
    assert_eq!(
        engine
            .read_script(ResourceKind::Trigger, "db", "c", "t")
            .expect("read"),
        ScriptResource {
            id: "t".into(),
            body: "function () {}".into(),
            trigger_type: Some(TriggerType::Pre),
            trigger_operation: Some(TriggerOperation::Create),
        }
    );
    assert!(matches!(
        engine.read_script(ResourceKind::StoredProcedure, "db", "c", "t"),
        Err(EngineError {
            code: ErrorCode::ResourceNotFound,
            ..
        })
    ));

    assert_eq!(engine.list_udfs("db", "c").await.expect("none"), Vec::new());
    for (id, body) in [
        ("triple", "function (x) { return 3 * x; }"),
        ("double", "function (x) { return 2 * x; }"),
    ] {
        engine
            .create_resource(
                ResourceKind::UserDefinedFunction,
                container(),
                json!({"id": id, "body": body}),
            )
            .await
            .expect("udf");
    }
    assert_eq!(
        engine.list_udfs("db", "c").await.expect("udfs"),
        vec![
            (
                "double".to_string(),
                "function (x) { return 2 * x; }".to_string()
            ),
            (
                "triple".to_string(),
                "function (x) { return 3 * x; }".to_string()
            ),
        ]
    );
    let udf = engine
        .read_script(ResourceKind::UserDefinedFunction, "db", "c", "triple")
        .expect("udf");
    assert_eq!((udf.trigger_type, udf.trigger_operation), (None, None));
    assert!(matches!(
        engine.list_udfs("db", "nope").await,
        Err(EngineError {
            code: ErrorCode::ContainerNotFound,
            ..
        })
    ));
}
