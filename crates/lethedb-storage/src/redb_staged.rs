//! The redb store's staged changes: commits that are durable in the redo log and visible to
//! readers, but not yet written into redb's B-trees.
//!
//! Why: a redb commit copies, for every table it touches, each changed leaf and the branches
//! above it, then frees the pages it replaced, even when it does not sync. With a group of ~15
//! creates per commit, each touching ~10 keys spread over eight tables, that copying was two
//! thirds of a create's instructions (`bench/results/redb-staged.md`). Staged, a commit's
//! changes go into persistent ordered sets of the in-memory store's entries (`imbl`: a reader's
//! snapshot shares every node, a commit copies only the paths it changes, and an entry is one
//! thin pointer, so a copied node copies pointers: with key and value buffers in the nodes, the
//! copies cost a create ~37,000 instructions, with entries ~26,000), and redb receives them all
//! at once when the staged bytes pass a bound, or at a checkpoint: a leaf that many commits
//! changed is copied once. (Two tiers, a small recent set moved into a large one now and then,
//! measured the same and were dropped.)
//!
//! A reader holds the staged sets and a redb snapshot taken together, and sees the staged
//! change of a key over redb's entry; a deletion is staged as an [`Entry::Deleted`]. The store guarantees that
//! every pair a reader can take reads as one state: the maps are replaced only while the write
//! transaction is held, and emptied only after redb has committed exactly what they held.
//! This module keeps the maps, reads and merges them, and writes them into a redb transaction;
//! `redb_store.rs` decides when.

use crate::api::{KeyRange, StorageError, Table};
use crate::memory::entry::Entry;
use crate::overlay::{BaseEntry, Changes};
use crate::redb_layout;
use imbl::OrdSet;
use std::iter::Fuse;

/// One table's staged changes.
type StagedMap = OrdSet<Entry>;

/// Every table's changes of one tier, and how many bytes of keys and values they hold.
#[derive(Clone, Default)]
pub(crate) struct Tier {
    tables: [StagedMap; Table::ALL.len()],
    bytes: usize,
}

/// A staged change as a merge meets it.
type StagedEntry<'a> = &'a Entry;

impl Tier {
    pub(crate) fn is_empty(&self) -> bool {
        self.tables.iter().all(StagedMap::is_empty)
    }

    /// Bytes of keys and values staged, counting a key changed twice twice: a bound on what
    /// the maps hold, not an exact size.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// `Some(Some(value))`: staged written; `Some(None)`: staged deleted; `None`: redb's.
    pub(crate) fn get(&self, table: Table, key: &[u8]) -> Option<Option<&[u8]>> {
        self.tables[table.index()]
            .get::<[u8]>(key)
            .map(|entry| (!entry.is_deleted()).then(|| entry.value()))
    }

    /// These changes with one commit's on top of them, leaving these as they are (the tests'
    /// way to build tiers; a commit stages through [`Tier::add`]).
    #[cfg(test)]
    pub(crate) fn with(&self, tables: &[(Table, Changes)]) -> Tier {
        let mut next = self.clone();
        next.add(tables);
        next
    }

    /// Puts one commit's changes on top of these, in place: nodes no other tier shares are
    /// changed where they are, shared ones are copied first. Each value is copied into its
    /// entry (`memory/entry.rs`).
    pub(crate) fn add(&mut self, tables: &[(Table, Changes)]) {
        for (table, changes) in tables {
            let map = &mut self.tables[table.index()];
            for (key, change) in changes {
                let entry = match change {
                    Some(value) => Entry::new(key, value),
                    None => Entry::deleted(key),
                };
                self.bytes += key.len() + entry.value().len();
                map.insert(entry);
            }
        }
    }

    /// Writes every staged change into `transaction`, table by table in key order.
    pub(crate) fn apply(&self, transaction: &redb::WriteTransaction) -> Result<(), StorageError> {
        for (table, map) in Table::ALL.into_iter().zip(&self.tables) {
            if map.is_empty() {
                continue;
            }
            let changes = map
                .iter()
                .map(|entry| (entry.key(), (!entry.is_deleted()).then(|| entry.value())));
            redb_layout::write_sorted(transaction, table, changes)?;
        }
        Ok(())
    }

    /// This tier's entries of `range` merged over `base`'s (in scan order), lazily.
    fn merged<'a, K, V, I>(
        &'a self,
        table: Table,
        range: &KeyRange,
        reverse: bool,
        base: I,
    ) -> Merged<'a, K, V, I>
    where
        I: Iterator<Item = BaseEntry<K, V>>,
    {
        let changes = self.tables[table.index()].range::<_, [u8]>(range.as_slices());
        let staged: Box<dyn Iterator<Item = StagedEntry<'a>> + 'a> = if reverse {
            Box::new(changes.rev())
        } else {
            Box::new(changes)
        };
        Merged {
            staged: staged.fuse(),
            base: base.fuse(),
            next_staged: None,
            next_base: None,
            reverse,
        }
    }
}

/// The staged changes: the active tier, to which each commit adds its changes, over the frozen
/// one, which the store's flusher is writing into redb (empty when it is idle). A tier is
/// frozen whole and emptied only once redb holds it, so readers see the same values throughout.
#[derive(Clone, Default)]
pub(crate) struct Staged {
    pub(crate) active: Tier,
    pub(crate) frozen: Tier,
}

impl Staged {
    pub(crate) fn is_empty(&self) -> bool {
        self.active.is_empty() && self.frozen.is_empty()
    }

    /// `Some(Some(value))`: staged written; `Some(None)`: staged deleted; `None`: redb's.
    pub(crate) fn get(&self, table: Table, key: &[u8]) -> Option<Option<&[u8]>> {
        self.active
            .get(table, key)
            .or_else(|| self.frozen.get(table, key))
    }

    /// Whether a scan of `table` must merge staged changes at all.
    pub(crate) fn touches(&self, table: Table) -> bool {
        let touched = |tier: &Tier| !tier.tables[table.index()].is_empty();
        touched(&self.active) || touched(&self.frozen)
    }

    /// redb's entries of `range` (`base`, in scan order) with the staged changes of `table`
    /// merged over them, lazily: the frozen tier over redb's, the active one over both.
    pub(crate) fn merged<'a, K, V, I>(
        &'a self,
        table: Table,
        range: &KeyRange,
        reverse: bool,
        base: I,
    ) -> Merged<'a, Side<'a, K>, Side<'a, V>, Merged<'a, K, V, I>>
    where
        K: AsRef<[u8]>,
        I: Iterator<Item = BaseEntry<K, V>>,
    {
        let frozen = self.frozen.merged(table, range, reverse, base);
        self.active.merged(table, range, reverse, frozen)
    }

    /// Writes both tiers into `transaction`, the frozen one first (the active one is newer).
    pub(crate) fn apply(&self, transaction: &redb::WriteTransaction) -> Result<(), StorageError> {
        self.frozen.apply(transaction)?;
        self.active.apply(transaction)
    }
}

/// A key or value from either side of a merge.
pub(crate) enum Side<'a, T> {
    Base(T),
    Staged(&'a [u8]),
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Side<'_, T> {
    fn as_ref(&self) -> &[u8] {
        match self {
            Side::Base(bytes) => bytes.as_ref(),
            Side::Staged(bytes) => bytes,
        }
    }
}

/// The iterator [`Staged::merged`] returns: both sides in scan order, a staged change
/// replacing redb's entry of the same key, a staged deletion hiding it.
pub(crate) struct Merged<'a, K, V, I: Iterator> {
    staged: Fuse<Box<dyn Iterator<Item = StagedEntry<'a>> + 'a>>,
    base: Fuse<I>,
    next_staged: Option<StagedEntry<'a>>,
    next_base: Option<(K, V)>,
    reverse: bool,
}

type MergedEntry<'a, K, V> = BaseEntry<Side<'a, K>, Side<'a, V>>;

impl<'a, K, V, I> Iterator for Merged<'a, K, V, I>
where
    K: AsRef<[u8]>,
    I: Iterator<Item = BaseEntry<K, V>>,
{
    type Item = MergedEntry<'a, K, V>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.next_base.is_none() {
                match self.base.next() {
                    Some(Ok(entry)) => self.next_base = Some(entry),
                    Some(Err(error)) => return Some(Err(error)),
                    None => {}
                }
            }
            if self.next_staged.is_none() {
                self.next_staged = self.staged.next();
            }
            let Some(staged) = self.next_staged else {
                let (key, value) = self.next_base.take()?;
                return Some(Ok((Side::Base(key), Side::Base(value))));
            };
            if let Some((base_key, _)) = &self.next_base {
                let base_key = base_key.as_ref();
                let base_first = if self.reverse {
                    base_key > staged.key()
                } else {
                    base_key < staged.key()
                };
                if base_first {
                    let (key, value) = self.next_base.take()?;
                    return Some(Ok((Side::Base(key), Side::Base(value))));
                }
                if base_key == staged.key() {
                    // The staged change is newer than redb's entry of the same key.
                    self.next_base = None;
                }
            }
            self.next_staged = None;
            if !staged.is_deleted() {
                return Some(Ok((
                    Side::Staged(staged.key()),
                    Side::Staged(staged.value()),
                )));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::collections::BTreeMap;

    fn tier(changes: &[(&str, Option<&str>)]) -> Tier {
        let changes: Changes = changes
            .iter()
            .map(|(key, value)| {
                (
                    key.as_bytes().to_vec(),
                    value.map(|value| Bytes::from(value.as_bytes().to_vec())),
                )
            })
            .collect();
        Tier::default().with(&[(Table::Items, changes)])
    }

    fn staged(changes: &[(&str, Option<&str>)]) -> Staged {
        Staged {
            active: tier(changes),
            frozen: Tier::default(),
        }
    }

    fn merged(staged: &Staged, base: &BTreeMap<&str, &str>, reverse: bool) -> Vec<String> {
        let entries: Vec<BaseEntry<&[u8], &[u8]>> = base
            .iter()
            .map(|(key, value)| Ok((key.as_bytes(), value.as_bytes())))
            .collect();
        let entries: Box<dyn Iterator<Item = BaseEntry<&[u8], &[u8]>>> = if reverse {
            Box::new(entries.into_iter().rev())
        } else {
            Box::new(entries.into_iter())
        };
        let range = KeyRange::prefix(b"");
        staged
            .merged(Table::Items, &range, reverse, entries)
            .map(|entry| {
                let (key, value) = entry.expect("entry");
                format!(
                    "{}={}",
                    String::from_utf8_lossy(key.as_ref()),
                    String::from_utf8_lossy(value.as_ref())
                )
            })
            .collect()
    }

    #[test]
    fn a_staged_change_replaces_hides_or_adds_to_redbs_entries_in_both_directions() {
        let base = BTreeMap::from([("a", "1"), ("b", "2"), ("d", "4")]);
        let staged = staged(&[
            ("b", Some("20")),
            ("c", Some("30")),
            ("d", None),
            ("e", None),
        ]);
        assert_eq!(merged(&staged, &base, false), ["a=1", "b=20", "c=30"]);
        assert_eq!(merged(&staged, &base, true), ["c=30", "b=20", "a=1"]);
        assert_eq!(staged.get(Table::Items, b"d"), Some(None));
        assert_eq!(staged.get(Table::Items, b"b"), Some(Some(&b"20"[..])));
        assert_eq!(staged.get(Table::Items, b"a"), None);
        assert_eq!(staged.get(Table::Catalog, b"b"), None);
    }

    #[test]
    fn a_later_commit_replaces_an_earlier_staged_change_and_leaves_the_earlier_maps_alone() {
        let first = tier(&[("a", Some("1"))]);
        let second = first.with(&[(Table::Items, Changes::from([(b"a".to_vec(), None)]))]);
        assert_eq!(first.get(Table::Items, b"a"), Some(Some(&b"1"[..])));
        assert_eq!(second.get(Table::Items, b"a"), Some(None));
        assert!(second.bytes() > first.bytes());
        assert!(Tier::default().is_empty() && !second.is_empty());
    }

    #[test]
    fn the_active_tier_reads_over_the_frozen_one_which_reads_over_redb() {
        let staged = Staged {
            active: tier(&[("a", Some("3")), ("b", None)]),
            frozen: tier(&[
                ("a", Some("1")),
                ("b", Some("2")),
                ("c", Some("2")),
                ("d", None),
            ]),
        };
        let base = BTreeMap::from([("c", "0"), ("d", "0"), ("e", "0")]);
        assert_eq!(merged(&staged, &base, false), ["a=3", "c=2", "e=0"]);
        assert_eq!(merged(&staged, &base, true), ["e=0", "c=2", "a=3"]);
        assert_eq!(staged.get(Table::Items, b"a"), Some(Some(&b"3"[..])));
        assert_eq!(staged.get(Table::Items, b"b"), Some(None));
        assert_eq!(staged.get(Table::Items, b"c"), Some(Some(&b"2"[..])));
        assert!(staged.touches(Table::Items) && !staged.touches(Table::Index));
    }
}
