//! Hostile requests through the whole router: every route the classifier knows (`ROUTES`),
//! every other verb on their paths and the internal statistics, each sent with every way of
//! getting authentication wrong (`Bad`), against resources that exist and against the same
//! paths naming nothing. Each answer must be a Cosmos error (401, or 403 for a date outside the
//! clock skew; 400 for a path that is not UTF-8), never a success, a 404 or a 5xx, and the same
//! whether or not the named resources exist. Headers that are not UTF-8 on signed requests get a
//! 400 or are ignored, never a 5xx.

use super::operations::ROUTES;
use super::*;
use crate::routes::ResourcePath;
use axum::http::{HeaderValue, Method};
use std::collections::BTreeSet;

/// Every way a request's authentication can be wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bad {
    Missing,
    Garbage,
    NoSignature,
    SignatureNotBase64,
    UnknownTokenType,
    ForgedResourceToken,
    /// The emulator's Entra ID format over plain HTTP, where it is refused.
    EntraOverHttp,
    WrongKey,
    WrongVerb,
    WrongLink,
    ParentLink,
    WrongResourceType,
    StaleDate,
    FutureDate,
    UnparseableDate,
    MissingDate,
    AuthorizationNotUtf8,
    DateNotUtf8,
    OversizedAuthorization,
    OversizedDate,
}

const BAD: [Bad; 20] = [
    Bad::Missing,
    Bad::Garbage,
    Bad::NoSignature,
    Bad::SignatureNotBase64,
    Bad::UnknownTokenType,
    Bad::ForgedResourceToken,
    Bad::EntraOverHttp,
    Bad::WrongKey,
    Bad::WrongVerb,
    Bad::WrongLink,
    Bad::ParentLink,
    Bad::WrongResourceType,
    Bad::StaleDate,
    Bad::FutureDate,
    Bad::UnparseableDate,
    Bad::MissingDate,
    Bad::AuthorizationNotUtf8,
    Bad::DateNotUtf8,
    Bad::OversizedAuthorization,
    Bad::OversizedDate,
];

/// Large enough to exceed every limit the server reads a header under.
const OVERSIZED_BYTES: usize = 64 * 1024;

/// The verbs tried on every path, besides the ones the route table gives it.
const VERBS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// The status and Cosmos code `bad` must get.
fn expected(bad: Bad) -> (StatusCode, &'static str) {
    match bad {
        Bad::StaleDate | Bad::FutureDate => (StatusCode::FORBIDDEN, "Forbidden"),
        _ => (StatusCode::UNAUTHORIZED, "Unauthorized"),
    }
}

/// The same path with every id renamed, so that it names nothing (`operations/...` is not an
/// id).
fn naming_nothing(path: &str) -> String {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let renamed: Vec<String> = segments
        .iter()
        .enumerate()
        .map(|(index, segment)| {
            let is_id = index % 2 == 1 && segments.get(index - 1) != Some(&"operations");
            if is_id {
                format!("{segment}-absent")
            } else {
                segment.to_string()
            }
        })
        .collect();
    format!("/{}", renamed.join("/"))
}

fn header_value(bytes: &[u8]) -> HeaderValue {
    HeaderValue::from_bytes(bytes).expect("header value")
}

/// A request to `path` whose authentication is wrong in the way `bad` says.
fn hostile(
    server: &Server,
    bad: Bad,
    (method, path, pairs): (&str, &str, &[(&str, &str)]),
) -> Request<Body> {
    let signed = ResourcePath::parse(path).expect("path");
    let (resource_type, link) = (signed.resource_type.as_str(), signed.link.as_str());
    let date = server.date(0);
    let key = &server.key;
    let other_key = MasterKey::from_base64("b3RoZXIta2V5LW5vYm9keS1oYXM=").expect("key");
    let other_verb = if method == "GET" { "POST" } else { "GET" };
    let other_type = if resource_type == "dbs" {
        "docs"
    } else {
        "dbs"
    };
    let parent = link.rsplitn(3, '/').nth(2).unwrap_or("dbs");
    let stale = server.date(-(16 * 60));
    let future = server.date(16 * 60);
    let huge = "A".repeat(OVERSIZED_BYTES);
    let (authorization, date): (Option<HeaderValue>, Option<HeaderValue>) = match bad {
        Bad::Missing => (None, Some(header_value(date.as_bytes()))),
        Bad::Garbage => (Some(header_value(b"garbage")), None),
        Bad::NoSignature => (Some(header_value(b"type%3Dmaster%26ver%3D1.0")), None),
        Bad::SignatureNotBase64 => (
            Some(header_value(b"type%3Dmaster%26ver%3D1.0%26sig%3D%21%21%21")),
            None,
        ),
        Bad::UnknownTokenType => (
            Some(header_value(b"type%3Dother%26ver%3D1.0%26sig%3DAAAA")),
            None,
        ),
        Bad::ForgedResourceToken => (
            Some(header_value(
                b"type%3Dresource%26ver%3D1%26sig%3DAAAA%3BeyJ9%3B",
            )),
            None,
        ),
        Bad::EntraOverHttp => (
            Some(header_value(b"type%3Daad%26ver%3D1.0%26sig%3Da.b.c")),
            None,
        ),
        Bad::WrongKey => (
            Some(header_value(
                other_key
                    .authorization_header(method, resource_type, link, &date)
                    .as_bytes(),
            )),
            None,
        ),
        Bad::WrongVerb => (
            Some(header_value(
                key.authorization_header(other_verb, resource_type, link, &date)
                    .as_bytes(),
            )),
            None,
        ),
        Bad::WrongLink => (
            Some(header_value(
                key.authorization_header(method, resource_type, &format!("{link}x"), &date)
                    .as_bytes(),
            )),
            None,
        ),
        Bad::ParentLink => (
            Some(header_value(
                key.authorization_header(method, resource_type, parent, &date)
                    .as_bytes(),
            )),
            None,
        ),
        Bad::WrongResourceType => (
            Some(header_value(
                key.authorization_header(method, other_type, link, &date)
                    .as_bytes(),
            )),
            None,
        ),
        Bad::StaleDate => (
            Some(header_value(
                key.authorization_header(method, resource_type, link, &stale)
                    .as_bytes(),
            )),
            Some(header_value(stale.as_bytes())),
        ),
        Bad::FutureDate => (
            Some(header_value(
                key.authorization_header(method, resource_type, link, &future)
                    .as_bytes(),
            )),
            Some(header_value(future.as_bytes())),
        ),
        Bad::UnparseableDate => (
            Some(header_value(
                key.authorization_header(method, resource_type, link, "yesterday")
                    .as_bytes(),
            )),
            Some(header_value(b"yesterday")),
        ),
        Bad::MissingDate => {
            let signed = key.authorization_header(method, resource_type, link, &date);
            return build(
                method,
                path,
                pairs,
                Some(header_value(signed.as_bytes())),
                None,
            );
        }
        Bad::AuthorizationNotUtf8 => (
            Some(header_value(b"type=master&ver=1.0&sig=\xff\xfe\x80")),
            None,
        ),
        Bad::DateNotUtf8 => (
            Some(header_value(
                key.authorization_header(method, resource_type, link, &date)
                    .as_bytes(),
            )),
            Some(header_value(b"Thu, 15 Jan 2027 \xff\xfe GMT")),
        ),
        Bad::OversizedAuthorization => (
            Some(header_value(
                format!("type%3Dmaster%26ver%3D1.0%26sig%3D{huge}").as_bytes(),
            )),
            None,
        ),
        Bad::OversizedDate => (
            Some(header_value(
                key.authorization_header(method, resource_type, link, &huge)
                    .as_bytes(),
            )),
            Some(header_value(huge.as_bytes())),
        ),
    };
    let date = date.or_else(|| Some(header_value(server.date(0).as_bytes())));
    build(method, path, pairs, authorization, date)
}

fn build(
    method: &str,
    path: &str,
    pairs: &[(&str, &str)],
    authorization: Option<HeaderValue>,
    date: Option<HeaderValue>,
) -> Request<Body> {
    let mut request = Request::builder()
        .method(Method::from_bytes(method.as_bytes()).expect("method"))
        .uri(path)
        .header("host", "127.0.0.1:8081");
    if let Some(authorization) = authorization {
        request = request.header("authorization", authorization);
    }
    if let Some(date) = date {
        request = request.header("x-ms-date", date);
    }
    for (name, value) in pairs {
        request = request.header(*name, *value);
    }
    let body = if method == "GET" || method == "HEAD" {
        Body::empty()
    } else {
        Body::from(json!({"id": "hostile", "pk": "a"}).to_string())
    };
    request.body(body).expect("request")
}

/// A refusal, Cosmos-shaped: the status and code expected, a message, the activity id.
fn check_refusal(answer: &Answer, status: StatusCode, code: &str, what: &str) {
    assert_eq!(answer.status, status, "{what}: {}", answer.body);
    assert!(!answer.header("x-ms-activity-id").is_empty(), "{what}");
    if what.starts_with("HEAD ") {
        return;
    }
    assert_eq!(answer.header("content-type"), "application/json", "{what}");
    assert_eq!(answer.body["code"], json!(code), "{what}: {}", answer.body);
    assert!(
        answer.body["message"].is_string(),
        "{what}: {}",
        answer.body
    );
}

/// Resources named as the route table names them (database `d`, container `c`, item `i`, user
/// `u`, permission `p`, scripts `s`), so that the sweep reaches paths that exist.
pub(super) async fn populated() -> Server {
    let server = Server::new();
    let create = |path: &'static str, link: &'static str, resource_type, body: Value| {
        let server = &server;
        async move {
            let created = server
                .send("POST", path, (resource_type, link), Some(body), &[])
                .await;
            assert_eq!(
                created.status,
                StatusCode::CREATED,
                "{path}: {}",
                created.body
            );
        }
    };
    create("/dbs", "", "dbs", json!({"id": "d"})).await;
    create(
        "/dbs/d/colls",
        "dbs/d",
        "colls",
        json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2}}),
    )
    .await;
    let created = server
        .send(
            "POST",
            "/dbs/d/colls/c/docs",
            ("docs", "dbs/d/colls/c"),
            Some(json!({"id": "i", "pk": "a"})),
            &[("x-ms-documentdb-partitionkey", "[\"a\"]")],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    create("/dbs/d/users", "dbs/d", "users", json!({"id": "u"})).await;
    create(
        "/dbs/d/users/u/permissions",
        "dbs/d/users/u",
        "permissions",
        json!({"id": "p", "permissionMode": "Read", "resource": "dbs/d/colls/c"}),
    )
    .await;
    let body = json!({"id": "s", "body": "function main() {}"});
    create(
        "/dbs/d/colls/c/sprocs",
        "dbs/d/colls/c",
        "sprocs",
        body.clone(),
    )
    .await;
    create("/dbs/d/colls/c/udfs", "dbs/d/colls/c", "udfs", body).await;
    create(
        "/dbs/d/colls/c/triggers",
        "dbs/d/colls/c",
        "triggers",
        json!({"id": "s", "body": "function main() {}", "triggerType": "Pre", "triggerOperation": "All"}),
    )
    .await;
    server
}

/// A route swept: method, path, and the headers that make its operation.
type Swept = (String, String, &'static [(&'static str, &'static str)]);

/// The routes swept: every row of the route table, every other verb on the table's paths, the
/// internal statistics, and paths made of the resources' `_rid`s.
async fn sweep_routes(server: &Server) -> Vec<Swept> {
    let mut routes: Vec<Swept> = ROUTES
        .iter()
        .map(|(method, path, pairs, _)| (method.to_string(), path.to_string(), *pairs))
        .collect();
    let paths: BTreeSet<&str> = ROUTES.iter().map(|(_, path, _, _)| *path).collect();
    for path in paths
        .iter()
        .chain(&["/_lethedb/stats", "/_explorer/x", "/nothing/here"])
    {
        for verb in VERBS {
            let listed = ROUTES.iter().any(|(method, listed, pairs, _)| {
                *method == verb && listed == path && pairs.is_empty()
            });
            if !listed {
                routes.push((verb.to_string(), path.to_string(), &[]));
            }
        }
    }
    let database = server
        .send("GET", "/dbs/d", ("dbs", "dbs/d"), None, &[])
        .await;
    let container = server
        .send(
            "GET",
            "/dbs/d/colls/c",
            ("colls", "dbs/d/colls/c"),
            None,
            &[],
        )
        .await;
    let (database, container) = (
        database.body["_rid"].as_str().expect("rid").to_string(),
        container.body["_rid"].as_str().expect("rid").to_string(),
    );
    for path in [
        format!("/dbs/{database}"),
        format!("/dbs/{database}/colls/{container}"),
        format!("/dbs/{database}/colls/{container}/docs"),
    ] {
        for verb in ["GET", "DELETE"] {
            routes.push((verb.to_string(), path.clone(), &[]));
        }
    }
    routes
}

#[tokio::test]
async fn every_route_refuses_every_bad_signature_alike_whether_or_not_it_exists() {
    let server = populated().await;
    let routes = sweep_routes(&server).await;
    let mut sent = 0usize;
    for (method, path, pairs) in &routes {
        for bad in BAD {
            let (status, code) = expected(bad);
            let mut seen = Vec::new();
            for target in [path.clone(), naming_nothing(path)] {
                let what = format!("{method} {target} {pairs:?} {bad:?}");
                let answer = server
                    .raw(hostile(&server, bad, (method, &target, pairs)))
                    .await;
                check_refusal(&answer, status, code, &what);
                seen.push((answer.status, answer.body["code"].clone()));
                sent += 1;
            }
            assert_eq!(seen[0], seen[1], "{method} {path} {bad:?}: existence leaks");
        }
    }
    // Paths that are not UTF-8 once decoded are malformed whoever sends them: 400, unsigned or
    // signed over the raw link.
    for (method, path, pairs) in &routes {
        let target = format!("{}/%FF%FE", path.trim_end_matches('/'));
        let date = server.date(0);
        let raw_link = target.trim_start_matches('/');
        let signed = server
            .key
            .authorization_header(method, "dbs", raw_link, &date);
        for authorization in [None, Some(header_value(signed.as_bytes()))] {
            let what = format!("{method} {target} signed={}", authorization.is_some());
            let request = build(
                method,
                &target,
                pairs,
                authorization,
                Some(header_value(date.as_bytes())),
            );
            check_refusal(
                &server.raw(request).await,
                StatusCode::BAD_REQUEST,
                "BadRequest",
                &what,
            );
            sent += 1;
        }
    }
    let route_count = routes.len();
    eprintln!(
        "hostile sweep: {route_count} routes × {} bad signatures × 2 (existing, absent) + {} non-UTF-8 paths = {sent} requests",
        BAD.len(),
        route_count * 2
    );
    assert!(route_count >= ROUTES.len() + 50, "{route_count}");
    // Nothing was changed by any of them.
    let item = server
        .send(
            "GET",
            "/dbs/d/colls/c/docs/i",
            ("docs", "dbs/d/colls/c/docs/i"),
            None,
            &[("x-ms-documentdb-partitionkey", "[\"a\"]")],
        )
        .await;
    assert_eq!(item.status, StatusCode::OK, "{}", item.body);
    let feed = server
        .send(
            "GET",
            "/dbs/d/colls/c/docs",
            ("docs", "dbs/d/colls/c"),
            None,
            &[],
        )
        .await;
    assert_eq!(feed.body["_count"], json!(1), "{}", feed.body);
}

#[tokio::test]
async fn the_sweep_signs_correctly_when_nothing_is_wrong() {
    // The variants differ from a valid request in one thing only: the same request signed
    // properly is never refused.
    let server = populated().await;
    for (method, path, pairs, _) in ROUTES.iter().filter(|(method, ..)| *method == "GET") {
        let request = hostile(&server, Bad::Missing, (method, path, pairs));
        let (mut parts, body) = request.into_parts();
        let signed = ResourcePath::parse(path).expect("path");
        let date = server.date(0);
        parts.headers.insert(
            "authorization",
            header_value(
                server
                    .key
                    .authorization_header(method, &signed.resource_type, &signed.link, &date)
                    .as_bytes(),
            ),
        );
        let answer = server.raw(Request::from_parts(parts, body)).await;
        assert!(
            answer.status != StatusCode::UNAUTHORIZED && answer.status != StatusCode::FORBIDDEN,
            "{method} {path}: {} {}",
            answer.status,
            answer.body
        );
    }
}

#[tokio::test]
async fn headers_that_are_not_utf8_on_signed_requests_get_a_400_or_are_ignored() {
    let server = populated().await;
    let names = [
        "x-ms-documentdb-partitionkey",
        "x-ms-consistency-level",
        "x-ms-session-token",
        "x-ms-continuation",
        "x-ms-max-item-count",
        "if-none-match",
        "a-im",
        "x-ms-documentdb-partitionkeyrangeid",
        "x-ms-activity-id",
        "content-type",
    ];
    let mut sent = 0;
    for (method, path, pairs, _) in ROUTES.iter().filter(|(method, ..)| *method == "GET") {
        for name in names {
            let signed = ResourcePath::parse(path).expect("path");
            let date = server.date(0);
            let authorization =
                server
                    .key
                    .authorization_header(method, &signed.resource_type, &signed.link, &date);
            let mut request = build(
                method,
                path,
                pairs,
                Some(header_value(authorization.as_bytes())),
                Some(header_value(date.as_bytes())),
            );
            request
                .headers_mut()
                .insert(name, header_value(b"\xff\xfe not utf-8 \x80"));
            let answer = server.raw(request).await;
            let what = format!("{method} {path} {name}");
            assert!(!answer.status.is_server_error(), "{what}: {}", answer.body);
            assert_ne!(answer.status, StatusCode::UNAUTHORIZED, "{what}");
            if !answer.status.is_success() && answer.status != StatusCode::NOT_MODIFIED {
                assert!(answer.body["code"].is_string(), "{what}: {}", answer.body);
            }
            sent += 1;
        }
    }
    assert!(sent > 100, "{sent}");
}
