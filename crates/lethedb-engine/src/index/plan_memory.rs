//! What the planner found for recent queries: the queries whose filter proved not selective
//! enough for the index, so that their later pages (and the same query sent again) scan without
//! counting index entries again. Counting costs a walk of up to an eighth of the container's
//! entries, which on an unselective filter is a large share of a page's own scan.
//!
//! A remembered choice only saves work: the index and the scan give the same page whatever is
//! chosen (`query/page.rs`). It is forgotten when the container's index definition changes or
//! its item count moves by more than a quarter, and the memory holds a bounded number of
//! queries, cleared whole when full.

use std::collections::HashMap;
use std::sync::Mutex;

/// The most queries remembered before the memory is cleared.
const REMEMBERED_QUERIES_MAX: usize = 1024;

/// One query on one container's index definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PlanKey {
    pub(crate) container: u64,
    pub(crate) index_generation: u64,
    pub(crate) query: u64,
}

/// The queries whose filter was found unselective, with the item count it was found at.
#[derive(Debug, Default)]
pub(crate) struct PlanMemory {
    unselective: Mutex<HashMap<PlanKey, u64>>,
}

impl PlanMemory {
    /// Whether `key` was found unselective at an item count near `items`.
    pub(crate) fn scans(&self, key: &PlanKey, items: u64) -> bool {
        let Ok(memory) = self.unselective.lock() else {
            return false;
        };
        memory
            .get(key)
            .is_some_and(|&found_at| items.abs_diff(found_at) <= found_at / 4)
    }

    /// Remembers that `key`'s filter was not selective at `items` items.
    pub(crate) fn remember_scan(&self, key: PlanKey, items: u64) {
        if let Ok(mut memory) = self.unselective.lock() {
            if memory.len() >= REMEMBERED_QUERIES_MAX {
                memory.clear();
            }
            memory.insert(key, items);
        }
    }

    /// Forgets `key` (its filter proved selective after all).
    pub(crate) fn forget(&self, key: &PlanKey) {
        if let Ok(mut memory) = self.unselective.lock() {
            memory.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_holds_while_the_container_keeps_its_size() {
        let memory = PlanMemory::default();
        let key = PlanKey {
            container: 1,
            index_generation: 0,
            query: 7,
        };
        assert!(!memory.scans(&key, 1000));
        memory.remember_scan(key, 1000);
        assert!(memory.scans(&key, 1200));
        assert!(!memory.scans(&key, 1300), "a quarter more items asks again");
        let other = PlanKey {
            index_generation: 1,
            ..key
        };
        assert!(
            !memory.scans(&other, 1000),
            "another index definition asks again"
        );
        memory.forget(&key);
        assert!(!memory.scans(&key, 1000));
    }
}
