//! Buckets: where each stored key lies when a shared store spreads its per-item tables over
//! nodes (the storage crate's `Distribution`, the `dk` column on PostgreSQL). A bucket is one
//! shard of one container (`shards.rs`), numbered `container << 16 | shard` like the shard's
//! lock, so a transaction of one logical partition writes rows of one bucket, and a
//! distributed database can route it to the one node that holds them.
//!
//! The bucket comes from the key's own bytes, whatever the container's definition: the EPK
//! point of an EPK-ordered item key (in the item, expiry and its index entries), the shard an
//! LSN carries (change index and log), the shard a document number carries (resource ids,
//! index entries), the shard of a counters key or of a full-text statistics counter's shard
//! row. A key that carries none (a container stored before shards or before EPK order, unique
//! key claims, the container-wide full-text statistics of an older store, the index-build
//! state) lies in the container's first bucket. Reading a key needs only the key, so the
//! function never changes for a stored key; [`BUCKETS_VERSION`] names it.
//!
//! It reads no storage and decides nothing about locks; it only names places.

use crate::keys;
use crate::partitions::shards::{self, Shard, ShardMap, SHARDS_DEFAULT};
use lethedb_storage::{range_within, Distribution, KeyRange, Table};

/// The version of this placement, recorded by a shared store at its creation.
pub const BUCKETS_VERSION: i64 = 1;

/// Bytes of the container number that opens every per-item key.
const CONTAINER_BYTES: usize = 8;

/// The engine's placement of keys into buckets.
pub struct Buckets;

/// The bucket of one shard of a container.
pub fn bucket_number(container_number: u64, shard: Shard) -> u64 {
    (container_number << 16) | u64::from(shard.0)
}

fn container_of(key: &[u8]) -> u64 {
    key.get(..CONTAINER_BYTES)
        .and_then(|bytes| bytes.try_into().ok())
        .map_or(0, u64::from_be_bytes)
}

/// The 8 bytes of `key` from `start`, as a number.
fn number_at(key: &[u8], start: usize) -> Option<u64> {
    Some(u64::from_be_bytes(
        key.get(start..start + 8)?.try_into().ok()?,
    ))
}

/// The shard of an item key suffix, by its EPK point.
fn shard_of_suffix(suffix: &[u8]) -> Option<Shard> {
    keys::epk_point_of_suffix(suffix)
        .map(|point| shards::shard_of_point(point, SHARDS_DEFAULT, ShardMap::BelowHashMarker))
}

/// The shard an index-table key carries, where its kind ends it with a document number or a
/// shard (a full-text statistics counter's shard row).
fn shard_of_index_key(key: &[u8]) -> Option<Shard> {
    let document = match *key.get(CONTAINER_BYTES)? {
        keys::INDEX_KIND_FULL_TEXT_SHARD_STATISTICS => {
            return keys::shard_of_full_text_statistics_key(key).map(Shard)
        }
        keys::INDEX_KIND_PATH | keys::INDEX_KIND_SPATIAL | keys::INDEX_KIND_FULL_TEXT => {
            number_at(key, key.len().checked_sub(8)?)?
        }
        // A composite entry whose first component descends stores the number complemented: a
        // spread of the container's buckets, still a function of the key.
        keys::INDEX_KIND_COMPOSITE => number_at(key, key.len().checked_sub(8)?)?,
        keys::INDEX_KIND_FULL_TEXT_IMPACT => !number_at(key, key.len().checked_sub(8)?)?,
        keys::INDEX_KIND_FULL_TEXT_LENGTH => number_at(key, key.len().checked_sub(12)?)?,
        _ => return None,
    };
    Some(shards::shard_of_document_number(document))
}

/// The shard a key of `table` carries, if it carries one.
fn shard_of_key(table: Table, key: &[u8]) -> Option<Shard> {
    match table {
        Table::Items => shard_of_suffix(keys::item_key_suffix(key)),
        Table::Expiry => shard_of_suffix(keys::split_expiry_key(key)?.1),
        Table::ResourceIds => number_at(key, CONTAINER_BYTES).map(shards::shard_of_document_number),
        Table::ChangeIndex | Table::ChangeLog => number_at(key, CONTAINER_BYTES).map(Shard::of_lsn),
        Table::Counters => keys::shard_of_counters_key(key).map(Shard),
        Table::Index => shard_of_index_key(key),
        Table::Catalog => None,
    }
}

/// The span of keys of one shard of a container in a table ordered by shard, `[lower, upper)`.
fn shard_span(table: Table, container: u64, shard: Shard) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    match table {
        Table::Items => {
            // The points of a shard below the hash marker (`ShardMap::BelowHashMarker`): every
            // point of a hash v2 or MultiHash container is below 2^62, where the map does not
            // wrap, so a span of them holds that shard's keys only.
            let bits = 62 - SHARDS_DEFAULT.trailing_zeros();
            let first = u64::from(shard.0) << bits;
            let next = (u64::from(shard.0) + 1) << bits;
            Some((
                keys::epk_point_bound(container, Some(first)),
                Some(keys::epk_point_bound(container, Some(next))),
            ))
        }
        Table::ChangeIndex | Table::ChangeLog => {
            let next = Shard(shard.0.checked_add(1)?).base_lsn();
            Some((
                keys::change_index_from(container, shard.base_lsn()),
                Some(keys::change_index_from(container, next)),
            ))
        }
        _ => None,
    }
}

impl Distribution for Buckets {
    fn version(&self) -> i64 {
        BUCKETS_VERSION
    }

    fn bucket(&self, table: Table, key: &[u8]) -> i64 {
        let shard = shard_of_key(table, key).unwrap_or(Shard(0));
        // Container numbers stay far below 2^47, so the number is positive; were one not, the
        // wrapped value would still be the same for the same key.
        bucket_number(container_of(key), shard) as i64
    }

    fn range_bucket(&self, table: Table, range: &KeyRange) -> Option<i64> {
        let (std::ops::Bound::Included(start) | std::ops::Bound::Excluded(start)) = &range.start
        else {
            return None;
        };
        let shard = match table {
            Table::Items => shard_of_suffix(keys::item_key_suffix(start))?,
            Table::ChangeIndex | Table::ChangeLog => {
                Shard::of_lsn(number_at(start, CONTAINER_BYTES)?)
            }
            _ => return None,
        };
        let container = container_of(start);
        let (lower, upper) = shard_span(table, container, shard)?;
        range_within(range, &lower, upper.as_deref())
            .then(|| bucket_number(container, shard) as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{ExpiryClass, PartitionPlace};

    const CONTAINER: u64 = 42;

    /// Every key one item's write stores, in a container of 64 shards.
    fn keys_of_one_write(point: u64) -> Vec<(Table, Vec<u8>)> {
        let shard = shards::shard_of_point(point, SHARDS_DEFAULT, ShardMap::BelowHashMarker);
        let place = PartitionPlace::new(Some(point), b"pk".to_vec());
        let item = keys::item_key(CONTAINER, &place, "id");
        let suffix = keys::item_key_suffix(&item).to_vec();
        let document = shards::next_document_number(0, shard, SHARDS_DEFAULT, 1_700_000_000_000);
        let lsn = shard.base_lsn() + 5;
        let mut entry = keys::index_path_prefix(CONTAINER, &["n".to_string()]);
        entry.extend_from_slice(b"value");
        entry.extend_from_slice(&document.to_be_bytes());
        // A text's full-text entries and the statistics rows they move.
        let path = ["t".to_string()];
        let mut impact = keys::index_full_text_impact_prefix(CONTAINER, &path);
        impact.extend_from_slice(b"stem\0");
        impact.extend_from_slice(&(!2u32).to_be_bytes());
        impact.extend_from_slice(&7u32.to_be_bytes());
        impact.extend_from_slice(&(!document).to_be_bytes());
        let mut length = keys::index_full_text_length_prefix(CONTAINER, &path);
        length.extend_from_slice(&document.to_be_bytes());
        length.extend_from_slice(&7u32.to_be_bytes());
        let mut keys_written = Vec::new();
        for text_entry in [impact, length] {
            let (counter, _) = keys::full_text_statistics_counter(&text_entry).expect("counter");
            let row = keys::full_text_shard_statistics_key(&counter, shard.0).expect("row");
            keys_written.push((Table::Index, text_entry));
            keys_written.push((Table::Index, row));
        }
        let mut written = vec![
            (Table::Items, item),
            (
                Table::Expiry,
                keys::expiry_key(CONTAINER, ExpiryClass::Own, 99, &suffix),
            ),
            (
                Table::ChangeIndex,
                [keys::change_index_from(CONTAINER, lsn), suffix.clone()].concat(),
            ),
            (Table::ChangeLog, keys::change_log_key(CONTAINER, lsn, 0)),
            (
                Table::ResourceIds,
                keys::resource_id_key(CONTAINER, document),
            ),
            (
                Table::Counters,
                keys::shard_counters_key(CONTAINER, shard.0),
            ),
            (Table::Index, entry),
        ];
        written.extend(keys_written);
        written
    }

    #[test]
    fn every_key_of_one_write_lies_in_the_bucket_of_its_shard() {
        for point in [0, 1 << 56, (1 << 62) / 3, (1 << 62) - 1, u64::MAX] {
            let shard = shards::shard_of_point(point, SHARDS_DEFAULT, ShardMap::BelowHashMarker);
            let bucket = bucket_number(CONTAINER, shard) as i64;
            for (table, key) in keys_of_one_write(point) {
                assert_eq!(
                    Buckets.bucket(table, &key),
                    bucket,
                    "{table:?} at {point:#x}"
                );
            }
        }
        // A key that carries no shard lies in the container's first bucket.
        let claim = keys::unique_claim_key(CONTAINER, 0, b"pk", &[b"v".to_vec()]);
        assert_eq!(
            Buckets.bucket(Table::Index, &claim),
            (CONTAINER << 16) as i64
        );
        assert_eq!(
            Buckets.bucket(Table::Counters, &keys::counters_key(CONTAINER)),
            (CONTAINER << 16) as i64
        );
    }

    #[test]
    fn a_partition_or_a_shards_feed_is_one_bucket_and_a_container_is_not() {
        let point = (1 << 62) / 3;
        let shard = shards::shard_of_point(point, SHARDS_DEFAULT, ShardMap::BelowHashMarker);
        let bucket = Some(bucket_number(CONTAINER, shard) as i64);
        let place = PartitionPlace::new(Some(point), b"pk".to_vec());
        let partition = KeyRange::prefix(&keys::partition_prefix(CONTAINER, &place));
        assert_eq!(Buckets.range_bucket(Table::Items, &partition), bucket);
        let feed = KeyRange::between(
            keys::change_index_from(CONTAINER, shard.base_lsn() + 3),
            keys::change_index_from(CONTAINER, Shard(shard.0 + 1).base_lsn()),
        );
        assert_eq!(Buckets.range_bucket(Table::ChangeIndex, &feed), bucket);
        let last = KeyRange::prefix(&keys::partition_prefix(
            CONTAINER,
            &PartitionPlace::new(Some((1 << 62) - 1), b"pk".to_vec()),
        ));
        assert_eq!(
            Buckets.range_bucket(Table::Items, &last),
            Some(bucket_number(CONTAINER, Shard(63)) as i64)
        );
        let container = KeyRange::prefix(&keys::container_items_prefix(CONTAINER));
        assert_eq!(Buckets.range_bucket(Table::Items, &container), None);
        let two_shards = KeyRange::between(
            keys::change_index_from(CONTAINER, shard.base_lsn()),
            keys::change_index_from(CONTAINER, Shard(shard.0 + 2).base_lsn()),
        );
        assert_eq!(Buckets.range_bucket(Table::ChangeIndex, &two_shards), None);
        assert_eq!(Buckets.range_bucket(Table::Expiry, &partition), None);
    }
}
