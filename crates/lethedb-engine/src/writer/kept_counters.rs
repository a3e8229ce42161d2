//! The counters rows a writer lane keeps in memory (`KeptCounters`): every row the group's
//! transaction wrote, undone with the savepoint that undoes its write, and, on a store that
//! this lane alone writes, every row its earlier groups committed.
//!
//! They serve two purposes. After a commit, each row written raises its container's session
//! sequences (`partitions/sessions.rs`), so a token answered later covers every write this
//! process committed (a sweeper's purge, a delete by partition, a TTL event), and a point read
//! need not read the counters to learn them. And a write reads its shard's counters from here
//! rather than from the store (a lookup and a decode) when an earlier group of the lane wrote
//! them: only on a store no other lane or process writes (`Thread::keeps_counters`), and
//! forgotten whenever something else may have changed them (a catalog change, a failed
//! commit, an operation on the whole store such as a snapshot's restore). The rows are still
//! written with the group: that is what makes them recoverable after a crash.
//!
//! Nothing here reads the store or decides what a row holds; `counters/mod.rs` does.

use crate::counters::row::Counters;
use crate::partitions::sessions::RangeSessions;
use crate::partitions::shards::Shard;
use std::collections::HashMap;

/// A shard of a container: the container's key number and the shard.
pub(crate) type ShardOf = (u64, Shard);

/// The rows a group knows without reading them.
#[derive(Default)]
pub(crate) struct KeptCounters {
    /// The rows this group's transaction wrote (and has not undone).
    written: HashMap<ShardOf, Counters>,
    /// What each write to `written` replaced there, oldest first: a savepoint is a length.
    undo: Vec<(ShardOf, Option<Counters>)>,
    /// The rows earlier groups of the lane committed, when the lane keeps them (else empty).
    committed: HashMap<ShardOf, Counters>,
}

impl KeptCounters {
    /// A group's rows, starting from the ones the lane kept from earlier groups.
    pub(super) fn starting_from(committed: HashMap<ShardOf, Counters>) -> KeptCounters {
        KeptCounters {
            committed,
            ..KeptCounters::default()
        }
    }

    /// The row of `shard`, if this group wrote it or the lane kept it.
    pub(crate) fn get(&self, shard: ShardOf) -> Option<Counters> {
        self.written
            .get(&shard)
            .or_else(|| self.committed.get(&shard))
            .copied()
    }

    /// Notes that the transaction wrote `counters` as the row of `shard`.
    pub(crate) fn put(&mut self, shard: ShardOf, counters: Counters) {
        let replaced = self.written.insert(shard, counters);
        self.undo.push((shard, replaced));
    }

    /// Notes that the transaction deleted every row of container `number`.
    pub(crate) fn forget_container(&mut self, number: u64) {
        let doomed: Vec<ShardOf> = self
            .written
            .keys()
            .filter(|(container, _)| *container == number)
            .copied()
            .collect();
        for shard in doomed {
            let replaced = self.written.remove(&shard);
            self.undo.push((shard, replaced));
        }
        self.committed
            .retain(|(container, _), _| *container != number);
    }

    /// Where the rows stand now, for [`KeptCounters::rollback_to`].
    pub(super) fn mark(&self) -> usize {
        self.undo.len()
    }

    /// Undoes every note made since `mark`, as the transaction's savepoint undoes the writes.
    pub(super) fn rollback_to(&mut self, mark: usize) {
        while self.undo.len() > mark {
            let Some((shard, replaced)) = self.undo.pop() else {
                break;
            };
            match replaced {
                Some(counters) => self.written.insert(shard, counters),
                None => self.written.remove(&shard),
            };
        }
    }

    /// After the transaction committed: raises `sessions` by the LSN of every row it wrote,
    /// and returns what the lane keeps for its next group: every row, when `keep` (not after a
    /// catalog change, which may have deleted or recreated containers), else nothing.
    pub(super) fn committed(
        self,
        keep: bool,
        sessions: &RangeSessions,
    ) -> HashMap<ShardOf, Counters> {
        let KeptCounters {
            written,
            mut committed,
            ..
        } = self;
        for ((number, _), row) in &written {
            sessions.raise_committed(*number, row.lsn);
        }
        if !keep {
            return HashMap::new();
        }
        committed.extend(written);
        committed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partitions::sessions::ShardSequences;

    fn row(lsn: u64) -> Counters {
        Counters {
            lsn,
            ..Counters::default()
        }
    }

    #[test]
    fn a_rollback_undoes_the_rows_written_since_its_mark_and_no_more() {
        let mut committed = HashMap::new();
        committed.insert((1, Shard(0)), row(1));
        let mut kept = KeptCounters::starting_from(committed);
        kept.put((1, Shard(0)), row(2));
        let mark = kept.mark();
        kept.put((1, Shard(0)), row(3));
        kept.put((1, Shard(1)), row(7));
        assert_eq!(kept.get((1, Shard(0))), Some(row(3)));
        kept.rollback_to(mark);
        assert_eq!(kept.get((1, Shard(0))), Some(row(2)));
        assert_eq!(kept.get((1, Shard(1))), None);
        kept.rollback_to(0);
        // Undone to before the group: the lane's committed row shows again.
        assert_eq!(kept.get((1, Shard(0))), Some(row(1)));
    }

    #[test]
    fn a_deleted_container_is_forgotten_until_the_delete_is_undone() {
        let mut committed = HashMap::new();
        committed.insert((1, Shard(0)), row(1));
        committed.insert((2, Shard(0)), row(5));
        let mut kept = KeptCounters::starting_from(committed);
        kept.put((1, Shard(1)), row(4));
        let mark = kept.mark();
        kept.forget_container(1);
        assert_eq!(kept.get((1, Shard(0))), None);
        assert_eq!(kept.get((1, Shard(1))), None);
        assert_eq!(kept.get((2, Shard(0))), Some(row(5)));
        kept.rollback_to(mark);
        assert_eq!(kept.get((1, Shard(1))), Some(row(4)));
        // The committed row stays forgotten: a cache may always forget, and the store has it.
        assert_eq!(kept.get((1, Shard(0))), None);
    }

    #[test]
    fn a_commit_raises_the_sessions_by_the_rows_written_and_keeps_them_only_when_asked() {
        let sessions = RangeSessions::default();
        let shard = Shard(2);
        let held = sessions.keep(3, ShardSequences::new(4, []), sessions.ticket());
        let mut kept = KeptCounters::starting_from(HashMap::new());
        kept.put((3, shard), row(shard.base_lsn() + 9));
        let next = kept.committed(true, &sessions);
        assert_eq!(held.sum(2..=2), 9);
        assert_eq!(next.get(&(3, shard)), Some(&row(shard.base_lsn() + 9)));
        let mut kept = KeptCounters::starting_from(next);
        kept.put((3, shard), row(shard.base_lsn() + 10));
        assert!(kept.committed(false, &sessions).is_empty());
        assert_eq!(held.sum(0..=3), 10);
    }
}
