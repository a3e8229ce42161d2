//! The tables of a PostgreSQL store, created where missing and brought to the current layout
//! as a store opens, under a lock so that instances starting together do not race.
//!
//! - **Layout 3** (this version): the catalog is `(k bytea PRIMARY KEY, v bytea)`; every other
//!   table is `(dk int8, k bytea, v bytea, PRIMARY KEY (k, dk))`, `dk` being the key's bucket
//!   ([`Distribution`]). The key leads the primary key, so every scan is still one B-tree range
//!   scan in key order; the bucket in it is what a distributed or partitioned table needs in
//!   every unique constraint. `floors (dk int8 PRIMARY KEY, ms int8)` holds each bucket's clock
//!   floor, raised by every commit that writes the bucket (`sql.rs`). With
//!   [`PgOptions::partitions`], the per-bucket tables are created `PARTITION BY HASH (dk)`, and a
//!   statement that names its bucket reads one partition.
//! - **Layout 2**: the same without `floors` (commits raised one floor row per process in
//!   `meta`, which stays a floor). Opening one creates the table.
//! - **Layout 1** (stores written before): the per-item tables without `dk`. Opening one copies
//!   each table into the new layout, computing every row's bucket, in the same transaction.
//!
//! It does not run the store's statements; `sql.rs` holds those.

use super::bridge::client_error;
use super::sql::{lock_key, Sql, TABLE_NAMES};
use crate::api::{StorageError, Table};
use crate::distribution::{Distribution, OneBucket};
use deadpool_postgres::Object;
use std::sync::Arc;

/// The layout this version writes.
const LAYOUT: i64 = 3;
/// Rows copied per statement when a store of layout 1 is brought to layout 2.
const COPY_ROWS: i64 = 1_000;

/// How a store's tables are laid out.
#[derive(Clone)]
pub struct PgOptions {
    /// Where each key lies: the engine's function for a LetheDB server.
    pub distribution: Arc<dyn Distribution>,
    /// When not 0, the per-item tables of a store created now are hash-partitioned by bucket
    /// into this many partitions (a store created earlier keeps its layout).
    pub partitions: u16,
}

impl PgOptions {
    /// Unpartitioned tables, keys placed by `distribution`.
    pub fn new(distribution: Arc<dyn Distribution>) -> PgOptions {
        PgOptions {
            distribution,
            partitions: 0,
        }
    }
}

impl Default for PgOptions {
    /// Every key in one bucket: only for stores that no engine opens.
    fn default() -> PgOptions {
        PgOptions::new(Arc::new(OneBucket))
    }
}

/// Creates the schema and its tables where missing, and brings a store of an earlier layout
/// to this one, in one transaction under the schema's lock.
pub(super) async fn prepare(
    connection: &Object,
    sql: &Sql,
    schema: &str,
    options: &PgOptions,
) -> Result<(), StorageError> {
    let s = &sql.schema;
    let schema_lock = lock_key(&format!("lethedb-schema:{schema}"));
    execute(
        connection,
        &format!(
            "BEGIN; SET LOCAL client_min_messages = warning; \
             SELECT pg_advisory_xact_lock({schema_lock}); CREATE SCHEMA IF NOT EXISTS {s}; \
             CREATE TABLE IF NOT EXISTS {s}.meta (name text PRIMARY KEY, value int8 NOT NULL)"
        ),
    )
    .await?;
    let version = meta_value(connection, s, "schema_version").await?;
    let distribution = options.distribution.version();
    match version {
        None => {
            create_tables(connection, s, options.partitions).await?;
            execute(
                connection,
                &format!(
                    "INSERT INTO {s}.meta (name, value) VALUES ('schema_version', {LAYOUT}), \
                     ('catalog_epoch', 0), ('clock_floor_ms', 0), ('distribution', {distribution})"
                ),
            )
            .await?;
        }
        Some(1) => upgrade(connection, s, options).await?,
        Some(2 | LAYOUT) => {
            let recorded = meta_value(connection, s, "distribution").await?;
            if recorded != Some(distribution) {
                return Err(StorageError::Io(format!(
                    "the PostgreSQL schema {schema} places its rows by distribution {}, this \
                     process by {distribution}: open it with the LetheDB version that wrote it",
                    recorded.unwrap_or(-1)
                )));
            }
            create_tables(connection, s, options.partitions).await?;
            execute(
                connection,
                &format!("UPDATE {s}.meta SET value = {LAYOUT} WHERE name = 'schema_version'"),
            )
            .await?;
        }
        Some(other) => {
            return Err(StorageError::Io(format!(
                "the PostgreSQL schema {schema} has layout {other}, newer than this LetheDB's \
                 ({LAYOUT}): upgrade LetheDB, or export and import the data"
            )))
        }
    }
    execute(connection, "COMMIT").await
}

/// The statements that create every table where missing.
fn create_tables_text(s: &str, partitions: u16) -> String {
    let mut text = String::new();
    for table in Table::ALL {
        let name = TABLE_NAMES[table as usize];
        if !table.is_distributed() {
            text.push_str(&format!(
                "CREATE TABLE IF NOT EXISTS {s}.{name} (k bytea PRIMARY KEY, v bytea NOT NULL); "
            ));
            continue;
        }
        let columns = "dk int8 NOT NULL, k bytea NOT NULL, v bytea NOT NULL, PRIMARY KEY (k, dk)";
        text.push_str(&bucket_table_text(s, name, columns, partitions));
    }
    let floors = "dk int8 PRIMARY KEY, ms int8 NOT NULL";
    text.push_str(&bucket_table_text(s, "floors", floors, partitions));
    // A snapshot's clock is the highest floor of all: an index makes that one short descent
    // however many buckets the store has, at the cost of an index entry per floor raised.
    text.push_str(&format!(
        "CREATE INDEX IF NOT EXISTS floors_ms ON {s}.floors (ms); "
    ));
    text
}

/// The statements that create one table of rows placed by bucket, in `partitions` partitions
/// by the bucket's hash (none: not partitioned).
fn bucket_table_text(s: &str, name: &str, columns: &str, partitions: u16) -> String {
    let partitioned = if partitions > 0 {
        " PARTITION BY HASH (dk)"
    } else {
        ""
    };
    let mut text = format!("CREATE TABLE IF NOT EXISTS {s}.{name} ({columns}){partitioned}; ");
    for remainder in 0..partitions {
        text.push_str(&format!(
            "CREATE TABLE IF NOT EXISTS {s}.{name}_p{remainder} PARTITION OF {s}.{name} \
             FOR VALUES WITH (MODULUS {partitions}, REMAINDER {remainder}); "
        ));
    }
    text
}

async fn create_tables(connection: &Object, s: &str, partitions: u16) -> Result<(), StorageError> {
    execute(connection, &create_tables_text(s, partitions)).await
}

/// Brings a store of layout 1 to this one: each per-item table is renamed, created anew and
/// filled with the old rows and their buckets, then the old one dropped.
async fn upgrade(connection: &Object, s: &str, options: &PgOptions) -> Result<(), StorageError> {
    let mut renamed = Vec::new();
    for table in Table::ALL
        .into_iter()
        .filter(|table| table.is_distributed())
    {
        let name = TABLE_NAMES[table as usize];
        let exists = connection
            .query_one(
                "SELECT to_regclass($1) IS NOT NULL",
                &[&format!("{s}.{name}")],
            )
            .await
            .map_err(|error| client_error(&error))?;
        if exists.get::<_, bool>(0) {
            execute(
                connection,
                &format!("ALTER TABLE {s}.{name} RENAME TO {name}_layout1"),
            )
            .await?;
            renamed.push(table);
        }
    }
    create_tables(connection, s, options.partitions).await?;
    for table in renamed {
        copy_rows(connection, s, table, options.distribution.as_ref()).await?;
        let name = TABLE_NAMES[table as usize];
        execute(connection, &format!("DROP TABLE {s}.{name}_layout1")).await?;
    }
    let distribution = options.distribution.version();
    execute(
        connection,
        &format!(
            "UPDATE {s}.meta SET value = {LAYOUT} WHERE name = 'schema_version'; \
             INSERT INTO {s}.meta (name, value) VALUES ('distribution', {distribution})"
        ),
    )
    .await
}

/// Copies one table's rows of layout 1 into its new table, a page at a time in key order.
async fn copy_rows(
    connection: &Object,
    s: &str,
    table: Table,
    distribution: &dyn Distribution,
) -> Result<(), StorageError> {
    let name = TABLE_NAMES[table as usize];
    let read = format!("SELECT k, v FROM {s}.{name}_layout1 WHERE k > $1 ORDER BY k LIMIT $2");
    let write = format!(
        "INSERT INTO {s}.{name} (dk, k, v) SELECT * FROM unnest($1::int8[], $2::bytea[], $3::bytea[])"
    );
    // The empty key sorts first, and no key is empty, so `k > ''` starts at the first row.
    let mut after: Vec<u8> = Vec::new();
    loop {
        let rows = connection
            .query(&read, &[&after, &COPY_ROWS])
            .await
            .map_err(|error| client_error(&error))?;
        let keys: Vec<Vec<u8>> = rows.iter().map(|row| row.get(0)).collect();
        let values: Vec<Vec<u8>> = rows.iter().map(|row| row.get(1)).collect();
        let buckets: Vec<i64> = keys
            .iter()
            .map(|key| distribution.bucket(table, key))
            .collect();
        connection
            .execute(&write, &[&buckets, &keys, &values])
            .await
            .map_err(|error| client_error(&error))?;
        match keys.last() {
            Some(last) if rows.len() as i64 == COPY_ROWS => after = last.clone(),
            _ => return Ok(()),
        }
    }
}

async fn meta_value(connection: &Object, s: &str, name: &str) -> Result<Option<i64>, StorageError> {
    let row = connection
        .query_opt(
            &format!("SELECT value FROM {s}.meta WHERE name = $1"),
            &[&name],
        )
        .await
        .map_err(|error| client_error(&error))?;
    Ok(row.map(|row| row.get(0)))
}

async fn execute(connection: &Object, text: &str) -> Result<(), StorageError> {
    connection
        .batch_execute(text)
        .await
        .map_err(|error| client_error(&error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitioned_tables_have_their_partitions_and_the_catalog_stays_whole() {
        let text = create_tables_text("\"s\"", 4);
        assert!(
            text.contains("\"s\".catalog (k bytea PRIMARY KEY"),
            "{text}"
        );
        assert!(text.contains(
            "\"s\".items (dk int8 NOT NULL, k bytea NOT NULL, v bytea NOT NULL, \
             PRIMARY KEY (k, dk)) PARTITION BY HASH (dk)"
        ));
        assert!(text.contains(
            "\"s\".items_p3 PARTITION OF \"s\".items FOR VALUES WITH (MODULUS 4, REMAINDER 3)"
        ));
        assert!(!text.contains("items_p4"));
        assert!(!text.contains("catalog_p0"));
        let plain = create_tables_text("\"s\"", 0);
        assert!(!plain.contains("PARTITION"), "{plain}");
    }
}
