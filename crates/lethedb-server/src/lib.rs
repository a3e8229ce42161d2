//! LetheDB's wire protocol: the Azure Cosmos DB for NoSQL REST API (gateway mode) over HTTP(S).
//!
//! [`app`] routes the few internal endpoints by path and hands every other request to the
//! Cosmos dispatcher, which runs one straight line: parse the path and the request head,
//! classify the request into an `Operation`, authenticate (master key, resource token, Entra ID),
//! resolve resource ids, authorize a resource token's request, admit item operations against the
//! throughput budget, run the operation's handler, add the common headers and record metrics. This layer owns HTTP, headers, authorization, the JSON shapes of
//! responses and error bodies; it owns no data and decides nothing about time to live, which is
//! the engine's.

mod access;
mod activity;
mod app;
pub mod binary_json;
pub mod cli;
mod cosmos;
mod error;
mod explorer;
pub mod export;
pub mod faults;
mod grants;
mod handlers;
mod head;
mod header_case;
mod json_text;
pub mod listen;
pub mod metrics;
mod operation;
mod request;
mod resolve;
mod respond;
pub mod routes;
pub mod secrets;
pub mod seed;
mod state;
pub mod tls;

pub use app::{app, metrics_router, probe_router};
pub use cosmos::dispatch;
pub use error::{wire_status, ApiError, ApiResult, Code};
pub use head::{ConsistencyLevel, PriorityLevel, RequestHead, CONTINUATION_LIMIT_HEADER};
pub use operation::{classify, ItemOperation, Operation, Resource, Verb};
pub use request::{JSON_DEPTH_MAX, REQUEST_BODY_BYTES_MAX};
pub use state::{AppState, Endpoint, Gateway, MetricsRoute};

#[cfg(test)]
mod tests;
