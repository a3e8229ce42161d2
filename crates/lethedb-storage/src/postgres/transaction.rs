//! An open PostgreSQL transaction on a pooled connection, as snapshots and write transactions
//! use it: point reads, scans a page per round trip, and the guard that closes a connection
//! whose transaction state is unknown instead of pooling it.
//!
//! It does not begin or commit anything itself: `mod.rs` begins (reading the clock and epoch)
//! and commits; dropping an unfinished transaction rolls it back in the background.

use super::bridge::pool_error;
use super::bridge::Bridge;
use super::bridge::{client_error, unavailable};
use super::sql::Sql;
use super::sql::{SCAN_PAGE_FIRST, SCAN_PAGE_MAX};
use crate::api::{KeyRange, StorageError, Table, Visit};
use crate::distribution::Distribution;
use crate::overlay::BaseEntry;
use deadpool_postgres::Object;
use std::collections::{HashMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio_postgres::types::ToSql;
use tokio_postgres::SimpleQueryMessage;

/// A connection inside an open transaction; dropping it without [`Transaction::finish`] rolls
/// the transaction back (in the background) before the connection returns to the pool.
/// What every transaction of a store uses: its runtime and pool, and its statements.
/// Keys and their committed values (`None`: no such key), as [`Backend::begin_fetching`] fetched.
pub(super) type Fetched = Vec<((Table, Vec<u8>), Option<Vec<u8>>)>;

pub(super) struct Backend {
    pub(super) bridge: Bridge,
    pub(super) sql: Arc<Sql>,
    /// Where each key lies (its `dk`).
    pub(super) distribution: Arc<dyn Distribution>,
    /// Statements sent that read or wrote rows of distributed tables, by how many buckets.
    pub(super) statements: Arc<BucketStatements>,
}

/// How many statements on distributed tables named one bucket and how many spanned several
/// (the router-ready property, counted for tests).
#[derive(Default)]
pub(super) struct BucketStatements {
    pub(super) one: AtomicU64,
    pub(super) several: AtomicU64,
    /// Commits whose writes, all statements together, spanned several buckets.
    pub(super) commits_across: AtomicU64,
}

impl BucketStatements {
    /// Counts one statement that touched `buckets` distinct buckets (0: none distributed).
    pub(super) fn count(&self, buckets: usize) {
        let counter = match buckets {
            0 => return,
            1 => &self.one,
            _ => &self.several,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl Backend {
    /// A pooled connection inside a transaction begun with `begin`, and the transaction's clock
    /// and catalog epoch.
    pub(super) fn begin(&self, begin: &str) -> Result<Transaction<'_>, StorageError> {
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

    /// Like [`Backend::begin`], fetching the committed values of `keys` inside the new
    /// transaction in the same round trip: the start goes out first (so the fetch runs after
    /// the lock a write transaction takes), the fetch right behind it. Also the shards the
    /// start's `acquired` row names, when it has one (`Sql::begin_write_free_shards`).
    pub(super) fn begin_fetching(
        &self,
        begin: &str,
        keys: &[(Table, &[u8])],
    ) -> Result<(Transaction<'_>, Fetched, Option<Vec<u64>>), StorageError> {
        let pool = self.bridge.pool.clone();
        let begin = begin.to_string();
        let sql = Arc::clone(&self.sql);
        let by_table = self.by_bucket(keys);
        let (connection, now_ms, epoch, fetched, acquired) = self.bridge.run(async move {
            let connection = Unsettled::new(pool.get().await.map_err(|error| pool_error(&error))?);
            let object = connection.get();
            let (begun, fetched) = futures_util::future::join(
                object.simple_query(&begin),
                fetch_all(object, &sql, &by_table),
            )
            .await;
            let messages = begun.map_err(|error| client_error(&error))?;
            let (now_ms, epoch) = clock_row(&messages)?;
            let acquired = acquired_row(&messages)?;
            Ok((connection.settle(), now_ms, epoch, fetched?, acquired))
        })?;
        let transaction = Transaction {
            store: self,
            connection: Some(connection),
            now_ms,
            epoch,
        };
        Ok((transaction, fetched, acquired))
    }

    /// Runs `text` inside an open transaction and takes the clock and epoch from its last row
    /// (a transaction that waited for locks after it began reads the clock again).
    pub(super) fn continue_with(
        &self,
        transaction: &mut Transaction<'_>,
        text: &str,
    ) -> Result<(), StorageError> {
        let connection = transaction.connection()?;
        let text = text.to_string();
        let (now_ms, epoch) = self.bridge.run(async move {
            let messages = connection
                .simple_query(&text)
                .await
                .map_err(|error| client_error(&error))?;
            clock_row(&messages)
        })?;
        transaction.now_ms = now_ms;
        transaction.epoch = epoch;
        Ok(())
    }
}

/// Where the rows of one statement lie.
pub(super) enum RowBuckets {
    /// The catalog's: no bucket.
    None,
    /// Every row in this bucket.
    One(i64),
    /// Rows of several buckets: each row's, in the order of the keys.
    Each(Vec<i64>),
}

/// Keys of one table, in one statement.
pub(super) type BucketKeys = (Table, RowBuckets, Vec<Vec<u8>>);

impl Backend {
    /// The bucket of a key of `table`, `None` for the catalog's.
    pub(super) fn bucket(&self, table: Table, key: &[u8]) -> Option<i64> {
        table
            .is_distributed()
            .then(|| self.distribution.bucket(table, key))
    }

    /// Where the rows of `keys` of `table` lie, counted as one statement.
    pub(super) fn row_buckets(&self, table: Table, keys: &[Vec<u8>]) -> RowBuckets {
        if !table.is_distributed() {
            return RowBuckets::None;
        }
        // One pass that lists the buckets only once a second one turns up.
        let mut first = None;
        let mut each: Vec<i64> = Vec::new();
        for (position, key) in keys.iter().enumerate() {
            let bucket = self.distribution.bucket(table, key);
            match first {
                None => first = Some(bucket),
                Some(first) if each.is_empty() && bucket != first => {
                    each = vec![first; position];
                    each.push(bucket);
                }
                Some(_) if !each.is_empty() => each.push(bucket),
                Some(_) => {}
            }
        }
        match first {
            Some(first) if each.is_empty() => {
                self.statements.count(1);
                RowBuckets::One(first)
            }
            _ => {
                self.statements.count(2);
                RowBuckets::Each(each)
            }
        }
    }

    /// Keys grouped by table, in the order first seen: one statement each, which names its
    /// bucket when its keys share one.
    fn by_bucket(&self, keys: &[(Table, &[u8])]) -> Vec<BucketKeys> {
        let mut grouped: Vec<(Table, Vec<Vec<u8>>)> = Vec::new();
        for (table, key) in keys {
            match grouped.iter_mut().find(|(wanted, _)| wanted == table) {
                Some((_, keys)) => keys.push(key.to_vec()),
                None => grouped.push((*table, vec![key.to_vec()])),
            }
        }
        grouped
            .into_iter()
            .map(|(table, keys)| (table, self.row_buckets(table, &keys), keys))
            .collect()
    }
}

/// The values of the keys (`None` where a key has none), one statement per table, sent
/// together once prepared: one round trip.
async fn fetch_all(
    connection: &Object,
    sql: &Sql,
    by_table: &[BucketKeys],
) -> Result<Fetched, StorageError> {
    let statements = futures_util::future::join_all(by_table.iter().map(|(table, buckets, _)| {
        let text = match buckets {
            RowBuckets::Each(_) => sql.get_any_across(*table),
            _ => sql.get_any(*table),
        };
        connection.prepare_cached(text)
    }))
    .await;
    let fetches =
        statements
            .into_iter()
            .zip(by_table)
            .map(|(statement, (_, buckets, keys))| async move {
                let statement = statement?;
                match buckets {
                    RowBuckets::None => connection.query(&statement, &[keys]).await,
                    RowBuckets::One(bucket) => connection.query(&statement, &[bucket, keys]).await,
                    RowBuckets::Each(each) => connection.query(&statement, &[each, keys]).await,
                }
            });
    let answers = futures_util::future::join_all(fetches).await;
    let mut fetched = Vec::new();
    for (answer, (table, _, keys)) in answers.into_iter().zip(by_table) {
        let rows = answer.map_err(|error| client_error(&error))?;
        let mut found = HashMap::with_capacity(rows.len());
        for row in rows {
            let not_bytes =
                |_| StorageError::Corrupted("a stored key or value is not bytes".into());
            let key: Vec<u8> = row.try_get(0).map_err(not_bytes)?;
            let value: Vec<u8> = row.try_get(1).map_err(not_bytes)?;
            found.insert(key, value);
        }
        for key in keys {
            fetched.push(((*table, key.clone()), found.get(key).cloned()));
        }
    }
    Ok(fetched)
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

/// The shards named by a start's `acquired` row (`None`: it has no such row).
fn acquired_row(messages: &[SimpleQueryMessage]) -> Result<Option<Vec<u64>>, StorageError> {
    let Some(row) = messages.iter().find_map(|message| match message {
        SimpleQueryMessage::Row(row) if row.get(0) == Some("acquired") => Some(row),
        _ => None,
    }) else {
        return Ok(None);
    };
    let list = row.get(1).unwrap_or("");
    list.split(',')
        .filter(|shard| !shard.is_empty())
        .map(|shard| {
            shard
                .parse()
                .map_err(|_| StorageError::Corrupted("a shard lock answer is not a number".into()))
        })
        .collect::<Result<Vec<u64>, _>>()
        .map(Some)
}

pub(super) struct Transaction<'a> {
    pub(super) store: &'a Backend,
    pub(super) connection: Option<Arc<Object>>,
    pub(super) now_ms: i64,
    pub(super) epoch: u64,
}

impl Transaction<'_> {
    pub(super) fn connection(&self) -> Result<Arc<Object>, StorageError> {
        self.connection
            .clone()
            .ok_or_else(|| unavailable("the transaction has ended"))
    }

    pub(super) fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        let connection = self.connection()?;
        let sql = Arc::clone(&self.store.sql);
        let key = key.to_vec();
        let bucket = self.store.bucket(table, &key);
        self.store.statements.count(usize::from(bucket.is_some()));
        self.store.bridge.run(async move {
            let statement = connection
                .prepare_cached(sql.get(table))
                .await
                .map_err(|error| client_error(&error))?;
            let row = match &bucket {
                Some(bucket) => connection.query_opt(&statement, &[&key, bucket]).await,
                None => connection.query_opt(&statement, &[&key]).await,
            }
            .map_err(|error| client_error(&error))?;
            row.map(|row| row.try_get::<_, Vec<u8>>(0))
                .transpose()
                .map_err(|_| StorageError::Corrupted("a stored value is not bytes".into()))
        })
    }

    /// The committed entries of `range`, fetched a page at a time as the caller goes.
    pub(super) fn pages(&self, table: Table, range: &KeyRange, reverse: bool) -> Pages<'_> {
        let bucket = table
            .is_distributed()
            .then(|| self.store.distribution.range_bucket(table, range))
            .flatten();
        Pages {
            transaction: self,
            table,
            bucket,
            rest: range.clone(),
            reverse,
            page: VecDeque::new(),
            page_rows: SCAN_PAGE_FIRST,
            done: range.is_empty(),
        }
    }

    pub(super) fn scan(
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
    pub(super) fn finish(mut self) {
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
pub(super) struct Unsettled(Option<Arc<Object>>);

impl Unsettled {
    pub(super) fn new(object: Object) -> Unsettled {
        Unsettled(Some(Arc::new(object)))
    }

    pub(super) fn get(&self) -> &Object {
        match &self.0 {
            Some(connection) => connection,
            // Only `settle` and `drop` take it, and both consume the guard.
            None => unreachable!("an unsettled connection is held until settled"),
        }
    }

    /// The connection, now known to be in the expected state.
    pub(super) fn settle(mut self) -> Arc<Object> {
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
pub(super) struct Pages<'a> {
    transaction: &'a Transaction<'a>,
    table: Table,
    /// The one bucket the whole range lies in, if one does: every page names it.
    bucket: Option<i64>,
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
        // The bucket the statement names: none for a table without buckets.
        let bucket = self.bucket.filter(|_| self.table.is_distributed());
        let (text, bounds) =
            self.transaction
                .store
                .sql
                .scan_page(self.table, &self.rest, self.reverse, bucket);
        let limit = self.page_rows;
        self.transaction.store.statements.count(match bucket {
            Some(_) => 1,
            None if self.table.is_distributed() => 2,
            None => 0,
        });
        let rows = self.transaction.store.bridge.run(async move {
            let statement = connection
                .prepare_cached(&text)
                .await
                .map_err(|error| client_error(&error))?;
            let mut parameters: Vec<&(dyn ToSql + Sync)> =
                bounds.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
            if let Some(bucket) = &bucket {
                parameters.push(bucket);
            }
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
