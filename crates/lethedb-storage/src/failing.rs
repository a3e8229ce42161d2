//! A storage wrapper that fails on purpose, for tests: the Nth put, or the Nth commit, answers
//! an I/O error, so the engine's handling of storage failures can be tested against a model. It
//! can also panic on the Nth put (a bug in the code calling it, as the engine must survive) and
//! hold commits until released (a slow disk, to fill the queues in front of it).
//!
//! A failed put changes nothing. A failed commit makes nothing of its transaction durable and,
//! like a failed fsync on the durable backend, poisons the store: every later write transaction
//! is refused with [`StorageError::Poisoned`], while reads keep seeing the last durable state.
//! This module decides nothing else; it forwards every other call to the wrapped store.

use crate::api::{
    FlushStats, KeyRange, ReadTxn, Savepoint, Storage, StorageError, Table, Visit, WriteTxn,
};
use bytes::Bytes;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

/// Which calls fail: counted from 1 over the store's whole life; `None` never fails.
#[derive(Clone, Copy, Debug, Default)]
pub struct FaultPlan {
    pub fail_put: Option<u64>,
    pub fail_commit: Option<u64>,
    /// The put that panics instead of answering.
    pub panic_put: Option<u64>,
}

/// A store whose puts and commits fail as planned.
pub struct FailingStore<S> {
    inner: S,
    plan: FaultPlan,
    puts: AtomicU64,
    commits: AtomicU64,
    poisoned: AtomicBool,
    failures: AtomicU64,
    /// While true, commits wait (see [`FailingStore::hold_commits`]).
    held: Mutex<bool>,
    released: Condvar,
}

impl<S: Storage> FailingStore<S> {
    pub fn new(inner: S, plan: FaultPlan) -> FailingStore<S> {
        FailingStore {
            inner,
            plan,
            puts: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            poisoned: AtomicBool::new(false),
            failures: AtomicU64::new(0),
            held: Mutex::new(false),
            released: Condvar::new(),
        }
    }

    /// Makes every commit wait until [`FailingStore::release_commits`], like a stalled disk.
    pub fn hold_commits(&self) {
        *self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
    }

    /// Lets held and later commits proceed.
    pub fn release_commits(&self) {
        *self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = false;
        self.released.notify_all();
    }

    fn wait_while_held(&self) {
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while *held {
            held = self
                .released
                .wait(held)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// How many injected failures have happened so far.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::SeqCst)
    }

    /// Counts a call and says whether it is the planned failure.
    fn strikes(&self, counter: &AtomicU64, planned: Option<u64>) -> bool {
        let count = counter.fetch_add(1, Ordering::SeqCst) + 1;
        let hit = planned == Some(count);
        if hit {
            self.failures.fetch_add(1, Ordering::SeqCst);
        }
        hit
    }
}

fn injected(what: &str) -> StorageError {
    StorageError::Io(format!("injected failure of a {what}"))
}

impl<S: Storage> Storage for FailingStore<S> {
    fn read(&self) -> Result<Box<dyn ReadTxn + '_>, StorageError> {
        self.inner.read()
    }

    fn write(&self) -> Result<Box<dyn WriteTxn + '_>, StorageError> {
        if self.poisoned.load(Ordering::SeqCst) {
            return Err(StorageError::Poisoned);
        }
        Ok(Box::new(FailingWrite {
            inner: self.inner.write()?,
            store: self,
        }))
    }

    fn is_shared(&self) -> bool {
        self.inner.is_shared()
    }

    fn concurrent_shard_writes(&self) -> bool {
        self.inner.concurrent_shard_writes()
    }

    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn flush_stats(&self) -> Option<FlushStats> {
        self.inner.flush_stats()
    }
}

struct FailingWrite<'a, S> {
    inner: Box<dyn WriteTxn + 'a>,
    store: &'a FailingStore<S>,
}

impl<S: Storage> ReadTxn for FailingWrite<'_, S> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.get(table, key)
    }

    fn scan(&self, table: Table, range: &KeyRange, visit: Visit<'_>) -> Result<(), StorageError> {
        self.inner.scan(table, range, visit)
    }

    fn scan_rev(
        &self,
        table: Table,
        range: &KeyRange,
        visit: Visit<'_>,
    ) -> Result<(), StorageError> {
        self.inner.scan_rev(table, range, visit)
    }

    fn store_now_ms(&self) -> Option<i64> {
        self.inner.store_now_ms()
    }

    fn catalog_epoch(&self) -> Option<u64> {
        self.inner.catalog_epoch()
    }
}

impl<S: Storage> WriteTxn for FailingWrite<'_, S> {
    fn put_bytes(&mut self, table: Table, key: &[u8], value: Bytes) -> Result<(), StorageError> {
        let store = self.store;
        let count = store.puts.fetch_add(1, Ordering::SeqCst) + 1;
        if store.plan.panic_put == Some(count) {
            store.failures.fetch_add(1, Ordering::SeqCst);
            // On purpose: the engine must survive a bug below it without a silent stop.
            panic!("injected panic on put {count}");
        }
        if store.plan.fail_put == Some(count) {
            store.failures.fetch_add(1, Ordering::SeqCst);
            return Err(injected("put"));
        }
        self.inner.put_bytes(table, key, value)
    }

    fn delete(&mut self, table: Table, key: &[u8]) -> Result<(), StorageError> {
        self.inner.delete(table, key)
    }

    fn own_change(&self, table: Table, key: &[u8]) -> Option<Option<Vec<u8>>> {
        self.inner.own_change(table, key)
    }

    fn savepoint(&mut self) -> Savepoint {
        self.inner.savepoint()
    }

    fn rollback_to(&mut self, savepoint: Savepoint) {
        self.inner.rollback_to(savepoint);
    }

    fn release(&mut self, savepoint: Savepoint) {
        self.inner.release(savepoint);
    }

    fn commit(self: Box<Self>) -> Result<(), StorageError> {
        let FailingWrite { inner, store } = *self;
        store.wait_while_held();
        if store.strikes(&store.commits, store.plan.fail_commit) {
            // Dropping the inner transaction aborts it: nothing of it becomes durable.
            drop(inner);
            store.poisoned.store(true, Ordering::SeqCst);
            return Err(injected("commit"));
        }
        inner.commit()
    }
}
