//! A container's index rebuilt in the background after its indexing policy changed (the
//! service's "index transformation"), in the manner of FoundationDB's Record Layer online
//! indexer: the change, committed with the container, records the earlier policy beside the new
//! one and resets a cursor; from then on every write leaves its item with exactly the new
//! policy's entries, clearing whatever an earlier policy gave its old version
//! (`index/maintain.rs`), while the builder walks the container's stored versions in key
//! order, in bounded writer jobs, rebuilding each one the same way and keeping its cursor and
//! progress in the same transaction, so a restart resumes where the last committed batch
//! stopped. The batch that passes the last item drops the earlier policies: from that commit
//! on the index holds the current policy's entries only, and queries may use it again.
//!
//! Changing the mode to `none` is the same walk towards a policy with no entries (the index is
//! dropped); back to `consistent`, towards the full one. This module decides when a rebuild
//! starts and ends and walks it; the sweeper's loop paces it (`ttl/sweeper.rs`), on the RUs
//! users left over, as it paces deletions.

use crate::container::Container;
use crate::counters::read_container_counters;
use crate::engine::Engine;
use crate::error::{corrupted, EngineResult};
use crate::index::maintain::{replace_entries, VersionRef};
use crate::index::policy::indexed_policy;
use crate::keys;
use crate::records::{
    load_container, read_index_build, store_container, store_index_build, writer_container,
    IndexBuild, ItemRecord,
};
use crate::throughput::request_units;
use crate::writer::WriteContext;
use lethedb_storage::{KeyRange, ReadTxn, Table};
use serde_json::Value;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

/// The least RU allowance a batch starts with: below it the builder waits for the next second.
const BUILD_ALLOWANCE_MIN_RU: f64 = 1.0;

/// The index definition a container's replace leaves, with `new_policy` as its indexing policy
/// (as `index::policy::indexed_policy` gives it, full-text languages written in):
/// unchanged when the policy is; otherwise the next generation, with the policies whose entries
/// items may still hold (the one replaced and those a running rebuild had not finished
/// replacing), and the builder's state reset in the same transaction. A container without
/// stored versions has no entries to rebuild: its new policy holds at once.
pub(crate) fn start_transformation(
    context: &mut WriteContext<'_>,
    existing: &Container,
    new_policy: &Value,
) -> EngineResult<(Vec<Value>, u64)> {
    let current = indexed_policy(&existing.resource);
    let kept = existing.earlier_index_policies.sources.clone();
    if &current == new_policy {
        return Ok((kept, existing.index_generation));
    }
    let number = existing.key_number();
    let total = read_container_counters(context.reader(), existing)?.items;
    let mut earlier: Vec<Value> = Vec::new();
    if total > 0 {
        for policy in kept.into_iter().chain([current]) {
            if &policy != new_policy && !earlier.contains(&policy) {
                earlier.push(policy);
            }
        }
    }
    let generation = existing.index_generation + 1;
    let state = IndexBuild {
        generation,
        cursor: None,
        built: 0,
        total,
    };
    store_index_build(context, number, &state)?;
    Ok((earlier, generation))
}

/// Whether a query reading `reader` may use the index of `container`: no rebuild runs in its
/// definition, and the snapshot holds that same definition (a container resolved before a
/// policy change committed would otherwise read entries of a policy it does not know).
pub(crate) fn index_ready_in(reader: &dyn ReadTxn, container: &Container) -> EngineResult<bool> {
    if !container.index_ready() {
        return Ok(false);
    }
    let generation =
        read_index_build(reader, container.key_number())?.map_or(0, |state| state.generation);
    Ok(generation == container.index_generation)
}

/// How far the rebuild of `container`'s index has come, in percent: 100 when none runs, else
/// the share of stored versions it has rebuilt, below 100 until it is done.
pub(crate) fn progress_percent(reader: &dyn ReadTxn, container: &Container) -> EngineResult<u8> {
    if container.index_ready() {
        return Ok(100);
    }
    let Some(state) = read_index_build(reader, container.key_number())? else {
        return Ok(0);
    };
    let share = state.built.saturating_mul(100) / state.total.max(1);
    Ok(share.min(99) as u8)
}

/// What one batch of the builder did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct BuildStep {
    /// Stored versions rebuilt.
    pub(crate) rebuilt: u64,
    /// What they cost.
    pub(crate) spent_ru: f64,
    /// Whether the rebuild is over (or there was none).
    pub(crate) finished: bool,
}

/// One batch of the builder, inside the writer: rebuilds the entries of at most `items_max`
/// stored versions after the cursor, stopping early once `allowance_ru` is spent, and moves
/// the cursor past them; the batch that reaches the end drops the earlier policies.
pub(crate) fn build_batch(
    context: &mut WriteContext<'_>,
    database_id: &str,
    container_id: &str,
    items_max: usize,
    allowance_ru: f64,
) -> EngineResult<BuildStep> {
    // Re-read: the policy may have changed again since the builder looked.
    let container = writer_container(context, database_id, container_id)?;
    if container.index_ready() {
        return Ok(BuildStep {
            finished: true,
            ..BuildStep::default()
        });
    }
    let number = container.key_number();
    let mut state = match read_index_build(context.reader(), number)? {
        Some(state) if state.generation == container.index_generation => state,
        // A container stored before items kept index entries has no build state: its first
        // build starts here (`records::ContainerRecord::index_format`).
        None if container.index_generation == 0 => IndexBuild {
            generation: 0,
            cursor: None,
            built: 0,
            total: read_container_counters(context.reader(), &container)?.items,
        },
        _ => return Err(corrupted("index build state")),
    };
    let versions = versions_after(context, number, state.cursor.as_deref(), items_max)?;
    let mut step = BuildStep::default();
    for (key, record) in &versions {
        if step.spent_ru >= allowance_ru {
            break;
        }
        let version = VersionRef {
            record,
            document: None,
        };
        let changes = replace_entries(context, &container, Some(version), Some(version))?;
        step.spent_ru += request_units::index_rebuild(record.body.len(), changes.terms());
        step.rebuilt += 1;
        state.cursor = Some(keys::item_key_suffix(key).to_vec());
    }
    state.built += step.rebuilt;
    if versions.len() < items_max && step.rebuilt == versions.len() as u64 {
        finish(context, database_id, container_id, &mut state)?;
        step.finished = true;
    }
    store_index_build(context, number, &state)?;
    Ok(step)
}

/// At most `items_max` stored versions (visible or expired: entries leave with the version) of
/// container `number` after the item key suffix `cursor`, in key order.
fn versions_after(
    context: &mut WriteContext<'_>,
    number: u64,
    cursor: Option<&[u8]>,
    items_max: usize,
) -> EngineResult<Vec<(Vec<u8>, ItemRecord)>> {
    let prefix = keys::container_items_prefix(number);
    let mut range = KeyRange::prefix(&prefix);
    if let Some(cursor) = cursor {
        range.start = Bound::Excluded(keys::item_key_from_suffix(number, cursor));
    }
    let mut versions = Vec::new();
    if items_max == 0 {
        return Ok(versions);
    }
    context.try_scan(Table::Items, &range, &mut |key, value| {
        let record = ItemRecord::decode(value).ok_or_else(|| corrupted("item"))?;
        versions.push((key.to_vec(), record));
        Ok(if versions.len() >= items_max {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        })
    })?;
    Ok(versions)
}

/// Ends a rebuild: the container keeps only its current policy, stored in the same
/// transaction as the last batch, and the cursor is cleared.
fn finish(
    context: &mut WriteContext<'_>,
    database_id: &str,
    container_id: &str,
    state: &mut IndexBuild,
) -> EngineResult<()> {
    let stored = load_container(context.reader(), database_id, container_id)?
        .ok_or_else(|| corrupted("container"))?;
    let generation = stored.index_generation;
    store_container(context, &stored.with_index(Vec::new(), generation))?;
    state.cursor = None;
    Ok(())
}

impl Engine {
    /// Runs one batch of `container`'s rebuild, if one runs, within what users left of its
    /// budget last second (no limit without provisioned throughput), and charges it there as
    /// the sweeper's work. Returns how many versions it rebuilt and whether more remain.
    pub(crate) async fn build_container_index(
        &self,
        container: &Arc<Container>,
        batch_items_max: usize,
    ) -> EngineResult<(u64, bool)> {
        if container.index_ready() {
            return Ok((0, false));
        }
        let budget = self.budget_of(container);
        let allowance_ru = match budget {
            Some((key, budget_ru)) => {
                let now_ms = self.now_ms();
                self.inner.budgets.sweeper_allowance(key, budget_ru, now_ms)
            }
            None => f64::INFINITY,
        };
        if allowance_ru < BUILD_ALLOWANCE_MIN_RU {
            return Ok((0, true));
        }
        let (database_id, container_id) = (container.database_id.clone(), container.id.clone());
        let step = self
            .inner
            .writer
            .write(move |context| {
                build_batch(
                    context,
                    &database_id,
                    &container_id,
                    batch_items_max,
                    allowance_ru,
                )
            })
            .await?;
        if let Some((key, budget_ru)) = budget {
            if step.spent_ru > 0.0 {
                let now_ms = self.now_ms();
                self.inner
                    .budgets
                    .charge_sweeper(key, budget_ru, step.spent_ru, now_ms);
            }
        }
        Ok((step.rebuilt, !step.finished))
    }
}
