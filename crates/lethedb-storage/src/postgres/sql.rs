//! The SQL this backend sends, built once per store for its schema.
//!
//! Every [`Table`] is a PostgreSQL table of `(k bytea PRIMARY KEY, v bytea)`: `bytea` compares
//! bytewise (then by length), exactly the order the engine's keys are designed for, so every
//! range scan is a B-tree range scan. Values are the engine's bytes unchanged: an item's value
//! is a small header and the JSON exactly as the client sent it (member order, duplicate names,
//! `\u0000`), never re-encoded. `meta` holds the store-wide numbers: the catalog epoch and the
//! clock floor.

use crate::api::{KeyRange, Table};
use std::ops::Bound;

/// The names of the tables, indexed like [`Table::ALL`].
const TABLE_NAMES: [&str; 8] = [
    "catalog",
    "items",
    "expiry",
    "counters",
    "resource_ids",
    "change_index",
    "change_log",
    "index_entries",
];

/// Rows a scan fetches per round trip: small first, since most scans stop early (a page of a
/// feed, a check for a first entry), then larger.
pub(crate) const SCAN_PAGE_FIRST: i64 = 32;
pub(crate) const SCAN_PAGE_MAX: i64 = 512;

/// Statements that do not depend on arguments, built for one schema.
pub(crate) struct Sql {
    schema: String,
    pub(crate) begin_read: String,
    /// The clock and the catalog epoch as two columns (see `begin_read`).
    clock_columns: String,
    pub(crate) begin_write: String,
    /// The start of a transaction that writes only some shards: the store-wide lock shared;
    /// [`Sql::begin_write_shards`] adds the shards' own locks and the clock.
    begin_shared: String,
    /// The clock and epoch statement.
    clock: String,
    /// What each shard's lock key is derived from, with the shard's number after it.
    shard_lock_prefix: String,
    /// Deletes the floor rows below the highest (kept: the highest is the floor).
    pub(crate) prune_floors: String,
    pub(crate) create_schema: String,
    gets: Vec<String>,
    get_anys: Vec<String>,
    upserts: Vec<String>,
    deletes: Vec<String>,
    pub(crate) raise_floor: String,
    pub(crate) bump_epoch: String,
}

/// A 63-bit FNV-1a hash, for advisory lock keys derived from names.
fn lock_key(name: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash >> 1) as i64
}

/// The statements that create a store's schema and tables where missing (`s`: the schema's
/// quoted name), under a lock so that instances starting together do not race.
fn create_schema(schema: &str, s: &str) -> String {
    let schema_lock = lock_key(&format!("lethedb-schema:{schema}"));
    let mut create = format!(
        "BEGIN; SET LOCAL client_min_messages = warning; \
         SELECT pg_advisory_xact_lock({schema_lock}); CREATE SCHEMA IF NOT EXISTS {s}; \
         CREATE TABLE IF NOT EXISTS {s}.meta (name text PRIMARY KEY, value int8 NOT NULL); \
         INSERT INTO {s}.meta (name, value) VALUES ('schema_version', 1), \
         ('catalog_epoch', 0), ('clock_floor_ms', 0) ON CONFLICT (name) DO NOTHING; "
    );
    for table in Table::ALL {
        create.push_str(&format!(
            "CREATE TABLE IF NOT EXISTS {s}.{} (k bytea PRIMARY KEY, v bytea NOT NULL); ",
            TABLE_NAMES[table as usize]
        ));
    }
    create.push_str("COMMIT");
    create
}

/// Quotes an identifier for SQL.
fn quote(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

impl Sql {
    /// The statements of a store in `schema`, for the instance `instance` (a name no other
    /// open store shares: it names this instance's clock floor row).
    pub(crate) fn new(schema: &str, instance: &str) -> Sql {
        let s = quote(schema);
        let floor_name = format!("clock_floor_ms:{}", instance.replace('\'', ""));
        let name = |table: Table| format!("{s}.{}", TABLE_NAMES[table as usize]);
        // The store-wide advisory lock every write transaction holds: exclusively (writers on
        // every instance then apply one group at a time, as the single writer of one process
        // does), or shared, by a transaction that writes only its shards and holds their own
        // locks (`begin_write_shards`).
        let write_lock = lock_key(&format!("lethedb-write:{schema}"));
        // The store's clock, read once per transaction: PostgreSQL's, never below the floors
        // that commits raise (so time does not run back after a failover to a replica whose
        // clock is behind), with the catalog epoch beside it. Each instance raises a floor row
        // of its own (`clock_floor_ms:<instance>`), so commits of different instances never
        // wait for one row; the clock is the highest of them.
        let clock_columns = format!(
            "greatest((extract(epoch FROM clock_timestamp()) * 1000)::int8, \
             (SELECT max(value) FROM {s}.meta WHERE name LIKE 'clock\\_floor\\_ms%')), \
             (SELECT value FROM {s}.meta WHERE name = 'catalog_epoch')"
        );
        let clock = format!("SELECT {clock_columns}");
        Sql {
            schema: s.clone(),
            begin_read: format!("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY; {clock}"),
            clock_columns,
            begin_write: format!(
                "BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock({write_lock}); {clock}"
            ),
            begin_shared: format!(
                "BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock_shared({write_lock}); "
            ),
            clock,
            shard_lock_prefix: format!("lethedb-shard:{schema}:"),
            create_schema: create_schema(schema, &s),
            gets: Table::ALL
                .iter()
                .map(|&t| format!("SELECT v FROM {} WHERE k = $1", name(t)))
                .collect(),
            get_anys: Table::ALL
                .iter()
                .map(|&t| format!("SELECT k, v FROM {} WHERE k = ANY($1::bytea[])", name(t)))
                .collect(),
            upserts: Table::ALL
                .iter()
                .map(|&t| {
                    format!(
                        "INSERT INTO {} (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[]) \
                         ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
                        name(t)
                    )
                })
                .collect(),
            deletes: Table::ALL
                .iter()
                .map(|&t| format!("DELETE FROM {} WHERE k = ANY($1::bytea[])", name(t)))
                .collect(),
            raise_floor: format!(
                "INSERT INTO {s}.meta (name, value) VALUES ('{floor_name}', $1) \
                 ON CONFLICT (name) DO UPDATE SET value = greatest({s}.meta.value, EXCLUDED.value)"
            ),
            prune_floors: format!(
                "DELETE FROM {s}.meta WHERE name LIKE 'clock\\_floor\\_ms:%' AND value < \
                 (SELECT max(value) FROM {s}.meta WHERE name LIKE 'clock\\_floor\\_ms%')"
            ),
            bump_epoch: format!(
                "UPDATE {s}.meta SET value = value + 1 WHERE name = 'catalog_epoch'"
            ),
        }
    }

    /// The start of a write transaction that writes only what the shard locks `shards` cover:
    /// the store-wide lock shared (so catalog changes, which take it exclusively, wait), then
    /// each shard's lock in ascending order (so two transactions never wait on each other in a
    /// cycle), then the clock. Transactions of disjoint shards run side by side.
    pub(crate) fn begin_write_shards(&self, shards: &[u64]) -> String {
        let mut keys: Vec<i64> = shards
            .iter()
            .map(|shard| lock_key(&format!("{}{shard}", self.shard_lock_prefix)))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let mut text = self.begin_shared.clone();
        for key in keys {
            text.push_str(&format!("SELECT pg_advisory_xact_lock({key}); "));
        }
        text.push_str(&self.clock);
        text
    }

    /// A look ([`crate::Storage::look`]): the clock and epoch, then the value of one key per
    /// table in `tables` (`$1`, `$2`, ... in that order; NULL where there is none), in one row.
    pub(crate) fn look(&self, tables: &[Table]) -> String {
        let mut text = format!("SELECT {}", self.clock_columns);
        for (position, table) in tables.iter().enumerate() {
            text.push_str(&format!(
                ", (SELECT v FROM {}.{} WHERE k = ${})",
                self.schema,
                TABLE_NAMES[*table as usize],
                position + 1
            ));
        }
        text
    }

    pub(crate) fn get(&self, table: Table) -> &str {
        &self.gets[table as usize]
    }

    /// The rows of the keys in `$1` (an array), in no particular order.
    pub(crate) fn get_any(&self, table: Table) -> &str {
        &self.get_anys[table as usize]
    }

    pub(crate) fn upsert(&self, table: Table) -> &str {
        &self.upserts[table as usize]
    }

    pub(crate) fn delete(&self, table: Table) -> &str {
        &self.deletes[table as usize]
    }

    /// One page of a scan: the rows of `range` in order (descending when `reverse`), at most
    /// `$n` of them, the bounds bound as parameters in the order returned.
    pub(crate) fn scan_page(
        &self,
        table: Table,
        range: &KeyRange,
        reverse: bool,
    ) -> (String, Vec<Vec<u8>>) {
        let mut conditions = Vec::new();
        let mut parameters = Vec::new();
        let mut bound = |bound: &Bound<Vec<u8>>, inclusive: &str, exclusive: &str| match bound {
            Bound::Included(key) => {
                parameters.push(key.clone());
                conditions.push(format!("k {inclusive} ${}", parameters.len()));
            }
            Bound::Excluded(key) => {
                parameters.push(key.clone());
                conditions.push(format!("k {exclusive} ${}", parameters.len()));
            }
            Bound::Unbounded => {}
        };
        bound(&range.start, ">=", ">");
        bound(&range.end, "<=", "<");
        let filter = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conditions.join(" AND "))
        };
        let order = if reverse { "DESC" } else { "ASC" };
        let limit = parameters.len() + 1;
        (
            format!(
                "SELECT k, v FROM {}.{} {filter} ORDER BY k {order} LIMIT ${limit}",
                self.schema, TABLE_NAMES[table as usize]
            ),
            parameters,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_pages_bind_only_the_bounds_they_have() {
        let sql = Sql::new("lethedb", "test");
        let (text, parameters) = sql.scan_page(Table::Items, &KeyRange::prefix(b"ab"), false);
        assert_eq!(
            text,
            "SELECT k, v FROM \"lethedb\".items WHERE k >= $1 AND k < $2 ORDER BY k ASC LIMIT $3"
        );
        assert_eq!(parameters, vec![b"ab".to_vec(), b"ac".to_vec()]);
        let everything = KeyRange {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
        };
        let (text, parameters) = sql.scan_page(Table::Expiry, &everything, true);
        assert_eq!(
            text,
            "SELECT k, v FROM \"lethedb\".expiry  ORDER BY k DESC LIMIT $1"
        );
        assert!(parameters.is_empty());
    }

    #[test]
    fn names_are_quoted_and_locks_differ_per_schema() {
        assert_eq!(quote("we\"ird"), "\"we\"\"ird\"");
        assert_ne!(
            Sql::new("a", "i").begin_write,
            Sql::new("b", "i").begin_write
        );
        let shards = Sql::new("a", "i").begin_write_shards(&[7, 3, 7]);
        assert_eq!(
            shards.matches("pg_advisory_xact_lock(").count(),
            2,
            "{shards}"
        );
        assert!(shards.contains("pg_advisory_xact_lock_shared("), "{shards}");
        assert_ne!(shards, Sql::new("b", "i").begin_write_shards(&[7, 3]));
        assert!(lock_key("a") >= 0 && lock_key("b") >= 0);
    }
}
