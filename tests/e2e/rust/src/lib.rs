//! Starts and stops a real `lethedb` process for the Rust SDK suite, and builds SDK clients for
//! it. Knows how to find the binary (`LETHEDB_BIN`), pick a free loopback port, wait until the
//! server answers, and stop it; the tests drive it with `azure_data_cosmos` as an application
//! would, over plain HTTP with the emulator's well-known key.

use azure_data_cosmos::clients::DatabaseClient;
use azure_data_cosmos::{AccountEndpoint, AccountReference, CosmosClient, RoutingStrategy};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The Cosmos DB emulator's well-known key, which lethedb also serves by default.
pub const EMULATOR_KEY: &str =
    "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";
/// A debug build on a busy machine can take a while to open its store.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// One `lethedb serve` process on a loopback port over a temporary data directory, killed when
/// dropped.
pub struct Server {
    process: Child,
    pub port: u16,
    _data_dir: tempfile::TempDir,
}

/// The binary under test: `$LETHEDB_BIN`, or the workspace's debug build.
pub fn binary_path() -> PathBuf {
    match std::env::var_os("LETHEDB_BIN") {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../target/debug/lethedb"),
    }
}

impl Server {
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    /// A server started with extra command-line arguments.
    pub fn start_with(extra_args: &[&str]) -> Server {
        let binary = binary_path();
        assert!(
            binary.is_file(),
            "lethedb binary not found at {}; build it or set LETHEDB_BIN",
            binary.display()
        );
        let data_dir = tempfile::tempdir().expect("temporary directory");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let process = Command::new(&binary)
            .args([
                "serve",
                "--bind",
                &format!("127.0.0.1:{port}"),
                "--data-dir",
            ])
            .arg(data_dir.path().join("data"))
            .args(["--key", EMULATOR_KEY])
            // Every query page the index serves runs again as a scan and is compared (the shadow
            // mode): a difference fails the request, and so the test that sent it.
            .arg("--query-verify")
            .args(extra_args)
            .env_remove("LETHEDB_BIN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("lethedb starts");
        let server = Server {
            process,
            port,
            _data_dir: data_dir,
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "lethedb not ready on port {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// A client as an application builds one: the account's endpoint and key.
    pub async fn client(&self) -> CosmosClient {
        client_for(self.port).await
    }

    /// A fresh database for one test.
    pub async fn database(&self, client: &CosmosClient) -> DatabaseClient {
        let id = format!("db-{}", uuid::Uuid::new_v4().simple());
        client.create_database(&id, None).await.expect("database");
        client.database_client(&id)
    }
}

/// A loopback TCP relay in front of the server that counts request bodies sent in the Cosmos
/// binary encoding (a body whose first byte is `0x80`), so a test can show what the SDK put on
/// the wire. It relays bytes unchanged both ways. The server must advertise
/// the relay's address (`--advertise-url`), since the SDK sends its requests to the endpoint
/// the account advertises.
pub struct BinaryWatch {
    pub port: u16,
    binary_bodies: Arc<AtomicUsize>,
    listener: Option<tokio::net::TcpListener>,
}

impl BinaryWatch {
    /// Binds the relay's port; [`BinaryWatch::relay_to`] starts relaying.
    pub async fn bind() -> BinaryWatch {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("address").port();
        BinaryWatch {
            port,
            binary_bodies: Arc::new(AtomicUsize::new(0)),
            listener: Some(listener),
        }
    }

    /// The `--advertise-url` argument that sends the SDK through the relay.
    pub fn advertise_url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    pub fn relay_to(&mut self, upstream_port: u16) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = self.listener.take().expect("relaying once");
        let counter = Arc::clone(&self.binary_bodies);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", upstream_port)).await
                else {
                    continue;
                };
                let counter = Arc::clone(&counter);
                tokio::spawn(async move {
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut server_read, mut server_write) = server.into_split();
                    let upstream = async move {
                        let mut buffer = vec![0u8; 64 * 1024];
                        let mut sniffer = Sniffer::default();
                        while let Ok(read) = client_read.read(&mut buffer).await {
                            if read == 0 || server_write.write_all(&buffer[..read]).await.is_err() {
                                break;
                            }
                            counter.fetch_add(sniffer.feed(&buffer[..read]), Ordering::SeqCst);
                        }
                        let _ = server_write.shutdown().await;
                    };
                    let downstream = async move {
                        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                    };
                    tokio::join!(upstream, downstream);
                });
            }
        });
    }

    /// How many request bodies in the binary encoding have gone through so far.
    pub fn binary_bodies(&self) -> usize {
        self.binary_bodies.load(Ordering::SeqCst)
    }
}

/// Finds request bodies that start with the binary preamble in what a client sends: in HTTP/2
/// (which the SDK speaks over plain HTTP) the first DATA frame of each stream, in HTTP/1.1 the
/// byte after a head's blank line.
#[derive(Default)]
struct Sniffer {
    pending: Vec<u8>,
    http2: Option<bool>,
    streams_with_data: std::collections::HashSet<u32>,
}

const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const PREAMBLE: u8 = 0x80;

impl Sniffer {
    /// Takes the next bytes sent; returns how many binary bodies they completed the start of.
    fn feed(&mut self, bytes: &[u8]) -> usize {
        self.pending.extend_from_slice(bytes);
        if self.http2.is_none() {
            if self.pending.len() < HTTP2_PREFACE.len() {
                return 0;
            }
            let http2 = self.pending.starts_with(HTTP2_PREFACE);
            if http2 {
                self.pending.drain(..HTTP2_PREFACE.len());
            }
            self.http2 = Some(http2);
        }
        let mut found = 0;
        if self.http2 == Some(true) {
            while self.pending.len() >= 9 {
                let length = usize::from(self.pending[0]) << 16
                    | usize::from(self.pending[1]) << 8
                    | usize::from(self.pending[2]);
                if self.pending.len() < 9 + length {
                    break;
                }
                let (frame_type, flags) = (self.pending[3], self.pending[4]);
                let stream = u32::from_be_bytes([
                    self.pending[5] & 0x7F,
                    self.pending[6],
                    self.pending[7],
                    self.pending[8],
                ]);
                let payload = &self.pending[9..9 + length];
                // DATA frames; a PADDED one (flag 0x8) opens with its pad length.
                if frame_type == 0 && self.streams_with_data.insert(stream) {
                    let data = if flags & 0x8 != 0 {
                        payload.get(1..).unwrap_or(&[])
                    } else {
                        payload
                    };
                    found += usize::from(data.first() == Some(&PREAMBLE));
                }
                self.pending.drain(..9 + length);
            }
        } else {
            found = self
                .pending
                .windows(5)
                .filter(|window| window[..4] == *b"\r\n\r\n" && window[4] == PREAMBLE)
                .count();
            let keep = self.pending.len().saturating_sub(4);
            self.pending.drain(..keep);
        }
        found
    }
}

/// A client for the account at `port` on loopback.
pub async fn client_for(port: u16) -> CosmosClient {
    let endpoint: AccountEndpoint = format!("http://127.0.0.1:{port}/")
        .parse()
        .expect("endpoint");
    let account = AccountReference::with_authentication_key(
        endpoint,
        azure_core::credentials::Secret::from(EMULATOR_KEY.to_string()),
    );
    CosmosClient::builder()
        .build(account, RoutingStrategy::ProximityTo("West US".into()))
        .await
        .expect("client")
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}
