//! One key-value pair of the in-memory store, as small as it can be kept: a thin pointer (one
//! word in the map's nodes) to one allocation that holds the key and, when the value is small,
//! the value after it. A large value stays the buffer the writer gave, shared rather than
//! copied, so that an item's record and its change-log version, which the engine writes as one
//! buffer, are stored once.
//!
//! Entries order, compare and borrow as their keys, so the maps look them up by key slices.
//! This module knows nothing of tables, snapshots or transactions.

use bytes::Bytes;
use std::borrow::Borrow;
use std::cmp::Ordering;
use triomphe::ThinArc;

/// Values up to this size are copied next to their key: the copy costs less than keeping a
/// second buffer (and its share count) alive for them.
const INLINE_VALUE_BYTES_MAX: usize = 256;

/// A stored pair.
#[derive(Clone)]
pub(crate) enum Entry {
    /// A key whose value is empty (index and change-index entries): the key alone.
    Key(ThinArc<(), u8>),
    /// The key followed by a small value; the header is the key's length.
    Inline(ThinArc<u32, u8>),
    /// The key, and its value in a buffer that other entries may share.
    Shared(ThinArc<Bytes, u8>),
    /// A deletion not yet written where it applies (the redb store's staged changes,
    /// `redb_staged.rs`): the key alone. The in-memory store never holds one.
    Deleted(ThinArc<(), u8>),
}

impl Entry {
    pub(crate) fn new(key: &[u8], value: Bytes) -> Entry {
        if value.is_empty() {
            return Entry::Key(ThinArc::from_header_and_slice((), key));
        }
        match u32::try_from(key.len()) {
            Ok(key_bytes) if value.len() <= INLINE_VALUE_BYTES_MAX => {
                let mut joined = Vec::with_capacity(key.len() + value.len());
                joined.extend_from_slice(key);
                joined.extend_from_slice(&value);
                Entry::Inline(ThinArc::from_header_and_slice(key_bytes, &joined))
            }
            _ => Entry::Shared(ThinArc::from_header_and_slice(value, key)),
        }
    }

    /// The deletion of `key`.
    pub(crate) fn deleted(key: &[u8]) -> Entry {
        Entry::Deleted(ThinArc::from_header_and_slice((), key))
    }

    pub(crate) fn is_deleted(&self) -> bool {
        matches!(self, Entry::Deleted(_))
    }

    pub(crate) fn key(&self) -> &[u8] {
        match self {
            Entry::Key(entry) | Entry::Deleted(entry) => &entry.slice,
            Entry::Inline(entry) => entry
                .slice
                .get(..entry.header.header as usize)
                .unwrap_or(&[]),
            Entry::Shared(entry) => &entry.slice,
        }
    }

    pub(crate) fn value(&self) -> &[u8] {
        match self {
            Entry::Key(_) | Entry::Deleted(_) => &[],
            Entry::Inline(entry) => entry
                .slice
                .get(entry.header.header as usize..)
                .unwrap_or(&[]),
            Entry::Shared(entry) => &entry.header.header,
        }
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Entry")
            .field("key", &self.key())
            .field("value_bytes", &self.value().len())
            .finish()
    }
}

impl Borrow<[u8]> for Entry {
    fn borrow(&self) -> &[u8] {
        self.key()
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Entry) -> Ordering {
        self.key().cmp(other.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_gives_back_its_key_and_value() {
        let large = Bytes::from(vec![7u8; INLINE_VALUE_BYTES_MAX + 1]);
        let cases = [
            (b"index".as_slice(), Bytes::new()),
            (b"counters".as_slice(), Bytes::from_static(b"small value")),
            (b"".as_slice(), Bytes::from_static(b"v")),
            (b"item".as_slice(), large.clone()),
        ];
        for (key, value) in cases {
            let entry = Entry::new(key, value.clone());
            assert_eq!(entry.key(), key);
            assert_eq!(entry.value(), &value[..]);
        }
        assert!(matches!(Entry::new(b"k", Bytes::new()), Entry::Key(_)));
        assert!(matches!(
            Entry::new(b"k", Bytes::from_static(b"v")),
            Entry::Inline(_)
        ));
        assert!(matches!(Entry::new(b"k", large), Entry::Shared(_)));
    }

    #[test]
    fn a_large_value_is_the_writers_buffer_not_a_copy() {
        let buffer = Bytes::from(vec![1u8; 4096]);
        let record = buffer.slice(100..);
        let logged = Entry::new(b"log", buffer.clone());
        let item = Entry::new(b"item", record.clone());
        assert_eq!(logged.value().as_ptr(), buffer.as_ptr());
        assert_eq!(item.value().as_ptr(), record.as_ptr());
    }

    #[test]
    fn entries_order_and_compare_by_key_alone() {
        let a = Entry::new(b"a", Bytes::from_static(b"zzz"));
        let b = Entry::new(b"b", Bytes::new());
        assert!(a < b);
        assert_eq!(a, Entry::new(b"a", Bytes::new()));
        let borrowed: &[u8] = a.borrow();
        assert_eq!(borrowed, b"a");
    }
}
