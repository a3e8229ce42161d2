//! The index plan's reads: the candidates of the conjunct the planner chose (`index/plan.rs`),
//! from its ranges of index entries to document numbers, through the resource-id index to item
//! keys, kept inside the request's scope and after where the page resumes, sorted by item key.
//!
//! Sorted by item key, the candidates reach the page in the order the scan would push them, and
//! `PageScan::run_keys` checks each as the scan checks every item (expiry, range, hierarchical
//! prefix) before the query crate evaluates the whole filter; so results, continuation tokens
//! and ORDER BY ties are the scan's. The index only chooses which documents are loaded.

use crate::clock::Stopwatch;
use crate::container::Container;
use crate::error::{corrupted, EngineResult};
use crate::index::plan::IndexAccess;
use crate::keys;
use crate::query::scan::ScanScope;
use crate::scan_visit::try_scan;
use lethedb_storage::{ReadTxn, Table};
use std::ops::{Bound, ControlFlow, RangeBounds};
use std::time::Duration;

/// What a page's index reads came to, for its charge and metrics.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct IndexTally {
    /// Ranges of the index read: one per probe of the chosen conjunct.
    pub(crate) lookups: u64,
    /// Index entries read.
    pub(crate) entries: u64,
    /// The time the planner's counts and these reads took (`indexLookupTimeInMs`).
    pub(crate) time: Duration,
}

/// The length of the document number that ends every path entry.
const DOCUMENT_NUMBER_BYTES: usize = 8;

/// The item keys of the documents with an entry in `access`, inside `scope` and after
/// `resume_after`, ascending, each once.
pub(crate) fn candidate_keys(
    reader: &dyn ReadTxn,
    container: &Container,
    access: &IndexAccess,
    scope: &ScanScope,
    resume_after: Option<&[u8]>,
) -> EngineResult<(Vec<Vec<u8>>, IndexTally)> {
    let started = Stopwatch::start();
    let number = container.key_number();
    let bounds = scope.key_range(number, resume_after)?;
    let mut tally = IndexTally {
        lookups: access.ranges.len() as u64,
        ..IndexTally::default()
    };
    let mut documents = Vec::new();
    for range in &access.ranges {
        try_scan(reader, Table::Index, range, &mut |key, _| {
            tally.entries += 1;
            documents.push(document_number(key)?);
            Ok(ControlFlow::Continue(()))
        })?;
    }
    documents.sort_unstable();
    documents.dedup();
    let mut item_keys = Vec::with_capacity(documents.len());
    for document in documents {
        // Every entry is written with its version, and every version with its resource id, in
        // one transaction: an entry without one is damage, not a race.
        let suffix = reader
            .get(Table::ResourceIds, &keys::resource_id_key(number, document))?
            .ok_or_else(|| corrupted("index entry"))?;
        let key = keys::item_key_from_suffix(number, &suffix);
        if RangeBounds::<[u8]>::contains(
            &(as_slice(&bounds.start), as_slice(&bounds.end)),
            key.as_slice(),
        ) {
            item_keys.push(key);
        }
    }
    item_keys.sort_unstable();
    item_keys.dedup();
    tally.time = started.elapsed();
    Ok((item_keys, tally))
}

/// The document number that ends a path entry's key.
fn document_number(key: &[u8]) -> EngineResult<u64> {
    let start = key
        .len()
        .checked_sub(DOCUMENT_NUMBER_BYTES)
        .ok_or_else(|| corrupted("index entry"))?;
    let bytes: [u8; DOCUMENT_NUMBER_BYTES] = key[start..]
        .try_into()
        .map_err(|_| corrupted("index entry"))?;
    Ok(u64::from_be_bytes(bytes))
}

/// A bound over a key as a bound over its bytes.
fn as_slice(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(key) => Bound::Included(key.as_slice()),
        Bound::Excluded(key) => Bound::Excluded(key.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}
