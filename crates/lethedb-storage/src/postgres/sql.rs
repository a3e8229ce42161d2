//! The SQL this backend sends, built once per store for its schema.
//!
//! The catalog is a table of `(k bytea PRIMARY KEY, v bytea)`; every other [`Table`] adds the
//! key's bucket, `dk` (`schema.rs`), and every statement on one names the bucket of its rows
//! where they share one, so it reads one partition of a partitioned table and can be routed to
//! one node of a distributed one. `bytea` compares bytewise (then by length), exactly the order
//! the engine's keys are designed for, and the key leads the primary key, so every range scan
//! is a B-tree range scan. Values are the engine's bytes unchanged: an item's value is a small
//! header and the JSON exactly as the client sent it (member order, duplicate names,
//! `\u0000`), never re-encoded. `meta` holds the store-wide numbers: the catalog epoch and the
//! processes' clock floors; `floors` holds each bucket's.
//!
//! **The clock** of a transaction is PostgreSQL's, never below the floors of what it reads or
//! writes, so time does not run back after a failover to a server whose clock is behind:
//! every commit raises the floor of each bucket it writes to its instant (and a commit that
//! writes no bucket, or changes the catalog, its process's floor row in `meta`). A transaction
//! of some shards, or a look at some keys, reads the floors of those buckets only (one bucket,
//! as a distributed database routes); a snapshot and a store-wide writer read them all.

use crate::api::{sorted_set, KeyRange, Table};
use std::ops::Bound;

/// The names of the tables, indexed like [`Table::ALL`].
pub(crate) const TABLE_NAMES: [&str; 8] = [
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
    /// The schema's quoted name.
    pub(crate) schema: String,
    pub(crate) begin_read: String,
    pub(crate) begin_write: String,
    /// The start of a transaction that writes only some shards: the store-wide lock shared;
    /// [`Sql::begin_write_shards`] adds the shards' own locks and the clock.
    begin_shared: String,
    /// What each shard's lock key is derived from, with the shard's number after it.
    shard_lock_prefix: String,
    /// Deletes the floor rows below the highest (kept: the highest is the floor).
    pub(crate) prune_floors: String,
    rows: RowStatements,
    /// Raises this process's floor row in `meta` to `$1`.
    pub(crate) raise_floor: String,
    /// Raises the floor of the bucket `$1` to `$2`.
    pub(crate) raise_bucket_floor: String,
    /// Raises the floor of each bucket in the array `$1` to `$2`.
    pub(crate) raise_bucket_floors: String,
    pub(crate) bump_epoch: String,
}

/// The clock and the catalog epoch as two columns: PostgreSQL's clock, never below the
/// processes' floors in `meta` nor the floors of the buckets that `floors_filter` (a `WHERE`
/// clause on `floors`, empty for all) selects.
fn clock_columns(s: &str, floors_filter: &str) -> String {
    format!(
        "greatest((extract(epoch FROM clock_timestamp()) * 1000)::int8, \
         (SELECT max(value) FROM {s}.meta WHERE name LIKE 'clock\\_floor\\_ms%'), \
         (SELECT max(ms) FROM {s}.floors{floors_filter})), \
         (SELECT value FROM {s}.meta WHERE name = 'catalog_epoch')"
    )
}

/// A 63-bit FNV-1a hash, for advisory lock keys derived from names.
pub(crate) fn lock_key(name: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash >> 1) as i64
}

/// The statements on rows of each table, indexed like [`Table::ALL`].
struct RowStatements {
    gets: Vec<String>,
    get_anys: Vec<String>,
    /// Reads of keys of several buckets.
    get_anys_across: Vec<String>,
    upserts: Vec<String>,
    deletes: Vec<String>,
    /// Upserts and deletes of rows of several buckets, for a transaction that spans them.
    upserts_across: Vec<String>,
    deletes_across: Vec<String>,
}

/// A table's qualified name in the schema `s` (quoted).
fn name(s: &str, table: Table) -> String {
    format!("{s}.{}", TABLE_NAMES[table as usize])
}

impl RowStatements {
    fn new(s: &str) -> RowStatements {
        RowStatements {
            gets: statements(|t| {
                if t.is_distributed() {
                    format!("SELECT v FROM {} WHERE k = $1 AND dk = $2", name(s, t))
                } else {
                    format!("SELECT v FROM {} WHERE k = $1", name(s, t))
                }
            }),
            get_anys: statements(|t| {
                if t.is_distributed() {
                    format!(
                        "SELECT k, v FROM {} WHERE dk = $1 AND k = ANY($2::bytea[])",
                        name(s, t)
                    )
                } else {
                    format!("SELECT k, v FROM {} WHERE k = ANY($1::bytea[])", name(s, t))
                }
            }),
            upserts: statements(|t| {
                if t.is_distributed() {
                    format!(
                        "INSERT INTO {} (dk, k, v) SELECT $1::int8, * FROM \
                 unnest($2::bytea[], $3::bytea[]) ON CONFLICT (k, dk) DO UPDATE SET v = EXCLUDED.v",
                        name(s, t)
                    )
                } else {
                    format!(
                        "INSERT INTO {} (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[]) \
                 ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
                        name(s, t)
                    )
                }
            }),
            deletes: statements(|t| {
                if t.is_distributed() {
                    format!(
                        "DELETE FROM {} WHERE dk = $1 AND k = ANY($2::bytea[])",
                        name(s, t)
                    )
                } else {
                    format!("DELETE FROM {} WHERE k = ANY($1::bytea[])", name(s, t))
                }
            }),
            // A key names its bucket, so `dk = ANY(...) AND k = ANY(...)` matches exactly the
            // rows of the keys, whichever bucket each is in.
            get_anys_across: statements(|t| {
                format!(
                    "SELECT k, v FROM {} WHERE dk = ANY($1::int8[]) AND k = ANY($2::bytea[])",
                    name(s, t)
                )
            }),
            upserts_across: statements(|t| {
                format!(
                "INSERT INTO {} (dk, k, v) SELECT * FROM \
                 unnest($1::int8[], $2::bytea[], $3::bytea[]) ON CONFLICT (k, dk) DO UPDATE SET v = EXCLUDED.v",
                name(s, t)
            )
            }),
            deletes_across: statements(|t| {
                format!(
                    "DELETE FROM {} WHERE dk = ANY($1::int8[]) AND k = ANY($2::bytea[])",
                    name(s, t)
                )
            }),
        }
    }
}

/// One statement per table, indexed like [`Table::ALL`].
fn statements(text: impl Fn(Table) -> String) -> Vec<String> {
    Table::ALL.iter().map(|&table| text(table)).collect()
}

/// Quotes an identifier for SQL.
pub(crate) fn quote(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

impl Sql {
    /// The statements of a store in `schema`, for the instance `instance` (a name no other
    /// open store shares: it names this instance's clock floor row).
    pub(crate) fn new(schema: &str, instance: &str) -> Sql {
        let s = quote(schema);
        let floor_name = format!("clock_floor_ms:{}", instance.replace('\'', ""));
        // The store-wide advisory lock every write transaction holds: exclusively (writers on
        // every instance then apply one group at a time, as the single writer of one process
        // does), or shared, by a transaction that writes only its shards and holds their own
        // locks (`begin_write_shards`).
        let write_lock = lock_key(&format!("lethedb-write:{schema}"));
        // The store's clock, read once per transaction, with the catalog epoch beside it (see
        // the module's documentation); here of every bucket.
        let clock = format!("SELECT {}", clock_columns(&s, ""));
        let raise_buckets =
            format!("ON CONFLICT (dk) DO UPDATE SET ms = greatest({s}.floors.ms, EXCLUDED.ms)");
        Sql {
            schema: s.clone(),
            begin_read: format!("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY; {clock}"),
            begin_write: format!(
                "BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock({write_lock}); {clock}"
            ),
            begin_shared: format!(
                "BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock_shared({write_lock}); "
            ),
            shard_lock_prefix: format!("lethedb-shard:{schema}:"),
            rows: RowStatements::new(&s),
            raise_floor: format!(
                "INSERT INTO {s}.meta (name, value) VALUES ('{floor_name}', $1) \
                 ON CONFLICT (name) DO UPDATE SET value = greatest({s}.meta.value, EXCLUDED.value)"
            ),
            raise_bucket_floor: format!(
                "INSERT INTO {s}.floors (dk, ms) VALUES ($1, $2) {raise_buckets}"
            ),
            raise_bucket_floors: format!(
                "INSERT INTO {s}.floors (dk, ms) SELECT unnest($1::int8[]), $2 {raise_buckets}"
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
        let mut text = self.begin_shared.clone();
        text.push_str(&self.wait_for_shards(shards));
        text.push_str(&self.clock_of_shards(shards));
        text
    }

    /// The clock and epoch statement of a transaction that writes only the buckets of
    /// `shards` (a shard's lock key is its bucket): their floors, not every bucket's.
    fn clock_of_shards(&self, shards: &[u64]) -> String {
        let buckets: Vec<String> = sorted_set(shards)
            .iter()
            .map(|shard| (*shard as i64).to_string())
            .collect();
        let filter = format!(" WHERE dk IN ({})", buckets.join(", "));
        format!("SELECT {}", clock_columns(&self.schema, &filter))
    }

    /// The locks of `shards`, each waited for in ascending order of its key (so two
    /// transactions never wait on each other in a cycle).
    fn wait_for_shards(&self, shards: &[u64]) -> String {
        let keys: Vec<i64> = shards.iter().map(|shard| self.shard_lock(*shard)).collect();
        sorted_set(&keys)
            .iter()
            .map(|key| format!("SELECT pg_advisory_xact_lock({key}); "))
            .collect()
    }

    /// What a transaction that holds no shard lock yet runs to wait for all of `shards`, then
    /// the clock read again after them.
    pub(crate) fn wait_for_shards_then_clock(&self, shards: &[u64]) -> String {
        let mut text = self.wait_for_shards(shards);
        text.push_str(&self.clock_of_shards(shards));
        text
    }

    fn shard_lock(&self, shard: u64) -> i64 {
        lock_key(&format!("{}{shard}", self.shard_lock_prefix))
    }

    /// [`Sql::begin_write_shards`] that only tries each shard's lock, and returns, in a row
    /// whose first column is `acquired`, the shards it got (comma-separated; NULL for none),
    /// before the clock's row. Trying never waits, so it takes them in any order.
    pub(crate) fn begin_write_free_shards(&self, shards: &[u64]) -> String {
        let pairs: Vec<String> = shards
            .iter()
            .map(|shard| format!("({shard}::int8, {}::int8)", self.shard_lock(*shard)))
            .collect();
        format!(
            "{}SELECT 'acquired', string_agg(s::text, ',' ORDER BY s) FROM (VALUES {}) AS t(s, k) \
             WHERE pg_try_advisory_xact_lock(k); {}",
            self.begin_shared,
            pairs.join(", "),
            self.clock_of_shards(shards)
        )
    }

    /// A look ([`crate::Storage::look`]): the clock and epoch, then the value of one key per
    /// table in `tables` (`$1`, `$2`, ... in that order; NULL where there is none), in one row.
    /// A key of a distributed table takes two parameters, its key and then its bucket.
    pub(crate) fn look(&self, tables: &[Table]) -> String {
        // The floors of the keys' buckets (the parameters after their keys).
        let mut bucket_parameters = Vec::new();
        let mut parameter = 0;
        for table in tables {
            parameter += 1;
            if table.is_distributed() {
                parameter += 1;
                bucket_parameters.push(format!("${parameter}"));
            }
        }
        let filter = if bucket_parameters.is_empty() {
            " WHERE false".to_string()
        } else {
            format!(" WHERE dk IN ({})", bucket_parameters.join(", "))
        };
        let mut text = format!("SELECT {}", clock_columns(&self.schema, &filter));
        let mut parameter = 0;
        for table in tables {
            let name = TABLE_NAMES[*table as usize];
            parameter += 1;
            if table.is_distributed() {
                text.push_str(&format!(
                    ", (SELECT v FROM {}.{name} WHERE k = ${parameter} AND dk = ${})",
                    self.schema,
                    parameter + 1
                ));
                parameter += 1;
            } else {
                text.push_str(&format!(
                    ", (SELECT v FROM {}.{name} WHERE k = ${parameter})",
                    self.schema
                ));
            }
        }
        text
    }

    /// The value of the key `$1` (of a distributed table: in the bucket `$2`).
    pub(crate) fn get(&self, table: Table) -> &str {
        &self.rows.gets[table as usize]
    }

    /// The rows of the keys in an array (of a distributed table: `$2`, all of the bucket
    /// `$1`), in no particular order.
    pub(crate) fn get_any(&self, table: Table) -> &str {
        &self.rows.get_anys[table as usize]
    }

    /// Writes rows: of a distributed table, all of the bucket `$1`, keys `$2`, values `$3`;
    /// of the catalog, keys `$1`, values `$2`.
    pub(crate) fn upsert(&self, table: Table) -> &str {
        &self.rows.upserts[table as usize]
    }

    /// Deletes keys: of a distributed table, all of the bucket `$1`, keys `$2`; of the
    /// catalog, keys `$1`.
    pub(crate) fn delete(&self, table: Table) -> &str {
        &self.rows.deletes[table as usize]
    }

    /// The rows of keys (`$2`) of a distributed table in several buckets (`$1`).
    pub(crate) fn get_any_across(&self, table: Table) -> &str {
        &self.rows.get_anys_across[table as usize]
    }

    /// Writes rows of a distributed table in several buckets: `$1` each row's bucket.
    pub(crate) fn upsert_across(&self, table: Table) -> &str {
        &self.rows.upserts_across[table as usize]
    }

    /// Deletes keys of a distributed table in several buckets: `$1` the buckets.
    pub(crate) fn delete_across(&self, table: Table) -> &str {
        &self.rows.deletes_across[table as usize]
    }

    /// One page of a scan: the rows of `range` in order (descending when `reverse`), at most
    /// `$n` of them, the bounds bound as parameters in the order returned, then, when the
    /// range lies in one `bucket`, the bucket, then the row limit.
    pub(crate) fn scan_page(
        &self,
        table: Table,
        range: &KeyRange,
        reverse: bool,
        bucket: Option<i64>,
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
        let mut limit = parameters.len() + 1;
        if bucket.is_some() && table.is_distributed() {
            conditions.push(format!("dk = ${limit}"));
            limit += 1;
        }
        let filter = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conditions.join(" AND "))
        };
        let order = if reverse { "DESC" } else { "ASC" };
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
        let (text, parameters) = sql.scan_page(Table::Items, &KeyRange::prefix(b"ab"), false, None);
        assert_eq!(
            text,
            "SELECT k, v FROM \"lethedb\".items WHERE k >= $1 AND k < $2 ORDER BY k ASC LIMIT $3"
        );
        assert_eq!(parameters, vec![b"ab".to_vec(), b"ac".to_vec()]);
        let everything = KeyRange {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
        };
        let (text, parameters) = sql.scan_page(Table::Expiry, &everything, true, None);
        assert_eq!(
            text,
            "SELECT k, v FROM \"lethedb\".expiry  ORDER BY k DESC LIMIT $1"
        );
        assert!(parameters.is_empty());
        let (text, _) = sql.scan_page(Table::ChangeLog, &KeyRange::prefix(b"ab"), false, Some(7));
        assert!(
            text.ends_with("WHERE k >= $1 AND k < $2 AND dk = $3 ORDER BY k ASC LIMIT $4"),
            "{text}"
        );
        let (text, _) = sql.scan_page(Table::Catalog, &KeyRange::prefix(b"ab"), false, Some(7));
        assert!(text.ends_with("k < $2 ORDER BY k ASC LIMIT $3"), "{text}");
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
        let free = Sql::new("a", "i").begin_write_free_shards(&[7, 3]);
        assert_eq!(
            free.matches("pg_try_advisory_xact_lock(").count(),
            1,
            "{free}"
        );
        assert!(free.contains("(7::int8, "), "{free}");
        assert!(!free.contains("pg_advisory_xact_lock("), "{free}");
        assert!(lock_key("a") >= 0 && lock_key("b") >= 0);
    }
}
