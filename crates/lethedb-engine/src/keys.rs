//! How the engine lays resources out as storage keys and values.
//!
//! Catalog keys: `d` + database id, `c` + length-prefixed database id + container id, `g` for the
//! global sequence numbers, `r` + a kind marker + the length-prefixed ids of the parents + the id
//! for child resources (users, permissions, stored procedures...). Expiry keys: container number +
//! index class + 8-byte time + the item key's suffix. Counter keys: container number. Index keys:
//! container number + a kind byte + the kind's own layout; unique key claims (kind `U`) are
//! described at [`unique_claim_key`]. Length prefixes keep every prefix scan exact (an id can hold
//! any character a client sends).
//!
//! Item keys come in two layouts ([`ItemLayout`]), recorded per container. A container made
//! since range-local storage keeps its items in effective partition key (EPK) order: container
//! number (8 bytes, big-endian) + the marker `E` + the partition's EPK point (8 bytes,
//! big-endian; `partitions/epk.rs` `epk_point`, a map that never decreases as the EPK grows) +
//! length-prefixed partition key bytes + item id. So a physical partition range, an EPK interval,
//! is one contiguous span of keys (a little wider where two EPKs share a point; readers still
//! filter exactly), one logical partition is still one contiguous key range, and so is a
//! hierarchical key's prefix. A container stored before keeps the old layout, container number +
//! length-prefixed partition key bytes + item id, and its range reads walk the whole container.
//! The layouts tell themselves apart: the old one's length prefix starts with a zero byte (keys
//! are far below 16 MiB), so any key parses without knowing its container's layout; only
//! building a key needs it (`Container::partition_place`).
//!
//! This module only encodes and decodes bytes; it decides nothing about visibility. It is the only
//! module that knows where one part of a key ends and the next begins.

/// The catalog key of a database.
pub fn database_key(database_id: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + database_id.len());
    key.push(b'd');
    key.extend_from_slice(database_id.as_bytes());
    key
}

/// The prefix of every database key.
pub const DATABASE_PREFIX: &[u8] = b"d";

/// The prefix of every container key in one database.
pub fn container_prefix(database_id: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(5 + database_id.len());
    key.push(b'c');
    push_length_prefixed(&mut key, database_id.as_bytes());
    key
}

/// The catalog key of a container.
pub fn container_key(database_id: &str, container_id: &str) -> Vec<u8> {
    let mut key = container_prefix(database_id);
    key.extend_from_slice(container_id.as_bytes());
    key
}

/// The catalog key that holds the global sequence numbers.
pub const SEQUENCES_KEY: &[u8] = b"g";

fn push_length_prefixed(key: &mut Vec<u8>, bytes: &[u8]) {
    // Ids are capped far below 4 GiB, so the cast cannot truncate a real key.
    key.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    key.extend_from_slice(bytes);
}

/// The prefix of every child resource of one kind under one parent; the parent is named by its
/// ids from the database down (a database's users: `[database]`, a container's triggers:
/// `[database, container]`). A prefix of the parent ids selects the children of every parent
/// below it, so deleting a database reaches all of its grandchildren with one range per kind.
pub fn resource_prefix(kind_marker: u8, parent_ids: &[&str]) -> Vec<u8> {
    let mut key = vec![b'r', kind_marker];
    for id in parent_ids {
        push_length_prefixed(&mut key, id.as_bytes());
    }
    key
}

/// The catalog key of one child resource.
pub fn resource_key(kind_marker: u8, parent_ids: &[&str], id: &str) -> Vec<u8> {
    let mut key = resource_prefix(kind_marker, parent_ids);
    key.extend_from_slice(id.as_bytes());
    key
}

/// The length of the container number that starts every item, expiry, resource-id and
/// counter key.
const CONTAINER_PREFIX_BYTES: usize = 8;

/// The prefix of every item of one container.
pub fn container_items_prefix(container_number: u64) -> Vec<u8> {
    container_key_buffer(container_number)
}

/// The bytes every per-item key begins with, in a buffer with room for what most keys add after
/// them (a partition key, an id, an index path and value), so building a key allocates once
/// instead of growing its buffer two or three times (~1,000 instructions per key).
fn container_key_buffer(container_number: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(96);
    key.extend_from_slice(&container_number.to_be_bytes());
    key
}

/// How a container lays out the keys of its items (see the module's documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ItemLayout {
    /// Partition key bytes, then the id: a store made before range-local storage.
    #[default]
    PartitionOrdered,
    /// The EPK point, then the partition key bytes and the id: a range is a span of keys.
    EpkOrdered,
}

/// The byte that opens an EPK-ordered item key's suffix. An old suffix opens with the high
/// byte of its partition key's length, always zero.
const EPK_ORDERED_MARKER: u8 = b'E';

/// Where one logical partition's items lie below their container number: the part of each of
/// their keys between the container number and the id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionPlace {
    /// The partition's EPK point, in an EPK-ordered container.
    epk_point: Option<u64>,
    /// The partition key value's bytes.
    partition_key: Vec<u8>,
}

impl PartitionPlace {
    /// The place of the partition whose key value encodes to `partition_key`, with its EPK
    /// point in an EPK-ordered container (`None` in a partition-ordered one).
    pub fn new(epk_point: Option<u64>, partition_key: Vec<u8>) -> PartitionPlace {
        PartitionPlace {
            epk_point,
            partition_key,
        }
    }

    /// The partition's EPK point, in an EPK-ordered container.
    pub fn epk_point(&self) -> Option<u64> {
        self.epk_point
    }

    /// The partition key value's bytes.
    pub fn partition_key(&self) -> &[u8] {
        &self.partition_key
    }

    fn push_to(&self, key: &mut Vec<u8>) {
        if let Some(point) = self.epk_point {
            key.push(EPK_ORDERED_MARKER);
            key.extend_from_slice(&point.to_be_bytes());
        }
        push_length_prefixed(key, &self.partition_key);
    }
}

/// An item key without its container prefix: what feeds, continuations, the expiry index and the
/// resource-id index remember of an item.
pub fn item_key_suffix(item_key: &[u8]) -> &[u8] {
    item_key.get(CONTAINER_PREFIX_BYTES..).unwrap_or_default()
}

/// The container number a per-item key (item, change log, index...) begins with.
pub fn container_number_of(key: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(
        key.get(..CONTAINER_PREFIX_BYTES)?.try_into().ok()?,
    ))
}

/// The item key made of a container number and a suffix from [`item_key_suffix`].
pub fn item_key_from_suffix(container_number: u64, suffix: &[u8]) -> Vec<u8> {
    let mut key = container_items_prefix(container_number);
    key.extend_from_slice(suffix);
    key
}

/// The prefix of every item of one logical partition.
pub fn partition_prefix(container_number: u64, place: &PartitionPlace) -> Vec<u8> {
    let mut key = container_items_prefix(container_number);
    place.push_to(&mut key);
    key
}

/// The storage key of one item.
pub fn item_key(container_number: u64, place: &PartitionPlace, id: &str) -> Vec<u8> {
    let mut key = container_items_prefix(container_number);
    place.push_to(&mut key);
    key.extend_from_slice(id.as_bytes());
    key
}

/// The EPK point of an item key's suffix, if it is EPK-ordered, and what follows the point.
/// The EPK point an item key suffix starts with (an EPK-ordered container's), if any.
pub fn epk_point_of_suffix(suffix: &[u8]) -> Option<u64> {
    split_epk_point(suffix).0
}

fn split_epk_point(suffix: &[u8]) -> (Option<u64>, &[u8]) {
    match suffix.split_first() {
        Some((&EPK_ORDERED_MARKER, rest)) => match rest.split_at_checked(8) {
            Some((point, rest)) => (point.try_into().ok().map(u64::from_be_bytes), rest),
            None => (None, &[]),
        },
        _ => (None, suffix),
    }
}

/// The partition key bytes of an item key (what [`PartitionPlace`] wrapped), if well formed.
pub fn partition_bytes(item_key: &[u8]) -> Option<&[u8]> {
    split_item_suffix(item_key.get(CONTAINER_PREFIX_BYTES..)?).map(|(partition, _)| partition)
}

/// The EPK point of an item key, in an EPK-ordered container.
pub fn item_epk_point(item_key: &[u8]) -> Option<u64> {
    split_epk_point(item_key.get(CONTAINER_PREFIX_BYTES..)?).0
}

/// Splits an item key's suffix (after its 8-byte container prefix) into partition key bytes
/// and id, in either layout.
pub fn split_item_suffix(suffix: &[u8]) -> Option<(&[u8], &str)> {
    let (_, suffix) = split_epk_point(suffix);
    let length = u32::from_be_bytes(suffix.get(..4)?.try_into().ok()?) as usize;
    let partition_key = suffix.get(4..4 + length)?;
    let id = std::str::from_utf8(suffix.get(4 + length..)?).ok()?;
    Some((partition_key, id))
}

/// The first key, among an EPK-ordered container's items, whose EPK point is `point` or more;
/// `None` stands past every point (the end of the container's items).
pub fn epk_point_bound(container_number: u64, point: Option<u64>) -> Vec<u8> {
    let mut key = container_items_prefix(container_number);
    match point {
        Some(point) => {
            key.push(EPK_ORDERED_MARKER);
            key.extend_from_slice(&point.to_be_bytes());
        }
        None => key.push(EPK_ORDERED_MARKER + 1),
    }
    key
}

/// The two orders of the expiry index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpiryClass {
    /// Items with their own `ttl`, keyed by their absolute expiry instant.
    Own = 0,
    /// Items that follow the container default, keyed by their last-modified instant, so that
    /// changing the default needs no reindexing.
    Default = 1,
}

/// The prefix of one class of one container's expiry index.
pub fn expiry_prefix(container_number: u64, class: ExpiryClass) -> Vec<u8> {
    let mut key = container_key_buffer(container_number);
    key.push(class as u8);
    key
}

/// Times are stored offset so that negative instants still sort before positive ones.
fn sortable_time(time_ms: i64) -> [u8; 8] {
    ((time_ms as u64) ^ (1 << 63)).to_be_bytes()
}

fn time_from_sortable(bytes: [u8; 8]) -> i64 {
    (u64::from_be_bytes(bytes) ^ (1 << 63)) as i64
}

/// The expiry-index key of an item: everything before `bound_ms` in a class is expired.
pub fn expiry_key(
    container_number: u64,
    class: ExpiryClass,
    time_ms: i64,
    item_suffix: &[u8],
) -> Vec<u8> {
    let mut key = expiry_prefix(container_number, class);
    key.extend_from_slice(&sortable_time(time_ms));
    key.extend_from_slice(item_suffix);
    key
}

/// The first key of a class whose time is `time_ms` or later.
pub fn expiry_bound(container_number: u64, class: ExpiryClass, time_ms: i64) -> Vec<u8> {
    let mut key = expiry_prefix(container_number, class);
    key.extend_from_slice(&sortable_time(time_ms));
    key
}

/// The class of an expiry key, if it is one.
pub fn expiry_class_of(key: &[u8]) -> Option<ExpiryClass> {
    match key.get(CONTAINER_PREFIX_BYTES).copied() {
        Some(class) if class == ExpiryClass::Own as u8 => Some(ExpiryClass::Own),
        Some(class) if class == ExpiryClass::Default as u8 => Some(ExpiryClass::Default),
        _ => None,
    }
}

/// Splits an expiry key into its time and the item suffix.
pub fn split_expiry_key(key: &[u8]) -> Option<(i64, &[u8])> {
    // The container number, the class byte, then the time.
    let time_at = CONTAINER_PREFIX_BYTES + 1;
    let time = key.get(time_at..time_at + 8)?.try_into().ok()?;
    Some((time_from_sortable(time), key.get(time_at + 8..)?))
}

/// The resource-id index key of an item: container number + document number.
pub fn resource_id_key(container_number: u64, document_number: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(16);
    key.extend_from_slice(&container_number.to_be_bytes());
    key.extend_from_slice(&document_number.to_be_bytes());
    key
}

/// The kind byte after the container number of an index entry of one path (a range entry).
pub const INDEX_KIND_PATH: u8 = b'R';
/// The kind byte of a composite index entry.
pub const INDEX_KIND_COMPOSITE: u8 = b'K';
/// The kind byte of a spatial index entry (one grid cell of a geometry at one path).
pub const INDEX_KIND_SPATIAL: u8 = b'S';
/// The kind byte of a full-text index entry (one distinct stem of the text at one path).
pub const INDEX_KIND_FULL_TEXT: u8 = b'F';

/// The kind byte of a full-text impact entry: one distinct stem of the text at one path with
/// how often the text holds it and how many words the text has, so that BM25 needs no document.
pub const INDEX_KIND_FULL_TEXT_IMPACT: u8 = b'I';
/// The kind byte of a full-text length entry: one per text at one path, with its word count.
pub const INDEX_KIND_FULL_TEXT_LENGTH: u8 = b'L';
/// The kind byte of a full-text statistics counter: how many texts at one path hold a stem
/// (the key ends with the stem) or, with no stem, how many words the texts at the path have.
pub const INDEX_KIND_FULL_TEXT_STATISTICS: u8 = b'N';

/// The kind byte of a full-text statistics counter of one shard: what the writes of that shard
/// added to (or took from) a counter of kind [`INDEX_KIND_FULL_TEXT_STATISTICS`], whose stored
/// rows, kept by stores written before, are never written again
/// ([`full_text_shard_statistics_key`]).
pub const INDEX_KIND_FULL_TEXT_SHARD_STATISTICS: u8 = b'n';

/// The kind byte of a container's index-build state (one key: `index_build_key`), kept
/// with its entries so that deleting the container's index clears it too.
pub const INDEX_KIND_BUILD: u8 = b'T';

/// The key of a container's index-build state (the policy generation, the rebuild's cursor and
/// progress).
pub fn index_build_key(container_number: u64) -> Vec<u8> {
    let mut key = container_items_prefix(container_number);
    key.push(INDEX_KIND_BUILD);
    key
}

/// The prefix of every index entry of one document path: container number, kind, then the
/// path's segment count and each segment length-prefixed (so no path's prefix is another's).
/// Then come the value's sort key and the document number (`index/entries.rs`).
pub fn index_path_prefix(container_number: u64, path: &[String]) -> Vec<u8> {
    path_prefix(container_number, INDEX_KIND_PATH, path)
}

/// The prefix of every spatial index entry of one document path, laid out as
/// [`index_path_prefix`] with its own kind. Then come the grid cell's key
/// (`lethedb_query::spatial_cells`) and the document number (`index/entries.rs`).
pub fn index_spatial_prefix(container_number: u64, path: &[String]) -> Vec<u8> {
    path_prefix(container_number, INDEX_KIND_SPATIAL, path)
}

/// The prefix of every full-text index entry of one document path, laid out as
/// [`index_path_prefix`] with its own kind. Then come the stem's key
/// (`lethedb_query::full_text_stem_key`) and the document number (`index/entries.rs`).
pub fn index_full_text_prefix(container_number: u64, path: &[String]) -> Vec<u8> {
    path_prefix(container_number, INDEX_KIND_FULL_TEXT, path)
}

/// The prefix of the full-text impact entries of one path, laid out as
/// [`index_path_prefix`] with its own kind. Then come the stem's key, the complement of the
/// stem's count in the text (four bytes), the text's word count (four bytes) and the complement
/// of the document number, so that a stem's entries come from the likeliest best score down:
/// the most occurrences first, then the shortest text, then the latest document (the order of
/// ties in a descending ORDER BY).
pub fn index_full_text_impact_prefix(container_number: u64, path: &[String]) -> Vec<u8> {
    path_prefix(container_number, INDEX_KIND_FULL_TEXT_IMPACT, path)
}

/// The prefix of the full-text length entries of one path. Then come the document number and
/// the text's word count (four bytes).
pub fn index_full_text_length_prefix(container_number: u64, path: &[String]) -> Vec<u8> {
    path_prefix(container_number, INDEX_KIND_FULL_TEXT_LENGTH, path)
}

/// The prefix of the full-text statistics counters of one path: alone, the key of the path's
/// word total; followed by a stem's key, that of the stem's document count. Values are eight
/// bytes, big-endian.
pub fn index_full_text_statistics_prefix(container_number: u64, path: &[String]) -> Vec<u8> {
    path_prefix(container_number, INDEX_KIND_FULL_TEXT_STATISTICS, path)
}

/// Where the kind byte sits in every index key of a container.
const INDEX_KIND_OFFSET: usize = 8;

/// The full-text statistics counter an index entry moves, and by how much: one document for a
/// stem's impact entry (prefix, stem; then count, words and document: 16 bytes), the text's
/// words for a length entry (prefix; then document and words: 12 bytes); none for any other.
pub fn full_text_statistics_counter(key: &[u8]) -> Option<(Vec<u8>, i64)> {
    let (tail, amount) = match *key.get(INDEX_KIND_OFFSET)? {
        INDEX_KIND_FULL_TEXT_IMPACT => (16, 1),
        INDEX_KIND_FULL_TEXT_LENGTH => {
            let words: [u8; 4] = key.get(key.len().checked_sub(4)?..)?.try_into().ok()?;
            (12, i64::from(u32::from_be_bytes(words)))
        }
        _ => return None,
    };
    let mut counter = key.get(..key.len().checked_sub(tail)?)?.to_vec();
    counter[INDEX_KIND_OFFSET] = INDEX_KIND_FULL_TEXT_STATISTICS;
    Some((counter, amount))
}

/// The document number of a full-text impact or length entry (none for any other key).
pub fn full_text_entry_document(key: &[u8]) -> Option<u64> {
    let number = |start: usize| -> Option<u64> {
        Some(u64::from_be_bytes(
            key.get(start..start + 8)?.try_into().ok()?,
        ))
    };
    match *key.get(INDEX_KIND_OFFSET)? {
        INDEX_KIND_FULL_TEXT_IMPACT => number(key.len().checked_sub(8)?).map(|number| !number),
        INDEX_KIND_FULL_TEXT_LENGTH => number(key.len().checked_sub(12)?),
        _ => None,
    }
}

/// Where the path of a path-prefixed index key (`path_prefix`) ends.
fn path_prefix_end(key: &[u8]) -> Option<usize> {
    let mut at = INDEX_KIND_OFFSET + 1;
    let segments = u16::from_be_bytes(key.get(at..at + 2)?.try_into().ok()?);
    at += 2;
    for _ in 0..segments {
        let length = u32::from_be_bytes(key.get(at..at + 4)?.try_into().ok()?) as usize;
        at = at.checked_add(4)?.checked_add(length)?;
    }
    (at <= key.len()).then_some(at)
}

/// The prefix of every shard's row of the full-text statistics counter `counter` (a key of
/// [`full_text_statistics_counter`]): the container number, kind
/// [`INDEX_KIND_FULL_TEXT_SHARD_STATISTICS`], the path, then `0` for the path's word total or
/// `1` and the stem's key, length-prefixed (so no stem's rows share another's prefix).
pub fn full_text_shard_statistics_prefix(counter: &[u8]) -> Option<Vec<u8>> {
    let path_end = path_prefix_end(counter)?;
    let mut key = counter.get(..path_end)?.to_vec();
    key[INDEX_KIND_OFFSET] = INDEX_KIND_FULL_TEXT_SHARD_STATISTICS;
    match counter.get(path_end..)? {
        [] => key.push(0),
        stem => {
            key.push(1);
            push_length_prefixed(&mut key, stem);
        }
    }
    Some(key)
}

/// The row of `shard` of the full-text statistics counter `counter`: its prefix
/// ([`full_text_shard_statistics_prefix`]) and the shard (two bytes, big-endian), which places
/// the row in the shard's bucket. Its value is a signed eight-byte number: a shard's writes
/// may remove documents that an older store counted in the container-wide row.
pub fn full_text_shard_statistics_key(counter: &[u8], shard: u16) -> Option<Vec<u8>> {
    let mut key = full_text_shard_statistics_prefix(counter)?;
    key.extend_from_slice(&shard.to_be_bytes());
    Some(key)
}

/// The shard of a full-text statistics counter's shard row, if the key is one.
pub fn shard_of_full_text_statistics_key(key: &[u8]) -> Option<u16> {
    if *key.get(INDEX_KIND_OFFSET)? != INDEX_KIND_FULL_TEXT_SHARD_STATISTICS {
        return None;
    }
    let tail = key.get(key.len().checked_sub(2)?..)?;
    Some(u16::from_be_bytes(tail.try_into().ok()?))
}

/// A full-text impact entry's parts after its stem's prefix (`prefix_bytes` long): how often
/// the text holds the stem, the text's word count and the document number.
pub fn full_text_impact_parts(key: &[u8], prefix_bytes: usize) -> Option<(u32, u32, u64)> {
    let tail = key.get(prefix_bytes..)?;
    let count = u32::from_be_bytes(tail.get(..4)?.try_into().ok()?);
    let words = u32::from_be_bytes(tail.get(4..8)?.try_into().ok()?);
    let document = u64::from_be_bytes(tail.get(8..16)?.try_into().ok()?);
    Some((!count, words, !document))
}

/// Container number, `kind`, the path's segment count, then each segment length-prefixed.
fn path_prefix(container_number: u64, kind: u8, path: &[String]) -> Vec<u8> {
    let mut key = container_items_prefix(container_number);
    key.push(kind);
    // Paths come from documents whose nesting is bounded far below 65,536 levels.
    key.extend_from_slice(&(path.len() as u16).to_be_bytes());
    for segment in path {
        push_length_prefixed(&mut key, segment.as_bytes());
    }
    key
}

/// The prefix of every entry of one composite index (its position in the policy).
pub fn index_composite_prefix(container_number: u64, composite: u16) -> Vec<u8> {
    let mut key = container_items_prefix(container_number);
    key.push(INDEX_KIND_COMPOSITE);
    key.extend_from_slice(&composite.to_be_bytes());
    key
}

/// The document number that ends a path or composite entry's key (as stored: a composite whose
/// first component is descending stores it complemented).
pub fn index_entry_document(entry_key: &[u8]) -> Option<u64> {
    let start = entry_key.len().checked_sub(8)?;
    Some(u64::from_be_bytes(entry_key[start..].try_into().ok()?))
}

/// The kind byte of unique key claims in the index table, right after the container number.
const UNIQUE_CLAIM_KIND: u8 = b'U';

/// The prefix of every unique key claim of a container.
pub fn unique_claims_prefix(container_number: u64) -> Vec<u8> {
    let mut key = container_items_prefix(container_number);
    key.push(UNIQUE_CLAIM_KIND);
    key
}

/// The index-table key of one unique key claim: the container number, `U`, the unique key's
/// position in the policy (2 bytes, big-endian), the length-prefixed partition key bytes, then
/// each path's value key, length-prefixed. Two items claim the same key exactly when they are
/// in one logical partition and their values on every path of that unique key are equal. The
/// claim's value is the holder's item key suffix ([`item_key_suffix`]).
pub fn unique_claim_key(
    container_number: u64,
    unique_key: u16,
    partition_key: &[u8],
    values: &[Vec<u8>],
) -> Vec<u8> {
    let mut key = unique_claims_prefix(container_number);
    key.extend_from_slice(&unique_key.to_be_bytes());
    push_length_prefixed(&mut key, partition_key);
    for value in values {
        push_length_prefixed(&mut key, value);
    }
    key
}

/// The counters key of a container of one shard (every container stored before shards).
pub fn counters_key(container_number: u64) -> Vec<u8> {
    container_number.to_be_bytes().to_vec()
}

/// The marker that follows the container number in a multi-shard container's counters keys
/// (the change-feed state's marker is `c`).
const SHARD_COUNTERS_MARKER: u8 = b'S';

/// The prefix of every shard's counters key of a multi-shard container.
pub fn shard_counters_prefix(container_number: u64) -> Vec<u8> {
    let mut key = counters_key(container_number);
    key.push(SHARD_COUNTERS_MARKER);
    key
}

/// The counters key of one shard of a multi-shard container: the prefix and the shard
/// (2 bytes, big-endian, so the shards sort in order).
pub fn shard_counters_key(container_number: u64, shard: u16) -> Vec<u8> {
    let mut key = shard_counters_prefix(container_number);
    key.extend_from_slice(&shard.to_be_bytes());
    key
}

/// The shard of a multi-shard container's counters key, if the key is one.
pub fn shard_of_counters_key(key: &[u8]) -> Option<u16> {
    let tail: [u8; 3] = key.get(CONTAINER_PREFIX_BYTES..)?.try_into().ok()?;
    (tail[0] == SHARD_COUNTERS_MARKER).then(|| u16::from_be_bytes([tail[1], tail[2]]))
}

/// The first change-log key of a container at `lsn` or later (a change-index key of the layout
/// before positions, `feed/log_layout.rs`, begins the same way, with the item key suffix after).
pub fn change_index_from(container_number: u64, lsn: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(20);
    key.extend_from_slice(&container_number.to_be_bytes());
    key.extend_from_slice(&lsn.to_be_bytes());
    key
}

/// The change-log key of one entry: container number + LSN + its sequence within the LSN (a
/// transaction writes several entries under one LSN).
pub fn change_log_key(container_number: u64, lsn: u64, sequence: u32) -> Vec<u8> {
    let mut key = change_index_from(container_number, lsn);
    key.extend_from_slice(&sequence.to_be_bytes());
    key
}

/// The LSN of a change-log key.
pub fn change_log_lsn(key: &[u8]) -> Option<u64> {
    let lsn = key.get(CONTAINER_PREFIX_BYTES..CONTAINER_PREFIX_BYTES + 8)?;
    Some(u64::from_be_bytes(lsn.try_into().ok()?))
}

/// The key, in the counters table, of a container's change-feed state (what TTL events were
/// emitted, what the log was trimmed to): the counters key with a marker byte.
pub fn change_state_key(container_number: u64) -> Vec<u8> {
    let mut key = counters_key(container_number);
    key.push(b'c');
    key
}

#[cfg(test)]
mod tests;
