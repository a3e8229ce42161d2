//! Starts and stops a real `lethedb` process for the Rust SDK suite, and builds SDK clients for
//! it. Knows how to find the binary (`LETHEDB_BIN`), pick a free loopback port, wait until the
//! server answers, and stop it; the tests drive it with `azure_data_cosmos` as an application
//! would, over plain HTTP with the emulator's well-known key.

use azure_data_cosmos::clients::DatabaseClient;
use azure_data_cosmos::{AccountEndpoint, AccountReference, CosmosClient, RoutingStrategy};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
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
            .args(["serve", "--bind", &format!("127.0.0.1:{port}"), "--data-dir"])
            .arg(data_dir.path().join("data"))
            .args(["--key", EMULATOR_KEY])
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
            assert!(Instant::now() < deadline, "lethedb not ready on port {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// A client as an application builds one: the account's endpoint and key.
    pub async fn client(&self) -> CosmosClient {
        let endpoint: AccountEndpoint = self.endpoint().parse().expect("endpoint");
        let account = AccountReference::with_authentication_key(
            endpoint,
            azure_core::credentials::Secret::from(EMULATOR_KEY.to_string()),
        );
        CosmosClient::builder()
            .build(account, RoutingStrategy::ProximityTo("West US".into()))
            .await
            .expect("client")
    }

    /// A fresh database for one test.
    pub async fn database(&self, client: &CosmosClient) -> DatabaseClient {
        let id = format!("db-{}", uuid::Uuid::new_v4().simple());
        client.create_database(&id, None).await.expect("database");
        client.database_client(&id)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}
