//! A container's storage usage: items and bytes, with expired items excluded even before the
//! sweeper has deleted them.
//!
//! Reads the counters and walks the expired part of the expiry index (expiry.rs); it writes
//! nothing and does not decide what expired means.

use crate::container::{Container, Usage};
use crate::engine::Engine;
use crate::error::EngineResult;
use crate::expiry::visit_expired;
use crate::records::{read_counters, ExpiryEntry};
use std::ops::ControlFlow;

impl Engine {
    /// Like [`Engine::container_usage`], but for frequent observers (metrics scrapes): when the
    /// sweeper last saw a large backlog, the expired share is estimated from its count instead
    /// of walked, so a scrape during a mass expiry stays cheap.
    pub fn container_usage_estimate(&self, container: &Container) -> EngineResult<Usage> {
        /// Backlogs up to this size are walked exactly.
        const EXACT_BACKLOG_MAX: u64 = 10_000;
        let backlog = self
            .sweep_stats()
            .into_iter()
            .find(|s| s.database_id == container.database_id && s.container_id == container.id)
            .map_or(0, |s| s.backlog_items);
        if backlog <= EXACT_BACKLOG_MAX {
            return self.container_usage_blocking(container);
        }
        let reader = self.inner.store.read()?;
        let counters = read_counters(&*reader, container.key_number())?;
        let items = counters.items.saturating_sub(backlog);
        let bytes = if counters.items == 0 {
            0
        } else {
            (u128::from(counters.bytes) * u128::from(items) / u128::from(counters.items)) as u64
        };
        Ok(Usage {
            items,
            bytes,
            lsn: counters.lsn,
        })
    }

    /// Items and bytes a container holds, expired items excluded even before the sweeper has
    /// deleted them. Costs one read of the counters plus a walk over the expired backlog.
    pub(crate) fn container_usage_blocking(&self, container: &Container) -> EngineResult<Usage> {
        let reader = self.inner.store.read()?;
        let counters = read_counters(&*reader, container.key_number())?;
        let mut expired_items = 0u64;
        let mut expired_bytes = 0u64;
        visit_expired(
            &*reader,
            container,
            self.now_ms(),
            &mut |_, entry: ExpiryEntry| {
                expired_items += 1;
                expired_bytes += entry.body_bytes;
                ControlFlow::Continue(())
            },
        )?;
        Ok(Usage {
            items: counters.items.saturating_sub(expired_items),
            bytes: counters.bytes.saturating_sub(expired_bytes),
            lsn: counters.lsn,
        })
    }
}
