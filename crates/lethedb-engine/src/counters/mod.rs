//! A container's counters, one row per shard (`partitions/shards.rs`): the items and bytes it
//! stores, its LSN and its latest document number, changed in the same transaction as its
//! items, and the shard's change-feed marks (`FeedMarks`: how far its TTL events were emitted
//! and its log trimmed), which only a job under the shard's own lock moves. A write touches only its own shard's row, so writes to different shards never share
//! one. What a whole container counts is the sum over its shards ([`read_container_counters`]).
//!
//! Nothing here decides what a write counts; the item rooms do.

use crate::container::Container;
use crate::error::{corrupted, EngineResult};
use crate::keys;
use crate::partitions::shards::{sequence, Shard};
use crate::scan_visit::try_scan;
use crate::writer::WriteContext;
use lethedb_storage::{KeyRange, ReadTxn, Table};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::ops::ControlFlow;

pub(crate) mod row;

pub use row::{Counters, FeedMarks};

/// Reads one shard's counters.
pub(crate) fn read_counters(
    reader: &dyn ReadTxn,
    container: &Container,
    shard: Shard,
) -> EngineResult<Counters> {
    decode_counters(
        reader.get(Table::Counters, &container.counters_key(shard))?,
        shard,
    )
}

/// A shard's stored counter bytes, if any, as its counters.
pub(crate) fn decode_counters(bytes: Option<Vec<u8>>, shard: Shard) -> EngineResult<Counters> {
    match bytes {
        None => Ok(Counters::empty(shard)),
        Some(bytes) => Counters::decode(&bytes).ok_or_else(|| corrupted("counter")),
    }
}

/// One shard's counters inside the writer: as the group or an earlier group of the lane last
/// wrote them, when the lane keeps them (`writer/kept_counters.rs`), else read through the
/// transaction.
pub(crate) fn counters_in(
    context: &WriteContext<'_>,
    container: &Container,
    shard: Shard,
) -> EngineResult<Counters> {
    match context.kept_counters(container.key_number(), shard) {
        Some(counters) => Ok(counters),
        None => read_counters(context.reader(), container, shard),
    }
}

/// Writes one shard's counters, and keeps them for the group's later jobs, the lane's later
/// groups and the session LSNs the commit raises.
pub(crate) fn store_counters(
    context: &mut WriteContext<'_>,
    container: &Container,
    shard: Shard,
    counters: &Counters,
) -> EngineResult<()> {
    context.put(
        Table::Counters,
        &container.counters_key(shard),
        &counters.encode(),
    )?;
    context.keep_counters(container.key_number(), shard, *counters);
    Ok(())
}

/// A whole container's counters: its shards' items and bytes summed, and as its LSN its
/// version, the sum of its shards' sequences, which every write anywhere in it raises by one
/// (what session tokens of whole-container reads carry, and what caches of its contents compare).
pub(crate) fn read_container_counters(
    reader: &dyn ReadTxn,
    container: &Container,
) -> EngineResult<Counters> {
    if container.shards <= 1 {
        return read_counters(reader, container, Shard(0));
    }
    let mut total = Counters::default();
    visit_shard_counters(reader, container, &mut |counters| {
        total.items += counters.items;
        total.bytes += counters.bytes;
        total.lsn += sequence(counters.lsn);
    })?;
    Ok(total)
}

/// The latest LSN of every shard of a container, in shard order.
pub(crate) fn read_shard_lsns(
    reader: &dyn ReadTxn,
    container: &Container,
) -> EngineResult<Vec<(Shard, u64)>> {
    Ok(read_shard_counters(reader, container)?
        .into_iter()
        .map(|(shard, counters)| (shard, counters.lsn))
        .collect())
}

/// The counters of every shard of a container, in shard order (a shard that has had no write
/// has its empty ones).
pub(crate) fn read_shard_counters(
    reader: &dyn ReadTxn,
    container: &Container,
) -> EngineResult<Vec<(Shard, Counters)>> {
    if container.shards <= 1 {
        return Ok(vec![(
            Shard(0),
            read_counters(reader, container, Shard(0))?,
        )]);
    }
    let mut every: Vec<(Shard, Counters)> = (0..container.shards)
        .map(|shard| (Shard(shard), Counters::empty(Shard(shard))))
        .collect();
    visit_shard_counters(reader, container, &mut |counters| {
        let shard = Shard::of_lsn(counters.lsn);
        if let Some(slot) = every.get_mut(usize::from(shard.0)) {
            slot.1 = counters;
        }
    })?;
    Ok(every)
}

/// Visits the stored counters of every shard of a multi-shard container (a shard that has had
/// no write has none).
fn visit_shard_counters(
    reader: &dyn ReadTxn,
    container: &Container,
    visit: &mut dyn FnMut(Counters),
) -> EngineResult<()> {
    let prefix = keys::shard_counters_prefix(container.key_number());
    try_scan(
        reader,
        Table::Counters,
        &KeyRange::prefix(&prefix),
        &mut |_, value| {
            visit(Counters::decode(value).ok_or_else(|| corrupted("counter"))?);
            Ok(ControlFlow::Continue(()))
        },
    )
}

/// The counters of the shards one writer operation touches, each read once and all written
/// back together (a purge or the TTL events of a container span shards).
pub(crate) struct ShardCounters<'c> {
    container: &'c Container,
    touched: BTreeMap<Shard, Counters>,
}

impl<'c> ShardCounters<'c> {
    pub(crate) fn new(container: &'c Container) -> ShardCounters<'c> {
        ShardCounters {
            container,
            touched: BTreeMap::new(),
        }
    }

    /// The counters of `shard`, read on first use.
    pub(crate) fn of(
        &mut self,
        context: &WriteContext<'_>,
        shard: Shard,
    ) -> EngineResult<&mut Counters> {
        let counters = match self.touched.entry(shard) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => entry.insert(counters_in(context, self.container, shard)?),
        };
        Ok(counters)
    }

    /// Writes back every shard's counters that were read.
    pub(crate) fn store(self, context: &mut WriteContext<'_>) -> EngineResult<()> {
        for (shard, counters) in &self.touched {
            store_counters(context, self.container, *shard, counters)?;
        }
        Ok(())
    }
}

/// Deletes every shard's counters of a container.
pub(crate) fn delete_counters(
    context: &mut WriteContext<'_>,
    container_number: u64,
) -> EngineResult<()> {
    let mut doomed = vec![keys::counters_key(container_number)];
    context.scan(
        Table::Counters,
        &KeyRange::prefix(&keys::shard_counters_prefix(container_number)),
        &mut |key, _| {
            doomed.push(key.to_vec());
            ControlFlow::Continue(())
        },
    )?;
    for key in doomed {
        context.delete(Table::Counters, &key)?;
    }
    context.forget_counters(container_number);
    Ok(())
}
