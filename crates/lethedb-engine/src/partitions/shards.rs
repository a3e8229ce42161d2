//! Shards: a container's items split by effective partition key into a fixed number of runs,
//! each with its own counters (LSN, document numbers, items, bytes), so that writes to different
//! logical partitions touch different counter rows. A logical partition lies in exactly one
//! shard, and a physical partition range is a run of shards (a range whose bounds fall inside
//! a shard shares it with its neighbour; readers filter by EPK as they always did). The scale-out
//! design calls them buckets (`docs/scale-out.md`).
//!
//! - **How many**: [`SHARDS_DEFAULT`] for a container made since shards; one for a container
//!   stored before, whose keys and counters stay exactly as they were.
//! - **Which**: the top bits of the item's EPK point (`partitions/epk.rs`), so shards follow EPK
//!   order.
//! - **LSNs**: a shard's LSNs carry the shard in their top [`SHARD_BITS`]-wide field above a
//!   48-bit sequence, so one container's change index and change log, keyed by LSN, hold each
//!   shard's entries as one contiguous run in its own order, and an LSN names its shard. Clients
//!   see only the sequence (`_lsn`, session tokens); the whole value is inside ETags.
//! - **Document numbers** are unique across shards by their low bits and follow the store's
//!   clock above them, so items written one after another keep their order across shards (an
//!   ORDER BY tie falls back on it), to the millisecond.
//!
//! Only this module composes or splits LSNs and document numbers; it reads no storage.

/// The shards of a container made since shards existed. A power of two.
pub const SHARDS_DEFAULT: u16 = 64;

/// How many low bits of an LSN count within its shard.
const SEQUENCE_BITS: u32 = 48;
/// The part of an LSN that counts within its shard.
const SEQUENCE_MASK: u64 = (1 << SEQUENCE_BITS) - 1;
/// How many low bits of a multi-shard container's document number name the shard.
const SHARD_BITS: u32 = 6;
/// Document numbers per millisecond one shard takes before its numbers run ahead of the clock.
const DOCUMENTS_PER_MS_BITS: u32 = 8;

/// One shard of a container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Shard(pub u16);

impl Shard {
    /// The LSN a shard's counters hold before its first write: its field above a zero
    /// sequence (0 for the first shard, as for every container stored before shards).
    pub fn base_lsn(self) -> u64 {
        u64::from(self.0) << SEQUENCE_BITS
    }

    /// The shard an LSN belongs to.
    pub fn of_lsn(lsn: u64) -> Shard {
        // The field is at most 16 bits wide, so the cast keeps it whole.
        Shard((lsn >> SEQUENCE_BITS) as u16)
    }
}

/// The part of an LSN clients see: its count within its shard.
pub fn sequence(lsn: u64) -> u64 {
    lsn & SEQUENCE_MASK
}

/// How a container maps EPK points to shards, fixed for its life (its record keeps it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShardMap {
    /// The point's top bits: containers made by the first version with shards. A hash v2
    /// point always has its top two bits clear, so these use a quarter of their shards, and
    /// every hash v1 point starts with the same byte, so those use one.
    #[default]
    TopBits,
    /// The bits below the two a hash v2 (and MultiHash) point always clears: a hash v2
    /// container's partitions spread over every shard, in EPK order. (Hash v1 points still
    /// share one shard: their first byte is the same for every value.)
    BelowHashMarker,
}

impl ShardMap {
    /// The number a container record stores for it (0, absent, for the first).
    pub fn number(self) -> u8 {
        match self {
            ShardMap::TopBits => 0,
            ShardMap::BelowHashMarker => 2,
        }
    }

    /// The map a record's number names.
    pub fn from_number(number: u8) -> ShardMap {
        if number == 2 {
            ShardMap::BelowHashMarker
        } else {
            ShardMap::TopBits
        }
    }
}

/// The shard of an EPK point in a container of `shards` shards (a power of two).
pub fn shard_of_point(point: u64, shards: u16, map: ShardMap) -> Shard {
    if shards <= 1 {
        return Shard(0);
    }
    let bits = shards.trailing_zeros();
    let mask = u64::from(shards) - 1;
    // Either way the shard is below `shards`, so it fits in u16.
    match map {
        ShardMap::TopBits => Shard((point >> (64 - bits)) as u16),
        ShardMap::BelowHashMarker => Shard(((point >> (62 - bits)) & mask) as u16),
    }
}

/// The shard a multi-shard container's document number names (its low bits). Any other
/// container's numbers count up, so this is only a spread of them.
pub fn shard_of_document_number(number: u64) -> Shard {
    // The field is SHARD_BITS (< 16) wide.
    Shard((number & ((1 << SHARD_BITS) - 1)) as u16)
}

/// The document number after `last` (the shard's latest, 0 before its first): the next in a
/// one-shard container; in a multi-shard one, the shard in the low bits and, above them, the
/// larger of the next count and the clock's milliseconds (scaled so a shard may take several
/// per millisecond), so numbers rise with time across shards.
pub fn next_document_number(last: u64, shard: Shard, shards: u16, now_ms: i64) -> u64 {
    if shards <= 1 {
        return last + 1;
    }
    let clock = u64::try_from(now_ms).unwrap_or(0) << DOCUMENTS_PER_MS_BITS;
    let high = (last >> SHARD_BITS).saturating_add(1).max(clock);
    (high << SHARD_BITS) | u64::from(shard.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_lsn_names_its_shard_and_shows_its_sequence() {
        let lsn = Shard(5).base_lsn() + 17;
        assert_eq!(Shard::of_lsn(lsn), Shard(5));
        assert_eq!(sequence(lsn), 17);
        assert_eq!(Shard(0).base_lsn(), 0);
    }

    #[test]
    fn points_fall_in_shards_by_their_top_bits() {
        let top = ShardMap::TopBits;
        assert_eq!(shard_of_point(0, 64, top), Shard(0));
        assert_eq!(shard_of_point(u64::MAX, 64, top), Shard(63));
        let twelfth = 12u64 << 58;
        assert_eq!(shard_of_point(twelfth, 64, top), Shard(12));
        assert_eq!(shard_of_point(twelfth - 1, 64, top), Shard(11));
        assert_eq!(shard_of_point(u64::MAX, 1, top), Shard(0));
    }

    #[test]
    fn hash_v2_points_spread_over_every_shard_in_order_below_the_marker() {
        let map = ShardMap::BelowHashMarker;
        // A v2 point's top two bits are clear: the space is [0, 2^62).
        assert_eq!(shard_of_point(0, 64, map), Shard(0));
        assert_eq!(shard_of_point((1 << 62) - 1, 64, map), Shard(63));
        let twelfth = 12u64 << 56;
        assert_eq!(shard_of_point(twelfth, 64, map), Shard(12));
        assert_eq!(shard_of_point(twelfth - 1, 64, map), Shard(11));
        // Evenly spread points land in every shard, in order.
        let shards: Vec<u16> = (0..64u64)
            .map(|step| shard_of_point(step << 56 | 12345, 64, map).0)
            .collect();
        assert_eq!(shards, (0..64).collect::<Vec<u16>>());
        assert_eq!(ShardMap::from_number(map.number()), map);
        assert_eq!(ShardMap::from_number(0), ShardMap::TopBits);
    }

    #[test]
    fn document_numbers_are_unique_per_shard_and_follow_the_clock() {
        assert_eq!(next_document_number(7, Shard(0), 1, 1_000), 8);
        let first = next_document_number(0, Shard(3), 64, 1_000);
        let second = next_document_number(first, Shard(3), 64, 1_000);
        let other = next_document_number(0, Shard(4), 64, 1_001);
        assert!(first < second && second < other);
        assert_eq!(first & 63, 3);
        assert_eq!(other & 63, 4);
        // Numbers stay below the top byte that marks a container's other children's rids.
        let late = next_document_number(0, Shard(63), 64, 4_102_444_800_000);
        assert!(late < 1 << 56);
    }

    /// How many of 64 shards 500 partition keys of a container fall in, under `map`.
    fn shards_used(body: serde_json::Value, map: ShardMap) -> usize {
        use crate::partitions::epk::epk_point;
        use crate::partitions::partition_key::{
            PartitionKeyDefinition, PartitionKeyPart, PartitionKeyValue,
        };
        let definition =
            PartitionKeyDefinition::from_container_body(Some(&body)).expect("definition");
        let used: std::collections::BTreeSet<u16> = (0..500)
            .map(|n| {
                let parts =
                    vec![PartitionKeyPart::String(format!("key-{n}")); definition.paths.len()];
                let epk = PartitionKeyValue(parts).effective(&definition);
                shard_of_point(epk_point(&epk).expect("point"), SHARDS_DEFAULT, map).0
            })
            .collect();
        used.len()
    }

    #[test]
    fn partitions_of_hash_v2_and_multihash_containers_spread_over_every_shard() {
        let v2 = serde_json::json!({"paths": ["/pk"], "kind": "Hash", "version": 2});
        let multi = serde_json::json!({"paths": ["/a", "/b"], "kind": "MultiHash", "version": 2});
        let v1 = serde_json::json!({"paths": ["/pk"], "kind": "Hash", "version": 1});
        assert!(shards_used(v2.clone(), ShardMap::BelowHashMarker) >= 60);
        assert!(shards_used(multi.clone(), ShardMap::BelowHashMarker) >= 60);
        // What the first map did, and what stays for hash v1 (docs/scale-out.md).
        assert!(shards_used(v2, ShardMap::TopBits) <= 16);
        assert_eq!(shards_used(v1.clone(), ShardMap::TopBits), 1);
        assert_eq!(shards_used(v1, ShardMap::BelowHashMarker), 1);
    }
}
