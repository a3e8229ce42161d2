//! The vectors of one embedding path of one container, decoded: one slot per item, its
//! single-precision components side by side in one array (so a scan reads them contiguously),
//! its exact norm, and its item key. An item whose value at the path is not an array of the
//! embedding's dimensions of numbers in range is *irregular*: the store keeps no vector for it
//! and every search loads it, so its score is always the query crate's own.
//!
//! The set reflects the container as of one LSN (`VectorSet::lsn`); `search/vector_sync.rs`
//! brings it forward. It also remembers which items changed recently (the journal), so that a
//! query whose snapshot is older than the set can load those items instead of trusting their
//! newer vectors. It decides no visibility: expiry, deletion and scope are checked on every
//! document a search loads, through the scan's one visibility check.

use crate::search::ann::{Ann, AnnSpec};
use crate::search::kernels::{Closeness, Probe, COMPONENT_MAGNITUDE_MAX};
use serde_json::Value;
use std::collections::{HashMap, HashSet, VecDeque};

/// The most recent changes the journal remembers; a query whose snapshot is older than the
/// oldest scans instead.
const JOURNAL_CHANGES_MAX: usize = 65_536;

/// What a slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotKind {
    Free,
    Vector,
    Irregular,
}

/// One scored slot of a scan.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scored {
    pub(crate) closeness: Closeness,
    pub(crate) slot: u32,
}

/// The decoded vectors of one path of one container.
pub(crate) struct VectorSet {
    dimensions: usize,
    /// The container version the set reflects (its shards' sequences summed; `None`: never
    /// built).
    pub(crate) lsn: Option<u64>,
    /// The LSN of each shard the set reflects, by shard.
    pub(crate) shard_lsns: Vec<u64>,
    slots_by_key: HashMap<Vec<u8>, u32>,
    /// Each slot's item key (empty for a free slot).
    keys: Vec<Vec<u8>>,
    kinds: Vec<SlotKind>,
    norms: Vec<f64>,
    /// `dimensions` components per slot.
    values: Vec<f32>,
    free: Vec<u32>,
    irregular: usize,
    /// The item keys changed after `journal_from`, each with the container version it was
    /// applied for (the change's own LSN in a one-shard container, whose LSN is its version;
    /// the version a replay brought the set to in a multi-shard one), oldest first.
    journal: VecDeque<(u64, Vec<u8>)>,
    journal_from: u64,
    /// The approximate graph of a `quantizedFlat` or `diskANN` index over the slots, if the
    /// path has one (`search/ann_upkeep.rs` keeps it).
    pub(crate) ann: Option<Ann>,
    /// Whether each slot's current vector is in the graph.
    pub(crate) in_ann: Vec<bool>,
    /// Slots whose vector changed since the graph last took them.
    pub(crate) ann_pending: Vec<u32>,
    /// Nodes removed from the graph since it was made.
    pub(crate) ann_removed: usize,
    /// Why the graph failed, if it did: the path is then searched exactly.
    pub(crate) ann_failure: Option<String>,
}

impl VectorSet {
    pub(crate) fn new(dimensions: usize) -> VectorSet {
        VectorSet {
            dimensions,
            lsn: None,
            shard_lsns: Vec::new(),
            slots_by_key: HashMap::new(),
            keys: Vec::new(),
            kinds: Vec::new(),
            norms: Vec::new(),
            values: Vec::new(),
            free: Vec::new(),
            irregular: 0,
            journal: VecDeque::new(),
            journal_from: 0,
            ann: None,
            in_ann: Vec::new(),
            ann_pending: Vec::new(),
            ann_removed: 0,
            ann_failure: None,
        }
    }

    /// Empties the set before a rebuild as of `lsn`.
    pub(crate) fn clear(&mut self, lsn: u64) {
        let spec = self.ann.as_ref().map(|ann| ann.spec);
        *self = VectorSet::new(self.dimensions);
        self.journal_from = lsn;
        if let Some(spec) = spec {
            self.attach_ann(spec);
        }
    }

    /// Gives the set a graph built with `spec` (a new one, holding no slot yet, when it has
    /// none or one built otherwise).
    pub(crate) fn attach_ann(&mut self, spec: AnnSpec) {
        if self.ann.as_ref().is_some_and(|ann| ann.spec == spec) {
            return;
        }
        match Ann::new(self.dimensions, spec) {
            Ok(ann) => {
                self.ann = Some(ann);
                self.ann_removed = 0;
                self.in_ann = vec![false; self.keys.len()];
                self.ann_pending = (0..self.keys.len() as u32).collect();
            }
            Err(failure) => self.ann_failure = Some(failure),
        }
    }

    /// The vector of a slot.
    pub(crate) fn vector(&self, slot: u32) -> &[f32] {
        let start = slot as usize * self.dimensions;
        &self.values[start..start + self.dimensions]
    }

    /// Whether a slot holds a vector.
    pub(crate) fn has_vector(&self, slot: u32) -> bool {
        self.kinds.get(slot as usize) == Some(&SlotKind::Vector)
    }

    /// Takes `slot`'s vector out of the graph, and queues it again when it has one.
    fn unindex(&mut self, slot: u32) {
        let Some(ann) = &self.ann else {
            return;
        };
        let index = slot as usize;
        if self.in_ann.get(index) == Some(&true) {
            if let Err(failure) = ann.remove(slot) {
                self.ann_failure = Some(failure);
            }
            self.in_ann[index] = false;
            self.ann_removed += 1;
        }
        if self.kinds[index] == SlotKind::Vector {
            self.ann_pending.push(slot);
        }
    }

    /// Forgets the journal: the set was just rebuilt as of `lsn`.
    pub(crate) fn clear_journal(&mut self, lsn: u64) {
        self.journal.clear();
        self.journal_from = lsn;
    }

    /// Items held (with a vector or irregular).
    pub(crate) fn len(&self) -> usize {
        self.keys.len() - self.free.len()
    }

    /// Records the version of the item at `key` written at `lsn` (`document`: its body).
    pub(crate) fn put(&mut self, key: &[u8], lsn: u64, document: &Value, path: &[String]) {
        let slot = match self.slots_by_key.get(key) {
            Some(&slot) => slot,
            None => self.allocate(key),
        };
        let index = slot as usize;
        if self.kinds[index] == SlotKind::Irregular {
            self.irregular -= 1;
        }
        if let Some((vector, norm)) = decoded(value_at(document, path), self.dimensions) {
            let start = index * self.dimensions;
            self.values[start..start + self.dimensions].copy_from_slice(&vector);
            self.norms[index] = norm;
            self.kinds[index] = SlotKind::Vector;
        } else {
            self.kinds[index] = SlotKind::Irregular;
            self.irregular += 1;
        }
        self.unindex(slot);
        self.note(lsn, key);
    }

    /// Forgets the item at `key`, deleted at `lsn`.
    pub(crate) fn remove(&mut self, key: &[u8], lsn: u64) {
        let Some(slot) = self.slots_by_key.remove(key) else {
            return;
        };
        let index = slot as usize;
        if self.kinds[index] == SlotKind::Irregular {
            self.irregular -= 1;
        }
        self.kinds[index] = SlotKind::Free;
        self.keys[index] = Vec::new();
        self.unindex(slot);
        self.free.push(slot);
        self.note(lsn, key);
    }

    fn allocate(&mut self, key: &[u8]) -> u32 {
        let slot = if let Some(slot) = self.free.pop() {
            slot
        } else {
            self.keys.push(Vec::new());
            self.in_ann.push(false);
            self.kinds.push(SlotKind::Free);
            self.norms.push(0.0);
            self.values.resize(self.values.len() + self.dimensions, 0.0);
            (self.keys.len() - 1) as u32
        };
        self.keys[slot as usize] = key.to_vec();
        self.slots_by_key.insert(key.to_vec(), slot);
        slot
    }

    fn note(&mut self, lsn: u64, key: &[u8]) {
        self.journal.push_back((lsn, key.to_vec()));
        while self.journal.len() > JOURNAL_CHANGES_MAX {
            if let Some((lsn, _)) = self.journal.pop_front() {
                self.journal_from = lsn;
            }
        }
    }

    /// The item keys changed after `lsn`, if the journal reaches back that far.
    pub(crate) fn changed_after(&self, lsn: u64) -> Option<HashSet<&[u8]>> {
        if lsn < self.journal_from {
            return None;
        }
        Some(
            self.journal
                .iter()
                .filter(|(changed, _)| *changed > lsn)
                .map(|(_, key)| key.as_slice())
                .collect(),
        )
    }

    /// The item key of a slot.
    pub(crate) fn key(&self, slot: u32) -> &[u8] {
        &self.keys[slot as usize]
    }

    /// The keys of the irregular items `in_scope` admits.
    pub(crate) fn irregular_keys(&self, in_scope: &dyn Fn(&[u8]) -> bool) -> Vec<&[u8]> {
        if self.irregular == 0 {
            return Vec::new();
        }
        self.kinds
            .iter()
            .zip(&self.keys)
            .filter(|(kind, key)| **kind == SlotKind::Irregular && in_scope(key))
            .map(|(_, key)| key.as_slice())
            .collect()
    }

    /// Scores every vector `in_scope` admits against `probe` (the scan of exact search).
    /// A vector whose score is undefined (a cosine with a zero vector) is left out: the page
    /// loads it as irregular.
    pub(crate) fn score(
        &self,
        probe: &Probe,
        in_scope: &dyn Fn(&[u8]) -> bool,
        undefined: &mut Vec<u32>,
    ) -> Vec<Scored> {
        let mut scored = Vec::with_capacity(self.len());
        let rows = self.values.chunks_exact(self.dimensions.max(1));
        for (slot, ((vector, kind), key)) in rows.zip(&self.kinds).zip(&self.keys).enumerate() {
            if *kind != SlotKind::Vector || !in_scope(key) {
                continue;
            }
            match probe.closeness(vector, self.norms[slot]) {
                Some(closeness) => scored.push(Scored {
                    closeness,
                    slot: slot as u32,
                }),
                None => undefined.push(slot as u32),
            }
        }
        scored
    }

    /// [`VectorSet::score`] over the items at `keys` only (a selective filter's candidates):
    /// a key the set holds without a vector, or does not hold, goes to `unscored`.
    pub(crate) fn score_keys<'k>(
        &self,
        probe: &Probe,
        keys: &'k [Vec<u8>],
        unscored: &mut Vec<&'k [u8]>,
    ) -> Vec<Scored> {
        let mut scored = Vec::with_capacity(keys.len());
        for key in keys {
            let slot = self.slots_by_key.get(key.as_slice()).copied();
            let closeness = slot
                .filter(|&slot| self.kinds[slot as usize] == SlotKind::Vector)
                .and_then(|slot| {
                    let start = slot as usize * self.dimensions;
                    let vector = &self.values[start..start + self.dimensions];
                    probe.closeness(vector, self.norms[slot as usize])
                });
            match (slot, closeness) {
                (Some(slot), Some(closeness)) => scored.push(Scored { closeness, slot }),
                _ => unscored.push(key),
            }
        }
        scored
    }

    /// The exact norm of a slot's vector.
    #[cfg(test)]
    pub(crate) fn norm(&self, slot: u32) -> f64 {
        self.norms[slot as usize]
    }
}

/// The value at a property path of a document.
fn value_at<'a>(document: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter()
        .try_fold(document, |value, name| value.as_object()?.get(name))
}

/// A stored value as a vector of `dimensions` single-precision components and its exact norm,
/// when it is an array of that many numbers in range.
fn decoded(value: Option<&Value>, dimensions: usize) -> Option<(Vec<f32>, f64)> {
    let items = value?.as_array()?;
    if items.len() != dimensions {
        return None;
    }
    let mut vector = Vec::with_capacity(dimensions);
    let mut squares = 0.0f64;
    for item in items {
        let x = item.as_f64()?;
        if !x.is_finite() || x.abs() > COMPONENT_MAGNITUDE_MAX {
            return None;
        }
        squares += x * x;
        vector.push(x as f32);
    }
    Some((vector, squares.sqrt()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lethedb_query::Distance;
    use serde_json::json;

    fn path() -> Vec<String> {
        vec!["v".into()]
    }

    #[test]
    fn slots_are_reused_and_irregular_items_kept_apart() {
        let mut set = VectorSet::new(2);
        set.put(b"a", 1, &json!({"v": [1, 0]}), &path());
        set.put(b"b", 2, &json!({"v": [0, 1, 2]}), &path());
        set.put(b"c", 3, &json!({"w": 1}), &path());
        assert_eq!(set.len(), 3);
        let everything = |_: &[u8]| true;
        assert_eq!(set.irregular_keys(&everything), vec![&b"b"[..], &b"c"[..]]);
        set.remove(b"a", 4);
        set.put(b"d", 5, &json!({"v": [3, 4]}), &path());
        assert_eq!(set.len(), 3);
        assert_eq!(set.key(0), b"d");
        assert_eq!(set.norm(0), 5.0);
        let probe = Probe::new(&[1.0, 0.0], Distance::DotProduct).unwrap();
        let scored = set.score(&probe, &everything, &mut Vec::new());
        assert_eq!(scored.len(), 1);
        assert!((scored[0].closeness.low - 3.0).abs() < 1e-5);
        set.put(b"b", 6, &json!({"v": [1, 1]}), &path());
        assert_eq!(set.irregular_keys(&everything), vec![&b"c"[..]]);
        let changed = set.changed_after(4).unwrap();
        assert_eq!(changed, [&b"d"[..], &b"b"[..]].into_iter().collect());
    }
}
