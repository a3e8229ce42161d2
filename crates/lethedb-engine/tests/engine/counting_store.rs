//! A store wrapper for tests that measure what a read costs: it counts the rows of the items
//! and counters tables that its snapshots read (scanned or got) and forwards everything else
//! to a memory store (or another store this process alone writes). Writes are not counted.

use lethedb_storage::{
    KeyRange, MemoryStore, ReadTxn, Storage, StorageError, Table, Visit, WriteTxn,
};
use std::sync::atomic::{AtomicU64, Ordering};

/// A store (memory unless told) that counts the items- and counters-table rows its
/// snapshots read (scanned or got).
pub struct CountingStore<S: Storage = MemoryStore> {
    inner: S,
    items_read: AtomicU64,
    counters_read: AtomicU64,
}

impl CountingStore {
    pub fn new() -> CountingStore {
        CountingStore::over(MemoryStore::new())
    }
}

impl<S: Storage> CountingStore<S> {
    /// Counts the reads of `inner`'s snapshots.
    pub fn over(inner: S) -> CountingStore<S> {
        CountingStore {
            inner,
            items_read: AtomicU64::new(0),
            counters_read: AtomicU64::new(0),
        }
    }

    /// The store it counts for, to read and write behind the count.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The items-table rows read since the last call.
    pub fn taken(&self) -> u64 {
        self.items_read.swap(0, Ordering::SeqCst)
    }

    /// The counters-table rows read since the last call.
    pub fn counters_taken(&self) -> u64 {
        self.counters_read.swap(0, Ordering::SeqCst)
    }
}

struct CountingRead<'a> {
    inner: Box<dyn ReadTxn + 'a>,
    items_read: &'a AtomicU64,
    counters_read: &'a AtomicU64,
}

impl CountingRead<'_> {
    fn count(&self, table: Table) {
        match table {
            Table::Items => self.items_read.fetch_add(1, Ordering::SeqCst),
            Table::Counters => self.counters_read.fetch_add(1, Ordering::SeqCst),
            _ => 0,
        };
    }
}

impl ReadTxn for CountingRead<'_> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.count(table);
        self.inner.get(table, key)
    }

    fn scan(&self, table: Table, range: &KeyRange, visit: Visit<'_>) -> Result<(), StorageError> {
        self.inner.scan(table, range, &mut |key, value| {
            self.count(table);
            visit(key, value)
        })
    }

    fn scan_rev(
        &self,
        table: Table,
        range: &KeyRange,
        visit: Visit<'_>,
    ) -> Result<(), StorageError> {
        self.inner.scan_rev(table, range, &mut |key, value| {
            self.count(table);
            visit(key, value)
        })
    }
}

impl<S: Storage> Storage for CountingStore<S> {
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StorageError> {
        Ok(Box::new(CountingRead {
            inner: self.inner.read()?,
            items_read: &self.items_read,
            counters_read: &self.counters_read,
        }))
    }

    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        self.inner.write()
    }

    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
}
