//! One process owns a store: a second `lethedb serve` on the same data directory must stop at
//! once with a clear message, while the first keeps serving, on redb and on fjall; and a data
//! directory holding one kind of store is refused to the other kind. Runs the real binary.

// Tests assert by panicking, helpers included (clippy allows it only inside #[test] fns).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long either process may take to start or to give up.
const PROCESS_WAIT_MAX: Duration = Duration::from_secs(30);

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(data_dir: &std::path::Path, store: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lethedb"));
    command
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--no-metrics",
            "--store",
            store,
            "--data-dir",
        ])
        .arg(data_dir)
        .env_remove("LETHEDB_IN_MEMORY")
        .stdin(Stdio::null());
    command
}

/// Starts a server of `store` on `data_dir` and waits until it says it listens: by then it
/// owns the store.
fn started(data_dir: &std::path::Path, store: &str) -> Killed {
    let mut first = serve(data_dir, store)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the first server");
    let stdout = first.stdout.take().expect("stdout");
    let first = Killed(first);
    let mut lines = BufReader::new(stdout).lines();
    let listening = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.contains("LetheDB listening on"));
    assert!(listening, "the first server never started");
    // Keep reading, so the server's later log lines never meet a closed pipe.
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    first
}

/// Starts a server that must give up; its exit status and what it wrote to stderr.
fn refused(data_dir: &std::path::Path, store: &str) -> (std::process::ExitStatus, String) {
    let started = Instant::now();
    let mut second = serve(data_dir, store)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the second server");
    let status = loop {
        if let Some(status) = second.try_wait().expect("poll the second server") {
            break status;
        }
        assert!(
            started.elapsed() < PROCESS_WAIT_MAX,
            "the second server did not give up on a store it cannot own"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut message = String::new();
    if let Some(stderr) = second.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut message);
    }
    (status, message)
}

#[test]
fn a_second_process_on_the_same_store_is_refused() {
    for store in ["redb", "fjall"] {
        second_process_refused(store);
    }
}

fn second_process_refused(store: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut first = started(dir.path(), store);
    let (status, message) = refused(dir.path(), store);
    assert!(
        !status.success(),
        "the second server must exit with an error"
    );
    assert!(
        message.contains("is already open in another process"),
        "unclear error: {message}"
    );
    // The first server is unharmed.
    assert!(
        first.0.try_wait().expect("poll the first server").is_none(),
        "the first server must keep running"
    );
}

#[test]
fn a_data_directory_of_one_kind_is_refused_to_the_other() {
    for (made, asked) in [("fjall", "redb"), ("redb", "fjall")] {
        let dir = tempfile::tempdir().expect("temp dir");
        drop(started(dir.path(), made));
        let (status, message) = refused(dir.path(), asked);
        assert!(!status.success(), "a {made} directory opened as {asked}");
        assert!(
            message.contains(&format!("holds a {made} store and no other")),
            "unclear error: {message}"
        );
    }
}
