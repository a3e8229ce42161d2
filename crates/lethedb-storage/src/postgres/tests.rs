//! The PostgreSQL backend against a real server: the storage model test, and what sharing a
//! store between processes needs (visibility, one writer at a time, the store's clock and
//! catalog epoch, failures that leave the store usable).
//!
//! They run when `LETHEDB_TEST_POSTGRES` names a database (`scripts/test postgres` starts one);
//! each test works in a schema of its own and drops it at the end. Without one, `cargo test`
//! reports them as ignored, with the reason (the crate's `build.rs` sets the cfg they need). In
//! the `postgres` stage (`LETHEDB_TEST_POSTGRES_REQUIRED`) a missing database fails them.

use super::{PgOptions, PgStore};
use crate::model_test::{collect, expected, run_model};
use crate::{KeyRange, Storage, StorageError, Table};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The test database. These tests run only in a build that names one (`build.rs` sets the
/// cfg); the postgres stage's `LETHEDB_TEST_POSTGRES_REQUIRED` runs them even without, so
/// that a missing database fails here.
pub(super) fn database_url() -> String {
    std::env::var("LETHEDB_TEST_POSTGRES")
        .ok()
        .filter(|url| !url.is_empty())
        .expect("LETHEDB_TEST_POSTGRES is not set, and the postgres stage requires it")
}

/// A schema no other test uses; dropped when the guard goes.
pub(super) struct Schema {
    url: String,
    pub(super) name: String,
    /// How its tables are laid out.
    pub(super) options: PgOptions,
}

impl Schema {
    pub(super) fn new(url: &str) -> Schema {
        Schema::with(url, PgOptions::default())
    }

    pub(super) fn with(url: &str, options: PgOptions) -> Schema {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        Schema {
            url: url.to_string(),
            name: format!(
                "test_{}_{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::SeqCst)
            ),
            options,
        }
    }

    pub(super) fn open(&self) -> PgStore {
        PgStore::open_with(&self.url, &self.name, self.options.clone())
            .expect("open the PostgreSQL store")
    }

    /// Runs SQL on the store's own connection pool (for what no trait method does).
    pub(super) fn execute(&self, store: &PgStore, sql: &str) {
        let pool = store.backend.bridge.pool.clone();
        let sql = sql.to_string();
        store
            .backend
            .bridge
            .run(async move {
                let connection = pool.get().await.map_err(|e| super::pool_error(&e))?;
                connection
                    .batch_execute(&sql)
                    .await
                    .map_err(|e| super::client_error(&e))
            })
            .expect("execute");
    }

    /// Runs `query` on one connection of the store's pool between the statements `before` and
    /// `after`, and gives its rows' first column as text.
    pub(super) fn query_text(
        &self,
        store: &PgStore,
        before: &str,
        query: &str,
        after: &str,
    ) -> Vec<String> {
        let pool = store.backend.bridge.pool.clone();
        let (before, query, after) = (before.to_string(), query.to_string(), after.to_string());
        store
            .backend
            .bridge
            .run(async move {
                let connection = pool.get().await.map_err(|e| super::pool_error(&e))?;
                connection
                    .batch_execute(&before)
                    .await
                    .map_err(|e| super::client_error(&e))?;
                let rows = connection
                    .query(&query, &[])
                    .await
                    .map_err(|e| super::client_error(&e))?;
                connection
                    .batch_execute(&after)
                    .await
                    .map_err(|e| super::client_error(&e))?;
                Ok(rows.iter().map(|row| row.get::<_, String>(0)).collect())
            })
            .expect("query")
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        if let Ok(store) = PgStore::open_with(&self.url, &self.name, self.options.clone()) {
            let sql = format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name);
            self.execute(&store, &sql);
        }
    }
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[test]
fn postgres_store_matches_the_model() {
    let url = database_url();
    for seed in 1..4 {
        let schema = Schema::new(&url);
        run_model(&schema.open(), seed);
    }
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[test]
fn a_commit_on_one_store_is_read_at_once_by_another_on_the_same_database() {
    let url = database_url();
    let schema = Schema::new(&url);
    let (first, second) = (schema.open(), schema.open());
    let before = second.read().expect("snapshot");
    let mut txn = first.write().expect("write");
    txn.put(Table::Items, b"k", b"v").expect("put");
    txn.put(Table::Items, b"gone", b"x").expect("put");
    txn.commit().expect("commit");
    // A snapshot begun before the commit keeps its view; one begun after sees it.
    assert_eq!(before.get(Table::Items, b"k").expect("get"), None);
    let after = second.read().expect("snapshot");
    assert_eq!(
        after.get(Table::Items, b"k").expect("get"),
        Some(b"v".to_vec())
    );
    let mut txn = second.write().expect("write");
    txn.delete(Table::Items, b"gone").expect("delete");
    txn.commit().expect("commit");
    let everything = KeyRange::prefix(&[]);
    let read = first.read().expect("snapshot");
    assert_eq!(
        collect(&*read, Table::Items, &everything, false, usize::MAX),
        vec![(b"k".to_vec(), b"v".to_vec())]
    );
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[test]
fn write_transactions_of_two_stores_take_turns() {
    let url = database_url();
    let schema = Schema::new(&url);
    let first = schema.open();
    let second = Arc::new(schema.open());
    let mut txn = first.write().expect("write");
    txn.put(Table::Counters, b"n", b"1").expect("put");
    let waiter = {
        let second = Arc::clone(&second);
        std::thread::spawn(move || {
            let started = Instant::now();
            let mut txn = second.write().expect("write");
            let waited = started.elapsed();
            // Under the lock, the other store's commit is visible to this transaction.
            let seen = txn.get(Table::Counters, b"n").expect("get");
            txn.put(Table::Counters, b"n", b"2").expect("put");
            txn.commit().expect("commit");
            (waited, seen)
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    txn.commit().expect("commit");
    let (waited, seen) = waiter.join().expect("thread");
    assert!(
        waited >= Duration::from_millis(250),
        "the second writer began while the first was open ({waited:?})"
    );
    assert_eq!(seen, Some(b"1".to_vec()));
    let read = first.read().expect("snapshot");
    assert_eq!(
        read.get(Table::Counters, b"n").expect("get"),
        Some(b"2".to_vec())
    );
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[test]
fn the_store_clock_never_runs_back_and_the_epoch_counts_catalog_commits() {
    let url = database_url();
    let schema = Schema::new(&url);
    let store = schema.open();
    let read = store.read().expect("snapshot");
    let (start_ms, start_epoch) = (
        read.store_now_ms().expect("a shared store has a clock"),
        read.catalog_epoch().expect("and an epoch"),
    );
    drop(read);
    let mut txn = store.write().expect("write");
    txn.put(Table::Items, b"i", b"1").expect("put");
    txn.commit().expect("commit");
    assert_eq!(
        store.read().expect("read").catalog_epoch(),
        Some(start_epoch)
    );
    let mut txn = store.write().expect("write");
    assert!(txn.store_now_ms().expect("clock") >= start_ms);
    txn.put(Table::Catalog, b"c", b"1").expect("put");
    txn.commit().expect("commit");
    assert_eq!(
        store.read().expect("read").catalog_epoch(),
        Some(start_epoch + 1)
    );
    // A floor ahead of PostgreSQL's clock (a failover to a server whose clock is behind the
    // last commit): the store's time stays at the floor rather than running back.
    let ahead = start_ms + 3_600_000;
    schema.execute(
        &store,
        &format!(
            "UPDATE \"{}\".meta SET value = {ahead} WHERE name = 'clock_floor_ms'",
            schema.name
        ),
    );
    assert_eq!(store.read().expect("read").store_now_ms(), Some(ahead));
    let txn = store.write().expect("write");
    assert_eq!(txn.store_now_ms(), Some(ahead));
}

#[test]
fn an_unreachable_server_is_unavailable_quickly_not_a_hang() {
    // A port nothing listens on: refused at once.
    let started = Instant::now();
    let outcome = PgStore::open("postgresql://nobody@127.0.0.1:9/none");
    assert!(matches!(outcome, Err(StorageError::Unavailable(_))));
    assert!(started.elapsed() < Duration::from_secs(5));
    let Err(error) = outcome else { return };
    assert!(!error.to_string().contains("nobody"), "{error}");
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[test]
fn a_failed_commit_keeps_nothing_and_the_store_stays_usable() {
    let url = database_url();
    let schema = Schema::new(&url);
    let store = schema.open();
    let mut txn = store.write().expect("write");
    txn.put(Table::Items, b"a", b"1").expect("put");
    txn.commit().expect("commit");
    // The table goes away under a transaction: its commit fails as a whole.
    let mut txn = store.write().expect("write");
    txn.put(Table::Items, b"b", b"2").expect("put");
    txn.put(Table::Counters, b"c", b"3").expect("put");
    let other = schema.open();
    schema.execute(
        &other,
        &format!("ALTER TABLE \"{}\".items RENAME TO items_away", schema.name),
    );
    assert!(matches!(txn.commit(), Err(StorageError::Unavailable(_))));
    schema.execute(
        &other,
        &format!("ALTER TABLE \"{}\".items_away RENAME TO items", schema.name),
    );
    let read = store.read().expect("read");
    let everything = KeyRange::prefix(&[]);
    assert_eq!(
        collect(&*read, Table::Counters, &everything, false, usize::MAX),
        expected(&Default::default(), &everything, false, usize::MAX)
    );
    assert_eq!(read.get(Table::Items, b"b").expect("get"), None);
    // The next transaction works.
    let mut txn = store.write().expect("write");
    txn.put(Table::Items, b"b", b"2").expect("put");
    txn.commit().expect("commit");
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[test]
fn a_writer_that_gives_up_waiting_for_the_lock_leaves_no_connection_inside_a_transaction() {
    let url = database_url();
    let schema = Schema::new(&url);
    let holder = schema.open();
    let mut waiter = schema.open();
    waiter.backend.bridge.timeout = Duration::from_millis(500);
    let mut held = holder.write().expect("write");
    held.put(Table::Items, b"a", b"1").expect("put");
    // The lock stays taken: the waiter gives up, and the connection that was waiting is closed.
    assert!(matches!(
        waiter.write().err(),
        Some(StorageError::Unavailable(_))
    ));
    held.commit().expect("commit");
    // Every connection the waiter hands out afterwards begins a fresh transaction: a snapshot
    // sees the commit, and its write transaction takes the lock anew and commits.
    for _ in 0..4 {
        let read = waiter.read().expect("read");
        assert_eq!(
            read.get(Table::Items, b"a").expect("get"),
            Some(b"1".to_vec())
        );
    }
    let mut txn = waiter.write().expect("write after the wait");
    txn.put(Table::Items, b"b", b"2").expect("put");
    txn.commit().expect("commit");
    let read = holder.read().expect("read");
    assert_eq!(
        read.get(Table::Items, b"b").expect("get"),
        Some(b"2".to_vec())
    );
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[test]
fn a_look_at_a_few_keys_is_one_round_trip_with_the_clock_and_the_epoch() {
    let url = database_url();
    let schema = Schema::new(&url);
    let store = schema.open();
    let mut txn = store.write().expect("write");
    txn.put(Table::Items, b"item", b"1").expect("put");
    txn.put(Table::Counters, b"count", b"7").expect("put");
    txn.put(Table::Catalog, b"def", b"d").expect("put");
    txn.commit().expect("commit");
    let keys: [(Table, &[u8]); 4] = [
        (Table::Catalog, b"def"),
        (Table::Items, b"item"),
        (Table::Items, b"absent"),
        (Table::Counters, b"count"),
    ];
    // The first time on a connection prepares the statement; afterwards it is one wait.
    store.look(&keys).expect("warm up");
    let before = store.round_trips();
    let look = store.look(&keys).expect("look");
    assert_eq!(store.round_trips() - before, 1, "one round trip");
    assert_eq!(
        look.values,
        vec![
            Some(b"d".to_vec()),
            Some(b"1".to_vec()),
            None,
            Some(b"7".to_vec())
        ]
    );
    let snapshot = store.read().expect("read");
    assert_eq!(look.epoch, snapshot.catalog_epoch());
    assert!(look
        .now_ms
        .is_some_and(|now| now > 0 && now <= snapshot.store_now_ms().unwrap_or(0)));
    drop(snapshot);
    // The next look sees what was committed since, and the connection it used was left
    // outside any transaction (a write on the pool's connections still works).
    let mut txn = store.write().expect("write");
    txn.put(Table::Items, b"item", b"2").expect("put");
    txn.commit().expect("commit");
    let look = store.look(&keys[1..2]).expect("look");
    assert_eq!(look.values, vec![Some(b"2".to_vec())]);
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[test]
fn a_commit_sends_its_changes_and_commit_together_and_a_failed_change_commits_nothing() {
    let url = database_url();
    let schema = Schema::new(&url);
    let store = schema.open();
    let mut txn = store.write().expect("write");
    txn.put(Table::Items, b"a", b"1").expect("put");
    txn.commit().expect("warm up");
    let before = store.round_trips();
    let mut txn = store.write().expect("write");
    txn.put(Table::Items, b"b", b"2").expect("put");
    txn.delete(Table::Items, b"a").expect("delete");
    txn.put(Table::Catalog, b"c", b"3").expect("put");
    txn.commit().expect("commit");
    // The start (with the lock and the clock), then the changes with COMMIT.
    assert_eq!(store.round_trips() - before, 2);
    let reader = store.read().expect("read");
    assert_eq!(reader.get(Table::Items, b"a").expect("get"), None);
    assert_eq!(
        reader.get(Table::Items, b"b").expect("get"),
        Some(b"2".to_vec())
    );
    drop(reader);
    // A change PostgreSQL refuses (here a check constraint refuses a long value) aborts the transaction: its COMMIT rolls everything back and reports failure.
    schema.execute(
        &store,
        &format!(
            "ALTER TABLE \"{}\".items ADD CONSTRAINT small CHECK (length(v) < 100)",
            schema.name
        ),
    );
    let mut txn = store.write().expect("write");
    txn.put(Table::Catalog, b"d", b"4").expect("put");
    txn.put(Table::Items, b"big", &[0u8; 200]).expect("put");
    assert!(txn.commit().is_err());
    let reader = store.read().expect("read");
    assert_eq!(reader.get(Table::Catalog, b"d").expect("get"), None);
    assert_eq!(reader.get(Table::Items, b"big").expect("get"), None);
}

#[test]
fn a_url_of_several_hosts_keeps_them_in_order_with_the_writable_one_asked_for() {
    use tokio_postgres::config::{Host, TargetSessionAttrs};
    let url = "postgresql://lethe:secret@10.0.0.1:5433,pg2.internal/lethedb?target_session_attrs=read-write";
    let config = super::connection_config(url).expect("a valid URL");
    assert_eq!(
        config.get_hosts(),
        [
            Host::Tcp("10.0.0.1".into()),
            Host::Tcp("pg2.internal".into())
        ]
    );
    // A host without a port gets PostgreSQL's, 5432.
    assert_eq!(config.get_ports(), [5433, 5432]);
    assert_eq!(
        config.get_target_session_attrs(),
        TargetSessionAttrs::ReadWrite
    );
    assert_eq!(config.get_dbname(), Some("lethedb"));
    assert_eq!(config.get_connect_timeout(), Some(&super::CONNECT_TIMEOUT));
    assert_eq!(config.get_application_name(), Some("lethedb"));
    // The log names both hosts, never the password.
    assert_eq!(
        super::describe(&config),
        "postgresql://10.0.0.1:5433,pg2.internal:5432/lethedb"
    );
    let plain = super::connection_config("postgresql://lethe@db/lethedb?application_name=mine")
        .expect("a valid URL");
    assert_eq!(plain.get_target_session_attrs(), TargetSessionAttrs::Any);
    assert_eq!(plain.get_application_name(), Some("mine"));
    let Err(error) =
        super::connection_config("postgresql://lethe:secret@db/x?target_session_attrs=primary")
    else {
        panic!("an unknown target_session_attrs is refused");
    };
    assert!(!error.to_string().contains("secret"), "{error}");
}

/// The database's URL with another host listed first: `first` as `host:port`.
fn with_first_host(url: &str, first: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a postgresql:// URL");
    let (user, hosts) = rest
        .rsplit_once('@')
        .map_or(("", rest), |(user, hosts)| (user, hosts));
    let at = if user.is_empty() { "" } else { "@" };
    format!("{scheme}://{user}{at}{first},{hosts}")
}

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[test]
fn a_host_that_is_down_or_read_only_is_passed_over_for_the_writable_one() {
    let url = database_url();
    // Port 9 refuses at once: the primary that failed. The store opens on the next host.
    let down_first = with_first_host(&url, "127.0.0.1:9");
    let separator = if url.contains('?') { '&' } else { '?' };
    let schema = Schema::new(&format!(
        "{down_first}{separator}target_session_attrs=read-write"
    ));
    let store = schema.open();
    let mut txn = store.write().expect("write");
    txn.put(Table::Items, b"a", b"1").expect("put");
    txn.commit().expect("commit");
    assert_eq!(
        store
            .read()
            .expect("read")
            .get(Table::Items, b"a")
            .expect("get"),
        Some(b"1".to_vec())
    );
    // Every session read-only, as on a standby: with read-write asked for, the connector takes
    // no host at all (the store could not be reached)...
    let read_only = format!("{url}{separator}options=-c%20default_transaction_read_only%3Don");
    let refused = PgStore::open_in_schema(
        &format!("{read_only}&target_session_attrs=read-write"),
        &schema.name,
    );
    let Err(StorageError::Unavailable(message)) = refused else {
        panic!("a read-only server is refused");
    };
    assert!(message.contains("could not be reached"), "{message}");
    // ...while without it the session is taken, and only the first write (creating the
    // tables) is refused, by PostgreSQL: read_only_sql_transaction.
    let Err(StorageError::Unavailable(message)) = PgStore::open_in_schema(&read_only, &schema.name)
    else {
        panic!("a read-only session cannot create the tables");
    };
    assert!(message.contains("25006"), "{message}");
}
