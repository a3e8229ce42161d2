//! The feeds of users, stored procedures, triggers, user-defined functions and conflicts are
//! read from the engine's catalog of child resources: empty for a new parent, listing what the
//! catalog holds, and 404 for a parent that does not exist.

use super::*;
use lethedb_engine::{ResourceKind, ResourceParent};

#[tokio::test]
async fn child_feeds_list_what_the_catalog_holds() {
    let mut engine = None;
    let server = Server::with(|state| engine = Some(state.engine.clone()));
    let engine = engine.expect("engine");
    server.setup(partitioned()).await;

    let users = server
        .send("GET", "/dbs/db/users", ("users", "dbs/db"), None, &[])
        .await;
    assert_eq!(users.status, StatusCode::OK);
    let database = engine.read_database("db").expect("database");
    assert_eq!(users.body["_rid"], database["_rid"]);
    assert_eq!(users.body["Users"], json!([]));
    assert_eq!(users.body["_count"], json!(0));

    let container = engine.read_container("db", "c").expect("container");
    for (segment, name) in [
        ("sprocs", "StoredProcedures"),
        ("triggers", "Triggers"),
        ("udfs", "UserDefinedFunctions"),
        ("conflicts", "Conflicts"),
    ] {
        let feed = server
            .send(
                "GET",
                &format!("/dbs/db/colls/c/{segment}"),
                (segment, "dbs/db/colls/c"),
                None,
                &[],
            )
            .await;
        assert_eq!(feed.status, StatusCode::OK, "{segment}");
        assert_eq!(feed.body["_rid"], json!(container.rid()), "{segment}");
        assert_eq!(feed.body[name], json!([]), "{segment}");
    }

    // What the catalog holds is what the feed lists.
    engine
        .create_resource(
            ResourceKind::User,
            ResourceParent::Database {
                database_id: "db".into(),
            },
            json!({"id": "ada"}),
        )
        .await
        .expect("create a user");
    engine
        .create_resource(
            ResourceKind::StoredProcedure,
            ResourceParent::Container {
                database_id: "db".into(),
                container_id: "c".into(),
            },
            json!({"id": "bulk", "body": "function () {}"}),
        )
        .await
        .expect("create a stored procedure");
    let users = server
        .send("GET", "/dbs/db/users", ("users", "dbs/db"), None, &[])
        .await;
    assert_eq!(users.body["_count"], json!(1));
    assert_eq!(users.body["Users"][0]["id"], json!("ada"));
    let sprocs = server
        .send(
            "GET",
            "/dbs/db/colls/c/sprocs",
            ("sprocs", "dbs/db/colls/c"),
            None,
            &[],
        )
        .await;
    assert_eq!(sprocs.body["StoredProcedures"][0]["id"], json!("bulk"));
    assert_eq!(
        sprocs.body["StoredProcedures"][0]["body"],
        json!("function () {}")
    );

    // A feed under a parent that does not exist is a 404, as for any other feed.
    let missing = server
        .send(
            "GET",
            "/dbs/db/colls/nope/sprocs",
            ("sprocs", "dbs/db/colls/nope"),
            None,
            &[],
        )
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let missing = server
        .send("GET", "/dbs/nope/users", ("users", "dbs/nope"), None, &[])
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}
