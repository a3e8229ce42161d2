//! Query execution: one preparation of the text per page, one decision of what the page is
//! (a page of results, or the plan of a query that the SDK's client pipeline must run across
//! partitions), and the scan that feeds documents from storage into the pure query crate.
//!
//! The engine decides which keys to read (one partition when the request or the query pins the
//! partition key, otherwise the whole container; see `query/scan.rs`), what the indexing policy
//! makes of the ORDER BY (`query/ordering.rs`), hides expired items, and stops reading as soon
//! as the query crate says the page is full. What a query means (filters,
//! projections, ordering, aggregates, paging state) is the query crate's business; this module
//! does the I/O it must not, and measures the page when asked (`query/metrics.rs`).

pub(crate) mod covered;
pub(crate) mod document_order;
pub(crate) mod entry_order;
pub(crate) mod index_metrics;
pub(crate) mod metrics;
pub(crate) mod order_walk;
pub(crate) mod ordering;
pub(crate) mod page;
pub(crate) mod scan;
pub(crate) mod seek;
pub(crate) mod text_rank;
pub(crate) mod vector_order;

use crate::clock::Stopwatch;
use crate::container::Container;
use crate::engine::Engine;
use crate::error::{invalid_continuation, EngineError, EngineResult, ErrorCode};
use crate::keys;
use crate::limits::{PAGE_ITEMS_DEFAULT, PAGE_ITEMS_MAX};
use crate::partitions::epk::prefix_range;
use crate::partitions::partition_key::PartitionKeyValue;
use crate::partitions::ranges::RangeFilter;
use crate::query::metrics::{measure_output, QueryMetrics};
use crate::query::page::{PageInputs, RanPage};
use crate::query::scan::{parts_from_values, ScanScope};
use crate::throughput::request_units::{self, QueryWork};
use lethedb_query::{ClientPlan, Prepared};
use lethedb_storage::KeyRange;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// A query as the wire layer received it.
#[derive(Clone, Debug, Default)]
pub struct QueryRequest {
    pub text: String,
    pub parameters: Vec<(String, Value)>,
    /// The `x-ms-documentdb-partitionkey` header, if sent (a prefix for hierarchical keys).
    pub partition_key: Option<PartitionKeyValue>,
    /// `x-ms-max-item-count`; `None` or a negative count means the default page size.
    pub page_items_max: Option<usize>,
    pub continuation: Option<String>,
    /// `x-ms-documentdb-query-enablecrosspartition`.
    pub enable_cross_partition: bool,
    /// `x-ms-start-epk` and `x-ms-end-epk`: a range of effective partition keys the query is
    /// scoped to (clients send this for prefixes of hierarchical keys and feed ranges).
    pub effective_range: Option<(String, String)>,
    /// `x-ms-documentdb-partitionkeyrangeid`: the one physical partition the query runs on.
    pub range_id: Option<String>,
    /// `x-ms-documentdb-populatequerymetrics`: measure the page ([`QueryPage::metrics`]).
    pub populate_query_metrics: bool,
    /// `x-ms-cosmos-populateindexmetrics`: report the indexes the query would use
    /// ([`QueryPage::index_utilization`]).
    pub populate_index_metrics: bool,
}

/// One page of results.
#[derive(Debug)]
pub struct QueryPage {
    pub items: Vec<Value>,
    pub continuation: Option<String>,
    /// Documents loaded and handed to the evaluator.
    pub documents_scanned: u64,
    /// Ranges of the index the page read (0: it scanned its scope).
    pub index_lookups: u64,
    /// What the page costs (`x-ms-request-charge`), from what its plan read and returned.
    pub request_charge: f64,
    pub lsn: u64,
    /// What the page cost, when the request asked (`populate_query_metrics`).
    pub metrics: Option<QueryMetrics>,
    /// The service's index utilization report, when the request asked
    /// (`populate_index_metrics`).
    pub index_utilization: Option<Value>,
}

/// What a query over a container's items came to.
#[derive(Debug)]
pub enum QueryOutcome {
    Page(QueryPage),
    /// The query fans out across partitions and needs the SDK's client pipeline (ORDER BY,
    /// aggregates, DISTINCT, TOP, OFFSET...): the service answers with the plan, and the SDK
    /// runs the plan's rewritten query on each range and combines the answers.
    NeedsClientPipeline(ClientPipeline),
}

/// The plan of a whole-container query the SDK's client pipeline must run.
#[derive(Debug)]
pub struct ClientPipeline {
    pub plan: ClientPlan,
    /// Whether the request may fan out: it consented (`enable_cross_partition`), or the
    /// container has one range, where no consent is needed. The service refuses a query that
    /// may fan out as "not servable by the gateway" and one that may not as a query across
    /// partitions without consent; both carry the plan.
    pub fan_out_allowed: bool,
}

fn page_size(request: &QueryRequest) -> usize {
    request
        .page_items_max
        .unwrap_or(PAGE_ITEMS_DEFAULT)
        .clamp(1, PAGE_ITEMS_MAX)
}

/// The service's plan of a prepared query over `container`: what the SDKs run on each partition
/// key range and what their client pipelines do with the answers (see
/// `lethedb_query::ClientPlan`). A WHERE clause that pins the whole partition key becomes the
/// point range of its effective partition key (`epk::prefix_range`).
fn client_plan(prepared: &Prepared, container: &Container) -> EngineResult<ClientPlan> {
    let definition = &container.partition_key;
    let paths = if definition.is_system_key() {
        &[][..]
    } else {
        &definition.paths[..]
    };
    let effective_range =
        |values: &[Value]| prefix_range(definition, &parts_from_values(values.to_vec()));
    Ok(prepared.client_plan(paths, &effective_range)?)
}

/// The client pipeline a query needs, when it is sent to the whole container (no partition
/// key, partition key range or range of effective keys) of a partitioned container and needs
/// more than the ranges' pages concatenated: it fans out across partitions, or it pins one
/// partition key in its WHERE clause but consents to fan out. The service's gateway does not
/// run the latter whole either: the SDK gets the plan and runs it on the one range (the Python
/// SDK's aggregate test expects its own refusal of a pinned non-VALUE `AVG` so). Everything
/// else (and every request the SDKs make per range) runs whole here.
fn client_pipeline(
    prepared: &Prepared,
    container: &Container,
    request: &QueryRequest,
) -> EngineResult<Option<ClientPipeline>> {
    if request.partition_key.is_some()
        || request.effective_range.is_some()
        || request.range_id.is_some()
        || container.partition_key.is_system_key()
        || container.partition_key.paths.is_empty()
    {
        return Ok(None);
    }
    let plan = client_plan(prepared, container)?;
    let fan_out_allowed = may_fan_out(container, request);
    if !plan.needs_client_pipeline() || !(plan.fans_out() || fan_out_allowed) {
        return Ok(None);
    }
    Ok(Some(ClientPipeline {
        plan,
        fan_out_allowed,
    }))
}

/// Whether `request` may read across partitions: it consents
/// (`x-ms-documentdb-query-enablecrosspartition`), or the container has no partition key. As
/// on the service (and the emulator), one range is no exception.
fn may_fan_out(container: &Container, request: &QueryRequest) -> bool {
    request.enable_cross_partition || container.partition_key.is_system_key()
}

/// The keys a page of `request` reads: the partition key it sends or its WHERE clause pins, and
/// the range or EPK bounds it names. A query without any of these needs the
/// client's consent (`x-ms-documentdb-query-enablecrosspartition`), as in the service.
fn scan_scope(
    prepared: &Prepared,
    container: &Container,
    request: &QueryRequest,
) -> EngineResult<ScanScope> {
    let definition = &container.partition_key;
    let scope = match &request.partition_key {
        Some(sent) if sent.0.len() > definition.paths.len() => {
            return Err(EngineError::new(ErrorCode::PartitionKeyMismatch))
        }
        Some(sent) => Some(sent.clone()),
        None => prepared
            .partition_key_equality(&definition.paths)
            .map(parts_from_values),
    };
    let filter = container.range_filter(
        request.range_id.as_deref(),
        request.effective_range.as_ref(),
    )?;
    if scope.is_none()
        && request.range_id.is_none()
        && request.effective_range.is_none()
        && !may_fan_out(container, request)
    {
        return Err(EngineError::new(ErrorCode::CrossPartitionQueryDisabled));
    }
    Ok(scope_of(container, scope, filter))
}

/// The keys a page reads once its partition key (`scope`) and EPK `filter` are known: a full
/// key's partition; else the span of the filter, narrowed to a hierarchical prefix's EPKs.
fn scope_of(
    container: &Container,
    scope: Option<PartitionKeyValue>,
    filter: RangeFilter,
) -> ScanScope {
    let whole = keys::container_items_prefix(container.key_number());
    match scope {
        Some(value) if value.0.len() == container.partition_key.paths.len() => {
            let prefix = container.partition_prefix(&value);
            ScanScope {
                filter,
                span: KeyRange::prefix(&prefix),
                outer: prefix,
                partial_key: None,
                partition: Some(value),
            }
        }
        partial_key => {
            let narrowed = match &partial_key {
                Some(prefix) => {
                    let (start, end) = prefix_range(&container.partition_key, prefix);
                    filter.intersect(&RangeFilter { start, end })
                }
                None => filter.clone(),
            };
            ScanScope {
                filter,
                span: container.items_span(&narrowed),
                outer: whole,
                partial_key,
                partition: None,
            }
        }
    }
}

impl Engine {
    /// Runs one page of a query over a container's items (synchronously; see `api/mod.rs`): the
    /// text is prepared once, here on the scan thread, and that one preparation decides whether
    /// the client pipeline must run it, plans and runs the page (`query/page.rs`), and reports
    /// the index utilization.
    pub(crate) fn query_items_blocking(
        &self,
        container: &Arc<Container>,
        request: &QueryRequest,
    ) -> EngineResult<QueryOutcome> {
        let total = Stopwatch::start();
        // One snapshot, and its time, for the whole page: expiry and the query's own clock
        // functions agree with every other process on a shared store.
        let reader = self.inner.store.read()?;
        let now_ms = self.now_in(&*reader);
        let udfs = self.query_udfs(container, &request.text)?;
        let compiling = Stopwatch::start();
        let prepared = lethedb_query::prepare_with_computed(
            &request.text,
            &request.parameters,
            now_ms,
            &container.computed,
            &container.vectors,
            udfs,
        )?
        .with_full_text(Arc::clone(&container.full_text));
        let compile = compiling.elapsed();
        if let Some(pipeline) = client_pipeline(&prepared, container, request)? {
            return Ok(QueryOutcome::NeedsClientPipeline(pipeline));
        }
        let scope = scan_scope(&prepared, container, request)?;
        // The index is asked once the request is known to reach the partitions, as the
        // service's backend is asked after its gateway's checks.
        let rules = ordering::ordering_rules(&prepared, container)?;
        let inputs = PageInputs {
            reader: &*reader,
            rules,
            plans: &self.inner.plans,
            vectors: &self.inner.vectors,
            container,
            cache: &self.inner.documents,
            prepared: &prepared,
            scope: &scope,
            text: &request.text,
            continuation: request.continuation.as_deref(),
            page_items_max: page_size(request),
            measure: request.populate_query_metrics,
            now_ms,
        };
        let ran = inputs.run(self.inner.query_verify)?;
        let lsn = self.note_shard_lsns(&*reader, container)?;
        let index_utilization = request
            .populate_index_metrics
            .then(|| index_metrics::report(&prepared, container));
        Ok(QueryOutcome::Page(page_of(
            ran,
            lsn,
            index_utilization,
            request,
            (total, compile),
        )))
    }

    /// The service's plan of a query over `container` (synchronously, for the query-plan
    /// endpoint; see `api/queries.rs`).
    pub(crate) fn query_plan_blocking(
        &self,
        container: &Container,
        request: &QueryRequest,
    ) -> EngineResult<ClientPlan> {
        let udfs = self.query_udfs(container, &request.text)?;
        let prepared = lethedb_query::prepare_with_computed(
            &request.text,
            &request.parameters,
            self.now_ms(),
            &container.computed,
            &container.vectors,
            udfs,
        )?
        .with_full_text(Arc::clone(&container.full_text));
        client_plan(&prepared, container)
    }

    /// Runs one page of a query over a list of resources (databases or containers).
    pub(crate) fn query_resources_blocking(
        &self,
        resources: &[Value],
        request: &QueryRequest,
    ) -> EngineResult<QueryPage> {
        let prepared = lethedb_query::prepare(&request.text, &request.parameters, self.now_ms())?;
        let mut run = prepared.start_page(request.continuation.as_deref(), page_size(request))?;
        let start = match run.resume_after() {
            None => 0,
            Some(after) => {
                let bytes: [u8; 8] = after.try_into().map_err(|_| invalid_continuation())?;
                u64::from_be_bytes(bytes).saturating_add(1)
            }
        };
        let mut page_full = false;
        for (index, resource) in resources.iter().enumerate().skip(start as usize) {
            if run
                .push(&(index as u64).to_be_bytes(), resource)?
                .is_break()
            {
                page_full = true;
                break;
            }
        }
        let page = run.finish(!page_full)?;
        let request_charge = request_units::query(page.documents_scanned, page.items.len() as u64);
        Ok(QueryPage {
            items: page.items,
            continuation: page.continuation,
            documents_scanned: page.documents_scanned,
            index_lookups: 0,
            request_charge,
            lsn: 0,
            metrics: None,
            index_utilization: None,
        })
    }
}

/// The engine's page of a page the query crate made (`ran`), charged, and measured when the
/// request asked; `(total, compile)` time the whole page and its preparation.
fn page_of(
    ran: RanPage,
    lsn: u64,
    index_utilization: Option<Value>,
    request: &QueryRequest,
    (total, compile): (Stopwatch, Duration),
) -> QueryPage {
    let page = ran.page;
    let request_charge = request_units::query_page(&QueryWork {
        index_lookups: ran.index.lookups,
        index_entries: ran.index.entries,
        documents_loaded: page.documents_scanned,
        retrieved_bytes: ran.tally.retrieved_bytes,
        results: page.items.len() as u64,
    });
    let metrics = request.populate_query_metrics.then(|| {
        let (output_document_bytes, output_write) = measure_output(&page.items);
        QueryMetrics {
            compile,
            index_lookup: ran.index.time,
            document_load: ran.tally.scan.saturating_sub(ran.tally.execution),
            runtime_execution: ran.tally.execution + ran.finish,
            output_write,
            documents_retrieved: page.documents_scanned,
            retrieved_document_bytes: ran.tally.retrieved_bytes,
            documents_matched: ran.tally.documents_matched,
            documents_output: page.items.len() as u64,
            output_document_bytes,
            // Read last, so that it covers every phase above.
            total: total.elapsed(),
        }
    });
    QueryPage {
        items: page.items,
        continuation: page.continuation,
        documents_scanned: page.documents_scanned,
        index_lookups: ran.index.lookups,
        request_charge,
        lsn,
        metrics,
        index_utilization,
    }
}
