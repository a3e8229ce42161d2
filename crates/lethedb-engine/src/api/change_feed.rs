//! Doors for the change feed: reading a page in either mode (a scan under the bound), and the
//! sweeper's periodic maintenance (TTL events due, retention), a writer job.

use crate::container::Container;
use crate::engine::Engine;
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::feed::change_feed::{
    ChangeFeedMode, ChangeFeedPage, ChangeFeedRequest, ChangeFeedStart,
};
use crate::partitions::ranges::RangeFilter;
use std::sync::Arc;

impl Engine {
    /// One page of a container's change feed.
    pub async fn read_change_feed(
        &self,
        container: &Arc<Container>,
        request: ChangeFeedRequest,
    ) -> EngineResult<ChangeFeedPage> {
        if request.mode == ChangeFeedMode::AllVersionsAndDeletes
            && matches!(
                request.start,
                ChangeFeedStart::Beginning | ChangeFeedStart::PointInTime { .. }
            )
        {
            return Err(EngineError::new(ErrorCode::ChangeFeedOutsideRetention));
        }
        if request.mode == ChangeFeedMode::AllVersionsAndDeletes {
            // Every event due in the read's shards is in the log before the page is read.
            let scope = container.shards_in(&request.filter);
            self.emit_due_ttl_events(container, &scope, false).await?;
        }
        let container = Arc::clone(container);
        self.run_scan(move |engine| engine.read_change_feed_blocking(&container, &request))
            .await
    }

    /// Emits the TTL events that are due and trims logs past their retention, for every
    /// container, whether or not anyone reads (the sweeper's loop calls it every few hundred
    /// milliseconds; it draws on no request-unit budget), shard by shard. Returns how many
    /// containers it asked the writer to update.
    pub async fn maintain_change_feeds(&self) -> EngineResult<usize> {
        let containers = self.listed_containers().await?;
        // Every container's plan from one snapshot: an idle pass is one read transaction.
        let mut planned = Vec::new();
        {
            let reader = self.inner.store.read()?;
            let now_ms = self.now_in(&*reader);
            for container in containers {
                let every = container.shards_in(&RangeFilter::everything());
                let plan = self.plan_ttl_events(&*reader, &container, &every, now_ms, true)?;
                if !plan.shards.is_empty() {
                    planned.push((container, every, plan));
                }
            }
        }
        let count = planned.len();
        for (container, every, plan) in planned {
            if self.apply_ttl_plans(&container, plan.shards).await? && plan.more {
                self.emit_due_ttl_events(&container, &every, true).await?;
            }
        }
        Ok(count)
    }
}
