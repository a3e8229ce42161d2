//! The durable backend: one redb database file with a table per [`Table`].
//!
//! redb gives us MVCC snapshots (readers never wait for the writer) and copy-on-write commits
//! that are durable when `commit` returns. This module only maps the trait onto redb; it does not
//! batch, retry or interpret anything.

use crate::api::{KeyRange, ReadTxn, Snapshots, Storage, StorageError, Table, Visit, WriteTxn};
use crate::overlay::{BaseEntry, Overlay};
use crate::write_txn::{Base, OverlayWrite};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use std::cell::OnceCell;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

const DEFINITIONS: [TableDefinition<'static, &'static [u8], &'static [u8]>; 8] = [
    TableDefinition::new("catalog"),
    TableDefinition::new("items"),
    TableDefinition::new("expiry"),
    TableDefinition::new("counters"),
    TableDefinition::new("resource_ids"),
    TableDefinition::new("change_index"),
    TableDefinition::new("change_log"),
    TableDefinition::new("index"),
];

fn definition(table: Table) -> TableDefinition<'static, &'static [u8], &'static [u8]> {
    DEFINITIONS[table.index()]
}

fn io(error: impl std::fmt::Display) -> StorageError {
    StorageError::Io(error.to_string())
}

/// The page cache redb may use unless told otherwise. redb's own default is 1 GiB, which is
/// what a 1M-item store then occupies; reads past the cache come from the OS page cache.
pub const CACHE_BYTES_DEFAULT: usize = 64 * 1024 * 1024;

/// A redb file opened for reading and writing.
pub struct RedbStore {
    database: redb::Database,
    /// Set when a commit failed: what reached the disk is unknown, so no further write is tried.
    poisoned: AtomicBool,
}

impl RedbStore {
    /// Opens (or creates) the database file at `path` with the default page cache.
    pub fn open(path: &Path) -> Result<RedbStore, StorageError> {
        RedbStore::open_with_cache(path, CACHE_BYTES_DEFAULT)
    }

    /// Opens (or creates) the database file at `path` and makes sure every table exists.
    /// `cache_bytes` bounds redb's page cache, which is most of the process's memory.
    pub fn open_with_cache(path: &Path, cache_bytes: usize) -> Result<RedbStore, StorageError> {
        let database = redb::Database::builder()
            .set_cache_size(cache_bytes)
            .create(path)
            .map_err(|error| match error {
                redb::DatabaseError::Storage(redb::StorageError::Corrupted(message)) => {
                    StorageError::Corrupted(message)
                }
                redb::DatabaseError::DatabaseAlreadyOpen => {
                    StorageError::AlreadyOpen(path.display().to_string())
                }
                other => io(other),
            })?;
        let transaction = database.begin_write().map_err(io)?;
        for table in Table::ALL {
            transaction.open_table(definition(table)).map_err(io)?;
        }
        transaction.commit().map_err(io)?;
        Ok(RedbStore {
            database,
            poisoned: AtomicBool::new(false),
        })
    }
}

impl RedbStore {
    pub(crate) fn database(&self) -> &redb::Database {
        &self.database
    }
}

impl Storage for RedbStore {
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StorageError> {
        let transaction = self.database.begin_read().map_err(io)?;
        Ok(Box::new(RedbRead {
            transaction,
            tables: Default::default(),
        }))
    }

    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(StorageError::Poisoned);
        }
        let transaction = self.database.begin_write().map_err(io)?;
        Ok(Box::new(OverlayWrite::new(RedbBase {
            transaction,
            poisoned: &self.poisoned,
        })))
    }

    fn kind(&self) -> &'static str {
        "redb"
    }

    fn snapshots(&self) -> Option<&dyn Snapshots> {
        Some(self)
    }
}

type ReadTable = redb::ReadOnlyTable<&'static [u8], &'static [u8]>;

/// A snapshot; tables are opened on first use, since most requests touch one or two of them,
/// and kept (redb finds a table by name in its table tree, which cost a point read about 5 % of
/// its instructions when done on every call).
struct RedbRead {
    transaction: redb::ReadTransaction,
    tables: [OnceCell<ReadTable>; Table::ALL.len()],
}

impl RedbRead {
    fn table(&self, table: Table) -> Result<&ReadTable, StorageError> {
        let cell = &self.tables[table.index()];
        if let Some(opened) = cell.get() {
            return Ok(opened);
        }
        let opened = self.transaction.open_table(definition(table)).map_err(io)?;
        Ok(cell.get_or_init(|| opened))
    }
}

fn visit_all<'a, I>(entries: I, visit: Visit<'_>) -> Result<(), StorageError>
where
    I: Iterator<
        Item = Result<
            (
                redb::AccessGuard<'a, &'static [u8]>,
                redb::AccessGuard<'a, &'static [u8]>,
            ),
            redb::StorageError,
        >,
    >,
{
    for entry in entries {
        let (key, value) = entry.map_err(io)?;
        if visit(key.value(), value.value()).is_break() {
            break;
        }
    }
    Ok(())
}

impl ReadTxn for RedbRead {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        let found = self.table(table)?.get(key).map_err(io)?;
        Ok(found.map(|value| value.value().to_vec()))
    }

    fn scan(&self, table: Table, range: &KeyRange, visit: Visit<'_>) -> Result<(), StorageError> {
        if range.is_empty() {
            return Ok(());
        }
        let entries = self
            .table(table)?
            .range::<&[u8]>(range.as_slices())
            .map_err(io)?;
        visit_all(entries, visit)
    }

    fn scan_rev(
        &self,
        table: Table,
        range: &KeyRange,
        visit: Visit<'_>,
    ) -> Result<(), StorageError> {
        if range.is_empty() {
            return Ok(());
        }
        let entries = self
            .table(table)?
            .range::<&[u8]>(range.as_slices())
            .map_err(io)?;
        visit_all(entries.rev(), visit)
    }
}

/// The committed side of the write transaction. Writes wait in the overlay until commit, where
/// each table is opened once and each changed key written once (redb opens a table by name on
/// every call, and a group commit rewrites a container's counters many times).
struct RedbBase<'a> {
    transaction: redb::WriteTransaction,
    poisoned: &'a AtomicBool,
}

/// A redb value or key, readable as bytes while its guard lives.
struct Guarded<'a>(redb::AccessGuard<'a, &'static [u8]>);

impl AsRef<[u8]> for Guarded<'_> {
    fn as_ref(&self) -> &[u8] {
        self.0.value()
    }
}

type RedbEntry<'a> = Result<
    (
        redb::AccessGuard<'a, &'static [u8]>,
        redb::AccessGuard<'a, &'static [u8]>,
    ),
    redb::StorageError,
>;

fn guarded(entry: RedbEntry<'_>) -> BaseEntry<Guarded<'_>, Guarded<'_>> {
    entry
        .map(|(key, value)| (Guarded(key), Guarded(value)))
        .map_err(io)
}

impl Base for RedbBase<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        let opened = self.transaction.open_table(definition(table)).map_err(io)?;
        let found = opened.get(key).map_err(io)?;
        Ok(found.map(|value| value.value().to_vec()))
    }

    fn merged_scan(
        &self,
        overlay: &Overlay,
        table: Table,
        range: &KeyRange,
        reverse: bool,
        visit: Visit<'_>,
    ) -> Result<(), StorageError> {
        if range.is_empty() {
            return Ok(());
        }
        let opened = self.transaction.open_table(definition(table)).map_err(io)?;
        let entries = opened.range::<&[u8]>(range.as_slices()).map_err(io)?;
        let base: Box<dyn Iterator<Item = BaseEntry<Guarded<'_>, Guarded<'_>>>> = if reverse {
            Box::new(entries.rev().map(guarded))
        } else {
            Box::new(entries.map(guarded))
        };
        overlay.merged_scan(table, range, reverse, base, visit)
    }

    fn commit(self, overlay: Overlay) -> Result<(), StorageError> {
        let RedbBase {
            transaction,
            poisoned,
        } = self;
        for (table, changes) in overlay.into_tables() {
            if changes.is_empty() {
                continue;
            }
            let mut opened = transaction.open_table(definition(table)).map_err(io)?;
            // Keys arrive sorted, which keeps redb's copy-on-write pages hot.
            for (key, change) in changes {
                match change {
                    Some(value) => opened.insert(key.as_slice(), value.as_ref()).map(drop),
                    None => opened.remove(key.as_slice()).map(drop),
                }
                .map_err(io)?;
            }
        }
        transaction.commit().map_err(|error| {
            poisoned.store(true, Ordering::Release);
            tracing::error!(%error, "commit failed; refusing further writes until restart");
            io(error)
        })
    }
}
