//! Doors for offers (throughput as a resource): read and list (a walk of the catalog, under
//! the scan bound; an offer is found among all of them, as its id names no key), replace (a
//! writer job).

use crate::engine::Engine;
use crate::error::{
    container_not_found, corrupted, database_not_found, resource_not_found, EngineError,
    EngineResult, ErrorCode,
};
use crate::keys;
use crate::partitions::ranges::ranges_for_throughput;
use crate::records::{load_container, store_container, store_database, DatabaseRecord};
use crate::throughput::buckets::{buckets_json, parse_buckets};
use crate::throughput::offers::parse_offer_id;
use crate::throughput::Throughput;
use lethedb_storage::Table;
use serde_json::Value;

impl Engine {
    /// The offer whose id is `id` (ids compare without case, as the SDKs send them), found
    /// among every offer: a catalog walk, under the scan bound.
    pub async fn read_offer(&self, id: &str) -> EngineResult<Value> {
        self.list_offers()
            .await?
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
        let current = self.read_offer(id).await?;
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
        self.read_offer(&exact_id).await
    }

    /// A container's throughput buckets, as the service's throughput settings spell them.
    pub fn throughput_buckets(&self, database_id: &str, container_id: &str) -> EngineResult<Value> {
        let container = self.read_container(database_id, container_id)?;
        Ok(buckets_json(&container.throughput_buckets))
    }

    /// Sets a container's throughput buckets (`throughput/buckets.rs` says what is valid; an
    /// empty list removes them), as the service's control plane does.
    pub async fn set_throughput_buckets(
        &self,
        database_id: &str,
        container_id: &str,
        body: &Value,
    ) -> EngineResult<Value> {
        let buckets = parse_buckets(body)?;
        let (database_id, container_id) = (database_id.to_string(), container_id.to_string());
        let answer = buckets_json(&buckets);
        self.inner
            .writer
            .write(move |context| {
                let mut container = load_container(context.reader(), &database_id, &container_id)?
                    .ok_or_else(container_not_found)?;
                container.throughput_buckets = buckets;
                store_container(context, &container)
            })
            .await?;
        Ok(answer)
    }

    /// Every offer (the throughput of each database and container that has its own).
    pub async fn list_offers(&self) -> EngineResult<Vec<Value>> {
        self.run_scan(Engine::list_offers_blocking).await
    }
}
