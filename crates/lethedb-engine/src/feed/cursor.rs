//! A change-feed cursor: where a read of a container's feed stands in each of its shards
//! (`partitions/shards.rs`), handed to clients as the page's ETag and taken back from
//! `If-None-Match`.
//!
//! A container of one shard (every container stored before shards) has one LSN, written as the
//! number itself, as the service writes its ETags (`"42"`). A multi-shard container's cursor
//! is its shards' sequences, from the first shard of the read's scope on: `"<first>:<seq>.<seq>…"`.
//! The SDKs keep the ETag as an opaque string and send it back unchanged, for the range it
//! came from or, after a split, for each range that replaced it (which reads a subset of the
//! same shards). A shard the cursor does not name is read from its beginning.
//!
//! This module only encodes and decodes; `change_feed.rs` decides what a cursor reads.

use crate::partitions::shards::{sequence, Shard};
use std::fmt;

/// Where a read stands in each shard: the LSN after which it continues.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeedCursor {
    /// The first shard named.
    first: u16,
    /// The LSN of each named shard, in order from `first`.
    lsns: Vec<u64>,
    /// Whether the container has one shard (written as a bare LSN).
    single: bool,
}

impl FeedCursor {
    /// The cursor of a one-shard container at `lsn`.
    pub fn single(lsn: u64) -> FeedCursor {
        FeedCursor {
            first: 0,
            lsns: vec![lsn],
            single: true,
        }
    }

    /// A cursor at the given LSN of each shard (each LSN one of its shard's own), in shard
    /// order; `shards` is the container's count.
    pub(crate) fn of(positions: &[(Shard, u64)], shards: u16) -> FeedCursor {
        if shards <= 1 {
            return FeedCursor::single(positions.first().map_or(0, |(_, lsn)| *lsn));
        }
        let first = positions.first().map_or(0, |(shard, _)| shard.0);
        let mut lsns = Vec::with_capacity(positions.len());
        for (shard, lsn) in positions {
            // Scopes are runs of consecutive shards; a gap is read from the shard's start.
            while first + (lsns.len() as u16) < shard.0 {
                lsns.push(Shard(first + lsns.len() as u16).base_lsn());
            }
            lsns.push(*lsn);
        }
        FeedCursor {
            first,
            lsns,
            single: false,
        }
    }

    /// The LSN after which the read of `shard` continues.
    pub(crate) fn lsn_of(&self, shard: Shard) -> u64 {
        shard
            .0
            .checked_sub(self.first)
            .and_then(|index| self.lsns.get(usize::from(index)))
            .copied()
            .filter(|lsn| Shard::of_lsn(*lsn) == shard)
            .unwrap_or(shard.base_lsn())
    }

    /// Reads a cursor as [`FeedCursor`]'s `Display` writes it; `None` if it is not one.
    pub fn parse(text: &str) -> Option<FeedCursor> {
        let Some((first, rest)) = text.split_once(':') else {
            return text.parse().ok().map(FeedCursor::single);
        };
        let first: u16 = first.parse().ok()?;
        let mut lsns = Vec::new();
        for (index, part) in rest.split('.').enumerate() {
            let shard = first.checked_add(u16::try_from(index).ok()?)?;
            let sequence: u64 = part.parse().ok()?;
            if sequence != crate::partitions::shards::sequence(sequence) {
                return None;
            }
            lsns.push(Shard(shard).base_lsn() + sequence);
        }
        Some(FeedCursor {
            first,
            lsns,
            single: false,
        })
    }
}

impl fmt::Display for FeedCursor {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.single {
            return write!(out, "{}", self.lsns.first().copied().unwrap_or(0));
        }
        write!(out, "{}:", self.first)?;
        for (index, lsn) in self.lsns.iter().enumerate() {
            if index > 0 {
                out.write_str(".")?;
            }
            write!(out, "{}", sequence(*lsn))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_shard_cursor_is_the_bare_lsn() {
        let cursor = FeedCursor::single(42);
        assert_eq!(cursor.to_string(), "42");
        assert_eq!(FeedCursor::parse("42"), Some(cursor.clone()));
        assert_eq!(cursor.lsn_of(Shard(0)), 42);
    }

    #[test]
    fn a_sharded_cursor_round_trips_and_reads_unnamed_shards_from_their_start() {
        let positions = [
            (Shard(3), Shard(3).base_lsn() + 7),
            (Shard(4), Shard(4).base_lsn()),
            (Shard(6), Shard(6).base_lsn() + 2),
        ];
        let cursor = FeedCursor::of(&positions, 64);
        assert_eq!(cursor.to_string(), "3:7.0.0.2");
        assert_eq!(FeedCursor::parse("3:7.0.0.2"), Some(cursor.clone()));
        assert_eq!(cursor.lsn_of(Shard(6)), Shard(6).base_lsn() + 2);
        assert_eq!(cursor.lsn_of(Shard(2)), Shard(2).base_lsn());
        assert_eq!(cursor.lsn_of(Shard(9)), Shard(9).base_lsn());
    }

    #[test]
    fn junk_is_not_a_cursor() {
        for junk in [
            "",
            "x",
            "3:",
            "3:1.x",
            "70000:1",
            "-1",
            "3:999999999999999999",
        ] {
            assert_eq!(FeedCursor::parse(junk), None, "{junk}");
        }
    }
}
