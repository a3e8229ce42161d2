//! Pending changes of a write transaction, kept in memory until commit, the merge that lets
//! reads through the transaction see them, and savepoints that undo the changes made since.
//!
//! Both backends buffer writes here: the in-memory one publishes them on commit; the redb one
//! applies them table by table just before its commit, opening each table once and writing a
//! key that changed several times (a container's counters, say) only once. Because every
//! pending change lives here, a savepoint needs only this overlay's own previous entries, never
//! a read of the committed store. This module knows nothing of either backend's storage.

use crate::api::{KeyRange, Savepoint, StorageError, Table, Visit};
use bytes::Bytes;
use std::collections::BTreeMap;

/// One table's pending changes: `None` marks a deletion. Values stay the buffers the caller
/// gave, so the in-memory backend keeps them as they are (shared where the caller shared them).
pub(crate) type Changes = BTreeMap<Vec<u8>, Option<Bytes>>;

/// What a change replaced in the overlay: `None` when the key had no pending change before.
type Previous = Option<Option<Bytes>>;

/// Every table's pending changes.
#[derive(Default)]
pub(crate) struct Overlay {
    tables: [Changes; Table::ALL.len()],
    /// While a savepoint is open, every change records what it replaced, newest last.
    journal: Vec<(Table, Vec<u8>, Previous)>,
    /// Savepoints taken and not yet released or rolled back to.
    open_savepoints: usize,
}

/// A pending change as a merged scan meets it.
type PendingEntry<'a> = (&'a Vec<u8>, &'a Option<Bytes>);

/// A committed entry a backend feeds into a merged scan.
pub(crate) type BaseEntry<K, V> = Result<(K, V), StorageError>;

impl Overlay {
    /// `Some(Some(v))`: written; `Some(None)`: deleted; `None`: unchanged here.
    pub(crate) fn get(&self, table: Table, key: &[u8]) -> Option<Option<Vec<u8>>> {
        self.tables[table.index()]
            .get(key)
            .map(|change| change.as_ref().map(|value| value.to_vec()))
    }

    pub(crate) fn put(&mut self, table: Table, key: &[u8], value: Bytes) {
        self.change(table, key, Some(value));
    }

    pub(crate) fn delete(&mut self, table: Table, key: &[u8]) {
        self.change(table, key, None);
    }

    fn change(&mut self, table: Table, key: &[u8], change: Option<Bytes>) {
        let previous = self.tables[table.index()].insert(key.to_vec(), change);
        if self.open_savepoints > 0 {
            self.journal.push((table, key.to_vec(), previous));
        }
    }

    /// Marks the current state so that [`Overlay::rollback_to`] can return to it. Savepoints
    /// nest: each must be released or rolled back to, innermost first.
    pub(crate) fn savepoint(&mut self) -> Savepoint {
        self.open_savepoints += 1;
        Savepoint {
            journal_len: self.journal.len(),
            depth: self.open_savepoints,
        }
    }

    /// Undoes every change made since `savepoint` was taken, and closes it.
    pub(crate) fn rollback_to(&mut self, savepoint: Savepoint) {
        debug_assert_eq!(savepoint.depth, self.open_savepoints, "savepoints nest");
        while self.journal.len() > savepoint.journal_len {
            let Some((table, key, previous)) = self.journal.pop() else {
                break;
            };
            let changes = &mut self.tables[table.index()];
            match previous {
                Some(change) => changes.insert(key, change),
                None => changes.remove(&key),
            };
        }
        self.close(savepoint);
    }

    /// Keeps the changes made since `savepoint` and closes it.
    pub(crate) fn release(&mut self, savepoint: Savepoint) {
        debug_assert_eq!(savepoint.depth, self.open_savepoints, "savepoints nest");
        self.close(savepoint);
    }

    fn close(&mut self, savepoint: Savepoint) {
        self.open_savepoints = savepoint.depth.saturating_sub(1);
        if self.open_savepoints == 0 {
            // Nothing can roll back past this point any more.
            self.journal.clear();
        }
    }

    pub(crate) fn into_tables(self) -> impl Iterator<Item = (Table, Changes)> {
        Table::ALL.into_iter().zip(self.tables)
    }

    /// Visits the committed entries (`base`, already limited to `range` and in scan order)
    /// merged with the pending changes, lazily, so a scan that stops early costs only what it
    /// visited.
    pub(crate) fn merged_scan<K, V>(
        &self,
        table: Table,
        range: &KeyRange,
        reverse: bool,
        base: Box<dyn Iterator<Item = BaseEntry<K, V>> + '_>,
        visit: Visit<'_>,
    ) -> Result<(), StorageError>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        if range.is_empty() {
            return Ok(());
        }
        let changes = self.tables[table.index()].range((range.start.clone(), range.end.clone()));
        let mut changes: Box<dyn Iterator<Item = PendingEntry<'_>>> = if reverse {
            Box::new(changes.rev())
        } else {
            Box::new(changes)
        };
        let mut base = base;
        let mut next_base = base.next().transpose()?;
        let mut next_change = changes.next();
        // `first` is true when key `a` comes before key `b` in the scan direction.
        let first = |a: &[u8], b: &[u8]| if reverse { a > b } else { a < b };
        loop {
            let flow = match (&next_base, next_change) {
                (None, None) => return Ok(()),
                (Some((key, value)), None) => {
                    let flow = visit(key.as_ref(), value.as_ref());
                    next_base = base.next().transpose()?;
                    flow
                }
                (Some((base_key, value)), Some((change_key, _)))
                    if first(base_key.as_ref(), change_key) =>
                {
                    let flow = visit(base_key.as_ref(), value.as_ref());
                    next_base = base.next().transpose()?;
                    flow
                }
                (base_entry, Some((change_key, change))) => {
                    if base_entry
                        .as_ref()
                        .is_some_and(|(base_key, _)| base_key.as_ref() == change_key.as_slice())
                    {
                        next_base = base.next().transpose()?;
                    }
                    next_change = changes.next();
                    match change {
                        Some(value) => visit(change_key, value),
                        None => continue,
                    }
                }
            };
            if flow.is_break() {
                return Ok(());
            }
        }
    }
}
