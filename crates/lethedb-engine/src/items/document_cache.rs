//! A bounded cache of parsed documents for scans, so a query over a container does not parse
//! every item's JSON again on every page and every query.
//!
//! Entries are keyed by item key and tagged with the LSN of the version they were parsed from;
//! a lookup with any other LSN misses, so writes need no invalidation. Memory is bounded by a
//! byte budget split over shards; a shard that outgrows its share is emptied (a cheap, blunt
//! eviction: the cache only ever saves work, it never decides an answer). This module knows
//! nothing of visibility: callers look up only versions they already decided are visible.
//!
//! The writer keeps a second one (`Writer::written`): the bodies of versions that replaced
//! another, put in once their commit is durable, so that the next write of the same item finds
//! its old version's document (whose index entries it removes) without parsing it again.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The default budget for parsed documents.
pub const DOCUMENT_CACHE_BYTES_DEFAULT: usize = 64 * 1024 * 1024;
const SHARDS: usize = 16;

#[derive(Default)]
struct Shard {
    entries: HashMap<Vec<u8>, (u64, Arc<Value>, usize)>,
    bytes: usize,
}

/// Parsed documents by item key and LSN.
pub struct DocumentCache {
    shards: Vec<Mutex<Shard>>,
    shard_bytes_max: AtomicUsize,
    /// Raised by every [`DocumentCache::clear`]: an insert made for an earlier generation is
    /// dropped ([`DocumentCache::insert_in`]).
    generation: AtomicU64,
}

impl DocumentCache {
    pub fn new(bytes_max: usize) -> DocumentCache {
        DocumentCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            shard_bytes_max: AtomicUsize::new(bytes_max / SHARDS),
            generation: AtomicU64::new(0),
        }
    }

    /// Changes the budget (0 turns the cache off); what it holds is forgotten.
    pub fn set_bytes_max(&self, bytes_max: usize) {
        self.shard_bytes_max
            .store(bytes_max / SHARDS, Ordering::Relaxed);
        self.clear();
    }

    /// The current generation, to pass to [`DocumentCache::insert_in`].
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn shard(&self, key: &[u8]) -> &Mutex<Shard> {
        // The last bytes of an item key (the id) spread best.
        let spread = key.iter().rev().take(8).fold(0usize, |hash, &b| {
            hash.wrapping_mul(31).wrapping_add(usize::from(b))
        });
        &self.shards[spread % SHARDS]
    }

    /// Forgets every document: after the store returned to a snapshot, an LSN may name another
    /// version than the one cached under it.
    pub fn clear(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        for shard in &self.shards {
            let mut shard = shard
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            shard.entries.clear();
            shard.bytes = 0;
        }
    }

    /// The parsed version `lsn` of the item at `key`, if cached.
    pub fn get(&self, key: &[u8], lsn: u64) -> Option<Arc<Value>> {
        let shard = self.shard(key).lock().ok()?;
        match shard.entries.get(key) {
            Some((cached_lsn, document, _)) if *cached_lsn == lsn => Some(Arc::clone(document)),
            _ => None,
        }
    }

    /// Remembers a parsed version; `source_bytes` is the size of the JSON it came from.
    pub fn insert(&self, key: &[u8], lsn: u64, document: Arc<Value>, source_bytes: usize) {
        self.insert_in(None, key, lsn, document, source_bytes);
    }

    /// [`DocumentCache::insert`], dropped when the cache was cleared since `generation` was
    /// read: a version committed before a snapshot was restored may share its LSN with another
    /// version written after.
    pub fn insert_in(
        &self,
        generation: Option<u64>,
        key: &[u8],
        lsn: u64,
        document: Arc<Value>,
        source_bytes: usize,
    ) {
        let shard_bytes_max = self.shard_bytes_max.load(Ordering::Relaxed);
        if shard_bytes_max == 0 {
            return;
        }
        // A parsed document takes roughly twice its text plus the map's own overhead.
        let cost = source_bytes * 2 + 256;
        let Ok(mut shard) = self.shard(key).lock() else {
            return;
        };
        // Under the shard's lock: a clear raises the generation before it empties the shards.
        if generation.is_some_and(|generation| generation != self.generation()) {
            return;
        }
        if shard.bytes + cost > shard_bytes_max {
            shard.entries.clear();
            shard.bytes = 0;
        }
        if let Some((_, _, old_cost)) = shard.entries.insert(key.to_vec(), (lsn, document, cost)) {
            shard.bytes -= old_cost;
        }
        shard.bytes += cost;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hits_only_the_same_version_and_stays_within_budget() {
        let cache = DocumentCache::new(16 * 4096);
        cache.insert(b"k1", 3, Arc::new(json!({"a": 1})), 10);
        assert_eq!(cache.get(b"k1", 3).as_deref(), Some(&json!({"a": 1})));
        assert!(cache.get(b"k1", 4).is_none(), "another version misses");
        assert!(cache.get(b"k2", 3).is_none());
        for i in 0..10_000u32 {
            cache.insert(&i.to_be_bytes(), 1, Arc::new(json!(i)), 100);
        }
        let total: usize = cache
            .shards
            .iter()
            .map(|s| s.lock().map_or(0, |s| s.bytes))
            .sum();
        assert!(total <= 16 * 4096, "{total}");
        let disabled = DocumentCache::new(0);
        disabled.insert(b"k", 1, Arc::new(json!(1)), 1);
        assert!(disabled.get(b"k", 1).is_none());
    }

    #[test]
    fn an_insert_made_before_a_clear_is_dropped() {
        let cache = DocumentCache::new(16 * 4096);
        let before = cache.generation();
        cache.insert_in(Some(before), b"k", 1, Arc::new(json!(1)), 1);
        assert!(cache.get(b"k", 1).is_some());
        cache.clear();
        assert!(cache.get(b"k", 1).is_none());
        cache.insert_in(Some(before), b"k", 2, Arc::new(json!(2)), 1);
        assert!(cache.get(b"k", 2).is_none(), "read before the clear");
        cache.insert_in(Some(cache.generation()), b"k", 2, Arc::new(json!(2)), 1);
        assert!(cache.get(b"k", 2).is_some());
        cache.set_bytes_max(0);
        assert!(cache.get(b"k", 2).is_none());
        cache.insert(b"k", 3, Arc::new(json!(3)), 1);
        assert!(cache.get(b"k", 3).is_none(), "turned off");
    }
}
