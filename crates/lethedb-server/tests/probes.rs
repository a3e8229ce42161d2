//! A harness's view of a real process started on port 0: one machine-readable ready line on
//! stdout names the endpoint it picked (and the emulator's key, which is public), and the
//! unauthenticated probes answer there.

// Tests assert by panicking, helpers included (clippy allows it only inside #[test] fns).
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

#[test]
fn a_server_on_port_zero_prints_its_endpoint_and_answers_the_probes_there() {
    let server = common::start(&["--bind", "127.0.0.1:0"], &[]).expect("starts");
    let line = common::wait_for_ready_line(&server);
    let endpoint = line["endpoint"].as_str().expect("endpoint");
    assert_eq!(endpoint, format!("http://{}/", server.address));
    assert_eq!(line["store"], "memory");
    assert_eq!(line["key"], lethedb_auth::EMULATOR_KEY);
    let ready = common::get(server.address, "/ready", "");
    assert_eq!(ready.status, 200, "{}", ready.body);
    let alive = common::get(server.address, "/alive", "");
    assert_eq!(alive.status, 200, "{}", alive.body);
    let status = common::get(server.address, "/status", "");
    assert_eq!(status.status, 200);
    let status: serde_json::Value = serde_json::from_str(&status.body).expect("json");
    assert_eq!(status["ready"], true);
    assert_eq!(status["store"], "memory");
}

#[test]
fn a_custom_key_is_named_only_by_its_fingerprint_in_the_ready_line() {
    let server = common::start(
        &["--bind", "127.0.0.1:0"],
        &[("LETHEDB_KEY", "c2VjcmV0LWtleQ==")],
    )
    .expect("starts");
    let line = common::wait_for_ready_line(&server);
    assert!(line.get("key").is_none(), "{line}");
    assert!(line["keyFingerprint"].is_string(), "{line}");
    assert!(!server.log().contains("c2VjcmV0LWtleQ=="));
}

#[test]
fn the_probes_have_a_port_of_their_own_when_asked() {
    // A free port for the probes, found by binding and letting go (the server binds it next).
    let probe_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let probe_bind = format!("127.0.0.1:{probe_port}");
    let server = common::start(&["--bind", "127.0.0.1:0", "--probe-bind", &probe_bind], &[])
        .expect("starts");
    let probes = std::net::SocketAddr::from(([127, 0, 0, 1], probe_port));
    common::wait_for_ready_line(&server);
    let ready = common::get(probes, "/ready", "");
    assert_eq!(ready.status, 200, "{}", ready.body);
    assert_eq!(common::get(probes, "/alive", "").status, 200);
    assert_eq!(common::get(probes, "/status", "").status, 200);
    // Nothing else is served there: no Cosmos path, no metrics.
    let other = common::get(probes, "/dbs", "");
    assert_eq!(other.status, 404, "{}", other.body);
    assert!(other.body.contains("probe port"), "{}", other.body);
    assert_eq!(common::get(probes, "/metrics", "").status, 404);
}
