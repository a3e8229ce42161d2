//! Doors for the change feed: reading a page in either mode (a scan under the bound), and the
//! sweeper's periodic maintenance (TTL events due, retention), a writer job.

use crate::container::Container;
use crate::engine::Engine;
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::feed::change_feed::{
    ChangeFeedMode, ChangeFeedPage, ChangeFeedRequest, ChangeFeedStart,
};
use crate::feed::change_log;
use crate::records::writer_container;
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
        let number = container.key_number();
        let (indexed, ttl_due) = {
            let reader = self.inner.store.read()?;
            let state = change_log::read_state(&*reader, number)?;
            let now_ms = self.now_in(&*reader);
            let due = request.mode == ChangeFeedMode::AllVersionsAndDeletes
                && (change_log::ttl_events_pending(&*reader, container, now_ms)?
                    || change_log::trim_due(
                        &*reader,
                        container,
                        now_ms,
                        self.inner.change_log_retention_ms,
                    )?);
            (state.indexed, due)
        };
        let needs_index = request.mode == ChangeFeedMode::LatestVersion && !indexed;
        let (database_id, container_id) = (container.database_id.clone(), container.id.clone());
        if needs_index {
            self.inner
                .writer
                .write(move |context| {
                    let container = writer_container(context, &database_id, &container_id)?;
                    change_log::backfill_index(context, container.key_number())
                })
                .await?;
        }
        if ttl_due {
            // Every due event is in the log before the page is read.
            self.emit_due_ttl_events(vec![(container.database_id.clone(), container.id.clone())])
                .await?;
        }
        let container = Arc::clone(container);
        self.run_scan(move |engine| engine.read_change_feed_blocking(&container, &request))
            .await
    }

    /// Emits the TTL events that are due and trims logs past their retention, for every
    /// container, whether or not anyone reads (the sweeper's loop calls it every few hundred
    /// milliseconds; it draws on no request-unit budget). Returns how many containers it
    /// asked the writer to update.
    pub async fn maintain_change_feeds(&self) -> EngineResult<usize> {
        let containers = self.listed_containers().await?;
        let mut due = Vec::new();
        {
            let reader = self.inner.store.read()?;
            let now_ms = self.now_in(&*reader);
            for container in containers {
                if change_log::ttl_events_pending(&*reader, &container, now_ms)?
                    || change_log::trim_due(
                        &*reader,
                        &container,
                        now_ms,
                        self.inner.change_log_retention_ms,
                    )?
                {
                    due.push((container.database_id.clone(), container.id.clone()));
                }
            }
        }
        let count = due.len();
        self.emit_due_ttl_events(due).await?;
        Ok(count)
    }
}
