//! Starting, timing and stopping the servers under test: LetheDB, the Node.js peer and the
//! hello-world ceiling, each as a child process on a free loopback port.
//!
//! Each server is a separate process so that its memory (`VmHWM`, `VmRSS` from
//! `/proc/PID/status`) is its own and it competes for the CPU as it would in use. Cold start is
//! the time from spawning the process to the first successful signed `GET /`. This module does
//! not run workloads.

use crate::cosmos::{Client, Endpoint, Request};
use anyhow::{anyhow, bail, Context as _};
use bytes::Bytes;
use hyper::Method;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a server may take to answer its first request before the run gives up.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How often start-up is probed; small against the cold starts we measure (milliseconds).
const START_PROBE_INTERVAL: Duration = Duration::from_micros(500);
/// How long a server gets to exit after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Which server a process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    LetheDb,
    /// LetheDB on a PostgreSQL store (`pg.rs` says which database).
    LetheDbPg,
    Peer,
    Hello,
}

impl Kind {
    pub fn label(self) -> &'static str {
        match self {
            Kind::LetheDb => "LetheDB",
            Kind::LetheDbPg => "LetheDB-pg",
            Kind::Peer => "peer",
            Kind::Hello => "hello",
        }
    }
}

/// How to start each kind.
#[derive(Clone, Debug)]
pub struct Launch {
    pub lethedb_binary: PathBuf,
    pub bench_binary: PathBuf,
    /// `bench/peer`, holding `node_modules/@vercel/cosmosdb-server`.
    pub peer_dir: PathBuf,
    /// Start the peer through its own CLI (which closes every connection after one response)
    /// rather than through `bench/peer/serve.js` (the same server with keep-alive on).
    pub peer_cli: bool,
    pub tls: bool,
    pub key: String,
    /// Where data directories and server logs go.
    pub scratch_dir: PathBuf,
    /// A PostgreSQL URL (`postgresql://user@host:port/database`) whose server the PostgreSQL
    /// rows create their databases on; `None` leaves those rows out.
    pub postgres: Option<String>,
}

/// A running server.
pub struct Server {
    pub kind: Kind,
    pub endpoint: Arc<Endpoint>,
    pub child: Child,
    pub cold_start: Duration,
    pub log_path: PathBuf,
    data_dir: Option<PathBuf>,
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

impl Launch {
    pub fn peer_available(&self) -> bool {
        self.peer_dir
            .join("node_modules/@vercel/cosmosdb-server/lib/cli.js")
            .exists()
    }

    /// Starts a server and waits for its first successful request. `extra_args` go to
    /// `lethedb serve` (such as `--write-batch-max 1`).
    pub async fn start(
        &self,
        kind: Kind,
        name: &str,
        extra_args: &[&str],
    ) -> anyhow::Result<Server> {
        self.start_with_env(kind, name, extra_args, &[]).await
    }

    /// [`Launch::start`] with environment variables for the server (such as the PostgreSQL
    /// URL, which may hold a password and so stays out of the process list).
    pub async fn start_with_env(
        &self,
        kind: Kind,
        name: &str,
        extra_args: &[&str],
        env: &[(&str, &str)],
    ) -> anyhow::Result<Server> {
        let port = free_port()?;
        let address = format!("127.0.0.1:{port}");
        std::fs::create_dir_all(&self.scratch_dir)?;
        let log_path = self.scratch_dir.join(format!("{name}.log"));
        let log = File::create(&log_path)?;
        let (mut command, data_dir) = match kind {
            Kind::LetheDb | Kind::LetheDbPg => {
                // On PostgreSQL the data directory stays empty (it would hold only a generated
                // certificate).
                let dir = self.scratch_dir.join(format!("{name}-data"));
                let _ = std::fs::remove_dir_all(&dir);
                (self.lethedb_command(&address, &dir, extra_args), Some(dir))
            }
            Kind::Peer => (self.peer_command(port), None),
            Kind::Hello => {
                let mut command = Command::new(&self.bench_binary);
                command.arg("hello").arg("--bind").arg(&address);
                (command, None)
            }
        };
        command.envs(env.iter().copied());
        command
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let endpoint = Endpoint::new(address, self.tls && kind != Kind::Hello, &self.key)?;
        let spawned = Instant::now();
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start {}", kind.label()))?;
        let cold_start = match wait_ready(&endpoint, &mut child, spawned).await {
            Ok(elapsed) => elapsed,
            Err(error) => {
                let _ = child.kill();
                let _ = child.wait();
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                bail!("{} did not start: {error:#}\n{log}", kind.label());
            }
        };
        Ok(Server {
            kind,
            endpoint,
            child,
            cold_start,
            log_path,
            data_dir,
        })
    }

    /// `lethedb serve` on `address` with its data in `data_dir`.
    fn lethedb_command(&self, address: &str, data_dir: &Path, extra_args: &[&str]) -> Command {
        let mut command = Command::new(&self.lethedb_binary);
        command
            .arg("serve")
            .arg("--bind")
            .arg(address)
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--key")
            .arg(&self.key)
            .args(extra_args);
        if self.tls {
            command.arg("--tls");
        }
        command
    }

    /// The peer on `port`: through its own CLI, or through `bench/peer/serve.js`.
    fn peer_command(&self, port: u16) -> Command {
        let mut command = Command::new("node");
        if self.peer_cli {
            command
                .arg(
                    self.peer_dir
                        .join("node_modules/@vercel/cosmosdb-server/lib/cli.js"),
                )
                .arg("--host")
                .arg("127.0.0.1")
                .arg("-p")
                .arg(port.to_string());
            if !self.tls {
                command.arg("--no-ssl");
            }
        } else {
            command
                .arg(self.peer_dir.join("serve.js"))
                .arg(port.to_string())
                .arg(if self.tls { "tls" } else { "plain" });
        }
        command.current_dir(&self.peer_dir);
        command
    }
}

async fn wait_ready(
    endpoint: &Arc<Endpoint>,
    child: &mut Child,
    spawned: Instant,
) -> anyhow::Result<Duration> {
    loop {
        if let Some(status) = child.try_wait()? {
            bail!("exited with {status}");
        }
        if spawned.elapsed() > START_TIMEOUT {
            bail!("no answer within {START_TIMEOUT:?}");
        }
        let mut client = Client::new(Arc::clone(endpoint));
        let request = Request {
            method: Method::GET,
            path: "/",
            resource_type: "",
            resource_link: "",
            headers: &[],
            body: Bytes::new(),
        };
        if let Ok(reply) = client.send(&request).await {
            if reply.status == 200 {
                return Ok(spawned.elapsed());
            }
            bail!("GET / answered {}", reply.status);
        }
        tokio::time::sleep(START_PROBE_INTERVAL).await;
    }
}

/// Memory of a process, from `/proc/PID/status`, in bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Memory {
    /// Peak resident set (`VmHWM`).
    pub peak_rss_bytes: u64,
    /// Current resident set (`VmRSS`).
    pub rss_bytes: u64,
}

/// The bytes process `pid` has caused to be written to storage (`write_bytes` in
/// `/proc/PID/io`), if the kernel says.
pub fn bytes_written(pid: u32) -> Option<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    io.lines()
        .find_map(|line| line.strip_prefix("write_bytes:"))
        .and_then(|rest| rest.trim().parse().ok())
}

pub fn memory(pid: u32) -> Memory {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024)
    };
    Memory {
        peak_rss_bytes: field("VmHWM:"),
        rss_bytes: field("VmRSS:"),
    }
}

impl Server {
    pub fn memory(&self) -> Memory {
        memory(self.child.id())
    }

    /// Stops the server with SIGTERM (SIGKILL after a grace period) and removes its data.
    pub fn stop(mut self) -> anyhow::Result<()> {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").arg("-TERM").arg(&pid).status();
        let deadline = Instant::now() + STOP_GRACE;
        while self.child.try_wait()?.is_none() {
            if Instant::now() > deadline {
                self.child.kill()?;
                self.child.wait()?;
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if let Some(dir) = &self.data_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        Ok(())
    }
}

/// The size of a directory tree in bytes (the store file, for the report).
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => dir_bytes(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

/// The disk space a directory tree takes: its files' allocated blocks, so a store file the
/// store lengthened ahead of use (a sparse tail) counts only what was written.
pub fn dir_allocated_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => dir_allocated_bytes(&entry.path()),
            // `blocks` counts 512-byte units whatever the file system's block size.
            Ok(meta) => meta.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

/// The hello-world server: the HTTP ceiling of this machine for a server written with the same
/// stack as LetheDB (axum over hyper on a multi-threaded tokio runtime). Every request gets a
/// small JSON body and 200.
pub fn hello(bind: std::net::SocketAddr) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let router = axum::Router::new().fallback(|| async {
            (
                [("content-type", "application/json")],
                "{\"hello\":\"world\"}",
            )
        });
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .map_err(|e| anyhow!("cannot listen on {bind}: {e}"))?;
        println!("hello listening on http://{}/", listener.local_addr()?);
        axum::serve(listener, router).await?;
        Ok(())
    })
}
