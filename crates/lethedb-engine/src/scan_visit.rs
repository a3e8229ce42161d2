//! Scans whose visitor can fail: the storage crate's visitor can only continue or break, so a
//! visitor that meets a corrupted record or a query error keeps the error here, breaks, and the
//! scan returns it. Callers write their visitor with `?` instead of a flag checked afterwards.
//!
//! This module only carries errors out of a scan; what is read, and in which order, is the
//! caller's and the storage crate's business.

use crate::error::EngineResult;
use lethedb_storage::{KeyRange, ReadTxn, Table, Visit};
use std::ops::ControlFlow;

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
