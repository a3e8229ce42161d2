//! The index plan's reads: the candidates of the conjunct the planner chose (`index/plan.rs`),
//! from its ranges of index entries to document numbers, narrowed by the other served
//! conjuncts whose entries are few enough to read, through the resource-id index to item keys,
//! kept inside the request's scope and after where the page resumes, sorted by item key.
//!
//! Sorted by item key, the candidates reach the page in the order the scan would push them, and
//! `PageScan::run_keys` checks each as the scan checks every item (expiry, range, hierarchical
//! prefix) before the query crate evaluates the whole filter; so results, continuation tokens
//! and ORDER BY ties are the scan's. The index only chooses which documents are loaded.

use crate::clock::Stopwatch;
use crate::container::Container;
use crate::error::{corrupted, EngineResult};
use crate::index::plan::{IndexAccess, IndexPlan};
use crate::keys;
use crate::query::scan::ScanScope;
use crate::scan_visit::{range_contains, try_scan};
use lethedb_storage::{ReadTxn, Table};
use std::ops::ControlFlow;
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

/// How many entries a narrowing conjunct may read per candidate: reading a few small keys
/// is worth a candidate not loaded (a resource-id read, an item read, its evaluation).
const NARROW_ENTRIES_PER_CANDIDATE: usize = 4;

/// The item keys of the documents `plan` names, inside `scope` and after `resume_after`,
/// ascending, each once.
pub(crate) fn candidate_keys(
    reader: &dyn ReadTxn,
    container: &Container,
    plan: &IndexPlan,
    scope: &ScanScope,
    resume_after: Option<&[u8]>,
) -> EngineResult<(Vec<Vec<u8>>, IndexTally)> {
    let started = Stopwatch::start();
    let number = container.key_number();
    let bounds = scope.key_range(number, resume_after)?;
    let mut tally = IndexTally::default();
    // Unbounded, the drive always gives its documents.
    let mut documents =
        documents_of(reader, &plan.drive, usize::MAX, &mut tally)?.unwrap_or_default();
    for access in &plan.narrow {
        if documents.is_empty() {
            break;
        }
        let most = documents.len().saturating_mul(NARROW_ENTRIES_PER_CANDIDATE);
        if let Some(named) = documents_of(reader, access, most, &mut tally)? {
            documents.retain(|document| named.binary_search(document).is_ok());
        }
    }
    let mut item_keys = Vec::with_capacity(documents.len());
    for document in documents {
        let key = item_key_of(reader, number, document)?;
        if range_contains(&bounds, &key) {
            item_keys.push(key);
        }
    }
    item_keys.sort_unstable();
    item_keys.dedup();
    tally.time = started.elapsed();
    Ok((item_keys, tally))
}

/// The document numbers `access` names, ascending, each once; `None` (for a narrowing access
/// not worth reading) when it has more than `most` entries.
fn documents_of(
    reader: &dyn ReadTxn,
    access: &IndexAccess,
    most: usize,
    tally: &mut IndexTally,
) -> EngineResult<Option<Vec<u64>>> {
    tally.lookups += access.ranges.len() as u64;
    let mut documents = Vec::new();
    for range in &access.ranges {
        try_scan(reader, Table::Index, range, &mut |key, _| {
            tally.entries += 1;
            documents.push(document_number(key)?);
            Ok(if documents.len() > most {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            })
        })?;
        if documents.len() > most {
            return Ok(None);
        }
    }
    documents.sort_unstable();
    documents.dedup();
    Ok(Some(documents))
}

/// The document number that ends a path entry's key.
fn document_number(key: &[u8]) -> EngineResult<u64> {
    keys::index_entry_document(key).ok_or_else(|| corrupted("index entry"))
}

/// The key of the item with document number `document` (through the resource-id index).
/// Every entry is written with its version, and every version with its resource id, in one
/// transaction: an entry without one is damage, not a race.
pub(crate) fn item_key_of(
    reader: &dyn ReadTxn,
    container_number: u64,
    document: u64,
) -> EngineResult<Vec<u8>> {
    let suffix = reader
        .get(
            Table::ResourceIds,
            &keys::resource_id_key(container_number, document),
        )?
        .ok_or_else(|| corrupted("index entry without its item"))?;
    Ok(keys::item_key_from_suffix(container_number, &suffix))
}

/// The key of the item with document number `document`, when it lies in the keys `scope`
/// reads (its range or partition; visibility is the page's to check).
pub(crate) fn item_in_scope(
    reader: &dyn ReadTxn,
    container_number: u64,
    document: u64,
    scope: &ScanScope,
) -> EngineResult<Option<Vec<u8>>> {
    let item_key = item_key_of(reader, container_number, document)?;
    Ok(scope.spans(&item_key).then_some(item_key))
}

/// The stored record of an item an index entry names: read in the entry's snapshot, where it
/// must be.
pub(crate) fn indexed_item(reader: &dyn ReadTxn, item_key: &[u8]) -> EngineResult<Vec<u8>> {
    reader
        .get(Table::Items, item_key)?
        .ok_or_else(|| corrupted("index entry without its item"))
}
