//! Doors for time to live: starting the background sweeper, one sweep on demand, its
//! statistics (memory), and a container's TTL overview from its expiry index (a scan under the
//! bound).

use crate::container::Container;
use crate::engine::Engine;
use crate::error::EngineResult;
use crate::ttl::expiry::TtlOverview;
use crate::ttl::sweep_stats::{SweepStats, SweeperConfig};
use crate::ttl::sweeper::{run, SweeperHandle};
use std::sync::Arc;
use tokio::sync::Notify;

impl Engine {
    /// A container's time-to-live figures (the "expiring soon" histogram, the unswept
    /// backlog, the sweeper's rate) and, with `proposed`, what that `defaultTtl` would expire.
    /// Counts walk the expiry index only, each capped (`expiry::TTL_COUNT_ENTRIES_MAX`).
    pub async fn ttl_overview(
        &self,
        container: &Arc<Container>,
        proposed: Option<Option<i64>>,
    ) -> EngineResult<TtlOverview> {
        let container = Arc::clone(container);
        self.run_scan(move |engine| engine.ttl_overview_blocking(&container, proposed))
            .await
    }

    /// Runs one turn: at most one batch per container. Returns how many items were deleted and
    /// whether any container still has a backlog.
    pub async fn sweep_once(&self, batch_items_max: usize) -> EngineResult<(u64, bool)> {
        let containers = self.listed_containers().await?;
        let mut deleted = 0;
        let mut backlog_left = false;
        for container in containers {
            let (batch_deleted, more) = self.sweep_container(&container, batch_items_max).await?;
            deleted += batch_deleted;
            backlog_left |= more;
        }
        Ok((deleted, backlog_left))
    }

    /// The sweeper's statistics for every container it has visited.
    pub fn sweep_stats(&self) -> Vec<SweepStats> {
        match self.inner.sweep_stats.stats.lock() {
            Ok(stats) => stats.values().cloned().collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Runs the sweeper on the current tokio runtime until its handle is stopped or dropped.
    pub fn start_sweeper(&self, config: SweeperConfig) -> SweeperHandle {
        let stop = Arc::new(Notify::new());
        let task = tokio::spawn(run(self.clone(), config, Arc::clone(&stop)));
        SweeperHandle {
            stop,
            task: Some(task),
        }
    }
}
