//! The upkeep of a container's index entries inside the writer: a write replaces the entries
//! of the version it replaces with those of the version it stores, touching only the keys that
//! differ, in the same transaction as the item (so no commit, crash or failed batch can leave
//! an entry without its item or an item without its entries).
//!
//! Called by `items/mod.rs` for every stored and removed version, whoever sent the write: a
//! request, a batch, a patch, a script, the sweeper, a partition delete or the index builder
//! of a policy change (`index/builder.rs`), whose rebuild of a version is this same replacement
//! of the version by itself. What an entry is, is `index/entries.rs`'s business.

use crate::container::Container;
use crate::error::{corrupted, EngineResult};
use crate::index::entries::{entries, IndexedVersion};
use crate::index::policy::IndexPolicy;
use crate::keys;
use crate::partitions::shards::shard_of_document_number;
use crate::records::ItemRecord;
use crate::scan_visit::try_scan;
use crate::writer::WriteContext;
use lethedb_storage::{KeyRange, Table};
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

/// How many index entries a write added and removed: the service charges writes per indexed
/// term added and removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct EntryChanges {
    pub(crate) added: u64,
    pub(crate) removed: u64,
}

impl EntryChanges {
    /// The terms a write is charged for: every entry it added or removed.
    pub(crate) fn terms(self) -> u64 {
        self.added + self.removed
    }

    /// The changes of two steps of one write together.
    pub(crate) fn and(self, other: EntryChanges) -> EntryChanges {
        EntryChanges {
            added: self.added + other.added,
            removed: self.removed + other.removed,
        }
    }
}

/// One version as the index sees it: its record and, when the caller has it parsed, its
/// document.
#[derive(Clone, Copy)]
pub(crate) struct VersionRef<'a> {
    pub(crate) record: &'a ItemRecord,
    pub(crate) document: Option<&'a Value>,
}

/// The entries of one version of an item of `container`.
pub(crate) fn version_entries(
    container: &Container,
    version: &VersionRef<'_>,
) -> EngineResult<Vec<Vec<u8>>> {
    let mut parsed = None;
    let document = document_of(version, &mut parsed)?;
    Ok(entries_under(
        container,
        &container.index_policy,
        version,
        document,
    ))
}

/// The document of `version`, parsed into `slot` when the caller had none.
fn document_of<'a>(
    version: &'a VersionRef<'_>,
    slot: &'a mut Option<Value>,
) -> EngineResult<&'a Value> {
    if let Some(document) = version.document {
        return Ok(document);
    }
    let parsed = version.record.document().ok_or_else(|| corrupted("item"))?;
    Ok(slot.insert(parsed))
}

/// The entries of `version` under one of the container's policies, current or earlier.
fn entries_under(
    container: &Container,
    policy: &IndexPolicy,
    version: &VersionRef<'_>,
    document: &Value,
) -> Vec<Vec<u8>> {
    entries(
        container.key_number(),
        policy,
        &IndexedVersion {
            document,
            ts_secs: version.record.last_modified_ms.div_euclid(1000),
            document_number: version.record.document_number,
        },
    )
}

/// Replaces the entries of `old` (if any) with those of `new` (if any), writing only the keys
/// that differ. While a policy change's transformation runs, `old` may hold the entries of the
/// current policy or of any earlier one (`index_ready` is false): every entry any of them
/// gives it that the new version lacks is deleted, and every entry of the new version that not
/// all of them give `old` is written, so the version ends with exactly the current policy's
/// entries whichever it held (the builder rebuilds a version by replacing it with itself).
/// Returns the keys written and deleted.
pub(crate) fn replace_entries(
    context: &mut WriteContext<'_>,
    container: &Container,
    old: Option<VersionRef<'_>>,
    new: Option<VersionRef<'_>>,
) -> EngineResult<EntryChanges> {
    let old = old.map(|version| same_document(version, new.as_ref()));
    let new = match new {
        Some(version) => version_entries(container, &version)?,
        None => Vec::new(),
    };
    let (removed, added) = match old {
        None => (Vec::new(), new),
        Some(version) if container.index_ready() => {
            difference(&version_entries(container, &version)?, &new)
        }
        Some(version) => transforming_difference(container, &version, new)?,
    };
    let counted = statistics_changes(context, container, &removed, &added)?;
    for key in &removed {
        context.delete(Table::Index, key)?;
    }
    for key in &added {
        context.put(Table::Index, key, &[])?;
    }
    apply_statistics(context, counted)?;
    // The impact and length entries ride with the stem entries: a write is charged for the
    // terms it indexes, as before they were kept.
    let charged = |keys: &[Vec<u8>]| {
        keys.iter()
            .filter(|key| keys::full_text_statistics_counter(key).is_none())
            .count() as u64
    };
    Ok(EntryChanges {
        added: charged(&added),
        removed: charged(&removed),
    })
}

/// `old`, with the document `new` holds when their bodies are the same bytes (an upsert or
/// replace that sends the item unchanged, as a test's fixtures written again do): the old
/// version's entries then come without parsing its body again. Its time and document number
/// stay its own.
fn same_document<'a>(old: VersionRef<'a>, new: Option<&VersionRef<'a>>) -> VersionRef<'a> {
    match new {
        Some(new) if old.document.is_none() && old.record.body == new.record.body => VersionRef {
            record: old.record,
            document: new.document,
        },
        _ => old,
    }
}

/// Index keys to delete and to write, in that order.
type KeyChanges = (Vec<Vec<u8>>, Vec<Vec<u8>>);

/// The keys of sorted `old` missing from sorted `new` (to delete), and those of `new` missing
/// from `old` (to write).
fn difference(old: &[Vec<u8>], new: &[Vec<u8>]) -> KeyChanges {
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    let (mut left, mut right) = (old.iter().peekable(), new.iter().peekable());
    loop {
        match (left.peek(), right.peek()) {
            (Some(a), Some(b)) => match a.cmp(b) {
                Ordering::Less => removed.extend(left.next().cloned()),
                Ordering::Greater => added.extend(right.next().cloned()),
                Ordering::Equal => {
                    left.next();
                    right.next();
                }
            },
            (Some(_), None) => removed.extend(left.next().cloned()),
            (None, Some(_)) => added.extend(right.next().cloned()),
            (None, None) => break,
        }
    }
    (removed, added)
}

/// [`difference`] while `old` may hold the entries of any of the container's policies: to
/// delete, what any of them gives `old` and `new` lacks; to write, what `new` has that not
/// every one of them gives `old` (a key every policy gives `old` is stored whichever it holds).
fn transforming_difference(
    container: &Container,
    old: &VersionRef<'_>,
    new: Vec<Vec<u8>>,
) -> EngineResult<KeyChanges> {
    let mut parsed = None;
    let document = document_of(old, &mut parsed)?;
    let mut policies = vec![container.index_policy.as_ref()];
    policies.extend(&container.earlier_index_policies.compiled);
    let mut any: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut every: Option<BTreeSet<Vec<u8>>> = None;
    for policy in policies {
        let keys: BTreeSet<Vec<u8>> = entries_under(container, policy, old, document)
            .into_iter()
            .collect();
        every = Some(match every {
            None => keys.clone(),
            Some(every) => every.intersection(&keys).cloned().collect(),
        });
        any.extend(keys);
    }
    let every = every.unwrap_or_default();
    let new_keys: BTreeSet<&Vec<u8>> = new.iter().collect();
    let removed = any
        .into_iter()
        .filter(|key| !new_keys.contains(key))
        .collect();
    let added = new.into_iter().filter(|key| !every.contains(key)).collect();
    Ok((removed, added))
}

/// The change of each full-text statistics counter (`keys::index_full_text_statistics_prefix`)
/// that writing `added` and deleting `removed` makes, in the row of the shard the entry's
/// document lies in (`keys::full_text_shard_statistics_key`): a stem's impact entry counts one
/// document for the stem, a length entry its text's words for the path. A write changes only
/// its own shard's rows, so it needs no lock but its shard's. While a policy change's rebuild
/// runs the difference is not what is stored (an entry deleted may be absent, one written may
/// be there already), so each full-text entry is looked up first: the counters then follow
/// what is stored, and are exact once the rebuild ends.
fn statistics_changes(
    context: &mut WriteContext<'_>,
    container: &Container,
    removed: &[Vec<u8>],
    added: &[Vec<u8>],
) -> EngineResult<BTreeMap<Vec<u8>, i64>> {
    let ready = container.index_ready();
    let mut changes: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
    for (keys, sign, stored_before) in [(removed, -1, true), (added, 1, false)] {
        for key in keys {
            let Some((counter, amount)) = keys::full_text_statistics_counter(key) else {
                continue;
            };
            if !ready && context.get(Table::Index, key)?.is_some() != stored_before {
                continue;
            }
            // A one-shard container's document numbers count up and name no shard.
            let shard = match keys::full_text_entry_document(key) {
                Some(document) if container.shards > 1 => shard_of_document_number(document).0,
                _ => 0,
            };
            let row = keys::full_text_shard_statistics_key(&counter, shard)
                .ok_or_else(|| corrupted("full-text entry"))?;
            *changes.entry(row).or_default() += sign * amount;
        }
    }
    Ok(changes)
}

/// Adds each change to its stored shard row (eight bytes, big-endian, signed; absent is zero,
/// and a row back at zero is deleted).
fn apply_statistics(
    context: &mut WriteContext<'_>,
    changes: BTreeMap<Vec<u8>, i64>,
) -> EngineResult<()> {
    for (row, change) in changes {
        if change == 0 {
            continue;
        }
        let stored = match context.get(Table::Index, &row)? {
            None => 0,
            Some(bytes) => i64::from_be_bytes(
                bytes
                    .as_slice()
                    .try_into()
                    .map_err(|_| corrupted("full-text statistics"))?,
            ),
        };
        let value = stored.saturating_add(change);
        if value == 0 {
            context.delete(Table::Index, &row)?;
        } else {
            context.put(Table::Index, &row, &value.to_be_bytes())?;
        }
    }
    Ok(())
}

/// A full-text statistics counter (`keys::index_full_text_statistics_prefix`): its shards'
/// rows summed, over the container-wide row a store written before shard rows kept (never
/// written since, absent is zero).
pub(crate) fn read_statistics(
    reader: &dyn lethedb_storage::ReadTxn,
    counter: &[u8],
) -> EngineResult<u64> {
    let base = i128::from(read_statistics_counter(reader, counter)?);
    let prefix = keys::full_text_shard_statistics_prefix(counter)
        .ok_or_else(|| corrupted("full-text statistics"))?;
    let mut total = base;
    try_scan(
        reader,
        Table::Index,
        &KeyRange::prefix(&prefix),
        &mut |key, value| {
            // Only the prefix's own rows: the prefix and a shard.
            if key.len() == prefix.len() + 2 {
                let value: [u8; 8] = value
                    .try_into()
                    .map_err(|_| corrupted("full-text statistics"))?;
                total += i128::from(i64::from_be_bytes(value));
            }
            Ok(ControlFlow::Continue(()))
        },
    )?;
    Ok(u64::try_from(total.max(0)).unwrap_or(u64::MAX))
}

/// A container-wide full-text statistics counter as an older store kept it (absent is zero).
fn read_statistics_counter(
    reader: &dyn lethedb_storage::ReadTxn,
    counter: &[u8],
) -> EngineResult<u64> {
    match reader.get(Table::Index, counter)? {
        None => Ok(0),
        Some(bytes) => Ok(u64::from_be_bytes(
            bytes
                .as_slice()
                .try_into()
                .map_err(|_| corrupted("full-text statistics"))?,
        )),
    }
}
