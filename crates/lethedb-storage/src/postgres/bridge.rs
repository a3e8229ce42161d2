//! Waiting on PostgreSQL from synchronous code.
//!
//! The storage traits are synchronous: the engine calls them from its writer thread, from the
//! blocking pool and from request workers. The PostgreSQL client is asynchronous, so every call
//! is a future spawned on a small runtime owned by the store, whose connections live there and
//! nowhere else; the caller waits on a plain channel. That never enters another runtime (which
//! would panic) and never needs the caller's runtime to make progress (which could deadlock it).
//! Every wait is bounded: an operation that does not finish in time fails as unavailable. A wait
//! on a worker of a multi-threaded runtime is announced (`block_in_place`), so the runtime moves
//! the worker's other tasks elsewhere meanwhile.

use crate::api::StorageError;
use deadpool_postgres::{Pool, PoolError};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::runtime::{Runtime, RuntimeFlavor};

/// The longest any one round of work may take before the caller is told the store is
/// unavailable (a stalled server or network must not hang a request).
pub(crate) const OPERATION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long opening a connection may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Threads of the store's own runtime: they only move bytes between sockets and waiters.
const RUNTIME_THREADS: usize = 2;

/// A failure to reach or use PostgreSQL as the caller sees it.
pub(crate) fn unavailable(what: impl std::fmt::Display) -> StorageError {
    StorageError::Unavailable(what.to_string())
}

/// A client error, reduced to what the engine may act on. PostgreSQL rolls a failed transaction
/// back and the store keeps nothing of it in memory, so every failure means "not done, try
/// again": none corrupts or poisons the store. The message names the kind of failure and the
/// SQLSTATE, never a connection string.
pub(crate) fn client_error(error: &tokio_postgres::Error) -> StorageError {
    match error.code() {
        Some(state) => unavailable(format!(
            "PostgreSQL refused the operation (SQLSTATE {})",
            state.code()
        )),
        None if error.is_closed() => unavailable("the connection to PostgreSQL was lost"),
        None => unavailable("PostgreSQL could not be reached"),
    }
}

pub(crate) fn pool_error(error: &PoolError) -> StorageError {
    match error {
        PoolError::Backend(error) => client_error(error),
        PoolError::Timeout(_) => unavailable("no connection to PostgreSQL became free in time"),
        _ => unavailable("PostgreSQL could not be reached"),
    }
}

/// The store's runtime and connection pool.
pub(crate) struct Bridge {
    runtime: Option<Runtime>,
    pub(crate) pool: Pool,
    /// [`OPERATION_TIMEOUT`], shorter in tests.
    pub(crate) timeout: Duration,
    /// How many times a caller waited on the runtime: one round trip each, once the
    /// connection has prepared the statements (tests count them per operation).
    pub(crate) waits: AtomicU64,
}

impl Bridge {
    pub(crate) fn new(pool: Pool) -> Result<Bridge, StorageError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_THREADS)
            .thread_name("lethedb-postgres")
            .enable_all()
            .build()
            .map_err(|error| {
                StorageError::Io(format!("cannot start the PostgreSQL runtime: {error}"))
            })?;
        Ok(Bridge {
            runtime: Some(runtime),
            pool,
            timeout: OPERATION_TIMEOUT,
            waits: AtomicU64::new(0),
        })
    }

    /// Runs `work` on the store's runtime and waits for it, at most [`OPERATION_TIMEOUT`].
    pub(crate) fn run<T, F>(&self, work: F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StorageError>> + Send + 'static,
    {
        let (sender, receiver) = std::sync::mpsc::sync_channel(1);
        self.spawn_timed(work, move |outcome| {
            let _ = sender.send(outcome);
        });
        let wait = || {
            receiver
                .recv()
                .unwrap_or_else(|_| Err(unavailable("the PostgreSQL runtime stopped")))
        };
        // On a worker of the server's runtime, the wait is announced, so the runtime hands the
        // worker's other tasks to another thread: a database that stops answering holds only
        // the requests that wait on it, never every connection.
        match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        }
    }

    /// Runs `work` on the store's runtime, at most [`OPERATION_TIMEOUT`], and returns a future
    /// of its outcome for a caller on an asynchronous runtime (any runtime: the future only
    /// waits for a message). No thread blocks meanwhile, so a point read costs its worker no
    /// hand-over to another thread, as [`Bridge::run`] does; the work stays on the store's
    /// runtime, where the connections live. Dropping the future leaves the work to finish.
    pub(crate) fn start<T, F>(
        &self,
        work: F,
    ) -> impl Future<Output = Result<T, StorageError>> + Send + 'static
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StorageError>> + Send + 'static,
    {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        self.spawn_timed(work, move |outcome| {
            let _ = sender.send(outcome);
        });
        async move {
            receiver
                .await
                .unwrap_or_else(|_| Err(unavailable("the PostgreSQL runtime stopped")))
        }
    }

    /// Spawns `work` on the store's runtime, bounded by the store's timeout, and hands its
    /// outcome to `deliver` (at once, as unavailable, once the store is closed). Each call is
    /// one wait of a caller: one round trip, once the statements are prepared.
    fn spawn_timed<T, F>(
        &self,
        work: F,
        deliver: impl FnOnce(Result<T, StorageError>) + Send + 'static,
    ) where
        T: Send + 'static,
        F: Future<Output = Result<T, StorageError>> + Send + 'static,
    {
        let Some(runtime) = &self.runtime else {
            return deliver(Err(unavailable("the store is closed")));
        };
        self.waits.fetch_add(1, Ordering::Relaxed);
        let timeout = self.timeout;
        runtime.spawn(async move {
            deliver(match tokio::time::timeout(timeout, work).await {
                Ok(outcome) => outcome,
                Err(_) => Err(unavailable("PostgreSQL did not answer in time")),
            });
        });
    }

    /// Runs `work` on the store's runtime without waiting for it (a snapshot's rollback).
    pub(crate) fn detach(&self, work: impl Future<Output = ()> + Send + 'static) {
        if let Some(runtime) = &self.runtime {
            let timeout = self.timeout;
            runtime.spawn(async move {
                let _ = tokio::time::timeout(timeout, work).await;
            });
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        // The store may be dropped inside another runtime, where a blocking shutdown panics.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
