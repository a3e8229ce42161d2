//! One shard's counters row (`Counters`) and its stored encoding: the items and bytes the
//! shard stores, its LSN, its latest document number and its change-feed marks. A room of its
//! own below the writer, so the writer can keep the rows it wrote in memory
//! (`writer/kept_counters.rs`) without knowing how they are read or summed (`counters/mod.rs`).

use crate::partitions::shards::Shard;

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
