//! Resource tokens on the wire: what a permission's `_token` allows, refuses (403) and no
//! longer allows once expired (403, by the engine's manual clock) or revoked (401); forged
//! tokens (401); and the emulator's Entra ID
//! tokens (HTTPS only, and off with `--no-entra-id`).

use super::*;
use base64::Engine as _;

impl Server {
    /// Sends a request whose whole `authorization` header is `authorization`, URL-encoded as
    /// the SDKs send it.
    pub(super) async fn send_as(
        &self,
        authorization: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Answer {
        let encoded = percent_encoding::utf8_percent_encode(
            authorization,
            percent_encoding::NON_ALPHANUMERIC,
        )
        .to_string();
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header("x-ms-date", self.date(0))
            .header("authorization", encoded);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let body = body.map_or(Body::empty(), |b| Body::from(b.to_string()));
        self.raw(request.body(body).expect("request")).await
    }

    /// Creates user `u` (once) and a permission on it; answers the permission's `_token`.
    pub(super) async fn permission(
        &self,
        id: &str,
        body: Value,
        headers: &[(&str, &str)],
    ) -> String {
        self.send(
            "POST",
            "/dbs/db/users",
            ("users", "dbs/db"),
            Some(json!({"id": "u"})),
            &[],
        )
        .await;
        let mut body = body;
        body["id"] = json!(id);
        let created = self
            .send(
                "POST",
                "/dbs/db/users/u/permissions",
                ("permissions", "dbs/db/users/u"),
                Some(body),
                headers,
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
        created.body["_token"].as_str().expect("token").to_string()
    }
}

pub(super) const PK_A: &str = r#"["a"]"#;
pub(super) const PK_B: &str = r#"["b"]"#;

#[tokio::test]
async fn a_read_token_reads_its_container_and_is_refused_everything_else() {
    let server = Server::new();
    server.setup(partitioned()).await;
    server.create_item(json!({"id": "1", "pk": "a"})).await;
    let token = server
        .permission(
            "p",
            json!({"permissionMode": "Read", "resource": "dbs/db/colls/c"}),
            &[],
        )
        .await;
    let pk = &[("x-ms-documentdb-partitionkey", PK_A)];
    let query = [
        ("x-ms-documentdb-isquery", "True"),
        ("content-type", "application/query+json"),
        ("x-ms-documentdb-query-enablecrosspartition", "True"),
    ];
    let allowed = [
        server.send_as(&token, "GET", "/", None, &[]).await,
        server.send_as(&token, "GET", "/dbs/db", None, &[]).await,
        server
            .send_as(&token, "GET", "/dbs/db/colls/c", None, &[])
            .await,
        server
            .send_as(&token, "GET", "/dbs/db/colls/c/pkranges", None, &[])
            .await,
        server
            .send_as(&token, "GET", "/dbs/db/colls/c/docs/1", None, pk)
            .await,
        server
            .send_as(&token, "GET", "/dbs/db/colls/c/docs", None, &[])
            .await,
        server
            .send_as(
                &token,
                "POST",
                "/dbs/db/colls/c/docs",
                Some(json!({"query": "SELECT * FROM c"})),
                &query,
            )
            .await,
    ];
    for answer in &allowed {
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    }
    let refused = [
        server
            .send_as(
                &token,
                "POST",
                "/dbs/db/colls/c/docs",
                Some(json!({"id": "2", "pk": "a"})),
                pk,
            )
            .await,
        server
            .send_as(&token, "DELETE", "/dbs/db/colls/c/docs/1", None, pk)
            .await,
        server
            .send_as(&token, "DELETE", "/dbs/db/colls/c", None, &[])
            .await,
        server
            .send_as(&token, "GET", "/dbs/db/users", None, &[])
            .await,
        server
            .send_as(&token, "GET", "/dbs/db/users/u/permissions/p", None, &[])
            .await,
        server.send_as(&token, "GET", "/offers", None, &[]).await,
        server.send_as(&token, "GET", "/dbs", None, &[]).await,
        server.send_as(&token, "GET", "/dbs/other", None, &[]).await,
    ];
    for answer in &refused {
        check_error(
            answer,
            StatusCode::FORBIDDEN,
            "Forbidden",
            "Insufficient permissions provided in the authorization header",
        );
    }
}

#[tokio::test]
async fn an_all_token_scoped_to_a_partition_key_refuses_other_keys() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let token = server
        .permission("p", json!({"permissionMode": "All", "resource": "dbs/db/colls/c", "resourcePartitionKey": ["a"]}), &[])
        .await;
    let created = server
        .send_as(
            &token,
            "POST",
            "/dbs/db/colls/c/docs",
            Some(json!({"id": "1", "pk": "a"})),
            &[("x-ms-documentdb-partitionkey", PK_A)],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let other = server
        .send_as(
            &token,
            "POST",
            "/dbs/db/colls/c/docs",
            Some(json!({"id": "2", "pk": "b"})),
            &[("x-ms-documentdb-partitionkey", PK_B)],
        )
        .await;
    assert_eq!(other.status, StatusCode::FORBIDDEN);
    let batch = |pk: &'static str| json!([{"operationType": "Create", "partitionKey": pk, "resourceBody": {"id": "3", "pk": "a"}}]);
    let batch_headers = [
        ("x-ms-cosmos-is-batch-request", "True"),
        ("x-ms-cosmos-batch-atomic", "True"),
        ("x-ms-documentdb-partitionkey", PK_A),
    ];
    let mixed = server
        .send_as(
            &token,
            "POST",
            "/dbs/db/colls/c/docs",
            Some(batch(PK_B)),
            &batch_headers,
        )
        .await;
    assert_eq!(mixed.status, StatusCode::FORBIDDEN);
    let same = server
        .send_as(
            &token,
            "POST",
            "/dbs/db/colls/c/docs",
            Some(batch(PK_A)),
            &batch_headers,
        )
        .await;
    assert_eq!(same.status, StatusCode::OK, "{}", same.body);
    let query = [
        ("x-ms-documentdb-isquery", "True"),
        ("content-type", "application/query+json"),
        ("x-ms-documentdb-query-enablecrosspartition", "True"),
    ];
    let across = server
        .send_as(
            &token,
            "POST",
            "/dbs/db/colls/c/docs",
            Some(json!({"query": "SELECT * FROM c"})),
            &query,
        )
        .await;
    assert_eq!(across.status, StatusCode::FORBIDDEN);
    let deleted = server
        .send_as(
            &token,
            "DELETE",
            "/dbs/db/colls/c/docs/1",
            None,
            &[("x-ms-documentdb-partitionkey", PK_A)],
        )
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
}

/// The partition key header has one grammar whoever reads it: a token's key check and the
/// operation read it alike (a bare value is the operation's 400, not a match), and a
/// permission's key is kept in the engine's type (a bare value, `1` against `1.0`).
#[tokio::test]
async fn a_partition_scoped_token_reads_the_header_in_the_engines_grammar() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let token = server
        .permission("p", json!({"permissionMode": "All", "resource": "dbs/db/colls/c", "resourcePartitionKey": "a"}), &[])
        .await;
    let create = |id: &str, header: &'static str| {
        let body = json!({"id": id, "pk": "a"});
        let token = &token;
        let server = &server;
        async move {
            server
                .send_as(
                    token,
                    "POST",
                    "/dbs/db/colls/c/docs",
                    Some(body),
                    &[("x-ms-documentdb-partitionkey", header)],
                )
                .await
        }
    };
    let created = create("1", PK_A).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    for header in [r#""a""#, "not json", r#"[["a"]]"#] {
        let refused = create("2", header).await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{header}: {}",
            refused.body
        );
        assert!(
            refused.body["message"]
                .as_str()
                .is_some_and(|message| message.contains("is invalid")),
            "{header}: {}",
            refused.body
        );
    }
    let numbered = server
        .permission("n", json!({"permissionMode": "All", "resource": "dbs/db/colls/c/docs", "resourcePartitionKey": [1]}), &[])
        .await;
    let read = server
        .send_as(
            &numbered,
            "GET",
            "/dbs/db/colls/c/docs/1",
            None,
            &[("x-ms-documentdb-partitionkey", "[1.0]")],
        )
        .await;
    assert_eq!(read.status, StatusCode::NOT_FOUND, "{}", read.body);
    let nested = server
        .send(
            "POST",
            "/dbs/db/users/u/permissions",
            ("permissions", "dbs/db/users/u"),
            Some(json!({"id": "x", "permissionMode": "All", "resource": "dbs/db/colls/c/udfs", "resourcePartitionKey": [["a"]]})),
            &[],
        )
        .await;
    check_error(
        &nested,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "The resourcePartitionKey of a permission must be a partition key value.",
    );
}

#[tokio::test]
async fn tokens_expire_by_the_clock_and_forged_ones_are_401() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let token = server
        .permission(
            "p",
            json!({"permissionMode": "Read", "resource": "dbs/db/colls/c"}),
            &[("x-ms-documentdb-expiry-seconds", "10")],
        )
        .await;
    assert_eq!(
        server
            .send_as(&token, "GET", "/dbs/db/colls/c", None, &[])
            .await
            .status,
        StatusCode::OK
    );
    server.clock.advance_ms(10_000);
    assert_eq!(
        server
            .send_as(&token, "GET", "/dbs/db/colls/c", None, &[])
            .await
            .status,
        StatusCode::OK
    );
    server.clock.advance_ms(1_000);
    let expired = server
        .send_as(&token, "GET", "/dbs/db/colls/c", None, &[])
        .await;
    check_error(
        &expired,
        StatusCode::FORBIDDEN,
        "Forbidden",
        "The authorization token is not valid at the current time. Please create another token and retry (token start time: ",
    );
    assert!(expired.body["message"]
        .as_str()
        .is_some_and(|m| m.contains("token expiry time")));

    // The default lifetime is one hour.
    let hour = server
        .permission(
            "q",
            json!({"permissionMode": "Read", "resource": "dbs/db/colls/d"}),
            &[],
        )
        .await;
    server.clock.advance_ms(3_600_000);
    assert_eq!(
        server
            .send_as(&hour, "GET", "/dbs/db", None, &[])
            .await
            .status,
        StatusCode::OK
    );
    server.clock.advance_ms(1_000);
    assert_eq!(
        server
            .send_as(&hour, "GET", "/dbs/db", None, &[])
            .await
            .status,
        StatusCode::FORBIDDEN
    );

    let fresh = server
        .permission(
            "r",
            json!({"permissionMode": "All", "resource": "dbs/db/colls/e"}),
            &[],
        )
        .await;
    let (head, rest) = fresh.split_at("type=resource&ver=1&sig=".len());
    let payload = rest.split(';').nth(1).expect("payload");
    let forged_mac = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    for forged in [
        format!("{head}{forged_mac};{payload};"),
        "type=resource&ver=1&sig=garbage".to_string(),
        "type=resource&".to_string(),
    ] {
        let answer = server
            .send_as(&forged, "GET", "/dbs/db/colls/c", None, &[])
            .await;
        check_error(
            &answer,
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            "authorization token",
        );
    }
    let none = server
        .raw(
            Request::builder()
                .uri("/dbs/db")
                .body(Body::empty())
                .expect("request"),
        )
        .await;
    assert_eq!(none.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn replacing_or_deleting_a_permission_revokes_its_tokens() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let body = json!({"permissionMode": "Read", "resource": "dbs/db/colls/c"});
    let first = server.permission("p", body.clone(), &[]).await;
    assert_eq!(
        server
            .send_as(&first, "GET", "/dbs/db/colls/c", None, &[])
            .await
            .status,
        StatusCode::OK
    );
    server.clock.advance_ms(5);
    let replaced = server
        .send(
            "PUT",
            "/dbs/db/users/u/permissions/p",
            ("permissions", "dbs/db/users/u/permissions/p"),
            Some(json!({"id": "p", "permissionMode": "Read", "resource": "dbs/db/colls/c"})),
            &[],
        )
        .await;
    assert_eq!(replaced.status, StatusCode::OK, "{}", replaced.body);
    assert_eq!(
        server
            .send_as(&first, "GET", "/dbs/db/colls/c", None, &[])
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    let second = replaced.body["_token"].as_str().expect("token").to_string();
    assert_eq!(
        server
            .send_as(&second, "GET", "/dbs/db/colls/c", None, &[])
            .await
            .status,
        StatusCode::OK
    );
    server
        .send(
            "DELETE",
            "/dbs/db/users/u/permissions/p",
            ("permissions", "dbs/db/users/u/permissions/p"),
            None,
            &[],
        )
        .await;
    assert_eq!(
        server
            .send_as(&second, "GET", "/dbs/db/colls/c", None, &[])
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn a_rid_link_permission_covers_the_named_resource() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let container = server
        .send(
            "GET",
            "/dbs/db/colls/c",
            ("colls", "dbs/db/colls/c"),
            None,
            &[],
        )
        .await;
    let self_link = container.body["_self"].as_str().expect("self").to_string();
    let token = server
        .permission(
            "p",
            json!({"permissionMode": "Read", "resource": self_link}),
            &[],
        )
        .await;
    assert_eq!(
        server
            .send_as(&token, "GET", "/dbs/db/colls/c/docs", None, &[])
            .await
            .status,
        StatusCode::OK
    );
}

fn entra_token(key_text: &str, expires_in_secs: i64) -> String {
    let now = START_MS / 1000;
    let encode = |text: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text);
    let header = encode(
        r#"{"typ":"JWT","alg":"RS256","x5t":"CosmosEmulatorPrimaryMaster","kid":"CosmosEmulatorPrimaryMaster"}"#,
    );
    let claims = encode(&format!(
        r#"{{"aud":"https://localhost.localhost","iat":{now},"nbf":{now},"exp":{}}}"#,
        now + expires_in_secs
    ));
    format!(
        "type=aad&ver=1.0&sig={header}.{claims}.{}",
        encode(key_text)
    )
}

#[tokio::test]
async fn entra_id_tokens_work_over_https_only_and_can_be_turned_off() {
    let https = Server::with(|state| state.certificate_pem = Some(Arc::new("pem".into())));
    let good = entra_token(EMULATOR_KEY, 3600);
    assert_eq!(
        https.send_as(&good, "GET", "/", None, &[]).await.status,
        StatusCode::OK
    );
    // Management operations are not data-plane operations: 403, substatus 5300.
    let management = https
        .send_as(&good, "POST", "/dbs", Some(json!({"id": "db"})), &[])
        .await;
    check_error(&management, StatusCode::FORBIDDEN, "Forbidden", "Request blocked by Auth lethedb : The given request [POST /dbs] cannot be authorized by AAD token in data plane.");
    assert_eq!(management.header("x-ms-substatus"), "5300");
    https.setup(partitioned()).await;
    let created = https
        .send_as(
            &good,
            "POST",
            "/dbs/db/colls/c/docs",
            Some(json!({"id": "1", "pk": "a"})),
            &[("x-ms-documentdb-partitionkey", PK_A)],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(
        https
            .send_as(&good, "DELETE", "/dbs/db", None, &[])
            .await
            .status,
        StatusCode::FORBIDDEN
    );
    for refused in [entra_token("AAAA", 3600), entra_token(EMULATOR_KEY, -3600)] {
        assert_eq!(
            https.send_as(&refused, "GET", "/", None, &[]).await.status,
            StatusCode::UNAUTHORIZED
        );
    }
    let http = Server::new();
    let answer = http.send_as(&good, "GET", "/", None, &[]).await;
    check_error(
        &answer,
        StatusCode::UNAUTHORIZED,
        "Unauthorized",
        "only over HTTPS",
    );
    let off = Server::with(|state| {
        state.certificate_pem = Some(Arc::new("pem".into()));
        state.entra_id = false;
    });
    assert_eq!(
        off.send_as(&good, "GET", "/", None, &[]).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn a_mode_sent_in_lower_case_is_echoed_as_sent_and_still_grants_its_rights() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let token = server
        .permission(
            "p",
            json!({"permissionMode": "all", "resource": "dbs/db/colls/c"}),
            &[],
        )
        .await;
    let read = server
        .send(
            "GET",
            "/dbs/db/users/u/permissions/p",
            ("permissions", "dbs/db/users/u/permissions/p"),
            None,
            &[],
        )
        .await;
    assert_eq!(read.body["permissionMode"], "all", "{}", read.body);
    let created = server
        .send_as(
            &token,
            "POST",
            "/dbs/db/colls/c/docs",
            Some(json!({"id": "1", "pk": "a"})),
            &[("x-ms-documentdb-partitionkey", PK_A)],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
}
