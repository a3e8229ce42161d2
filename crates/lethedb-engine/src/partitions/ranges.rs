//! Physical partitions: a container's partition key ranges, laid out as the service lays them
//! out, and split when its throughput grows past what its ranges can carry.
//!
//! A range owns the effective partition keys (EPKs) in `[min, max)`; together the online ranges
//! cover `["", "FF")` without gaps. A container gets one range per 10,000 RU/s of its throughput
//! (its own, else its database's; the autoscale maximum counts), at least one, unless the server
//! fixes the count. Raising throughput past what the ranges carry halves ranges (the ones with
//! the fewest ancestors first, leftmost first) until there are enough; the halves get new ids
//! and name their ancestors in `parents`, and the old ids are gone for good, so a client that
//! names one learns to refresh its routing map. Ranges never merge, as on the service.
//!
//! Items are not moved by a split: a range is an interval of EPKs, and a container made since
//! range-local storage keys its items by EPK point (`keys.rs`), so any interval is a span of keys
//! that `Container::items_span` finds; the `RangeMatcher` then filters that span exactly (an
//! older container's span is the whole container). This module decides only the layout and the
//! filter.

use crate::keys;
use crate::partitions::epk::{epk_point, even_boundaries, split_point, HashScheme, EPK_MAX};
use crate::partitions::partition_key::{PartitionKeyDefinition, PartitionKeyValue};
use crate::throughput::Throughput;
use serde::{Deserialize, Serialize};

/// The RU/s one physical partition carries on the service.
pub const RANGE_RU_MAX: u32 = 10_000;
/// The RU/s the service gives each physical partition of a container it creates with more
/// manual throughput than one partition carries, so that each has room to grow.
pub const CREATED_RANGE_RU: u32 = 6_000;
/// The most ranges one container may have here (a container created at the 1,000,000 RU/s
/// maximum, one range per [`CREATED_RANGE_RU`]).
pub const RANGES_MAX: usize = 167;

/// One partition key range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionKeyRange {
    pub id: u32,
    /// The smallest EPK it owns ("" for the first range).
    pub min: String,
    /// The first EPK it does not own ("FF" for the last range).
    pub max: String,
    /// The ids of the ranges it was split from, oldest first.
    #[serde(default)]
    pub parents: Vec<u32>,
}

impl PartitionKeyRange {
    /// Whether this range owns an EPK.
    pub fn contains(&self, epk: &str) -> bool {
        epk >= self.min.as_str() && (self.max == "FF" || epk < self.max.as_str())
    }
}

/// A container's online ranges, in EPK order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeLayout {
    pub ranges: Vec<PartitionKeyRange>,
    /// The id the next new range gets; every smaller id that is not online is gone.
    pub next_id: u32,
    /// Counts the splits, so the ranges' ETag changes when they do.
    pub generation: u32,
}

/// Why a range id names no online range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeLookup {
    /// The range was split: the client's routing map is stale.
    Gone,
    /// No range ever had this id.
    Unknown,
}

impl Default for RangeLayout {
    fn default() -> RangeLayout {
        RangeLayout::even(HashScheme::V2, 1)
    }
}

impl RangeLayout {
    /// `count` ranges of equal width, ids from 0.
    pub fn even(scheme: HashScheme, count: usize) -> RangeLayout {
        let count = count.clamp(1, RANGES_MAX);
        let bounds = even_boundaries(scheme, count);
        let ranges = bounds
            .windows(2)
            .zip(0u32..)
            .map(|(pair, id)| PartitionKeyRange {
                id,
                min: pair[0].clone(),
                max: pair[1].clone(),
                parents: Vec::new(),
            })
            .collect::<Vec<_>>();
        RangeLayout {
            next_id: ranges.len() as u32,
            ranges,
            generation: 0,
        }
    }

    /// The layout after splitting until there are at least `count` ranges, or `None` when
    /// there already are (ranges never merge).
    pub fn split_to(&self, scheme: HashScheme, count: usize) -> Option<RangeLayout> {
        let count = count.min(RANGES_MAX);
        if self.ranges.len() >= count {
            return None;
        }
        let mut layout = self.clone();
        while layout.ranges.len() < count {
            // The range with the fewest ancestors, leftmost among equals, that can be halved.
            let Some(index) = layout
                .ranges
                .iter()
                .enumerate()
                .filter(|(_, range)| split_point(scheme, &range.min, &range.max).is_some())
                .min_by_key(|(index, range)| (range.parents.len(), *index))
                .map(|(index, _)| index)
            else {
                break;
            };
            let parent = layout.ranges.remove(index);
            let Some(middle) = split_point(scheme, &parent.min, &parent.max) else {
                break;
            };
            let mut parents = parent.parents.clone();
            parents.push(parent.id);
            let left = PartitionKeyRange {
                id: layout.next_id,
                min: parent.min.clone(),
                max: middle.clone(),
                parents: parents.clone(),
            };
            let right = PartitionKeyRange {
                id: layout.next_id + 1,
                min: middle,
                max: parent.max,
                parents,
            };
            layout.next_id += 2;
            layout.ranges.insert(index, right);
            layout.ranges.insert(index, left);
        }
        layout.generation += 1;
        Some(layout)
    }

    /// The online range with this id (as clients send it: decimal text).
    pub fn find(&self, id: &str) -> Result<&PartitionKeyRange, RangeLookup> {
        let number: u32 = id.trim().parse().map_err(|_| RangeLookup::Unknown)?;
        match self.ranges.iter().find(|range| range.id == number) {
            Some(range) => Ok(range),
            None if number < self.next_id => Err(RangeLookup::Gone),
            None => Err(RangeLookup::Unknown),
        }
    }

    /// The online range that owns an EPK.
    pub fn owner(&self, epk: &str) -> &PartitionKeyRange {
        // The ranges cover every EPK, so the search always finds one; the last is the fallback.
        let index = self
            .ranges
            .iter()
            .position(|range| range.contains(epk))
            .unwrap_or(self.ranges.len().saturating_sub(1));
        &self.ranges[index]
    }

    /// Whether the layout is the single range `["", "FF")`.
    pub fn is_single(&self) -> bool {
        self.ranges.len() == 1
    }
}

/// How many ranges a throughput needs: one per [`RANGE_RU_MAX`], at least one.
pub fn ranges_for_throughput(throughput: Option<Throughput>) -> usize {
    let ru = match throughput {
        None => return 1,
        Some(
            Throughput::Manual(ru)
            | Throughput::Autoscale(ru)
            | Throughput::AutoscaleUpgrading { max_ru: ru, .. },
        ) => ru,
    };
    (ru.div_ceil(RANGE_RU_MAX) as usize).clamp(1, RANGES_MAX)
}

/// How many ranges a container starts with. The service lays out a container created with
/// more manual throughput than one partition carries ([`RANGE_RU_MAX`]) as one partition per
/// [`CREATED_RANGE_RU`]: 18,000 RU/s make 3 partitions, 30,000 make 5 (the Python SDK's test
/// configuration names 30,000 its five-partition throughput). Otherwise,
/// and for autoscale, as [`ranges_for_throughput`]: one per [`RANGE_RU_MAX`]. A raise later
/// splits only as far as [`ranges_for_throughput`] needs.
pub fn ranges_at_creation(throughput: Option<Throughput>) -> usize {
    match throughput {
        Some(Throughput::Manual(ru)) if ru > RANGE_RU_MAX => {
            (ru.div_ceil(CREATED_RANGE_RU) as usize).clamp(1, RANGES_MAX)
        }
        other => ranges_for_throughput(other),
    }
}

/// An EPK interval `[start, end)` a request reads, with "FF" as the open top.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeFilter {
    pub start: String,
    pub end: String,
}

impl RangeFilter {
    /// Every EPK.
    pub fn everything() -> RangeFilter {
        RangeFilter {
            start: String::new(),
            end: "FF".to_string(),
        }
    }

    pub fn of(range: &PartitionKeyRange) -> RangeFilter {
        RangeFilter {
            start: range.min.clone(),
            end: range.max.clone(),
        }
    }

    pub fn is_everything(&self) -> bool {
        self.start.is_empty() && self.end == "FF"
    }

    pub fn contains(&self, epk: &str) -> bool {
        epk >= self.start.as_str() && (self.end == "FF" || epk < self.end.as_str())
    }

    /// The EPKs both filters admit (possibly none: `start >= end`).
    pub fn intersect(&self, other: &RangeFilter) -> RangeFilter {
        let start = self.start.clone().max(other.start.clone());
        let end = match (self.end.as_str(), other.end.as_str()) {
            ("FF", _) => other.end.clone(),
            (_, "FF") => self.end.clone(),
            (a, b) => a.min(b).to_string(),
        };
        RangeFilter { start, end }
    }
}

/// Decides, item key by item key, whether an item belongs to a [`RangeFilter`]. Items of one
/// logical partition are adjacent in key order, so it hashes each partition key once; an
/// EPK-ordered key whose point lies strictly inside or outside the filter's points is decided
/// without hashing (`epk_point` never decreases as EPKs grow).
pub(crate) struct RangeMatcher<'a> {
    filter: RangeFilter,
    /// The points of the filter's start and end (`None`: the open top), when both are EPKs.
    points: Option<(u64, Option<u64>)>,
    definition: &'a PartitionKeyDefinition,
    last_partition: Vec<u8>,
    last_admitted: bool,
}

impl<'a> RangeMatcher<'a> {
    pub(crate) fn new(filter: RangeFilter, definition: &'a PartitionKeyDefinition) -> Self {
        let end = match filter.end.as_str() {
            EPK_MAX => Some(None),
            end => epk_point(end).map(Some),
        };
        RangeMatcher {
            points: epk_point(&filter.start).zip(end),
            filter,
            definition,
            last_partition: Vec::new(),
            last_admitted: false,
        }
    }

    /// Whether the filter admits every item (nothing to hash).
    pub(crate) fn admits_everything(&self) -> bool {
        self.filter.is_everything()
    }

    /// Whether the item with this storage key is in the filter's range. A key whose partition
    /// key cannot be decoded is admitted, so the caller's own decoding reports the corruption.
    pub(crate) fn admits(&mut self, item_key: &[u8]) -> bool {
        if self.admits_everything() {
            return true;
        }
        if let Some(admitted) = self.admits_by_point(item_key) {
            return admitted;
        }
        let Some(partition) = keys::partition_bytes(item_key) else {
            return true;
        };
        if partition != self.last_partition.as_slice() || self.last_partition.is_empty() {
            self.last_admitted = match PartitionKeyValue::decode(partition) {
                Some(value) => self.filter.contains(&value.effective(self.definition)),
                None => true,
            };
            self.last_partition.clear();
            self.last_partition.extend_from_slice(partition);
        }
        self.last_admitted
    }

    /// The decision an EPK-ordered key's point makes alone: an EPK whose point is below the
    /// start's is below the start, one whose point is above the end's is past the end, and
    /// one strictly between is inside; `None` on a bound's own point, where only the EPK tells.
    fn admits_by_point(&self, item_key: &[u8]) -> Option<bool> {
        let (start, end) = self.points?;
        let point = keys::item_epk_point(item_key)?;
        if point < start || end.is_some_and(|end| point > end) {
            return Some(false);
        }
        (point > start && end.is_none_or(|end| point < end)).then_some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_decides_the_count() {
        assert_eq!(ranges_for_throughput(None), 1);
        assert_eq!(ranges_for_throughput(Some(Throughput::Manual(400))), 1);
        assert_eq!(ranges_for_throughput(Some(Throughput::Manual(10_000))), 1);
        assert_eq!(ranges_for_throughput(Some(Throughput::Manual(10_100))), 2);
        assert_eq!(ranges_for_throughput(Some(Throughput::Manual(30_000))), 3);
        assert_eq!(
            ranges_for_throughput(Some(Throughput::Autoscale(50_000))),
            5
        );
        assert_eq!(
            ranges_for_throughput(Some(Throughput::Manual(1_000_000))),
            100
        );
    }

    #[test]
    fn a_container_created_above_one_partition_gets_one_per_six_thousand() {
        let manual = |ru| ranges_at_creation(Some(Throughput::Manual(ru)));
        assert_eq!(ranges_at_creation(None), 1);
        assert_eq!(manual(400), 1);
        assert_eq!(manual(10_000), 1);
        assert_eq!(manual(10_100), 2);
        assert_eq!(manual(12_000), 2);
        assert_eq!(manual(18_000), 3);
        assert_eq!(manual(25_100), 5);
        assert_eq!(manual(30_000), 5);
        assert_eq!(manual(1_000_000), RANGES_MAX);
        assert_eq!(ranges_at_creation(Some(Throughput::Autoscale(50_000))), 5);
    }

    #[test]
    fn an_even_layout_covers_everything_once() {
        for scheme in [HashScheme::V1, HashScheme::V2, HashScheme::MultiHash] {
            for count in [1, 2, 3, 5] {
                let layout = RangeLayout::even(scheme, count);
                assert_eq!(layout.ranges.len(), count);
                assert_eq!(layout.ranges[0].min, "");
                assert_eq!(layout.ranges[count - 1].max, "FF");
                for pair in layout.ranges.windows(2) {
                    assert_eq!(pair[0].max, pair[1].min);
                    assert!(pair[0].min < pair[0].max);
                }
            }
        }
    }

    #[test]
    fn splits_halve_the_oldest_ranges_and_retire_their_ids() {
        let one = RangeLayout::even(HashScheme::V2, 1);
        assert_eq!(one.split_to(HashScheme::V2, 1), None);
        let three = one.split_to(HashScheme::V2, 3).expect("splits");
        let ids: Vec<u32> = three.ranges.iter().map(|range| range.id).collect();
        // 0 → 1, 2; then 1 (fewest ancestors, leftmost) → 3, 4.
        assert_eq!(ids, vec![3, 4, 2]);
        assert_eq!(three.ranges[0].parents, vec![0, 1]);
        assert_eq!(three.ranges[2].parents, vec![0]);
        assert_eq!(three.generation, 1);
        assert_eq!(three.find("0"), Err(RangeLookup::Gone));
        assert_eq!(three.find("1"), Err(RangeLookup::Gone));
        assert_eq!(three.find("9"), Err(RangeLookup::Unknown));
        assert_eq!(three.find("x"), Err(RangeLookup::Unknown));
        assert_eq!(three.find("2").map(|range| range.id), Ok(2));
        assert_eq!(three.ranges[0].min, "");
        assert_eq!(three.ranges[2].max, "FF");
        for pair in three.ranges.windows(2) {
            assert_eq!(pair[0].max, pair[1].min);
        }
        // Every EPK has exactly one owner.
        for epk in ["", "05", "1FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "3F", "FE"] {
            let owners = three.ranges.iter().filter(|r| r.contains(epk)).count();
            assert_eq!(owners, 1, "{epk}");
            assert!(three.owner(epk).contains(epk));
        }
    }

    #[test]
    fn filters_intersect() {
        let all = RangeFilter::everything();
        let left = RangeFilter {
            start: String::new(),
            end: "20".into(),
        };
        let middle = RangeFilter {
            start: "10".into(),
            end: "30".into(),
        };
        assert_eq!(all.intersect(&left), left);
        assert_eq!(
            left.intersect(&middle),
            RangeFilter {
                start: "10".into(),
                end: "20".into()
            }
        );
        assert!(all.is_everything());
        assert!(all.contains("FE"));
        assert!(!left.contains("20"));
    }
}
