//! Items: create, upsert, read, replace, patch and delete one; read a container page by page;
//! run a query and answer the SDKs' query-plan request.
//!
//! Item bytes go from the engine to the response as they were stored, never parsed here. The
//! rules (ids, partition keys, TTL, preconditions) are the engine's.

use super::context::Context;
use super::scripts::{named_triggers, triggered_write};
use crate::error::{ApiError, ApiResult, Code};
use crate::request::{header, header_is_true, parse_json, query_request};
use crate::respond::Reply;
use axum::http::StatusCode;
use base64::Engine as _;
use lethedb_engine::{
    request_units, Container, ErrorCode, ItemOutcome, PartitionKeyValue, QueryPage, QueryRequest,
    StoredItem, TriggeredOperation, WriteMode,
};
use std::sync::Arc;

/// The reply to a create, upsert, replace or patch, charged by the written document's size, in
/// the range of the key the engine wrote the item under.
fn written_reply(context: &Context<'_>, status: StatusCode, outcome: &ItemOutcome) -> Reply {
    let charge = request_units::write(outcome.item.record.body.len());
    let minimal = context.head.prefers_minimal;
    let lsn = outcome.item.record.lsn;
    let range = item_range(&outcome.item.container, Some(&outcome.partition_key));
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
        .header("etag", item.etag())
        .charge(request_units)
        .range_scoped(&item.container, context.path, lsn, range)
        .header("x-ms-documentdb-partitionkeyrangeid", range.to_string())
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
            context.path.id(0),
            context.path.id(1),
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
    Ok(written_reply(context, status, &outcome))
}

pub fn read(context: &Context<'_>, container: &Arc<Container>) -> ApiResult<Reply> {
    let key = context.head.partition_key()?;
    let read = context
        .state
        .engine
        .read_item_with_lsn(container, key.cloned(), context.path.id(2));
    let (item, lsn) = match read {
        Ok(found) => found,
        Err(error) if error.code == ErrorCode::ItemNotFound => {
            return Err(not_found_with_session(context, container, error));
        }
        Err(error) => return Err(error.into()),
    };
    let range = item_range(container, key);
    let etag = item.etag();
    if context.head.if_none_match == Some(etag.as_str()) {
        return Ok(Reply::empty(StatusCode::NOT_MODIFIED)
            .header("etag", etag)
            .range_scoped(container, context.path, lsn, range));
    }
    let charge = request_units::read(item.record.body.len());
    // A read always returns the document, whatever `Prefer` says, and the LSN of the write
    // that made this version (`x-ms-item-lsn`, beside the container's `lsn`).
    let item_lsn = item.record.lsn.to_string();
    Ok(
        item_reply(context, StatusCode::OK, &item, (lsn, range), false, charge)
            .header("x-ms-item-lsn", item_lsn),
    )
}

/// A point read of an item that is not there (or has expired) answers 404 with the session
/// the read saw, as the service does: the range's session token, `lsn` and the range id, so a
/// session-consistent client keeps its token moving.
fn not_found_with_session(
    context: &Context<'_>,
    container: &Arc<Container>,
    error: lethedb_engine::EngineError,
) -> ApiError {
    let Ok(lsn) = context.state.engine.container_lsn(container) else {
        return error.into();
    };
    let range = item_range(container, context.head.partition_key().ok().flatten());
    let headers = Reply::empty(StatusCode::NOT_FOUND)
        .range_scoped(container, context.path, lsn, range)
        .header("x-ms-documentdb-partitionkeyrangeid", range.to_string())
        .into_headers();
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
            context.path.id(0),
            context.path.id(1),
            WriteMode::Replace(context.path.id(2).to_string()),
            context.head.partition_key()?.cloned(),
            parse_json(context.body)?,
            context.head.if_match.map(str::to_string),
        )
        .await?;
    Ok(written_reply(context, StatusCode::OK, &outcome))
}

pub async fn patch(context: &Context<'_>) -> ApiResult<Reply> {
    let outcome = context
        .state
        .engine
        .patch_item(
            context.path.id(0),
            context.path.id(1),
            context.head.partition_key()?.cloned(),
            context.path.id(2),
            parse_json(context.body)?,
            context.head.if_match.map(str::to_string),
        )
        .await?;
    Ok(written_reply(context, StatusCode::OK, &outcome))
}

pub async fn delete(context: &Context<'_>, container: &Arc<Container>) -> ApiResult<Reply> {
    if let Some(triggers) = named_triggers(context) {
        let operation = TriggeredOperation::Delete(context.path.id(2).to_string());
        return triggered_write(context, container, operation, triggers).await;
    }
    let lsn = context
        .state
        .engine
        .delete_item(
            context.path.id(0),
            context.path.id(1),
            context.head.partition_key()?.cloned(),
            context.path.id(2),
            context.head.if_match.map(str::to_string),
        )
        .await?;
    let range = item_range(container, context.head.partition_key()?);
    Ok(Reply::empty(StatusCode::NO_CONTENT)
        .charge(request_units::write(0))
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
    let documents = feed.items.iter().map(StoredItem::to_json_bytes);
    Ok(Reply::feed(
        container.rid(),
        "Documents",
        documents,
        feed.continuation,
        request_units::read(bytes),
    )
    .scoped_to(container, context.path, feed.lsn, context.head.range_id))
}

pub async fn query(context: &Context<'_>, container: &Arc<Container>) -> ApiResult<Reply> {
    let request = query_request(context.head, context.body)?;
    refuse_if_client_pipeline_needed(context, container, &request)?;
    let page = context
        .state
        .engine
        .query_items(container, &request)
        .await?;
    let charge = request_units::query(page.documents_scanned, page.items.len() as u64);
    let metrics = header_is_true(context.headers, "x-ms-documentdb-populatequerymetrics")
        .then(|| query_metrics(&page));
    let index_metrics = if header_is_true(context.headers, POPULATE_INDEX_METRICS) {
        let report = context
            .state
            .engine
            .index_utilization(container, &request)?;
        Some(base64::engine::general_purpose::STANDARD.encode(report.to_string()))
    } else {
        None
    };
    let mut reply = Reply::value_feed(
        container.rid(),
        "Documents",
        &page.items,
        page.continuation,
        charge,
    )
    .scoped_to(
        container,
        context.path,
        page.lsn,
        request.range_id.as_deref(),
    );
    if let Some(metrics) = metrics {
        reply = reply.header("x-ms-documentdb-query-metrics", metrics);
    }
    if let Some(report) = index_metrics {
        reply = reply.header("x-ms-cosmos-index-utilization", report);
    }
    Ok(reply)
}

/// The request header that asks a query for its index utilization, which the answer carries in
/// `x-ms-cosmos-index-utilization` as base64 of the service's JSON report.
const POPULATE_INDEX_METRICS: &str = "x-ms-cosmos-populateindexmetrics";

fn query_metrics(page: &QueryPage) -> String {
    format!(
        "totalExecutionTimeInMs=0.00;queryCompileTimeInMs=0.00;queryLogicalPlanBuildTimeInMs=0.00;queryPhysicalPlanBuildTimeInMs=0.00;queryOptimizationTimeInMs=0.00;VMExecutionTimeInMs=0.00;indexLookupTimeInMs=0.00;documentLoadTimeInMs=0.00;systemFunctionExecuteTimeInMs=0.00;userFunctionExecuteTimeInMs=0.00;retrievedDocumentCount={};retrievedDocumentSize=0;outputDocumentCount={};outputDocumentSize=0;writeOutputTimeInMs=0.00;indexUtilizationRatio=1.00",
        page.documents_scanned,
        page.items.len()
    )
}

/// A query sent to the whole container (no partition key, no partition key range, no range of
/// effective keys) that fans out across partitions and needs the SDK's client pipeline is
/// refused as the service refuses it, with the plan in `additionalErrorInfo`: 400/1004, on which
/// the SDKs fetch the plan and send the rewritten query to each range; or, without
/// `x-ms-documentdb-query-enablecrosspartition`, the cross-partition refusal. Everything else
/// (and every request the SDKs make per range) runs whole here.
fn refuse_if_client_pipeline_needed(
    context: &Context<'_>,
    container: &Container,
    request: &QueryRequest,
) -> ApiResult<()> {
    if request.partition_key.is_some()
        || request.effective_range.is_some()
        || request.range_id.is_some()
        || container.partition_key.is_system_key()
        || container.partition_key.paths.is_empty()
    {
        return Ok(());
    }
    let plan = lethedb_engine::client_plan(
        &request.text,
        &request.parameters,
        context.state.engine.now_ms(),
        container,
        context.state.engine.query_udfs(container, &request.text)?,
    )?;
    if !plan.fans_out() || !plan.needs_client_pipeline() {
        return Ok(());
    }
    // As for any query, one range needs no cross-partition consent (`Engine::query_items`).
    let refusal = if request.enable_cross_partition || container.ranges.ranges.len() <= 1 {
        ApiError::from_code(Code::CrossPartitionQueryNotServable)
    } else {
        ApiError::from_code(Code::Engine(ErrorCode::CrossPartitionQueryDisabled))
    };
    Err(refusal.with_additional_info(plan.to_json().to_string()))
}

/// The features the SDK's client pipeline runs, as it lists them when asking for a plan.
const SUPPORTED_QUERY_FEATURES: &str = "x-ms-cosmos-supported-query-features";

/// The service's plan of a query (see `lethedb_query::ClientPlan`), refused when the client does
/// not declare a feature the plan needs (no list declares none).
pub fn query_plan(context: &Context<'_>, container: &Container) -> ApiResult<Reply> {
    let request = query_request(context.head, context.body)?;
    let plan = lethedb_engine::client_plan(
        &request.text,
        &request.parameters,
        context.state.engine.now_ms(),
        container,
        context.state.engine.query_udfs(container, &request.text)?,
    )?;
    let supported = header(context.headers, SUPPORTED_QUERY_FEATURES).unwrap_or_default();
    if let Some(message) = plan.unsupported_message(supported) {
        return Err(ApiError::new(Code::UnsupportedQueryFeatures, message));
    }
    Ok(Reply::value(StatusCode::OK, &plan.to_json()).charge(0.0))
}
