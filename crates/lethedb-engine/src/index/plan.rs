//! The planner's decision for one query page: read the candidates of one conjunct from the index,
//! or scan. The query crate names the conjuncts an index can serve (`Prepared::index_conjuncts`,
//! each a union of sort-key ranges of one or more paths); this module keeps those whose every
//! path the container's policy indexes, counts the entries of each with a bound, and picks the
//! one with the fewest, if it is selective enough to beat a scan.
//!
//! The cost model is a bounded count, never a clock: a candidate costs a point read of its
//! resource id and one of its item, about what a scan pays for several items read in order, so
//! an index read pays only when it names at most an eighth of what the scan would read (a whole
//! container, or one partition when the request pins one). Counting stops as soon as a conjunct
//! passes that bound, so an unselective filter costs a short walk of the index and the scan;
//! the entries are keys with empty values, much cheaper to walk than items. A partition's items
//! are counted first (through the index of its key's path when the key is one indexed path),
//! and conjuncts on the partition key are left out: within the partition they name all of it
//! or nothing.
//!
//! It decides; it loads no document, and what the candidates are checked against (the whole
//! filter, expiry, the request's scope) is `query/`'s business.

use crate::container::Container;
use crate::error::EngineResult;
use crate::keys;
use crate::partitions::partition_key::{PartitionKeyPart, PartitionKeyValue};
use crate::scan_visit::try_scan;
use lethedb_query::{encode_sort_key, IndexConjunct, ProbeKind};
use lethedb_storage::{KeyRange, ReadTxn, Table};
use std::ops::ControlFlow;

/// An index read pays when it names at most this fraction (1/n) of the items a scan reads.
pub(crate) const INDEX_SHARE_DIVISOR: u64 = 8;

/// One served conjunct as ranges of the container's index entries: the documents for which it
/// is true are among those with an entry in one of the ranges.
#[derive(Clone, Debug)]
pub(crate) struct IndexAccess {
    /// The conjunct's position among the query's served conjuncts
    /// (`Prepared::index_conjuncts`).
    pub(crate) conjunct: usize,
    pub(crate) ranges: Vec<KeyRange>,
    /// The probes that are equalities (index seeks); the others are range scans.
    pub(crate) seeks: u64,
    /// The range index paths read, each once, in the query's order.
    pub(crate) paths: Vec<Vec<String>>,
    /// The spatial index paths read, each once, in the query's order.
    pub(crate) spatial_paths: Vec<Vec<String>>,
    /// The full-text index paths read, each once, in the query's order.
    pub(crate) full_text_paths: Vec<Vec<String>>,
}

/// The conjuncts the container's index can serve: those whose every probe's path the policy
/// indexes in the probe's kind (a range entry exists for every value at such a path, spatial
/// entries for every geometry, and full-text entries for every stem of a text, whatever the
/// item).
pub(crate) fn accesses(container: &Container, conjuncts: &[IndexConjunct]) -> Vec<IndexAccess> {
    let policy = &container.index_policy;
    conjuncts
        .iter()
        .enumerate()
        .filter(|(_, conjunct)| {
            conjunct.probes.iter().all(|probe| match probe.kind {
                ProbeKind::Range => policy.coverage(&probe.path).is_indexed(),
                ProbeKind::Spatial => policy.spatially_indexed(&probe.path),
                // The probe's stem is in the language of the container's full-text policy,
                // which is the one the current policy's entries are stemmed in.
                ProbeKind::FullText => policy.full_text_language(&probe.path).is_some(),
            })
        })
        .map(|(position, conjunct)| access_of(container.key_number(), position, conjunct))
        .collect()
}

/// The ranges of index entries that `conjunct` (served conjunct `position`) reads.
fn access_of(number: u64, position: usize, conjunct: &IndexConjunct) -> IndexAccess {
    let mut access = IndexAccess {
        conjunct: position,
        ranges: Vec::new(),
        seeks: 0,
        paths: Vec::new(),
        spatial_paths: Vec::new(),
        full_text_paths: Vec::new(),
    };
    for probe in &conjunct.probes {
        let (prefix, paths) = match probe.kind {
            ProbeKind::Range => (
                keys::index_path_prefix(number, &probe.path),
                &mut access.paths,
            ),
            ProbeKind::Spatial => (
                keys::index_spatial_prefix(number, &probe.path),
                &mut access.spatial_paths,
            ),
            ProbeKind::FullText => (
                keys::index_full_text_prefix(number, &probe.path),
                &mut access.full_text_paths,
            ),
        };
        if !paths.contains(&probe.path) {
            paths.push(probe.path.clone());
        }
        let bound = |sort_key: &[u8]| [prefix.as_slice(), sort_key].concat();
        access
            .ranges
            .push(KeyRange::between(bound(&probe.start), bound(&probe.end)));
        access.seeks += u64::from(probe.seek);
    }
    access
}

/// How many entries `access` reads, counting no further than `bound + 1`.
pub(crate) fn count_entries(
    reader: &dyn ReadTxn,
    access: &IndexAccess,
    bound: u64,
) -> EngineResult<u64> {
    let mut count = 0u64;
    for range in &access.ranges {
        if range_is_empty(range) {
            continue;
        }
        try_scan(reader, Table::Index, range, &mut |_, _| {
            count += 1;
            Ok(if count > bound {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            })
        })?;
        if count > bound {
            break;
        }
    }
    Ok(count)
}

/// Whether a range holds no key (a probe over an empty interval, such as `x < null`).
pub(crate) fn range_is_empty(range: &KeyRange) -> bool {
    use std::ops::Bound::{Excluded, Included};
    match (&range.start, &range.end) {
        (Included(start), Excluded(end)) => start >= end,
        _ => false,
    }
}

/// What an index plan reads: the candidates of its most selective conjunct, narrowed by the
/// other served conjuncts (every one of them must hold for a document to be selected).
#[derive(Clone, Debug)]
pub(crate) struct IndexPlan {
    pub(crate) drive: IndexAccess,
    /// Each narrows the candidates to those it names too, when its entries are few enough to
    /// be worth reading (`query/seek.rs`).
    pub(crate) narrow: Vec<IndexAccess>,
    /// How many entries the drive has (counted exactly: it won under the bound).
    pub(crate) drive_entries: u64,
}

/// The plan driven by the access with the fewest entries among those with at most `bound`.
/// The bound falls to the best count so far, so each later access is counted only as far as
/// it could still win.
pub(crate) fn most_selective(
    reader: &dyn ReadTxn,
    accesses: Vec<IndexAccess>,
    bound: u64,
) -> EngineResult<Option<IndexPlan>> {
    // Equalities first: they are the likeliest to be selective, which lowers the bound early.
    let mut ordered = accesses;
    ordered.sort_by_key(|access| std::cmp::Reverse(access.seeks == access.ranges.len() as u64));
    let mut best: Option<(usize, u64)> = None;
    for (position, access) in ordered.iter().enumerate() {
        let limit = best.map_or(bound, |(_, count)| count.saturating_sub(1));
        let count = count_entries(reader, access, limit)?;
        if count <= limit {
            best = Some((position, count));
        }
        if best.is_some_and(|(_, count)| count == 0) {
            break;
        }
    }
    Ok(best.map(|(position, drive_entries)| {
        let drive = ordered.remove(position);
        IndexPlan {
            drive,
            narrow: ordered,
            drive_entries,
        }
    }))
}

/// The items a page's scan would read: the whole container, or one logical partition.
pub(crate) enum PlanScope<'a> {
    Container { items: u64 },
    Partition(&'a PartitionKeyValue),
}

/// The planner's choice for a page of a query over `container` whose served conjuncts are
/// `conjuncts`: the access to read, or `None` for the scan of `scope`. `container_items`
/// counts the container's stored items (expired ones the sweeper has not removed included).
pub(crate) fn choose(
    reader: &dyn ReadTxn,
    container: &Container,
    conjuncts: &[IndexConjunct],
    container_items: u64,
    scope: &PlanScope<'_>,
) -> EngineResult<Option<IndexPlan>> {
    let mut usable = accesses(container, conjuncts);
    if usable.is_empty() {
        return Ok(None);
    }
    let scope_items = match scope {
        PlanScope::Container { items } => *items,
        PlanScope::Partition(value) => {
            // A conjunct on the partition key names the whole partition or nothing: never
            // fewer documents than the partition's own scan reads.
            let key_paths = &container.partition_key.paths;
            usable.retain(|access| {
                !access.spatial_paths.is_empty()
                    || !access.full_text_paths.is_empty()
                    || !access.paths.iter().all(|path| key_paths.contains(path))
            });
            if usable.is_empty() {
                return Ok(None);
            }
            partition_items(reader, container, value, container_items)?
        }
    };
    most_selective(reader, usable, scope_items / INDEX_SHARE_DIVISOR)
}

/// How many items the logical partition `value` holds, counted no further than `bound`: from
/// the index of the partition key's path when the key is one indexed path (each item of the
/// partition has exactly one entry there, and no other item has one with that value), which
/// walks small keys; else from the partition's items.
fn partition_items(
    reader: &dyn ReadTxn,
    container: &Container,
    value: &PartitionKeyValue,
    bound: u64,
) -> EngineResult<u64> {
    let number = container.key_number();
    let paths = &container.partition_key.paths;
    let range = match (paths.as_slice(), value.0.as_slice()) {
        ([path], [part])
            if *part != PartitionKeyPart::Undefined
                && container.index_policy.coverage(path).is_indexed() =>
        {
            let mut start = keys::index_path_prefix(number, path);
            encode_sort_key(Some(&part.to_json()), &mut start);
            (Table::Index, KeyRange::prefix(&start))
        }
        _ => (
            Table::Items,
            KeyRange::prefix(&container.partition_prefix(value)),
        ),
    };
    let mut count = 0u64;
    try_scan(reader, range.0, &range.1, &mut |_, _| {
        count += 1;
        Ok(if count >= bound {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        })
    })?;
    Ok(count)
}

/// The plan an index would run whatever the selectivity (driven by the most selective access,
/// every entry counted), for the verify mode that runs both plans on every page.
pub(crate) fn forced(
    reader: &dyn ReadTxn,
    container: &Container,
    conjuncts: &[IndexConjunct],
) -> EngineResult<Option<IndexPlan>> {
    most_selective(reader, accesses(container, conjuncts), u64::MAX)
}
