//! LetheDB's storage layer: a small transactional, ordered key-value interface and its backends.
//!
//! The engine sees a fixed set of [`Table`]s of byte keys and byte values, ordered bytewise. It
//! reads through snapshots ([`ReadTxn`]) that never wait for the writer, and changes data through
//! one write transaction at a time ([`WriteTxn`]) that becomes durable, whole, when
//! [`WriteTxn::commit`] returns. A write transaction can take savepoints and roll back to them,
//! so an operation that fails leaves the transaction as it found it. The backends are
//! [`RedbStore`] (durable, the default), [`FjallStore`] (durable, an LSM tree whose write
//! transactions of disjoint shards commit side by side), [`PgStore`] (PostgreSQL, shared by
//! several processes) and [`MemoryStore`] (a throwaway store for tests and `--in-memory`); [`FailingStore`] wraps
//! any of them to inject failures in tests.
//!
//! One process owns a redb or fjall store: it refuses a second opener with [`StorageError::AlreadyOpen`].
//! A PostgreSQL store is shared: its transactions carry the store's clock and catalog epoch
//! ([`ReadTxn::store_now_ms`], [`ReadTxn::catalog_epoch`]) so that its processes agree.
//!
//! This crate knows nothing of HTTP, Cosmos DB, JSON or time to live: keys and values are opaque.
//! The interface is in `api.rs`; this file is only the front door.

mod api;
mod clock;
mod distribution;
mod failing;
mod fjall_store;
mod memory;
mod overlay;
mod postgres;
mod published;
mod redb_bodies;
mod redb_flush;
mod redb_layout;
mod redb_snapshots;
mod redb_staged;
mod redb_store;
mod redo_log;
mod write_txn;

/// The value type of [`WriteTxn::put_bytes`]: a shared immutable buffer.
pub use bytes::Bytes;

pub use api::{
    prefix_successor, FlushStats, KeyRange, Look, LookFuture, ReadTxn, Savepoint, Snapshots,
    Storage, StorageError, Table, Visit, WriteTxn,
};
pub use distribution::{range_within, Distribution, OneBucket};
pub use failing::{FailingStore, FaultPlan};
pub use fjall_store::{FjallStore, FJALL_MEMORY_BYTES_DEFAULT};
pub use memory::MemoryStore;
pub use postgres::{PgOptions, PgStore, POSTGRES_SCHEMA_DEFAULT};
pub use redb_store::{
    RedbStore, CACHE_BYTES_DEFAULT, CHECKPOINT_LOG_BYTES_DEFAULT, STAGED_BYTES_DEFAULT,
};
pub use redo_log::read_redo_log;

#[cfg(test)]
mod model_test;
#[cfg(test)]
mod redb_layout_test;
#[cfg(test)]
mod redb_staged_test;
#[cfg(test)]
mod redo_log_test;
#[cfg(test)]
mod snapshot_test;
