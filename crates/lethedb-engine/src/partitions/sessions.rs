//! Session LSNs per partition key range, kept in memory: the LSN a session token carries for a
//! range is the sum of the sequences of the shards the range covers, as this process last saw
//! them. The service's range LSN rises with every write in the range; a sum over the range's
//! shards does too, where one shard's sequence alone does not (two writes in different shards of
//! one range would answer the same token).
//!
//! Reading every shard's counters for each point operation would cost up to 64 reads, so the
//! sums come from here: a container's shard sequences are read from the store once, at its first
//! answer, and then only raised: by the writer after each commit, with the LSN of every counters
//! row it wrote (a sweeper's purge and a TTL event included), and by every answer that learns a
//! shard's LSN (a write's LSN, a query's counters, a point read's on a shared store). They never
//! fall, so the tokens one process gives for a range never fall either, and every token given
//! after a write was acknowledged covers it: a point read on a store only this process writes
//! takes its token from here without reading the counters. On a store shared by several
//! processes, another process's writes show here only once an answer of this one reads them;
//! every read is served strongly whatever token is sent, so a lagging token costs nothing but
//! its number.
//!
//! A commit in a container not held here raises nothing; it is counted instead (`missed`), so a
//! first read of the container's counters that began before that commit is not kept (it may
//! lack the commit): only a read that began after every such commit fills the container in.
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
    containers: RwLock<Held>,
}

#[derive(Default)]
struct Held {
    by_number: HashMap<u64, Arc<ShardSequences>>,
    /// Commits that raised no container held, and emptyings of `by_number`: a read of the
    /// store begun before one of them may lack a committed write (see the module's opening).
    missed: u64,
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

impl ShardSequences {
    /// Raises every sequence to `read`'s, where that is higher.
    fn raise_all(&self, read: &ShardSequences) {
        for (shard, slot) in read.sequences.iter().enumerate() {
            if let Some(own) = self.sequences.get(shard) {
                own.fetch_max(slot.load(Ordering::Relaxed), Ordering::Relaxed);
            }
        }
    }
}

impl RangeSessions {
    fn held(&self) -> std::sync::RwLockReadGuard<'_, Held> {
        self.containers
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn held_mut(&self) -> std::sync::RwLockWriteGuard<'_, Held> {
        self.containers
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The sequences kept for container `number`, if it has been read.
    pub(crate) fn get(&self, number: u64) -> Option<Arc<ShardSequences>> {
        self.held().by_number.get(&number).cloned()
    }

    /// What a first read of a container's counters takes before it begins, for
    /// [`RangeSessions::keep`].
    pub(crate) fn ticket(&self) -> u64 {
        self.held().missed
    }

    /// Raises container `number`'s sequence of the shard `lsn` names, after a commit that
    /// wrote that shard's counters with `lsn`; a container not held counts as missed.
    pub(crate) fn raise_committed(&self, number: u64, lsn: u64) {
        if let Some(known) = self.get(number) {
            known.raise(lsn);
            return;
        }
        let mut held = self.held_mut();
        match held.by_number.get(&number) {
            Some(known) => known.raise(lsn),
            None => held.missed += 1,
        }
    }

    /// Keeps `read`, read from the store after `ticket` was taken, for container `number`;
    /// when another answer kept one first, that one is raised by `read`'s sequences and
    /// returned, so no sequence ever falls. When a commit was missed since `ticket`, `read` may
    /// lack it: it is returned for its own answer (which it covers) but not kept.
    pub(crate) fn keep(
        &self,
        number: u64,
        read: ShardSequences,
        ticket: u64,
    ) -> Arc<ShardSequences> {
        let mut held = self.held_mut();
        if let Some(kept) = held.by_number.get(&number) {
            kept.raise_all(&read);
            return Arc::clone(kept);
        }
        if held.missed != ticket {
            return Arc::new(read);
        }
        if held.by_number.len() >= CONTAINERS_MAX {
            held.by_number.clear();
            held.missed += 1;
        }
        let kept = Arc::new(read);
        held.by_number.insert(number, Arc::clone(&kept));
        kept
    }

    /// Raises container `number`'s kept sequences by `read`'s, when it is held (a read of
    /// unknown age never fills a container in).
    pub(crate) fn raise_held(&self, number: u64, read: &ShardSequences) {
        if let Some(known) = self.get(number) {
            known.raise_all(read);
        }
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
        let ticket = sessions.ticket();
        let first = sessions.keep(7, ShardSequences::new(2, [lsn(0, 4), lsn(1, 1)]), ticket);
        let second = sessions.keep(7, ShardSequences::new(2, [lsn(0, 2), lsn(1, 6)]), ticket);
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(first.sum(0..=1), 10);
        assert!(sessions.get(8).is_none());
        // A read of unknown age raises a held container and never fills one in.
        sessions.raise_held(7, &ShardSequences::new(2, [lsn(1, 8)]));
        sessions.raise_held(8, &ShardSequences::new(2, [lsn(1, 8)]));
        assert_eq!(first.sum(0..=1), 12);
        assert!(sessions.get(8).is_none());
    }

    #[test]
    fn a_read_begun_before_a_commit_the_sessions_missed_is_not_kept() {
        let sessions = RangeSessions::default();
        // A first read of container 7 takes its ticket and reads the store...
        let ticket = sessions.ticket();
        let read = ShardSequences::new(2, [lsn(0, 4)]);
        // ...while a commit in 7 (not held yet) raises nothing and is counted.
        sessions.raise_committed(7, lsn(0, 5));
        let answered = sessions.keep(7, read, ticket);
        assert_eq!(answered.sum(0..=1), 4);
        assert!(
            sessions.get(7).is_none(),
            "a read that may lack a commit was kept"
        );
        // A read begun after the commit is kept, and later commits raise it.
        let ticket = sessions.ticket();
        sessions.keep(7, ShardSequences::new(2, [lsn(0, 5)]), ticket);
        sessions.raise_committed(7, lsn(1, 3));
        assert_eq!(sessions.get(7).map(|known| known.sum(0..=1)), Some(8));
    }
}
