//! The explorer: its page and files are served without a signature, with their types and a
//! strict content security policy; the time-to-live overview it polls answers master-key
//! signed requests only, with the engine's figures; and a custom key never appears in anything
//! an unauthenticated caller can read.

use super::*;
use crate::explorer::{ASSETS, CONTENT_SECURITY_POLICY};
use lethedb_auth::MasterKey;

async fn get(server: &Server, path: &str) -> Answer {
    server
        .raw(Request::get(path).body(Body::empty()).expect("request"))
        .await
}

const CUSTOM_KEY: &str = "Y3VzdG9tLWtleS10aGF0LW11c3QtbmV2ZXItbGVhay0wMTIzNDU2Nzg5YWJjZGVm";

fn custom_key_server() -> Server {
    let key = MasterKey::from_base64(CUSTOM_KEY).expect("key");
    let mut server = Server::with(|state| state.key = key.clone());
    server.key = key;
    server
}

#[tokio::test]
async fn the_page_and_its_files_are_served_with_their_types_and_policy() {
    let server = Server::new();
    for path in ["/_explorer/", "/_explorer/index.html"] {
        let page = get(&server, path).await;
        assert_eq!(page.status, StatusCode::OK, "{path}");
        assert_eq!(page.header("content-type"), "text/html; charset=utf-8");
        assert_eq!(
            page.header("content-security-policy"),
            CONTENT_SECURITY_POLICY
        );
        assert_eq!(page.header("cache-control"), "no-cache");
        assert_eq!(page.header("x-content-type-options"), "nosniff");
        let html = String::from_utf8_lossy(&page.bytes);
        assert!(html.contains("data-testid=\"landing\""), "{path}");
        // No inline script: the policy would refuse it.
        assert!(!html.contains("<script>"), "{path}");
    }
    for (file, content_type) in [
        ("app.js", "text/javascript; charset=utf-8"),
        ("signing.js", "text/javascript; charset=utf-8"),
        ("style.css", "text/css; charset=utf-8"),
        ("favicon.svg", "image/svg+xml"),
    ] {
        let answer = get(&server, &format!("/_explorer/{file}")).await;
        assert_eq!(answer.status, StatusCode::OK, "{file}");
        assert_eq!(answer.header("content-type"), content_type, "{file}");
        assert_eq!(
            answer.header("content-security-policy"),
            CONTENT_SECURITY_POLICY
        );
        assert!(!answer.bytes.is_empty(), "{file}");
    }
    let bare = get(&server, "/_explorer").await;
    assert_eq!(bare.status, StatusCode::PERMANENT_REDIRECT);
    assert_eq!(bare.header("location"), "/_explorer/");
    // A name the explorer does not have is a Cosmos path, refused without a signature.
    let unknown = get(&server, "/_explorer/secrets.json").await;
    check_error(&unknown, StatusCode::UNAUTHORIZED, "Unauthorized", "");
}

#[tokio::test]
async fn every_module_the_page_imports_is_served() {
    let server = Server::new();
    for asset in ASSETS {
        let text = String::from_utf8_lossy(asset.body);
        for line in text.lines().filter(|l| l.starts_with("import ")) {
            let Some(name) = line.split("'./").nth(1).and_then(|r| r.split('\'').next()) else {
                continue;
            };
            let answer = get(&server, &format!("/_explorer/{name}")).await;
            assert_eq!(
                answer.status,
                StatusCode::OK,
                "{} imports {name}",
                asset.name
            );
        }
        assert!(
            text.lines().count() <= 600,
            "{} outgrew its room",
            asset.name
        );
    }
}

async fn overview(server: &Server, path: &str) -> Answer {
    server
        .send("GET", path, ("colls", "dbs/db/colls/c"), None, &[])
        .await
}

#[tokio::test]
async fn the_ttl_overview_refuses_unsigned_and_badly_signed_requests() {
    let server = Server::new();
    server
        .setup(json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 60}))
        .await;
    let path = "/_lethedb/ttl/dbs/db/colls/c";
    let unsigned = get(&server, path).await;
    check_error(
        &unsigned,
        StatusCode::UNAUTHORIZED,
        "Unauthorized",
        "authorization is missing",
    );
    // Signed for another resource: the link is part of what is signed.
    let wrong_link = server
        .send("GET", path, ("colls", "dbs/db/colls/other"), None, &[])
        .await;
    check_error(&wrong_link, StatusCode::UNAUTHORIZED, "Unauthorized", "");
    // Signed with another key.
    let other = custom_key_server();
    let date = server.date(0);
    let forged = server
        .raw(
            Request::get(path)
                .header("x-ms-date", &date)
                .header(
                    "authorization",
                    other
                        .key
                        .authorization_header("GET", "colls", "dbs/db/colls/c", &date),
                )
                .body(Body::empty())
                .expect("request"),
        )
        .await;
    check_error(&forged, StatusCode::UNAUTHORIZED, "Unauthorized", "");
    // Unsigned requests learn nothing of what exists either.
    let missing = get(&server, "/_lethedb/ttl/dbs/nope/colls/nope").await;
    assert_eq!(missing.status, StatusCode::UNAUTHORIZED);
    // Signed: a missing container is 404, a malformed path or preview 404/400.
    let absent = server
        .send(
            "GET",
            "/_lethedb/ttl/dbs/db/colls/nope",
            ("colls", "dbs/db/colls/nope"),
            None,
            &[],
        )
        .await;
    assert_eq!(absent.status, StatusCode::NOT_FOUND, "{}", absent.body);
    let database_only = server
        .send("GET", "/_lethedb/ttl/dbs/db", ("dbs", "dbs/db"), None, &[])
        .await;
    assert_eq!(database_only.status, StatusCode::NOT_FOUND);
    let bad_preview = overview(&server, &format!("{path}?previewDefaultTtl=0")).await;
    check_error(
        &bad_preview,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "defaultTtl '0'",
    );
    // Another verb is a Cosmos request like any other.
    let post = server
        .send("POST", path, ("colls", "dbs/db/colls/c"), None, &[])
        .await;
    assert_ne!(post.status, StatusCode::OK);
}

#[tokio::test]
async fn the_ttl_overview_reports_the_engines_figures() {
    let server = Server::new();
    server
        .setup(json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 600}))
        .await;
    for (id, ttl) in [("a", json!(30)), ("b", json!(7200)), ("c", json!(-1))] {
        let created = server
            .create_item(json!({"id": id, "pk": "p", "ttl": ttl}))
            .await;
        assert_eq!(created.status, StatusCode::CREATED);
    }
    let created = server.create_item(json!({"id": "d", "pk": "p"})).await;
    assert_eq!(created.status, StatusCode::CREATED);
    server.clock.advance_ms(45_000);
    let answer = overview(&server, "/_lethedb/ttl/dbs/db/colls/c?previewDefaultTtl=40").await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(answer.header("content-type"), "application/json");
    assert_eq!(
        answer.body,
        json!({
            "database": "db",
            "container": "c",
            "nowMs": START_MS + 45_000,
            "defaultTtl": 600,
            // d (600 s, 555 s left) within the hour, b (2 h) within the day.
            "expiring": {"nextMinute": 0, "nextHour": 1, "nextDay": 2},
            // a expired 15 s ago and no sweeper runs here.
            "expiredUnswept": 1,
            "oldestExpiredAgeMs": 15_000,
            "sweeper": {"deletedTotal": 0, "deletionsPerSec": 0.0},
            "complete": true,
            // A 40 s default would expire d at once.
            "preview": {
                "defaultTtl": 40,
                "expireAtOnce": 1,
                "expiring": {"nextMinute": 0, "nextHour": 0, "nextDay": 1},
            },
        })
    );
    // The expired item is invisible to reads while the overview counts it.
    assert_eq!(
        server.read_item("a", "p").await.status,
        StatusCode::NOT_FOUND
    );
    let off = overview(
        &server,
        "/_lethedb/ttl/dbs/db/colls/c?previewDefaultTtl=off",
    )
    .await;
    assert_eq!(off.body["preview"]["defaultTtl"], Value::Null);
    assert_eq!(off.body["preview"]["expireAtOnce"], json!(0));
}

#[tokio::test]
async fn a_custom_key_never_reaches_an_unauthenticated_caller() {
    let server = custom_key_server();
    server
        .setup(json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 60}))
        .await;
    let decoded = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, CUSTOM_KEY)
        .expect("base64");
    let mut paths: Vec<String> = ASSETS
        .iter()
        .map(|asset| format!("/_explorer/{}", asset.name))
        .collect();
    paths.extend(
        [
            "/_explorer/",
            "/_explorer",
            "/_explorer/config.json",
            "/_lethedb/stats",
            "/_lethedb/ttl/dbs/db/colls/c",
            "/metrics",
            "/",
            "/dbs",
            "/dbs/db/colls/c",
        ]
        .map(String::from),
    );
    for path in paths {
        let answer = get(&server, &path).await;
        let headers = format!("{:?}", answer.headers);
        for haystack in [answer.bytes.as_ref(), headers.as_bytes()] {
            assert!(
                !contains(haystack, CUSTOM_KEY.as_bytes()) && !contains(haystack, &decoded),
                "{path} shows the key"
            );
        }
    }
    // The signed emulator key is refused, so the page asks for the key instead of showing it.
    let emulator = MasterKey::from_base64(EMULATOR_KEY).expect("key");
    let date = server.date(0);
    let refused = server
        .raw(
            Request::get("/")
                .header("x-ms-date", &date)
                .header(
                    "authorization",
                    emulator.authorization_header("GET", "", "", &date),
                )
                .body(Body::empty())
                .expect("request"),
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}
