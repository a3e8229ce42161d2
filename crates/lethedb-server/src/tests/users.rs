//! Users and permissions over HTTP: create, read, replace (a user's id may change), upsert,
//! delete, read feed and query; a permission's body rules, one permission per user and
//! resource, a fresh `_token` on every GET, PUT and POST, and what deleting a user or a
//! database takes with it.

use super::*;

async fn create_user(server: &Server, id: &str) -> Answer {
    server
        .send(
            "POST",
            "/dbs/db/users",
            ("users", "dbs/db"),
            Some(json!({"id": id})),
            &[],
        )
        .await
}

async fn create_permission(server: &Server, user: &str, body: Value) -> Answer {
    server
        .send(
            "POST",
            &format!("/dbs/db/users/{user}/permissions"),
            ("permissions", &format!("dbs/db/users/{user}")),
            Some(body),
            &[],
        )
        .await
}

#[tokio::test]
async fn users_have_the_service_crud_and_system_properties() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let created = create_user(&server, "ada").await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["_permissions"], json!("permissions/"));
    for name in ["_rid", "_self", "_etag", "_ts"] {
        assert!(created.body.get(name).is_some(), "{name}");
    }
    assert_eq!(
        create_user(&server, "ada").await.status,
        StatusCode::CONFLICT
    );

    let read = server
        .send(
            "GET",
            "/dbs/db/users/ada",
            ("users", "dbs/db/users/ada"),
            None,
            &[],
        )
        .await;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(read.body["_rid"], created.body["_rid"]);

    // A replace may rename; the rid stays.
    let renamed = server
        .send(
            "PUT",
            "/dbs/db/users/ada",
            ("users", "dbs/db/users/ada"),
            Some(json!({"id": "grace"})),
            &[],
        )
        .await;
    assert_eq!(renamed.status, StatusCode::OK, "{}", renamed.body);
    assert_eq!(renamed.body["id"], json!("grace"));
    assert_eq!(renamed.body["_rid"], created.body["_rid"]);
    let gone = server
        .send(
            "GET",
            "/dbs/db/users/ada",
            ("users", "dbs/db/users/ada"),
            None,
            &[],
        )
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);

    let upsert = |id: &'static str| {
        server.send(
            "POST",
            "/dbs/db/users",
            ("users", "dbs/db"),
            Some(json!({"id": id})),
            &[("x-ms-documentdb-is-upsert", "True")],
        )
    };
    assert_eq!(upsert("grace").await.status, StatusCode::OK);
    assert_eq!(upsert("linus").await.status, StatusCode::CREATED);

    let feed = server
        .send("GET", "/dbs/db/users", ("users", "dbs/db"), None, &[])
        .await;
    assert_eq!(feed.body["_count"], json!(2));
    let query = server
        .send(
            "POST",
            "/dbs/db/users",
            ("users", "dbs/db"),
            Some(json!({"query": "SELECT * FROM root r WHERE r.id = @id", "parameters": [{"name": "@id", "value": "linus"}]})),
            &[("x-ms-documentdb-isquery", "True"), ("content-type", "application/query+json")],
        )
        .await;
    assert_eq!(query.status, StatusCode::OK, "{}", query.body);
    assert_eq!(query.body["Users"][0]["id"], json!("linus"));

    let deleted = server
        .send(
            "DELETE",
            "/dbs/db/users/linus",
            ("users", "dbs/db/users/linus"),
            None,
            &[],
        )
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let missing = create_user(&server, "x").await;
    assert_eq!(missing.status, StatusCode::CREATED);
}

#[tokio::test]
async fn permissions_check_their_body_and_carry_a_fresh_token() {
    let server = Server::new();
    server.setup(partitioned()).await;
    create_user(&server, "ada").await;
    let body = json!({"id": "p", "permissionMode": "Read", "resource": "dbs/db/colls/c"});
    let created = create_permission(&server, "ada", body.clone()).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let token = created.body["_token"].as_str().expect("token").to_string();
    assert!(token.starts_with("type=resource&ver=1&sig="), "{token}");

    // One permission per user and resource.
    let twice = create_permission(
        &server,
        "ada",
        json!({"id": "q", "permissionMode": "All", "resource": "dbs/db/colls/c"}),
    )
    .await;
    assert_eq!(twice.status, StatusCode::CONFLICT, "{}", twice.body);
    // The same container by its `_self` link is the same resource.
    let container = server
        .send(
            "GET",
            "/dbs/db/colls/c",
            ("colls", "dbs/db/colls/c"),
            None,
            &[],
        )
        .await;
    let by_rid = create_permission(
        &server,
        "ada",
        json!({"id": "q", "permissionMode": "All", "resource": container.body["_self"]}),
    )
    .await;
    assert_eq!(by_rid.status, StatusCode::CONFLICT, "{}", by_rid.body);
    // A user and a permission addressed by their `_self` links.
    let permission_self = created.body["_self"].as_str().expect("self").to_string();
    let rid = permission_self
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .expect("rid")
        .to_lowercase();
    let by_self = server
        .send(
            "GET",
            &format!("/{permission_self}"),
            ("permissions", &rid),
            None,
            &[],
        )
        .await;
    assert_eq!(by_self.status, StatusCode::OK, "{}", by_self.body);
    assert_eq!(by_self.body["id"], json!("p"));
    // The resource need not exist, and may be a rid link.
    let rid_link = create_permission(&server, "ada", json!({"id": "r", "permissionMode": "All", "resource": "dbs/AQAAAA==/colls/AQAAAJ0fgTc=", "resourcePartitionKey": [1]})).await;
    assert_eq!(rid_link.status, StatusCode::CREATED, "{}", rid_link.body);
    // The JS SDK sends the mode in lower case; the service echoes it as sent.
    let lower = create_permission(
        &server,
        "ada",
        json!({"id": "l", "permissionMode": "read", "resource": "dbs/db/colls/l"}),
    )
    .await;
    assert_eq!(
        lower.body["permissionMode"],
        json!("read"),
        "{}",
        lower.body
    );
    for bad in [
        json!({"id": "b", "resource": "dbs/db/colls/x"}),
        json!({"id": "b", "permissionMode": "Write", "resource": "dbs/db/colls/x"}),
        json!({"id": "b", "permissionMode": "All"}),
    ] {
        let refused = create_permission(&server, "ada", bad.clone()).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{bad}");
    }

    // Every GET answers with a fresh token (a later expiry).
    server.clock.advance_ms(2000);
    let read = server
        .send(
            "GET",
            "/dbs/db/users/ada/permissions/p",
            ("permissions", "dbs/db/users/ada/permissions/p"),
            None,
            &[],
        )
        .await;
    assert_eq!(read.status, StatusCode::OK);
    assert_ne!(read.body["_token"].as_str(), Some(token.as_str()));
    let feed = server
        .send(
            "GET",
            "/dbs/db/users/ada/permissions",
            ("permissions", "dbs/db/users/ada"),
            None,
            &[],
        )
        .await;
    assert_eq!(feed.body["_count"], json!(3));
    assert!(feed.body["Permissions"][0]["_token"].is_string());

    // The lifetime header: at most 18,000 seconds.
    let too_long = server
        .send(
            "GET",
            "/dbs/db/users/ada/permissions/p",
            ("permissions", "dbs/db/users/ada/permissions/p"),
            None,
            &[("x-ms-documentdb-expiry-seconds", "18001")],
        )
        .await;
    assert_eq!(too_long.status, StatusCode::BAD_REQUEST);

    // Deleting the user deletes its permissions; deleting the database its users.
    server
        .send(
            "DELETE",
            "/dbs/db/users/ada",
            ("users", "dbs/db/users/ada"),
            None,
            &[],
        )
        .await;
    create_user(&server, "ada").await;
    let after = server
        .send(
            "GET",
            "/dbs/db/users/ada/permissions",
            ("permissions", "dbs/db/users/ada"),
            None,
            &[],
        )
        .await;
    assert_eq!(after.body["_count"], json!(0));
    server
        .send("DELETE", "/dbs/db", ("dbs", "dbs/db"), None, &[])
        .await;
    server
        .send("POST", "/dbs", ("dbs", ""), Some(json!({"id": "db"})), &[])
        .await;
    let users = server
        .send("GET", "/dbs/db/users", ("users", "dbs/db"), None, &[])
        .await;
    assert_eq!(users.body["_count"], json!(0));
}

#[tokio::test]
async fn conflicts_are_an_empty_feed_and_a_404_by_id() {
    let server = Server::new();
    server.setup(partitioned()).await;
    async fn query_conflicts(server: &Server, scope: (&str, &str)) -> Answer {
        let headers = [
            ("x-ms-documentdb-isquery", "True"),
            ("content-type", "application/query+json"),
            scope,
        ];
        server
            .send(
                "POST",
                "/dbs/db/colls/c/conflicts",
                ("conflicts", "dbs/db/colls/c"),
                Some(json!({"query": "SELECT * FROM root"})),
                &headers,
            )
            .await
    }
    let query = |scope| query_conflicts(&server, scope);
    let across = query(("x-ms-documentdb-query-enablecrosspartition", "True")).await;
    assert_eq!(across.status, StatusCode::OK, "{}", across.body);
    assert_eq!(across.body["Conflicts"], json!([]));
    let keyed = query(("x-ms-documentdb-partitionkey", r#"["p"]"#)).await;
    assert_eq!(keyed.status, StatusCode::OK, "{}", keyed.body);
    // Neither a key nor consent to read across partitions: the service's 400.
    let unscoped = query(("x-ms-consistency-level", "Session")).await;
    check_error(
        &unscoped,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Cross partition query is required",
    );
    let one = server
        .send(
            "GET",
            "/dbs/db/colls/c/conflicts/x",
            ("conflicts", "dbs/db/colls/c/conflicts/x"),
            None,
            &[],
        )
        .await;
    assert_eq!(one.status, StatusCode::NOT_FOUND);
    let no_container = server
        .send(
            "GET",
            "/dbs/db/colls/nope/conflicts/x",
            ("conflicts", "dbs/db/colls/nope/conflicts/x"),
            None,
            &[],
        )
        .await;
    assert_eq!(no_container.status, StatusCode::NOT_FOUND);
}
