//! Named snapshots of the durable store, on redb's persistent savepoints: saving one records
//! the committed state in an instant (copy-on-write: pages shared until writes diverge), and
//! restoring one returns the whole file to it in one commit.
//!
//! The names live in a table of their own, `snapshots` (name → savepoint id), which the
//! savepoints capture too: a restore brings back the names as they were when the snapshot was
//! saved, so the snapshots saved after it are gone (redb invalidates them anyway) and the one
//! restored is saved again, fresh, so that it can be restored again. While a snapshot exists,
//! the pages it holds are not freed: the file grows by what changed since.

use crate::api::{Snapshots, StorageError};
use crate::redb_layout::{self, io};
use crate::redb_store::RedbStore;
use redb::{ReadableDatabase, ReadableTable, TableDefinition};

const NAMES: TableDefinition<'static, &'static str, u64> = TableDefinition::new("snapshots");

impl RedbStore {
    /// The savepoint id saved under `name`, as last committed.
    fn snapshot_id(&self, name: &str) -> Result<Option<u64>, StorageError> {
        let read = self.shared().database.begin_read().map_err(io)?;
        let names = match read.open_table(NAMES) {
            Ok(names) => names,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(error) => return Err(io(error)),
        };
        let id = names.get(name).map_err(io)?.map(|id| id.value());
        Ok(id)
    }
}

impl Snapshots for RedbStore {
    fn save(&self, name: &str) -> Result<(), StorageError> {
        let shared = self.shared();
        let _exclusive = shared.exclusive();
        // A savepoint records what redb has committed, so the staged changes go into it first.
        let settle = shared.database.begin_write().map_err(io)?;
        shared.checkpoint_staged(settle, &mut shared.redo())?;
        let write = shared.database.begin_write().map_err(io)?;
        // First, while the transaction is clean, as redb requires.
        let id = write.persistent_savepoint().map_err(io)?;
        let replaced = {
            let mut names = write.open_table(NAMES).map_err(io)?;
            let replaced = names.insert(name, id).map_err(io)?;
            replaced.map(|old| old.value())
        };
        if let Some(old) = replaced {
            write.delete_persistent_savepoint(old).map_err(io)?;
        }
        shared.checkpoint_staged(write, &mut shared.redo())
    }

    fn restore(&self, name: &str) -> Result<bool, StorageError> {
        let Some(id) = self.snapshot_id(name)? else {
            return Ok(false);
        };
        // Through a checkpoint: the redo log's records and the staged changes are of the state
        // left behind and must never be replayed or read over the one restored.
        self.shared().replace_state(|write| {
            let savepoint = write.get_persistent_savepoint(id).map_err(io)?;
            write.restore_savepoint(&savepoint).map_err(io)?;
            // A snapshot saved by a release before the current item layout restores that layout.
            redb_layout::prepare(write)
        })?;
        // The state restored predates the savepoint's own name: save it again under it.
        self.save(name)?;
        Ok(true)
    }

    fn delete(&self, name: &str) -> Result<bool, StorageError> {
        let shared = self.shared();
        let _exclusive = shared.exclusive();
        let write = shared.database.begin_write().map_err(io)?;
        let removed = {
            let mut names = write.open_table(NAMES).map_err(io)?;
            let removed = names.remove(name).map_err(io)?;
            removed.map(|id| id.value())
        };
        if let Some(id) = removed {
            write.delete_persistent_savepoint(id).map_err(io)?;
        }
        shared.checkpoint_staged(write, &mut shared.redo())?;
        Ok(removed.is_some())
    }

    fn names(&self) -> Result<Vec<String>, StorageError> {
        let read = self.shared().database.begin_read().map_err(io)?;
        let names = match read.open_table(NAMES) {
            Ok(names) => names,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(error) => return Err(io(error)),
        };
        let mut all = Vec::new();
        for entry in names.iter().map_err(io)? {
            let (name, _) = entry.map_err(io)?;
            all.push(name.value().to_string());
        }
        Ok(all)
    }
}
