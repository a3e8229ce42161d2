//! The transaction as one writer job sees it (`WriteContext`): reads that see the group's
//! earlier changes, writes, savepoints, and what the writer learns afterwards (a storage
//! failure, a catalog change); and how a job runs inside its savepoint.
//!
//! It does not group, commit or answer jobs: that is the writer thread (`mod.rs`).

/// What a job hands back after applying: called with the commit's outcome.
use crate::container::Container;
use crate::error::{EngineError, EngineResult};
use crate::items::document_cache::DocumentCache;
use crate::poison::panic_message;
use crate::scan_visit::{try_scan_with, TryVisit};
use lethedb_storage::{Bytes, KeyRange, ReadTxn, Savepoint, StorageError, Table, Visit, WriteTxn};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

pub(super) type Finish = Box<dyn FnOnce(EngineResult<()>) + Send>;

/// What applying a job produced: whether its operation succeeded (if not, the writer rolls its
/// changes back) and what to call with the commit's outcome.
pub(super) struct Applied {
    pub(super) succeeded: bool,
    pub(super) finish: Finish,
}

/// A job's operation, run by the writer on the group's transaction.
pub(super) type ApplyJob = Box<dyn FnOnce(&mut WriteContext<'_>) -> Applied + Send>;

/// One container's number, an LSN, and its change-log positions: item key suffix to log key.
pub(crate) type LsnPositions = (u64, u64, HashMap<Vec<u8>, Vec<u8>>);

/// A savepoint of the transaction, and how many written LSNs were noted when it was taken.
pub struct ContextSavepoint {
    store: Savepoint,
    written_lsns: usize,
}

/// The transaction as an operation sees it, plus what the writer needs to know afterwards.
pub struct WriteContext<'a> {
    pub(super) txn: Box<dyn WriteTxn + 'a>,
    /// The instant every operation of this group is stamped with.
    pub now_ms: i64,
    /// Containers parsed during this and earlier groups; cleared on catalog changes.
    pub(crate) containers: HashMap<(String, String), Arc<Container>>,
    /// While a transactional batch runs, the one LSN all of its writes take (the service gives
    /// a batch one LSN); `None` otherwise.
    pub(crate) pinned_lsn: Option<u64>,
    /// How long the change log keeps entries when a container's policy says nothing.
    pub(crate) change_log_retention_default_ms: i64,
    /// The change log's next sequence number under one LSN of one container, as the last
    /// append left it: a transaction that writes thousands of entries under one LSN (a stored
    /// procedure) appends each in constant time. A hint, checked before use (`feed/change_log.rs`).
    pub(crate) change_log_next: Option<(u64, u64, u32)>,
    /// The change-log positions under one LSN of one container that holds many entries (a
    /// stored procedure's or a batch's), by item key suffix, as the last scan of it found
    /// them: a transaction that replaces many items written under one LSN finds each position
    /// without scanning the LSN again. A hint, checked before use (`feed/change_log.rs`).
    pub(crate) change_log_positions: Option<LsnPositions>,
    /// The LSN of every counters row the transaction wrote, with its container's number, in
    /// order (a savepoint's rollback cuts the list back with the writes): what the commit
    /// raises the session sequences by.
    pub(super) written_lsns: Vec<(u64, u64)>,
    /// The documents of committed versions, by item key and LSN, that a write of the same item
    /// may take instead of parsing its old version (`Writer::written`).
    pub(crate) written: Arc<DocumentCache>,
    pub(super) catalog_changed: bool,
    pub(super) failure: Option<StorageError>,
}

impl WriteContext<'_> {
    fn note<T>(&mut self, result: Result<T, StorageError>) -> EngineResult<T> {
        result.map_err(|error| {
            let engine_error = EngineError::from(&error);
            self.failure.get_or_insert(error);
            engine_error
        })
    }

    pub fn get(&mut self, table: Table, key: &[u8]) -> EngineResult<Option<Vec<u8>>> {
        let result = self.txn.get(table, key);
        self.note(result)
    }

    /// Whether this transaction itself holds `key` (written and not deleted since), without
    /// asking the store: for keys no committed transaction can hold (see
    /// [`lethedb_storage::WriteTxn::own_change`]).
    pub(crate) fn holds_own(&self, table: Table, key: &[u8]) -> bool {
        matches!(self.txn.own_change(table, key), Some(Some(_)))
    }

    pub fn scan(&mut self, table: Table, range: &KeyRange, visit: Visit<'_>) -> EngineResult<()> {
        let result = self.txn.scan(table, range, visit);
        self.note(result)
    }

    /// Like [`WriteContext::scan`], with a visitor that may fail (`?` inside it): its first
    /// error ends the scan and becomes the scan's error.
    pub(crate) fn try_scan(
        &mut self,
        table: Table,
        range: &KeyRange,
        visit: TryVisit<'_>,
    ) -> EngineResult<()> {
        try_scan_with(|plain| self.scan(table, range, plain), visit)
    }

    pub fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> EngineResult<()> {
        let result = self.txn.put(table, key, value);
        self.note(result)
    }

    /// [`WriteContext::put`] of a buffer the caller has already encoded, handed over without
    /// the copy `put` makes (`WriteTxn::put_bytes`).
    pub(crate) fn put_bytes(&mut self, table: Table, key: &[u8], value: Bytes) -> EngineResult<()> {
        let result = self.txn.put_bytes(table, key, value);
        self.note(result)
    }

    pub fn delete(&mut self, table: Table, key: &[u8]) -> EngineResult<()> {
        let result = self.txn.delete(table, key);
        self.note(result)
    }

    /// Marks the transaction's current state (nested inside the writer's own savepoint around
    /// the job), for a transactional batch that must undo its earlier operations.
    pub fn savepoint(&mut self) -> ContextSavepoint {
        ContextSavepoint {
            store: self.txn.savepoint(),
            written_lsns: self.written_lsns.len(),
        }
    }

    /// Undoes every change made since `savepoint`.
    pub fn rollback_to(&mut self, savepoint: ContextSavepoint) {
        self.txn.rollback_to(savepoint.store);
        self.written_lsns.truncate(savepoint.written_lsns);
    }

    /// Keeps the changes made since `savepoint`.
    pub fn release(&mut self, savepoint: ContextSavepoint) {
        self.txn.release(savepoint.store);
    }

    /// Notes that the transaction wrote a counters row of container `number` with `lsn`.
    pub(crate) fn note_written_lsn(&mut self, number: u64, lsn: u64) {
        self.written_lsns.push((number, lsn));
    }

    /// The transaction for read-only helpers shared with snapshot readers.
    pub fn reader(&self) -> &dyn ReadTxn {
        &*self.txn
    }

    /// Marks that databases or containers changed: cached definitions are dropped.
    pub fn catalog_changed(&mut self) {
        self.catalog_changed = true;
        self.containers.clear();
    }

    /// Applies one job inside a savepoint: kept if it succeeded, rolled back if it failed.
    /// A panic is returned as its message; the transaction must then be dropped.
    pub(super) fn apply(&mut self, apply: ApplyJob) -> Result<Finish, String> {
        let savepoint = self.savepoint();
        let changed_before = self.catalog_changed;
        match catch_unwind(AssertUnwindSafe(|| apply(self))) {
            Ok(Applied {
                succeeded: true,
                finish,
            }) => {
                self.release(savepoint);
                Ok(finish)
            }
            Ok(Applied {
                succeeded: false,
                finish,
            }) => {
                self.rollback_to(savepoint);
                if self.catalog_changed && !changed_before {
                    // Definitions cached from the undone changes must not outlive them.
                    self.containers.clear();
                }
                Ok(finish)
            }
            Err(payload) => Err(panic_message(&*payload)),
        }
    }
}
