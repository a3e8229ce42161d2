//! Scans whose visitor can fail: the storage crate's visitor can only continue or break, so a
//! visitor that meets a corrupted record or a query error keeps the error here, breaks, and the
//! scan returns it. Callers write their visitor with `?` instead of a flag checked afterwards.
//! Two helpers over the ranges scans read go with it: whether a range holds a key, and the part
//! of a range after the key a page resumes from.
//!
//! This module only carries errors out of a scan; what is read, and in which order, is the
//! caller's and the storage crate's business.

use crate::error::EngineResult;
use lethedb_storage::{KeyRange, ReadTxn, Table, Visit};
use std::ops::{Bound, ControlFlow, RangeBounds};

/// A visitor of key-value pairs that may fail: `Ok(Break)` stops the scan, `Err` stops it and
/// becomes its error.
pub(crate) type TryVisit<'a> = &'a mut dyn FnMut(&[u8], &[u8]) -> EngineResult<ControlFlow<()>>;

/// Visits the pairs of `range` in ascending key order until `visit` breaks or fails; its first
/// error is the scan's error.
pub(crate) fn try_scan(
    reader: &dyn ReadTxn,
    table: Table,
    range: &KeyRange,
    visit: TryVisit<'_>,
) -> EngineResult<()> {
    try_scan_with(|plain| Ok(reader.scan(table, range, plain)?), visit)
}

/// Runs `scan`, any scan that takes the storage crate's visitor, with `visit` behind it: the
/// scan's own failure comes first, then the visitor's first error. The writer's transaction
/// scans through it (`WriteContext::try_scan`) so that its storage failures are still noted
/// by the writer as every other operation's are.
pub(crate) fn try_scan_with(
    scan: impl FnOnce(Visit<'_>) -> EngineResult<()>,
    visit: TryVisit<'_>,
) -> EngineResult<()> {
    let mut failure = None;
    scan(&mut |key, value| match visit(key, value) {
        Ok(flow) => flow,
        Err(error) => {
            failure = Some(error);
            ControlFlow::Break(())
        }
    })?;
    failure.map_or(Ok(()), Err)
}

/// Whether `range` holds `key`.
pub(crate) fn range_contains(range: &KeyRange, key: &[u8]) -> bool {
    RangeBounds::<[u8]>::contains(&(as_slice(&range.start), as_slice(&range.end)), key)
}

/// The keys of `range` after `after` (the last key an earlier page returned): all of them when
/// `after` lies before the range (a page of a wider scope resumes inside a narrower one).
pub(crate) fn resumed_after(range: &KeyRange, after: Vec<u8>) -> KeyRange {
    let mut resumed = range.clone();
    let before_range = match &range.start {
        Bound::Included(first) => after < *first,
        Bound::Excluded(first) => after <= *first,
        Bound::Unbounded => false,
    };
    if !before_range {
        resumed.start = Bound::Excluded(after);
    }
    resumed
}

/// A bound over a key as a bound over its bytes.
fn as_slice(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(key) => Bound::Included(key.as_slice()),
        Bound::Excluded(key) => Bound::Excluded(key.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}
