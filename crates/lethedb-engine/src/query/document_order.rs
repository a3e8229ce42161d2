//! A streamed page (no ORDER BY, GROUP BY, DISTINCT or aggregate) over one range (or the whole
//! of a container of one range), read in document (`_rid`) order: the order the service returns such a query's
//! documents in (the JavaScript SDK's hierarchical-key `readAll` test expects creation order,
//! where the item keys would give the partition key's hash order first).
//!
//! The walk reads the container's resource-id index (`keys::resource_id_key`: the container
//! number, then the document number, which rises with time and is kept by replaces), takes the
//! entries whose item lies in the page's scope, and pushes each item at its document number
//! until the page is full. The page is pushed in its own key space (`DOCUMENT_ORDER_SPACE`,
//! `PageRun::use_key_space`), so its token names a document number and every later page walks
//! on from it; a token written in item-key order keeps that order. A page of one logical
//! partition or of a hierarchical prefix keeps the scan: its keys are one short span, where the
//! resource-id index would be read whole.

use crate::clock::Stopwatch;
use crate::container::Container;
use crate::error::{corrupted, invalid_continuation, EngineResult};
use crate::keys;
use crate::query::scan::{PageScan, ScanScope, ScanTally};
use crate::scan_visit::try_scan;
use lethedb_query::{PageRun, Prepared};
use lethedb_storage::{KeyRange, ReadTxn, Table};
use std::ops::{Bound, ControlFlow};

/// The key space of a page pushed in document order: far above the entry orders' spaces
/// (1 + a conjunct's position), and exact in a JSON number.
pub(crate) const DOCUMENT_ORDER_SPACE: u64 = 1 << 32;

/// Resource-id entries read per storage scan: entries are collected first and their items
/// loaded after, so no read runs inside another's scan.
const CHUNK_ENTRIES: usize = 256;

/// Whether a fresh page of `prepared` over `scope` is read in document order: it streams its
/// rows and reads one range (or a container of one), not one partition, a hierarchical prefix
/// or several ranges (whose pages the gateway serves range by range, `scan::RangePages`).
pub(crate) fn serves(prepared: &Prepared, container: &Container, scope: &ScanScope) -> bool {
    prepared.streams_rows()
        && scope.partition.is_none()
        && scope.partial_key.is_none()
        && !spans_ranges(container, scope)
}

/// Whether `scope` reads the whole of a container of several ranges (no range named).
pub(crate) fn spans_ranges(container: &Container, scope: &ScanScope) -> bool {
    scope.filter.is_everything()
        && !container.ranges.is_single()
        && scope.partition.is_none()
        && scope.partial_key.is_none()
}

impl PageScan<'_> {
    /// Feeds `run` in document order from where it resumes, with the items of `scope`, until
    /// the page is full or the container's documents end.
    pub(crate) fn walk_documents(
        &self,
        reader: &dyn ReadTxn,
        scope: &ScanScope,
        run: &mut PageRun,
    ) -> EngineResult<ScanTally> {
        run.use_key_space(DOCUMENT_ORDER_SPACE)?;
        let started = Stopwatch::start();
        let number = self.container.key_number();
        let mut range = KeyRange::prefix(&keys::container_items_prefix(number));
        if let Some(after) = run.resume_after() {
            let document: [u8; 8] = after.try_into().map_err(|_| invalid_continuation())?;
            let resumed = keys::resource_id_key(number, u64::from_be_bytes(document));
            range.start = Bound::Excluded(resumed);
        }
        let mut visit = self.visitor(scope);
        loop {
            let entries = chunk(reader, &range)?;
            let Some((last, _)) = entries.last() else {
                break;
            };
            range.start = Bound::Excluded(last.clone());
            for (key, suffix) in &entries {
                let item_key = keys::item_key_from_suffix(number, suffix);
                if !scope.spans(&item_key) {
                    continue;
                }
                // One snapshot holds the entry and its item: an entry without one is damage.
                let item = reader
                    .get(Table::Items, &item_key)?
                    .ok_or_else(|| corrupted("resource id without its item"))?;
                let position = key
                    .get(keys::container_items_prefix(number).len()..)
                    .ok_or_else(|| corrupted("resource id"))?;
                if visit.item_at(run, &item_key, &item, position)?.is_break() {
                    visit.tally.scan = started.elapsed();
                    return Ok(visit.tally);
                }
            }
            if entries.len() < CHUNK_ENTRIES {
                break;
            }
        }
        visit.tally.scan = started.elapsed();
        Ok(visit.tally)
    }
}

/// The next resource-id entries of `range` (key, item suffix), at most `CHUNK_ENTRIES`.
fn chunk(reader: &dyn ReadTxn, range: &KeyRange) -> EngineResult<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut entries = Vec::new();
    try_scan(reader, Table::ResourceIds, range, &mut |key, value| {
        entries.push((key.to_vec(), value.to_vec()));
        Ok(if entries.len() >= CHUNK_ENTRIES {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        })
    })?;
    Ok(entries)
}
