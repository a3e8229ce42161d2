//! The in-memory backend: ordered maps behind a lock, for tests and `--in-memory` servers.
//!
//! Snapshots share the committed maps through an `Arc`; the write transaction buffers its changes
//! in an overlay and publishes them on commit (copying the maps only if a snapshot still holds the
//! old ones). Nothing here survives the process.

use crate::overlay::{BaseEntry, Overlay};
use crate::write_txn::{Base, OverlayWrite};
use crate::{KeyRange, ReadTxn, Storage, StorageError, Table, Visit, WriteTxn};
use std::collections::BTreeMap;

use std::sync::{Arc, RwLock};

type Tables = [BTreeMap<Vec<u8>, Vec<u8>>; Table::ALL.len()];

/// A store that lives only as long as the process.
#[derive(Default)]
pub struct MemoryStore {
    committed: RwLock<Arc<Tables>>,
}

impl MemoryStore {
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn snapshot(&self) -> Arc<Tables> {
        // A poisoned lock only means a panic elsewhere; the maps themselves are always whole
        // because they are swapped in one assignment.
        match self.committed.read() {
            Ok(guard) => Arc::clone(&guard),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }
}

impl Storage for MemoryStore {
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StorageError> {
        Ok(Box::new(MemoryRead {
            tables: self.snapshot(),
        }))
    }

    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        Ok(Box::new(OverlayWrite::new(MemoryBase {
            store: self,
            tables: self.snapshot(),
        })))
    }
}

struct MemoryRead {
    tables: Arc<Tables>,
}

fn scan_map(
    map: &BTreeMap<Vec<u8>, Vec<u8>>,
    range: &KeyRange,
    reverse: bool,
    visit: Visit<'_>,
) -> Result<(), StorageError> {
    if range.is_empty() {
        return Ok(());
    }
    let entries = map.range((range.start.clone(), range.end.clone()));
    let mut step = |(key, value): (&Vec<u8>, &Vec<u8>)| visit(key, value);
    if reverse {
        for entry in entries.rev() {
            if step(entry).is_break() {
                break;
            }
        }
    } else {
        for entry in entries {
            if step(entry).is_break() {
                break;
            }
        }
    }
    Ok(())
}

impl ReadTxn for MemoryRead {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.tables[table.index()].get(key).cloned())
    }

    fn scan(&self, table: Table, range: &KeyRange, visit: Visit<'_>) -> Result<(), StorageError> {
        scan_map(&self.tables[table.index()], range, false, visit)
    }

    fn scan_rev(
        &self,
        table: Table,
        range: &KeyRange,
        visit: Visit<'_>,
    ) -> Result<(), StorageError> {
        scan_map(&self.tables[table.index()], range, true, visit)
    }
}

/// The committed side of the write transaction: the maps as of its start.
struct MemoryBase<'a> {
    store: &'a MemoryStore,
    tables: Arc<Tables>,
}

impl Base for MemoryBase<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.tables[table.index()].get(key).cloned())
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
        let entries = self.tables[table.index()].range((range.start.clone(), range.end.clone()));
        let base: Box<dyn Iterator<Item = BaseEntry<&Vec<u8>, &Vec<u8>>>> = if reverse {
            Box::new(entries.rev().map(Ok))
        } else {
            Box::new(entries.map(Ok))
        };
        overlay.merged_scan(table, range, reverse, base, visit)
    }

    fn commit(self, overlay: Overlay) -> Result<(), StorageError> {
        let MemoryBase { store, tables } = self;
        // Drop our own reference first so that make_mut copies only if a reader holds the maps.
        drop(tables);
        let mut guard = match store.committed.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let tables = Arc::make_mut(&mut guard);
        for (table, changes) in overlay.into_tables() {
            for (key, change) in changes {
                match change {
                    Some(value) => tables[table.index()].insert(key, value),
                    None => tables[table.index()].remove(&key),
                };
            }
        }
        Ok(())
    }
}
