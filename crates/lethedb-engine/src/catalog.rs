//! Databases and containers: creating, reading, listing, replacing and deleting them.
//!
//! Both are small JSON records in the catalog table. A container's record also holds its number
//! (the prefix of its item keys) and its [`TtlState`]. Deleting a database or a container deletes
//! everything beneath it in the same transaction. This module does not touch items one by one
//! except to delete them with their container.

use crate::error::{EngineError, EngineResult};
use crate::keys;
use crate::partition_key::PartitionKeyDefinition;
use crate::records::{self, Counters, ExpiryEntry};
use crate::throughput::{BudgetKey, Throughput};
use crate::ttl::{self, TtlState};
use crate::writer::WriteContext;
use crate::{validate_id, Engine};
use lethedb_storage::{KeyRange, ReadTxn, Table};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::ops::ControlFlow;
use std::sync::Arc;

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
struct ContainerRecord {
    database_id: String,
    database_number: u32,
    number: u32,
    ttl: TtlState,
    resource: Value,
    #[serde(default)]
    throughput: Option<Throughput>,
}

/// The global sequence numbers for new databases and containers.
#[derive(Serialize, Deserialize, Default)]
struct Sequences {
    databases: u32,
    containers: u32,
}

/// A container's definition, parsed once and shared.
#[derive(Debug)]
pub struct Container {
    pub database_id: String,
    pub id: String,
    pub database_number: u32,
    pub number: u32,
    pub partition_key: PartitionKeyDefinition,
    pub ttl: TtlState,
    /// The container as clients see it, system properties included.
    pub resource: Value,
    /// The container's own throughput, if provisioned.
    pub throughput: Option<Throughput>,
    /// The budget its requests draw on: its own, else its database's shared one.
    pub budget: Option<(BudgetKey, f64)>,
    /// `dbs/{database rid}/colls/{container rid}/docs/`, the start of every item's `_self`.
    pub(crate) documents_self_prefix: String,
}

fn documents_self_prefix(database_number: u32, container_number: u32) -> String {
    format!(
        "dbs/{}/colls/{}/docs/",
        records::database_rid(database_number),
        records::container_rid(database_number, container_number)
    )
}

impl Container {
    /// The `_rid` of this container's item with the given document number.
    pub(crate) fn document_rid(&self, document_number: u64) -> String {
        records::document_rid(self.database_number, self.number, document_number)
    }

    fn from_record(
        record: ContainerRecord,
        database_throughput: Option<Throughput>,
    ) -> EngineResult<Container> {
        let id = record
            .resource
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let partition_key =
            PartitionKeyDefinition::from_container_body(record.resource.get("partitionKey"))?;
        Ok(Container {
            database_id: record.database_id,
            id,
            database_number: record.database_number,
            number: record.number,
            partition_key,
            ttl: record.ttl,
            resource: record.resource,
            throughput: record.throughput,
            budget: match (record.throughput, database_throughput) {
                (Some(own), _) => {
                    Some((BudgetKey::Container(record.number), own.budget_ru_per_sec()))
                }
                (None, Some(shared)) => Some((
                    BudgetKey::Database(record.database_number),
                    shared.budget_ru_per_sec(),
                )),
                (None, None) => None,
            },
            documents_self_prefix: documents_self_prefix(record.database_number, record.number),
        })
    }

    pub(crate) fn key_number(&self) -> u64 {
        u64::from(self.number)
    }

    pub fn rid(&self) -> &str {
        self.resource
            .get("_rid")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    pub fn etag(&self) -> &str {
        self.resource
            .get("_etag")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// A container's storage usage, expired items excluded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub items: u64,
    pub bytes: u64,
    pub lsn: u64,
}

pub(crate) fn not_found() -> EngineError {
    EngineError::NotFound(
        "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found".into(),
    )
}

fn conflict() -> EngineError {
    EngineError::Conflict("Resource with specified id or name already exists.".into())
}

pub(crate) fn corrupted(what: &str) -> EngineError {
    EngineError::Unavailable(format!("a stored {what} could not be read"))
}

fn body_object(body: Value) -> EngineResult<Map<String, Value>> {
    match body {
        Value::Object(map) => Ok(map),
        _ => Err(EngineError::BadRequest(
            "The request body must be a JSON object.".into(),
        )),
    }
}

fn body_id(body: &Map<String, Value>) -> EngineResult<String> {
    match body.get("id") {
        Some(Value::String(id)) => {
            validate_id(id)?;
            Ok(id.clone())
        }
        _ => Err(EngineError::BadRequest(
            "The input content is invalid because the required properties - 'id; ' - are missing"
                .into(),
        )),
    }
}

/// A catalog ETag: unique per change, derived from the sequence the writer stamps.
fn catalog_etag(number: u32, now_ms: i64) -> String {
    format!(
        "\"{number:08x}-0000-0000-0000-{:012x}\"",
        now_ms as u64 & 0xffff_ffff_ffff
    )
}

/// The indexing policy as the service stores and returns it, with its defaults filled in.
fn normalize_indexing_policy(policy: Option<&Value>) -> EngineResult<Value> {
    let bad =
        |why: &str| EngineError::BadRequest(format!("The indexing policy is invalid: {why}."));
    let mut policy = match policy {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => return Err(bad("it must be an object")),
    };
    let mode = match policy.get("indexingMode") {
        None | Some(Value::Null) => "consistent".to_string(),
        Some(Value::String(mode)) => mode.to_ascii_lowercase(),
        Some(_) => return Err(bad("'indexingMode' must be a string")),
    };
    if !["consistent", "lazy", "none"].contains(&mode.as_str()) {
        return Err(bad("'indexingMode' must be 'consistent', 'lazy' or 'none'"));
    }
    let automatic = match policy.get("automatic") {
        None | Some(Value::Null) => mode != "none",
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(bad("'automatic' must be a boolean")),
    };
    for list in [
        "includedPaths",
        "excludedPaths",
        "compositeIndexes",
        "spatialIndexes",
    ] {
        if let Some(value) = policy.get(list) {
            if !value.is_array() && !value.is_null() {
                return Err(bad(&format!("'{list}' must be an array")));
            }
        }
    }
    let paths_of = |policy: &Map<String, Value>, list: &str| -> Vec<Value> {
        policy
            .get(list)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (included, excluded) = if mode == "none" {
        if !paths_of(&policy, "includedPaths").is_empty() {
            return Err(bad(
                "a policy with indexing mode 'none' cannot include paths",
            ));
        }
        (Vec::new(), paths_of(&policy, "excludedPaths"))
    } else {
        let mut included = paths_of(&policy, "includedPaths");
        let mut excluded = paths_of(&policy, "excludedPaths");
        if included.is_empty() && excluded.is_empty() {
            included.push(json!({"path": "/*"}));
        }
        let etag_path = json!({"path": "/\"_etag\"/?"});
        if !excluded.contains(&etag_path) {
            excluded.push(etag_path);
        }
        (included, excluded)
    };
    policy.insert("indexingMode".into(), Value::String(mode));
    policy.insert("automatic".into(), Value::Bool(automatic));
    policy.insert("includedPaths".into(), Value::Array(included));
    policy.insert("excludedPaths".into(), Value::Array(excluded));
    Ok(Value::Object(policy))
}

fn indexing_mode_is_none(policy: &Value) -> bool {
    policy.get("indexingMode").and_then(Value::as_str) == Some("none")
}

/// Builds a container's public resource from a request body; shared by create and replace.
fn container_resource(
    body: &Map<String, Value>,
    id: &str,
    partition_key: &PartitionKeyDefinition,
) -> EngineResult<(Value, Option<i64>)> {
    let default_ttl = ttl::parse_default_ttl(body.get("defaultTtl"))?;
    let indexing_policy = normalize_indexing_policy(body.get("indexingPolicy"))?;
    if default_ttl.is_some() && indexing_mode_is_none(&indexing_policy) {
        return Err(EngineError::BadRequest(
            "The time to live (defaultTtl) cannot be set on a collection whose indexing mode is 'none'.".into(),
        ));
    }
    let mut resource = Map::new();
    resource.insert("id".into(), Value::String(id.to_string()));
    resource.insert("indexingPolicy".into(), indexing_policy);
    resource.insert("partitionKey".into(), partition_key.resource.clone());
    if let Some(secs) = default_ttl {
        resource.insert("defaultTtl".into(), json!(secs));
    }
    // Properties the service keeps as the client set them, with its defaults otherwise.
    let defaults = [
        (
            "conflictResolutionPolicy",
            json!({"mode": "LastWriterWins", "conflictResolutionPath": "/_ts", "conflictResolutionProcedure": ""}),
        ),
        ("geospatialConfig", json!({"type": "Geography"})),
    ];
    for (name, default) in defaults {
        let value = body
            .get(name)
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or(default);
        resource.insert(name.into(), value);
    }
    for name in [
        "uniqueKeyPolicy",
        "analyticalStorageTtl",
        "computedProperties",
        "fullTextPolicy",
        "vectorEmbeddingPolicy",
    ] {
        if let Some(value) = body.get(name).filter(|v| !v.is_null()) {
            resource.insert(name.into(), value.clone());
        }
    }
    Ok((Value::Object(resource), default_ttl))
}

fn add_container_system_properties(
    resource: &mut Value,
    database_rid: &str,
    rid: &str,
    etag: &str,
    now_ms: i64,
) {
    if let Value::Object(map) = resource {
        map.insert("_rid".into(), json!(rid));
        map.insert("_ts".into(), json!(now_ms.div_euclid(1000)));
        map.insert(
            "_self".into(),
            json!(format!("dbs/{database_rid}/colls/{rid}/")),
        );
        map.insert("_etag".into(), json!(etag));
        map.insert("_docs".into(), json!("docs/"));
        map.insert("_sprocs".into(), json!("sprocs/"));
        map.insert("_triggers".into(), json!("triggers/"));
        map.insert("_udfs".into(), json!("udfs/"));
        map.insert("_conflicts".into(), json!("conflicts/"));
    }
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

pub(crate) fn load_container(
    reader: &dyn ReadTxn,
    database_id: &str,
    container_id: &str,
) -> EngineResult<Option<Container>> {
    match reader.get(
        Table::Catalog,
        &keys::container_key(database_id, container_id),
    )? {
        None => Ok(None),
        Some(bytes) => {
            let record: ContainerRecord =
                serde_json::from_slice(&bytes).map_err(|_| corrupted("container"))?;
            let shared =
                load_database(reader, database_id)?.and_then(|database| database.throughput);
            Container::from_record(record, shared).map(Some)
        }
    }
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

fn next_sequences(context: &mut WriteContext<'_>) -> EngineResult<Sequences> {
    match context.get(Table::Catalog, keys::SEQUENCES_KEY)? {
        None => Ok(Sequences::default()),
        Some(bytes) => serde_json::from_slice(&bytes).map_err(|_| corrupted("sequence")),
    }
}

fn store_sequences(context: &mut WriteContext<'_>, sequences: &Sequences) -> EngineResult<()> {
    let bytes = serde_json::to_vec(sequences).map_err(|_| corrupted("sequence"))?;
    context.put(Table::Catalog, keys::SEQUENCES_KEY, &bytes)
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
    let loaded =
        load_container(context.reader(), database_id, container_id)?.ok_or_else(not_found)?;
    let loaded = Arc::new(loaded);
    context.containers.insert(cache_key, Arc::clone(&loaded));
    Ok(loaded)
}

/// Deletes every item, expiry entry and counter of a container.
fn delete_container_contents(
    context: &mut WriteContext<'_>,
    container_number: u64,
) -> EngineResult<()> {
    for table in [Table::Items, Table::Expiry, Table::ResourceIds] {
        let mut doomed = Vec::new();
        context.scan(
            table,
            &KeyRange::prefix(&keys::container_items_prefix(container_number)),
            &mut |key, _| {
                doomed.push(key.to_vec());
                ControlFlow::Continue(())
            },
        )?;
        for key in doomed {
            context.delete(table, &key)?;
        }
    }
    context.delete(Table::Counters, &keys::counters_key(container_number))
}

pub(crate) fn read_counters(reader: &dyn ReadTxn, container_number: u64) -> EngineResult<Counters> {
    match reader.get(Table::Counters, &keys::counters_key(container_number))? {
        None => Ok(Counters::default()),
        Some(bytes) => Counters::decode(&bytes).ok_or_else(|| corrupted("counter")),
    }
}

impl Engine {
    // ----- databases -----

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
                let rid = records::database_rid(number);
                let resource = json!({
                    "id": id,
                    "_rid": rid,
                    "_self": format!("dbs/{rid}/"),
                    "_etag": catalog_etag(number, context.now_ms),
                    "_colls": "colls/",
                    "_users": "users/",
                    "_ts": context.now_ms.div_euclid(1000),
                });
                let record = DatabaseRecord {
                    number,
                    resource: resource.clone(),
                    throughput,
                };
                let bytes = serde_json::to_vec(&record).map_err(|_| corrupted("database"))?;
                store_sequences(context, &sequences)?;
                context.put(Table::Catalog, &key, &bytes)?;
                context.catalog_changed();
                Ok(resource)
            })
            .await
    }

    pub fn read_database(&self, database_id: &str) -> EngineResult<Value> {
        let reader = self.inner.store.read()?;
        load_database(&*reader, database_id)?
            .map(|record| record.resource)
            .ok_or_else(not_found)
    }

    pub fn list_databases(&self) -> EngineResult<Vec<Value>> {
        let reader = self.inner.store.read()?;
        let mut found = Vec::new();
        let mut broken = false;
        reader.scan(
            Table::Catalog,
            &KeyRange::prefix(keys::DATABASE_PREFIX),
            &mut |_, value| {
                match serde_json::from_slice::<DatabaseRecord>(value) {
                    Ok(record) => found.push(record.resource),
                    Err(_) => broken = true,
                }
                ControlFlow::Continue(())
            },
        )?;
        if broken {
            return Err(corrupted("database"));
        }
        Ok(found)
    }

    /// The id of the database whose `_rid` is `rid`, if any.
    pub fn database_id_by_rid(&self, rid: &str) -> EngineResult<Option<String>> {
        if records::decode_rid(rid).map(|b| b.len()) != Some(4) {
            return Ok(None);
        }
        Ok(self.list_databases()?.into_iter().find_map(|database| {
            (database.get("_rid").and_then(Value::as_str) == Some(rid))
                .then(|| {
                    database
                        .get("id")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .flatten()
        }))
    }

    /// The id of the container in `database_id` whose `_rid` is `rid`, if any.
    pub fn container_id_by_rid(
        &self,
        database_id: &str,
        rid: &str,
    ) -> EngineResult<Option<String>> {
        if records::decode_rid(rid).map(|b| b.len()) != Some(8) {
            return Ok(None);
        }
        Ok(self
            .list_containers(database_id)?
            .into_iter()
            .find_map(|container| {
                (container.get("_rid").and_then(Value::as_str) == Some(rid))
                    .then(|| {
                        container
                            .get("id")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
                    .flatten()
            }))
    }

    pub async fn delete_database(&self, database_id: &str) -> EngineResult<()> {
        let database_id = database_id.to_string();
        self.inner
            .writer
            .write(move |context| {
                let key = keys::database_key(&database_id);
                if context.get(Table::Catalog, &key)?.is_none() {
                    return Err(not_found());
                }
                let mut containers = Vec::new();
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
                        delete_container_contents(context, u64::from(record.number))?;
                    }
                    context.delete(Table::Catalog, &key)?;
                }
                context.delete(Table::Catalog, &key)?;
                context.catalog_changed();
                Ok(())
            })
            .await
    }

    // ----- containers -----

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
        self.inner
            .writer
            .write(move |context| {
                let database =
                    load_database(context.reader(), &database_id)?.ok_or_else(not_found)?;
                let key = keys::container_key(&database_id, &id);
                if context.get(Table::Catalog, &key)?.is_some() {
                    return Err(conflict());
                }
                let mut sequences = next_sequences(context)?;
                sequences.containers += 1;
                let number = sequences.containers;
                let database_rid = records::database_rid(database.number);
                let rid = records::container_rid(database.number, number);
                let mut resource = resource;
                add_container_system_properties(
                    &mut resource,
                    &database_rid,
                    &rid,
                    &catalog_etag(number, context.now_ms),
                    context.now_ms,
                );
                let container = Container {
                    database_id: database_id.clone(),
                    id,
                    database_number: database.number,
                    number,
                    partition_key,
                    ttl: TtlState::new(default_ttl),
                    resource,
                    throughput,
                    budget: match (throughput, database.throughput) {
                        (Some(own), _) => {
                            Some((BudgetKey::Container(number), own.budget_ru_per_sec()))
                        }
                        (None, Some(shared)) => Some((
                            BudgetKey::Database(database.number),
                            shared.budget_ru_per_sec(),
                        )),
                        (None, None) => None,
                    },
                    documents_self_prefix: documents_self_prefix(database.number, number),
                };
                store_sequences(context, &sequences)?;
                store_container(context, &container)?;
                Ok(Arc::new(container))
            })
            .await
    }

    /// Reads a container's definition, from the cache when it is current.
    pub fn read_container(
        &self,
        database_id: &str,
        container_id: &str,
    ) -> EngineResult<Arc<Container>> {
        let cache = &self.inner.containers;
        if let Some(found) = cache.get(database_id, container_id) {
            return Ok(found);
        }
        let generation = cache.generation.load(std::sync::atomic::Ordering::SeqCst);
        let reader = self.inner.store.read()?;
        let container =
            Arc::new(load_container(&*reader, database_id, container_id)?.ok_or_else(not_found)?);
        cache.insert_if_current(generation, Arc::clone(&container));
        Ok(container)
    }

    pub fn list_containers(&self, database_id: &str) -> EngineResult<Vec<Value>> {
        let reader = self.inner.store.read()?;
        if load_database(&*reader, database_id)?.is_none() {
            return Err(not_found());
        }
        let mut found = Vec::new();
        let mut broken = false;
        reader.scan(
            Table::Catalog,
            &KeyRange::prefix(&keys::container_prefix(database_id)),
            &mut |_, value| {
                match serde_json::from_slice::<ContainerRecord>(value) {
                    Ok(record) => found.push(record.resource),
                    Err(_) => broken = true,
                }
                ControlFlow::Continue(())
            },
        )?;
        if broken {
            return Err(corrupted("container"));
        }
        Ok(found)
    }

    /// Replaces a container's mutable settings: indexing policy and `defaultTtl`. The id and the
    /// partition key cannot change. A new `defaultTtl` applies to every item at once.
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
            return Err(EngineError::BadRequest(
                "The id in the request body does not match the id in the request URI; a container's id cannot be changed.".into(),
            ));
        }
        let (database_id, container_id) = (database_id.to_string(), container_id.to_string());
        self.inner
            .writer
            .write(move |context| {
                let existing = load_container(context.reader(), &database_id, &container_id)?.ok_or_else(not_found)?;
                if let Some(expected) = &if_match {
                    if expected != "*" && expected != existing.etag() {
                        return Err(EngineError::PreconditionFailed(
                            "Operation cannot be performed because one of the specified precondition is not met.".into(),
                        ));
                    }
                }
                if let Some(sent) = body.get("partitionKey").filter(|v| !v.is_null()) {
                    let sent = PartitionKeyDefinition::from_container_body(Some(sent))?;
                    if sent.paths != existing.partition_key.paths {
                        return Err(EngineError::BadRequest(
                            "Document collection partition key cannot be changed.".into(),
                        ));
                    }
                }
                let (mut resource, default_ttl) = container_resource(&body, &container_id, &existing.partition_key)?;
                let database_rid = records::database_rid(existing.database_number);
                add_container_system_properties(
                    &mut resource,
                    &database_rid,
                    existing.rid(),
                    &catalog_etag(existing.number, context.now_ms),
                    context.now_ms,
                );
                let ttl = if default_ttl == existing.ttl.default_ttl_secs {
                    existing.ttl
                } else {
                    existing.ttl.changed(default_ttl, context.now_ms)
                };
                let container = Container { resource, ttl, ..existing };
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
        self.inner
            .writer
            .write(move |context| {
                let existing = load_container(context.reader(), &database_id, &container_id)?
                    .ok_or_else(not_found)?;
                delete_container_contents(context, existing.key_number())?;
                context.delete(
                    Table::Catalog,
                    &keys::container_key(&database_id, &container_id),
                )?;
                context.catalog_changed();
                Ok(())
            })
            .await
    }

    /// Like [`Engine::container_usage`], but for frequent observers (metrics scrapes): when the
    /// sweeper last saw a large backlog, the expired share is estimated from its count instead
    /// of walked, so a scrape during a mass expiry stays cheap.
    pub fn container_usage_estimate(&self, container: &Container) -> EngineResult<Usage> {
        /// Backlogs up to this size are walked exactly.
        const EXACT_BACKLOG_MAX: u64 = 10_000;
        let backlog = self
            .sweep_stats()
            .into_iter()
            .find(|s| s.database_id == container.database_id && s.container_id == container.id)
            .map_or(0, |s| s.backlog_items);
        if backlog <= EXACT_BACKLOG_MAX {
            return self.container_usage(container);
        }
        let reader = self.inner.store.read()?;
        let counters = read_counters(&*reader, container.key_number())?;
        let items = counters.items.saturating_sub(backlog);
        let bytes = if counters.items == 0 {
            0
        } else {
            (counters.bytes as u128 * u128::from(items) / u128::from(counters.items)) as u64
        };
        Ok(Usage {
            items,
            bytes,
            lsn: counters.lsn,
        })
    }

    /// Items and bytes a container holds, expired items excluded even before the sweeper has
    /// deleted them. Costs one read of the counters plus a walk over the expired backlog.
    pub fn container_usage(&self, container: &Container) -> EngineResult<Usage> {
        let reader = self.inner.store.read()?;
        let counters = read_counters(&*reader, container.key_number())?;
        let mut expired_items = 0u64;
        let mut expired_bytes = 0u64;
        crate::sweeper::visit_expired(
            &*reader,
            container,
            self.now_ms(),
            &mut |_, entry: ExpiryEntry| {
                expired_items += 1;
                expired_bytes += entry.body_bytes;
                ControlFlow::Continue(())
            },
        )?;
        Ok(Usage {
            items: counters.items.saturating_sub(expired_items),
            bytes: counters.bytes.saturating_sub(expired_bytes),
            lsn: counters.lsn,
        })
    }
}
