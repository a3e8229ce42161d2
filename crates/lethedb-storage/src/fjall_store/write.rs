//! The fjall store's write transaction: its committed side ([`Base`]) reads a snapshot taken
//! once the transaction's locks were held, and its commit appends the overlay as one fjall
//! batch, waits for the shared sync that covers it, and only then releases the locks.
//!
//! Because a transaction's locks are released only after its sync, the next transaction of the
//! same shards (or any transaction, after one that held the store-wide lock) reads only what is
//! durable. The pending changes, savepoints and merged reads are the shared `write_txn.rs`.

use super::locks::Held;
use super::store::{snapshot_get, snapshot_range, storage_error, FjallStore};
use crate::api::{KeyRange, StorageError, Table, Visit, WriteTxn};
use crate::overlay::{BaseEntry, Overlay};
use crate::write_txn::{Base, OverlayWrite};
use std::sync::atomic::Ordering;

/// fjall refuses (by panicking) an empty key and one longer than this.
const KEY_BYTES_MAX: usize = u16::MAX as usize;

/// The committed side of a write transaction, and the locks it holds until it ends.
pub(super) struct FjallBase<'a> {
    store: &'a FjallStore,
    snapshot: fjall::Snapshot,
    /// The catalog epoch as the transaction began (after its locks were held).
    catalog_epoch: u64,
    held: Held<'a>,
}

impl<'a> FjallBase<'a> {
    /// A transaction under `held`, reading the store as it is now.
    pub(super) fn begin(store: &'a FjallStore, held: Held<'a>) -> Box<dyn WriteTxn + 'a> {
        Box::new(OverlayWrite::new(FjallBase {
            store,
            snapshot: store.database.snapshot(),
            catalog_epoch: store.catalog_epoch.load(Ordering::SeqCst),
            held,
        }))
    }
}

/// Fills one fjall batch with every pending change; says whether the catalog changed. A key
/// fjall would refuse fails the commit before anything is appended.
fn fill_batch(
    store: &FjallStore,
    overlay: Overlay,
) -> Result<(fjall::OwnedWriteBatch, bool), StorageError> {
    let mut batch = store.database.batch();
    let mut catalog_changed = false;
    for (table, changes) in overlay.into_tables() {
        if changes.is_empty() {
            continue;
        }
        catalog_changed |= table == Table::Catalog;
        let keyspace = store.keyspace(table);
        for (key, change) in changes {
            if key.is_empty() || key.len() > KEY_BYTES_MAX {
                return Err(StorageError::Io(format!(
                    "a key of {} bytes cannot be stored (1 to {KEY_BYTES_MAX})",
                    key.len()
                )));
            }
            match change {
                Some(value) => batch.insert(keyspace, key, Vec::from(value)),
                None => batch.remove(keyspace, key),
            }
        }
    }
    Ok((batch, catalog_changed))
}

impl Base for FjallBase<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        snapshot_get(self.store, &self.snapshot, table, key)
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
        let entries = snapshot_range(self.store, &self.snapshot, table, range);
        let pairs = |entry: fjall::Guard| -> BaseEntry<fjall::Slice, fjall::Slice> {
            entry.into_inner().map_err(storage_error)
        };
        let base: Box<dyn Iterator<Item = BaseEntry<fjall::Slice, fjall::Slice>>> = if reverse {
            Box::new(entries.rev().map(pairs))
        } else {
            Box::new(entries.map(pairs))
        };
        overlay.merged_scan(table, range, reverse, base, visit)
    }

    fn commit(self, overlay: Overlay) -> Result<(), StorageError> {
        let FjallBase { store, held, .. } = self;
        if store.poisoned.load(Ordering::Acquire) {
            return Err(StorageError::Poisoned);
        }
        let (batch, catalog_changed) = fill_batch(store, overlay)?;
        if batch.is_empty() {
            return Ok(());
        }
        batch
            .commit()
            .map_err(|error| store.poison("a journal append", storage_error(error)))?;
        if catalog_changed {
            // Before the locks are released: the next transaction of any lane sees the new
            // epoch and drops the definitions it cached.
            store.catalog_epoch.fetch_add(1, Ordering::SeqCst);
        }
        store
            .gate
            .sync_after_append(|| store.sync())
            .map_err(|error| store.poison("a journal sync", error))?;
        drop(held);
        Ok(())
    }

    fn catalog_epoch(&self) -> Option<u64> {
        Some(self.catalog_epoch)
    }
}
