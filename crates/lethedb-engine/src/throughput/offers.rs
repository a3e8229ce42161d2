//! Offers: the throughput of databases and containers, as the `/offers` resource shows it.
//!
//! Throughput is stored on the database or container record itself; an offer is a view of it
//! with an id derived from the owner (kind byte and number), so there is nothing to keep in step.

use crate::engine::Engine;
use crate::error::{
    container_not_found, corrupted, database_not_found, resource_not_found, EngineError,
    EngineResult, ErrorCode,
};
use crate::keys;
use crate::partitions::ranges::ranges_for_throughput;
use crate::records::{
    load_container, load_database, store_container, store_database, DatabaseRecord,
};
use crate::rids;
use crate::throughput::Throughput;
use base64::Engine as _;
use lethedb_storage::Table;
use serde_json::{json, Value};

const DATABASE_OFFER: u8 = b'd';
const CONTAINER_OFFER: u8 = b'c';

fn offer_id(kind: u8, number: u32) -> String {
    let mut bytes = vec![kind];
    bytes.extend_from_slice(&number.to_le_bytes());
    bytes.push(0);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn parse_offer_id(id: &str) -> Option<(u8, u32)> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(id)
        .ok()?;
    if bytes.len() != 6 {
        return None;
    }
    Some((bytes[0], u32::from_le_bytes(bytes[1..5].try_into().ok()?)))
}

fn offer(
    id: String,
    resource_link: String,
    owner_rid: &str,
    throughput: &Throughput,
    ts: &Value,
) -> Value {
    json!({
        "id": id,
        "_rid": id,
        "_self": format!("offers/{id}/"),
        "resource": resource_link,
        "offerResourceId": owner_rid,
        "offerVersion": "V2",
        "offerType": "Invalid",
        "content": throughput.offer_content(),
        "_etag": format!("\"{id}-{}\"", throughput.budget_ru_per_sec()),
        "_ts": ts,
    })
}

impl Engine {
    /// Every offer: one per database with shared throughput and per container with its own.
    pub(crate) fn list_offers_blocking(&self) -> EngineResult<Vec<Value>> {
        let reader = self.inner.store.read()?;
        let mut offers = Vec::new();
        for database in self.list_databases_blocking()? {
            let Some(database_id) = database.get("id").and_then(Value::as_str) else {
                continue;
            };
            let Some(record) = load_database(&*reader, database_id)? else {
                continue;
            };
            let database_rid = rids::database_rid(record.number);
            if let Some(throughput) = &record.throughput {
                offers.push(offer(
                    offer_id(DATABASE_OFFER, record.number),
                    format!("dbs/{database_rid}/"),
                    &database_rid,
                    throughput,
                    &record.resource["_ts"],
                ));
            }
            for container in self.list_containers_blocking(database_id)? {
                let Some(container_id) = container.get("id").and_then(Value::as_str) else {
                    continue;
                };
                let Some(found) = load_container(&*reader, database_id, container_id)? else {
                    continue;
                };
                if let Some(throughput) = &found.throughput {
                    offers.push(offer(
                        offer_id(CONTAINER_OFFER, found.number),
                        format!("dbs/{database_rid}/colls/{}/", found.rid()),
                        found.rid(),
                        throughput,
                        &found.resource["_ts"],
                    ));
                }
            }
        }
        Ok(offers)
    }

    pub fn read_offer(&self, id: &str) -> EngineResult<Value> {
        self.list_offers_blocking()?
            .into_iter()
            .find(|offer| {
                offer
                    .get("id")
                    .and_then(Value::as_str)
                    .is_some_and(|found| found.eq_ignore_ascii_case(id))
            })
            .ok_or_else(resource_not_found)
    }

    /// Replaces an offer's throughput from its `content`.
    pub async fn replace_offer(&self, id: &str, body: Value) -> EngineResult<Value> {
        let current = self.read_offer(id)?;
        let exact_id = current
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let (kind, number) = parse_offer_id(&exact_id).ok_or_else(resource_not_found)?;
        let content = body.get("content").ok_or_else(|| {
            EngineError::with_message(ErrorCode::InvalidThroughput, "The offer needs 'content'.")
        })?;
        let throughput = Throughput::from_offer_content(content)?;
        // Find the owner's ids from the offer id, then rewrite its record in the writer.
        let (database_id, container_id) = self.owner_ids(kind, number)?;
        let fixed_ranges = self.inner.partition_key_ranges;
        self.inner
            .writer
            .write(move |context| {
                if let Some(container_id) = container_id {
                    let mut container =
                        load_container(context.reader(), &database_id, &container_id)?
                            .ok_or_else(container_not_found)?;
                    container.throughput = Some(throughput);
                    // More throughput than the ranges carry splits them, as on the service.
                    if fixed_ranges.is_none() {
                        let needed = ranges_for_throughput(Some(throughput));
                        if let Some(split) =
                            container.ranges.split_to(container.hash_scheme, needed)
                        {
                            container.ranges = split;
                        }
                    }
                    store_container(context, &container)?;
                } else {
                    let key = keys::database_key(&database_id);
                    let mut record: DatabaseRecord = context
                        .get(Table::Catalog, &key)?
                        .map(|bytes| serde_json::from_slice(&bytes))
                        .transpose()
                        .map_err(|_| corrupted("database"))?
                        .ok_or_else(database_not_found)?;
                    record.throughput = Some(throughput);
                    store_database(context, &database_id, &record)?;
                }
                Ok(())
            })
            .await?;
        self.read_offer(&exact_id)
    }

    fn owner_ids(&self, kind: u8, number: u32) -> EngineResult<(String, Option<String>)> {
        let reader = self.inner.store.read()?;
        for database in self.list_databases_blocking()? {
            let Some(database_id) = database.get("id").and_then(Value::as_str) else {
                continue;
            };
            let Some(record) = load_database(&*reader, database_id)? else {
                continue;
            };
            if kind == DATABASE_OFFER && record.number == number {
                return Ok((database_id.to_string(), None));
            }
            if kind == CONTAINER_OFFER {
                for container in self.list_containers_blocking(database_id)? {
                    let Some(container_id) = container.get("id").and_then(Value::as_str) else {
                        continue;
                    };
                    if load_container(&*reader, database_id, container_id)?
                        .is_some_and(|c| c.number == number)
                    {
                        return Ok((database_id.to_string(), Some(container_id.to_string())));
                    }
                }
            }
        }
        Err(resource_not_found())
    }
}
