//! What every request handler shares: the engine, the master key, the TLS certificate to hand
//! out, and the metrics registry.
//!
//! Built once by `main` (or a test) and cloned into each request; it holds handles, not data.

use crate::cli::{advertised_endpoint, is_plain_authority};
use crate::faults::Faults;
use crate::metrics::Metrics;
use crate::seed::Seed;
use axum::http::{header, HeaderMap};
use lethedb_auth::MasterKey;
use lethedb_engine::Engine;
use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;

/// What every request handler shares.
#[derive(Clone)]
pub struct AppState {
    pub engine: Engine,
    pub key: MasterKey,
    /// The PEM of the TLS certificate, served at `/_explorer/emulator.pem` in TLS mode.
    pub certificate_pem: Option<Arc<String>>,
    /// Request metrics; `None` when turned off.
    pub metrics: Option<Arc<Metrics>>,
    /// The endpoint the account advertises as its one location (`cli::advertised_endpoint`).
    pub endpoint: Endpoint,
    /// Whether `GET /metrics` is served on this router (`secrets::metrics_route`).
    pub metrics_route: MetricsRoute,
    /// Whether Entra ID tokens in the emulator's format are accepted (only ever over HTTPS,
    /// that is when `certificate_pem` is set; `--no-entra-id` turns them off).
    pub entra_id: bool,
    /// The fault rules in force (`faults.rs`).
    pub faults: Arc<Faults>,
    /// The `--seed` data, applied again by a reset (`seed.rs`).
    pub seed: Option<Arc<Seed>>,
    /// Which of the service's gateways this listener answers as.
    pub gateway: Gateway,
}

/// Which of the service's two front ends a listener answers as. They share the account and its
/// data and differ in how they read a path's ids when they check its signature.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Gateway {
    /// The routing gateway, the account's endpoint: it decodes an id once more and drops its
    /// trailing whitespace (`ResourcePath::gateway_link`), so a point operation on an id ending
    /// in whitespace or holding a `%xx` sequence fails its signature check (401).
    #[default]
    Routing,
    /// The compute gateway (`--compute-gateway-port`; the emulator's port 8903): it checks the
    /// signature over the ids as sent once decoded, so such ids are served.
    Compute,
}

/// What the main port does with `GET /metrics`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricsRoute {
    /// Served, unauthenticated, as Prometheus scrapes it: the server listens on loopback, or
    /// `--metrics-public` says anyone who can connect may read it.
    Served,
    /// Metrics have a port of their own (`--metrics-bind`): here `/metrics` is a Cosmos path.
    OwnPort,
    /// Refused with a 403 that says how to serve it: the server listens on an address other
    /// machines can reach.
    LoopbackOnly,
}

/// The endpoint the account advertises: fixed by configuration (the default: the bound
/// address, or `--advertise-url URL`), or with `--advertise-url auto` the scheme, host and port
/// the client used, so a server behind a mapped port (a container's random host port) is found
/// at the address its client reached.
#[derive(Clone, Debug)]
pub enum Endpoint {
    Fixed(Arc<str>),
    /// The request's `Host`, under `scheme`; `fallback` when it has none a URL can carry.
    FromHost {
        scheme: &'static str,
        fallback: Arc<str>,
    },
}

impl Endpoint {
    /// The endpoint `--advertise-url` asks for: `auto` (any case) takes the request's `Host`,
    /// any other value is a fixed URL (`cli::advertised_endpoint`), and none the bound address.
    pub fn from_flag(
        advertise: Option<&str>,
        bound: SocketAddr,
        tls: bool,
    ) -> Result<Endpoint, String> {
        match advertise.map(str::trim) {
            Some(flag) if flag.eq_ignore_ascii_case("auto") => Ok(Endpoint::FromHost {
                scheme: if tls { "https" } else { "http" },
                fallback: advertised_endpoint(None, bound, tls)?.into(),
            }),
            other => Ok(Endpoint::Fixed(
                advertised_endpoint(other, bound, tls)?.into(),
            )),
        }
    }

    /// The endpoint as a request with these headers should see it.
    pub fn for_request(&self, headers: &HeaderMap) -> Cow<'_, str> {
        match self {
            Endpoint::Fixed(url) => Cow::Borrowed(url),
            Endpoint::FromHost { scheme, fallback } => match request_authority(headers) {
                Some(authority) => Cow::Owned(format!("{scheme}://{authority}/")),
                None => Cow::Borrowed(fallback),
            },
        }
    }

    /// The base of a response's `Content-Location` (the request's URL): the endpoint, except
    /// that a server on a loopback address names the loopback host its client addressed, as the
    /// emulator does (azure-cosmos 4.5.1's endpoint test reads `localhost` back when it asked
    /// `localhost` of a server bound to `127.0.0.1`). A server reached any other way names only
    /// its endpoint, never a `Host` a proxy may have rewritten.
    pub fn as_addressed(&self, headers: &HeaderMap) -> Cow<'_, str> {
        let endpoint = self.for_request(headers);
        let Some((scheme, rest)) = endpoint.split_once("://") else {
            return endpoint;
        };
        let authority = rest.split('/').next().unwrap_or_default();
        // The client addressed the endpoint's own authority (nearly every request): the answer
        // below would be the endpoint itself, so neither the `Host` nor an address is parsed
        // to say so.
        let host = headers
            .get(header::HOST)
            .and_then(|host| host.to_str().ok())
            .map(str::trim);
        if host == Some(authority) && rest.len() == authority.len() + 1 {
            return endpoint;
        }
        match host.filter(|host| is_plain_authority(host)) {
            Some(host) if is_loopback(authority) && is_loopback(host) => {
                Cow::Owned(format!("{scheme}://{host}/"))
            }
            _ => endpoint,
        }
    }

    /// The same endpoint on another port (the compute gateway's): a fixed URL keeps its scheme
    /// and host, and `auto` still answers with the request's `Host`.
    pub fn on_port(&self, port: u16) -> Endpoint {
        let moved = |url: &str| -> Arc<str> {
            let Some((scheme, rest)) = url.split_once("://") else {
                return url.into();
            };
            let authority = rest.split('/').next().unwrap_or_default();
            match authority.parse::<axum::http::uri::Authority>() {
                Ok(authority) => format!("{scheme}://{}:{port}/", authority.host()).into(),
                Err(_) => url.into(),
            }
        };
        match self {
            Endpoint::Fixed(url) => Endpoint::Fixed(moved(url)),
            Endpoint::FromHost { scheme, fallback } => Endpoint::FromHost {
                scheme,
                fallback: moved(fallback),
            },
        }
    }

    /// The endpoint when no request is at hand (logs, the ready line).
    pub fn configured(&self) -> &str {
        match self {
            Endpoint::Fixed(url) | Endpoint::FromHost { fallback: url, .. } => url,
        }
    }
}

impl From<&str> for Endpoint {
    fn from(url: &str) -> Endpoint {
        Endpoint::Fixed(url.into())
    }
}

/// The request's `Host` when it is a plain `host[:port]` (no user, path or anything else a URL
/// would misread).
fn request_authority(headers: &HeaderMap) -> Option<&str> {
    let host = headers.get(header::HOST)?.to_str().ok()?.trim();
    is_plain_authority(host).then_some(host)
}

/// Whether a `host[:port]` names this machine's loopback interface.
fn is_loopback(authority: &str) -> bool {
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compute_gateway_endpoint_is_the_main_one_on_its_own_port() {
        let cases = [
            ("https://localhost:8081/", "https://localhost:8903/"),
            ("http://127.0.0.1:8081/", "http://127.0.0.1:8903/"),
            ("http://[::1]:8081/", "http://[::1]:8903/"),
            ("https://cosmos.example/", "https://cosmos.example:8903/"),
        ];
        for (main, want) in cases {
            assert_eq!(Endpoint::from(main).on_port(8903).configured(), want);
        }
        let bound = "127.0.0.1:8081".parse().expect("address");
        let auto = Endpoint::from_flag(Some("auto"), bound, true)
            .expect("auto")
            .on_port(8903);
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "box:9903".parse().expect("host"));
        assert_eq!(auto.for_request(&headers), "https://box:9903/");
        assert_eq!(auto.configured(), "https://127.0.0.1:8903/");
    }

    #[test]
    fn a_reply_names_the_loopback_host_its_client_addressed_and_otherwise_the_endpoint() {
        let endpoint = Endpoint::from("http://127.0.0.1:8081/");
        let cases = [
            (Some("127.0.0.1:8081"), "http://127.0.0.1:8081/", true),
            (Some(" 127.0.0.1:8081 "), "http://127.0.0.1:8081/", true),
            (Some("localhost:8081"), "http://localhost:8081/", false),
            (Some("[::1]:8081"), "http://[::1]:8081/", false),
            (Some("cosmos.example:8081"), "http://127.0.0.1:8081/", true),
            (Some("localhost/evil"), "http://127.0.0.1:8081/", true),
            (None, "http://127.0.0.1:8081/", true),
        ];
        for (host, want, borrowed) in cases {
            let mut headers = HeaderMap::new();
            if let Some(host) = host {
                headers.insert(header::HOST, host.parse().expect("host"));
            }
            let addressed = endpoint.as_addressed(&headers);
            assert_eq!(addressed, want, "{host:?}");
            assert_eq!(matches!(addressed, Cow::Borrowed(_)), borrowed, "{host:?}");
        }
    }
}
