//! The key layouts round-trip and sort as the tables need.

use super::*;

#[test]
fn item_keys_round_trip_and_partitions_are_prefixes() {
    for point in [
        None,
        Some(0),
        Some(0x45_00_00_00_00_00_00_00),
        Some(u64::MAX),
    ] {
        let place = |bytes: &[u8]| PartitionPlace::new(point, bytes.to_vec());
        let key = item_key(7, &place(b"[\"a\"]"), "id/with?odd#chars");
        let (pk, id) = split_item_suffix(item_key_suffix(&key)).expect("split");
        assert_eq!(pk, b"[\"a\"]");
        assert_eq!(id, "id/with?odd#chars");
        assert_eq!(partition_bytes(&key), Some(&b"[\"a\"]"[..]));
        assert_eq!(item_epk_point(&key), point);
        assert!(key.starts_with(&partition_prefix(7, &place(b"[\"a\"]"))));
        // A partition key that is a prefix of another does not share its key range.
        let longer = item_key(7, &place(b"[\"ab\"]"), "x");
        assert!(!longer.starts_with(&partition_prefix(7, &place(b"[\"a"))));
        assert_eq!(item_key_from_suffix(7, item_key_suffix(&key)), key);
        assert!(key.starts_with(&container_items_prefix(7)));
    }
}

#[test]
fn epk_ordered_keys_sort_by_point_inside_their_container() {
    let key = |point: u64, partition: &[u8], id: &str| {
        item_key(3, &PartitionPlace::new(Some(point), partition.to_vec()), id)
    };
    // The point decides before the partition key bytes do.
    assert!(key(1, b"zzz", "z") < key(2, b"a", "a"));
    assert!(epk_point_bound(3, Some(2)) <= key(2, b"a", "a"));
    assert!(key(1, b"zzz", "z") < epk_point_bound(3, Some(2)));
    assert!(key(u64::MAX, b"zzz", "z") < epk_point_bound(3, None));
    assert!(epk_point_bound(3, None) < container_items_prefix(4));
    assert!(container_items_prefix(3) < epk_point_bound(3, Some(0)));
}

#[test]
fn unique_claims_differ_by_key_partition_and_value_boundaries() {
    let claim = |key: u16, partition: &[u8], values: &[&[u8]]| {
        let values: Vec<Vec<u8>> = values.iter().map(|v| v.to_vec()).collect();
        unique_claim_key(3, key, partition, &values)
    };
    let base = claim(0, b"p", &[b"ab", b"c"]);
    assert!(base.starts_with(&unique_claims_prefix(3)));
    assert!(base.starts_with(&container_items_prefix(3)));
    assert_eq!(base, claim(0, b"p", &[b"ab", b"c"]));
    // Values split differently, another key, another partition: other claims.
    assert_ne!(base, claim(0, b"p", &[b"a", b"bc"]));
    assert_ne!(base, claim(1, b"p", &[b"ab", b"c"]));
    assert_ne!(base, claim(0, b"q", &[b"ab", b"c"]));
}

#[test]
fn expiry_keys_sort_by_time_including_negative() {
    let early = expiry_key(1, ExpiryClass::Own, -5, b"z");
    let late = expiry_key(1, ExpiryClass::Own, 5, b"a");
    assert!(early < late);
    assert!(late < expiry_bound(1, ExpiryClass::Own, 6));
    assert_eq!(split_expiry_key(&late), Some((5, &b"a"[..])));
    assert_eq!(expiry_class_of(&late), Some(ExpiryClass::Own));
    let default = expiry_key(1, ExpiryClass::Default, 5, b"a");
    assert_eq!(expiry_class_of(&default), Some(ExpiryClass::Default));
}

#[test]
fn a_statistics_counters_shard_rows_share_a_prefix_no_other_counters_rows_have() {
    let path = ["a".to_string(), "b".to_string()];
    let total = index_full_text_statistics_prefix(7, &path);
    let stem = |bytes: &[u8]| [total.as_slice(), bytes].concat();
    let rows: Vec<Vec<u8>> = [total.clone(), stem(b"run\0"), stem(b"run\0ner\0")]
        .iter()
        .map(|counter| full_text_shard_statistics_prefix(counter).expect("prefix"))
        .collect();
    for (index, prefix) in rows.iter().enumerate() {
        for (other_index, other) in rows.iter().enumerate() {
            if index != other_index {
                assert!(
                    !other.starts_with(prefix),
                    "{index} is a prefix of {other_index}"
                );
            }
        }
    }
    let counter = stem(b"run\0");
    let row = full_text_shard_statistics_key(&counter, 63).expect("row");
    assert!(row.starts_with(&rows[1]));
    assert_eq!(row.len(), rows[1].len() + 2);
    assert_eq!(shard_of_full_text_statistics_key(&row), Some(63));
    assert_eq!(shard_of_full_text_statistics_key(&counter), None);
    // The entries that move a counter name their documents.
    let mut length = index_full_text_length_prefix(7, &path);
    length.extend_from_slice(&41u64.to_be_bytes());
    length.extend_from_slice(&9u32.to_be_bytes());
    assert_eq!(full_text_entry_document(&length), Some(41));
    let mut impact = index_full_text_impact_prefix(7, &path);
    impact.extend_from_slice(b"run\0");
    impact.extend_from_slice(&(!1u32).to_be_bytes());
    impact.extend_from_slice(&9u32.to_be_bytes());
    impact.extend_from_slice(&(!41u64).to_be_bytes());
    assert_eq!(full_text_entry_document(&impact), Some(41));
    assert_eq!(
        full_text_statistics_counter(&impact).map(|(key, _)| key),
        Some(counter)
    );
}
