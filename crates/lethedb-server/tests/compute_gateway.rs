//! The compute gateway (`--compute-gateway-port`): a second listener on the same account and
//! data that reads a path's ids as sent, where the main port (the routing gateway) checks the
//! signature over the ids decoded once more and trimmed. The JavaScript SDK's `itemIdEncoding`
//! tests expect 401 on the emulator's port 8081 and 200 on its port 8903 for the same item.

// Tests assert by panicking, helpers included (clippy allows it only inside #[test] fns).
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use lethedb_auth::{MasterKey, EMULATOR_KEY};
use std::net::SocketAddr;

/// The port of an endpoint URL (`http://127.0.0.1:PORT/`).
fn port_of(endpoint: &str) -> u16 {
    let authority = endpoint.trim_end_matches('/').rsplit(':').next();
    authority
        .and_then(|port| port.parse().ok())
        .expect("a port")
}

/// Sends a request signed for `resource_type` and `link` with the emulator's key.
fn signed_send(
    address: SocketAddr,
    (method, path): (&str, &str),
    (resource_type, link): (&str, &str),
    extra_headers: &str,
    body: &str,
) -> common::Answer {
    let key = MasterKey::from_base64(EMULATOR_KEY).expect("key");
    let headers = common::signed(&key, method, resource_type, link) + extra_headers;
    common::send(address, (method, path), &headers, body)
}

#[test]
fn the_compute_gateway_serves_ids_the_routing_gateway_refuses_from_the_same_data() {
    let server = common::start(
        &["--bind", "127.0.0.1:0", "--compute-gateway-port", "0"],
        &[],
    )
    .expect("starts");
    let line = common::wait_for_ready_line(&server);
    let compute_endpoint = line["computeGateway"].as_str().expect("computeGateway");
    let compute = SocketAddr::from(([127, 0, 0, 1], port_of(compute_endpoint)));
    assert_ne!(compute, server.address);
    let main = server.address;
    let created = [
        (("POST", "/dbs"), ("dbs", ""), "", r#"{"id":"db"}"#),
        (
            ("POST", "/dbs/db/colls"),
            ("colls", "dbs/db"),
            "",
            r#"{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"}}"#,
        ),
        (
            ("POST", "/dbs/db/colls/c/docs"),
            ("docs", "dbs/db/colls/c"),
            "x-ms-documentdb-partitionkey: [\"Test \"]\r\n",
            r#"{"id":"Test ","pk":"Test "}"#,
        ),
    ];
    for (request, signed, headers, body) in created {
        let answer = signed_send(main, request, signed, headers, body);
        assert_eq!(answer.status, 201, "{request:?}: {}", answer.body);
    }
    let read = |address| {
        signed_send(
            address,
            ("GET", "/dbs/db/colls/c/docs/Test%20"),
            ("docs", "dbs/db/colls/c/docs/Test "),
            "x-ms-documentdb-partitionkey: [\"Test \"]\r\n",
            "",
        )
    };
    let routing = read(main);
    assert_eq!(routing.status, 401, "{}", routing.body);
    let computed = read(compute);
    assert_eq!(computed.status, 200, "{}", computed.body);
    assert!(
        computed.body.contains(r#""id":"Test ""#),
        "{}",
        computed.body
    );
    // Its account read advertises its own endpoint, so an SDK that reaches it stays there.
    let account = signed_send(compute, ("GET", "/"), ("", ""), "", "");
    assert_eq!(account.status, 200, "{}", account.body);
    let account: serde_json::Value = serde_json::from_str(&account.body).expect("json");
    assert_eq!(
        account["writableLocations"][0]["databaseAccountEndpoint"],
        compute_endpoint
    );
    assert_eq!(compute_endpoint, format!("http://{compute}/"));
}

#[test]
fn a_taken_compute_gateway_port_stops_the_start_with_its_reason() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = taken.local_addr().expect("address").port().to_string();
    let exited = common::start(
        &["--bind", "127.0.0.1:0", "--compute-gateway-port", &port],
        &[],
    )
    .err()
    .expect("refused");
    assert!(!exited.status.success());
    assert!(
        exited.output.contains("for the compute gateway"),
        "{}",
        exited.output
    );
}
