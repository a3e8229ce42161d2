//! The generic catalog of child resources: users and permissions under a database, stored
//! procedures, triggers, user-defined functions and conflicts under a container. One set of
//! rules for every kind: ids, system properties, conflicts, replace and rename, upsert, delete
//! with everything beneath, lists for feeds and queries, ids by `_rid`.

use crate::common::engine_with_container;

use base64::Engine as _;
use lethedb_engine::{
    Engine, EngineError, ErrorCode, ManualClock, QueryRequest, ResourceKind, ResourceParent,
};
use serde_json::{json, Value};
use std::sync::Arc;

const NOW_MS: i64 = 1_800_000_000_000;

async fn engine() -> Engine {
    engine_with_container(
        Arc::new(ManualClock::new(NOW_MS)),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
    )
    .await
}

fn database() -> ResourceParent {
    ResourceParent::Database {
        database_id: "db".into(),
    }
}

fn container() -> ResourceParent {
    ResourceParent::Container {
        database_id: "db".into(),
        container_id: "c".into(),
    }
}

fn user(user_id: &str) -> ResourceParent {
    ResourceParent::User {
        database_id: "db".into(),
        user_id: user_id.into(),
    }
}

fn text<'a>(resource: &'a Value, name: &str) -> &'a str {
    resource
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{name} missing from {resource}"))
}

fn rid_bytes(rid: &str) -> usize {
    base64::engine::general_purpose::STANDARD
        .decode(rid.replace('-', "/"))
        .expect("rid is base64")
        .len()
}

/// A valid body of a container child of `kind` with this id: scripts need a `body` that
/// compiles, triggers a type and an operation too.
fn child(kind: ResourceKind, id: &str) -> Value {
    match kind {
        ResourceKind::Trigger => json!({
            "id": id, "body": "function () {}", "triggerType": "Pre", "triggerOperation": "All"
        }),
        ResourceKind::StoredProcedure | ResourceKind::UserDefinedFunction => {
            json!({"id": id, "body": "function () {}"})
        }
        _ => json!({"id": id}),
    }
}

fn ids(resources: &[Value]) -> Vec<&str> {
    let mut ids: Vec<&str> = resources.iter().map(|r| text(r, "id")).collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn a_child_gets_the_services_system_properties() {
    let engine = engine().await;
    let created = engine
        .create_resource(
            ResourceKind::StoredProcedure,
            container(),
            json!({"id": "sp", "body": "function () {}", "_rid": "forged", "_ts": 1}),
        )
        .await
        .expect("create");
    let container_resource = engine
        .read_container("db", "c")
        .expect("container")
        .resource
        .clone();
    let rid = text(&created, "_rid");
    assert_eq!(rid_bytes(rid), 16);
    assert_ne!(rid, "forged");
    assert!(rid.starts_with(&text(&container_resource, "_rid")[..8]));
    assert_eq!(
        text(&created, "_self"),
        format!("{}sprocs/{rid}/", text(&container_resource, "_self"))
    );
    let etag = text(&created, "_etag");
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    assert_eq!(created["_ts"], json!(NOW_MS / 1000));
    assert_eq!(created["body"], json!("function () {}"));
    assert_eq!(
        engine
            .read_resource(ResourceKind::StoredProcedure, &container(), "sp")
            .expect("read"),
        created
    );

    let user = engine
        .create_resource(ResourceKind::User, database(), json!({"id": "alice"}))
        .await
        .expect("user");
    assert_eq!(rid_bytes(text(&user, "_rid")), 8);
    assert_eq!(user["_permissions"], json!("permissions/"));
    let database_resource = engine.read_database("db").expect("database");
    assert_eq!(
        text(&user, "_self"),
        format!(
            "{}users/{}/",
            text(&database_resource, "_self"),
            text(&user, "_rid")
        )
    );
    let permission = engine
        .create_resource(
            ResourceKind::Permission,
            ResourceParent::User {
                database_id: "db".into(),
                user_id: "alice".into(),
            },
            json!({"id": "read", "permissionMode": "Read", "resource": "dbs/db/colls/c"}),
        )
        .await
        .expect("permission");
    assert_eq!(rid_bytes(text(&permission, "_rid")), 16);
    assert_eq!(
        text(&permission, "_self"),
        format!(
            "{}permissions/{}/",
            text(&user, "_self"),
            text(&permission, "_rid")
        )
    );
}

#[tokio::test]
async fn ids_follow_the_shared_rules() {
    let engine = engine().await;
    let create = |body: Value| engine.create_resource(ResourceKind::Trigger, container(), body);
    create(child(ResourceKind::Trigger, "t"))
        .await
        .expect("create");
    assert!(matches!(
        create(child(ResourceKind::Trigger, "t")).await,
        Err(EngineError {
            code: ErrorCode::ResourceIdConflict,
            ..
        })
    ));
    for bad in [
        json!({"id": "a/b"}),
        json!({"id": ""}),
        json!({"no": "id"}),
        json!([1]),
    ] {
        assert!(
            matches!(
                create(bad.clone()).await,
                Err(EngineError {
                    code: ErrorCode::InvalidId | ErrorCode::InvalidDocument,
                    ..
                })
            ),
            "{bad} should be refused"
        );
    }
    // Kinds do not share ids: a trigger and a function may both be called `t`.
    engine
        .create_resource(
            ResourceKind::UserDefinedFunction,
            container(),
            child(ResourceKind::UserDefinedFunction, "t"),
        )
        .await
        .expect("a function with a trigger's id");
    // A kind addressed under the wrong parent is refused, a missing parent is not found.
    assert!(matches!(
        engine
            .create_resource(ResourceKind::User, container(), json!({"id": "u"}))
            .await,
        Err(EngineError {
            code: ErrorCode::InvalidResourcePath,
            ..
        })
    ));
    let missing = ResourceParent::Container {
        database_id: "db".into(),
        container_id: "nope".into(),
    };
    assert!(matches!(
        engine
            .create_resource(
                ResourceKind::Trigger,
                missing.clone(),
                child(ResourceKind::Trigger, "t")
            )
            .await,
        Err(EngineError {
            code: ErrorCode::ContainerNotFound,
            ..
        })
    ));
    assert!(matches!(
        engine.list_resources(ResourceKind::Trigger, &missing).await,
        Err(EngineError {
            code: ErrorCode::ContainerNotFound,
            ..
        })
    ));
}

#[tokio::test]
async fn replace_upsert_and_delete() {
    let clock = Arc::new(ManualClock::new(NOW_MS));
    let engine = engine_with_container(
        Arc::clone(&clock),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
    )
    .await;
    let kind = ResourceKind::UserDefinedFunction;
    let created = engine
        .create_resource(kind, container(), json!({"id": "f", "body": "1"}))
        .await
        .expect("create");
    clock.advance_ms(5_000);
    let replaced = engine
        .replace_resource(
            kind,
            container(),
            "f",
            json!({"id": "f", "body": "2"}),
            None,
        )
        .await
        .expect("replace");
    assert_eq!(replaced["body"], json!("2"));
    assert_eq!(replaced["_rid"], created["_rid"]);
    assert_eq!(replaced["_self"], created["_self"]);
    assert_ne!(replaced["_etag"], created["_etag"]);
    assert_eq!(replaced["_ts"], json!(NOW_MS / 1000 + 5));
    // A stale ETag fails; the current one passes.
    let stale = Some(text(&created, "_etag").to_string());
    assert!(matches!(
        engine
            .replace_resource(kind, container(), "f", child(kind, "f"), stale)
            .await,
        Err(EngineError {
            code: ErrorCode::PreconditionFailed,
            ..
        })
    ));
    // Functions cannot be renamed by a replace; a missing one is not found.
    assert!(matches!(
        engine
            .replace_resource(kind, container(), "f", child(kind, "g"), None)
            .await,
        Err(EngineError {
            code: ErrorCode::IdMismatch,
            ..
        })
    ));
    assert!(matches!(
        engine
            .replace_resource(kind, container(), "h", child(kind, "h"), None)
            .await,
        Err(EngineError {
            code: ErrorCode::ResourceNotFound,
            ..
        })
    ));

    let (upserted, created_now) = engine
        .upsert_resource(kind, container(), json!({"id": "f", "body": "3"}))
        .await
        .expect("upsert existing");
    assert!(!created_now);
    assert_eq!(upserted["body"], json!("3"));
    assert_eq!(upserted["_rid"], created["_rid"]);
    let (fresh, created_now) = engine
        .upsert_resource(kind, container(), json!({"id": "g", "body": "4"}))
        .await
        .expect("upsert new");
    assert!(created_now);
    assert_ne!(fresh["_rid"], created["_rid"]);

    engine
        .delete_resource(kind, container(), "f", None)
        .await
        .expect("delete");
    assert!(matches!(
        engine.read_resource(kind, &container(), "f"),
        Err(EngineError {
            code: ErrorCode::ResourceNotFound,
            ..
        })
    ));
    assert!(matches!(
        engine.delete_resource(kind, container(), "f", None).await,
        Err(EngineError {
            code: ErrorCode::ResourceNotFound,
            ..
        })
    ));
    let left = engine
        .list_resources(kind, &container())
        .await
        .expect("list");
    assert_eq!(ids(&left), ["g"]);
}

#[tokio::test]
async fn a_user_renamed_keeps_its_rid_and_its_permissions() {
    let engine = engine().await;
    let alice = engine
        .create_resource(ResourceKind::User, database(), json!({"id": "alice"}))
        .await
        .expect("user");
    engine
        .create_resource(ResourceKind::User, database(), json!({"id": "bob"}))
        .await
        .expect("user");
    engine
        .create_resource(ResourceKind::Permission, user("alice"), json!({"id": "p"}))
        .await
        .expect("permission");
    assert!(matches!(
        engine
            .replace_resource(
                ResourceKind::User,
                database(),
                "alice",
                json!({"id": "bob"}),
                None
            )
            .await,
        Err(EngineError {
            code: ErrorCode::ResourceIdConflict,
            ..
        })
    ));
    let renamed = engine
        .replace_resource(
            ResourceKind::User,
            database(),
            "alice",
            json!({"id": "carol"}),
            None,
        )
        .await
        .expect("rename");
    assert_eq!(renamed["_rid"], alice["_rid"]);
    assert!(matches!(
        engine.read_resource(ResourceKind::User, &database(), "alice"),
        Err(EngineError {
            code: ErrorCode::ResourceNotFound,
            ..
        })
    ));
    let users = engine
        .list_resources(ResourceKind::User, &database())
        .await
        .expect("users");
    assert_eq!(ids(&users), ["bob", "carol"]);
    let moved = engine
        .list_resources(ResourceKind::Permission, &user("carol"))
        .await
        .expect("permissions");
    assert_eq!(ids(&moved), ["p"]);
    assert!(matches!(
        engine
            .list_resources(ResourceKind::Permission, &user("alice"))
            .await,
        Err(EngineError {
            code: ErrorCode::ResourceNotFound,
            ..
        })
    ));
    // Deleting a user deletes its permissions.
    engine
        .delete_resource(ResourceKind::User, database(), "carol", None)
        .await
        .expect("delete user");
    engine
        .create_resource(ResourceKind::User, database(), json!({"id": "carol"}))
        .await
        .expect("user again");
    assert_eq!(
        engine
            .list_resources(ResourceKind::Permission, &user("carol"))
            .await
            .expect("permissions"),
        Vec::<Value>::new()
    );
}

#[tokio::test]
async fn lists_feed_queries_and_find_ids_by_rid() {
    let engine = engine().await;
    let kind = ResourceKind::StoredProcedure;
    assert_eq!(
        engine
            .list_resources(kind, &container())
            .await
            .expect("empty"),
        Vec::<Value>::new()
    );
    let mut rids = Vec::new();
    for id in ["a", "b", "c"] {
        let created = engine
            .create_resource(
                kind,
                container(),
                json!({"id": id, "n": id, "body": "function () {}"}),
            )
            .await
            .expect("create");
        rids.push(text(&created, "_rid").to_string());
    }
    let listed = engine
        .list_resources(kind, &container())
        .await
        .expect("list");
    assert_eq!(ids(&listed), ["a", "b", "c"]);
    let page = engine
        .query_resources(
            &listed,
            &QueryRequest {
                text: "SELECT VALUE r.id FROM r WHERE r.n != 'b'".into(),
                ..QueryRequest::default()
            },
        )
        .await
        .expect("query");
    assert_eq!(page.items, vec![json!("a"), json!("c")]);
    assert_eq!(
        engine
            .resource_id_by_rid(kind, &container(), &rids[1])
            .await
            .expect("by rid"),
        Some("b".to_string())
    );
    // A rid of another kind, or not a rid at all, finds nothing.
    assert_eq!(
        engine
            .resource_id_by_rid(ResourceKind::Trigger, &container(), &rids[1])
            .await
            .expect("by rid"),
        None
    );
    assert_eq!(
        engine
            .resource_id_by_rid(kind, &container(), "not a rid")
            .await
            .expect("by rid"),
        None
    );
    let user = engine
        .create_resource(ResourceKind::User, database(), json!({"id": "u"}))
        .await
        .expect("user");
    assert_eq!(
        engine
            .resource_id_by_rid(ResourceKind::User, &database(), text(&user, "_rid"))
            .await
            .expect("by rid"),
        Some("u".to_string())
    );
}

#[tokio::test]
async fn deleting_a_parent_deletes_its_children() {
    let engine = engine().await;
    let container_kinds = [
        ResourceKind::StoredProcedure,
        ResourceKind::Trigger,
        ResourceKind::UserDefinedFunction,
        ResourceKind::Conflict,
    ];
    for kind in container_kinds {
        engine
            .create_resource(kind, container(), child(kind, "x"))
            .await
            .expect("child");
    }
    engine
        .create_resource(ResourceKind::User, database(), json!({"id": "u"}))
        .await
        .expect("user");
    engine
        .create_resource(ResourceKind::Permission, user("u"), json!({"id": "p"}))
        .await
        .expect("permission");

    // A container's delete takes its children and leaves the database's users alone.
    engine
        .delete_container("db", "c")
        .await
        .expect("delete container");
    engine
        .create_container(
            "db",
            json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
            None,
        )
        .await
        .expect("container again");
    for kind in container_kinds {
        assert_eq!(
            engine
                .list_resources(kind, &container())
                .await
                .expect("list"),
            Vec::<Value>::new(),
            "{kind:?} survived its container"
        );
    }
    assert_eq!(
        ids(&engine
            .list_resources(ResourceKind::User, &database())
            .await
            .expect("users")),
        ["u"]
    );

    // A database's delete takes its users, their permissions and its containers' children.
    engine
        .create_resource(
            ResourceKind::Trigger,
            container(),
            child(ResourceKind::Trigger, "x"),
        )
        .await
        .expect("trigger");
    engine.delete_database("db").await.expect("delete database");
    assert!(matches!(
        engine.list_resources(ResourceKind::User, &database()).await,
        Err(EngineError {
            code: ErrorCode::DatabaseNotFound,
            ..
        })
    ));
    engine
        .create_database(json!({"id": "db"}), None)
        .await
        .expect("database again");
    engine
        .create_container(
            "db",
            json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
            None,
        )
        .await
        .expect("container again");
    engine
        .create_resource(ResourceKind::User, database(), json!({"id": "u"}))
        .await
        .expect("user again");
    assert_eq!(
        ids(&engine
            .list_resources(ResourceKind::User, &database())
            .await
            .expect("users")),
        ["u"]
    );
    assert_eq!(
        engine
            .list_resources(ResourceKind::Permission, &user("u"))
            .await
            .expect("permissions"),
        Vec::<Value>::new()
    );
    assert_eq!(
        engine
            .list_resources(ResourceKind::Trigger, &container())
            .await
            .expect("triggers"),
        Vec::<Value>::new()
    );
}
