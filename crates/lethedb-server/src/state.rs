//! What every request handler shares: the engine, the master key, the TLS certificate to hand
//! out, and the metrics registry.
//!
//! Built once by `main` (or a test) and cloned into each request; it holds handles, not data.

use crate::metrics::Metrics;
use lethedb_auth::MasterKey;
use lethedb_engine::Engine;
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
    pub endpoint: Arc<str>,
    /// Whether `GET /metrics` is served on this router (`secrets::metrics_route`).
    pub metrics_route: MetricsRoute,
    /// Whether Entra ID tokens in the emulator's format are accepted (only ever over HTTPS,
    /// that is when `certificate_pem` is set; `--no-entra-id` turns them off).
    pub entra_id: bool,
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
