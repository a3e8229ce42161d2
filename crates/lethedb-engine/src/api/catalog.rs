//! Doors for databases and containers: create, read, replace, delete, list, find by `_rid`,
//! and a container's usage and range statistics. Writes go through the writer; listings, `_rid`
//! lookups and usage walks are scans under the scan bound; `read_database` and
//! `read_container` are the non-blocking fast paths (a cache or one point get).

use crate::catalog::encryption_policy::check_policy_unchanged;
use crate::catalog::indexing_policy::{add_container_system_properties, container_resource};
use crate::catalog::kinds::ParentLevel;
use crate::catalog::resource::{check_encryption_keys_exist, delete_children};
use crate::catalog::search_policy::check_replace_keeps_vectors;
use crate::catalog::shared::{body_id, body_object, id_with_rid};
use crate::catalog::unique_key_policy::check_unchanged;
use crate::container::{Container, ContainerParts, Usage};
use crate::engine::Engine;
use crate::error::{
    conflict, container_not_found, database_not_found, precondition_failed, EngineError,
    EngineResult, ErrorCode,
};
use crate::index::builder::start_transformation;
use crate::index::policy::indexed_policy;
use crate::items::delete_container_items;
use crate::keys::{self, ItemLayout};
use crate::partitions::epk::HashScheme;
use crate::partitions::partition_key::PartitionKeyDefinition;
use crate::partitions::ranges::{ranges_at_creation, ranges_for_throughput, RangeLayout};
use crate::partitions::shards::{ShardMap, SHARDS_DEFAULT};
use crate::records::{
    load_container, load_database, next_sequences, store_container, store_database,
    store_sequences, ContainerRecord, DatabaseRecord,
};
use crate::rids;
use crate::rids::catalog_etag;
use crate::throughput::Throughput;
use crate::ttl::TtlState;
use lethedb_storage::{KeyRange, Table};
use serde_json::{json, Value};
use std::ops::ControlFlow;
use std::sync::Arc;

impl Engine {
    pub async fn create_database(
        &self,
        body: Value,
        throughput: Option<Throughput>,
    ) -> EngineResult<Value> {
        let body = body_object(body)?;
        let id = body_id(&body)?;
        self.inner
            .writer
            .write(move |context| {
                let key = keys::database_key(&id);
                if context.get(Table::Catalog, &key)?.is_some() {
                    return Err(conflict());
                }
                let mut sequences = next_sequences(context)?;
                sequences.databases += 1;
                let number = sequences.databases;
                let rid = rids::database_rid(number);
                let resource = json!({
                    "id": id,
                    "_rid": rid,
                    "_self": format!("dbs/{rid}/"),
                    "_etag": catalog_etag(u64::from(number), context.now_ms),
                    "_colls": "colls/",
                    "_users": "users/",
                    "_ts": context.now_ms.div_euclid(1000),
                });
                let record = DatabaseRecord {
                    number,
                    resource: resource.clone(),
                    throughput,
                };
                store_sequences(context, &sequences)?;
                store_database(context, &id, &record)?;
                Ok(resource)
            })
            .await
    }

    pub fn read_database(&self, database_id: &str) -> EngineResult<Value> {
        let reader = self.inner.store.read()?;
        load_database(&*reader, database_id)?
            .map(|record| record.resource)
            .ok_or_else(database_not_found)
    }

    pub async fn delete_database(&self, database_id: &str) -> EngineResult<()> {
        let database_id = database_id.to_string();
        let numbers = self
            .inner
            .writer
            .write(move |context| {
                let key = keys::database_key(&database_id);
                if context.get(Table::Catalog, &key)?.is_none() {
                    return Err(database_not_found());
                }
                let mut containers = Vec::new();
                let mut numbers = Vec::new();
                context.scan(
                    Table::Catalog,
                    &KeyRange::prefix(&keys::container_prefix(&database_id)),
                    &mut |key, value| {
                        containers.push((
                            key.to_vec(),
                            serde_json::from_slice::<ContainerRecord>(value).ok(),
                        ));
                        ControlFlow::Continue(())
                    },
                )?;
                for (key, record) in containers {
                    if let Some(record) = record {
                        delete_container_items(context, u64::from(record.number))?;
                        numbers.push(u64::from(record.number));
                    }
                    context.delete(Table::Catalog, &key)?;
                }
                delete_children(context, ParentLevel::Database, &[&database_id])?;
                context.delete(Table::Catalog, &key)?;
                context.catalog_changed();
                Ok(numbers)
            })
            .await?;
        for number in numbers {
            self.inner.vectors.forget(number);
        }
        Ok(())
    }

    pub async fn create_container(
        &self,
        database_id: &str,
        body: Value,
        throughput: Option<Throughput>,
    ) -> EngineResult<Arc<Container>> {
        let body = body_object(body)?;
        let id = body_id(&body)?;
        let partition_key = PartitionKeyDefinition::from_container_body(body.get("partitionKey"))?;
        let (resource, default_ttl) = container_resource(&body, &id, &partition_key)?;
        let database_id = database_id.to_string();
        let fixed_ranges = self.inner.partition_key_ranges;
        self.inner
            .writer
            .write(move |context| {
                let database = load_database(context.reader(), &database_id)?
                    .ok_or_else(database_not_found)?;
                let key = keys::container_key(&database_id, &id);
                if context.get(Table::Catalog, &key)?.is_some() {
                    return Err(conflict());
                }
                check_encryption_keys_exist(context.reader(), &database_id, &resource)?;
                let mut sequences = next_sequences(context)?;
                sequences.containers += 1;
                let number = sequences.containers;
                let database_rid = rids::database_rid(database.number);
                let rid = rids::container_rid(database.number, number);
                let mut resource = resource;
                add_container_system_properties(
                    &mut resource,
                    &database_rid,
                    &rid,
                    &catalog_etag(u64::from(number), context.now_ms),
                    context.now_ms,
                );
                // A container in a database with shared throughput is laid out by the
                // database's, one range per partition's worth; its own, as the service creates it.
                let range_count = fixed_ranges.unwrap_or_else(|| match throughput {
                    Some(own) => ranges_at_creation(Some(own)),
                    None => ranges_for_throughput(database.throughput),
                });
                let container = Container::new(ContainerParts {
                    database_id: database_id.clone(),
                    database_number: database.number,
                    number,
                    ranges: RangeLayout::even(HashScheme::of(&partition_key), range_count),
                    // A new container's items are EPK-ordered, so a range reads only its share.
                    item_layout: ItemLayout::EpkOrdered,
                    // A new container's counters are split by EPK, so writes to different
                    // logical partitions touch different rows.
                    shards: SHARDS_DEFAULT,
                    // Spread by the bits a hash v2 point uses (`partitions/shards.rs`).
                    shard_map: ShardMap::BelowHashMarker,
                    partition_key,
                    ttl: TtlState::new(default_ttl),
                    resource,
                    throughput,
                    database_throughput: database.throughput,
                    earlier_index_policies: Vec::new(),
                    index_generation: 0,
                    throughput_buckets: Vec::new(),
                });
                store_sequences(context, &sequences)?;
                store_container(context, &container)?;
                Ok(Arc::new(container))
            })
            .await
    }

    /// A container's definition for a point read: on a shared store, the cached one without
    /// asking the store whether it is current, because the point read itself reads the
    /// definition in its snapshot and judges the item by that (`Engine::read_item_with_lsn`
    /// returns it with the item). Elsewhere, and when nothing is cached, [`Engine::read_container`].
    pub fn container_for_point_read(
        &self,
        database_id: &str,
        container_id: &str,
    ) -> EngineResult<Arc<Container>> {
        if self.inner.shared {
            if let Some(found) = self.inner.containers.get(database_id, container_id) {
                return Ok(found);
            }
        }
        self.read_container(database_id, container_id)
    }

    /// [`Engine::read_container`] for a caller on an asynchronous runtime. On a shared store
    /// whose cache holds the container, one awaited statement (the clock and the catalog
    /// epoch, no transaction) says whether the cached definition is current, and no thread
    /// waits for it; otherwise, and on a store this process owns, the same as
    /// [`Engine::read_container`].
    pub async fn read_container_awaiting(
        &self,
        database_id: &str,
        container_id: &str,
    ) -> EngineResult<Arc<Container>> {
        let cache = &self.inner.containers;
        if self.inner.shared && cache.get(database_id, container_id).is_some() {
            if let Some(look) = self.inner.store.look_async(&[]) {
                // As in `read_container`: the cache serves only the epoch the store is at, and
                // what it then holds was cached at that epoch.
                if cache.serves(look.await?.epoch) {
                    if let Some(found) = cache.get(database_id, container_id) {
                        return Ok(found);
                    }
                }
            }
        }
        self.read_container(database_id, container_id)
    }

    /// Reads a container's definition, from the cache when it is current.
    pub fn read_container(
        &self,
        database_id: &str,
        container_id: &str,
    ) -> EngineResult<Arc<Container>> {
        let cache = &self.inner.containers;
        if !self.inner.shared {
            if let Some(found) = cache.get(database_id, container_id) {
                return Ok(found);
            }
        }
        // Read before the snapshot: a change committed meanwhile keeps a stale definition out.
        let generation = cache.generation.load(std::sync::atomic::Ordering::SeqCst);
        let reader = self.inner.store.read()?;
        // On a shared store the cache only saves parsing: the transaction's catalog epoch
        // says whether what it holds is still what the store holds.
        let usable = cache.serves(reader.catalog_epoch());
        if self.inner.shared && usable {
            if let Some(found) = cache.get(database_id, container_id) {
                return Ok(found);
            }
        }
        let container = Arc::new(
            load_container(&*reader, database_id, container_id)?.ok_or_else(container_not_found)?,
        );
        if usable {
            cache.insert_if_current(generation, Arc::clone(&container));
        }
        Ok(container)
    }

    /// Replaces a container's mutable settings: indexing policy and `defaultTtl`. The id, the
    /// partition key, the unique key policy and the client encryption policy cannot change. A
    /// new `defaultTtl` applies to every item at once; a new indexing policy is built in the
    /// background (`index/builder.rs`).
    pub async fn replace_container(
        &self,
        database_id: &str,
        container_id: &str,
        body: Value,
        if_match: Option<String>,
    ) -> EngineResult<Arc<Container>> {
        let body = body_object(body)?;
        let id = body_id(&body)?;
        if id != container_id {
            return Err(EngineError::with_message(
                ErrorCode::IdMismatch,
                "The id in the request body does not match the id in the request URI; a container's id cannot be changed.",
            ));
        }
        let (database_id, container_id) = (database_id.to_string(), container_id.to_string());
        self.inner
            .writer
            .write(move |context| {
                let existing = load_container(context.reader(), &database_id, &container_id)?
                    .ok_or_else(container_not_found)?;
                if let Some(expected) = &if_match {
                    if expected != "*" && expected != existing.etag() {
                        return Err(precondition_failed());
                    }
                }
                if let Some(sent) = body.get("partitionKey").filter(|v| !v.is_null()) {
                    let sent = PartitionKeyDefinition::from_container_body(Some(sent))?;
                    if sent.paths != existing.partition_key.paths {
                        return Err(EngineError::with_message(
                            ErrorCode::InvalidPartitionKeyDefinition,
                            "Document collection partition key cannot be changed.",
                        ));
                    }
                }
                let (mut resource, default_ttl) =
                    container_resource(&body, &container_id, &existing.partition_key)?;
                check_unchanged(&existing.unique_keys, &resource)?;
                check_policy_unchanged(&existing.resource, &resource)?;
                check_replace_keeps_vectors(&existing.resource, &resource)?;
                let database_rid = rids::database_rid(existing.database_number);
                add_container_system_properties(
                    &mut resource,
                    &database_rid,
                    existing.rid(),
                    &catalog_etag(existing.key_number(), context.now_ms),
                    context.now_ms,
                );
                let ttl = if default_ttl == existing.ttl.default_ttl_secs {
                    existing.ttl
                } else {
                    existing.ttl.changed(default_ttl, context.now_ms)
                };
                // A changed indexing policy (or full-text language) starts rebuilding the index
                // in the background.
                let new_policy = indexed_policy(&resource);
                let (earlier, generation) = start_transformation(context, &existing, &new_policy)?;
                let container = Container {
                    resource,
                    ttl,
                    ..existing
                }
                .with_index(earlier, generation);
                store_container(context, &container)?;
                Ok(Arc::new(container))
            })
            .await
    }

    pub async fn delete_container(
        &self,
        database_id: &str,
        container_id: &str,
    ) -> EngineResult<()> {
        let (database_id, container_id) = (database_id.to_string(), container_id.to_string());
        let number = self
            .inner
            .writer
            .write(move |context| {
                let existing = load_container(context.reader(), &database_id, &container_id)?
                    .ok_or_else(container_not_found)?;
                delete_container_items(context, existing.key_number())?;
                delete_children(
                    context,
                    ParentLevel::Container,
                    &[&database_id, &container_id],
                )?;
                context.delete(
                    Table::Catalog,
                    &keys::container_key(&database_id, &container_id),
                )?;
                context.catalog_changed();
                Ok(existing.key_number())
            })
            .await?;
        self.inner.vectors.forget(number);
        Ok(())
    }

    /// Items and bytes a container holds, expired items excluded even before the sweeper has
    /// deleted them. Costs one read of the counters plus a walk over the expired backlog.
    pub async fn container_usage(&self, container: &Arc<Container>) -> EngineResult<Usage> {
        let container = Arc::clone(container);
        self.run_scan(move |engine| engine.container_usage_blocking(&container))
            .await
    }

    /// Items, bytes and distinct partition keys per partition key range (walks the container).
    pub async fn range_statistics(
        &self,
        container: &Arc<Container>,
    ) -> EngineResult<Vec<crate::catalog::usage::RangeStatistics>> {
        let container = Arc::clone(container);
        self.run_scan(move |engine| engine.range_statistics_blocking(&container))
            .await
    }

    /// Every database, as clients see them.
    pub async fn list_databases(&self) -> EngineResult<Vec<Value>> {
        self.run_scan(Engine::list_databases_blocking).await
    }

    /// Every container of a database, as clients see them; NotFound without the database.
    pub async fn list_containers(&self, database_id: &str) -> EngineResult<Vec<Value>> {
        let database_id = database_id.to_string();
        self.run_scan(move |engine| engine.list_containers_blocking(&database_id))
            .await
    }

    /// The id of the database whose `_rid` is `rid`, if any.
    pub async fn database_id_by_rid(&self, rid: &str) -> EngineResult<Option<String>> {
        // Most paths name resources by id: what cannot be a rid is answered without the hop.
        if !rids::has_length(rid, rids::DATABASE_RID_BYTES) {
            return Ok(None);
        }
        let rid = rid.to_string();
        self.run_scan(move |engine| Ok(id_with_rid(engine.list_databases_blocking()?, &rid)))
            .await
    }

    /// The id of the container in `database_id` whose `_rid` is `rid`, if any.
    pub async fn container_id_by_rid(
        &self,
        database_id: &str,
        rid: &str,
    ) -> EngineResult<Option<String>> {
        if !rids::has_length(rid, rids::CONTAINER_RID_BYTES) {
            return Ok(None);
        }
        let (database_id, rid) = (database_id.to_string(), rid.to_string());
        self.run_scan(move |engine| {
            Ok(id_with_rid(
                engine.list_containers_blocking(&database_id)?,
                &rid,
            ))
        })
        .await
    }

    /// Every container with its usage estimate (`None` where it could not be read), as the
    /// metrics scrape reports them: a catalog walk and a counter read per container, so it runs
    /// under the scan bound.
    pub async fn container_usages(&self) -> EngineResult<Vec<(Arc<Container>, Option<Usage>)>> {
        self.run_scan(|engine| {
            Ok(engine
                .all_containers_blocking()?
                .into_iter()
                .map(|container| {
                    let usage = engine.container_usage_estimate_blocking(&container).ok();
                    (container, usage)
                })
                .collect())
        })
        .await
    }
}
