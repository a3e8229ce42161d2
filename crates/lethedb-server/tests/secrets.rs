//! Secrets and exposure, through the real binary: a custom key never appears in the log (only
//! its fingerprint), the key can come from a file (and a bad file stops the server with a clear
//! message), the emulator's well-known key is refused on a non-loopback address unless allowed,
//! and on such an address `/metrics` is refused unless `--metrics-public`, while
//! `/_lethedb/stats` answers only the master key.

// Tests assert by panicking, helpers included (clippy allows it only inside #[test] fns).
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use common::{get, signed, start};
use lethedb_auth::MasterKey;
use lethedb_server::cli::EMULATOR_KEY;

/// A key nobody else uses (base64 of 48 bytes).
const CUSTOM_KEY: &str = "bGV0aGVkYi1zZWNyZXRzLXRlc3Qta2V5LW5vdC10aGUtZW11bGF0b3Itb25lLTAxMjM=";

fn custom_key() -> MasterKey {
    MasterKey::from_base64(CUSTOM_KEY).expect("key")
}

#[test]
fn a_custom_key_is_logged_only_by_its_fingerprint() {
    let server = start(&["--bind", "127.0.0.1:0"], &[("LETHEDB_KEY", CUSTOM_KEY)])
        .expect("the server starts");
    // A failed signature and a successful one: neither makes a log line name the key.
    assert_eq!(get(server.address, "/dbs", "").status, 401);
    let answer = get(
        server.address,
        "/dbs",
        &signed(&custom_key(), "GET", "dbs", ""),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    let log = server.log();
    let fingerprint = custom_key().fingerprint();
    assert!(
        log.contains(&format!("key=custom (fingerprint {fingerprint})")),
        "{log}"
    );
    assert!(!log.contains(CUSTOM_KEY), "the log shows the key:\n{log}");
    assert!(!log.contains(&CUSTOM_KEY[..16]), "{log}");
    let emulator = start(&["--bind", "127.0.0.1:0"], &[]).expect("the server starts");
    assert!(
        emulator
            .log()
            .contains("key=emulator (the well-known emulator key)"),
        "{}",
        emulator.log()
    );
}

#[test]
fn the_key_can_come_from_a_file_and_a_bad_file_stops_the_server() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("key");
    std::fs::write(&file, format!("{CUSTOM_KEY}\n")).expect("write");
    let path = file.to_str().expect("utf-8 path");
    for (args, env) in [
        (vec!["--key-file", path], vec![]),
        (vec![], vec![("LETHEDB_KEY_FILE", path)]),
    ] {
        let mut all = vec!["--bind", "127.0.0.1:0"];
        all.extend(args);
        let server = start(&all, &env).expect("the server starts");
        let mine = get(server.address, "/", &signed(&custom_key(), "GET", "", ""));
        assert_eq!(mine.status, 200, "{}", mine.body);
        let emulator = MasterKey::from_base64(EMULATOR_KEY).expect("key");
        let theirs = get(server.address, "/", &signed(&emulator, "GET", "", ""));
        assert_eq!(theirs.status, 401, "{}", theirs.body);
        // Unlike --key, the process list shows only the file's path.
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", server.pid())).unwrap_or_default();
        assert!(!String::from_utf8_lossy(&cmdline).contains(CUSTOM_KEY));
        assert!(!server.log().contains(CUSTOM_KEY), "{}", server.log());
    }
    std::fs::write(dir.path().join("empty"), "\n\n").expect("write");
    std::fs::write(dir.path().join("invalid"), "not a key!\n").expect("write");
    let cases = [
        ("empty", "is empty: it must hold the base64 master key"),
        ("invalid", "does not hold a base64 master key"),
        ("absent", "cannot read the key file"),
    ];
    for (name, expected) in cases {
        let path = dir.path().join(name);
        let path = path.to_str().expect("utf-8 path");
        let exited = start(&["--bind", "127.0.0.1:0", "--key-file", path], &[])
            .err()
            .unwrap_or_else(|| panic!("{name}: the server started"));
        assert!(!exited.status.success(), "{name}");
        assert!(
            exited.output.contains(expected),
            "{name}: {}",
            exited.output
        );
        assert!(exited.output.contains(path), "{name}: {}", exited.output);
    }
    let both = start(&["--key-file", path, "--key", CUSTOM_KEY], &[])
        .err()
        .expect("--key and --key-file together");
    assert!(
        both.output.contains("cannot be used with"),
        "{}",
        both.output
    );
    assert!(
        !both.output.contains(CUSTOM_KEY),
        "an error shows the key: {}",
        both.output
    );
}

#[test]
fn the_emulator_key_is_refused_on_a_non_loopback_address_unless_allowed() {
    let refused = start(&["--bind", "0.0.0.0:0"], &[])
        .err()
        .expect("the emulator key on 0.0.0.0");
    assert!(!refused.status.success());
    for expected in [
        "refusing to listen on 0.0.0.0:0 with the Cosmos DB emulator's well-known key",
        "--key-file",
        "--allow-emulator-key-on-network",
    ] {
        assert!(refused.output.contains(expected), "{}", refused.output);
    }
    let allowed = start(
        &["--bind", "0.0.0.0:0", "--allow-emulator-key-on-network"],
        &[],
    )
    .expect("allowed explicitly");
    assert_eq!(get(allowed.address, "/dbs", "").status, 401);
    let by_env = start(
        &["--bind", "0.0.0.0:0"],
        &[("LETHEDB_ALLOW_EMULATOR_KEY_ON_NETWORK", "true")],
    );
    assert!(by_env.is_ok(), "{:?}", by_env.err());
}

#[test]
fn beyond_loopback_metrics_need_a_flag_and_statistics_the_master_key() {
    let env = [("LETHEDB_KEY", CUSTOM_KEY)];
    let server = start(&["--bind", "0.0.0.0:0"], &env).expect("the server starts");
    let metrics = get(server.address, "/metrics", "");
    assert_eq!(metrics.status, 403, "{}", metrics.body);
    assert!(
        metrics.body.contains("\"code\":\"Forbidden\""),
        "{}",
        metrics.body
    );
    assert!(
        metrics.body.contains("--metrics-public"),
        "{}",
        metrics.body
    );
    assert!(!metrics.body.contains("lethedb_"), "{}", metrics.body);
    let stats = get(server.address, "/_lethedb/stats", "");
    assert_eq!(stats.status, 401, "{}", stats.body);
    assert!(
        stats.body.contains("\"code\":\"Unauthorized\""),
        "{}",
        stats.body
    );
    let signed_stats = signed(&custom_key(), "GET", "_lethedb", "_lethedb/stats");
    let stats = get(server.address, "/_lethedb/stats", &signed_stats);
    assert_eq!(stats.status, 200, "{}", stats.body);
    assert!(stats.body.contains("\"writer\""), "{}", stats.body);

    let public =
        start(&["--bind", "0.0.0.0:0", "--metrics-public"], &env).expect("the server starts");
    let metrics = get(public.address, "/metrics", "");
    assert_eq!(metrics.status, 200);
    assert!(metrics.body.contains("lethedb_writer_queue_depth"));
    // On loopback, metrics need no flag; the statistics still need the key.
    let local = start(&["--bind", "127.0.0.1:0"], &env).expect("the server starts");
    assert_eq!(get(local.address, "/metrics", "").status, 200);
    assert_eq!(get(local.address, "/_lethedb/stats", "").status, 401);
}
