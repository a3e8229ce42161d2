//! The PostgreSQL backend (`lethedb serve --postgres URL`): the same ordered tables, kept in a
//! PostgreSQL database that any number of LetheDB processes share.
//!
//! - **Snapshots** are `REPEATABLE READ, READ ONLY` transactions on a pooled connection; they
//!   never wait for writers.
//! - **Writes** run in a `READ COMMITTED` transaction that first takes the store-wide advisory
//!   lock (see `sql.rs`): the writers of every instance apply one group at a time, so
//!   each sees every earlier commit, as the single writer of one process does. The pending
//!   changes are sent at commit, pipelined, and acknowledged only once `COMMIT` succeeded.
//! - **Time**: each transaction reads the store's clock once, as it begins (after the lock, for
//!   writers), never below a floor that every commit raises. [`ReadTxn::store_now_ms`] hands it
//!   to the engine, which judges expiry by it, so every instance agrees on the instant.
//! - **The catalog epoch** counts commits that changed [`Table::Catalog`]; every transaction
//!   reads it with the clock ([`ReadTxn::catalog_epoch`]), so an instance can tell a cached
//!   definition from a current one without asking again.
//!
//! A failure to reach PostgreSQL is [`StorageError::Unavailable`]: nothing was done (or, when
//! the connection dropped during `COMMIT`, nothing was acknowledged). It never poisons the
//! store: the next transaction takes a fresh connection and reads everything again.

mod bridge;
mod sql;

use crate::api::{KeyRange, ReadTxn, Storage, StorageError, Table, Visit, WriteTxn};
use crate::overlay::{BaseEntry, Overlay};
use crate::write_txn::{Base, OverlayWrite};
use bridge::{client_error, pool_error, unavailable, Bridge, CONNECT_TIMEOUT, OPERATION_TIMEOUT};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use sql::{Sql, SCAN_PAGE_FIRST, SCAN_PAGE_MAX};
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, SimpleQueryMessage};

/// The schema LetheDB keeps its tables in unless told otherwise.
pub const POSTGRES_SCHEMA_DEFAULT: &str = "lethedb";
/// Connections one instance keeps at most: snapshots of concurrent requests and scans, and the
/// writer's.
const POOL_SIZE_MAX: usize = 32;
/// Rows one pipelined statement of a commit carries at most.
const COMMIT_ROWS_PER_STATEMENT: usize = 1_000;

/// A store kept in PostgreSQL.
pub struct PgStore {
    bridge: Bridge,
    sql: Arc<Sql>,
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
            bridge: Bridge::new(pool)?,
            sql: Arc::new(Sql::new(schema)),
            target,
        };
        let pool = store.bridge.pool.clone();
        let create = store.sql.create_schema.clone();
        store.bridge.run(async move {
            let connection = pool.get().await.map_err(|error| pool_error(&error))?;
            connection
                .batch_execute(&create)
                .await
                .map_err(|error| client_error(&error))
        })?;
        Ok(store)
    }

    /// Where the store is, for logs: hosts, ports and database, never the password.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// A pooled connection inside a transaction begun with `begin`, and the transaction's clock
    /// and catalog epoch.
    fn begin(&self, begin: &str) -> Result<Transaction<'_>, StorageError> {
        let pool = self.bridge.pool.clone();
        let begin = begin.to_string();
        let (connection, now_ms, epoch) = self.bridge.run(async move {
            let connection = Unsettled::new(pool.get().await.map_err(|error| pool_error(&error))?);
            // Failing or timing out here (a writer waiting on the lock) leaves the connection
            // inside a transaction: it is closed, never pooled.
            let messages = connection
                .get()
                .simple_query(&begin)
                .await
                .map_err(|error| client_error(&error))?;
            let (now_ms, epoch) = clock_row(&messages)?;
            Ok((connection.settle(), now_ms, epoch))
        })?;
        Ok(Transaction {
            store: self,
            connection: Some(connection),
            now_ms,
            epoch,
        })
    }
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

/// The clock and epoch from the last row a `begin` statement returned.
fn clock_row(messages: &[SimpleQueryMessage]) -> Result<(i64, u64), StorageError> {
    let row = messages
        .iter()
        .rev()
        .find_map(|message| match message {
            SimpleQueryMessage::Row(row) => Some(row),
            _ => None,
        })
        .ok_or_else(|| StorageError::Corrupted("the store's clock row is missing".into()))?;
    let number = |index: usize| -> Result<i64, StorageError> {
        row.try_get(index)
            .ok()
            .flatten()
            .and_then(|text| text.parse().ok())
            .ok_or_else(|| StorageError::Corrupted("the store's meta table is damaged".into()))
    };
    let epoch = u64::try_from(number(1)?)
        .map_err(|_| StorageError::Corrupted("the catalog epoch is negative".into()))?;
    Ok((number(0)?, epoch))
}

/// A connection inside an open transaction; dropping it without [`Transaction::finish`] rolls
/// the transaction back (in the background) before the connection returns to the pool.
struct Transaction<'a> {
    store: &'a PgStore,
    connection: Option<Arc<Object>>,
    now_ms: i64,
    epoch: u64,
}

impl Transaction<'_> {
    fn connection(&self) -> Result<Arc<Object>, StorageError> {
        self.connection
            .clone()
            .ok_or_else(|| unavailable("the transaction has ended"))
    }

    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        let connection = self.connection()?;
        let sql = Arc::clone(&self.store.sql);
        let key = key.to_vec();
        self.store.bridge.run(async move {
            let statement = connection
                .prepare_cached(sql.get(table))
                .await
                .map_err(|error| client_error(&error))?;
            let row = connection
                .query_opt(&statement, &[&key])
                .await
                .map_err(|error| client_error(&error))?;
            row.map(|row| row.try_get::<_, Vec<u8>>(0))
                .transpose()
                .map_err(|_| StorageError::Corrupted("a stored value is not bytes".into()))
        })
    }

    /// The committed entries of `range`, fetched a page at a time as the caller goes.
    fn pages(&self, table: Table, range: &KeyRange, reverse: bool) -> Pages<'_> {
        Pages {
            transaction: self,
            table,
            rest: range.clone(),
            reverse,
            page: VecDeque::new(),
            page_rows: SCAN_PAGE_FIRST,
            done: range.is_empty(),
        }
    }

    fn scan(
        &self,
        table: Table,
        range: &KeyRange,
        reverse: bool,
        visit: Visit<'_>,
    ) -> Result<(), StorageError> {
        for entry in self.pages(table, range, reverse) {
            let (key, value) = entry?;
            if visit(&key, &value).is_break() {
                break;
            }
        }
        Ok(())
    }

    /// Ends the transaction without a rollback (it was committed).
    fn finish(mut self) {
        self.connection = None;
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        let Some(connection) = self.connection.take() else {
            return;
        };
        self.store.bridge.detach(async move {
            // A connection that cannot roll back (in time) must not serve anyone else.
            let connection = Unsettled(Some(connection));
            if connection.get().batch_execute("ROLLBACK").await.is_ok() {
                drop(connection.settle());
            }
        });
    }
}

/// A connection whose transaction state is not known to be clean: dropped, it is closed instead
/// of going back to the pool, so a connection left inside a transaction or waiting for a lock
/// (after an error, or a timeout that dropped the future) never serves another caller.
struct Unsettled(Option<Arc<Object>>);

impl Unsettled {
    fn new(object: Object) -> Unsettled {
        Unsettled(Some(Arc::new(object)))
    }

    fn get(&self) -> &Object {
        match &self.0 {
            Some(connection) => connection,
            // Only `settle` and `drop` take it, and both consume the guard.
            None => unreachable!("an unsettled connection is held until settled"),
        }
    }

    /// The connection, now known to be in the expected state.
    fn settle(mut self) -> Arc<Object> {
        match self.0.take() {
            Some(connection) => connection,
            None => unreachable!("an unsettled connection is held until settled"),
        }
    }
}

impl Drop for Unsettled {
    fn drop(&mut self) {
        if let Some(connection) = self.0.take() {
            if let Ok(object) = Arc::try_unwrap(connection) {
                drop(Object::take(object));
            }
        }
    }
}

/// A scan's committed entries, a page per round trip.
struct Pages<'a> {
    transaction: &'a Transaction<'a>,
    table: Table,
    /// What is left of the range after the pages fetched so far.
    rest: KeyRange,
    reverse: bool,
    page: VecDeque<(Vec<u8>, Vec<u8>)>,
    page_rows: i64,
    done: bool,
}

impl Pages<'_> {
    fn fetch(&mut self) -> Result<(), StorageError> {
        let connection = self.transaction.connection()?;
        let (text, bounds) =
            self.transaction
                .store
                .sql
                .scan_page(self.table, &self.rest, self.reverse);
        let limit = self.page_rows;
        let rows = self.transaction.store.bridge.run(async move {
            let statement = connection
                .prepare_cached(&text)
                .await
                .map_err(|error| client_error(&error))?;
            let mut parameters: Vec<&(dyn ToSql + Sync)> =
                bounds.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
            parameters.push(&limit);
            let rows = connection
                .query(&statement, &parameters)
                .await
                .map_err(|error| client_error(&error))?;
            rows.iter()
                .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
                .collect::<Result<Vec<(Vec<u8>, Vec<u8>)>, tokio_postgres::Error>>()
                .map_err(|_| StorageError::Corrupted("a stored key or value is not bytes".into()))
        })?;
        if (rows.len() as i64) < limit {
            self.done = true;
        } else if let Some((last, _)) = rows.last() {
            // The next page starts after the last key seen.
            if self.reverse {
                self.rest.end = Bound::Excluded(last.clone());
            } else {
                self.rest.start = Bound::Excluded(last.clone());
            }
            self.page_rows = (self.page_rows * 2).min(SCAN_PAGE_MAX);
        }
        self.page.extend(rows);
        Ok(())
    }
}

impl Iterator for Pages<'_> {
    type Item = BaseEntry<Vec<u8>, Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.page.is_empty() && !self.done {
            if let Err(error) = self.fetch() {
                self.done = true;
                return Some(Err(error));
            }
        }
        self.page.pop_front().map(Ok)
    }
}

impl Storage for PgStore {
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StorageError> {
        Ok(Box::new(PgRead {
            transaction: self.begin(&self.sql.begin_read)?,
        }))
    }

    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        Ok(Box::new(OverlayWrite::new(PgBase {
            transaction: self.begin(&self.sql.begin_write)?,
        })))
    }

    fn is_shared(&self) -> bool {
        true
    }

    fn kind(&self) -> &'static str {
        "postgresql"
    }
}

/// A snapshot.
struct PgRead<'a> {
    transaction: Transaction<'a>,
}

impl ReadTxn for PgRead<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.transaction.get(table, key)
    }

    fn scan(&self, table: Table, range: &KeyRange, visit: Visit<'_>) -> Result<(), StorageError> {
        self.transaction.scan(table, range, false, visit)
    }

    fn scan_rev(
        &self,
        table: Table,
        range: &KeyRange,
        visit: Visit<'_>,
    ) -> Result<(), StorageError> {
        self.transaction.scan(table, range, true, visit)
    }

    fn store_now_ms(&self) -> Option<i64> {
        Some(self.transaction.now_ms)
    }

    fn catalog_epoch(&self) -> Option<u64> {
        Some(self.transaction.epoch)
    }
}

/// The committed side of a write transaction: what other commits left, read under the lock.
struct PgBase<'a> {
    transaction: Transaction<'a>,
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
            apply(&connection, &sql, &changes, now_ms, catalog_changed).await?;
            connection
                .batch_execute("COMMIT")
                .await
                .map_err(|error| client_error(&error))
        })?;
        transaction.finish();
        Ok(())
    }
}

/// Sends every change of a commit, pipelined on one connection, and the meta updates; fails if
/// any statement failed (the transaction is then rolled back, never committed).
async fn apply(
    connection: &Object,
    sql: &Sql,
    changes: &[TableChanges],
    now_ms: i64,
    catalog_changed: bool,
) -> Result<(), StorageError> {
    type Pending<'a> = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<u64, tokio_postgres::Error>> + Send + 'a>,
    >;
    let mut statements: Vec<Pending<'_>> = Vec::new();
    for change in changes {
        for (keys, values) in change
            .put_keys
            .chunks(COMMIT_ROWS_PER_STATEMENT)
            .zip(change.put_values.chunks(COMMIT_ROWS_PER_STATEMENT))
        {
            let text = sql.upsert(change.table);
            statements.push(Box::pin(async move {
                let statement = connection.prepare_cached(text).await?;
                connection.execute(&statement, &[&keys, &values]).await
            }));
        }
        for keys in change.delete_keys.chunks(COMMIT_ROWS_PER_STATEMENT) {
            let text = sql.delete(change.table);
            statements.push(Box::pin(async move {
                let statement = connection.prepare_cached(text).await?;
                connection.execute(&statement, &[&keys]).await
            }));
        }
    }
    statements.push(Box::pin(async move {
        let statement = connection.prepare_cached(&sql.raise_floor).await?;
        connection.execute(&statement, &[&now_ms]).await
    }));
    if catalog_changed {
        statements.push(Box::pin(async move {
            connection.execute(sql.bump_epoch.as_str(), &[]).await
        }));
    }
    for outcome in futures_util::future::join_all(statements).await {
        outcome.map_err(|error| client_error(&error))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
