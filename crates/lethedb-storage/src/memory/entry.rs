//! One key-value pair of the in-memory store (and of the redb store's staged changes), as small
//! as it can be kept: one thin pointer, a single word in the map's nodes, to one allocation
//! that holds a short length prefix, the key and the value.
//!
//! Why one word: the maps' B-tree leaves hold sixteen entries each and are half full wherever
//! keys arrive in order (change log, resource ids, `_ts` index entries), so the slot an entry
//! takes in a leaf costs about twice its size per entry stored. An enum of thin pointers (the
//! previous layout: a key alone, a key with a small value, a key with a shared buffer) took
//! two words; a leaf of them took a 320-byte allocation, of these a 160-byte one. Values of
//! every size are copied next to their key: a large value is one copy of about a kilobyte,
//! and the writer's buffer goes when its transaction does.
//!
//! The prefix is the key's length, doubled, plus one for a deletion (the redb store's staged
//! changes; the in-memory store never holds one), as a LEB128 varint: one byte for keys under
//! 64 bytes, two under 8 KiB.
//!
//! Entries order, compare and borrow as their keys, so the maps look them up by key slices.
//! This module knows nothing of tables, snapshots or transactions.

use std::borrow::Borrow;
use std::cell::RefCell;
use std::cmp::Ordering;
use triomphe::ThinArc;

/// A stored pair.
#[derive(Clone)]
pub(crate) struct Entry(ThinArc<(), u8>);

/// Most bytes a LEB128 varint of a `u64` takes.
const PREFIX_BYTES_MAX: usize = 10;

thread_local! {
    /// Where an entry's bytes are joined before they are copied into its allocation, kept per
    /// thread so that building an entry allocates once.
    static JOINED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl Entry {
    /// `key` with `value` (empty for index entries).
    pub(crate) fn new(key: &[u8], value: &[u8]) -> Entry {
        Entry::build(key, value, false)
    }

    /// The deletion of `key`.
    pub(crate) fn deleted(key: &[u8]) -> Entry {
        Entry::build(key, &[], true)
    }

    fn build(key: &[u8], value: &[u8], deleted: bool) -> Entry {
        let head = (key.len() as u64) << 1 | u64::from(deleted);
        JOINED.with_borrow_mut(|joined| {
            joined.clear();
            joined.reserve(PREFIX_BYTES_MAX + key.len() + value.len());
            push_varint(joined, head);
            joined.extend_from_slice(key);
            joined.extend_from_slice(value);
            let entry = Entry(ThinArc::from_header_and_slice((), joined));
            // A thread that once joined a large value does not keep its buffer.
            if joined.capacity() > JOINED_KEPT_BYTES_MAX {
                *joined = Vec::new();
            }
            entry
        })
    }

    /// The prefix's value and the offset where the key starts.
    #[inline(always)]
    fn head(&self) -> (u64, usize) {
        match self.0.slice {
            [first, ..] if first < 0x80 => (u64::from(first), 1),
            [first, second, ..] if second < 0x80 => {
                (u64::from(first & 0x7f) | u64::from(second) << 7, 2)
            }
            _ => self.long_head(),
        }
    }

    #[cold]
    #[inline(never)]
    fn long_head(&self) -> (u64, usize) {
        let mut value = 0u64;
        for (at, byte) in self.0.slice.iter().take(PREFIX_BYTES_MAX).enumerate() {
            value |= u64::from(byte & 0x7f) << (7 * at);
            if byte & 0x80 == 0 {
                return (value, at + 1);
            }
        }
        // Unreachable: `build` wrote a whole varint.
        (0, 0)
    }

    pub(crate) fn is_deleted(&self) -> bool {
        self.head().0 & 1 == 1
    }

    /// The key and the value, split where the prefix says.
    #[inline(always)]
    fn split(&self) -> (&[u8], &[u8]) {
        let (head, start) = self.head();
        let rest = self.0.slice.get(start..).unwrap_or(&[]);
        rest.split_at_checked((head >> 1) as usize)
            .unwrap_or((rest, &[]))
    }

    #[inline(always)]
    pub(crate) fn key(&self) -> &[u8] {
        self.split().0
    }

    pub(crate) fn value(&self) -> &[u8] {
        self.split().1
    }
}

/// The joining buffer a thread keeps between entries.
const JOINED_KEPT_BYTES_MAX: usize = 64 * 1024;

fn push_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Entry")
            .field("key", &self.key())
            .field("value_bytes", &self.value().len())
            .field("deleted", &self.is_deleted())
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
    #[inline(always)]
    fn cmp(&self, other: &Entry) -> Ordering {
        self.key().cmp(other.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_one_word() {
        assert_eq!(std::mem::size_of::<Entry>(), std::mem::size_of::<usize>());
    }

    #[test]
    fn each_entry_gives_back_its_key_value_and_whether_it_is_a_deletion() {
        let keys = [0usize, 1, 63, 64, 127, 128, 8191, 8192, 70_000];
        let values = [0usize, 1, 256, 257, 5000];
        for key_bytes in keys {
            let key: Vec<u8> = (0..key_bytes).map(|at| (at % 251) as u8).collect();
            for value_bytes in values {
                let value: Vec<u8> = (0..value_bytes).map(|at| (at % 241) as u8).collect();
                let entry = Entry::new(&key, &value);
                assert_eq!(entry.key(), &key[..], "key of {key_bytes} bytes");
                assert_eq!(entry.value(), &value[..], "value of {value_bytes} bytes");
                assert!(!entry.is_deleted());
            }
            let deleted = Entry::deleted(&key);
            assert_eq!(deleted.key(), &key[..]);
            assert!(deleted.value().is_empty());
            assert!(deleted.is_deleted());
        }
    }

    #[test]
    fn a_value_is_copied_so_the_writers_buffer_can_go() {
        let buffer = vec![1u8; 4096];
        let entry = Entry::new(b"item", &buffer);
        assert_ne!(entry.value().as_ptr(), buffer.as_ptr());
        drop(buffer);
        assert!(entry.value().iter().all(|byte| *byte == 1));
    }

    #[test]
    fn entries_order_and_compare_by_key_alone() {
        let a = Entry::new(b"a", b"zzz");
        let b = Entry::new(b"b", b"");
        assert!(a < b);
        assert_eq!(a, Entry::new(b"a", b""));
        assert_eq!(a, Entry::deleted(b"a"));
        // A longer key whose length prefix is larger sorts by its bytes, not its prefix.
        let long = Entry::new(&[b'a'; 200], b"");
        assert!(long > a && long < b);
        let borrowed: &[u8] = a.borrow();
        assert_eq!(borrowed, b"a");
    }
}
