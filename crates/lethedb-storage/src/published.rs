//! A state that readers take as a whole and one writer changes: the in-memory store's
//! committed maps and the redb store's staged changes. A reader clones the `Arc` under a
//! short lock and reads on without one; a change either happens in place, when nobody but the
//! slot holds the state (readers arriving meanwhile wait for it), or on a shallow copy that is
//! then published in its place, so a reader keeps the state it began with. The states are
//! persistent maps, so a copy shares every node and a change copies only the nodes on its
//! paths, and in place not even those (a fifth of a durable create's instructions when every
//! commit copied, `bench/results/redb-flusher.md`).

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The published state.
#[derive(Default)]
pub(crate) struct Published<T>(RwLock<Arc<T>>);

impl<T: Clone> Published<T> {
    /// The readers' lock, for taking the state together with something else.
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Arc<T>> {
        // Replaced or changed in whole assignments, so whole after a panic elsewhere.
        self.0.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The writers' lock: readers wait until it is dropped.
    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, Arc<T>> {
        self.0.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state published now.
    pub(crate) fn get(&self) -> Arc<T> {
        Arc::clone(&self.read())
    }

    /// Replaces the state with `change` of the one published now.
    pub(crate) fn replace(&self, change: impl FnOnce(&T) -> T) {
        let mut guard = self.write();
        *guard = Arc::new(change(&guard));
    }

    /// Changes the state with `change`, for its one writer. `held` is the writer's own copy of
    /// the `Arc` (from [`Published::get`] or a snapshot), given up here: when nobody else
    /// holds the state, the change happens in place under the writers' lock (the count is only
    /// a hint, taken without that lock; `Arc::get_mut` decides under it). Otherwise `held` is
    /// copied and changed without a lock, and `publish` makes what is published of the copy
    /// and of the state published meanwhile (which someone else may have replaced).
    pub(crate) fn change<R>(
        &self,
        mut held: Arc<T>,
        change: impl FnOnce(&mut T) -> R,
        publish: impl FnOnce(T, &T) -> T,
    ) -> R {
        // The writer's copy and the slot's.
        if Arc::strong_count(&held) <= 2 {
            drop(held);
            let mut guard = self.write();
            if let Some(state) = Arc::get_mut(&mut guard) {
                return change(state);
            }
            held = Arc::clone(&guard);
        }
        let mut next = (*held).clone();
        drop(held);
        let result = change(&mut next);
        self.replace(|now| publish(next, now));
        result
    }
}
