//! Containers: list or query them, create, read, replace and delete one; their partition key
//! ranges (always one) and deleting one logical partition.
//!
//! Container rules (partition key definitions, TTL, indexing policy, throughput) are the
//! engine's; this module adds the usage and session headers the SDKs read.

use super::context::{list_resources, Context, Listing};
use crate::error::{ApiError, ApiResult, Code};
use crate::request::{header_is_true, parse_json, throughput};
use crate::respond::Reply;
use axum::http::StatusCode;
use lethedb_engine::{request_units, Container, ErrorCode, ResourceKind, ResourceParent};
use serde_json::{json, Value};
use std::sync::Arc;

pub async fn feed_or_query(context: &Context<'_>, listing: Listing) -> ApiResult<Reply> {
    let engine = &context.state.engine;
    let database_id = context.path.id(0);
    list_resources(
        context,
        listing,
        "DocumentCollections",
        async { Ok(engine.list_containers(database_id).await?) },
        || {
            Ok(engine
                .read_database(database_id)?
                .get("_rid")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string())
        },
    )
    .await
}

/// The quotas a container reports: its scripts (with `x-ms-documentdb-populatequotainfo`),
/// then its documents in KiB (-1: no limit on their count).
const SCRIPT_QUOTAS: &str = "functions=25;storedProcedures=100;triggers=25;";
const DOCUMENT_QUOTAS: &str =
    "documentSize=10240;documentsSize=10485760;documentsCount=-1;collectionSize=10485760;";

/// A container resource with its ETag, quota, usage and session headers. With
/// `x-ms-documentdb-populatequotainfo: true` the quota and usage also count its user-defined
/// functions, stored procedures and triggers, first, as the service's do.
async fn container_reply(
    context: &Context<'_>,
    status: StatusCode,
    container: &Arc<Container>,
) -> ApiResult<Reply> {
    let engine = &context.state.engine;
    let usage = engine.container_usage(container).await?;
    let kib = usage.bytes.div_ceil(1024);
    let mut resource = container.resource.clone();
    if header_is_true(
        context.headers,
        "x-ms-documentdb-populatepartitionstatistics",
    ) {
        let statistics = context.state.engine.range_statistics(container).await?;
        resource["statistics"] = statistics
            .iter()
            .map(|range| {
                // The service lists only partition keys of 1 GB or more, sampled.
                json!({
                    "id": range.id.to_string(),
                    "sizeInKB": range.bytes.div_ceil(1024),
                    "documentCount": range.items,
                    "sampledDistinctPartitionKeyCount": range.distinct_partition_keys,
                    "partitionKeys": [],
                })
            })
            .collect();
    }
    let documents = format!(
        "documentSize={};documentsSize={kib};documentsCount={};collectionSize={kib};",
        kib / 1024,
        usage.items
    );
    let (quota, usage_text) =
        if header_is_true(context.headers, "x-ms-documentdb-populatequotainfo") {
            let parent = ResourceParent::Container {
                database_id: container.database_id.clone(),
                container_id: container.id.clone(),
            };
            let mut counts = Vec::with_capacity(3);
            for kind in [
                ResourceKind::UserDefinedFunction,
                ResourceKind::StoredProcedure,
                ResourceKind::Trigger,
            ] {
                counts.push(engine.list_resources(kind, &parent).await?.len());
            }
            (
                format!("{SCRIPT_QUOTAS}{DOCUMENT_QUOTAS}"),
                format!(
                    "functions={};storedProcedures={};triggers={};{documents}",
                    counts[0], counts[1], counts[2]
                ),
            )
        } else {
            (DOCUMENT_QUOTAS.to_string(), documents)
        };
    Ok(Reply::value(status, &resource)
        .header("etag", container.etag().to_string())
        .header("x-ms-resource-quota", quota)
        .header("x-ms-resource-usage", usage_text)
        .container_resource(container, context.path, usage.lsn))
}

pub async fn create(context: &Context<'_>) -> ApiResult<Reply> {
    let created = context
        .state
        .engine
        .create_container(
            context.path.id(0),
            parse_json(context.body)?,
            throughput(context.headers)?,
        )
        .await?;
    Ok(container_reply(context, StatusCode::CREATED, &created)
        .await?
        .charge(request_units::CATALOG_WRITE))
}

pub async fn read(context: &Context<'_>) -> ApiResult<Reply> {
    let found = context
        .state
        .engine
        .read_container(context.path.id(0), context.path.id(1))?;
    if context.head.if_none_match == Some(found.etag()) {
        return Ok(Reply::empty(StatusCode::NOT_MODIFIED).header("etag", found.etag().to_string()));
    }
    // How far the index rebuild after a policy change has come, in percent (100: none runs).
    let progress = context.state.engine.index_transformation_progress(&found)?;
    Ok(container_reply(context, StatusCode::OK, &found)
        .await?
        .header(
            "x-ms-documentdb-collection-index-transformation-progress",
            progress.to_string(),
        )
        .charge(request_units::CATALOG_READ))
}

pub async fn replace(context: &Context<'_>) -> ApiResult<Reply> {
    let replaced = context
        .state
        .engine
        .replace_container(
            context.path.id(0),
            context.path.id(1),
            parse_json(context.body)?,
            context.head.if_match.map(str::to_string),
        )
        .await?;
    Ok(container_reply(context, StatusCode::OK, &replaced)
        .await?
        .charge(request_units::CATALOG_WRITE))
}

pub async fn delete(context: &Context<'_>) -> ApiResult<Reply> {
    context
        .state
        .engine
        .delete_container(context.path.id(0), context.path.id(1))
        .await?;
    Ok(Reply::empty(StatusCode::NO_CONTENT).charge(request_units::CATALOG_WRITE))
}

pub fn partition_key_ranges(context: &Context<'_>) -> ApiResult<Reply> {
    let engine = &context.state.engine;
    let found = engine.read_container(context.path.id(0), context.path.id(1))?;
    // The ETag changes only when ranges split, so clients polling with If-None-Match learn of
    // a split at once and otherwise that nothing changed.
    let etag = format!("\"{}-pkranges-{}\"", found.rid(), found.ranges.generation);
    if context.head.if_none_match == Some(etag.as_str()) {
        return Ok(Reply::empty(StatusCode::NOT_MODIFIED).header("etag", etag));
    }
    let lsn = engine.container_lsn(&found)?;
    let container_self = found
        .resource
        .get("_self")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let count = found.ranges.ranges.len() as f64;
    let ranges: Vec<Value> = found
        .ranges
        .ranges
        .iter()
        .map(|range| {
            let rid = lethedb_engine::partition_key_range_rid(
                found.database_number,
                found.number,
                range.id,
            );
            json!({
                "_rid": rid,
                "id": range.id.to_string(),
                "_etag": etag,
                "minInclusive": range.min,
                "maxExclusive": range.max,
                "ridPrefix": range.id,
                "_self": format!("{container_self}pkranges/{rid}/"),
                "throughputFraction": 1.0 / count,
                "status": "online",
                "parents": range.parents.iter().map(u32::to_string).collect::<Vec<_>>(),
                "ownedArchivalPKRangeIds": [],
                "_ts": found.resource.get("_ts").cloned().unwrap_or(json!(0)),
                "lsn": lsn,
            })
        })
        .collect();
    Ok(
        Reply::value_feed(found.rid(), "PartitionKeyRanges", &ranges, None, 1.0)
            .header("etag", etag)
            .container_scoped(&found, context.path, lsn),
    )
}

pub async fn delete_partition(context: &Context<'_>) -> ApiResult<Reply> {
    let key = context.head.partition_key()?.cloned().ok_or_else(|| {
        ApiError::new(
            Code::Engine(ErrorCode::PartitionKeyMissing),
            "Deleting a partition needs the x-ms-documentdb-partitionkey header.",
        )
    })?;
    // Not an item operation, so nothing admitted the container: it is read here, after the
    // header is checked, so that a request without the header is refused as before.
    let engine = &context.state.engine;
    let container = engine.read_container(context.path.id(0), context.path.id(1))?;
    let deleted = engine.delete_partition(&container, key).await?;
    // Each deleted item is charged as the delete of a document of at most 1 KiB.
    let charge =
        request_units::round_total(deleted as f64 * request_units::write(Some(0), None, 0));
    Ok(Reply::value(StatusCode::OK, &json!({})).charge(charge))
}
