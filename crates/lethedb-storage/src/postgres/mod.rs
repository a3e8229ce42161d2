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
mod read;
mod sql;
mod transaction;

use crate::api::{
    KeyRange, Look, LookFuture, ReadTxn, Storage, StorageError, Table, Visit, WriteTxn,
};
use crate::overlay::Overlay;
use crate::write_txn::{Base, OverlayWrite};
use bridge::{client_error, pool_error, Bridge, CONNECT_TIMEOUT, OPERATION_TIMEOUT};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use read::PgRead;
use sql::Sql;
use std::collections::HashMap;
use std::sync::Arc;
use tokio_postgres::NoTls;
use transaction::{Backend, Transaction};

/// The schema LetheDB keeps its tables in unless told otherwise.
pub const POSTGRES_SCHEMA_DEFAULT: &str = "lethedb";
/// Connections one instance keeps at most: snapshots of concurrent requests and scans, and the
/// writer's.
const POOL_SIZE_MAX: usize = 32;
/// Rows one pipelined statement of a commit carries at most.
const COMMIT_ROWS_PER_STATEMENT: usize = 1_000;

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
            },
            target,
        };
        let pool = store.backend.bridge.pool.clone();
        let create = store.backend.sql.create_schema.clone();
        let prune = store.backend.sql.prune_floors.clone();
        store.backend.bridge.run(async move {
            let connection = pool.get().await.map_err(|error| pool_error(&error))?;
            connection
                .batch_execute(&create)
                .await
                .map_err(|error| client_error(&error))?;
            // Every instance that ever opened the store left a floor row; all but the highest
            // are no floor at all.
            connection
                .batch_execute(&prune)
                .await
                .map_err(|error| client_error(&error))
        })?;
        Ok(store)
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
        let (transaction, fetched) = self
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
        let (transaction, fetched) = self.backend.begin_fetching(&begin, keys)?;
        Ok(Box::new(OverlayWrite::new(PgBase {
            transaction,
            prefetched: fetched.into_iter().collect(),
        })))
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

/// One table's pending changes as statement arguments.
struct TableChanges {
    table: Table,
    put_keys: Vec<Vec<u8>>,
    put_values: Vec<Vec<u8>>,
    delete_keys: Vec<Vec<u8>>,
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
        let mut catalog_changed = false;
        let mut changes = Vec::new();
        for (table, pending) in overlay.into_tables() {
            if pending.is_empty() {
                continue;
            }
            catalog_changed |= table == Table::Catalog;
            let mut table_changes = TableChanges {
                table,
                put_keys: Vec::new(),
                put_values: Vec::new(),
                delete_keys: Vec::new(),
            };
            for (key, change) in pending {
                match change {
                    Some(value) => {
                        table_changes.put_keys.push(key);
                        table_changes.put_values.push(value);
                    }
                    None => table_changes.delete_keys.push(key),
                }
            }
            changes.push(table_changes);
        }
        let transaction = self.transaction;
        let connection = transaction.connection()?;
        let sql = Arc::clone(&transaction.store.sql);
        let now_ms = transaction.now_ms;
        transaction.store.bridge.run(async move {
            apply_and_commit(&connection, &sql, &changes, now_ms, catalog_changed).await
        })?;
        transaction.finish();
        Ok(())
    }
}

/// Sends every change of a commit, the meta updates and `COMMIT`, pipelined on one connection
/// (one round trip); fails if any statement failed. A statement that failed aborts the
/// transaction, and PostgreSQL answers the `COMMIT` of an aborted transaction by rolling it
/// back, so nothing of a failed commit stays, though its `COMMIT` reports no error.
async fn apply_and_commit(
    connection: &Object,
    sql: &Sql,
    changes: &[TableChanges],
    now_ms: i64,
    catalog_changed: bool,
) -> Result<(), StorageError> {
    type Pending<'a> = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<u64, tokio_postgres::Error>> + Send + 'a>,
    >;
    // Every statement is prepared first (from the connection's cache after its first commit):
    // an execution whose statement were still being prepared would go out after `COMMIT`.
    let prepared = prepare_commit(connection, sql, changes, catalog_changed).await?;
    let mut prepared = prepared.iter();
    let mut next = || {
        prepared
            .next()
            .ok_or_else(|| StorageError::Io("a commit statement was not prepared".into()))
    };
    let mut statements: Vec<Pending<'_>> = Vec::new();
    for change in changes {
        if !change.put_keys.is_empty() {
            let statement = next()?;
            for (keys, values) in change
                .put_keys
                .chunks(COMMIT_ROWS_PER_STATEMENT)
                .zip(change.put_values.chunks(COMMIT_ROWS_PER_STATEMENT))
            {
                statements.push(Box::pin(async move {
                    connection.execute(statement, &[&keys, &values]).await
                }));
            }
        }
        if !change.delete_keys.is_empty() {
            let statement = next()?;
            for keys in change.delete_keys.chunks(COMMIT_ROWS_PER_STATEMENT) {
                statements.push(Box::pin(async move {
                    connection.execute(statement, &[&keys]).await
                }));
            }
        }
    }
    let floor = next()?;
    statements.push(Box::pin(async move {
        connection.execute(floor, &[&now_ms]).await
    }));
    if catalog_changed {
        let epoch = next()?;
        statements.push(Box::pin(
            async move { connection.execute(epoch, &[]).await },
        ));
    }
    statements.push(Box::pin(async move {
        connection.batch_execute("COMMIT").await.map(|()| 0)
    }));
    for outcome in futures_util::future::join_all(statements).await {
        outcome.map_err(|error| client_error(&error))?;
    }
    Ok(())
}

/// The statements a commit executes, prepared, in the order [`apply_and_commit`] takes them:
/// per table its upsert and its delete (each only where it has rows), the floor, the epoch.
async fn prepare_commit(
    connection: &Object,
    sql: &Sql,
    changes: &[TableChanges],
    catalog_changed: bool,
) -> Result<Vec<tokio_postgres::Statement>, StorageError> {
    let mut texts: Vec<&str> = Vec::new();
    for change in changes {
        if !change.put_keys.is_empty() {
            texts.push(sql.upsert(change.table));
        }
        if !change.delete_keys.is_empty() {
            texts.push(sql.delete(change.table));
        }
    }
    texts.push(&sql.raise_floor);
    if catalog_changed {
        texts.push(&sql.bump_epoch);
    }
    futures_util::future::join_all(
        texts
            .into_iter()
            .map(|text| connection.prepare_cached(text)),
    )
    .await
    .into_iter()
    .collect::<Result<Vec<_>, _>>()
    .map_err(|error| client_error(&error))
}

#[cfg(test)]
mod tests;
