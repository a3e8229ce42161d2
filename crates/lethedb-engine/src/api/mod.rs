//! Where scans run: on tokio's blocking pool, at most `SCANS_CONCURRENT_MAX` (limits.rs) at a time, so the
//! async workers that serve requests only await them.
//!
//! A scan (a query, a read feed, a storage-usage walk, a catalog listing, the sweeper's search
//! for expired entries) reads storage synchronously for as long as its range is long; on the
//! two workers of a 2-core machine one inline scan would stall half the server. Point reads
//! (`read_item`, `read_container`) stay inline on the caller's thread: they cost one or two
//! lookups, less than handing them to another thread. This module decides only where and how
//! many scans run, and is the async front door of every public scan; what each scan reads is
//! in the module that owns it (its `*_blocking` function).

use crate::catalog::kinds::{ResourceKind, ResourceParent};
use crate::container::{Container, Usage};
use crate::engine::Engine;
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::items::Feed;
use crate::partitions::partition_key::PartitionKeyValue;
use crate::partitions::ranges::RangeFilter;
use crate::poison::panic_message;
use crate::query::{QueryOutcome, QueryPage, QueryRequest};
use crate::ttl::expiry::TtlOverview;
use lethedb_query::ClientPlan;
use serde_json::Value;
use std::sync::Arc;

impl Engine {
    /// Runs a synchronous scan on the blocking pool under the scan semaphore.
    pub(crate) async fn run_scan<T, F>(&self, scan: F) -> EngineResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Engine) -> EngineResult<T> + Send + 'static,
    {
        self.run_blocking(&self.inner.scans, "scan", scan).await
    }

    /// Runs synchronous work on the blocking pool under one of `permits` (the scans', the
    /// scripts'). It only reads or goes through the writer, so a panic fails this request and
    /// poisons nothing.
    pub(crate) async fn run_blocking<T, F>(
        &self,
        permits: &Arc<tokio::sync::Semaphore>,
        what: &'static str,
        work: F,
    ) -> EngineResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Engine) -> EngineResult<T> + Send + 'static,
    {
        let permit = Arc::clone(permits).acquire_owned().await.map_err(|_| {
            EngineError::with_message(ErrorCode::WriterStopped, "the engine is shutting down")
        })?;
        let engine = self.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            work(&engine)
        })
        .await
        .map_err(|error| {
            let reason = if error.is_panic() {
                panic_message(&*error.into_panic())
            } else {
                error.to_string()
            };
            tracing::error!(%reason, "a {what} stopped");
            EngineError::with_message(ErrorCode::Internal, format!("a {what} stopped: {reason}"))
        })?
    }

    /// Runs one page of a query over a container's items, or answers with the plan when the
    /// SDK's client pipeline must run it (see `query.rs`). The text is prepared on the scan
    /// thread, user-defined functions included, so no catalog read runs on a request worker.
    pub async fn query_items(
        &self,
        container: &Arc<Container>,
        request: &QueryRequest,
    ) -> EngineResult<QueryOutcome> {
        let (container, request) = (Arc::clone(container), request.clone());
        self.run_scan(move |engine| engine.query_items_blocking(&container, &request))
            .await
    }

    /// The service's plan of a query over a container (`lethedb_query::ClientPlan`), prepared
    /// on the scan thread like the query itself.
    pub async fn query_plan(
        &self,
        container: &Arc<Container>,
        request: &QueryRequest,
    ) -> EngineResult<ClientPlan> {
        let (container, request) = (Arc::clone(container), request.clone());
        self.run_scan(move |engine| engine.query_plan_blocking(&container, &request))
            .await
    }

    /// Runs one page of a query over a list of resources (databases, containers, offers, ...).
    pub async fn query_resources(
        &self,
        resources: &[Value],
        request: &QueryRequest,
    ) -> EngineResult<QueryPage> {
        let (resources, request) = (resources.to_vec(), request.clone());
        self.run_scan(move |engine| engine.query_resources_blocking(&resources, &request))
            .await
    }

    /// One page of a container's (or one partition's) items in key order. The continuation is
    /// the last key returned, so a feed resumes exactly after it even if items changed meanwhile.
    pub async fn read_feed(
        &self,
        container: &Arc<Container>,
        partition_key: Option<PartitionKeyValue>,
        filter: RangeFilter,
        page_items_max: usize,
        continuation: Option<&str>,
    ) -> EngineResult<Feed> {
        let container = Arc::clone(container);
        let continuation = continuation.map(str::to_string);
        self.run_scan(move |engine| {
            engine.read_feed_blocking(
                &container,
                partition_key,
                filter,
                page_items_max,
                continuation.as_deref(),
            )
        })
        .await
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

    /// A container's time-to-live figures (the "expiring soon" histogram, the unswept
    /// backlog, the sweeper's rate) and, with `proposed`, what that `defaultTtl` would expire.
    /// Counts walk the expiry index only, each capped (`expiry::TTL_COUNT_ENTRIES_MAX`).
    pub async fn ttl_overview(
        &self,
        container: &Arc<Container>,
        proposed: Option<Option<i64>>,
    ) -> EngineResult<TtlOverview> {
        let container = Arc::clone(container);
        self.run_scan(move |engine| engine.ttl_overview_blocking(&container, proposed))
            .await
    }

    /// Every database, as clients see them.
    pub async fn list_databases(&self) -> EngineResult<Vec<Value>> {
        self.run_scan(super::engine::Engine::list_databases_blocking)
            .await
    }

    /// Every container of a database, as clients see them; NotFound without the database.
    pub async fn list_containers(&self, database_id: &str) -> EngineResult<Vec<Value>> {
        let database_id = database_id.to_string();
        self.run_scan(move |engine| engine.list_containers_blocking(&database_id))
            .await
    }

    /// Every child resource of one kind under `parent`, as clients see them, for read feeds and
    /// queries (page them with [`Engine::query_resources`]). A parent without children has an
    /// empty list; a parent that does not exist is NotFound.
    pub async fn list_resources(
        &self,
        kind: ResourceKind,
        parent: &ResourceParent,
    ) -> EngineResult<Vec<Value>> {
        let parent = parent.clone();
        self.run_scan(move |engine| engine.list_resources_blocking(kind, &parent))
            .await
    }

    /// Every offer (the throughput of each database and container that has its own).
    pub async fn list_offers(&self) -> EngineResult<Vec<Value>> {
        self.run_scan(super::engine::Engine::list_offers_blocking)
            .await
    }

    /// The id of the database whose `_rid` is `rid`, if any.
    pub async fn database_id_by_rid(&self, rid: &str) -> EngineResult<Option<String>> {
        let rid = rid.to_string();
        self.run_scan(move |engine| engine.database_id_by_rid_blocking(&rid))
            .await
    }

    /// The id of the container in `database_id` whose `_rid` is `rid`, if any.
    pub async fn container_id_by_rid(
        &self,
        database_id: &str,
        rid: &str,
    ) -> EngineResult<Option<String>> {
        let (database_id, rid) = (database_id.to_string(), rid.to_string());
        self.run_scan(move |engine| engine.container_id_by_rid_blocking(&database_id, &rid))
            .await
    }

    /// The id of the child resource of `kind` under `parent` whose `_rid` is `rid`, if any.
    pub async fn resource_id_by_rid(
        &self,
        kind: ResourceKind,
        parent: &ResourceParent,
        rid: &str,
    ) -> EngineResult<Option<String>> {
        let (parent, rid) = (parent.clone(), rid.to_string());
        self.run_scan(move |engine| engine.resource_id_by_rid_blocking(kind, &parent, &rid))
            .await
    }
}
