//! Keeping a vector set's approximate graph up with the set: the slots whose vectors changed
//! since the graph last took them are inserted, on every core, when a query that uses the graph
//! finds the set brought forward. Writes never wait for it (the set itself follows the change
//! log, `search/vector_sync.rs`); the first approximate query after a bulk load builds the
//! graph, and later ones insert only what changed. A graph that fails is dropped from use: the
//! path is then searched exactly.

use crate::search::vector_set::VectorSet;

/// The most threads that insert at once.
const INSERT_THREADS_MAX: usize = 16;

/// A graph that has lost more than this share of the vectors it held is built again: a node
/// removed from an HNSW graph takes its links with it, and the graph's reach decays.
const REMOVED_SHARE_MAX: usize = 4;

/// Inserts every pending slot of `set` into its graph (a fresh graph when too many of its
/// nodes were removed).
pub(crate) fn index_pending(set: &mut VectorSet) {
    if set.ann_removed.saturating_mul(REMOVED_SHARE_MAX) > set.len().max(1_024) {
        if let Some(spec) = set.ann.as_ref().map(|ann| ann.spec) {
            set.ann = None;
            set.attach_ann(spec);
        }
    }
    let mut pending = std::mem::take(&mut set.ann_pending);
    pending.sort_unstable();
    pending.dedup();
    pending.retain(|&slot| set.has_vector(slot) && !set.in_ann[slot as usize]);
    let Some(ann) = &set.ann else {
        return;
    };
    if pending.is_empty() {
        return;
    }
    if let Err(failure) = ann.reserve(pending.len()) {
        set.ann_failure = Some(failure);
        return;
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(INSERT_THREADS_MAX);
    let chunk = pending.len().div_ceil(threads).max(1);
    let reading: &VectorSet = set;
    let failure = std::thread::scope(|scope| {
        let workers: Vec<_> = pending
            .chunks(chunk)
            .map(|slots| {
                scope.spawn(move || {
                    slots
                        .iter()
                        .try_for_each(|&slot| ann.add(slot, reading.vector(slot)))
                })
            })
            .collect();
        workers.into_iter().find_map(|worker| match worker.join() {
            Ok(outcome) => outcome.err(),
            Err(_) => Some("a thread inserting into the vector graph panicked".to_string()),
        })
    });
    if let Some(failure) = failure {
        tracing::warn!(%failure, "the approximate vector index failed; its path is searched exactly");
        set.ann_failure = Some(failure);
        return;
    }
    for slot in pending {
        set.in_ann[slot as usize] = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::ann::AnnSpec;
    use lethedb_query::Distance;
    use serde_json::json;

    #[test]
    fn the_graph_follows_puts_and_removes() {
        let path = vec!["v".to_string()];
        let mut set = VectorSet::new(3);
        for n in 0..50u32 {
            let x = f64::from(n);
            set.put(
                format!("k{n}").as_bytes(),
                1,
                &json!({"v": [x, 1.0, -x]}),
                &path,
            );
        }
        set.attach_ann(AnnSpec {
            distance: Distance::Euclidean,
            search_list: 40,
        });
        index_pending(&mut set);
        assert!(set.ann_failure.is_none(), "{:?}", set.ann_failure);
        let near = |set: &VectorSet, query: &[f32]| {
            let ann = set.ann.as_ref().unwrap();
            let slots = ann.search(query, 2, 40, |_| true).unwrap();
            slots
                .iter()
                .map(|&slot| set.key(slot).to_vec())
                .collect::<Vec<_>>()
        };
        let query = [20.2, 1.0, -20.2];
        assert_eq!(near(&set, &query), vec![b"k20".to_vec(), b"k21".to_vec()]);
        set.remove(b"k20", 2);
        set.put(b"k21", 3, &json!({"v": [100.0, 0.0, 0.0]}), &path);
        index_pending(&mut set);
        // Points on a line are the worst case for a graph that loses a node (its neighbours
        // may be reachable only through it): the gone and the moved are never returned.
        let now = near(&set, &query);
        assert!(!now.contains(&b"k20".to_vec()) && !now.contains(&b"k21".to_vec()));
        assert_eq!(near(&set, &[99.0, 0.0, 0.0])[0], b"k21".to_vec());
    }
}
