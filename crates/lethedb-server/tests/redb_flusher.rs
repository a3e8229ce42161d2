//! The redb store's flusher through the real binary: `--redo-staged-mb` reaches the store (0
//! hands every commit to the flusher, the default keeps a small write staged), and what the
//! flusher did is in `/_lethedb/stats` and `/metrics`.

// Tests assert by panicking, helpers included (clippy allows it only inside #[test] fns).
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use common::{get, send, signed, start_durable, Running};
use lethedb_auth::MasterKey;
use lethedb_server::cli::EMULATOR_KEY;
use serde_json::Value;
use std::time::{Duration, Instant};

fn key() -> MasterKey {
    MasterKey::from_base64(EMULATOR_KEY).expect("key")
}

fn store_stats(server: &Running) -> Value {
    let stats = get(
        server.address,
        "/_lethedb/stats",
        &signed(&key(), "GET", "_lethedb", "_lethedb/stats"),
    );
    assert_eq!(stats.status, 200, "{}", stats.body);
    let stats: Value = serde_json::from_str(&stats.body).expect("JSON");
    stats["store"].clone()
}

fn create_database(server: &Running, id: &str) {
    let created = send(
        server.address,
        ("POST", "/dbs"),
        &format!(
            "{}content-type: application/json\r\n",
            signed(&key(), "POST", "dbs", "")
        ),
        &format!("{{\"id\":\"{id}\"}}"),
    );
    assert_eq!(created.status, 201, "{}", created.body);
}

#[test]
fn the_staged_bound_flag_reaches_the_store_and_the_flusher_is_counted() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let every_commit = directory.path().join("every-commit");
    let server = start_durable(
        &every_commit,
        &["--bind", "127.0.0.1:0", "--redo-staged-mb", "0"],
        &[],
    )
    .expect("the server starts");
    create_database(&server, "flushed");
    let started = Instant::now();
    let stats = loop {
        let stats = store_stats(&server);
        if stats["flushes"].as_u64().expect("flushes") >= 1 {
            break stats;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the flusher never wrote the commit: {stats}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        stats["flushBusyMs"].as_f64().expect("busy") > 0.0,
        "{stats}"
    );
    assert_eq!(stats["writerWaits"], 0, "{stats}");
    let metrics = get(server.address, "/metrics", "");
    assert_eq!(metrics.status, 200);
    assert!(
        metrics.body.contains("lethedb_store_flushes_total"),
        "{}",
        metrics.body
    );

    // The default bound (8 MiB) keeps one small commit staged.
    let default = directory.path().join("default");
    let server =
        start_durable(&default, &["--bind", "127.0.0.1:0"], &[]).expect("the server starts");
    create_database(&server, "staged");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(store_stats(&server)["flushes"], 0);
}
