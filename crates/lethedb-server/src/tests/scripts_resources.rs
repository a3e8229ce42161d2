//! Stored procedures, triggers and user-defined functions as REST resources: create (201),
//! upsert, read, replace (no rename), delete (204), read feed and query, with the service's
//! system properties and statuses; a body that must compile, a trigger's type and operation
//! stored as sent; addressing by `_self`. Executing them is not tested here.

use super::*;

/// The three script kinds: path segment, feed name, and a valid body of each.
fn kinds() -> [(&'static str, &'static str, Value); 3] {
    [
        (
            "sprocs",
            "StoredProcedures",
            json!({"id": "s", "body": "function () { getContext().getResponse().setBody(1); }"}),
        ),
        (
            "triggers",
            "Triggers",
            json!({"id": "s", "body": "function () {}", "triggerType": "pre", "triggerOperation": "all"}),
        ),
        (
            "udfs",
            "UserDefinedFunctions",
            json!({"id": "s", "body": "function (x) { return x * 2; }"}),
        ),
    ]
}

async fn post(server: &Server, segment: &str, body: Value, headers: &[(&str, &str)]) -> Answer {
    server
        .send(
            "POST",
            &format!("/dbs/db/colls/c/{segment}"),
            (segment, "dbs/db/colls/c"),
            Some(body),
            headers,
        )
        .await
}

async fn on_one(
    server: &Server,
    method: &str,
    segment: &str,
    id: &str,
    body: Option<Value>,
) -> Answer {
    let link = format!("dbs/db/colls/c/{segment}/{id}");
    server
        .send(method, &format!("/{link}"), (segment, &link), body, &[])
        .await
}

#[tokio::test]
async fn scripts_have_the_service_crud_and_system_properties() {
    let mut engine = None;
    let server = Server::with(|state| engine = Some(state.engine.clone()));
    let engine = engine.expect("engine");
    server.setup(partitioned()).await;
    let container = engine.read_container("db", "c").expect("container");
    let container_self = container.resource["_self"]
        .as_str()
        .expect("_self")
        .to_string();

    for (segment, feed_name, body) in kinds() {
        let created = post(&server, segment, body.clone(), &[]).await;
        assert_eq!(
            created.status,
            StatusCode::CREATED,
            "{segment}: {}",
            created.body
        );
        for (name, value) in body.as_object().expect("object") {
            assert_eq!(
                &created.body[name], value,
                "{segment} echoes {name} as sent"
            );
        }
        let rid = created.body["_rid"].as_str().expect("_rid").to_string();
        assert_eq!(
            created.body["_self"],
            json!(format!("{container_self}{segment}/{rid}/")),
            "{segment}"
        );
        assert!(created.body["_ts"].is_i64(), "{segment}");
        assert_eq!(
            created.header("etag"),
            created.body["_etag"].as_str().expect("_etag")
        );
        assert_eq!(
            post(&server, segment, body.clone(), &[]).await.status,
            StatusCode::CONFLICT,
            "{segment}"
        );

        let read = on_one(&server, "GET", segment, "s", None).await;
        assert_eq!(read.status, StatusCode::OK, "{segment}");
        assert_eq!(read.body, created.body, "{segment}");
        // By its `_self` link too.
        let by_rid = server
            .send(
                "GET",
                &format!("/{}", created.body["_self"].as_str().expect("_self")),
                (segment, &rid.to_ascii_lowercase()),
                None,
                &[],
            )
            .await;
        assert_eq!(by_rid.status, StatusCode::OK, "{segment}: {}", by_rid.body);
        assert_eq!(by_rid.body["id"], json!("s"), "{segment}");

        server.clock.advance_ms(1_000);
        let mut changed = body.clone();
        changed["body"] = json!("function () { return 2; }");
        let replaced = on_one(&server, "PUT", segment, "s", Some(changed.clone())).await;
        assert_eq!(
            replaced.status,
            StatusCode::OK,
            "{segment}: {}",
            replaced.body
        );
        assert_eq!(replaced.body["body"], changed["body"], "{segment}");
        assert_eq!(replaced.body["_rid"], created.body["_rid"], "{segment}");
        assert_ne!(replaced.body["_etag"], created.body["_etag"], "{segment}");
        // Scripts are not renamed by a replace; a missing one is not found.
        let mut renamed = changed.clone();
        renamed["id"] = json!("other");
        let refused = on_one(&server, "PUT", segment, "s", Some(renamed.clone())).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{segment}");
        let missing = on_one(&server, "PUT", segment, "other", Some(renamed.clone())).await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND, "{segment}");

        let upserted = post(
            &server,
            segment,
            body.clone(),
            &[("x-ms-documentdb-is-upsert", "True")],
        )
        .await;
        assert_eq!(upserted.status, StatusCode::OK, "{segment}");
        assert_eq!(upserted.body["body"], body["body"], "{segment}");
        let upserted = post(
            &server,
            segment,
            renamed,
            &[("x-ms-documentdb-is-upsert", "True")],
        )
        .await;
        assert_eq!(upserted.status, StatusCode::CREATED, "{segment}");

        let feed = server
            .send(
                "GET",
                &format!("/dbs/db/colls/c/{segment}"),
                (segment, "dbs/db/colls/c"),
                None,
                &[],
            )
            .await;
        assert_eq!(feed.body["_count"], json!(2), "{segment}");
        assert_eq!(feed.body["_rid"], json!(container.rid()), "{segment}");
        let query = post(
            &server,
            segment,
            json!({"query": "SELECT * FROM root r WHERE r.id = @id", "parameters": [{"name": "@id", "value": "other"}]}),
            &[("x-ms-documentdb-isquery", "True"), ("content-type", "application/query+json")],
        )
        .await;
        assert_eq!(query.status, StatusCode::OK, "{segment}: {}", query.body);
        assert_eq!(
            query.body[feed_name].as_array().map(Vec::len),
            Some(1),
            "{segment}"
        );
        assert_eq!(query.body[feed_name][0]["id"], json!("other"), "{segment}");

        let deleted = on_one(&server, "DELETE", segment, "s", None).await;
        assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{segment}");
        assert_eq!(
            on_one(&server, "GET", segment, "s", None).await.status,
            StatusCode::NOT_FOUND,
            "{segment}"
        );
        assert_eq!(
            on_one(&server, "DELETE", segment, "s", None).await.status,
            StatusCode::NOT_FOUND,
            "{segment}"
        );
    }

    // Under a container that does not exist, every kind is a 404.
    let missing = server
        .send(
            "POST",
            "/dbs/db/colls/nope/sprocs",
            ("sprocs", "dbs/db/colls/nope"),
            Some(kinds()[0].2.clone()),
            &[],
        )
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_script_body_is_stored_as_sent_and_a_trigger_names_its_type_and_operation() {
    let server = Server::new();
    server.setup(partitioned()).await;
    // The service stores a body that does not compile (the SDKs' suites store such bodies and
    // read them back); running it fails (the engine's tests).
    let broken = "function () {\n  var a = 1;\n  a = +;\n}";
    for (segment, _, mut body) in kinds() {
        body["body"] = json!(broken);
        body["id"] = json!("broken");
        let stored = post(&server, segment, body.clone(), &[]).await;
        assert_eq!(stored.status, StatusCode::CREATED, "{segment}");
        assert_eq!(
            on_one(&server, "GET", segment, "broken", None).await.body["body"],
            json!(broken),
            "{segment}"
        );
        body.as_object_mut().expect("object").remove("body");
        let refused = post(&server, segment, body, &[]).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{segment}");
        assert_eq!(refused.body["code"], json!("BadRequest"));
        assert_eq!(
            refused.body["message"],
            json!("The input content is invalid because the required properties - 'body; ' - are missing"),
            "{segment}"
        );
    }
    let not_text = post(&server, "udfs", json!({"id": "f", "body": 7}), &[]).await;
    assert_eq!(not_text.status, StatusCode::BAD_REQUEST);

    // A replace and an upsert are checked as a create is.
    let (segment, _, body) = kinds()[0].clone();
    assert_eq!(
        post(&server, segment, body.clone(), &[]).await.status,
        StatusCode::CREATED
    );
    let mut changed = body.clone();
    changed.as_object_mut().expect("object").remove("body");
    assert_eq!(
        on_one(&server, "PUT", segment, "s", Some(changed.clone()))
            .await
            .status,
        StatusCode::BAD_REQUEST
    );
    changed["body"] = json!(broken);
    assert_eq!(
        post(
            &server,
            segment,
            changed,
            &[("x-ms-documentdb-is-upsert", "True")]
        )
        .await
        .status,
        StatusCode::OK
    );
    assert_eq!(
        on_one(&server, "GET", segment, "s", None).await.body["body"],
        json!(broken)
    );

    // Triggers: type and operation in any case, stored as sent; .NET's and REST's spellings.
    for (id, trigger_type, operation) in [
        ("a", "Pre", "All"),
        ("b", "POST", "insert"),
        ("c", "post", "Upsert"),
        ("d", "pre", "replace"),
    ] {
        let created = post(
            &server,
            "triggers",
            json!({"id": id, "body": "function () {}", "triggerType": trigger_type, "triggerOperation": operation}),
            &[],
        )
        .await;
        assert_eq!(
            created.status,
            StatusCode::CREATED,
            "{id}: {}",
            created.body
        );
        assert_eq!(created.body["triggerType"], json!(trigger_type));
        assert_eq!(created.body["triggerOperation"], json!(operation));
    }
    for body in [
        json!({"id": "x", "body": "function () {}", "triggerOperation": "All"}),
        json!({"id": "x", "body": "function () {}", "triggerType": "Pre"}),
        json!({"id": "x", "body": "function () {}", "triggerType": "During", "triggerOperation": "All"}),
        json!({"id": "x", "body": "function () {}", "triggerType": "Pre", "triggerOperation": "Read"}),
        json!({"id": "x", "body": "function () {}", "triggerType": 1, "triggerOperation": "All"}),
    ] {
        let refused = post(&server, "triggers", body.clone(), &[]).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(refused.body["code"], json!("BadRequest"), "{body}");
    }
    let refused = post(
        &server,
        "triggers",
        json!({"id": "x", "body": "function () {}"}),
        &[],
    )
    .await;
    assert_eq!(
        refused.body["message"],
        json!("The input content is invalid because the required properties - 'triggerType; triggerOperation; ' - are missing")
    );
}

#[tokio::test]
async fn resource_tokens_read_scripts_with_read_and_write_them_with_all() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let (segment, _, body) = kinds()[2].clone();
    assert_eq!(
        post(&server, segment, body.clone(), &[]).await.status,
        StatusCode::CREATED
    );
    let read = server
        .permission(
            "r",
            json!({"permissionMode": "Read", "resource": "dbs/db/colls/c"}),
            &[],
        )
        .await;
    let all = server
        .permission(
            "a",
            json!({"permissionMode": "All", "resource": "dbs/db/colls/c/udfs"}),
            &[],
        )
        .await;
    let path = "/dbs/db/colls/c/udfs/s";
    let status = |answer: Answer| answer.status;
    assert_eq!(
        status(server.send_as(&read, "GET", path, None, &[]).await),
        StatusCode::OK
    );
    assert_eq!(
        status(
            server
                .send_as(&read, "GET", "/dbs/db/colls/c/udfs", None, &[])
                .await
        ),
        StatusCode::OK
    );
    assert_eq!(
        status(
            server
                .send_as(&read, "PUT", path, Some(body.clone()), &[])
                .await
        ),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        status(
            server
                .send_as(
                    &read,
                    "POST",
                    "/dbs/db/colls/c/udfs",
                    Some(body.clone()),
                    &[]
                )
                .await
        ),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        status(
            server
                .send_as(&all, "PUT", path, Some(body.clone()), &[])
                .await
        ),
        StatusCode::OK
    );
    assert_eq!(
        status(server.send_as(&all, "DELETE", path, None, &[]).await),
        StatusCode::NO_CONTENT
    );
}
