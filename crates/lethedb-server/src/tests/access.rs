//! The account, authorization and error bodies: what any request can get back before it
//! reaches a resource.

use super::*;

#[tokio::test]
async fn the_account_names_the_default_endpoint() {
    let server = Server::new();
    let answer = server.send("GET", "/", ("", ""), None, &[]).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(
        answer.body["writableLocations"][0]["databaseAccountEndpoint"],
        json!("http://127.0.0.1:8081/")
    );
    assert_eq!(
        answer.body["userConsistencyPolicy"]["defaultConsistencyLevel"],
        json!("Session")
    );
    assert!(answer.body["queryEngineConfiguration"].is_string());
    assert_eq!(answer.header("x-ms-schemaversion"), "1.18");
}

#[tokio::test]
async fn the_account_advertises_the_configured_endpoint_not_the_host_header() {
    let server = Server::with(|state| state.endpoint = "https://cosmos.example:9/".into());
    let answer = server.send("GET", "/", ("", ""), None, &[]).await;
    assert_eq!(answer.status, StatusCode::OK);
    for list in ["writableLocations", "readableLocations"] {
        assert_eq!(
            answer.body[list][0]["databaseAccountEndpoint"],
            json!("https://cosmos.example:9/"),
            "{list}"
        );
    }
}

#[tokio::test]
async fn with_advertise_auto_the_account_names_the_host_the_client_used() {
    let bound: std::net::SocketAddr = "127.0.0.1:8081".parse().expect("address");
    let server = Server::with(|state| {
        state.endpoint = crate::Endpoint::from_flag(Some("auto"), bound, false).expect("auto");
    });
    // The in-process requests say `host: 127.0.0.1:8081`; a client behind a mapped port says
    // its own.
    let account = |host: &'static str| {
        let date = server.date(0);
        Request::get("/")
            .header("host", host)
            .header("x-ms-date", &date)
            .header(
                "authorization",
                server.key.authorization_header("GET", "", "", &date),
            )
            .body(Body::empty())
            .expect("request")
    };
    let mapped = server.raw(account("localhost:49153")).await;
    assert_eq!(mapped.status, StatusCode::OK, "{}", mapped.body);
    for list in ["writableLocations", "readableLocations"] {
        assert_eq!(
            mapped.body[list][0]["databaseAccountEndpoint"],
            json!("http://localhost:49153/"),
            "{list}"
        );
    }
    // A Host no URL can carry falls back to the bound address.
    let odd = server.raw(account("evil.example/path")).await;
    assert_eq!(
        odd.body["writableLocations"][0]["databaseAccountEndpoint"],
        json!("http://127.0.0.1:8081/")
    );
    // The flag's other values are as before: a fixed URL, checked.
    assert!(crate::Endpoint::from_flag(Some("ftp://x/"), bound, false).is_err());
    let fixed = crate::Endpoint::from_flag(Some("cosmos.example:9"), bound, false).expect("url");
    assert_eq!(fixed.configured(), "http://cosmos.example:9/");
}

#[tokio::test]
async fn with_advertise_auto_an_http2_request_is_answered_with_its_authority() {
    let bound: std::net::SocketAddr = "127.0.0.1:8081".parse().expect("address");
    let server = Server::with(|state| {
        state.endpoint = crate::Endpoint::from_flag(Some("auto"), bound, false).expect("auto");
    });
    // HTTP/2 has no Host header: the host is the `:authority`, which arrives in the URI (the
    // Rust SDK speaks HTTP/2 to a plain-HTTP endpoint, so a mapped port depends on this).
    let date = server.date(0);
    let request = Request::get("http://localhost:49153/")
        .version(axum::http::Version::HTTP_2)
        .header("x-ms-date", &date)
        .header(
            "authorization",
            server.key.authorization_header("GET", "", "", &date),
        )
        .body(Body::empty())
        .expect("request");
    assert!(request.headers().get("host").is_none());
    let answer = server.raw(request).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(
        answer.body["writableLocations"][0]["databaseAccountEndpoint"],
        json!("http://localhost:49153/")
    );
}

#[tokio::test]
async fn authorization_failures() {
    let server = Server::new();
    let unsigned = server
        .raw(Request::get("/dbs").body(Body::empty()).expect("request"))
        .await;
    check_error(
        &unsigned,
        StatusCode::UNAUTHORIZED,
        "Unauthorized",
        "authorization is missing",
    );
    let date = server.date(0);
    let other_key = MasterKey::from_base64("c2VjcmV0LWtleS1mb3ItdGVzdHM=").expect("key");
    let wrong = Request::get("/dbs")
        .header("x-ms-date", &date)
        .header(
            "authorization",
            other_key.authorization_header("GET", "dbs", "", &date),
        )
        .body(Body::empty())
        .expect("request");
    check_error(
        &server.raw(wrong).await,
        StatusCode::UNAUTHORIZED,
        "Unauthorized",
        "wrong key",
    );
    // Signed for another resource.
    let misdirected = server
        .send("GET", "/dbs/x", ("dbs", "dbs/y"), None, &[])
        .await;
    check_error(
        &misdirected,
        StatusCode::UNAUTHORIZED,
        "Unauthorized",
        "dbs/x",
    );
    let old = server.date(-16 * 60);
    let stale = Request::get("/dbs")
        .header("x-ms-date", &old)
        .header(
            "authorization",
            server.key.authorization_header("GET", "dbs", "", &old),
        )
        .body(Body::empty())
        .expect("request");
    check_error(
        &server.raw(stale).await,
        StatusCode::FORBIDDEN,
        "Forbidden",
        "not valid at the current time",
    );
}

#[tokio::test]
async fn malformed_requests_get_cosmos_errors() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let unknown = server
        .send(
            "GET",
            "/nothing/here",
            ("nothing", "nothing/here"),
            None,
            &[],
        )
        .await;
    check_error(&unknown, StatusCode::NOT_FOUND, "NotFound", "not supported");
    assert_eq!(
        unknown.header("x-ms-substatus"),
        "0",
        "a plain 404 has substatus 0, never one the SDKs retry on"
    );
    let wrong_method = server
        .send("PUT", "/dbs", ("dbs", ""), Some(json!({})), &[])
        .await;
    check_error(
        &wrong_method,
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        "PUT",
    );
    let date = server.date(0);
    let bad_json = Request::post("/dbs")
        .header("x-ms-date", &date)
        .header(
            "authorization",
            server.key.authorization_header("POST", "dbs", "", &date),
        )
        .body(Body::from("{\"id\": "))
        .expect("request");
    check_error(
        &server.raw(bad_json).await,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "invalid JSON",
    );
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let date = server.date(0);
    let too_deep = Request::post("/dbs")
        .header("x-ms-date", &date)
        .header(
            "authorization",
            server.key.authorization_header("POST", "dbs", "", &date),
        )
        .body(Body::from(format!("{{\"id\": \"x\", \"deep\": {deep}}}")))
        .expect("request");
    check_error(
        &server.raw(too_deep).await,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "recursion limit",
    );
    let no_id = server.create_item(json!({"pk": "a"})).await;
    check_error(&no_id, StatusCode::BAD_REQUEST, "BadRequest", "'id");
    let slash = server.create_item(json!({"id": "a/b", "pk": "a"})).await;
    check_error(&slash, StatusCode::BAD_REQUEST, "BadRequest", "not allowed");
    let long = server
        .create_item(json!({"id": "x".repeat(256), "pk": "a"}))
        .await;
    check_error(&long, StatusCode::BAD_REQUEST, "BadRequest", "255");
    let mismatch = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"id": "m", "pk": "a"})),
            &[("x-ms-documentdb-partitionkey", "[\"b\"]")],
        )
        .await;
    check_error(
        &mismatch,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "doesn't match",
    );
    let big = server
        .create_item(json!({"id": "big", "pk": "a", "blob": "x".repeat(2 * 1024 * 1024)}))
        .await;
    check_error(
        &big,
        StatusCode::PAYLOAD_TOO_LARGE,
        "RequestEntityTooLarge",
        "too large",
    );
    let huge = server
        .create_item(json!({"id": "huge", "pk": "a", "blob": "x".repeat(3 * 1024 * 1024)}))
        .await;
    check_error(
        &huge,
        StatusCode::PAYLOAD_TOO_LARGE,
        "RequestEntityTooLarge",
        "too large",
    );
    let bad_query = server.query("SELECT * FROM c WHERE", &[]).await;
    check_error(&bad_query, StatusCode::BAD_REQUEST, "BadRequest", "");
    // Nothing of the failed writes was stored.
    let all = server
        .query("SELECT VALUE COUNT(1) FROM c", ONE_RANGE)
        .await;
    assert_eq!(all.body["Documents"], json!([0]));
}

#[tokio::test]
async fn an_unauthenticated_caller_learns_nothing_of_resource_ids() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let database = server
        .send("GET", "/dbs/db", ("dbs", "dbs/db"), None, &[])
        .await;
    let database_rid = database.body["_rid"].as_str().expect("rid").to_string();
    // A known database rid with an unknown container rid would resolve to 404 for a signed
    // caller; unsigned, or signed with another key, the answer is 401 either way.
    let other_key = MasterKey::from_base64("c2VjcmV0LWtleS1mb3ItdGVzdHM=").expect("key");
    for path in [
        format!("/dbs/{database_rid}/colls/AAAAAA==/docs"),
        "/dbs/AAAAAA==/colls/AAAAAA==/docs".to_string(),
    ] {
        let unsigned = server
            .raw(
                Request::get(path.as_str())
                    .body(Body::empty())
                    .expect("request"),
            )
            .await;
        check_error(
            &unsigned,
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            "authorization is missing",
        );
        let date = server.date(0);
        let link = path.trim_start_matches('/').trim_end_matches("/docs");
        let wrong_key = Request::get(path.as_str())
            .header("x-ms-date", &date)
            .header(
                "authorization",
                other_key.authorization_header("GET", "docs", link, &date),
            )
            .body(Body::empty())
            .expect("request");
        check_error(
            &server.raw(wrong_key).await,
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            "wrong key",
        );
    }
    let signed_path = format!("/dbs/{database_rid}/colls/AAAAAA==/docs");
    let signed = server
        .send(
            "GET",
            &signed_path,
            ("docs", &format!("dbs/{database_rid}/colls/AAAAAA==")),
            None,
            &[],
        )
        .await;
    check_error(
        &signed,
        StatusCode::NOT_FOUND,
        "NotFound",
        "Resource Not Found",
    );
}

/// An id ending in whitespace or holding a `%xx` sequence is stored as sent, but a point
/// operation on it is signed over an id the service's gateway reads differently (decoded once
/// more, trailing whitespace dropped), so the service answers 401, as the JavaScript SDK's
/// `itemIdEncoding` tests expect. Other ids, with spaces inside or in front, are served.
#[tokio::test]
async fn ids_the_gateway_reads_differently_are_refused_on_point_operations() {
    let server = Server::new();
    server
        .setup(json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}))
        .await;
    let cases = [
        ("Test ", "Test%20", StatusCode::UNAUTHORIZED),
        ("Test   ", "Test%20%20%20", StatusCode::UNAUTHORIZED),
        ("x%20", "x%2520", StatusCode::UNAUTHORIZED),
        ("x%E9%B1%80", "x%25E9%25B1%2580", StatusCode::UNAUTHORIZED),
        (" Test", "%20Test", StatusCode::OK),
        ("This is a test", "This%20is%20a%20test", StatusCode::OK),
        ("a?b", "a%3Fb", StatusCode::OK),
    ];
    for (id, encoded, expected) in cases {
        let created = server.create_item(json!({"id": id, "pk": id})).await;
        assert_eq!(
            created.status,
            StatusCode::CREATED,
            "{id:?}: {}",
            created.body
        );
        let pk = json!([id]).to_string();
        let signed_link = format!("dbs/db/colls/c/docs/{id}");
        let path = format!("/dbs/db/colls/c/docs/{encoded}");
        let headers = [("x-ms-documentdb-partitionkey", pk.as_str())];
        let read = server
            .send("GET", &path, ("docs", &signed_link), None, &headers)
            .await;
        assert_eq!(read.status, expected, "{id:?}: {}", read.body);
        let deleted = server
            .send("DELETE", &path, ("docs", &signed_link), None, &headers)
            .await;
        let deleted_expected = match expected {
            StatusCode::OK => StatusCode::NO_CONTENT,
            refused => refused,
        };
        assert_eq!(deleted.status, deleted_expected, "{id:?}: {}", deleted.body);
    }
    // The refusal names the link the gateway signed, as the service's message does.
    let read = server
        .send(
            "GET",
            "/dbs/db/colls/c/docs/Test%20",
            ("docs", "dbs/db/colls/c/docs/Test "),
            None,
            &[("x-ms-documentdb-partitionkey", "[\"Test \"]")],
        )
        .await;
    check_error(
        &read,
        StatusCode::UNAUTHORIZED,
        "Unauthorized",
        "dbs/db/colls/c/docs/Test\n",
    );
}

/// The compute gateway (`--compute-gateway-port`) checks the signature over the ids as sent
/// once decoded: the ids the routing gateway refuses above are read and deleted there.
#[tokio::test]
async fn the_compute_gateway_serves_the_ids_the_routing_gateway_refuses() {
    let server = Server::with(|state| state.gateway = crate::Gateway::Compute);
    server
        .setup(json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}))
        .await;
    let cases = [
        ("Test ", "Test%20"),
        ("Test   ", "Test%20%20%20"),
        ("x%20", "x%2520"),
        ("x%E9%B1%80", "x%25E9%25B1%2580"),
    ];
    for (id, encoded) in cases {
        let created = server.create_item(json!({"id": id, "pk": id})).await;
        assert_eq!(created.status, StatusCode::CREATED, "{id:?}");
        let pk = json!([id]).to_string();
        let signed_link = format!("dbs/db/colls/c/docs/{id}");
        let path = format!("/dbs/db/colls/c/docs/{encoded}");
        let headers = [("x-ms-documentdb-partitionkey", pk.as_str())];
        let read = server
            .send("GET", &path, ("docs", &signed_link), None, &headers)
            .await;
        assert_eq!(read.status, StatusCode::OK, "{id:?}: {}", read.body);
        assert_eq!(read.body["id"], id);
        let deleted = server
            .send("DELETE", &path, ("docs", &signed_link), None, &headers)
            .await;
        assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{id:?}");
    }
}
