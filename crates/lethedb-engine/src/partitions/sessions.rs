//! Session LSNs per partition key range, kept in memory: the LSN a session token carries for a
//! range is the sum of the sequences of the shards the range covers, as this process last saw
//! them. The service's range LSN rises with every write in the range; a sum over the range's
//! shards does too, where one shard's sequence alone does not (two writes in different shards of
//! one range would answer the same token).
//!
//! Reading every shard's counters for each point operation would cost up to 64 reads, so the
//! sums come from here: a container's shard sequences are read from the store once, at its first
//! answer, and then only raised, by every answer that learns a shard's LSN (a point read's
//! counters, a write's LSN, a query's counters). They never fall, so the tokens one process gives
//! for a range never fall either. On a store shared by several processes, another process's
//! writes show here only once an answer of this one reads them; every read is served strongly
//! whatever token is sent, so a lagging token costs nothing but its number.
//!
//! Pure bookkeeping: reading the store is the caller's (`api/sessions.rs`).

use crate::partitions::shards::{sequence, Shard};
use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// Containers held at most; past it the map is emptied and each container read again at its
/// next answer (a process that made and dropped many containers does not keep them all).
const CONTAINERS_MAX: usize = 4096;

/// Every container's shard sequences, by container number.
#[derive(Default)]
pub(crate) struct RangeSessions {
    containers: RwLock<HashMap<u64, Arc<ShardSequences>>>,
}

/// One container's latest known sequence per shard.
pub(crate) struct ShardSequences {
    sequences: Box<[AtomicU64]>,
}

impl ShardSequences {
    /// The sequences of a container with `shards` shards, from the shard LSNs read.
    pub(crate) fn new(shards: u16, lsns: impl IntoIterator<Item = u64>) -> ShardSequences {
        let sequences = (0..shards.max(1)).map(|_| AtomicU64::new(0)).collect();
        let known = ShardSequences { sequences };
        for lsn in lsns {
            known.raise(lsn);
        }
        known
    }

    /// Raises the sequence of the shard `lsn` names to `lsn`'s, if it is higher.
    pub(crate) fn raise(&self, lsn: u64) {
        let shard = Shard::of_lsn(lsn);
        if let Some(slot) = self.sequences.get(usize::from(shard.0)) {
            slot.fetch_max(sequence(lsn), Ordering::Relaxed);
        }
    }

    /// The sum of the sequences of the shards in `shards`.
    pub(crate) fn sum(&self, shards: RangeInclusive<u16>) -> u64 {
        let (low, high) = (usize::from(*shards.start()), usize::from(*shards.end()));
        self.sequences
            .get(low..=high.min(self.sequences.len().saturating_sub(1)))
            .unwrap_or_default()
            .iter()
            .map(|slot| slot.load(Ordering::Relaxed))
            .sum()
    }
}

impl RangeSessions {
    /// The sequences kept for container `number`, if it has been read.
    pub(crate) fn get(&self, number: u64) -> Option<Arc<ShardSequences>> {
        let containers = self
            .containers
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        containers.get(&number).cloned()
    }

    /// Keeps `read` for container `number`; when another answer kept one first, that one is
    /// raised by `read`'s sequences and returned, so no sequence ever falls.
    pub(crate) fn keep(&self, number: u64, read: ShardSequences) -> Arc<ShardSequences> {
        let mut containers = self
            .containers
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(kept) = containers.get(&number) {
            for (shard, slot) in read.sequences.iter().enumerate() {
                if let Some(own) = kept.sequences.get(shard) {
                    own.fetch_max(slot.load(Ordering::Relaxed), Ordering::Relaxed);
                }
            }
            return Arc::clone(kept);
        }
        if containers.len() >= CONTAINERS_MAX {
            containers.clear();
        }
        let kept = Arc::new(read);
        containers.insert(number, Arc::clone(&kept));
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lsn(shard: u16, sequence: u64) -> u64 {
        Shard(shard).base_lsn() + sequence
    }

    #[test]
    fn a_range_sums_its_shards_and_a_write_in_any_of_them_raises_it() {
        let known = ShardSequences::new(4, [lsn(0, 5), lsn(1, 2), lsn(3, 9)]);
        assert_eq!(known.sum(0..=1), 7);
        assert_eq!(known.sum(0..=3), 16);
        known.raise(lsn(2, 1));
        assert_eq!(known.sum(0..=3), 17);
        assert_eq!(known.sum(2..=2), 1);
        // A shard never falls: an older LSN read late changes nothing.
        known.raise(lsn(0, 3));
        assert_eq!(known.sum(0..=0), 5);
        // Bounds past the last shard are cut to it.
        assert_eq!(known.sum(3..=70), 9);
    }

    #[test]
    fn keeping_a_second_read_raises_the_first_and_never_lowers_it() {
        let sessions = RangeSessions::default();
        let first = sessions.keep(7, ShardSequences::new(2, [lsn(0, 4), lsn(1, 1)]));
        let second = sessions.keep(7, ShardSequences::new(2, [lsn(0, 2), lsn(1, 6)]));
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(first.sum(0..=1), 10);
        assert!(sessions.get(8).is_none());
    }
}
