//! Doors for queries: a page of a query over a container's items (prepared once, on the scan
//! pool: the page, or the plan the SDK's client pipeline must run), the service's query plan,
//! queries over catalog listings, and the check of a container's index against its items. All
//! of them run under the scan bound.

use crate::container::Container;
use crate::engine::Engine;
use crate::error::EngineResult;
use crate::index::check::{check, IndexCheck};
use crate::query::{QueryOutcome, QueryPage, QueryRequest};
use lethedb_query::ClientPlan;
use serde_json::Value;
use std::sync::Arc;

impl Engine {
    /// Runs one page of a query over a container's items, or answers with the plan when the
    /// SDK's client pipeline must run it (see `query/mod.rs`). The text is prepared on the scan
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
}

impl Engine {
    /// Checks a container's index against its items (a scan under the bound): what a rebuild
    /// from the stored versions would hold, against what the index holds.
    pub async fn check_index(&self, container: &Arc<Container>) -> EngineResult<IndexCheck> {
        let container = Arc::clone(container);
        self.run_scan(move |engine| {
            let reader = engine.inner.store.read()?;
            check(&*reader, &container)
        })
        .await
    }
}
