//! The engine's front door: every public method of [`Engine`], one file per resource
//! (`engine`: lifecycle, admission, status; `catalog`: databases and containers; `resources`:
//! child resources; `items`; `queries`; `change_feed`; `scripts`; `offers`; `ttl`; `index`:
//! index rebuilds and checks), and the one
//! place where blocking work leaves the async request workers.
//!
//! Each door is one of two kinds. An `async fn` awaits the writer, or runs its work on tokio's
//! blocking pool through `run_scan` (at most `SCANS_CONCURRENT_MAX` scans at once) or
//! `run_blocking` (the scripts' own bound): a query, a read feed, a usage walk, a catalog
//! listing or lookup by `_rid`, the sweeper's search for expired entries. A plain `fn` is a
//! non-blocking fast path that costs at most a few point reads or reads memory (`read_item`,
//! `read_container`, `read_resource`, `admit`, ...): handing it to another thread would cost
//! more than it. The tidy test keeps both promises: `spawn_blocking` appears nowhere else in
//! the workspace's library code, and no plain `fn` here calls a `*_blocking` body or lists
//! records. What each scan reads is in the room that owns it (its `*_blocking` function).

mod catalog;
mod change_feed;
mod engine;
mod index;
mod items;
mod offers;
mod queries;
mod resources;
mod scripts;
mod sessions;
mod snapshots;
mod ttl;

use crate::engine::Engine;
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::poison::panic_message;
use std::sync::Arc;

impl Engine {
    /// Runs a synchronous scan on the blocking pool under the scan semaphore.
    pub(crate) async fn run_scan<T, F>(&self, scan: F) -> EngineResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Engine) -> EngineResult<T> + Send + 'static,
    {
        self.run_blocking(&self.inner.scans, "scan", scan).await
    }

    /// Runs synchronous work on the blocking pool under one of `permits` (the scans', the
    /// scripts'). It only reads or goes through the writer, so a panic fails this request and
    /// poisons nothing.
    pub(crate) async fn run_blocking<T, F>(
        &self,
        permits: &Arc<tokio::sync::Semaphore>,
        what: &'static str,
        work: F,
    ) -> EngineResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Engine) -> EngineResult<T> + Send + 'static,
    {
        let permit = Arc::clone(permits).acquire_owned().await.map_err(|_| {
            EngineError::with_message(ErrorCode::WriterStopped, "the engine is shutting down")
        })?;
        let engine = self.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            work(&engine)
        })
        .await
        .map_err(|error| {
            let reason = if error.is_panic() {
                panic_message(&*error.into_panic())
            } else {
                error.to_string()
            };
            tracing::error!(%reason, "a {what} stopped");
            EngineError::with_message(ErrorCode::Internal, format!("a {what} stopped: {reason}"))
        })?
    }
}
