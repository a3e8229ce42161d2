//! A write transaction's commit on PostgreSQL: its pending changes as statements, sent
//! pipelined with the clock floors, the catalog epoch and `COMMIT` (one round trip).
//!
//! Each statement on a distributed table names its rows' bucket when they share one, so a
//! transaction of one logical partition sends only statements a distributed database can route
//! to one node; rows of several buckets go in one statement that lists each row's bucket.
//! It does not decide what is written (the overlay holds that) nor when to commit.

use super::bridge::client_error;
use super::sql::Sql;
use super::transaction::{Backend, RowBuckets};
use crate::api::{sorted_set, StorageError, Table};
use crate::overlay::Overlay;
use deadpool_postgres::Object;
use tokio_postgres::types::ToSql;

/// Rows one pipelined statement of a commit carries at most.
const COMMIT_ROWS_PER_STATEMENT: usize = 1_000;

/// One statement of a commit: an upsert (with values) or a delete of some keys of a table.
pub(super) struct Write {
    table: Table,
    buckets: RowBuckets,
    keys: Vec<Vec<u8>>,
    /// The values of an upsert; `None` for a delete.
    values: Option<Vec<Vec<u8>>>,
}

impl Write {
    fn text<'a>(&self, sql: &'a Sql) -> &'a str {
        match (&self.buckets, self.values.is_some()) {
            (RowBuckets::Each(_), true) => sql.upsert_across(self.table),
            (RowBuckets::Each(_), false) => sql.delete_across(self.table),
            (_, true) => sql.upsert(self.table),
            (_, false) => sql.delete(self.table),
        }
    }

    /// The statement's parameters, in the order its text numbers them.
    fn parameters(&self) -> Vec<&(dyn ToSql + Sync)> {
        let mut parameters: Vec<&(dyn ToSql + Sync)> = Vec::new();
        match &self.buckets {
            RowBuckets::None => {}
            RowBuckets::One(bucket) => parameters.push(bucket),
            RowBuckets::Each(buckets) => parameters.push(buckets),
        }
        parameters.push(&self.keys);
        if let Some(values) = &self.values {
            parameters.push(values);
        }
        parameters
    }
}

/// The statements of an overlay's changes, and whether the catalog changed.
pub(super) fn writes_of(backend: &Backend, overlay: Overlay) -> (Vec<Write>, bool) {
    let mut catalog_changed = false;
    let mut writes = Vec::new();
    for (table, pending) in overlay.into_tables() {
        if pending.is_empty() {
            continue;
        }
        catalog_changed |= table == Table::Catalog;
        let (mut put_keys, mut put_values, mut delete_keys) = (Vec::new(), Vec::new(), Vec::new());
        for (key, change) in pending {
            match change {
                Some(value) => {
                    put_keys.push(key);
                    put_values.push(Vec::from(value));
                }
                None => delete_keys.push(key),
            }
        }
        writes.extend(chunks(backend, table, put_keys, Some(put_values)));
        writes.extend(chunks(backend, table, delete_keys, None));
    }
    let mut buckets = writes.iter().flat_map(|write| match &write.buckets {
        RowBuckets::None => Vec::new(),
        RowBuckets::One(bucket) => vec![*bucket],
        RowBuckets::Each(each) => each.clone(),
    });
    if let Some(first) = buckets.next() {
        if buckets.any(|bucket| bucket != first) {
            backend
                .statements
                .commits_across
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    (writes, catalog_changed)
}

/// One table's upserts (or deletes) as statements of at most [`COMMIT_ROWS_PER_STATEMENT`]
/// rows, each naming its bucket when its rows share one.
fn chunks(
    backend: &Backend,
    table: Table,
    keys: Vec<Vec<u8>>,
    values: Option<Vec<Vec<u8>>>,
) -> Vec<Write> {
    let mut writes = Vec::new();
    let mut values = values.map(Vec::into_iter);
    let mut keys = keys.into_iter().peekable();
    while keys.peek().is_some() {
        let chunk: Vec<Vec<u8>> = keys.by_ref().take(COMMIT_ROWS_PER_STATEMENT).collect();
        let chunk_values = values
            .as_mut()
            .map(|values| values.by_ref().take(chunk.len()).collect());
        let buckets = backend.row_buckets(table, &chunk);
        writes.push(Write {
            table,
            buckets,
            keys: chunk,
            values: chunk_values,
        });
    }
    writes
}

/// Sends every change of a commit, the meta updates and `COMMIT`, pipelined on one connection
/// (one round trip); fails if any statement failed. A statement that failed aborts the
/// transaction, and PostgreSQL answers the `COMMIT` of an aborted transaction by rolling it
/// back, so nothing of a failed commit stays, though its `COMMIT` reports no error.
pub(super) async fn apply_and_commit(
    connection: &Object,
    sql: &Sql,
    writes: &[Write],
    now_ms: i64,
    catalog_changed: bool,
) -> Result<(), StorageError> {
    type Pending<'a> = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<u64, tokio_postgres::Error>> + Send + 'a>,
    >;
    // Every statement is prepared first (from the connection's cache after its first commit):
    // an execution whose statement were still being prepared would go out after `COMMIT`.
    let mut texts: Vec<&str> = writes.iter().map(|write| write.text(sql)).collect();
    // The floor of each bucket written; the process's own, in `meta`, only where no bucket
    // is, or the catalog changed, so that a commit of some buckets writes no store-wide row.
    let buckets = written_buckets(writes);
    let floors = match buckets.len() {
        0 => None,
        1 => Some(&sql.raise_bucket_floor),
        _ => Some(&sql.raise_bucket_floors),
    };
    texts.extend(floors.map(String::as_str));
    let raise_process_floor = buckets.is_empty() || catalog_changed;
    if raise_process_floor {
        texts.push(&sql.raise_floor);
    }
    if catalog_changed {
        texts.push(&sql.bump_epoch);
    }
    let prepared = futures_util::future::join_all(
        texts
            .into_iter()
            .map(|text| connection.prepare_cached(text)),
    )
    .await
    .into_iter()
    .collect::<Result<Vec<_>, _>>()
    .map_err(|error| client_error(&error))?;
    let mut statements: Vec<Pending<'_>> = Vec::new();
    for (write, statement) in writes.iter().zip(&prepared) {
        statements.push(Box::pin(async move {
            connection.execute(statement, &write.parameters()).await
        }));
    }
    let mut rest = prepared[writes.len()..].iter();
    let first_bucket = buckets.first().copied().unwrap_or_default();
    if let Some(floor) = floors.and_then(|_| rest.next()) {
        let buckets = &buckets;
        statements.push(Box::pin(async move {
            if buckets.len() == 1 {
                connection.execute(floor, &[&first_bucket, &now_ms]).await
            } else {
                connection.execute(floor, &[buckets, &now_ms]).await
            }
        }));
    }
    if let Some(floor) = rest.next().filter(|_| raise_process_floor) {
        // (When the process floor is not raised, the catalog did not change: nothing follows.)
        statements.push(Box::pin(async move {
            connection.execute(floor, &[&now_ms]).await
        }));
    }
    if let Some(epoch) = rest.next() {
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

/// The buckets a commit's statements write, ascending, each once.
fn written_buckets(writes: &[Write]) -> Vec<i64> {
    let mut buckets = Vec::new();
    for write in writes {
        match &write.buckets {
            RowBuckets::None => {}
            RowBuckets::One(bucket) => buckets.push(*bucket),
            RowBuckets::Each(each) => buckets.extend_from_slice(each),
        }
    }
    sorted_set(&buckets)
}
