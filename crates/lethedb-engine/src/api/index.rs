//! Doors for index rebuilds after a policy change: one turn of the background builder (writer
//! jobs) and the progress of a container's rebuild (a fast path: two point reads). The check of
//! a container's index against its items is with the queries (`api/queries.rs`).

use crate::container::Container;
use crate::engine::Engine;
use crate::error::EngineResult;
use crate::index::builder::progress_percent;

impl Engine {
    /// Runs one batch of every running index rebuild (at most `batch_items_max` versions each).
    /// Returns how many versions were rebuilt and whether any rebuild still has work left.
    pub async fn build_indexes_once(&self, batch_items_max: usize) -> EngineResult<(u64, bool)> {
        let containers = self.listed_containers().await?;
        let mut rebuilt = 0;
        let mut more = false;
        for container in containers.iter().filter(|c| !c.index_ready()) {
            let (batch, left) = self
                .build_container_index(container, batch_items_max)
                .await?;
            rebuilt += batch;
            more |= left;
        }
        Ok((rebuilt, more))
    }

    /// How far the rebuild of a container's index after a policy change has come, in percent
    /// (`x-ms-documentdb-collection-index-transformation-progress`): 100 when none runs.
    pub fn index_transformation_progress(&self, container: &Container) -> EngineResult<u8> {
        if container.index_ready() {
            return Ok(100);
        }
        let reader = self.inner.store.read()?;
        progress_percent(&*reader, container)
    }
}
