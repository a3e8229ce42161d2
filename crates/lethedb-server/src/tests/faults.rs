//! Fault rules over HTTP: added, listed and removed by the master key alone; a rule answers the
//! operations, resources and partition keys it names with its status, substatus and retry
//! delay, for its count of hits; a bad rule is a 400.

use super::*;

const FAULTS: (&str, &str) = ("_lethedb", "_lethedb/faults");

async fn add(server: &Server, rule: Value) -> Answer {
    server
        .send("POST", "/_lethedb/faults", FAULTS, Some(rule), &[])
        .await
}

async fn read_item(server: &Server, id: &str, key: &str) -> Answer {
    server
        .send(
            "GET",
            &format!("/dbs/db/colls/c/docs/{id}"),
            ("docs", &format!("dbs/db/colls/c/docs/{id}")),
            None,
            &[("x-ms-documentdb-partitionkey", key)],
        )
        .await
}

#[tokio::test]
async fn a_rule_answers_what_it_names_for_its_count_of_hits() {
    let server = Server::new();
    server.setup(partitioned()).await;
    server.create_item(json!({"id": "1", "pk": "a"})).await;
    server.create_item(json!({"id": "2", "pk": "b"})).await;
    let added = add(
        &server,
        json!({"operation": "read", "resource": "dbs/db/colls/c", "partitionKey": "a",
               "count": 2, "status": 429, "substatus": 3200, "retryAfterMs": 7}),
    )
    .await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.body);
    assert_eq!(added.body["id"], json!("1"));
    for _ in 0..2 {
        let hit = read_item(&server, "1", r#"["a"]"#).await;
        assert_eq!(hit.status, StatusCode::TOO_MANY_REQUESTS, "{}", hit.body);
        assert_eq!(hit.header("x-ms-substatus"), "3200");
        assert_eq!(hit.header("x-ms-retry-after-ms"), "7");
        assert_eq!(hit.body["code"], json!("TooManyRequests"));
        // Another partition key is not named by the rule.
        assert_eq!(
            read_item(&server, "2", r#"["b"]"#).await.status,
            StatusCode::OK
        );
    }
    assert_eq!(
        read_item(&server, "1", r#"["a"]"#).await.status,
        StatusCode::OK
    );
    let listed = server
        .send("GET", "/_lethedb/faults", FAULTS, None, &[])
        .await;
    assert_eq!(listed.body, json!({"rules": []}), "the spent rule is gone");
}

#[tokio::test]
async fn rules_are_listed_removed_and_checked() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let gone = add(&server, json!({"operation": "Create", "status": 503})).await;
    assert_eq!(gone.status, StatusCode::CREATED);
    let created = server.create_item(json!({"id": "1", "pk": "a"})).await;
    assert_eq!(created.status, StatusCode::SERVICE_UNAVAILABLE);
    let listed = server
        .send("GET", "/_lethedb/faults", FAULTS, None, &[])
        .await;
    assert_eq!(listed.body["rules"][0]["status"], json!(503));
    let removed = server
        .send("DELETE", "/_lethedb/faults/1", FAULTS, None, &[])
        .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT);
    let again = server
        .send("DELETE", "/_lethedb/faults/1", FAULTS, None, &[])
        .await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    assert_eq!(
        server
            .create_item(json!({"id": "1", "pk": "a"}))
            .await
            .status,
        StatusCode::CREATED
    );
    for bad in [
        json!({"operation": "Create"}),
        json!({"status": 200}),
        json!({"status": 503, "probability": 2}),
        json!({"status": 503, "surprise": true}),
    ] {
        let refused = add(&server, bad.clone()).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{bad}");
    }
    let unsigned = server
        .raw(
            Request::get("/_lethedb/faults")
                .body(Body::empty())
                .expect("request"),
        )
        .await;
    assert_eq!(unsigned.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_reset_drops_the_connection_and_a_delay_only_delays() {
    let server = Server::new();
    server.setup(partitioned()).await;
    server.create_item(json!({"id": "1", "pk": "a"})).await;
    add(
        &server,
        json!({"operation": "Read", "delayMs": 30, "count": 1}),
    )
    .await;
    let started = std::time::Instant::now();
    assert_eq!(
        read_item(&server, "1", r#"["a"]"#).await.status,
        StatusCode::OK
    );
    assert!(started.elapsed() >= std::time::Duration::from_millis(30));
    add(
        &server,
        json!({"operation": "Read", "resetConnection": true, "count": 1}),
    )
    .await;
    assert!(body_fails(&server).await, "the reset rule answers no body");
    assert_eq!(
        read_item(&server, "1", r#"["a"]"#).await.status,
        StatusCode::OK
    );
}

/// Whether reading item 1's answer fails part-way, as a dropped connection does.
async fn body_fails(server: &Server) -> bool {
    let date = server.date(0);
    let link = "dbs/db/colls/c/docs/1";
    let request = Request::get(format!("/{link}"))
        .header("host", "127.0.0.1:8081")
        .header("x-ms-date", &date)
        .header(
            "authorization",
            server.key.authorization_header("GET", "docs", link, &date),
        )
        .header("x-ms-documentdb-partitionkey", r#"["a"]"#)
        .body(Body::empty())
        .expect("request");
    let response = server
        .router
        .clone()
        .oneshot(request)
        .await
        .expect("response");
    response.into_body().collect().await.is_err()
}
