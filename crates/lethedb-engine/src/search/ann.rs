//! The approximate nearest-neighbour graph behind `quantizedFlat` and `diskANN` vector indexes:
//! an HNSW graph from the `usearch` crate (the winner of the bake-off in
//! `bench/results/vector-index.md`), keyed by the slots of a vector set, its vectors stored in
//! half precision. It answers which slots are probably closest; the vector set decides which
//! slots it holds, and the page loads and scores every candidate exactly.
//!
//! The graph's metric is the embedding policy's distance function; a query that names another
//! function is served by the exact path.

use lethedb_query::Distance;
use std::sync::Mutex;
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

/// Connections per node (HNSW's M).
const CONNECTIONS: usize = 16;
/// The candidate list while inserting (HNSW's efConstruction).
const INSERT_LIST: usize = 128;
/// Searches that may run at once: the scan pool's permits, and the threads that insert.
const THREADS: usize = 16;

/// What the graph of one vector index is built with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct AnnSpec {
    pub(crate) distance: Distance,
    /// The index's `indexingSearchListSize` (the service's default is 100).
    pub(crate) search_list: usize,
}

/// The graph, and its failures as text (a failure makes the page take the exact path).
pub(crate) struct Ann {
    index: Index,
    pub(crate) spec: AnnSpec,
    /// Held while a search sets the graph's search list and runs: the list is the graph's
    /// setting, not the call's, and concurrent searches may want different ones.
    searching: Mutex<()>,
}

impl Ann {
    pub(crate) fn new(dimensions: usize, spec: AnnSpec) -> Result<Ann, String> {
        let metric = match spec.distance {
            Distance::Cosine => MetricKind::Cos,
            Distance::DotProduct => MetricKind::IP,
            Distance::Euclidean => MetricKind::L2sq,
        };
        let options = IndexOptions {
            dimensions,
            metric,
            quantization: ScalarKind::F16,
            connectivity: CONNECTIONS,
            expansion_add: INSERT_LIST,
            expansion_search: spec.search_list,
            multi: false,
        };
        let index = Index::new(&options).map_err(|error| error.to_string())?;
        Ok(Ann {
            index,
            spec,
            searching: Mutex::new(()),
        })
    }

    /// Makes room for `more` vectors beyond those held.
    pub(crate) fn reserve(&self, more: usize) -> Result<(), String> {
        let needed = self.index.size() + more;
        if needed <= self.index.capacity() {
            return Ok(());
        }
        let capacity = needed.max(2 * self.index.capacity()).max(1_024);
        self.index
            .reserve_capacity_and_threads(capacity, THREADS)
            .map_err(|error| error.to_string())
    }

    /// Adds the vector of `slot` (room must have been reserved).
    pub(crate) fn add(&self, slot: u32, vector: &[f32]) -> Result<(), String> {
        self.index
            .add(u64::from(slot), vector)
            .map_err(|error| error.to_string())
    }

    /// Removes the vector of `slot`, if held.
    pub(crate) fn remove(&self, slot: u32) -> Result<(), String> {
        self.index
            .remove(u64::from(slot))
            .map(|_| ())
            .map_err(|error| error.to_string())
    }

    /// The `count` slots probably closest to `query` among those `admit` accepts, closest
    /// first, exploring a list of `search_list` candidates.
    pub(crate) fn search(
        &self,
        query: &[f32],
        count: usize,
        search_list: usize,
        admit: impl Fn(u32) -> bool,
    ) -> Result<Vec<u32>, String> {
        let _searching = self
            .searching
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.index
            .change_expansion_search(search_list.max(count).max(self.spec.search_list));
        let matches = self
            .index
            .filtered_search(query, count, |key| u32::try_from(key).is_ok_and(&admit))
            .map_err(|error| error.to_string())?;
        Ok(matches
            .keys
            .into_iter()
            .filter_map(|key| u32::try_from(key).ok())
            .collect())
    }
}
