//! The container type: a container's definition, parsed once and shared by every request.
//!
//! A container carries its numbers (the prefix of its item keys and its rid), its partition key
//! definition, its unique keys, its [`TtlState`] and the throughput budget its requests draw
//! on, decided here once for every path that builds a container. This module does not read or
//! write storage (the stored form is in `records.rs`) and does not decide what expired means
//! (`ttl/expiry.rs` does).

use crate::catalog::unique_key_policy::UniqueKeyPolicy;
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::index::policy::{indexed_policy, EarlierPolicies, IndexPolicy};
use crate::keys::{self, ItemLayout, PartitionPlace};
use crate::partitions::epk::{epk_point, HashScheme, EPK_MAX};
use crate::partitions::partition_key::{PartitionKeyDefinition, PartitionKeyValue};
use crate::partitions::ranges::{PartitionKeyRange, RangeFilter, RangeLayout};
use crate::partitions::shards::{shard_of_point, Shard, ShardMap};
use crate::rids;
use crate::throughput::buckets::ThroughputBucket;
use crate::throughput::{BudgetKey, Throughput};
use crate::ttl::TtlState;
use lethedb_query::{ComputedProperties, FullTextPolicy, VectorPolicy};
use lethedb_storage::KeyRange;
use serde_json::Value;
use std::sync::Arc;

/// A container's definition, parsed once and shared.
#[derive(Debug)]
pub struct Container {
    pub database_id: String,
    pub id: String,
    pub database_number: u32,
    pub number: u32,
    pub partition_key: PartitionKeyDefinition,
    /// How its partition key values hash to effective partition keys.
    pub hash_scheme: HashScheme,
    /// Its physical partitions (partition key ranges).
    pub ranges: RangeLayout,
    /// How its item keys are laid out (fixed for its life; see `keys.rs`).
    pub(crate) item_layout: ItemLayout,
    /// How many shards its counters are split into (fixed for its life; see
    /// `partitions/shards.rs`): 1 for a container stored before shards.
    pub(crate) shards: u16,
    /// How its EPK points map to its shards (fixed for its life).
    pub(crate) shard_map: ShardMap,
    pub ttl: TtlState,
    /// The container as clients see it, system properties included.
    pub resource: Value,
    /// The container's own throughput, if provisioned.
    pub throughput: Option<Throughput>,
    /// The budget its requests draw on: its own, else its database's shared one.
    pub budget: Option<(BudgetKey, f64)>,
    /// Its throughput buckets (`throughput/buckets.rs`), sorted by id.
    pub throughput_buckets: Vec<ThroughputBucket>,
    /// `dbs/{database rid}/colls/{container rid}/docs/`, the start of every item's `_self`.
    pub(crate) documents_self_prefix: String,
    /// The computed properties its queries substitute (checked when the container was made).
    pub(crate) computed: Arc<ComputedProperties>,
    /// The distance function of each path of its vector embedding policy, for the
    /// `VectorDistance` calls of its queries that name none.
    pub(crate) vectors: Arc<VectorPolicy>,
    /// The language of each full-text path, read once (`lethedb_query::FullTextPolicy`).
    pub(crate) full_text: Arc<FullTextPolicy>,
    /// Its indexing policy, compiled.
    pub(crate) index_policy: Arc<IndexPolicy>,
    /// Its unique keys (checked when the container was made, fixed for its life).
    pub(crate) unique_keys: UniqueKeyPolicy,
    /// The policies whose entries items may still hold while its index is rebuilt for
    /// `index_policy` (see [`Container::index_ready`]).
    pub(crate) earlier_index_policies: Arc<EarlierPolicies>,
    /// How many times its indexing policy has changed: a snapshot whose index state names
    /// another generation belongs to another definition (`index/builder.rs`).
    pub(crate) index_generation: u64,
}

/// A container's storage usage, expired items excluded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub items: u64,
    pub bytes: u64,
    pub lsn: u64,
}

/// The settings a container is built from, whether it is new or loaded from its record.
pub(crate) struct ContainerParts {
    pub(crate) database_id: String,
    pub(crate) database_number: u32,
    pub(crate) number: u32,
    pub(crate) partition_key: PartitionKeyDefinition,
    pub(crate) ranges: RangeLayout,
    pub(crate) item_layout: ItemLayout,
    pub(crate) shards: u16,
    pub(crate) shard_map: ShardMap,
    pub(crate) ttl: TtlState,
    pub(crate) resource: Value,
    pub(crate) throughput: Option<Throughput>,
    /// The database's shared throughput, which applies when the container has none.
    pub(crate) database_throughput: Option<Throughput>,
    /// The indexing policies a running transformation is replacing, as stored.
    pub(crate) earlier_index_policies: Vec<Value>,
    pub(crate) index_generation: u64,
    pub(crate) throughput_buckets: Vec<ThroughputBucket>,
}

impl Container {
    /// Builds a container, deciding its budget: its own throughput, else its database's.
    pub(crate) fn new(parts: ContainerParts) -> Container {
        let ContainerParts {
            database_id,
            database_number,
            number,
            partition_key,
            ranges,
            item_layout,
            shards,
            shard_map,
            ttl,
            resource,
            throughput,
            database_throughput,
            earlier_index_policies,
            index_generation,
            throughput_buckets,
        } = parts;
        let hash_scheme = HashScheme::of(&partition_key);
        let id = resource
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let budget = match (throughput, database_throughput) {
            (Some(own), _) => Some((BudgetKey::Container(number), own.budget_ru_per_sec())),
            (None, Some(shared)) => Some((
                BudgetKey::Database(database_number),
                shared.budget_ru_per_sec(),
            )),
            (None, None) => None,
        };
        // Checked at create and replace; a stored definition that no longer parses computes
        // nothing rather than failing every query.
        let computed = resource
            .get("computedProperties")
            .filter(|value| !value.is_null())
            .and_then(|value| ComputedProperties::parse(value).ok())
            .unwrap_or_default();
        let index_policy = IndexPolicy::compile(&indexed_policy(&resource));
        Container {
            computed: Arc::new(computed),
            vectors: Arc::new(VectorPolicy::from_container(&resource)),
            full_text: Arc::new(FullTextPolicy::from_container(&resource)),
            index_policy: Arc::new(index_policy),
            unique_keys: UniqueKeyPolicy::from_resource(&resource),
            earlier_index_policies: Arc::new(EarlierPolicies::new(earlier_index_policies)),
            index_generation,
            database_id,
            id,
            database_number,
            number,
            partition_key,
            hash_scheme,
            ranges,
            item_layout,
            // Shards split the EPK space, so only an EPK-ordered container has several.
            shards: if item_layout == ItemLayout::EpkOrdered {
                shards.max(1)
            } else {
                1
            },
            shard_map,
            ttl,
            resource,
            throughput,
            budget,
            throughput_buckets,
            documents_self_prefix: format!(
                "dbs/{}/colls/{}/docs/",
                rids::database_rid(database_number),
                rids::container_rid(database_number, number)
            ),
        }
    }

    /// Whether its index holds exactly the entries of its indexing policy: false while a policy
    /// change's transformation rebuilds it, when items may still hold an earlier policy's
    /// entries and lack the current one's. A query may use the index only when this is true
    /// (and, against a snapshot, when `index::builder::index_ready_in` says the definition
    /// it holds is this one); the scan is correct either way.
    pub fn index_ready(&self) -> bool {
        self.earlier_index_policies.is_empty()
    }

    /// This container under a new index definition: its policy compiled again from its
    /// resource, with the earlier policies a transformation replaces and the policy generation.
    pub(crate) fn with_index(
        self,
        earlier_index_policies: Vec<Value>,
        index_generation: u64,
    ) -> Container {
        Container {
            index_policy: Arc::new(IndexPolicy::compile(&indexed_policy(&self.resource))),
            earlier_index_policies: Arc::new(EarlierPolicies::new(earlier_index_policies)),
            index_generation,
            ..self
        }
    }

    /// The `_rid` of this container's item with the given document number.
    pub(crate) fn document_rid(&self, document_number: u64) -> String {
        rids::document_rid(self.database_number, self.number, document_number)
    }

    pub(crate) fn key_number(&self) -> u64 {
        u64::from(self.number)
    }

    /// The `_rid` of the database that owns this container.
    pub fn database_rid(&self) -> String {
        rids::database_rid(self.database_number)
    }

    pub fn rid(&self) -> &str {
        self.resource
            .get("_rid")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// Where the items of the logical partition `value` lie in this container's keys: the one
    /// place every item key is built from (`keys.rs` lays the bytes out).
    pub(crate) fn partition_place(&self, value: &PartitionKeyValue) -> PartitionPlace {
        let epk_point = match self.item_layout {
            ItemLayout::PartitionOrdered => None,
            // An EPK the engine computes is upper-case hex, so it always has a point.
            ItemLayout::EpkOrdered => {
                Some(epk_point(&value.effective(&self.partition_key)).unwrap_or_default())
            }
        };
        PartitionPlace::new(epk_point, value.encode())
    }

    /// The counters key of one of its shards.
    pub(crate) fn counters_key(&self, shard: Shard) -> Vec<u8> {
        if self.shards <= 1 {
            keys::counters_key(self.key_number())
        } else {
            keys::shard_counters_key(self.key_number(), shard.0)
        }
    }

    /// The lock key of one of its shards (`Writer::write_in_shards`): the shard's bucket
    /// (`partitions/buckets.rs`), so a lock and the rows it guards have one number.
    pub(crate) fn shard_lock(&self, shard: Shard) -> u64 {
        crate::partitions::buckets::bucket_number(self.key_number(), shard)
    }

    /// The lock key that a shared store's writes of the logical partition `value` take when
    /// they stay in its shard: for a test that holds a partition's lock itself
    /// (`Storage::write_reading_shards`) to show who waits for whom.
    pub fn shard_lock_of(&self, value: &PartitionKeyValue) -> u64 {
        self.shard_lock(self.shard_of(value))
    }

    /// Whether every item write of one logical partition stays within its shard, so it may run
    /// under that shard's lock alone (`Writer::write_in_shards`): its full-text statistics
    /// counters are rows of its shard too (`index/maintain.rs`). Not while a rebuild may still
    /// meet an earlier policy's entries.
    pub(crate) fn writes_stay_in_shards(&self) -> bool {
        self.earlier_index_policies.is_empty()
    }

    /// Whether `other`, a definition read again by name, has the same shards as this one: a
    /// write whose shard locks came from this definition may then go ahead under them.
    pub(crate) fn same_shards(&self, other: &Container) -> bool {
        self.number == other.number
            && self.shards == other.shards
            && self.shard_map == other.shard_map
    }

    /// The shard of an item key suffix (see [`keys::item_key_suffix`]).
    pub(crate) fn shard_of_suffix(&self, suffix: &[u8]) -> Shard {
        match keys::epk_point_of_suffix(suffix) {
            Some(point) => shard_of_point(point, self.shards, self.shard_map),
            None => Shard(0),
        }
    }

    /// The shard of an item key.
    pub(crate) fn shard_of_key(&self, item_key: &[u8]) -> Shard {
        self.shard_of_suffix(keys::item_key_suffix(item_key))
    }

    /// The shard of the logical partition `value`.
    pub(crate) fn shard_of(&self, value: &PartitionKeyValue) -> Shard {
        self.shard_of_place(&self.partition_place(value))
    }

    /// The shard of a logical partition whose place is already known.
    pub(crate) fn shard_of_place(&self, place: &PartitionPlace) -> Shard {
        match place.epk_point() {
            Some(point) => shard_of_point(point, self.shards, self.shard_map),
            None => Shard(0),
        }
    }

    /// Its shards that can hold items whose EPKs `filter` admits, in order.
    pub(crate) fn shards_in(&self, filter: &RangeFilter) -> Vec<Shard> {
        self.shard_span(filter).map(Shard).collect()
    }

    /// The first and last of its shards that can hold items whose EPKs `filter` admits.
    pub(crate) fn shard_span(&self, filter: &RangeFilter) -> std::ops::RangeInclusive<u16> {
        let last = self.shards.max(1) - 1;
        if self.shards <= 1 || filter.is_everything() {
            return 0..=last;
        }
        let shard = |point| shard_of_point(point, self.shards, self.shard_map).0;
        let low = epk_point(&filter.start).map_or(0, shard);
        let high = match filter.end.as_str() {
            EPK_MAX => last,
            end => epk_point(end).map_or(last, shard),
        };
        low..=high
    }

    /// The shards of partition key range `range_id` (every shard when no range has that id).
    pub(crate) fn range_shards(&self, range_id: u32) -> std::ops::RangeInclusive<u16> {
        match self.ranges.ranges.iter().find(|range| range.id == range_id) {
            Some(range) if self.ranges.ranges.len() > 1 => self.shard_span(&RangeFilter::of(range)),
            _ => 0..=self.shards.max(1) - 1,
        }
    }

    /// The storage key of the item `id` in the logical partition `value`.
    pub(crate) fn item_key(&self, value: &PartitionKeyValue, id: &str) -> Vec<u8> {
        keys::item_key(self.key_number(), &self.partition_place(value), id)
    }

    /// The prefix of every item key of the logical partition `value`.
    pub(crate) fn partition_prefix(&self, value: &PartitionKeyValue) -> Vec<u8> {
        keys::partition_prefix(self.key_number(), &self.partition_place(value))
    }

    /// The keys that can hold the items whose EPKs `filter` admits: the filter's span of an
    /// EPK-ordered container, else (or for bounds that are not EPKs) every item of the
    /// container. The span may hold a few items outside the filter (those whose EPKs share a
    /// point with a bound), never miss one inside: readers still filter item by item.
    pub(crate) fn items_span(&self, filter: &RangeFilter) -> KeyRange {
        let number = self.key_number();
        let whole = KeyRange::prefix(&keys::container_items_prefix(number));
        if self.item_layout != ItemLayout::EpkOrdered || filter.is_everything() {
            return whole;
        }
        let Some(low) = epk_point(&filter.start) else {
            return whole;
        };
        // Items below `end` may share its point: the span ends past it. "FF" is the top.
        let high = match filter.end.as_str() {
            EPK_MAX => None,
            end => match epk_point(end) {
                Some(point) => point.checked_add(1),
                None => return whole,
            },
        };
        KeyRange::between(
            keys::epk_point_bound(number, Some(low)),
            keys::epk_point_bound(number, high),
        )
    }

    /// The EPKs a request reads: the partition key range it names
    /// (`x-ms-documentdb-partitionkeyrangeid`), narrowed to the EPK range it names
    /// (`x-ms-start-epk`/`x-ms-end-epk`), or everything.
    pub fn range_filter(
        &self,
        range_id: Option<&str>,
        effective_range: Option<&(String, String)>,
    ) -> EngineResult<RangeFilter> {
        let mut filter = match range_id {
            None => RangeFilter::everything(),
            Some(id) => RangeFilter::of(self.range(id)?),
        };
        if let Some((start, end)) = effective_range {
            if !end.is_empty() && start > end {
                return Err(EngineError::new(ErrorCode::InvalidPartitionKeyRange));
            }
            let end = if end.is_empty() { "FF" } else { end.as_str() };
            filter = filter.intersect(&RangeFilter {
                start: start.clone(),
                end: end.to_string(),
            });
        }
        Ok(filter)
    }

    /// The online range with this id, or the error that tells clients to refresh their map.
    pub fn range(&self, id: &str) -> EngineResult<&PartitionKeyRange> {
        self.ranges
            .find(id)
            .map_err(|_| EngineError::new(ErrorCode::PartitionKeyRangeGone))
    }

    /// The id of the range that owns a partition key value.
    pub fn range_of(&self, value: &crate::partitions::partition_key::PartitionKeyValue) -> u32 {
        self.ranges.owner(&value.effective(&self.partition_key)).id
    }

    pub fn etag(&self) -> &str {
        self.resource
            .get("_etag")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}
