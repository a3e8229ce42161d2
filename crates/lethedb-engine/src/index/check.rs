//! The index checked against its items: the entries stored for a container's policy kinds
//! (path, composite, spatial and full-text entries) against those rebuilt from every stored version
//! (visible or expired, since entries leave with the version, not at its expiry). Tests call it
//! after random operation sequences and crash cycles; it reads a snapshot and writes nothing.
//! While a policy change's rebuild runs, items may still hold an earlier policy's entries: the
//! check says so, and its counts are then expected to differ.

use crate::container::Container;
use crate::error::{corrupted, EngineResult};
use crate::index::builder::index_ready_in;
use crate::index::maintain::{version_entries, VersionRef};
use crate::keys;
use crate::records::ItemRecord;
use crate::scan_visit::try_scan;
use lethedb_storage::{KeyRange, ReadTxn, Table};
use std::collections::BTreeSet;
use std::ops::ControlFlow;

/// How a container's stored index differs from one rebuilt from its items.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct IndexCheck {
    /// Entries the index holds.
    pub stored: u64,
    /// The bytes of those entries (keys; their values are empty).
    pub stored_bytes: u64,
    /// The bytes of the items they index (keys and stored records), to compare with.
    pub item_bytes: u64,
    /// Entries the items call for that the index lacks.
    pub missing: u64,
    /// Entries the index holds that no item calls for.
    pub stale: u64,
    /// Whether a policy change's rebuild runs in the checked snapshot (`index/builder.rs`), or
    /// the snapshot holds another definition of the container than the one checked.
    pub rebuilding: bool,
}

impl IndexCheck {
    /// The index holds exactly its items' entries, and no rebuild runs.
    pub fn is_consistent(&self) -> bool {
        !self.rebuilding && self.missing == 0 && self.stale == 0
    }
}

/// Compares the index of `container` with a rebuild from its items, in one snapshot.
pub(crate) fn check(reader: &dyn ReadTxn, container: &Container) -> EngineResult<IndexCheck> {
    let number = container.key_number();
    let mut expected = BTreeSet::new();
    let mut item_bytes = 0u64;
    try_scan(
        reader,
        Table::Items,
        &KeyRange::prefix(&keys::container_items_prefix(number)),
        &mut |key, value| {
            item_bytes += (key.len() + value.len()) as u64;
            let record = ItemRecord::decode(value).ok_or_else(|| corrupted("item"))?;
            let version = VersionRef {
                record: &record,
                document: None,
            };
            expected.extend(version_entries(container, &version)?);
            Ok(ControlFlow::Continue(()))
        },
    )?;
    let mut report = IndexCheck {
        rebuilding: !index_ready_in(reader, container)?,
        item_bytes,
        ..IndexCheck::default()
    };
    for kind in [
        keys::INDEX_KIND_PATH,
        keys::INDEX_KIND_COMPOSITE,
        keys::INDEX_KIND_SPATIAL,
        keys::INDEX_KIND_FULL_TEXT,
        keys::INDEX_KIND_FULL_TEXT_IMPACT,
        keys::INDEX_KIND_FULL_TEXT_LENGTH,
    ] {
        let mut prefix = keys::container_items_prefix(number);
        prefix.push(kind);
        try_scan(
            reader,
            Table::Index,
            &KeyRange::prefix(&prefix),
            &mut |key, _| {
                report.stored += 1;
                report.stored_bytes += key.len() as u64;
                if !expected.remove(key) {
                    report.stale += 1;
                }
                Ok(ControlFlow::Continue(()))
            },
        )?;
    }
    report.missing = expected.len() as u64;
    Ok(report)
}
