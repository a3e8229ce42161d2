//! A container's storage usage: items and bytes, with expired items excluded even before the
//! sweeper has deleted them; and the same per partition key range, when asked.
//!
//! Reads the counters and walks the expired part of the expiry index (expiry.rs); it writes
//! nothing and does not decide what expired means.

use crate::container::{Container, Usage};
use crate::counters::read_container_counters;
use crate::engine::Engine;
use crate::error::{corrupted, EngineResult};
use crate::keys;
use crate::partitions::partition_key::PartitionKeyValue;
use crate::records::{ExpiryEntry, ItemRecord};
use crate::scan_visit::try_scan;
use crate::ttl::expiry::{is_expired, visit_expired};
use lethedb_storage::{KeyRange, Table};
use std::ops::ControlFlow;
use std::sync::Arc;

impl Engine {
    /// Items and bytes a container holds, expired items excluded even before the sweeper has
    /// deleted them. Costs one read of the counters plus a walk over the expired backlog.
    pub(crate) fn container_usage_blocking(&self, container: &Container) -> EngineResult<Usage> {
        let reader = self.inner.store.read()?;
        let counters = read_container_counters(&*reader, container)?;
        let mut expired_items = 0u64;
        let mut expired_bytes = 0u64;
        visit_expired(
            &*reader,
            container,
            self.now_in(&*reader),
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

    /// Per partition key range: visible items, their bytes, and how many distinct partition
    /// keys they have. Walks every item of the container, so only for callers that ask
    /// (`x-ms-documentdb-populatepartitionstatistics`).
    pub(crate) fn range_statistics_blocking(
        &self,
        container: &Container,
    ) -> EngineResult<Vec<RangeStatistics>> {
        let mut statistics: Vec<RangeStatistics> = container
            .ranges
            .ranges
            .iter()
            .map(|range| RangeStatistics {
                id: range.id,
                ..RangeStatistics::default()
            })
            .collect();
        let reader = self.inner.store.read()?;
        let now_ms = self.now_in(&*reader);
        let prefix = keys::container_items_prefix(container.key_number());
        let mut last_partition: Vec<u8> = Vec::new();
        let mut owner = 0usize;
        try_scan(
            &*reader,
            Table::Items,
            &KeyRange::prefix(&prefix),
            &mut |key, value| {
                let (last_modified_ms, _, ttl) =
                    ItemRecord::decode_header(value).ok_or_else(|| corrupted("item"))?;
                if is_expired(container, last_modified_ms, ttl, now_ms) {
                    return Ok(ControlFlow::Continue(()));
                }
                let partition = keys::partition_bytes(key).unwrap_or_default();
                let new_partition =
                    partition != last_partition.as_slice() || last_partition.is_empty();
                if new_partition {
                    let value = PartitionKeyValue::decode(partition)
                        .unwrap_or(PartitionKeyValue(Vec::new()));
                    let id = container.range_of(&value);
                    owner = statistics.iter().position(|s| s.id == id).unwrap_or(0);
                    last_partition.clear();
                    last_partition.extend_from_slice(partition);
                }
                if let Some(entry) = statistics.get_mut(owner) {
                    entry.items += 1;
                    entry.bytes += value.len() as u64;
                    entry.distinct_partition_keys += u64::from(new_partition);
                }
                Ok(ControlFlow::Continue(()))
            },
        )?;
        Ok(statistics)
    }
}

/// What one partition key range holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RangeStatistics {
    pub id: u32,
    pub items: u64,
    pub bytes: u64,
    pub distinct_partition_keys: u64,
}

impl Engine {
    /// Every container of every database.
    pub(crate) fn all_containers_blocking(&self) -> EngineResult<Vec<Arc<Container>>> {
        let mut found = Vec::new();
        for database in self.list_databases_blocking()? {
            let Some(database_id) = database.get("id").and_then(|v| v.as_str()) else {
                continue;
            };
            for container in self.list_containers_blocking(database_id)? {
                if let Some(container_id) = container.get("id").and_then(|v| v.as_str()) {
                    found.push(self.read_container(database_id, container_id)?);
                }
            }
        }
        Ok(found)
    }

    /// Like [`Engine::container_usage`], but for frequent observers (metrics scrapes): when the
    /// sweeper last saw a large backlog, the expired share is estimated from its count instead
    /// of walked, so a scrape during a mass expiry stays cheap.
    pub(crate) fn container_usage_estimate_blocking(
        &self,
        container: &Container,
    ) -> EngineResult<Usage> {
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
        let counters = read_container_counters(&*reader, container)?;
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
}
