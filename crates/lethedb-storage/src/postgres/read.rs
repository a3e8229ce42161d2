//! Snapshots of the PostgreSQL store (`REPEATABLE READ, READ ONLY` transactions), and the
//! look a point read takes instead of a snapshot ([`crate::Storage::look`]): one statement,
//! outside any transaction, that returns the clock, the catalog epoch and the values of a few
//! keys (the item, its counters, its container's records), so a point read waits on the
//! network once and PostgreSQL runs one statement for it.
//!
//! It does not decide what a read means: the engine asks for keys and the clock; this only
//! chooses how many round trips and statements they take.

use super::bridge::{client_error, pool_error};
use super::transaction::{Backend, Transaction, Unsettled};
use crate::api::{sorted_set, KeyRange, Look, LookFuture, ReadTxn, StorageError, Table, Visit};
use std::future::Future;
use tokio_postgres::types::ToSql;

/// A snapshot.
pub(super) struct PgRead<'a> {
    pub(super) transaction: Transaction<'a>,
}

impl Backend {
    /// One statement, outside any transaction (so it is its own snapshot): the clock, the
    /// epoch and the value of each key. One round trip once the connection has prepared it.
    pub(super) fn look(&self, keys: &[(Table, &[u8])]) -> Result<Look, StorageError> {
        self.bridge.run(self.look_work(keys))
    }

    /// [`Backend::look`] as a future for a caller on an asynchronous runtime.
    pub(super) fn look_async(&self, keys: &[(Table, &[u8])]) -> LookFuture {
        Box::pin(self.bridge.start(self.look_work(keys)))
    }

    /// The look's work, to run on the store's runtime.
    fn look_work(
        &self,
        keys: &[(Table, &[u8])],
    ) -> impl Future<Output = Result<Look, StorageError>> + Send + 'static {
        let pool = self.bridge.pool.clone();
        let tables: Vec<Table> = keys.iter().map(|(table, _)| *table).collect();
        let text = self.sql.look(&tables);
        let arguments: Vec<(Vec<u8>, Option<i64>)> = keys
            .iter()
            .map(|(table, key)| (key.to_vec(), self.bucket(*table, key)))
            .collect();
        let buckets: Vec<i64> = arguments.iter().filter_map(|(_, bucket)| *bucket).collect();
        self.statements.count(sorted_set(&buckets).len());
        async move {
            let connection = Unsettled::new(pool.get().await.map_err(|error| pool_error(&error))?);
            let look = look_row(connection.get(), &text, &arguments).await?;
            // A statement outside a transaction leaves the connection as it found it.
            drop(connection.settle());
            Ok(look)
        }
    }
}

/// Runs the look's statement and reads its row.
async fn look_row(
    connection: &deadpool_postgres::Object,
    text: &str,
    arguments: &[(Vec<u8>, Option<i64>)],
) -> Result<Look, StorageError> {
    let statement = connection
        .prepare_cached(text)
        .await
        .map_err(|error| client_error(&error))?;
    // A key of a distributed table is followed by its bucket (`Sql::look`).
    let mut parameters: Vec<&(dyn ToSql + Sync)> = Vec::new();
    for (key, bucket) in arguments {
        parameters.push(key);
        if let Some(bucket) = bucket {
            parameters.push(bucket);
        }
    }
    let row = connection
        .query_one(&statement, &parameters)
        .await
        .map_err(|error| client_error(&error))?;
    let number = |index: usize| -> Result<i64, StorageError> {
        row.try_get::<_, Option<i64>>(index)
            .ok()
            .flatten()
            .ok_or_else(|| StorageError::Corrupted("the store's meta table is damaged".into()))
    };
    let epoch = u64::try_from(number(1)?)
        .map_err(|_| StorageError::Corrupted("the catalog epoch is negative".into()))?;
    let values = (0..arguments.len())
        .map(|position| row.try_get::<_, Option<Vec<u8>>>(position + 2))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| StorageError::Corrupted("a stored value is not bytes".into()))?;
    Ok(Look {
        values,
        now_ms: Some(number(0)?),
        epoch: Some(epoch),
    })
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
