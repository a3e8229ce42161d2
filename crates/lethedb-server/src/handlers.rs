//! Route handlers: one function per resource type and method, turning requests into engine calls
//! and engine results into the service's JSON shapes and headers.
//!
//! Handlers parse headers and bodies and shape responses; they keep no state and apply no
//! resource rules of their own (validation of ids, partition keys and TTL is the engine's).

use crate::error::{ApiError, ApiResult};
use crate::respond::Reply;
use crate::routes::ResourcePath;
use crate::AppState;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use lethedb_engine::throughput::Throughput;
use lethedb_engine::{
    request_units, Container, PartitionKeyValue, QueryPage, QueryRequest, WriteMode,
};
use serde_json::{json, Value};

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn header_is_true(headers: &HeaderMap, name: &str) -> bool {
    header(headers, name).is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

fn partition_key(headers: &HeaderMap) -> ApiResult<Option<PartitionKeyValue>> {
    match header(headers, "x-ms-documentdb-partitionkey") {
        None => Ok(None),
        Some(text) => Ok(Some(PartitionKeyValue::from_header(text)?)),
    }
}

/// Provisioned throughput asked for on a create.
fn throughput(headers: &HeaderMap) -> ApiResult<Option<Throughput>> {
    Ok(Throughput::from_headers(
        header(headers, "x-ms-offer-throughput"),
        header(headers, "x-ms-cosmos-offer-autopilot-settings"),
    )?)
}

/// Admits a request against the container's throughput budget (429 when spent).
fn admit(state: &AppState, container: &Container) -> ApiResult<()> {
    state
        .engine
        .admit(container)
        .map_err(|retry_after_ms| ApiError::TooManyRequests { retry_after_ms })
}

fn if_match(headers: &HeaderMap) -> Option<String> {
    header(headers, "if-match").map(str::to_string)
}

fn page_items_max(headers: &HeaderMap) -> ApiResult<Option<usize>> {
    match header(headers, "x-ms-max-item-count") {
        None => Ok(None),
        Some(text) => {
            let count: i64 = text.trim().parse().map_err(|_| {
                ApiError::BadRequest(format!(
                    "Invalid value '{text}' for header x-ms-max-item-count."
                ))
            })?;
            // -1 (and 0) ask for the service's dynamic page size.
            Ok((count > 0).then_some(count as usize))
        }
    }
}

fn continuation(headers: &HeaderMap) -> Option<String> {
    header(headers, "x-ms-continuation")
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

fn parse_json(body: &Bytes) -> ApiResult<Value> {
    if body.is_empty() {
        return Err(ApiError::BadRequest(
            "The request body is missing; a JSON body is required.".into(),
        ));
    }
    serde_json::from_slice(body).map_err(|error| {
        ApiError::BadRequest(format!("The request payload is invalid JSON: {error}."))
    })
}

fn is_query(headers: &HeaderMap) -> bool {
    header_is_true(headers, "x-ms-documentdb-isquery")
        || header(headers, "content-type").is_some_and(|v| v.starts_with("application/query+json"))
}

/// Reads a query body `{"query": "...", "parameters": [{"name": "@p", "value": ...}]}`.
fn query_request(headers: &HeaderMap, body: &Bytes) -> ApiResult<QueryRequest> {
    let value = parse_json(body)?;
    let text = match value.get("query") {
        Some(Value::String(text)) => text.clone(),
        _ => {
            return Err(ApiError::BadRequest(
                "The query body must have a string property 'query'.".into(),
            ))
        }
    };
    let mut parameters = Vec::new();
    match value.get("parameters") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for parameter in list {
                let Some(name) = parameter.get("name").and_then(Value::as_str) else {
                    return Err(ApiError::BadRequest(
                        "Each query parameter needs a string 'name'.".into(),
                    ));
                };
                // A parameter without a value is undefined: queries referring to it see nothing.
                if let Some(value) = parameter.get("value") {
                    parameters.push((name.to_string(), value.clone()));
                }
            }
        }
        Some(_) => {
            return Err(ApiError::BadRequest(
                "The query 'parameters' must be an array.".into(),
            ))
        }
    }
    Ok(QueryRequest {
        text,
        parameters,
        partition_key: partition_key(headers)?,
        page_items_max: page_items_max(headers)?,
        continuation: continuation(headers),
        enable_cross_partition: header_is_true(
            headers,
            "x-ms-documentdb-query-enablecrosspartition",
        ),
        effective_range: header(headers, "x-ms-start-epk")
            .zip(header(headers, "x-ms-end-epk"))
            .map(|(start, end)| (start.to_ascii_uppercase(), end.to_ascii_uppercase())),
    })
}

/// A feed body: `{"_rid": ..., "<Name>": [...], "_count": n}`.
fn feed_reply(
    rid: &str,
    name: &str,
    items: Vec<Value>,
    continuation: Option<String>,
    request_units: f64,
) -> Reply {
    let count = items.len();
    let body = json!({"_rid": rid, name: items, "_count": count});
    let mut reply = Reply::value(StatusCode::OK, &body)
        .header("x-ms-item-count", count.to_string())
        .charge(request_units);
    if let Some(token) = continuation {
        reply = reply.header("x-ms-continuation", token);
    }
    reply
}

fn query_metrics(page: &QueryPage) -> String {
    format!(
        "totalExecutionTimeInMs=0.00;queryCompileTimeInMs=0.00;queryLogicalPlanBuildTimeInMs=0.00;queryPhysicalPlanBuildTimeInMs=0.00;queryOptimizationTimeInMs=0.00;VMExecutionTimeInMs=0.00;indexLookupTimeInMs=0.00;documentLoadTimeInMs=0.00;systemFunctionExecuteTimeInMs=0.00;userFunctionExecuteTimeInMs=0.00;retrievedDocumentCount={};retrievedDocumentSize=0;outputDocumentCount={};outputDocumentSize=0;writeOutputTimeInMs=0.00;indexUtilizationRatio=1.00",
        page.documents_scanned,
        page.items.len()
    )
}

fn method_not_allowed(method: &Method, path: &ResourcePath) -> ApiError {
    ApiError::MethodNotAllowed(format!(
        "The requested verb {method} is not supported on resource type '{}'.",
        path.resource_type
    ))
}

/// Turns a path addressed by resource ids (`dbs/{rid}/colls/{rid}/docs/{rid}`, as clients
/// build from `_self`) into one addressed by ids. A path is taken as id-addressed only when its
/// database segment is a database's `_rid`.
pub fn resolve_resource_ids(
    engine: &lethedb_engine::Engine,
    path: &mut ResourcePath,
) -> ApiResult<()> {
    let types: Vec<String> = path.shape().0.into_iter().map(str::to_string).collect();
    let types: Vec<&str> = types.iter().map(String::as_str).collect();
    if types.first() != Some(&"dbs") || path.segments.len() < 2 {
        return Ok(());
    }
    let Some(database_id) = engine.database_id_by_rid(path.id(0))? else {
        return Ok(());
    };
    path.set_id(0, database_id.clone());
    if types.get(1) == Some(&"colls") && path.segments.len() >= 4 {
        let container_id = engine
            .container_id_by_rid(&database_id, path.id(1))?
            .ok_or_else(|| {
                ApiError::NotFound(
                    "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found".into(),
                )
            })?;
        path.set_id(1, container_id.clone());
        if types.get(2) == Some(&"docs") && path.segments.len() >= 6 {
            let container = engine.read_container(&database_id, &container_id)?;
            let item_id = engine
                .item_id_by_rid(&container, path.id(2))?
                .ok_or_else(|| {
                    ApiError::NotFound(
                        "Entity with the specified id does not exist in the system.".into(),
                    )
                })?;
            path.set_id(2, item_id);
        }
    }
    Ok(())
}

/// Internal statistics: the writer's counters and the TTL sweeper's per-container backlog, lag
/// and deletions. Read-only and unauthenticated, like a metrics endpoint.
pub fn stats(state: &AppState) -> ApiResult<Response> {
    let (operations, commits, queued) = state.engine.writer_stats();
    let containers: Vec<Value> = state
        .engine
        .sweep_stats()
        .into_iter()
        .map(|s| {
            json!({
                "database": s.database_id,
                "container": s.container_id,
                "ttlBacklogItems": s.backlog_items,
                "oldestExpiredAgeMs": s.oldest_expired_age_ms,
                "ttlDeletedTotal": s.deleted_total,
            })
        })
        .collect();
    let body = json!({
        "writer": {"operations": operations, "commits": commits, "queued": queued},
        // Why the engine stopped accepting writes, or null while it accepts them.
        "poisoned": state.engine.poisoned(),
        "containers": containers,
    });
    Ok(Reply::value(StatusCode::OK, &body).finish())
}

/// The Prometheus text exposition.
pub fn metrics(state: &AppState) -> ApiResult<Response> {
    let Some(metrics) = &state.metrics else {
        return Err(ApiError::NotFound(
            "Metrics are turned off on this server.".into(),
        ));
    };
    let text = metrics
        .render()
        .map_err(|_| ApiError::Internal("the metrics could not be encoded".into()))?;
    Ok(Reply::json(StatusCode::OK, text.into_bytes())
        .header("content-type", "text/plain; version=0.0.4; charset=utf-8")
        .finish())
}

pub fn certificate(state: &AppState) -> ApiResult<Response> {
    match &state.certificate_pem {
        Some(pem) => Ok(Reply::json(StatusCode::OK, pem.as_bytes().to_vec())
            .header("content-type", "application/x-pem-file")
            .finish()),
        None => Err(ApiError::NotFound(
            "This server does not serve TLS, so it has no certificate.".into(),
        )),
    }
}

pub async fn route(
    state: &AppState,
    parts: &axum::http::request::Parts,
    path: &ResourcePath,
    body: Bytes,
) -> ApiResult<Response> {
    let (method, headers) = (&parts.method, &parts.headers);
    let (types, names_one) = path.shape();
    let reply = match (types.as_slice(), names_one) {
        ([], _) if method == Method::GET => {
            let tls = state.certificate_pem.is_some();
            account(&crate::respond::endpoint(headers, &parts.uri, tls))
        }
        (["dbs"], false) => databases(state, method, headers, path, &body).await?,
        (["dbs"], true) => database(state, method, path).await?,
        (["dbs", "colls"], false) => containers(state, method, headers, path, &body).await?,
        (["dbs", "colls"], true) => container(state, method, headers, path, &body).await?,
        (["dbs", "colls", "docs"], _) => {
            // Every item request draws on the container's throughput budget: admitted while this
            // second's budget lasts, charged what it cost afterwards.
            let found = state.engine.read_container(path.id(0), path.id(1))?;
            admit(state, &found)?;
            let reply = if names_one {
                item(state, &found, method, headers, path, &body).await?
            } else {
                items(state, &found, method, headers, path, &body).await?
            };
            state.engine.charge(&found, reply.request_charge());
            reply
        }
        (["dbs", "colls", "pkranges"], false) if method == Method::GET => {
            partition_key_ranges(state, headers, path)?
        }
        (["dbs", "colls", "operations"], true)
            if method == Method::POST && path.id(2) == "partitionkeydelete" =>
        {
            let key = partition_key(headers)?.ok_or_else(|| {
                ApiError::BadRequest(
                    "Deleting a partition needs the x-ms-documentdb-partitionkey header.".into(),
                )
            })?;
            let deleted = state
                .engine
                .delete_partition(path.id(0), path.id(1), key)
                .await?;
            let charge = request_units::round_total(deleted as f64 * request_units::write(0));
            Reply::value(StatusCode::OK, &json!({})).charge(charge)
        }
        (["offers"], false) => offers(state, method, headers, path, &body).await?,
        (["offers"], true) => offer(state, method, path, &body).await?,
        (["dbs", "users"], false)
        | (["dbs", "colls", "sprocs" | "udfs" | "triggers" | "conflicts"], false)
            if method == Method::GET =>
        {
            // LetheDB has no users or server-side scripts, so these feeds are always empty.
            let name = match path.resource_type.as_str() {
                "users" => "Users",
                "sprocs" => "StoredProcedures",
                "udfs" => "UserDefinedFunctions",
                "triggers" => "Triggers",
                _ => "Conflicts",
            };
            feed_reply("", name, Vec::new(), None, 1.0)
        }
        ([], _) => return Err(method_not_allowed(method, path)),
        _ => {
            return Err(ApiError::NotFound(format!(
                "The resource type '{}' at '{}' is not supported by LetheDB.",
                path.resource_type, path.link
            )))
        }
    };
    Ok(reply.finish())
}

fn account(endpoint: &str) -> Reply {
    let location = json!([{"name": "LetheDB", "databaseAccountEndpoint": endpoint}]);
    let query_engine = json!({
        "maxSqlQueryInputLength": 262144, "maxJoinsPerSqlQuery": 5, "maxLogicalAndPerSqlQuery": 500,
        "maxLogicalOrPerSqlQuery": 500, "maxUdfRefPerSqlQuery": 10, "maxInExpressionItemsCount": 16000,
        "queryMaxInMemorySortDocumentCount": 500, "maxQueryRequestTimeoutFraction": 0.9,
        "sqlAllowNonFiniteNumbers": false, "sqlAllowAggregateFunctions": true, "sqlAllowSubQuery": true,
        "sqlAllowScalarSubQuery": true, "allowNewKeywords": true, "sqlAllowLike": true,
        "sqlAllowGroupByClause": true, "maxSpatialQueryCells": 12, "spatialMaxGeometryPointCount": 256,
        "sqlDisableOptimizationFlags": 0, "enableSpatialIndexing": true
    });
    let body = json!({
        "_self": "",
        "id": "lethedb",
        "_rid": "lethedb",
        "media": "//media/",
        "addresses": "//addresses/",
        "_dbs": "//dbs/",
        "writableLocations": location,
        "readableLocations": location,
        "enableMultipleWriteLocations": false,
        "continuousBackupEnabled": false,
        "enableNRegionSynchronousCommit": false,
        "userReplicationPolicy": {"asyncReplication": false, "minReplicaSetSize": 1, "maxReplicasetSize": 4},
        "userConsistencyPolicy": {"defaultConsistencyLevel": "Session"},
        "systemReplicationPolicy": {"minReplicaSetSize": 1, "maxReplicasetSize": 4},
        "readPolicy": {"primaryReadCoefficient": 1, "secondaryReadCoefficient": 1},
        "queryEngineConfiguration": query_engine.to_string(),
    });
    Reply::value(StatusCode::OK, &body)
}

// ----- offers -----

async fn offers(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    path: &ResourcePath,
    body: &Bytes,
) -> ApiResult<Reply> {
    let request = match *method {
        Method::POST => query_request(headers, body)?,
        Method::GET => feed_request(headers)?,
        _ => return Err(method_not_allowed(method, path)),
    };
    let page = state
        .engine
        .query_resources(&state.engine.list_offers().await?, &request)
        .await?;
    Ok(feed_reply("", "Offers", page.items, page.continuation, 1.0))
}

async fn offer(
    state: &AppState,
    method: &Method,
    path: &ResourcePath,
    body: &Bytes,
) -> ApiResult<Reply> {
    match *method {
        Method::GET => Ok(
            Reply::value(StatusCode::OK, &state.engine.read_offer(path.id(0))?)
                .charge(request_units::CATALOG_READ),
        ),
        Method::PUT => {
            let replaced = state
                .engine
                .replace_offer(path.id(0), parse_json(body)?)
                .await?;
            Ok(Reply::value(StatusCode::OK, &replaced).charge(request_units::CATALOG_WRITE))
        }
        _ => Err(method_not_allowed(method, path)),
    }
}

// ----- databases -----

async fn databases(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    path: &ResourcePath,
    body: &Bytes,
) -> ApiResult<Reply> {
    let engine = &state.engine;
    match *method {
        Method::POST if is_query(headers) => {
            let request = query_request(headers, body)?;
            let page = engine
                .query_resources(&engine.list_databases().await?, &request)
                .await?;
            Ok(feed_reply(
                "",
                "Databases",
                page.items,
                page.continuation,
                1.0,
            ))
        }
        Method::POST => {
            let resource = engine
                .create_database(parse_json(body)?, throughput(headers)?)
                .await?;
            Ok(Reply::value(StatusCode::CREATED, &resource).charge(request_units::CATALOG_WRITE))
        }
        Method::GET => {
            let request = feed_request(headers)?;
            let page = engine
                .query_resources(&engine.list_databases().await?, &request)
                .await?;
            Ok(feed_reply(
                "",
                "Databases",
                page.items,
                page.continuation,
                1.0,
            ))
        }
        _ => Err(method_not_allowed(method, path)),
    }
}

/// A read feed is the query `SELECT * FROM root`, paged the same way.
fn feed_request(headers: &HeaderMap) -> ApiResult<QueryRequest> {
    Ok(QueryRequest {
        text: "SELECT * FROM root".into(),
        page_items_max: page_items_max(headers)?,
        continuation: continuation(headers),
        enable_cross_partition: true,
        ..QueryRequest::default()
    })
}

async fn database(state: &AppState, method: &Method, path: &ResourcePath) -> ApiResult<Reply> {
    match *method {
        Method::GET => {
            let resource = state.engine.read_database(path.id(0))?;
            Ok(Reply::value(StatusCode::OK, &resource).charge(request_units::CATALOG_READ))
        }
        Method::DELETE => {
            state.engine.delete_database(path.id(0)).await?;
            Ok(Reply::empty(StatusCode::NO_CONTENT).charge(request_units::CATALOG_WRITE))
        }
        _ => Err(method_not_allowed(method, path)),
    }
}

// ----- containers -----

async fn containers(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    path: &ResourcePath,
    body: &Bytes,
) -> ApiResult<Reply> {
    let engine = &state.engine;
    let database_rid = || -> ApiResult<String> {
        Ok(engine
            .read_database(path.id(0))?
            .get("_rid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string())
    };
    match *method {
        Method::POST if is_query(headers) => {
            let request = query_request(headers, body)?;
            let page = engine
                .query_resources(&engine.list_containers(path.id(0)).await?, &request)
                .await?;
            Ok(feed_reply(
                &database_rid()?,
                "DocumentCollections",
                page.items,
                page.continuation,
                1.0,
            ))
        }
        Method::POST => {
            let created = engine
                .create_container(path.id(0), parse_json(body)?, throughput(headers)?)
                .await?;
            Ok(container_reply(state, path, StatusCode::CREATED, &created)
                .await?
                .charge(request_units::CATALOG_WRITE))
        }
        Method::GET => {
            let request = feed_request(headers)?;
            let page = engine
                .query_resources(&engine.list_containers(path.id(0)).await?, &request)
                .await?;
            Ok(feed_reply(
                &database_rid()?,
                "DocumentCollections",
                page.items,
                page.continuation,
                1.0,
            ))
        }
        _ => Err(method_not_allowed(method, path)),
    }
}

/// The container path clients key session tokens by; they expect it as they sent it.
fn alt_path(container: &Container, path: &ResourcePath) -> String {
    if path.raw_container_path.split('/').count() == 4 {
        path.raw_container_path.clone()
    } else {
        format!("dbs/{}/colls/{}", container.database_id, container.id)
    }
}

async fn container_reply(
    state: &AppState,
    path: &ResourcePath,
    status: StatusCode,
    container: &std::sync::Arc<Container>,
) -> ApiResult<Reply> {
    let usage = state.engine.container_usage(container).await?;
    let kib = usage.bytes.div_ceil(1024);
    Ok(Reply::value(status, &container.resource)
        .header("etag", container.etag().to_string())
        .header(
            "x-ms-resource-quota",
            "documentSize=10240;documentsSize=10485760;documentsCount=-1;collectionSize=10485760;",
        )
        .header(
            "x-ms-resource-usage",
            format!(
                "documentSize={};documentsSize={kib};documentsCount={};collectionSize={kib};",
                kib / 1024,
                usage.items
            ),
        )
        .session(usage.lsn, container.rid(), &alt_path(container, path)))
}

async fn container(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    path: &ResourcePath,
    body: &Bytes,
) -> ApiResult<Reply> {
    let engine = &state.engine;
    let (database_id, container_id) = (path.id(0), path.id(1));
    match *method {
        Method::GET => {
            let found = engine.read_container(database_id, container_id)?;
            if header(headers, "if-none-match") == Some(found.etag()) {
                return Ok(
                    Reply::empty(StatusCode::NOT_MODIFIED).header("etag", found.etag().to_string())
                );
            }
            Ok(container_reply(state, path, StatusCode::OK, &found)
                .await?
                .charge(request_units::CATALOG_READ))
        }
        Method::PUT => {
            let replaced = engine
                .replace_container(
                    database_id,
                    container_id,
                    parse_json(body)?,
                    if_match(headers),
                )
                .await?;
            Ok(container_reply(state, path, StatusCode::OK, &replaced)
                .await?
                .charge(request_units::CATALOG_WRITE))
        }
        Method::DELETE => {
            engine.delete_container(database_id, container_id).await?;
            Ok(Reply::empty(StatusCode::NO_CONTENT).charge(request_units::CATALOG_WRITE))
        }
        _ => Err(method_not_allowed(method, path)),
    }
}

fn partition_key_ranges(
    state: &AppState,
    headers: &HeaderMap,
    path: &ResourcePath,
) -> ApiResult<Reply> {
    let found = state.engine.read_container(path.id(0), path.id(1))?;
    // One range that never splits, so its ETag never changes: clients polling for changes
    // (If-None-Match) learn at once that there are none.
    let etag = format!("\"{}-pkranges\"", found.rid());
    if header(headers, "if-none-match") == Some(etag.as_str()) {
        return Ok(Reply::empty(StatusCode::NOT_MODIFIED).header("etag", etag));
    }
    let lsn = state.engine.container_lsn(&found)?;
    let range = json!({
        "_rid": format!("{}AgAAAAAAAAA=", &found.rid()[..found.rid().len().saturating_sub(4)]),
        "id": "0",
        "_etag": etag,
        "minInclusive": "",
        "maxExclusive": "FF",
        "ridPrefix": 0,
        "_self": format!("{}pkranges/0/", found.resource.get("_self").and_then(Value::as_str).unwrap_or_default()),
        "throughputFraction": 1,
        "status": "online",
        "parents": [],
        "ownedArchivalPKRangeIds": [],
        "_ts": found.resource.get("_ts").cloned().unwrap_or(json!(0)),
        "lsn": lsn,
    });
    Ok(
        feed_reply(found.rid(), "PartitionKeyRanges", vec![range], None, 1.0)
            .header("etag", etag)
            .session(lsn, found.rid(), &alt_path(&found, path)),
    )
}

// ----- items -----

/// The reply to a create, upsert, replace or patch, charged by the written document's size.
fn written_reply(
    path: &ResourcePath,
    status: StatusCode,
    outcome: &lethedb_engine::ItemOutcome,
    headers: &HeaderMap,
) -> Reply {
    let charge = request_units::write(outcome.item.record.body.len());
    item_reply(path, status, &outcome.item, headers, charge)
}

fn item_reply(
    path: &ResourcePath,
    status: StatusCode,
    item: &lethedb_engine::StoredItem,
    headers: &HeaderMap,
    request_units: f64,
) -> Reply {
    let container = &item.container;
    let minimal = header(headers, "prefer").is_some_and(|v| v.contains("return=minimal"));
    let body = if minimal {
        Vec::new()
    } else {
        item.to_json_bytes()
    };
    Reply::json(status, body)
        .header("etag", item.etag())
        .charge(request_units)
        .session(item.record.lsn, container.rid(), &alt_path(container, path))
        .header("x-ms-documentdb-partitionkeyrangeid", "0")
}

async fn items(
    state: &AppState,
    found: &std::sync::Arc<Container>,
    method: &Method,
    headers: &HeaderMap,
    path: &ResourcePath,
    body: &Bytes,
) -> ApiResult<Reply> {
    let engine = &state.engine;
    let (database_id, container_id) = (path.id(0), path.id(1));
    match *method {
        Method::POST if header_is_true(headers, "x-ms-cosmos-is-batch-request") => {
            let operations = lethedb_engine::batch::parse_batch(&parse_json(body)?)?;
            // Transactional unless the client asks for bulk (non-atomic) explicitly.
            let atomic = header(headers, "x-ms-cosmos-batch-atomic")
                .is_none_or(|v| v.eq_ignore_ascii_case("true"));
            let (results, succeeded) = engine
                .execute_batch(
                    database_id,
                    container_id,
                    partition_key(headers)?,
                    operations,
                    atomic,
                )
                .await?;
            let minimal = header(headers, "prefer").is_some_and(|v| v.contains("return=minimal"));
            let charge: f64 = results.iter().map(|r| r.request_units).sum();
            let lsn = results
                .iter()
                .filter_map(|r| r.item.as_ref().map(|i| i.record.lsn))
                .max()
                .unwrap_or(0);
            let entries: Vec<Value> = results
                .iter()
                .map(|result| {
                    let mut entry =
                        json!({"statusCode": result.status, "requestCharge": result.request_units});
                    if let Some(item) = &result.item {
                        entry["eTag"] = json!(item.etag());
                        if !minimal {
                            entry["resourceBody"] = serde_json::from_slice(&item.to_json_bytes())
                                .unwrap_or(Value::Null);
                        }
                    }
                    if result.status >= 400 {
                        entry["subStatusCode"] = json!(0);
                    }
                    entry
                })
                .collect();
            let status = if succeeded {
                StatusCode::OK
            } else {
                StatusCode::MULTI_STATUS
            };
            Ok(Reply::value(status, &Value::Array(entries))
                .charge(request_units::round_total(charge))
                .session(lsn, found.rid(), &alt_path(found, path)))
        }
        Method::POST if header_is_true(headers, "x-ms-cosmos-is-query-plan-request") => {
            let request = query_request(headers, body)?;
            // Parsing now reports syntax errors at plan time, as the service does.
            lethedb_engine::validate_query(&request.text, &request.parameters, engine.now_ms())?;
            Ok(Reply::value(StatusCode::OK, &query_plan()).charge(0.0))
        }
        Method::POST if is_query(headers) => {
            let request = query_request(headers, body)?;
            let page = engine.query_items(found, &request).await?;
            let charge = request_units::query(page.documents_scanned, page.items.len() as u64);
            let metrics = header_is_true(headers, "x-ms-documentdb-populatequerymetrics")
                .then(|| query_metrics(&page));
            let lsn = page.lsn;
            let mut reply = feed_reply(
                found.rid(),
                "Documents",
                page.items,
                page.continuation,
                charge,
            )
            .session(lsn, found.rid(), &alt_path(found, path));
            if let Some(metrics) = metrics {
                reply = reply.header("x-ms-documentdb-query-metrics", metrics);
            }
            Ok(reply)
        }
        Method::POST => {
            let mode = if header_is_true(headers, "x-ms-documentdb-is-upsert") {
                WriteMode::Upsert
            } else {
                WriteMode::Create
            };
            let outcome = engine
                .write_item(
                    database_id,
                    container_id,
                    mode,
                    partition_key(headers)?,
                    parse_json(body)?,
                    if_match(headers),
                )
                .await?;
            let status = if outcome.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            Ok(written_reply(path, status, &outcome, headers))
        }
        Method::GET
            if header(headers, "a-im")
                .is_some_and(|v| v.eq_ignore_ascii_case("incremental feed")) =>
        {
            // A change-feed read; answering it as a plain read feed would make clients re-read
            // every item forever, so it is refused until the change feed exists.
            Err(ApiError::BadRequest(
                "The change feed is not supported by LetheDB yet.".into(),
            ))
        }
        Method::GET => {
            let feed = engine
                .read_feed(
                    found,
                    partition_key(headers)?,
                    page_items_max(headers)?.unwrap_or(lethedb_engine::PAGE_ITEMS_DEFAULT),
                    continuation(headers).as_deref(),
                )
                .await?;
            let bytes: usize = feed.items.iter().map(|i| i.record.body.len()).sum();
            let documents = feed
                .items
                .iter()
                .map(|item| {
                    serde_json::from_slice(&item.to_json_bytes())
                        .map_err(|_| ApiError::Internal("a stored item could not be read".into()))
                })
                .collect::<ApiResult<Vec<Value>>>()?;
            Ok(feed_reply(
                found.rid(),
                "Documents",
                documents,
                feed.continuation,
                request_units::read(bytes),
            )
            .session(feed.lsn, found.rid(), &alt_path(found, path)))
        }
        _ => Err(method_not_allowed(method, path)),
    }
}

/// The plan that tells the SDKs the server runs the whole query: nothing to rewrite, order,
/// aggregate or deduplicate on the client, over the one partition key range.
fn query_plan() -> Value {
    json!({
        "partitionedQueryExecutionInfoVersion": 2,
        "queryInfo": {
            "distinctType": "None",
            "top": null,
            "offset": null,
            "limit": null,
            "orderBy": [],
            "orderByExpressions": [],
            "groupByExpressions": [],
            "groupByAliases": [],
            "aggregates": [],
            "groupByAliasToAggregateType": {},
            "rewrittenQuery": "",
            "hasSelectValue": false,
            "dCountInfo": null,
            "hasNonStreamingOrderBy": false
        },
        "queryRanges": [{"min": "", "max": "FF", "isMinInclusive": true, "isMaxInclusive": false}]
    })
}

async fn item(
    state: &AppState,
    found: &std::sync::Arc<Container>,
    method: &Method,
    headers: &HeaderMap,
    path: &ResourcePath,
    body: &Bytes,
) -> ApiResult<Reply> {
    let engine = &state.engine;
    let (database_id, container_id, id) = (path.id(0), path.id(1), path.id(2));
    match *method {
        Method::GET => {
            let item = engine.read_item(found, partition_key(headers)?, id)?;
            let etag = item.etag();
            if header(headers, "if-none-match") == Some(etag.as_str()) {
                return Ok(Reply::empty(StatusCode::NOT_MODIFIED)
                    .header("etag", etag)
                    .session(item.record.lsn, found.rid(), &alt_path(found, path)));
            }
            let charge = request_units::read(item.record.body.len());
            Ok(item_reply(
                path,
                StatusCode::OK,
                &item,
                &HeaderMap::new(),
                charge,
            ))
        }
        Method::PUT => {
            let outcome = engine
                .write_item(
                    database_id,
                    container_id,
                    WriteMode::Replace(id.to_string()),
                    partition_key(headers)?,
                    parse_json(body)?,
                    if_match(headers),
                )
                .await?;
            Ok(written_reply(path, StatusCode::OK, &outcome, headers))
        }
        Method::PATCH => {
            let outcome = engine
                .patch_item(
                    database_id,
                    container_id,
                    partition_key(headers)?,
                    id,
                    parse_json(body)?,
                    if_match(headers),
                )
                .await?;
            Ok(written_reply(path, StatusCode::OK, &outcome, headers))
        }
        Method::DELETE => {
            let lsn = engine
                .delete_item(
                    database_id,
                    container_id,
                    partition_key(headers)?,
                    id,
                    if_match(headers),
                )
                .await?;
            Ok(Reply::empty(StatusCode::NO_CONTENT)
                .charge(request_units::write(0))
                .session(lsn, found.rid(), &alt_path(found, path)))
        }
        _ => Err(method_not_allowed(method, path)),
    }
}
