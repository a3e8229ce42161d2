//! The stored forms of resources and how they are read and written: item records, expiry
//! entries, a container's index-build state, and the catalog records of databases,
//! containers, child resources and the sequence numbers.
//!
//! Item records are a fixed binary header (last-modified milliseconds, LSN, document number,
//! `ttl`, the change-log entry's place) followed by the document's JSON without system properties; the system properties are
//! derived on every read, so a client can never override them. Catalog records are small JSON
//! values. Nothing here decides visibility or validates a request.

use crate::container::{Container, ContainerParts};
use crate::error::{container_not_found, corrupted, EngineResult};
use crate::index::policy::indexed_policy;
use crate::keys::{self, ItemLayout};
use crate::partitions::epk::HashScheme;
use crate::partitions::partition_key::PartitionKeyDefinition;
use crate::partitions::ranges::RangeLayout;
use crate::partitions::shards::ShardMap;
use crate::throughput::buckets::ThroughputBucket;
use crate::throughput::Throughput;
use crate::ttl::{ItemTtl, TtlState};
use crate::writer::WriteContext;
use lethedb_storage::{ReadTxn, Table};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::Arc;

// The system properties live with the limits, where the unique key policy reads them too.
pub use crate::limits::SYSTEM_PROPERTIES;

/// Version 2 added the item's own `ttl` (expiry never parses bodies), version 3 its change-log
/// entry's place ([`LogPlace`]: a replacement rewrites that entry unread); a record without a
/// place is written, and read, as version 2.
const ITEM_RECORD_VERSION: u8 = 3;
const ITEM_RECORD_VERSION_2: u8 = 2;
const ITEM_HEADER_BYTES: usize = 46;
const ITEM_HEADER_BYTES_2: usize = 33;

/// Where a version's change-log entry is and what it says besides the version's time and
/// item key: the entry's sequence under the version's LSN, and the LSN of the visible version
/// it replaced (`None`: a create).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogPlace {
    pub sequence: u32,
    pub replaced_lsn: Option<u64>,
}

/// One stored version of an item.
#[derive(Clone, Debug, PartialEq)]
pub struct ItemRecord {
    pub last_modified_ms: i64,
    /// The container LSN of the write that produced this version; it also makes the ETag.
    pub lsn: u64,
    /// Assigned at creation, kept by replaces: the item's `_rid` suffix.
    pub document_number: u64,
    /// The document's own `ttl`, as it affects expiry (read from the body when written).
    pub ttl: ItemTtl,
    /// Where the version's change-log entry is; `None` for a record of an earlier release.
    pub log_place: Option<LogPlace>,
    /// The document as the client sent it, minus system properties, as compact JSON.
    pub body: Vec<u8>,
}

impl ItemRecord {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_bytes());
        self.encode_into(&mut out);
        out
    }

    /// The length of [`ItemRecord::encode`]'s bytes.
    pub fn encoded_bytes(&self) -> usize {
        let header = match self.log_place {
            Some(_) => ITEM_HEADER_BYTES,
            None => ITEM_HEADER_BYTES_2,
        };
        header + self.body.len()
    }

    /// Appends the encoded record to `out` (inside a change-log entry, say).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.push(match self.log_place {
            Some(_) => ITEM_RECORD_VERSION,
            None => ITEM_RECORD_VERSION_2,
        });
        out.extend_from_slice(&self.last_modified_ms.to_be_bytes());
        out.extend_from_slice(&self.lsn.to_be_bytes());
        out.extend_from_slice(&self.document_number.to_be_bytes());
        out.extend_from_slice(&ttl_code(self.ttl).to_be_bytes());
        if let Some(place) = self.log_place {
            out.extend_from_slice(&place.sequence.to_be_bytes());
            out.push(u8::from(place.replaced_lsn.is_some()));
            out.extend_from_slice(&place.replaced_lsn.unwrap_or(0).to_be_bytes());
        }
        out.extend_from_slice(&self.body);
    }

    /// Decodes a stored record; `None` means the bytes are not a record (corruption).
    pub fn decode(bytes: &[u8]) -> Option<ItemRecord> {
        let (last_modified_ms, lsn, ttl) = ItemRecord::decode_header(bytes)?;
        let header = header_bytes(bytes)?;
        let log_place = if header == ITEM_HEADER_BYTES {
            Some(LogPlace {
                sequence: u32::from_be_bytes(bytes.get(33..37)?.try_into().ok()?),
                replaced_lsn: (*bytes.get(37)? != 0)
                    .then_some(u64::from_be_bytes(bytes.get(38..46)?.try_into().ok()?)),
            })
        } else {
            None
        };
        Some(ItemRecord {
            last_modified_ms,
            lsn,
            document_number: ItemRecord::decode_document_number(bytes)?,
            ttl,
            log_place,
            body: bytes.get(header..)?.to_vec(),
        })
    }

    /// The header fields expiry needs, without copying the body.
    pub fn decode_header(bytes: &[u8]) -> Option<(i64, u64, ItemTtl)> {
        header_bytes(bytes)?;
        let field = |at: usize| -> Option<[u8; 8]> { bytes.get(at..at + 8)?.try_into().ok() };
        Some((
            i64::from_be_bytes(field(1)?),
            u64::from_be_bytes(field(9)?),
            ttl_from_code(i64::from_be_bytes(field(25)?)),
        ))
    }

    /// The document number of an encoded record, without decoding the rest.
    pub fn decode_document_number(bytes: &[u8]) -> Option<u64> {
        ItemRecord::decode_header(bytes)?;
        Some(u64::from_be_bytes(bytes.get(17..25)?.try_into().ok()?))
    }

    /// The bytes of the stored document (the body) in an encoded record, without decoding it.
    pub fn body_bytes(bytes: &[u8]) -> usize {
        bytes
            .len()
            .saturating_sub(header_bytes(bytes).unwrap_or(ITEM_HEADER_BYTES))
    }

    pub fn document(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// The header's length of an encoded record of either version, if the bytes are one.
fn header_bytes(bytes: &[u8]) -> Option<usize> {
    let header = match *bytes.first()? {
        ITEM_RECORD_VERSION => ITEM_HEADER_BYTES,
        ITEM_RECORD_VERSION_2 => ITEM_HEADER_BYTES_2,
        _ => return None,
    };
    (bytes.len() >= header).then_some(header)
}

fn ttl_code(ttl: ItemTtl) -> i64 {
    match ttl {
        ItemTtl::Inherit => 0,
        ItemTtl::Never => -1,
        ItemTtl::Secs(secs) => secs,
    }
}

fn ttl_from_code(code: i64) -> ItemTtl {
    match code {
        0 => ItemTtl::Inherit,
        -1 => ItemTtl::Never,
        secs => ItemTtl::Secs(secs),
    }
}

/// What the expiry index remembers of an entry: which write it belongs to and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpiryEntry {
    pub lsn: u64,
    pub body_bytes: u64,
}

impl ExpiryEntry {
    pub fn encode(&self) -> [u8; 16] {
        let mut out = [0; 16];
        out[..8].copy_from_slice(&self.lsn.to_be_bytes());
        out[8..].copy_from_slice(&self.body_bytes.to_be_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<ExpiryEntry> {
        Some(ExpiryEntry {
            lsn: u64::from_be_bytes(bytes.get(..8)?.try_into().ok()?),
            body_bytes: u64::from_be_bytes(bytes.get(8..16)?.try_into().ok()?),
        })
    }
}

/// Where a container's index rebuild stands, kept under `keys::index_build_key` from its
/// first indexing-policy change on, written in the same transactions as the change and each
/// batch of the rebuild.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct IndexBuild {
    /// The container's `index_generation` this state belongs to.
    pub(crate) generation: u64,
    /// The suffix of the last item key the rebuild has done (`None`: it starts from the first).
    pub(crate) cursor: Option<Vec<u8>>,
    /// Stored versions rebuilt so far, and how many the container held when it began.
    pub(crate) built: u64,
    pub(crate) total: u64,
}

/// A container's index-build state; `None` before its policy first changed.
pub(crate) fn read_index_build(
    reader: &dyn ReadTxn,
    container_number: u64,
) -> EngineResult<Option<IndexBuild>> {
    match reader.get(Table::Index, &keys::index_build_key(container_number))? {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|_| corrupted("index build state")),
    }
}

pub(crate) fn store_index_build(
    context: &mut WriteContext<'_>,
    container_number: u64,
    state: &IndexBuild,
) -> EngineResult<()> {
    let bytes = serde_json::to_vec(state).map_err(|_| corrupted("index build state"))?;
    context.put(
        Table::Index,
        &keys::index_build_key(container_number),
        &bytes,
    )
}

/// The stored form of a database.
#[derive(Serialize, Deserialize)]
pub(crate) struct DatabaseRecord {
    pub(crate) number: u32,
    pub(crate) resource: Value,
    /// Throughput shared by the database's containers that have none of their own.
    #[serde(default)]
    pub(crate) throughput: Option<Throughput>,
}

/// The stored form of a container.
#[derive(Serialize, Deserialize)]
pub(crate) struct ContainerRecord {
    pub(crate) database_id: String,
    pub(crate) database_number: u32,
    pub(crate) number: u32,
    pub(crate) ttl: TtlState,
    pub(crate) resource: Value,
    #[serde(default)]
    pub(crate) throughput: Option<Throughput>,
    /// Added with physical partitions; a container stored before them has one range.
    #[serde(default)]
    pub(crate) ranges: Option<RangeLayout>,
    /// The indexing policies a running transformation replaces (`Container::index_ready`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) earlier_index_policies: Vec<Value>,
    /// How many times the indexing policy changed (0 for a container stored before changes
    /// were tracked, which had never changed one in a way its index followed).
    #[serde(default)]
    pub(crate) index_generation: u64,
    /// 0 for a container stored before items kept index entries: its items have none, so it
    /// loads as if its policy had just replaced one that indexes nothing, and the builder
    /// writes its entries in the background (`index/builder.rs`); 1 for one stored before
    /// spatial entries, 2 before full-text entries, 3 before full-text frequencies
    /// (`ContainerRecord::earlier_policies`);
    /// `INDEX_FORMAT` once it has.
    #[serde(default)]
    pub(crate) index_format: u32,
    /// How its item keys are laid out: 0 (absent) for a container stored before range-local
    /// storage, whose keys are partition-ordered for its whole life; `ITEM_LAYOUT_EPK_ORDERED`
    /// for one made since (`keys::ItemLayout`).
    #[serde(default)]
    pub(crate) item_layout: u32,
    /// How many shards split its counters (`partitions/shards.rs`): 0 (absent) for a container
    /// stored before shards, which has one for its whole life.
    #[serde(default)]
    pub(crate) shards: u16,
    /// How its EPK points map to its shards (`partitions/shards.rs`, `ShardMap`): 0 (absent)
    /// for a container made by the first version with shards.
    #[serde(default)]
    pub(crate) shard_map: u8,
    /// Its throughput buckets (`throughput/buckets.rs`); none for most containers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) throughput_buckets: Vec<ThroughputBucket>,
}

/// The `item_layout` of a container whose item keys are EPK-ordered.
const ITEM_LAYOUT_EPK_ORDERED: u32 = 1;

/// A container's item layout as its record stores it.
fn item_layout_number(layout: ItemLayout) -> u32 {
    match layout {
        ItemLayout::PartitionOrdered => 0,
        ItemLayout::EpkOrdered => ITEM_LAYOUT_EPK_ORDERED,
    }
}

/// The `index_format` of a container whose items all keep their index entries, spatial and
/// full-text ones included, with the full-text impact and length entries and statistics.
const INDEX_FORMAT: u32 = 4;

/// The `index_format` of a container stored before items kept spatial entries.
const INDEX_FORMAT_WITHOUT_SPATIAL: u32 = 1;

/// The `index_format` of a container stored before full-text entries kept how often a text
/// holds each stem, its word count and the path's statistics (2 and below: before any
/// full-text entry): its full-text entries are built again, as for a container without them.
const INDEX_FORMAT_WITHOUT_TEXT_FREQUENCIES: u32 = 3;

impl ContainerRecord {
    /// The container this record describes, under its database's shared throughput.
    pub(crate) fn into_container(
        self,
        database_throughput: Option<Throughput>,
    ) -> EngineResult<Container> {
        let partition_key =
            PartitionKeyDefinition::from_container_body(self.resource.get("partitionKey"))?;
        let earlier_index_policies = self.earlier_policies();
        Ok(Container::new(ContainerParts {
            database_id: self.database_id,
            database_number: self.database_number,
            number: self.number,
            ranges: self
                .ranges
                .unwrap_or_else(|| RangeLayout::even(HashScheme::of(&partition_key), 1)),
            partition_key,
            item_layout: if self.item_layout == ITEM_LAYOUT_EPK_ORDERED {
                ItemLayout::EpkOrdered
            } else {
                ItemLayout::PartitionOrdered
            },
            shards: self.shards.max(1),
            shard_map: ShardMap::from_number(self.shard_map),
            ttl: self.ttl,
            resource: self.resource,
            throughput: self.throughput,
            database_throughput,
            earlier_index_policies,
            index_generation: self.index_generation,
            throughput_buckets: self.throughput_buckets,
        }))
    }
}

impl ContainerRecord {
    /// The policies whose entries its items may hold besides the current one's. A container
    /// stored before index entries holds none: as if it had just replaced a policy indexing
    /// nothing. One stored before spatial (or full-text) entries, with such an index, holds its
    /// policy's entries but those: as if it had just replaced its policy without those indexes.
    /// Either way the builder writes what is missing in the background (`index/builder.rs`).
    fn earlier_policies(&self) -> Vec<Value> {
        let mut earlier = self.earlier_index_policies.clone();
        if self.index_format == 0 && earlier.is_empty() {
            earlier.push(json!({"indexingMode": "none"}));
        }
        let policy = indexed_policy(&self.resource);
        let mut without = policy.clone();
        let mut lacks_entries = false;
        for (name, format) in [
            ("spatialIndexes", INDEX_FORMAT_WITHOUT_SPATIAL),
            ("fullTextIndexes", INDEX_FORMAT_WITHOUT_TEXT_FREQUENCIES),
        ] {
            let has_index = policy
                .get(name)
                .and_then(Value::as_array)
                .is_some_and(|indexes| !indexes.is_empty());
            if self.index_format <= format && has_index {
                lacks_entries = true;
                if let Some(members) = without.as_object_mut() {
                    members.remove(name);
                }
            }
        }
        if lacks_entries && !earlier.contains(&without) {
            earlier.push(without);
        }
        earlier
    }
}

/// The stored form of a child resource (a user, permission, stored procedure, trigger,
/// user-defined function or conflict).
#[derive(Serialize, Deserialize)]
pub(crate) struct ResourceRecord {
    pub(crate) number: u64,
    pub(crate) resource: Value,
}

/// The global sequence numbers for new databases, containers and child resources.
#[derive(Serialize, Deserialize, Default)]
pub(crate) struct Sequences {
    pub(crate) databases: u32,
    pub(crate) containers: u32,
    /// Added with child resources; stores written before them have none.
    #[serde(default)]
    pub(crate) users: u32,
    #[serde(default)]
    pub(crate) resources: u64,
}

pub(crate) fn next_sequences(context: &mut WriteContext<'_>) -> EngineResult<Sequences> {
    match context.get(Table::Catalog, keys::SEQUENCES_KEY)? {
        None => Ok(Sequences::default()),
        Some(bytes) => serde_json::from_slice(&bytes).map_err(|_| corrupted("sequence")),
    }
}

pub(crate) fn store_sequences(
    context: &mut WriteContext<'_>,
    sequences: &Sequences,
) -> EngineResult<()> {
    let bytes = serde_json::to_vec(sequences).map_err(|_| corrupted("sequence"))?;
    context.put(Table::Catalog, keys::SEQUENCES_KEY, &bytes)
}

pub(crate) fn load_database(
    reader: &dyn ReadTxn,
    database_id: &str,
) -> EngineResult<Option<DatabaseRecord>> {
    match reader.get(Table::Catalog, &keys::database_key(database_id))? {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|_| corrupted("database")),
    }
}

pub(crate) fn store_database(
    context: &mut WriteContext<'_>,
    database_id: &str,
    record: &DatabaseRecord,
) -> EngineResult<()> {
    let bytes = serde_json::to_vec(record).map_err(|_| corrupted("database"))?;
    context.put(Table::Catalog, &keys::database_key(database_id), &bytes)?;
    context.catalog_changed();
    Ok(())
}

pub(crate) fn load_container(
    reader: &dyn ReadTxn,
    database_id: &str,
    container_id: &str,
) -> EngineResult<Option<Container>> {
    let keys = [
        keys::container_key(database_id, container_id),
        keys::database_key(database_id),
    ];
    let values = reader.get_many(&[(Table::Catalog, &keys[0]), (Table::Catalog, &keys[1])])?;
    container_from_records(values[0].as_deref(), values[1].as_deref())
}

/// A container from its catalog record and its database's (`None`: no such container).
pub(crate) fn container_from_records(
    container: Option<&[u8]>,
    database: Option<&[u8]>,
) -> EngineResult<Option<Container>> {
    let Some(bytes) = container else {
        return Ok(None);
    };
    let record: ContainerRecord =
        serde_json::from_slice(bytes).map_err(|_| corrupted("container"))?;
    let database: Option<DatabaseRecord> = database
        .map(serde_json::from_slice)
        .transpose()
        .map_err(|_| corrupted("database"))?;
    let shared = database.and_then(|database| database.throughput);
    record.into_container(shared).map(Some)
}

pub(crate) fn store_container(
    context: &mut WriteContext<'_>,
    container: &Container,
) -> EngineResult<()> {
    let record = ContainerRecord {
        database_id: container.database_id.clone(),
        database_number: container.database_number,
        number: container.number,
        ttl: container.ttl,
        resource: container.resource.clone(),
        throughput: container.throughput,
        ranges: Some(container.ranges.clone()),
        earlier_index_policies: container.earlier_index_policies.sources.clone(),
        index_generation: container.index_generation,
        index_format: INDEX_FORMAT,
        item_layout: item_layout_number(container.item_layout),
        shards: container.shards,
        shard_map: container.shard_map.number(),
        throughput_buckets: container.throughput_buckets.clone(),
    };
    let bytes = serde_json::to_vec(&record).map_err(|_| corrupted("container"))?;
    context.put(
        Table::Catalog,
        &keys::container_key(&container.database_id, &container.id),
        &bytes,
    )?;
    context.catalog_changed();
    Ok(())
}

/// Looks a container up from inside the writer, through its cache.
pub(crate) fn writer_container(
    context: &mut WriteContext<'_>,
    database_id: &str,
    container_id: &str,
) -> EngineResult<Arc<Container>> {
    let cache_key = (database_id.to_string(), container_id.to_string());
    if let Some(found) = context.containers.get(&cache_key) {
        return Ok(Arc::clone(found));
    }
    let loaded = load_container(context.reader(), database_id, container_id)?
        .ok_or_else(container_not_found)?;
    let loaded = Arc::new(loaded);
    context.containers.insert(cache_key, Arc::clone(&loaded));
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let record = ItemRecord {
            last_modified_ms: -3,
            lsn: 9,
            document_number: 4,
            ttl: ItemTtl::Secs(7),
            log_place: None,
            body: b"{\"id\":\"a\"}".to_vec(),
        };
        assert_eq!(ItemRecord::decode(&record.encode()), Some(record.clone()));
        // A record with its log entry's place (version 3), beside one without (version 2).
        for replaced_lsn in [None, Some(5)] {
            let placed = ItemRecord {
                log_place: Some(LogPlace {
                    sequence: 3,
                    replaced_lsn,
                }),
                ..record.clone()
            };
            let bytes = placed.encode();
            assert_eq!(bytes.len(), placed.encoded_bytes());
            assert_eq!(ItemRecord::decode(&bytes), Some(placed.clone()));
            assert_eq!(ItemRecord::body_bytes(&bytes), record.body.len());
            assert_eq!(
                ItemRecord::decode_header(&bytes),
                Some((-3, 9, ItemTtl::Secs(7)))
            );
        }
        assert_eq!(
            ItemRecord::decode_header(&record.encode()),
            Some((-3, 9, ItemTtl::Secs(7)))
        );
        assert_eq!(ItemRecord::decode(b"short"), None);
        let entry = ExpiryEntry {
            lsn: 7,
            body_bytes: 8,
        };
        assert_eq!(ExpiryEntry::decode(&entry.encode()), Some(entry));
    }

    #[test]
    fn a_container_record_keeps_the_shard_map_it_was_made_with() {
        // A record written now, then as the first version with shards wrote it: without
        // `shard_map`, so its points keep the top-bits map for the container's whole life.
        let record = json!({
            "database_id": "db", "database_number": 1, "number": 2,
            "ttl": {"default_ttl_secs": null, "own_expired_before_ms": 0,
                    "default_modified_before_ms": 0},
            "resource": {"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash",
                                                     "version": 2}},
            "index_format": INDEX_FORMAT, "item_layout": ITEM_LAYOUT_EPK_ORDERED,
            "shards": 64, "shard_map": 2,
        });
        let load = |record: &Value| {
            serde_json::from_value::<ContainerRecord>(record.clone())
                .expect("a record")
                .into_container(None)
                .expect("a container")
        };
        let made_now = load(&record);
        assert_eq!(made_now.shard_map, ShardMap::BelowHashMarker);
        let mut first_version = record;
        first_version
            .as_object_mut()
            .expect("an object")
            .remove("shard_map");
        let loaded = load(&first_version);
        assert_eq!(loaded.shard_map, ShardMap::TopBits);
        assert_eq!(loaded.shards, 64);
    }
}
