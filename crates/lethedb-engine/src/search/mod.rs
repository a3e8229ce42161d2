//! Search's own state beside the store: for vector search, the decoded vectors of each
//! embedding path of each container (`vector_set.rs`), brought forward to a query's snapshot
//! from the change log (`vector_sync.rs`) and scanned with single-precision kernels whose error
//! is bounded (`kernels.rs`), so an exact `ORDER BY VectorDistance(...)` loads only the
//! documents that can make its top instead of every document in scope; and, for a path with a
//! `quantizedFlat` or `diskANN` index, an approximate graph over those vectors (`ann.rs`),
//! caught up with the set by the queries that use it (`ann_upkeep.rs`).
//!
//! Nothing here is durable or decides an answer: the sets are rebuilt from the store after a
//! restart, and the page computes every score it returns from the documents it loads. Policies
//! are checked in `catalog/search_policy.rs`; queries reach this module from `query/`.

pub(crate) mod ann;
pub(crate) mod ann_upkeep;
pub(crate) mod kernels;
pub(crate) mod vector_set;
pub(crate) mod vector_sync;

use crate::search::vector_set::VectorSet;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

/// Which set: a container's number and an embedding path.
type SetKey = (u64, Vec<String>);

/// Every vector set this engine keeps, made when a query first needs one.
#[derive(Default)]
pub(crate) struct VectorStores {
    sets: Mutex<HashMap<SetKey, Arc<RwLock<VectorSet>>>>,
}

impl VectorStores {
    /// The set of `path` in the container numbered `container`, empty when new (a container
    /// number is never reused, so a set never outlives its container's definition of the
    /// path: embeddings cannot change once created).
    pub(crate) fn set(
        &self,
        container: u64,
        path: &[String],
        dimensions: usize,
    ) -> Arc<RwLock<VectorSet>> {
        let mut sets = self
            .sets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let set = sets
            .entry((container, path.to_vec()))
            .or_insert_with(|| Arc::new(RwLock::new(VectorSet::new(dimensions))));
        Arc::clone(set)
    }

    /// Drops every set: after the store returned to a snapshot, a set may hold vectors of
    /// versions the store no longer has, and a container number may name another container.
    pub(crate) fn clear(&self) {
        self.sets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }

    /// Drops the sets of a deleted container (a query still reading one keeps it until done).
    pub(crate) fn forget(&self, container: u64) {
        self.sets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|(number, _), _| *number != container);
    }
}
