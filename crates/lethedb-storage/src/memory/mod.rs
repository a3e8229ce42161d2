//! The in-memory backend: ordered maps behind a lock, for tests and `--in-memory` servers.
//!
//! The maps are persistent B-trees (`imbl::OrdSet` of entries ordered by key): a snapshot is a
//! clone that shares every node, and a commit copies only the paths to the keys it changes.
//! Each entry is one thin pointer to its key and value (`entry.rs`), so a copied node clones
//! pointers, never bytes, and a leaf of sixteen entries is a 160-byte allocation. (Plain `BTreeMap`s behind an `Arc` had to be copied whole
//! whenever a reader still held the old ones at commit: with reads and writes mixed, every
//! commit copied the store.) The write transaction buffers its changes in an overlay and
//! publishes them on commit. Nothing here survives the process.

use crate::api::{KeyRange, ReadTxn, Snapshots, Storage, StorageError, Table, Visit, WriteTxn};
use crate::overlay::{BaseEntry, Overlay};
use crate::published::Published;
use crate::write_txn::{Base, OverlayWrite};
use entry::Entry;
use imbl::OrdSet;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

pub(crate) mod entry;

type Map = OrdSet<Entry>;
type Tables = [Map; Table::ALL.len()];

/// A store that lives only as long as the process.
#[derive(Default)]
pub struct MemoryStore {
    committed: Published<Tables>,
    /// Named snapshots, with the order they were saved in: the maps as they were, sharing
    /// every node with the live ones.
    saved: Mutex<BTreeMap<String, (u64, Arc<Tables>)>>,
}

impl MemoryStore {
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn saved(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (u64, Arc<Tables>)>> {
        self.saved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn snapshot(&self) -> Arc<Tables> {
        self.committed.get()
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

    fn kind(&self) -> &'static str {
        "memory"
    }

    fn snapshots(&self) -> Option<&dyn Snapshots> {
        Some(self)
    }
}

/// A snapshot is a clone of the maps' roots: it costs nothing until writes diverge from it.
impl Snapshots for MemoryStore {
    fn save(&self, name: &str) -> Result<(), StorageError> {
        let tables = self.snapshot();
        let mut saved = self.saved();
        let order = saved
            .values()
            .map(|(order, _)| order + 1)
            .max()
            .unwrap_or(0);
        saved.insert(name.to_string(), (order, tables));
        Ok(())
    }

    fn restore(&self, name: &str) -> Result<bool, StorageError> {
        let mut saved = self.saved();
        let Some((order, tables)) = saved.get(name).cloned() else {
            return Ok(false);
        };
        // As on the durable store, the snapshots saved after this one go with the state.
        saved.retain(|_, (kept, _)| *kept <= order);
        *self.committed.write() = tables;
        Ok(true)
    }

    fn delete(&self, name: &str) -> Result<bool, StorageError> {
        Ok(self.saved().remove(name).is_some())
    }

    fn names(&self) -> Result<Vec<String>, StorageError> {
        Ok(self.saved().keys().cloned().collect())
    }
}

struct MemoryRead {
    tables: Arc<Tables>,
}

fn scan_map(
    map: &Map,
    range: &KeyRange,
    reverse: bool,
    visit: Visit<'_>,
) -> Result<(), StorageError> {
    if range.is_empty() {
        return Ok(());
    }
    let entries = map.range::<_, [u8]>(range.as_slices());
    let mut step = |entry: &Entry| visit(entry.key(), entry.value());
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
        Ok(self.tables[table.index()]
            .get(key)
            .map(|entry| entry.value().to_vec()))
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

/// An entry as a merged scan takes it.
fn pair(entry: &Entry) -> BaseEntry<&[u8], &[u8]> {
    Ok((entry.key(), entry.value()))
}

/// The committed side of the write transaction: the maps as of its start.
struct MemoryBase<'a> {
    store: &'a MemoryStore,
    tables: Arc<Tables>,
}

impl Base for MemoryBase<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.tables[table.index()]
            .get(key)
            .map(|entry| entry.value().to_vec()))
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
        let entries = self.tables[table.index()].range::<_, [u8]>(range.as_slices());
        let base: Box<dyn Iterator<Item = BaseEntry<&[u8], &[u8]>>> = if reverse {
            Box::new(entries.rev().map(pair))
        } else {
            Box::new(entries.map(pair))
        };
        overlay.merged_scan(table, range, reverse, base, visit)
    }

    fn commit(self, overlay: Overlay) -> Result<(), StorageError> {
        let MemoryBase { store, tables } = self;
        // The transaction's snapshot is the committed state: the store has one writer.
        store
            .committed
            .change(tables, |tables| apply(tables, overlay), |next, _| next);
        Ok(())
    }
}

/// Puts a transaction's changes into `tables`.
fn apply(tables: &mut Tables, overlay: Overlay) {
    for (table, changes) in overlay.into_tables() {
        let map = &mut tables[table.index()];
        for (key, change) in changes {
            match change {
                Some(value) => {
                    map.insert(Entry::new(&key, &value));
                }
                None => {
                    map.remove::<[u8]>(&key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MemoryStore;
    use crate::snapshot_test::{
        check_in_place_only_while_unread, check_readers_see_whole_commits_while_committing,
    };
    use std::sync::Arc;

    #[test]
    fn commits_change_the_maps_in_place_only_while_no_reader_holds_them() {
        let store = MemoryStore::new();
        check_in_place_only_while_unread(&store, &|| Arc::as_ptr(&store.snapshot()) as usize);
    }

    #[test]
    fn readers_on_other_threads_see_whole_commits_while_the_maps_change() {
        check_readers_see_whole_commits_while_committing(&MemoryStore::new());
    }
}
