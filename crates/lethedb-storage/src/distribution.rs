//! Where a key lies when a store spreads its tables over nodes: its bucket, a number the
//! engine derives from the key's own bytes (the distribution key, `dk`, of a shared store's
//! per-item tables). Keys of one bucket may be written in one transaction of one node; a
//! statement that names one bucket can be routed to the node that holds it.
//!
//! The storage crate knows no key layout, so the engine supplies the function
//! ([`Distribution`]); a store that keeps every table in one place (redb, memory) never asks.
//! The function must stay the same for the life of a store: a key stored under one bucket is
//! found only under that bucket, so a store records the function's [`Distribution::version`]
//! and refuses to open with another.

use crate::api::{KeyRange, Table};
use std::ops::Bound;

/// The engine's placement of keys into buckets.
pub trait Distribution: Send + Sync + 'static {
    /// A number that changes whenever the function does; a shared store records it.
    fn version(&self) -> i64;
    /// The bucket of a key of a distributed table (every table but [`Table::Catalog`]).
    fn bucket(&self, table: Table, key: &[u8]) -> i64;
    /// The bucket every key of `range` lies in, when one bucket holds them all (a scan of it
    /// then names that bucket); `None` when the range may span several.
    fn range_bucket(&self, table: Table, range: &KeyRange) -> Option<i64>;
}

/// Every key in one bucket, 0: what a store opened without the engine's function uses (the
/// storage crate's own tests).
pub struct OneBucket;

impl Distribution for OneBucket {
    fn version(&self) -> i64 {
        0
    }

    fn bucket(&self, _table: Table, _key: &[u8]) -> i64 {
        0
    }

    fn range_bucket(&self, _table: Table, _range: &KeyRange) -> Option<i64> {
        Some(0)
    }
}

impl Table {
    /// Whether the table's rows carry a bucket: every per-item table. The catalog is small,
    /// read by every instance, and written only by the rare catalog changes, so it stays whole
    /// (a reference table, in a distributed database's terms).
    pub fn is_distributed(self) -> bool {
        self != Table::Catalog
    }
}

/// Whether every key of `range` lies in `[lower, upper)` (`upper`: `None` for no end), so a
/// [`Distribution`] can say a range stays within one bucket whose keys are that span.
pub fn range_within(range: &KeyRange, lower: &[u8], upper: Option<&[u8]>) -> bool {
    let starts_inside = match &range.start {
        Bound::Included(start) | Bound::Excluded(start) => start.as_slice() >= lower,
        Bound::Unbounded => false,
    };
    let ends_inside = match (upper, &range.end) {
        (None, _) => true,
        (Some(upper), Bound::Excluded(end)) => end.as_slice() <= upper,
        (Some(upper), Bound::Included(end)) => end.as_slice() < upper,
        (Some(_), Bound::Unbounded) => false,
    };
    starts_inside && ends_inside
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_within_a_span_only_when_both_ends_are() {
        let range = KeyRange::between(b"b1".to_vec(), b"b9".to_vec());
        assert!(range_within(&range, b"b", Some(b"c")));
        assert!(range_within(&range, b"b1", Some(b"b9")));
        assert!(!range_within(&range, b"b2", Some(b"c")));
        assert!(!range_within(&range, b"b", Some(b"b8")));
        assert!(range_within(&range, b"a", None));
        let open = KeyRange::prefix(b"b");
        assert!(range_within(&open, b"b", Some(b"c")));
        let inclusive = KeyRange {
            start: Bound::Included(b"b".to_vec()),
            end: Bound::Included(b"c".to_vec()),
        };
        assert!(!range_within(&inclusive, b"b", Some(b"c")));
        let unbounded = KeyRange {
            start: Bound::Unbounded,
            end: Bound::Excluded(b"c".to_vec()),
        };
        assert!(!range_within(&unbounded, b"", Some(b"c")));
    }
}
