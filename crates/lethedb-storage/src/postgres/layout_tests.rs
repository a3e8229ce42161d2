//! The tables' layout against a real PostgreSQL: every statement that names one bucket reads
//! one partition of a hash-partitioned store (the property a distributed database needs to
//! route it to one node), the storage model holds on that layout, a store of the earlier
//! layout is copied into this one as it opens, and a store refuses another placement of keys.
//!
//! They run like `tests.rs` (a database named by `LETHEDB_TEST_POSTGRES`), each in a schema
//! of its own.

use super::tests::{database_url, Schema};
use super::{PgOptions, PgStore};
use crate::distribution::{range_within, Distribution};
use crate::model_test::run_model;
use crate::{KeyRange, Storage, Table};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Partitions of the test stores.
const PARTITIONS: u16 = 8;

/// A key's first byte is its bucket.
struct FirstByte;

impl Distribution for FirstByte {
    fn version(&self) -> i64 {
        77
    }

    fn bucket(&self, _table: Table, key: &[u8]) -> i64 {
        i64::from(key.first().copied().unwrap_or(0))
    }

    fn range_bucket(&self, _table: Table, range: &KeyRange) -> Option<i64> {
        let (std::ops::Bound::Included(start) | std::ops::Bound::Excluded(start)) = &range.start
        else {
            return None;
        };
        let first = *start.first()?;
        let upper = first.checked_add(1).map(|next| vec![next]);
        range_within(range, &[first], upper.as_deref()).then_some(i64::from(first))
    }
}

fn partitioned(url: &str) -> Schema {
    let mut options = PgOptions::new(Arc::new(FirstByte));
    options.partitions = PARTITIONS;
    Schema::with(url, options)
}

/// The plan PostgreSQL keeps for a statement it runs many times (a generic plan, as a
/// prepared statement gets after a few runs and as a distributed database routes), with
/// these arguments.
fn generic_plan(schema: &Schema, store: &PgStore, text: &str, arguments: &str) -> String {
    let prepare = format!(
        "SET plan_cache_mode = force_generic_plan; DEALLOCATE ALL; PREPARE probe AS {text}"
    );
    let explain = format!("EXPLAIN EXECUTE probe({arguments})");
    schema
        .query_text(
            store,
            &prepare,
            &explain,
            "DEALLOCATE ALL; RESET plan_cache_mode",
        )
        .join("\n")
}

/// The partitions of `table` a plan reads: those its scan nodes name (a `DELETE` also lists
/// every partition it might delete from, but removes the subplans of all but one).
fn partitions_read(plan: &str, table: Table) -> BTreeSet<String> {
    partitions_read_of(plan, super::sql::TABLE_NAMES[table as usize])
}

/// [`partitions_read`] of the table named `name`.
fn partitions_read_of(plan: &str, name: &str) -> BTreeSet<String> {
    plan.lines()
        .filter(|line| line.contains("Scan"))
        .flat_map(|line| line.split(|c: char| !(c.is_alphanumeric() || c == '_')))
        .filter(|word| {
            word.strip_prefix(name)
                .and_then(|rest| rest.strip_prefix("_p"))
                .is_some_and(|number| number.parse::<u16>().is_ok())
        })
        .map(str::to_string)
        .collect()
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[test]
fn every_statement_that_names_a_bucket_reads_one_partition() {
    let url = database_url();
    let schema = partitioned(&url);
    let store = schema.open();
    let sql = &store.backend.sql;
    let key = "'\\x05aa'::bytea";
    let keys = "ARRAY['\\x05aa'::bytea, '\\x05bb'::bytea]";
    let range = KeyRange::prefix(&[5]);
    let (scan, _) = sql.scan_page(Table::Items, &range, false, Some(5));
    let (reverse, _) = sql.scan_page(Table::ChangeLog, &range, true, Some(5));
    let probes: Vec<(Table, String, String)> = vec![
        (
            Table::Items,
            sql.get(Table::Items).into(),
            format!("{key}, 5"),
        ),
        (
            Table::Expiry,
            sql.get_any(Table::Expiry).into(),
            format!("5, {keys}"),
        ),
        (
            Table::Index,
            sql.delete(Table::Index).into(),
            format!("5, {keys}"),
        ),
        (
            Table::Counters,
            sql.delete(Table::Counters).into(),
            format!("5, {keys}"),
        ),
        (Table::Items, scan, format!("{key}, '\\x06'::bytea, 5, 32")),
        (
            Table::ChangeLog,
            reverse,
            format!("{key}, '\\x06'::bytea, 5, 32"),
        ),
        (
            Table::Items,
            sql.look(&[Table::Catalog, Table::Items, Table::Counters]),
            format!("{key}, {key}, 5, {key}, 5"),
        ),
    ];
    for (table, text, arguments) in &probes {
        let plan = generic_plan(&schema, &store, text, arguments);
        let read = partitions_read(&plan, *table);
        assert_eq!(read.len(), 1, "{text}\nreads {read:?}:\n{plan}");
        if text.contains("floors") {
            // The look's clock: the floor of its keys' bucket only.
            let floors = partitions_read_of(&plan, "floors");
            assert_eq!(floors.len(), 1, "{text}\nreads {floors:?}:\n{plan}");
        }
        assert!(
            plan.contains(&format!("Subplans Removed: {}", PARTITIONS - 1)),
            "{plan}"
        );
    }
    // The check itself fails a statement that names no bucket: a scan across buckets reads
    // every partition.
    let (across, _) = sql.scan_page(Table::Items, &range, false, None);
    let plan = generic_plan(
        &schema,
        &store,
        &across,
        &format!("{key}, '\\x06'::bytea, 32"),
    );
    assert_eq!(
        partitions_read(&plan, Table::Items).len(),
        usize::from(PARTITIONS),
        "{plan}"
    );
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[test]
fn a_partitioned_store_matches_the_model_and_counts_its_statements_by_bucket() {
    let url = database_url();
    for seed in 1..3 {
        let schema = partitioned(&url);
        run_model(&schema.open(), seed);
    }
    let schema = partitioned(&url);
    let store = schema.open();
    let before = store.bucket_statements();
    let mut txn = store.write().expect("write");
    txn.put(Table::Items, &[9, 1], b"a").expect("put");
    txn.put(Table::Counters, &[9, 2], b"b").expect("put");
    txn.put(Table::Catalog, b"c", b"c").expect("put");
    txn.commit().expect("commit");
    let (one, several, across) = store.bucket_statements();
    assert_eq!(
        (one - before.0, several - before.1, across - before.2),
        (2, 0, 0),
        "one bucket each"
    );
    let mut txn = store.write().expect("write");
    txn.put(Table::Items, &[9, 3], b"a").expect("put");
    txn.put(Table::Items, &[10, 3], b"a").expect("put");
    txn.commit().expect("commit");
    let after = store.bucket_statements();
    assert_eq!(
        (after.1 - several, after.2 - across),
        (1, 1),
        "one statement, one commit across buckets"
    );
    let look = store
        .look(&[(Table::Items, &[9, 1]), (Table::Items, &[10, 3])])
        .expect("look");
    assert_eq!(look.values, vec![Some(b"a".to_vec()), Some(b"a".to_vec())]);
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[test]
fn a_store_of_the_first_layout_is_copied_into_buckets_and_a_second_placement_is_refused() {
    let url = database_url();
    let schema = partitioned(&url);
    let store = schema.open();
    // Put the schema back as the first layout wrote it, with rows in it.
    let s = &store.backend.sql.schema;
    let mut first = format!(
        "DROP SCHEMA {s} CASCADE; CREATE SCHEMA {s}; \
         CREATE TABLE {s}.meta (name text PRIMARY KEY, value int8 NOT NULL); \
         INSERT INTO {s}.meta VALUES ('schema_version', 1), ('catalog_epoch', 3), ('clock_floor_ms', 0); "
    );
    for name in super::sql::TABLE_NAMES {
        first.push_str(&format!(
            "CREATE TABLE {s}.{name} (k bytea PRIMARY KEY, v bytea NOT NULL); \
             INSERT INTO {s}.{name} SELECT decode(lpad(to_hex(i), 4, '0'), 'hex'), '\\x01' \
             FROM generate_series(1, 2500) AS i; "
        ));
    }
    schema.execute(&store, &first);
    drop(store);
    let store = schema.open();
    let snapshot = store.read().expect("read");
    assert_eq!(snapshot.catalog_epoch(), Some(3));
    for table in Table::ALL {
        let mut rows = 0;
        snapshot
            .scan(table, &KeyRange::prefix(b""), &mut |_, _| {
                rows += 1;
                std::ops::ControlFlow::Continue(())
            })
            .expect("scan");
        assert_eq!(rows, 2500, "{table:?}");
        assert_eq!(
            snapshot.get(table, &[9, 0xc4]).expect("get"),
            Some(vec![1]),
            "{table:?}: row 2500 under its bucket"
        );
    }
    drop(snapshot);
    let plan = generic_plan(
        &schema,
        &store,
        store.backend.sql.get(Table::Items),
        "'\\x09c4'::bytea, 9",
    );
    assert_eq!(partitions_read(&plan, Table::Items).len(), 1, "{plan}");
    let refused = PgStore::open_with(&url, &schema.name, PgOptions::default());
    assert!(
        refused.is_err_and(|error| error
            .to_string()
            .contains("places its rows by distribution 77")),
        "a store placed by one function is refused by another"
    );
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[test]
fn commits_raise_their_buckets_floors_and_each_transaction_reads_the_floors_it_needs() {
    let url = database_url();
    let schema = partitioned(&url);
    let store = schema.open();
    let process_floors = || {
        schema.query_text(
            &store,
            "",
            &format!(
                "SELECT coalesce(max(value), 0)::text FROM \"{}\".meta \
                 WHERE name LIKE 'clock\\_floor\\_ms%'",
                schema.name
            ),
            "",
        )
    };
    let before = process_floors();
    let mut txn = store.write_reading_shards(&[9], &[]).expect("write");
    let instant = txn.store_now_ms().expect("clock");
    txn.put(Table::Items, &[9, 1], b"x").expect("put");
    txn.commit().expect("commit");
    let bucket_floor = |bucket: i64| {
        schema.query_text(
            &store,
            "",
            &format!(
                "SELECT coalesce(max(ms), -1)::text FROM \"{}\".floors WHERE dk = {bucket}",
                schema.name
            ),
            "",
        )[0]
        .parse::<i64>()
        .expect("a number")
    };
    assert_eq!(
        bucket_floor(9),
        instant,
        "the commit raised its bucket's floor"
    );
    assert_eq!(bucket_floor(10), -1, "and no other");
    assert_eq!(
        process_floors(),
        before,
        "a commit of a bucket writes no store-wide row"
    );
    // A bucket's floor ahead of PostgreSQL's clock (a failover to a server whose clock is
    // behind that bucket's last commit): what reads or writes that bucket keeps to the floor.
    let ahead = instant + 3_600_000;
    schema.execute(
        &store,
        &format!(
            "UPDATE \"{}\".floors SET ms = {ahead} WHERE dk = 9",
            schema.name
        ),
    );
    let look = store.look(&[(Table::Items, &[9, 1])]).expect("look");
    assert_eq!(look.now_ms, Some(ahead));
    assert_eq!(look.values, vec![Some(b"x".to_vec())]);
    let txn = store.write_reading_shards(&[10, 9], &[]).expect("write");
    assert_eq!(txn.store_now_ms(), Some(ahead));
    drop(txn);
    let (txn, acquired) = store.write_reading_free_shards(&[9], &[]).expect("write");
    assert_eq!((txn.store_now_ms(), acquired), (Some(ahead), vec![9]));
    drop(txn);
    assert_eq!(store.read().expect("read").store_now_ms(), Some(ahead));
    assert_eq!(store.write().expect("write").store_now_ms(), Some(ahead));
    // Another bucket's transaction and look do not read it (on a distributed database they
    // would reach one node, not every one).
    let txn = store.write_reading_shards(&[10], &[]).expect("write");
    assert!(txn.store_now_ms().expect("clock") < ahead);
    drop(txn);
    let look = store.look(&[(Table::Items, &[10, 1])]).expect("look");
    assert!(look.now_ms.expect("clock") < ahead);
    // A commit never lowers a floor, and a catalog change raises the process's own too.
    let mut txn = store.write().expect("write");
    txn.put(Table::Items, &[9, 2], b"y").expect("put");
    txn.put(Table::Catalog, b"c", b"1").expect("put");
    txn.commit().expect("commit");
    assert_eq!(bucket_floor(9), ahead);
    assert_eq!(process_floors(), vec![ahead.to_string()]);
}
