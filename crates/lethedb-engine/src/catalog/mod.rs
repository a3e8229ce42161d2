//! Databases and containers: creating, reading, listing, replacing and deleting them.
//!
//! Both are small JSON records in the catalog table (`records.rs` has their stored forms). A
//! container's record also holds its number (the prefix of its item keys) and its [`TtlState`].
//! Deleting a database or a container deletes everything beneath it in the same transaction:
//! items (through items.rs, which owns the per-item tables) and child resources (through
//! `resource.rs`, the generic catalog of child resources). Listing and finding by `_rid` are
//! shared with it (`shared.rs`). This module does not touch items one by one.

pub(crate) mod encryption_policy;
pub(crate) mod index_paths;
pub(crate) mod indexing_policy;
pub(crate) mod kinds;
pub(crate) mod resource;
pub(crate) mod script_body;
pub(crate) mod scripts;
pub(crate) mod search_policy;
pub(crate) mod shared;
pub(crate) mod unique_key_policy;
pub(crate) mod usage;

use crate::container::Container;
use crate::engine::Engine;
use crate::error::{database_not_found, EngineResult};
use crate::keys;
use crate::records::{load_database, ContainerRecord, DatabaseRecord};
use serde_json::Value;
use shared::list_records;
use std::sync::Arc;

impl Engine {
    // ----- databases -----

    pub(crate) fn list_databases_blocking(&self) -> EngineResult<Vec<Value>> {
        let reader = self.inner.store.read()?;
        list_records(
            &*reader,
            keys::DATABASE_PREFIX,
            "database",
            |record: DatabaseRecord| record.resource,
        )
    }

    // ----- containers -----

    /// Every container, listed again only after a catalog change (the generation is read before
    /// the catalog, so a change during the listing makes it stale at once): for the sweeper and
    /// the change-feed maintenance, which turn several times a second.
    pub(crate) async fn listed_containers(&self) -> EngineResult<Vec<Arc<Container>>> {
        let cache = &self.inner.containers;
        if self.inner.shared {
            // Another process may have changed the catalog: a newer epoch drops the listing.
            let epoch = self.inner.store.read()?.catalog_epoch();
            cache.serves(epoch);
        }
        if let Some(containers) = cache.listing() {
            return Ok(containers);
        }
        let generation = cache.generation.load(std::sync::atomic::Ordering::SeqCst);
        // Parsing the catalog reads storage: a scan like any other.
        let containers = self.run_scan(Engine::all_containers_blocking).await?;
        cache.keep_listing(generation, containers.clone());
        Ok(containers)
    }

    pub(crate) fn list_containers_blocking(&self, database_id: &str) -> EngineResult<Vec<Value>> {
        let reader = self.inner.store.read()?;
        if load_database(&*reader, database_id)?.is_none() {
            return Err(database_not_found());
        }
        list_records(
            &*reader,
            &keys::container_prefix(database_id),
            "container",
            |record: ContainerRecord| record.resource,
        )
    }
}
