//! The write transaction every backend (redb, PostgreSQL, memory) shares: reads see the
//! committed base merged with the overlay of pending changes, writes go only to the overlay,
//! savepoints undo the overlay, and commit hands the overlay to the backend.
//!
//! A backend supplies only its committed side ([`Base`]): how to read a key, how to feed its
//! entries into a merged scan, and how to make an overlay durable. It does not decide anything
//! about pending changes.

use crate::api::{KeyRange, ReadTxn, Savepoint, StorageError, Table, Visit, WriteTxn};
use crate::overlay::Overlay;
use bytes::Bytes;

/// The committed side of a write transaction.
pub(crate) trait Base {
    /// The committed value of `key`, ignoring pending changes.
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError>;
    /// Visits the committed entries of `range` merged with `overlay` (see
    /// [`Overlay::merged_scan`]), in descending order when `reverse`.
    fn merged_scan(
        &self,
        overlay: &Overlay,
        table: Table,
        range: &KeyRange,
        reverse: bool,
        visit: Visit<'_>,
    ) -> Result<(), StorageError>;
    /// Applies the overlay and makes it durable; `Ok` means a crash cannot lose it.
    fn commit(self, overlay: Overlay) -> Result<(), StorageError>;
    /// See [`ReadTxn::store_now_ms`].
    fn store_now_ms(&self) -> Option<i64> {
        None
    }
    /// See [`ReadTxn::catalog_epoch`].
    fn catalog_epoch(&self) -> Option<u64> {
        None
    }
}

/// A write transaction over a backend's committed base.
pub(crate) struct OverlayWrite<B> {
    base: B,
    overlay: Overlay,
}

impl<B: Base> OverlayWrite<B> {
    pub(crate) fn new(base: B) -> OverlayWrite<B> {
        OverlayWrite {
            base,
            overlay: Overlay::default(),
        }
    }
}

impl<B: Base> ReadTxn for OverlayWrite<B> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        match self.overlay.get(table, key) {
            Some(change) => Ok(change),
            None => self.base.get(table, key),
        }
    }

    fn scan(&self, table: Table, range: &KeyRange, visit: Visit<'_>) -> Result<(), StorageError> {
        self.base
            .merged_scan(&self.overlay, table, range, false, visit)
    }

    fn scan_rev(
        &self,
        table: Table,
        range: &KeyRange,
        visit: Visit<'_>,
    ) -> Result<(), StorageError> {
        self.base
            .merged_scan(&self.overlay, table, range, true, visit)
    }

    fn store_now_ms(&self) -> Option<i64> {
        self.base.store_now_ms()
    }

    fn catalog_epoch(&self) -> Option<u64> {
        self.base.catalog_epoch()
    }
}

impl<B: Base> WriteTxn for OverlayWrite<B> {
    fn put_bytes(&mut self, table: Table, key: &[u8], value: Bytes) -> Result<(), StorageError> {
        self.overlay.put(table, key, value);
        Ok(())
    }

    fn delete(&mut self, table: Table, key: &[u8]) -> Result<(), StorageError> {
        self.overlay.delete(table, key);
        Ok(())
    }

    fn own_change(&self, table: Table, key: &[u8]) -> Option<Option<Vec<u8>>> {
        self.overlay.get(table, key)
    }

    fn savepoint(&mut self) -> Savepoint {
        self.overlay.savepoint()
    }

    fn rollback_to(&mut self, savepoint: Savepoint) {
        self.overlay.rollback_to(savepoint);
    }

    fn release(&mut self, savepoint: Savepoint) {
        self.overlay.release(savepoint);
    }

    fn commit(self: Box<Self>) -> Result<(), StorageError> {
        let OverlayWrite { base, overlay } = *self;
        base.commit(overlay)
    }
}
