//! Doors for named snapshots of the whole store, for tests: save the data a suite starts from,
//! return to it in an instant between tests. Each runs on the writer between groups
//! (`Writer::on_store`), so every write acknowledged before it is in the snapshot and none
//! acknowledged after it is lost by it; after a restore the cached container definitions (by
//! the writer, before it answers), parsed documents and decoded vectors are dropped, as they
//! may describe versions the store no longer has.
//! Backends that keep no snapshots (PostgreSQL) refuse with a message naming export/import.

use crate::engine::Engine;
use crate::error::{EngineError, EngineResult, ErrorCode};
use lethedb_storage::{Snapshots, Storage};
use std::sync::Arc;

/// The longest snapshot name.
const NAME_CHARS_MAX: usize = 128;

fn check_name(name: &str) -> EngineResult<()> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if name.is_empty() || name.len() > NAME_CHARS_MAX || !name.chars().all(allowed) {
        return Err(EngineError::with_message(
            ErrorCode::InvalidId,
            format!("A snapshot name is 1 to {NAME_CHARS_MAX} letters, digits, '-', '_' or '.'."),
        ));
    }
    Ok(())
}

fn unsupported(store: &dyn Storage) -> EngineError {
    EngineError::with_message(
        ErrorCode::InvalidDocument,
        format!(
            "The {} store keeps no snapshots; use `lethedb export` and a seed to start tests from the same data.",
            store.kind()
        ),
    )
}

impl Engine {
    /// Saves the store under `name`, replacing a snapshot of that name.
    pub async fn save_snapshot(&self, name: &str) -> EngineResult<()> {
        self.on_snapshots(name, |snapshots, name| Ok(snapshots.save(name)?))
            .await
    }

    /// Returns the store to the snapshot `name`; false when there is none.
    pub async fn restore_snapshot(&self, name: &str) -> EngineResult<bool> {
        check_name(name)?;
        let name = name.to_string();
        let written = Arc::clone(&self.inner.writer.written);
        let restored = self
            .inner
            .writer
            .on_store(move |store| {
                let snapshots = store.snapshots().ok_or_else(|| unsupported(store))?;
                // Before the next write: the LSNs a restored store gives out again may name
                // other versions than the cached ones.
                written.clear();
                let restored = snapshots.restore(&name)?;
                // A snapshot saved by an earlier release holds the change log's earlier layout.
                if restored {
                    crate::feed::log_layout::migrate(store)?;
                }
                Ok(restored)
            })
            .await?;
        if restored {
            self.inner.documents.clear();
            self.inner.vectors.clear();
        }
        Ok(restored)
    }

    /// Forgets the snapshot `name`; false when there was none.
    pub async fn delete_snapshot(&self, name: &str) -> EngineResult<bool> {
        self.on_snapshots(name, |snapshots, name| Ok(snapshots.delete(name)?))
            .await
    }

    /// The names of the saved snapshots, sorted.
    pub async fn snapshot_names(&self) -> EngineResult<Vec<String>> {
        self.on_snapshots("", |snapshots, _| Ok(snapshots.names()?))
            .await
    }

    /// Runs `operation` on the store's snapshots on the writer, between groups, after checking
    /// `name` (an empty one is the listing's, which names none).
    async fn on_snapshots<T, F>(&self, name: &str, operation: F) -> EngineResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Snapshots, &str) -> EngineResult<T> + Send + 'static,
    {
        if !name.is_empty() {
            check_name(name)?;
        }
        let name = name.to_string();
        self.inner
            .writer
            .on_store(move |store| {
                let snapshots = store.snapshots().ok_or_else(|| unsupported(store))?;
                operation(snapshots, &name)
            })
            .await
    }
}
