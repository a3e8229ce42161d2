//! The in-memory backend: ordered maps behind a lock, for tests and `--in-memory` servers.
//!
//! Snapshots share the committed maps through an `Arc`; the write transaction buffers its changes
//! in an overlay and publishes them on commit (copying the maps only if a snapshot still holds the
//! old ones). Nothing here survives the process.

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
        Ok(Box::new(MemoryWrite {
            store: self,
            base: self.snapshot(),
            overlay: Default::default(),
        }))
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

/// Pending changes of one table: `None` marks a deletion.
type Overlay = [BTreeMap<Vec<u8>, Option<Vec<u8>>>; Table::ALL.len()];

struct MemoryWrite<'a> {
    store: &'a MemoryStore,
    base: Arc<Tables>,
    overlay: Overlay,
}

impl MemoryWrite<'_> {
    /// Merges the committed map and the overlay lazily, in either direction, so a scan that
    /// stops early costs only what it visited.
    fn merged_scan(
        &self,
        table: Table,
        range: &KeyRange,
        reverse: bool,
        visit: Visit<'_>,
    ) -> Result<(), StorageError> {
        if range.is_empty() {
            return Ok(());
        }
        let bounds = (range.start.clone(), range.end.clone());
        let base = self.base[table.index()].range(bounds.clone());
        let overlay = self.overlay[table.index()].range(bounds);
        type Entries<'i, V> = Box<dyn Iterator<Item = (&'i Vec<u8>, V)> + 'i>;
        let (mut base, mut overlay): (Entries<&Vec<u8>>, Entries<&Option<Vec<u8>>>) = if reverse {
            (Box::new(base.rev()), Box::new(overlay.rev()))
        } else {
            (Box::new(base), Box::new(overlay))
        };
        let mut next_base = base.next();
        let mut next_overlay = overlay.next();
        // `first` is true when key `a` comes before key `b` in the scan direction.
        let first = |a: &[u8], b: &[u8]| if reverse { a > b } else { a < b };
        loop {
            let (key, value): (&[u8], &[u8]) = match (next_base, next_overlay) {
                (None, None) => return Ok(()),
                (Some((key, value)), None) => {
                    next_base = base.next();
                    (key, value)
                }
                (Some((base_key, value)), Some((overlay_key, _)))
                    if first(base_key, overlay_key) =>
                {
                    next_base = base.next();
                    (base_key, value)
                }
                (base_entry, Some((overlay_key, change))) => {
                    if base_entry.is_some_and(|(base_key, _)| base_key == overlay_key) {
                        next_base = base.next();
                    }
                    next_overlay = overlay.next();
                    match change {
                        Some(value) => (overlay_key, value),
                        None => continue,
                    }
                }
            };
            if visit(key, value).is_break() {
                return Ok(());
            }
        }
    }
}

impl ReadTxn for MemoryWrite<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        match self.overlay[table.index()].get(key) {
            Some(change) => Ok(change.clone()),
            None => Ok(self.base[table.index()].get(key).cloned()),
        }
    }

    fn scan(&self, table: Table, range: &KeyRange, visit: Visit<'_>) -> Result<(), StorageError> {
        self.merged_scan(table, range, false, visit)
    }

    fn scan_rev(
        &self,
        table: Table,
        range: &KeyRange,
        visit: Visit<'_>,
    ) -> Result<(), StorageError> {
        self.merged_scan(table, range, true, visit)
    }
}

impl WriteTxn for MemoryWrite<'_> {
    fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<(), StorageError> {
        self.overlay[table.index()].insert(key.to_vec(), Some(value.to_vec()));
        Ok(())
    }

    fn delete(&mut self, table: Table, key: &[u8]) -> Result<(), StorageError> {
        self.overlay[table.index()].insert(key.to_vec(), None);
        Ok(())
    }

    fn commit(self: Box<Self>) -> Result<(), StorageError> {
        let MemoryWrite {
            store,
            base,
            overlay,
        } = *self;
        // Drop our own reference first so that make_mut copies only if a reader holds the maps.
        drop(base);
        let mut guard = match store.committed.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let tables = Arc::make_mut(&mut guard);
        for (index, changes) in overlay.into_iter().enumerate() {
            for (key, change) in changes {
                match change {
                    Some(value) => tables[index].insert(key, value),
                    None => tables[index].remove(&key),
                };
            }
        }
        Ok(())
    }
}
