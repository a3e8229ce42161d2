//! Snapshots of the PostgreSQL store, and the one-round-trip start of a point read: the
//! snapshot's `BEGIN` and one statement that returns the clock, the catalog epoch and the
//! values of a few keys (the item, its container's definition, its counters) are sent together,
//! so a point read waits on the network once.
//!
//! It does not decide what a read means: the engine asks for keys and the clock; this only
//! chooses how many round trips they take. Later reads of the same snapshot are ordinary
//! statements inside its `REPEATABLE READ` transaction.

use super::bridge::{client_error, pool_error};
use super::transaction::{Backend, Transaction, Unsettled};
use crate::api::{KeyRange, ReadTxn, StorageError, Table, Visit};
use tokio_postgres::types::ToSql;

/// A snapshot.
pub(super) struct PgRead<'a> {
    pub(super) transaction: Transaction<'a>,
}

/// The values of a snapshot's first keys, `None` where a key has none.
type Values = Vec<Option<Vec<u8>>>;

/// What a snapshot's first statement returned.
type FirstRead = (Unsettled, i64, u64, Values);

impl Backend {
    /// Begins a snapshot and reads `keys` in it, in one round trip: the start and one statement
    /// that returns the clock, the epoch and every value are written before either answer is
    /// awaited.
    pub(super) fn begin_read_with(
        &self,
        keys: &[(Table, &[u8])],
    ) -> Result<(PgRead<'_>, Values), StorageError> {
        let pool = self.bridge.pool.clone();
        let begin = self.sql.begin_snapshot.clone();
        let tables: Vec<Table> = keys.iter().map(|(table, _)| *table).collect();
        let text = self.sql.first_read(&tables);
        let arguments: Vec<Vec<u8>> = keys.iter().map(|(_, key)| key.to_vec()).collect();
        let (connection, now_ms, epoch, values) = self.bridge.run(async move {
            let connection = Unsettled::new(pool.get().await.map_err(|error| pool_error(&error))?);
            let (now_ms, epoch, values) =
                first_read(connection.get(), &begin, &text, &arguments).await?;
            Ok::<FirstRead, StorageError>((connection, now_ms, epoch, values))
        })?;
        let transaction = Transaction {
            store: self,
            connection: Some(connection.settle()),
            now_ms,
            epoch,
        };
        Ok((PgRead { transaction }, values))
    }
}

/// Sends the snapshot's start and its first statement together and reads the row back.
async fn first_read(
    connection: &deadpool_postgres::Object,
    begin: &str,
    text: &str,
    arguments: &[Vec<u8>],
) -> Result<(i64, u64, Values), StorageError> {
    // The start is polled first, so it goes out first and the statement runs inside the
    // snapshot it begins (a statement not yet prepared follows it a round trip later).
    let (begun, row) = futures_util::future::join(connection.batch_execute(begin), async {
        let statement = connection.prepare_cached(text).await?;
        let parameters: Vec<&(dyn ToSql + Sync)> = arguments
            .iter()
            .map(|argument| argument as &(dyn ToSql + Sync))
            .collect();
        connection.query_one(&statement, &parameters).await
    })
    .await;
    begun.map_err(|error| client_error(&error))?;
    let row = row.map_err(|error| client_error(&error))?;
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
    Ok((number(0)?, epoch, values))
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
