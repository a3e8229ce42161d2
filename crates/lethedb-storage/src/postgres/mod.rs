//! The PostgreSQL backend (`lethedb serve --postgres URL`): the same ordered tables, kept in a
//! PostgreSQL database that any number of LetheDB processes share.
//!
//! - **Snapshots** are `REPEATABLE READ, READ ONLY` transactions on a pooled connection; they
//!   never wait for writers.
//! - **Writes** run in a `READ COMMITTED` transaction that first takes advisory locks (see
//!   `sql.rs`): the store-wide lock exclusively, so the writers of every instance apply one
//!   such group at a time and each sees every earlier commit, as the single writer of one
//!   process does; or, for a group that writes only within some shards
//!   ([`Storage::write_reading_shards`]), the store-wide lock shared and each shard's lock
//!   exclusively, so groups of disjoint shards commit side by side and each sees every earlier
//!   commit of its shards. The pending changes are sent at commit, pipelined, and acknowledged
//!   only once `COMMIT` succeeded.
//! - **Time**: each transaction reads the store's clock once, as it begins (after the locks,
//!   for writers), never below the floors that commits raise (one row per instance, so
//!   instances never wait for each other's). [`ReadTxn::store_now_ms`] hands it to the engine,
//!   which judges expiry by it, so every instance agrees on the instant.
//! - **The catalog epoch** counts commits that changed [`Table::Catalog`]; every transaction
//!   reads it with the clock ([`ReadTxn::catalog_epoch`]), so an instance can tell a cached
//!   definition from a current one without asking again.
//!
//! A failure to reach PostgreSQL is [`StorageError::Unavailable`]: nothing was done (or, when
//! the connection dropped during `COMMIT`, nothing was acknowledged). It never poisons the
//! store: the next transaction takes a fresh connection and reads everything again.

mod bridge;
mod commit;
mod read;
mod schema;
mod sql;
mod transaction;

pub use schema::PgOptions;

use crate::api::{
    sorted_set, KeyRange, Look, LookFuture, ReadTxn, Storage, StorageError, Table, Visit, WriteTxn,
};
use crate::overlay::Overlay;
use crate::write_txn::{Base, OverlayWrite};
use bridge::{client_error, pool_error, Bridge, CONNECT_TIMEOUT, OPERATION_TIMEOUT};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use read::PgRead;
use sql::Sql;
use std::collections::HashMap;
use std::sync::Arc;
use tokio_postgres::NoTls;
use transaction::{Backend, Transaction, Unsettled};

/// The schema LetheDB keeps its tables in unless told otherwise.
pub const POSTGRES_SCHEMA_DEFAULT: &str = "lethedb";
/// Connections one instance keeps at most: snapshots of concurrent requests and scans, and the
/// writer's.
const POOL_SIZE_MAX: usize = 32;

/// A store kept in PostgreSQL.
pub struct PgStore {
    backend: Backend,
    target: String,
}

impl PgStore {
    /// Connects to the database at `url` (`postgresql://user[:password]@host[:port]/database`,
    /// several `host:port` separated by commas for a replicated server, or the `key=value` form)
    /// and creates LetheDB's tables in its default schema when missing.
    pub fn open(url: &str) -> Result<PgStore, StorageError> {
        PgStore::open_in_schema(url, POSTGRES_SCHEMA_DEFAULT)
    }

    /// Like [`PgStore::open`], with the tables in `schema` (tests give each store its own).
    pub fn open_in_schema(url: &str, schema: &str) -> Result<PgStore, StorageError> {
        PgStore::open_with(url, schema, PgOptions::default())
    }

    /// Like [`PgStore::open_in_schema`], with the tables laid out as `options` say (a LetheDB
    /// server passes the engine's placement of keys into buckets).
    pub fn open_with(url: &str, schema: &str, options: PgOptions) -> Result<PgStore, StorageError> {
        let config = connection_config(url)?;
        let target = describe(&config);
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE_MAX)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(OPERATION_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .recycle_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|_| StorageError::Io("cannot set up the PostgreSQL connection pool".into()))?;
        let store = PgStore {
            backend: Backend {
                bridge: Bridge::new(pool)?,
                sql: Arc::new(Sql::new(schema, &instance_name())),
                distribution: Arc::clone(&options.distribution),
                statements: Arc::default(),
            },
            target,
        };
        let pool = store.backend.bridge.pool.clone();
        let sql = Arc::clone(&store.backend.sql);
        let schema = schema.to_string();
        store.backend.bridge.run(async move {
            // A failure inside the schema's transaction leaves the connection in it: closed.
            let connection = Unsettled::new(pool.get().await.map_err(|error| pool_error(&error))?);
            schema::prepare(connection.get(), &sql, &schema, &options).await?;
            // Every instance that ever opened the store left a floor row; all but the highest
            // are no floor at all.
            connection
                .get()
                .batch_execute(&sql.prune_floors)
                .await
                .map_err(|error| client_error(&error))?;
            drop(connection.settle());
            Ok(())
        })?;
        Ok(store)
    }

    /// How many statements on per-item tables so far named one bucket, how many spanned
    /// several, and how many commits wrote rows of several buckets: tests check that an
    /// operation on one logical partition sends only the first kind, in commits of one bucket.
    pub fn bucket_statements(&self) -> (u64, u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let statements = &self.backend.statements;
        (
            statements.one.load(Relaxed),
            statements.several.load(Relaxed),
            statements.commits_across.load(Relaxed),
        )
    }

    /// How many times callers have waited on PostgreSQL since the store opened: one round trip
    /// each, once a connection has prepared its statements. Tests count them per operation.
    pub fn round_trips(&self) -> u64 {
        self.backend
            .bridge
            .waits
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Where the store is, for logs: hosts, ports and database, never the password.
    pub fn target(&self) -> &str {
        &self.target
    }
}

/// A name for this instance's clock floor row that no other open store has: the process id
/// hashed with a key the standard library draws at random for each hasher it makes.
fn instance_name() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    format!("{:016x}", hasher.finish())
}

/// The client's configuration for `url`, as tokio-postgres reads it: every host and port the
/// URL lists, in order, and its options, `target_session_attrs` among them. Each new connection
/// tries the hosts in turn and, with `target_session_attrs=read-write`, passes over one that
/// answers read-only, so after a failover the pool's next connection finds the new primary (the
/// old primary's connections closed with it, and the pool drops closed ones). Each host gets
/// [`CONNECT_TIMEOUT`]; the application name is `lethedb` unless the URL names one.
fn connection_config(url: &str) -> Result<tokio_postgres::Config, StorageError> {
    // The URL may hold a password: no message here repeats it.
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|_| StorageError::Io("the PostgreSQL connection URL is not valid".into()))?;
    config.connect_timeout(CONNECT_TIMEOUT);
    if config.get_application_name().is_none() {
        config.application_name("lethedb");
    }
    Ok(config)
}

/// Hosts, ports and database of a configuration.
fn describe(config: &tokio_postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .zip(config.get_ports().iter().chain(std::iter::repeat(&5432)))
        .map(|(host, port)| match host {
            tokio_postgres::config::Host::Tcp(name) => format!("{name}:{port}"),
            tokio_postgres::config::Host::Unix(path) => format!("{}:{port}", path.display()),
        })
        .collect();
    format!(
        "postgresql://{}/{}",
        hosts.join(","),
        config.get_dbname().unwrap_or("")
    )
}

impl Storage for PgStore {
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StorageError> {
        Ok(Box::new(PgRead {
            transaction: self.backend.begin(&self.backend.sql.begin_read)?,
        }))
    }

    fn look(&self, keys: &[(Table, &[u8])]) -> Result<Look, StorageError> {
        self.backend.look(keys)
    }

    fn look_async(&self, keys: &[(Table, &[u8])]) -> Option<LookFuture> {
        Some(self.backend.look_async(keys))
    }

    fn write_reading(
        &self,
        keys: &[(Table, &[u8])],
    ) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        let (transaction, fetched, _) = self
            .backend
            .begin_fetching(&self.backend.sql.begin_write, keys)?;
        Ok(Box::new(OverlayWrite::new(PgBase {
            transaction,
            prefetched: fetched.into_iter().collect(),
        })))
    }

    fn write_reading_shards(
        &self,
        shards: &[u64],
        keys: &[(Table, &[u8])],
    ) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        let begin = self.backend.sql.begin_write_shards(shards);
        let (transaction, fetched, _) = self.backend.begin_fetching(&begin, keys)?;
        Ok(Box::new(OverlayWrite::new(PgBase {
            transaction,
            prefetched: fetched.into_iter().collect(),
        })))
    }

    fn write_reading_free_shards(
        &self,
        shards: &[u64],
        keys: &[(Table, &[u8])],
    ) -> Result<(Box<dyn WriteTxn + '_>, Vec<u64>), StorageError> {
        let begin = self.backend.sql.begin_write_free_shards(shards);
        let (mut transaction, fetched, acquired) = self.backend.begin_fetching(&begin, keys)?;
        let acquired = acquired.unwrap_or_default();
        if !acquired.is_empty() {
            // The keys were fetched after the tries: those of the shards it holds are current.
            let transaction = PgBase {
                transaction,
                prefetched: fetched.into_iter().collect(),
            };
            return Ok((Box::new(OverlayWrite::new(transaction)), acquired));
        }
        // None was free: wait for them all, holding none, so no cycle can form. What was
        // fetched before the wait may have changed since, so nothing of it is kept.
        let wait = self.backend.sql.wait_for_shards_then_clock(shards);
        self.backend.continue_with(&mut transaction, &wait)?;
        let transaction = PgBase {
            transaction,
            prefetched: HashMap::new(),
        };
        Ok((Box::new(OverlayWrite::new(transaction)), sorted_set(shards)))
    }

    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        Ok(Box::new(OverlayWrite::new(PgBase {
            transaction: self.backend.begin(&self.backend.sql.begin_write)?,
            prefetched: HashMap::new(),
        })))
    }

    fn is_shared(&self) -> bool {
        true
    }

    fn kind(&self) -> &'static str {
        "postgresql"
    }
}

/// The committed side of a write transaction: what other commits left, read under the lock.
struct PgBase<'a> {
    transaction: Transaction<'a>,
    /// Committed values fetched with the start ([`Storage::write_reading`]); the lock keeps
    /// them current for the whole transaction, since no other writer commits while it is held.
    prefetched: HashMap<(Table, Vec<u8>), Option<Vec<u8>>>,
}

impl Base for PgBase<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        if let Some(value) = self.prefetched.get(&(table, key.to_vec())) {
            return Ok(value.clone());
        }
        self.transaction.get(table, key)
    }

    fn merged_scan(
        &self,
        overlay: &Overlay,
        table: Table,
        range: &KeyRange,
        reverse: bool,
        visit: Visit<'_>,
    ) -> Result<(), StorageError> {
        let pages = self.transaction.pages(table, range, reverse);
        overlay.merged_scan(table, range, reverse, Box::new(pages), visit)
    }

    fn store_now_ms(&self) -> Option<i64> {
        Some(self.transaction.now_ms)
    }

    fn catalog_epoch(&self) -> Option<u64> {
        Some(self.transaction.epoch)
    }

    fn commit(self, overlay: Overlay) -> Result<(), StorageError> {
        let transaction = self.transaction;
        let (writes, catalog_changed) = commit::writes_of(transaction.store, overlay);
        let connection = transaction.connection()?;
        let sql = Arc::clone(&transaction.store.sql);
        let now_ms = transaction.now_ms;
        transaction.store.bridge.run(async move {
            commit::apply_and_commit(&connection, &sql, &writes, now_ms, catalog_changed).await
        })?;
        transaction.finish();
        Ok(())
    }
}

#[cfg(test)]
mod layout_tests;
#[cfg(test)]
mod shard_tests;
#[cfg(test)]
mod tests;
