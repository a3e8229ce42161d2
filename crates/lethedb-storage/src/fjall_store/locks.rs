//! The in-process locks that keep the fjall store's write transactions apart: a store-wide
//! lock, taken shared by a transaction of some shards and exclusively by one that may write
//! anywhere (a catalog change, a purge across shards), and one lock per shard.
//!
//! A transaction of shards takes the store-wide lock shared, then all of its shards at once
//! (never one by one, so two transactions cannot each hold a shard the other waits for); the
//! locks are released when the guard is dropped, after the commit's sync. Nothing here reads
//! or writes the store.

use std::collections::BTreeSet;
use std::sync::{
    Condvar, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard,
};

/// The store's write locks.
#[derive(Default)]
pub(crate) struct Locks {
    /// Shared by transactions of shards, exclusive for a transaction that may write anywhere.
    /// `()` guards nothing but the turn, so a poisoned lock is simply taken again.
    store: RwLock<()>,
    /// The shards whose locks are held.
    held: Mutex<BTreeSet<u64>>,
    /// Signalled whenever shards are released.
    released: Condvar,
}

/// What a write transaction holds until it is committed or dropped.
pub(crate) enum Held<'a> {
    /// The store-wide lock, exclusively: no other write transaction runs.
    Store(#[allow(dead_code)] RwLockWriteGuard<'a, ()>),
    /// Some shards, beside the store-wide lock shared. The shards are released first (fields
    /// drop in order), then the store-wide lock.
    Shards(ShardGuard<'a>, #[allow(dead_code)] RwLockReadGuard<'a, ()>),
}

/// Shards held by one transaction; dropping it releases them.
pub(crate) struct ShardGuard<'a> {
    locks: &'a Locks,
    shards: Vec<u64>,
}

impl ShardGuard<'_> {
    /// The shards held, sorted.
    pub(crate) fn shards(&self) -> &[u64] {
        &self.shards
    }
}

impl Drop for ShardGuard<'_> {
    fn drop(&mut self) {
        let mut held = self.locks.held_set();
        for shard in &self.shards {
            held.remove(shard);
        }
        drop(held);
        self.locks.released.notify_all();
    }
}

impl Locks {
    /// Takes the store-wide lock exclusively, waiting for every transaction of shards.
    pub(crate) fn store(&self) -> Held<'_> {
        Held::Store(self.store.write().unwrap_or_else(PoisonError::into_inner))
    }

    /// Takes every one of `shards` (waiting until all are free), beside the store-wide lock.
    pub(crate) fn shards(&self, shards: &[u64]) -> Held<'_> {
        let store = self.store.read().unwrap_or_else(PoisonError::into_inner);
        let wanted = sorted(shards);
        let guard = self.take(wanted, false);
        Held::Shards(guard, store)
    }

    /// Takes those of `shards` that are free now; when none is, waits for them all.
    pub(crate) fn free_shards(&self, shards: &[u64]) -> Held<'_> {
        let store = self.store.read().unwrap_or_else(PoisonError::into_inner);
        let wanted = sorted(shards);
        let guard = self.take(wanted, true);
        Held::Shards(guard, store)
    }

    fn take(&self, wanted: Vec<u64>, free_only: bool) -> ShardGuard<'_> {
        let mut held = self.held_set();
        if free_only {
            let free: Vec<u64> = wanted
                .iter()
                .copied()
                .filter(|shard| !held.contains(shard))
                .collect();
            if !free.is_empty() {
                held.extend(free.iter().copied());
                return ShardGuard {
                    locks: self,
                    shards: free,
                };
            }
        }
        while wanted.iter().any(|shard| held.contains(shard)) {
            held = self
                .released
                .wait(held)
                .unwrap_or_else(PoisonError::into_inner);
        }
        held.extend(wanted.iter().copied());
        ShardGuard {
            locks: self,
            shards: wanted,
        }
    }

    fn held_set(&self) -> MutexGuard<'_, BTreeSet<u64>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn sorted(shards: &[u64]) -> Vec<u64> {
    let mut sorted = shards.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    sorted
}
