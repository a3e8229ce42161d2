//! Throughput over HTTP: offers, the 429 when a second's budget is spent, and the metrics that
//! count it.

use super::*;

#[tokio::test]
async fn throughput_offers_and_429() {
    let server = Server::new();
    let created = server
        .send("POST", "/dbs", ("dbs", ""), Some(json!({"id": "db"})), &[])
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let bad = server
        .send(
            "POST",
            "/dbs/db/colls",
            ("colls", "dbs/db"),
            Some(partitioned()),
            &[("x-ms-offer-throughput", "450")],
        )
        .await;
    check_error(
        &bad,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "The offer should have valid throughput values between 400 and 1000000 inclusive in increments of 100.",
    );
    let created = server
        .send(
            "POST",
            "/dbs/db/colls",
            ("colls", "dbs/db"),
            Some(partitioned()),
            &[("x-ms-offer-throughput", "400")],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let offers = server
        .send("GET", "/offers", ("offers", ""), None, &[])
        .await;
    let offer = offers.body["Offers"][0].clone();
    assert_eq!(offer["content"]["offerThroughput"], json!(400));
    assert_eq!(offer["offerResourceId"], created.body["_rid"]);
    // Found by the query the SDKs send.
    let link = offer["resource"].as_str().expect("resource").to_string();
    let found = server
        .send(
            "POST",
            "/offers",
            ("offers", ""),
            Some(json!({"query": "SELECT * FROM root r WHERE r.resource = @link", "parameters": [{"name": "@link", "value": link}]})),
            &[("content-type", "application/query+json"), ("x-ms-documentdb-isquery", "True")],
        )
        .await;
    assert_eq!(found.body["Offers"].as_array().map(Vec::len), Some(1));
    // Spend the second's 400 RU: the next request is refused with a retry hint.
    let mut refused = None;
    for i in 0..200 {
        let answer = server
            .create_item(json!({"id": format!("i{i}"), "pk": "p"}))
            .await;
        if answer.status == StatusCode::TOO_MANY_REQUESTS {
            refused = Some(answer);
            break;
        }
        assert_eq!(answer.status, StatusCode::CREATED);
    }
    let refused = refused.expect("a 429 within 400 RU of writes");
    check_error(
        &refused,
        StatusCode::TOO_MANY_REQUESTS,
        "TooManyRequests",
        "Request rate is large",
    );
    assert_eq!(refused.header("x-ms-substatus"), "3200");
    assert!(
        refused
            .header("x-ms-retry-after-ms")
            .parse::<i64>()
            .expect("retry")
            > 0
    );
    server.clock.advance_ms(1_000);
    assert_eq!(
        server
            .create_item(json!({"id": "later", "pk": "p"}))
            .await
            .status,
        StatusCode::CREATED
    );
    // Raising the throughput through the offer raises the budget.
    let id = offer["id"].as_str().expect("id").to_string();
    let mut replaced = offer.clone();
    replaced["content"]["offerThroughput"] = json!(10_000);
    let answer = server
        .send(
            "PUT",
            &format!("/offers/{id}"),
            ("offers", &id.to_ascii_lowercase()),
            Some(replaced),
            &[],
        )
        .await;
    assert_eq!(
        (
            answer.status,
            answer.body["content"]["offerThroughput"].clone()
        ),
        (StatusCode::OK, json!(10_000))
    );
    server.clock.advance_ms(1_000);
    for i in 0..200 {
        assert_eq!(
            server
                .create_item(json!({"id": format!("more{i}"), "pk": "p"}))
                .await
                .status,
            StatusCode::CREATED
        );
    }
    let metrics = server
        .raw(
            Request::get("/metrics")
                .body(Body::empty())
                .expect("request"),
        )
        .await;
    assert_eq!(metrics.status, StatusCode::OK);
    let text = metrics.body.as_str().expect("text").to_string();
    for expected in [
        "lethedb_requests_total{operation=\"Create\",status=\"201\"}",
        "lethedb_throttled_requests_total{database=\"db\",container=\"c\"} 1",
        "lethedb_items{database=\"db\",container=\"c\"}",
        "lethedb_ttl_backlog_items{database=\"db\",container=\"c\"} 0",
        "lethedb_commit_duration_seconds_bucket",
        "lethedb_writer_queue_depth",
        "lethedb_request_units_total{database=\"db\",container=\"c\"}",
    ] {
        assert!(text.contains(expected), "{expected} missing from:\n{text}");
    }
}

#[tokio::test]
async fn invalid_throughput_gets_the_service_message_and_autoscale_keeps_its_upgrade_policy() {
    let server = Server::new();
    let created = server
        .send("POST", "/dbs", ("dbs", ""), Some(json!({"id": "db"})), &[])
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let create = |header: &'static str, value: String| {
        let server = &server;
        async move {
            server
                .send(
                    "POST",
                    "/dbs/db/colls",
                    ("colls", "dbs/db"),
                    Some(partitioned()),
                    &[(header, value.as_str())],
                )
                .await
        }
    };
    let manual = "The offer should have valid throughput values between 400 and 1000000 inclusive in increments of 100.";
    for ru in ["300", "450", "1000100"] {
        let refused = create("x-ms-offer-throughput", ru.to_string()).await;
        check_error(&refused, StatusCode::BAD_REQUEST, "BadRequest", manual);
    }
    let autoscale = "The offer should have valid throughput values between 1000 and 1000000 inclusive in increments of 1000.";
    // Below the minimum, the service's message names the number asked for and the minimum.
    for (max, expected) in [
        (-200, format!("{autoscale} Requested throughput -200 is less than required minimum throughput 1000.")),
        (500, format!("{autoscale} Requested throughput 500 is less than required minimum throughput 1000.")),
        (1500, autoscale.to_string()),
    ] {
        let refused = create(
            "x-ms-cosmos-offer-autopilot-settings",
            json!({"maxThroughput": max}).to_string(),
        )
        .await;
        check_error(&refused, StatusCode::BAD_REQUEST, "BadRequest", &expected);
    }
    let policy = json!({"throughputPolicy": {"incrementPercent": 20}});
    let created = create(
        "x-ms-cosmos-offer-autopilot-settings",
        json!({"maxThroughput": 4000, "autoUpgradePolicy": policy}).to_string(),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let offers = server
        .send("GET", "/offers", ("offers", ""), None, &[])
        .await;
    let mut offer = offers.body["Offers"][0].clone();
    let settings = &offer["content"]["offerAutopilotSettings"];
    assert_eq!(settings["maxThroughput"], json!(4000));
    assert_eq!(settings["autoUpgradePolicy"], policy);
    // Replaced with another percent, kept; a bad maximum on replace gets the same message.
    offer["content"]["offerAutopilotSettings"]["autoUpgradePolicy"]["throughputPolicy"]
        ["incrementPercent"] = json!(5);
    let path = format!("/offers/{}", offer["id"].as_str().expect("id"));
    let link = offer["id"].as_str().expect("id").to_lowercase();
    let replaced = server
        .send("PUT", &path, ("offers", &link), Some(offer.clone()), &[])
        .await;
    assert_eq!(replaced.status, StatusCode::OK, "{}", replaced.body);
    assert_eq!(
        replaced.body["content"]["offerAutopilotSettings"]["autoUpgradePolicy"],
        json!({"throughputPolicy": {"incrementPercent": 5}})
    );
    offer["content"]["offerAutopilotSettings"]["maxThroughput"] = json!(4500);
    let refused = server
        .send("PUT", &path, ("offers", &link), Some(offer), &[])
        .await;
    check_error(&refused, StatusCode::BAD_REQUEST, "BadRequest", autoscale);
}

#[tokio::test]
async fn low_priority_writes_are_throttled_before_high_priority_ones() {
    let server = Server::new();
    server
        .send("POST", "/dbs", ("dbs", ""), Some(json!({"id": "db"})), &[])
        .await;
    let created = server
        .send(
            "POST",
            "/dbs/db/colls",
            ("colls", "dbs/db"),
            Some(partitioned()),
            &[("x-ms-offer-throughput", "400")],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let create = |id: String, priority: &'static str| {
        let server = &server;
        async move {
            server
                .send(
                    "POST",
                    "/dbs/db/colls/c/docs",
                    ("docs", "dbs/db/colls/c"),
                    Some(json!({"id": id, "pk": "p"})),
                    &[
                        ("x-ms-documentdb-partitionkey", r#"["p"]"#),
                        ("x-ms-cosmos-priority-level", priority),
                    ],
                )
                .await
        }
    };
    // The clock stands still: every write below falls in one second of the 400 RU budget.
    let mut low_written = 0;
    loop {
        let answer = create(format!("low{low_written}"), "Low").await;
        if answer.status == StatusCode::TOO_MANY_REQUESTS {
            break;
        }
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
        low_written += 1;
        assert!(low_written < 200, "low priority was never throttled");
    }
    let high = create("high".to_string(), "High").await;
    assert_eq!(
        high.status,
        StatusCode::CREATED,
        "the budget's last fifth is kept for high priority"
    );
    let mut high_written = 1;
    while create(format!("high{high_written}"), "High").await.status == StatusCode::CREATED {
        high_written += 1;
    }
    assert!(
        high_written * 4 < low_written * 2,
        "{high_written} high after {low_written} low"
    );
}

/// A container created without throughput in a database without shared throughput shows the
/// service's default offer, 400 RU/s manual, which can be replaced like any offer; its requests
/// are not limited by it. A container in a database with shared throughput shows none.
#[tokio::test]
async fn a_container_without_throughput_shows_the_default_offer_without_drawing_on_it() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let offers = server
        .send("GET", "/offers", ("offers", ""), None, &[])
        .await;
    assert_eq!(
        offers.body["Offers"].as_array().map(Vec::len),
        Some(1),
        "{}",
        offers.body
    );
    let offer = offers.body["Offers"][0].clone();
    assert_eq!(offer["content"]["offerThroughput"], json!(400));
    let container = server
        .send(
            "GET",
            "/dbs/db/colls/c",
            ("colls", "dbs/db/colls/c"),
            None,
            &[],
        )
        .await;
    assert_eq!(offer["offerResourceId"], container.body["_rid"]);
    // Far more than 400 RU in one second: nothing is refused.
    for i in 0..200 {
        let answer = server
            .create_item(json!({"id": format!("i{i}"), "pk": "p"}))
            .await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    }
    let id = offer["id"].as_str().expect("id").to_string();
    let mut replaced = offer.clone();
    replaced["content"] = json!({"offerThroughput": 1000});
    let answer = server
        .send(
            "PUT",
            &format!("/offers/{id}"),
            ("offers", &id.to_lowercase()),
            Some(replaced),
            &[],
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(answer.body["content"]["offerThroughput"], json!(1000));
    let shared = server
        .send(
            "POST",
            "/dbs",
            ("dbs", ""),
            Some(json!({"id": "shared"})),
            &[("x-ms-offer-throughput", "400")],
        )
        .await;
    assert_eq!(shared.status, StatusCode::CREATED);
    let inner = server
        .send(
            "POST",
            "/dbs/shared/colls",
            ("colls", "dbs/shared"),
            Some(partitioned()),
            &[],
        )
        .await;
    assert_eq!(inner.status, StatusCode::CREATED);
    let offers = server
        .send("GET", "/offers", ("offers", ""), None, &[])
        .await;
    let owners: Vec<Value> = offers.body["Offers"]
        .as_array()
        .expect("offers")
        .iter()
        .map(|o| o["offerResourceId"].clone())
        .collect();
    assert!(!owners.contains(&inner.body["_rid"]), "{}", offers.body);
    assert_eq!(owners.len(), 2, "{}", offers.body);
}
