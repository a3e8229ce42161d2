//! Items: create, upsert, read, replace, patch and delete one; read a container page by page;
//! run a query and answer the SDKs' query-plan request.
//!
//! Item bytes go from the engine to the response as they were stored, never parsed here. The
//! rules (ids, partition keys, TTL, preconditions) are the engine's.

use super::context::Context;
use super::scripts::{named_triggers, triggered_write};
use crate::error::{ApiError, ApiResult, Code};
use crate::request::{header, parse_json, query_request, INTENDED_CONTAINER_HEADER};
use crate::respond::{Reply, PARTITION_KEY_RANGE_ID};
use axum::http::StatusCode;
use base64::Engine as _;
use lethedb_engine::{
    request_units, ClientPipeline, Container, ErrorCode, ItemOutcome, PartitionKeyValue,
    QueryMetrics, QueryOutcome, StoredItem, TriggeredOperation, WriteMode,
};
use std::sync::Arc;
use std::time::Duration;

/// The reply to a create, upsert, replace or patch, with the engine's charge (the documents
/// written and the index terms changed), in the range of the key the engine wrote the item
/// under.
async fn written_reply(context: &Context<'_>, status: StatusCode, outcome: &ItemOutcome) -> Reply {
    let charge = outcome.request_units;
    let minimal = context.head.prefers_minimal;
    let container = &outcome.item.container;
    let range = item_range(container, Some(&outcome.partition_key));
    let written = outcome.item.record.lsn;
    let lsn = context
        .range_lsn(container, range, Some(written), written)
        .await;
    item_reply(
        context,
        status,
        &outcome.item,
        (lsn, range),
        minimal,
        charge,
    )
}

/// An item's reply, scoped to the container's session at `lsn` in partition key range `range`.
fn item_reply(
    context: &Context<'_>,
    status: StatusCode,
    item: &StoredItem,
    (lsn, range): (u64, u32),
    minimal: bool,
    request_units: f64,
) -> Reply {
    let body = if minimal {
        Vec::new()
    } else {
        item.to_json_bytes()
    };
    Reply::json(status, body)
        .named(axum::http::header::ETAG, item.etag())
        .charge(request_units)
        .range_scoped(&item.container, context.path, lsn, range)
        .named(PARTITION_KEY_RANGE_ID, range.to_string())
}

/// The partition key range that owns the item a point operation addresses: the range of the key
/// the engine addressed it by, from the key written or the one the request head holds (none sent
/// stands for the system key's value). Nothing is parsed; range 0 when no key applies.
fn item_range(container: &Container, key: Option<&PartitionKeyValue>) -> u32 {
    if let [only] = container.ranges.ranges.as_slice() {
        return only.id;
    }
    container
        .partition_key
        .point_key(key.cloned())
        .map_or(0, |key| container.range_of(&key))
}

/// `POST` to a container's items without a query or batch flag: a create, or an upsert when
/// `x-ms-documentdb-is-upsert` says so.
pub async fn create(
    context: &Context<'_>,
    container: &Arc<Container>,
    mode: WriteMode,
) -> ApiResult<Reply> {
    if let Some(triggers) = named_triggers(context) {
        let body = parse_json(context.body)?;
        let operation = match mode {
            WriteMode::Upsert => TriggeredOperation::Upsert(body),
            _ => TriggeredOperation::Create(body),
        };
        return triggered_write(context, container, operation, triggers).await;
    }
    let outcome = context
        .state
        .engine
        .write_item(
            container,
            mode,
            context.head.partition_key()?.cloned(),
            parse_json(context.body)?,
            context.head.if_match.map(str::to_string),
        )
        .await?;
    let status = if outcome.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(written_reply(context, status, &outcome).await)
}

pub async fn read(context: &Context<'_>, container: &Arc<Container>) -> ApiResult<Reply> {
    let key = context.head.partition_key()?;
    let read = context
        .state
        .engine
        .read_item_with_lsn(container, key.cloned(), context.path.id(2))
        .await;
    let (item, lsn) = match read {
        Ok(found) => found,
        Err(error) if error.code == ErrorCode::ItemNotFound => {
            return Err(not_found_with_session(context, container, error).await);
        }
        Err(error) => return Err(error.into()),
    };
    // The definition the read judged the item by: on a shared store the one in its snapshot,
    // which may be newer than the one the request was admitted with.
    let container = &item.container;
    if let Some(intended) = header(context.headers, INTENDED_CONTAINER_HEADER) {
        if !intended.is_empty() && container.rid() != intended {
            return Err(ApiError::from_code(Code::CollectionRidMismatch));
        }
    }
    let range = item_range(container, key);
    let lsn = context.range_lsn(container, range, Some(lsn), lsn).await;
    let etag = item.etag();
    if context.head.if_none_match == Some(etag.as_str()) {
        return Ok(Reply::empty(StatusCode::NOT_MODIFIED)
            .header("etag", etag)
            .range_scoped(container, context.path, lsn, range));
    }
    let charge = request_units::read(item.record.body.len());
    // A read always returns the document, whatever `Prefer` says, and the LSN of the write
    // that made this version (`x-ms-item-lsn`, beside the container's `lsn`).
    let item_lsn = lethedb_engine::lsn_sequence(item.record.lsn).to_string();
    Ok(
        item_reply(context, StatusCode::OK, &item, (lsn, range), false, charge)
            .header("x-ms-item-lsn", item_lsn),
    )
}

/// A point read of an item that is not there (or has expired) answers 404 with the session
/// the read saw, as the service does: the range's session token, `lsn` and the range id, so a
/// session-consistent client keeps its token moving. Not the owner headers
/// (`x-ms-content-path`, `x-ms-alt-content-path`) of a found item's answer: the JavaScript SDK
/// keeps a 404's token only when they name its container, and its own session test
/// ("preserves tokens") shows the service's 404 from another range adding nothing to the
/// container's token.
async fn not_found_with_session(
    context: &Context<'_>,
    container: &Arc<Container>,
    error: lethedb_engine::EngineError,
) -> ApiError {
    let partition_key = context.head.partition_key().ok().flatten();
    let Ok(lsn) = context
        .state
        .engine
        .container_lsn_awaiting(container, partition_key)
        .await
    else {
        return error.into();
    };
    let range = item_range(container, context.head.partition_key().ok().flatten());
    // Without a partition key the LSN read is the container's version, no shard's.
    let seen = partition_key.is_some().then_some(lsn);
    let lsn = context.range_lsn(container, range, seen, lsn).await;
    let headers = Reply::empty(StatusCode::NOT_FOUND)
        .range_scoped(container, context.path, lsn, range)
        .named(PARTITION_KEY_RANGE_ID, range.to_string())
        .into_headers()
        .into_iter()
        .filter(|(name, _)| name != "x-ms-content-path" && name != "x-ms-alt-content-path")
        .collect();
    ApiError::from(error).with_headers(headers)
}

pub async fn replace(context: &Context<'_>, container: &Arc<Container>) -> ApiResult<Reply> {
    if let Some(triggers) = named_triggers(context) {
        let operation =
            TriggeredOperation::Replace(context.path.id(2).to_string(), parse_json(context.body)?);
        return triggered_write(context, container, operation, triggers).await;
    }
    let outcome = context
        .state
        .engine
        .write_item(
            container,
            WriteMode::Replace(context.path.id(2).to_string()),
            context.head.partition_key()?.cloned(),
            parse_json(context.body)?,
            context.head.if_match.map(str::to_string),
        )
        .await?;
    Ok(written_reply(context, StatusCode::OK, &outcome).await)
}

pub async fn patch(context: &Context<'_>, container: &Arc<Container>) -> ApiResult<Reply> {
    let outcome = context
        .state
        .engine
        .patch_item(
            container,
            context.head.partition_key()?.cloned(),
            context.path.id(2),
            parse_json(context.body)?,
            context.head.if_match.map(str::to_string),
        )
        .await?;
    Ok(written_reply(context, StatusCode::OK, &outcome).await)
}

pub async fn delete(context: &Context<'_>, container: &Arc<Container>) -> ApiResult<Reply> {
    if let Some(triggers) = named_triggers(context) {
        let operation = TriggeredOperation::Delete(context.path.id(2).to_string());
        return triggered_write(context, container, operation, triggers).await;
    }
    let partition_key = context.head.partition_key()?;
    let deleted = context
        .state
        .engine
        .delete_item(
            container,
            partition_key.cloned(),
            context.path.id(2),
            context.head.if_match.map(str::to_string),
        )
        .await?;
    let range = item_range(container, partition_key);
    let lsn = context
        .range_lsn(container, range, Some(deleted.lsn), deleted.lsn)
        .await;
    Ok(Reply::empty(StatusCode::NO_CONTENT)
        .charge(deleted.request_units)
        .range_scoped(container, context.path, lsn, range))
}

/// One page of a container's items, in the engine's order; each item's stored bytes are
/// copied into the body unparsed.
pub async fn read_feed(context: &Context<'_>, container: &Arc<Container>) -> ApiResult<Reply> {
    let feed = context
        .state
        .engine
        .read_feed(
            container,
            context.head.partition_key()?.cloned(),
            container.range_filter(context.head.range_id, context.head.effective_range.as_ref())?,
            context
                .head
                .page_items_max()?
                .unwrap_or(lethedb_engine::PAGE_ITEMS_DEFAULT),
            context.head.continuation,
        )
        .await?;
    let bytes: usize = feed.items.iter().map(|i| i.record.body.len()).sum();
    let lsn = context
        .scoped_lsn(container, context.head.range_id, feed.lsn)
        .await;
    let documents = feed.items.iter().map(StoredItem::to_json_bytes);
    Ok(Reply::feed(
        container.rid(),
        "Documents",
        documents,
        feed.continuation,
        request_units::read(bytes),
    )
    .scoped_to(container, context.path, lsn, context.head.range_id))
}

pub async fn query(context: &Context<'_>, container: &Arc<Container>) -> ApiResult<Reply> {
    let request = query_request(context.head, context.body)?;
    let page = match context
        .state
        .engine
        .query_items(container, &request)
        .await?
    {
        QueryOutcome::Page(page) => page,
        QueryOutcome::NeedsClientPipeline(pipeline) => return Err(pipeline_refusal(&pipeline)),
    };
    let charge = page.request_charge;
    let range_id = request.range_id.as_deref();
    let lsn = context.scoped_lsn(container, range_id, page.lsn).await;
    let mut reply = Reply::value_feed(
        container.rid(),
        "Documents",
        &page.items,
        page.continuation,
        charge,
    )
    .scoped_to(container, context.path, lsn, range_id);
    if let Some(metrics) = &page.metrics {
        reply = reply.header("x-ms-documentdb-query-metrics", query_metrics(metrics));
    }
    if let Some(report) = &page.index_utilization {
        let encoded = base64::engine::general_purpose::STANDARD.encode(report.to_string());
        reply = reply.header("x-ms-cosmos-index-utilization", encoded);
    }
    Ok(reply)
}

/// The service's `x-ms-documentdb-query-metrics`: `name=value` pairs joined by `;`, times in
/// milliseconds with two decimals, as the SDKs parse them. The plan-building and optimization
/// times are part of the compile time here (one step prepares the query), and the function
/// times part of the runtime execution (see `lethedb_engine::QueryMetrics`).
fn query_metrics(metrics: &QueryMetrics) -> String {
    let ms = |time: Duration| time.as_secs_f64() * 1000.0;
    format!(
        "totalExecutionTimeInMs={:.2};queryCompileTimeInMs={:.2};queryLogicalPlanBuildTimeInMs=0.00;queryPhysicalPlanBuildTimeInMs=0.00;queryOptimizationTimeInMs=0.00;VMExecutionTimeInMs={:.2};indexLookupTimeInMs={:.2};documentLoadTimeInMs={:.2};systemFunctionExecuteTimeInMs=0.00;userFunctionExecuteTimeInMs=0.00;retrievedDocumentCount={};retrievedDocumentSize={};outputDocumentCount={};outputDocumentSize={};writeOutputTimeInMs={:.2};indexUtilizationRatio={:.2}",
        ms(metrics.total),
        ms(metrics.compile),
        ms(metrics.runtime_execution),
        ms(metrics.index_lookup),
        ms(metrics.document_load),
        metrics.documents_retrieved,
        metrics.retrieved_document_bytes,
        metrics.documents_output,
        metrics.output_document_bytes,
        ms(metrics.output_write),
        metrics.index_utilization_ratio(),
    )
}

/// The service's answer to a query its client pipeline must run: 400/1004 with the plan in
/// `additionalErrorInfo`, on which the SDKs run the plan's rewritten query on each range; or,
/// when the request may not fan out (no `x-ms-documentdb-query-enablecrosspartition` on several
/// ranges), the cross-partition refusal, also with the plan.
fn pipeline_refusal(pipeline: &ClientPipeline) -> ApiError {
    let refusal = if pipeline.fan_out_allowed {
        ApiError::from_code(Code::CrossPartitionQueryNotServable)
    } else {
        ApiError::from_code(Code::Engine(ErrorCode::CrossPartitionQueryDisabled))
    };
    refusal.with_additional_info(pipeline.plan.to_json().to_string())
}

/// The features the SDK's client pipeline runs, as it lists them when asking for a plan.
const SUPPORTED_QUERY_FEATURES: &str = "x-ms-cosmos-supported-query-features";

/// The service's plan of a query (see `lethedb_query::ClientPlan`), refused when the client does
/// not declare a feature the plan needs (no list declares none).
pub async fn query_plan(context: &Context<'_>, container: &Arc<Container>) -> ApiResult<Reply> {
    let request = query_request(context.head, context.body)?;
    let plan = context.state.engine.query_plan(container, &request).await?;
    let supported = header(context.headers, SUPPORTED_QUERY_FEATURES).unwrap_or_default();
    if let Some(message) = plan.unsupported_message(supported) {
        return Err(ApiError::new(Code::UnsupportedQueryFeatures, message));
    }
    Ok(Reply::value(StatusCode::OK, &plan.to_json()).charge(0.0))
}
