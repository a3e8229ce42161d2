//! The journal sync the fjall store's write transactions share: a transaction whose batch is in
//! the journal waits until a sync that began after its append has returned, and starts one
//! itself when none is running. One sync then covers every batch appended before it, whichever
//! transaction (lane) appended it.
//!
//! fjall appends a batch and syncs its journal under the journal's one mutex, so a sync per
//! transaction would make every lane wait for every other lane's fsync in turn; shared, they
//! wait for at most two. The gate knows nothing of fjall: it is handed the sync to run.

use crate::api::StorageError;
use std::sync::{Condvar, Mutex, PoisonError};

/// Counts syncs begun and returned, so a waiter knows whether one that covers it is done.
#[derive(Default)]
pub(crate) struct SyncGate {
    state: Mutex<GateState>,
    done: Condvar,
}

#[derive(Default)]
struct GateState {
    /// How many syncs have begun.
    started: u64,
    /// The number of the last sync that returned successfully.
    finished: u64,
    running: bool,
}

impl SyncGate {
    /// Returns once a sync that began after this call has succeeded (running `sync` itself
    /// when no sync is running), or with the error of the sync this caller ran. A failed sync
    /// covers nobody: the next waiter runs another, which fails too on a poisoned journal.
    pub(crate) fn sync_after_append(
        &self,
        sync: impl Fn() -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        // A sync running now may have begun before the caller's append: only the next counts.
        let covering = state.started + 1;
        loop {
            if state.finished >= covering {
                return Ok(());
            }
            if !state.running {
                state.running = true;
                state.started += 1;
                let number = state.started;
                drop(state);
                let synced = sync();
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                state.running = false;
                if synced.is_ok() {
                    state.finished = state.finished.max(number);
                }
                drop(state);
                self.done.notify_all();
                return synced;
            }
            state = self
                .done
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}
