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

/// One shard's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Stored items, including expired ones the sweeper has not deleted yet.
    pub items: u64,
    /// Stored document bytes, likewise.
    pub bytes: u64,
    /// The shard's latest LSN: one more for every write (`Shard::base_lsn` before the first).
    pub lsn: u64,
    /// The shard's latest document number, for `_rid`s (0 before the first).
    pub next_document_number: u64,
    /// The shard's change-feed marks; `None` until its first TTL emission, when the
    /// container-wide marks of a store written before per-shard emission hold for it
    /// (`feed/change_log.rs`).
    pub feed: Option<FeedMarks>,
}

/// How far one shard's change feed got: expiry-index entries of the shard below each class's
/// time have had their TTL events logged, and its log entries at or below `trimmed_lsn` were
/// trimmed. They never move back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FeedMarks {
    pub own_emitted_ms: Option<i64>,
    pub default_emitted_ms: Option<i64>,
    pub trimmed_lsn: u64,
}

/// The bytes of the counters alone, as stored before feed marks were kept with them.
const COUNTERS_BYTES: usize = 32;
/// The bytes of the feed marks after them: which times are set, both times and the LSN.
const FEED_MARKS_BYTES: usize = 25;

impl Counters {
    /// The counters of a shard that has had no write.
    pub fn empty(shard: Shard) -> Counters {
        Counters {
            lsn: shard.base_lsn(),
            ..Counters::default()
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(COUNTERS_BYTES + FEED_MARKS_BYTES);
        for value in [self.items, self.bytes, self.lsn, self.next_document_number] {
            out.extend_from_slice(&value.to_be_bytes());
        }
        if let Some(feed) = &self.feed {
            let set = u8::from(feed.own_emitted_ms.is_some())
                | (u8::from(feed.default_emitted_ms.is_some()) << 1);
            out.push(set);
            out.extend_from_slice(&feed.own_emitted_ms.unwrap_or(0).to_be_bytes());
            out.extend_from_slice(&feed.default_emitted_ms.unwrap_or(0).to_be_bytes());
            out.extend_from_slice(&feed.trimmed_lsn.to_be_bytes());
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Counters> {
        let field = |slot: usize| -> Option<u64> {
            Some(u64::from_be_bytes(
                bytes.get(slot * 8..slot * 8 + 8)?.try_into().ok()?,
            ))
        };
        let feed = match bytes.len() {
            COUNTERS_BYTES => None,
            length if length == COUNTERS_BYTES + FEED_MARKS_BYTES => {
                let set = bytes[COUNTERS_BYTES];
                let time = |slot: usize, bit: u8| {
                    let at = COUNTERS_BYTES + 1 + slot * 8;
                    let value = i64::from_be_bytes(bytes.get(at..at + 8)?.try_into().ok()?);
                    Some((set & bit != 0).then_some(value))
                };
                Some(FeedMarks {
                    own_emitted_ms: time(0, 1)?,
                    default_emitted_ms: time(1, 2)?,
                    trimmed_lsn: u64::from_be_bytes(
                        bytes.get(COUNTERS_BYTES + 17..)?.try_into().ok()?,
                    ),
                })
            }
            _ => return None,
        };
        Some(Counters {
            items: field(0)?,
            bytes: field(1)?,
            lsn: field(2)?,
            next_document_number: field(3)?,
            feed,
        })
    }
}

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

/// Writes one shard's counters, and notes its LSN for the session sequences the commit
/// raises (`writer/mod.rs`).
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
    context.note_written_lsn(container.key_number(), counters.lsn);
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
            Entry::Vacant(entry) => {
                entry.insert(read_counters(context.reader(), self.container, shard)?)
            }
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_round_trip_and_start_at_their_shards_base() {
        let counters = Counters {
            items: 1,
            bytes: 2,
            lsn: 3,
            next_document_number: 4,
            feed: None,
        };
        assert_eq!(Counters::decode(&counters.encode()), Some(counters));
        // Counters stored before the feed marks (32 bytes) read as having none.
        assert_eq!(counters.encode().len(), 32);
        for feed in [
            FeedMarks::default(),
            FeedMarks {
                own_emitted_ms: Some(-5),
                default_emitted_ms: None,
                trimmed_lsn: 9,
            },
            FeedMarks {
                own_emitted_ms: None,
                default_emitted_ms: Some(i64::MAX),
                trimmed_lsn: u64::MAX,
            },
        ] {
            let marked = Counters {
                feed: Some(feed),
                ..counters
            };
            assert_eq!(Counters::decode(&marked.encode()), Some(marked));
        }
        assert_eq!(Counters::decode(&[0; 40]), None);
        assert_eq!(Counters::empty(Shard(2)).lsn, Shard(2).base_lsn());
        assert_eq!(Counters::empty(Shard(0)), Counters::default());
    }
}
