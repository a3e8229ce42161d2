//! A minimal Cosmos DB REST client for load generation: one keep-alive HTTP/1.1 connection per
//! client, master-key signatures, and HTTPS without certificate verification.
//!
//! It speaks the protocol itself rather than through an SDK so that the load generator costs as
//! little CPU as possible on a machine it shares with the server it measures. It knows how to
//! sign and send one request and how to reconnect when a server closes the connection, and it
//! has typed calls for the item requests every workload sends; it does not know about
//! workloads, retries on 429 or query plans.

use anyhow::{anyhow, Context as _};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::Method;
use hyper_util::rt::TokioIo;
use lethedb_auth::MasterKey;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::net::TcpStream;

/// The longest error detail kept from a reply body.
const ERROR_DETAIL_CHARS_MAX: usize = 300;

/// The protocol version the load generator announces (the one the notes use for raw requests).
pub const API_VERSION: &str = "2018-12-31";
/// How long one request may take before it counts as an error; well above any latency we
/// expect, so it only catches a hung server.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a connection attempt may take on loopback.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where a server listens and how to sign for it.
pub struct Endpoint {
    /// `127.0.0.1:PORT`.
    pub address: String,
    pub key: MasterKey,
    tls_connector: Option<tokio_rustls::TlsConnector>,
}

impl Endpoint {
    pub fn new(address: String, tls: bool, key_base64: &str) -> anyhow::Result<Arc<Endpoint>> {
        let key = MasterKey::from_base64(key_base64).context("the master key is not base64")?;
        let tls_connector = if tls {
            Some(insecure_tls_connector()?)
        } else {
            None
        };
        Ok(Arc::new(Endpoint {
            address,
            key,
            tls_connector,
        }))
    }
}

/// One response, body fully read.
pub struct Reply {
    pub status: u16,
    pub body: Bytes,
    pub continuation: Option<String>,
    /// `x-ms-request-charge` (0 when the server sent none).
    pub request_charge: f64,
    /// `x-ms-retry-after-ms`, the wait a 429 asks for.
    pub retry_after_ms: Option<u64>,
    /// `x-ms-documentdb-collection-index-transformation-progress` (container reads).
    pub progress: Option<u64>,
}

impl Reply {
    /// The start of the body, for error messages.
    pub fn detail(&self) -> String {
        detail(&self.body)
    }
}

/// The start of a reply body as text, for error messages.
pub fn detail(reply_body: &[u8]) -> String {
    String::from_utf8_lossy(reply_body)
        .chars()
        .take(ERROR_DETAIL_CHARS_MAX)
        .collect()
}

/// One signed request: the path on the wire and what its signature covers.
pub struct Request<'a> {
    pub method: Method,
    pub path: &'a str,
    pub resource_type: &'a str,
    pub resource_link: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    pub body: Bytes,
}

/// One client: a single connection, used for one request at a time, reopened when the server
/// closes it.
pub struct Client {
    endpoint: Arc<Endpoint>,
    sender: Option<SendRequest<Full<Bytes>>>,
    /// `x-ms-date` only changes once a second, so it is formatted once a second.
    date_cache: (u64, String),
}

impl Client {
    pub fn new(endpoint: Arc<Endpoint>) -> Client {
        Client {
            endpoint,
            sender: None,
            date_cache: (0, String::new()),
        }
    }

    async fn connect(&self) -> anyhow::Result<SendRequest<Full<Bytes>>> {
        let stream =
            tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&self.endpoint.address))
                .await
                .map_err(|_| anyhow!("connecting to {} timed out", self.endpoint.address))??;
        stream.set_nodelay(true)?;
        match &self.endpoint.tls_connector {
            None => {
                let (sender, connection) =
                    hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
                tokio::spawn(connection);
                Ok(sender)
            }
            Some(connector) => {
                let name = rustls::pki_types::ServerName::try_from("localhost")?;
                let tls = connector.connect(name, stream).await?;
                let (sender, connection) =
                    hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
                tokio::spawn(connection);
                Ok(sender)
            }
        }
    }

    fn date(&mut self) -> String {
        let now = SystemTime::now();
        let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if self.date_cache.0 != secs {
            self.date_cache = (secs, httpdate::fmt_http_date(now));
        }
        self.date_cache.1.clone()
    }

    /// Sends one signed request and reads the whole response. A connection the server closed
    /// between requests is reopened once; any other transport failure is an error.
    pub async fn send(&mut self, request: &Request<'_>) -> anyhow::Result<Reply> {
        if let Ok(result) = tokio::time::timeout(REQUEST_TIMEOUT, self.send_once(request)).await {
            result
        } else {
            self.sender = None;
            Err(anyhow!("request timed out after {REQUEST_TIMEOUT:?}"))
        }
    }

    async fn send_once(&mut self, request: &Request<'_>) -> anyhow::Result<Reply> {
        let mut reconnected = false;
        loop {
            let mut sender = match self.sender.take() {
                Some(sender) if !sender.is_closed() => sender,
                _ => {
                    reconnected = true;
                    self.connect().await?
                }
            };
            if sender.ready().await.is_err() {
                if reconnected {
                    return Err(anyhow!("the server closed a new connection"));
                }
                continue;
            }
            let date = self.date();
            let authorization = self.endpoint.key.authorization_header(
                request.method.as_str(),
                request.resource_type,
                request.resource_link,
                &date,
            );
            let mut builder = hyper::Request::builder()
                .method(request.method.clone())
                .uri(request.path)
                .header("host", &self.endpoint.address)
                .header("x-ms-date", &date)
                .header("x-ms-version", API_VERSION)
                .header("authorization", authorization)
                .header("accept", "application/json");
            for (name, value) in request.headers {
                builder = builder.header(*name, *value);
            }
            let http_request = builder.body(Full::new(request.body.clone()))?;
            let response = match sender.send_request(http_request).await {
                Ok(response) => response,
                // A keep-alive connection the server dropped just before we wrote to it: the
                // request never reached the server, so it is safe to send it again once.
                Err(error) if error.is_canceled() && !reconnected => continue,
                Err(error) => return Err(error.into()),
            };
            let status = response.status().as_u16();
            let headers = response.headers();
            let close = headers
                .get("connection")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.eq_ignore_ascii_case("close"));
            let continuation = headers
                .get("x-ms-continuation")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let request_charge = headers
                .get("x-ms-request-charge")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0);
            let retry_after_ms = headers
                .get("x-ms-retry-after-ms")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok());
            let progress = headers
                .get("x-ms-documentdb-collection-index-transformation-progress")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok());
            let body = response.into_body().collect().await?.to_bytes();
            if !close {
                self.sender = Some(sender);
            }
            return Ok(Reply {
                status,
                body,
                continuation,
                request_charge,
                retry_after_ms,
                progress,
            });
        }
    }
}

/// Builds a TLS connector that accepts any certificate: the servers under test use self-signed
/// ones, and the benchmark measures throughput, not trust.
fn insecure_tls_connector() -> anyhow::Result<tokio_rustls::TlsConnector> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

#[derive(Debug)]
struct AcceptAnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The Cosmos paths and signed links of one container's resources.
#[derive(Clone)]
pub struct ContainerPaths {
    pub container_id: String,
    /// `dbs/{db}/colls/{c}`: the link the docs feed signs.
    pub link: String,
    /// `/dbs/{db}/colls/{c}/docs`.
    pub docs_path: String,
}

impl ContainerPaths {
    pub fn new(database_id: &str, container_id: &str) -> ContainerPaths {
        let link = format!("dbs/{database_id}/colls/{container_id}");
        ContainerPaths {
            container_id: container_id.to_string(),
            docs_path: format!("/{link}/docs"),
            link,
        }
    }

    /// `(path, signed link)` of one item. Benchmark ids are plain ASCII, so neither needs
    /// percent-encoding.
    pub fn item(&self, id: &str) -> (String, String) {
        let link = format!("{}/docs/{id}", self.link);
        (format!("/{link}"), link)
    }
}

/// The `x-ms-documentdb-partitionkey` header value for a string key.
pub fn partition_key_header(pk: &str) -> String {
    format!("[\"{pk}\"]")
}

/// Typed calls for one item, so that no workload writes out the path, the signed link and the
/// partition-key header by hand. Each returns the reply whatever its status; the caller decides
/// which statuses it expects.
impl Client {
    /// `POST`s a new item (201 when created).
    pub async fn create_item(
        &mut self,
        paths: &ContainerPaths,
        pk: &str,
        body: Bytes,
    ) -> anyhow::Result<Reply> {
        let pk_header = partition_key_header(pk);
        self.send(&Request {
            method: Method::POST,
            path: &paths.docs_path,
            resource_type: "docs",
            resource_link: &paths.link,
            headers: &[
                ("content-type", "application/json"),
                ("x-ms-documentdb-partitionkey", &pk_header),
            ],
            body,
        })
        .await
    }

    /// `POST`s an item with `x-ms-documentdb-is-upsert` (200 when replaced, 201 when created).
    pub async fn upsert_item(
        &mut self,
        paths: &ContainerPaths,
        pk: &str,
        body: Bytes,
    ) -> anyhow::Result<Reply> {
        let pk_header = partition_key_header(pk);
        self.send(&Request {
            method: Method::POST,
            path: &paths.docs_path,
            resource_type: "docs",
            resource_link: &paths.link,
            headers: &[
                ("content-type", "application/json"),
                ("x-ms-documentdb-partitionkey", &pk_header),
                ("x-ms-documentdb-is-upsert", "true"),
            ],
            body,
        })
        .await
    }

    /// Sends `body` to one item (its container's paths, id and partition key) by `method`: a
    /// `PUT` of a new version (200) with `application/json`, a `PATCH` with a patch document
    /// (`{"operations": [...]}`) with `application/json_patch+json`.
    pub async fn send_to_item(
        &mut self,
        method: Method,
        (paths, id, pk): (&ContainerPaths, &str, &str),
        content_type: &str,
        body: Bytes,
    ) -> anyhow::Result<Reply> {
        let (path, link) = paths.item(id);
        let pk_header = partition_key_header(pk);
        self.send(&Request {
            method,
            path: &path,
            resource_type: "docs",
            resource_link: &link,
            headers: &[
                ("content-type", content_type),
                ("x-ms-documentdb-partitionkey", &pk_header),
            ],
            body,
        })
        .await
    }

    /// `GET`s one item (200, or 404 when it is absent or expired).
    pub async fn read_item(
        &mut self,
        paths: &ContainerPaths,
        id: &str,
        pk: &str,
    ) -> anyhow::Result<Reply> {
        self.item_without_body(Method::GET, paths, id, pk).await
    }

    /// `DELETE`s one item (204).
    pub async fn delete_item(
        &mut self,
        paths: &ContainerPaths,
        id: &str,
        pk: &str,
    ) -> anyhow::Result<Reply> {
        self.item_without_body(Method::DELETE, paths, id, pk).await
    }

    async fn item_without_body(
        &mut self,
        method: Method,
        paths: &ContainerPaths,
        id: &str,
        pk: &str,
    ) -> anyhow::Result<Reply> {
        let (path, link) = paths.item(id);
        let pk_header = partition_key_header(pk);
        self.send(&Request {
            method,
            path: &path,
            resource_type: "docs",
            resource_link: &link,
            headers: &[("x-ms-documentdb-partitionkey", &pk_header)],
            body: Bytes::new(),
        })
        .await
    }
}
