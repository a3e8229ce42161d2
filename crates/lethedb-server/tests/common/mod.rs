//! Shared by the tests that run the real binary: starting `lethedb serve` with a clean
//! environment and reading its log, and a minimal HTTP/1.1 client over a raw TCP stream, so a
//! test controls every byte it sends.

// Each test binary that includes this module uses only part of it.
#![allow(dead_code)]

use lethedb_auth::MasterKey;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How long a server may take to start or to give up.
pub const PROCESS_WAIT_MAX: Duration = Duration::from_secs(30);
/// How long one request over a raw socket may take.
pub const REQUEST_WAIT_MAX: Duration = Duration::from_secs(10);

/// A running server, killed when dropped.
pub struct Running {
    child: Child,
    /// Where to connect (loopback, whatever address it listens on).
    pub address: SocketAddr,
    /// Every line it wrote to stdout and stderr so far.
    pub output: Arc<Mutex<Vec<String>>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything it logged so far, one line per line.
    pub fn log(&self) -> String {
        self.output.lock().expect("log").join("\n")
    }
}

/// A server that stopped before listening: its exit status and what it printed.
#[derive(Debug)]
pub struct Exited {
    pub status: ExitStatus,
    pub output: String,
}

/// `lethedb serve --in-memory` with `args`, and no `LETHEDB_*` variable but those in `env`.
pub fn command(args: &[&str], env: &[(&str, &str)]) -> Command {
    serve_command(&["--in-memory"], args, env)
}

/// `lethedb serve` on the store `store_args` name, with `args`, and no `LETHEDB_*` variable
/// but those in `env`.
pub fn serve_command(store_args: &[&str], args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lethedb"));
    command.arg("serve").args(store_args).args(args);
    for (name, _) in std::env::vars() {
        if name.starts_with("LETHEDB_") {
            command.env_remove(name);
        }
    }
    command.envs(env.iter().copied()).stdin(Stdio::null());
    command
}

/// Starts the server in memory and waits until it listens, or until it exits.
pub fn start(args: &[&str], env: &[(&str, &str)]) -> Result<Running, Exited> {
    start_command(command(args, env))
}

/// Starts the server on the default durable store in `data_dir` and waits until it listens,
/// or until it exits.
pub fn start_durable(
    data_dir: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<Running, Exited> {
    let data_dir = data_dir.to_str().expect("a UTF-8 path");
    start_command(serve_command(&["--data-dir", data_dir], args, env))
}

/// Starts `command` and waits until the server listens, or until it exits.
pub fn start_command(mut command: Command) -> Result<Running, Exited> {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lethedb");
    let output = Arc::new(Mutex::new(Vec::new()));
    let stdout = child.stdout.take().expect("stdout");
    let stderr = child.stderr.take().expect("stderr");
    for stream in [
        Box::new(stdout) as Box<dyn Read + Send>,
        Box::new(stderr) as Box<dyn Read + Send>,
    ] {
        let output = output.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                output.lock().expect("log").push(line);
            }
        });
    }
    let started = Instant::now();
    loop {
        let listening = output
            .lock()
            .expect("log")
            .iter()
            .find_map(|line| listening_port(line));
        if let Some(port) = listening {
            let address = SocketAddr::from(([127, 0, 0, 1], port));
            return Ok(Running {
                child,
                address,
                output,
            });
        }
        if let Some(status) = child.try_wait().expect("poll lethedb") {
            // Let the readers take the last lines.
            std::thread::sleep(Duration::from_millis(100));
            let output = output.lock().expect("log").join("\n");
            return Err(Exited { status, output });
        }
        assert!(
            started.elapsed() < PROCESS_WAIT_MAX,
            "lethedb neither listened nor exited"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The first line of `log` that is a JSON object with `"ready": true`.
pub fn ready_line(log: &str) -> Option<serde_json::Value> {
    log.lines()
        .filter(|line| line.starts_with('{'))
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|line| line["ready"] == true)
}

/// Waits for the server's ready line (printed once every port it was asked for listens).
pub fn wait_for_ready_line(server: &Running) -> serde_json::Value {
    let started = Instant::now();
    loop {
        if let Some(line) = ready_line(&server.log()) {
            return line;
        }
        assert!(
            started.elapsed() < PROCESS_WAIT_MAX,
            "no ready line in {}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The port in the start-up line `LetheDB listening on http://host:port/ ...`.
fn listening_port(line: &str) -> Option<u16> {
    let rest = line.split("LetheDB listening on ").nth(1)?;
    let url = rest.split_whitespace().next()?;
    let authority = url.split("://").nth(1)?.trim_end_matches('/');
    authority.rsplit(':').next()?.parse().ok()
}

/// The `x-ms-date` of now.
pub fn now_date() -> String {
    httpdate::fmt_http_date(SystemTime::now())
}

/// The header lines of a request signed with `key` for `resource_type` and `link`.
pub fn signed(key: &MasterKey, method: &str, resource_type: &str, link: &str) -> String {
    let date = now_date();
    format!(
        "x-ms-date: {date}\r\nauthorization: {}\r\n",
        key.authorization_header(method, resource_type, link, &date)
    )
}

/// An answer read from a raw socket.
pub struct Answer {
    pub status: u16,
    pub body: String,
}

/// Sends `GET path` with the extra header lines `headers` on a new connection and reads the
/// whole answer.
pub fn get(address: SocketAddr, path: &str, headers: &str) -> Answer {
    send(address, ("GET", path), headers, "")
}

/// Sends `method path` with the extra header lines `headers` and `body` on a new connection
/// and reads the whole answer.
pub fn send(
    address: SocketAddr,
    (method, path): (&str, &str),
    headers: &str,
    body: &str,
) -> Answer {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream
        .set_read_timeout(Some(REQUEST_WAIT_MAX))
        .expect("timeout");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\ncontent-length: {}\r\n{headers}\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("send");
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("read the answer");
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default();
    Answer { status, body }
}
