//! The upkeep of a container's index entries inside the writer: a write replaces the entries
//! of the version it replaces with those of the version it stores, touching only the keys that
//! differ, in the same transaction as the item (so no commit, crash or failed batch can leave
//! an entry without its item or an item without its entries).
//!
//! Called by `items/mod.rs` for every stored and removed version, whoever sent the write: a
//! request, a batch, a patch, a script, the sweeper or a partition delete. What an entry is,
//! is `index/entries.rs`'s business.

use crate::container::Container;
use crate::error::{corrupted, EngineResult};
use crate::index::entries::{entries, IndexedVersion};
use crate::records::ItemRecord;
use crate::writer::WriteContext;
use lethedb_storage::Table;
use serde_json::Value;
use std::cmp::Ordering;

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
pub(crate) struct VersionRef<'a> {
    pub(crate) record: &'a ItemRecord,
    pub(crate) document: Option<&'a Value>,
}

/// The entries of one version of an item of `container`.
pub(crate) fn version_entries(
    container: &Container,
    version: &VersionRef<'_>,
) -> EngineResult<Vec<Vec<u8>>> {
    let parsed;
    let document = if let Some(document) = version.document {
        document
    } else {
        parsed = version.record.document().ok_or_else(|| corrupted("item"))?;
        &parsed
    };
    Ok(entries(
        container.key_number(),
        &container.index_policy,
        &IndexedVersion {
            document,
            ts_secs: version.record.last_modified_ms.div_euclid(1000),
            document_number: version.record.document_number,
        },
    ))
}

/// Replaces the entries of `old` (if any) with those of `new` (if any), writing only the keys
/// that differ.
pub(crate) fn replace_entries(
    context: &mut WriteContext<'_>,
    container: &Container,
    old: Option<VersionRef<'_>>,
    new: Option<VersionRef<'_>>,
) -> EngineResult<EntryChanges> {
    let old = match old {
        Some(version) => version_entries(container, &version)?,
        None => Vec::new(),
    };
    let new = match new {
        Some(version) => version_entries(container, &version)?,
        None => Vec::new(),
    };
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    let (mut left, mut right) = (old.iter().peekable(), new.iter().peekable());
    loop {
        match (left.peek(), right.peek()) {
            (Some(a), Some(b)) => match a.cmp(b) {
                Ordering::Less => removed.extend(left.next()),
                Ordering::Greater => added.extend(right.next()),
                Ordering::Equal => {
                    left.next();
                    right.next();
                }
            },
            (Some(_), None) => removed.extend(left.next()),
            (None, Some(_)) => added.extend(right.next()),
            (None, None) => break,
        }
    }
    for key in &removed {
        context.delete(Table::Index, key)?;
    }
    for key in &added {
        context.put(Table::Index, key, &[])?;
    }
    Ok(EntryChanges {
        added: added.len() as u64,
        removed: removed.len() as u64,
    })
}
