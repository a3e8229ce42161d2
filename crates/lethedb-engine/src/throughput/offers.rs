//! Offers: the throughput of databases and containers, as the `/offers` resource shows it.
//!
//! Throughput is stored on the database or container record itself; an offer is a view of it
//! with an id derived from the owner (kind byte and number), so there is nothing to keep in step.
//! A container with no throughput of its own in a database without shared throughput shows the
//! service's default offer (manual, [`DEFAULT_OFFER_RU_PER_SEC`]) without drawing on it: this
//! module does not rate-limit (`docs/compatibility.md`, "Default offer", says why).

use crate::engine::Engine;
use crate::error::{resource_not_found, EngineResult};
use crate::records::{load_container, load_database};
use crate::rids;
use crate::throughput::Throughput;
use base64::Engine as _;
use serde_json::{json, Value};

const DATABASE_OFFER: u8 = b'd';
const CONTAINER_OFFER: u8 = b'c';

/// The manual throughput the service gives a container created without throughput in a
/// database without shared throughput.
pub const DEFAULT_OFFER_RU_PER_SEC: u32 = 400;

fn offer_id(kind: u8, number: u32) -> String {
    let mut bytes = vec![kind];
    bytes.extend_from_slice(&number.to_le_bytes());
    bytes.push(0);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

pub(crate) fn parse_offer_id(id: &str) -> Option<(u8, u32)> {
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
                // The service's default offer, shown (not enforced) where nothing is provisioned.
                let shown = match (&found.throughput, &record.throughput) {
                    (Some(own), _) => Some(*own),
                    (None, None) => Some(Throughput::Manual(DEFAULT_OFFER_RU_PER_SEC)),
                    (None, Some(_)) => None,
                };
                if let Some(throughput) = &shown {
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

    pub(crate) fn owner_ids(
        &self,
        kind: u8,
        number: u32,
    ) -> EngineResult<(String, Option<String>)> {
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
