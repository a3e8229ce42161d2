//! The child resources the engine's generic catalog holds, served the same way for every kind:
//! a database's users and client encryption keys, a container's stored procedures, triggers,
//! user-defined functions and conflicts. Create (201), upsert (201 or 200), read, replace and delete (204), the read feed
//! and the query, each answering the resource with its `_etag` as the `etag` header.
//!
//! What a body must hold is the engine's to check (a script's body compiles, a trigger names
//! its type and operation). Permissions have their own room (`users.rs`): each answer carries a
//! fresh token. Executing a stored procedure is not served here. Conflicts can be listed,
//! queried and read by id: one region never has any, so the feed is empty and an id a 404, as
//! on a single-region account.

use super::context::{list_resources, Context, Listing};
use crate::error::ApiResult;
use crate::request::parse_json;
use crate::respond::Reply;
use axum::http::StatusCode;
use lethedb_engine::{request_units, EngineError, ErrorCode, ResourceKind, ResourceParent};
use serde_json::Value;

/// The parent the path names for a resource of `kind`: the database of a user or a client
/// encryption key, the user of a permission, the container of the others.
pub fn parent(context: &Context<'_>, kind: ResourceKind) -> ResourceParent {
    let id = |index: usize| context.path.id(index).to_string();
    match kind {
        ResourceKind::User | ResourceKind::ClientEncryptionKey => {
            ResourceParent::Database { database_id: id(0) }
        }
        ResourceKind::Permission => ResourceParent::User {
            database_id: id(0),
            user_id: id(1),
        },
        _ => ResourceParent::Container {
            database_id: id(0),
            container_id: id(1),
        },
    }
}

/// The addressed resource's own id: the last id along the path.
fn own_id<'a>(context: &Context<'a>) -> &'a str {
    context
        .path
        .id((context.path.segments.len() / 2).saturating_sub(1))
}

/// A resource as the answer's body, with its `_etag` as the `etag` header.
pub fn resource_reply(status: StatusCode, resource: &Value, charge: f64) -> Reply {
    let etag = resource
        .get("_etag")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Reply::value(status, resource)
        .header("etag", etag.to_string())
        .charge(charge)
}

/// A feed or a query of one kind under its parent; a parent that does not exist is a 404.
pub async fn feed_or_query(
    context: &Context<'_>,
    kind: ResourceKind,
    listing: Listing,
) -> ApiResult<Reply> {
    let engine = &context.state.engine;
    let parent = parent(context, kind);
    if kind == ResourceKind::Conflict && matches!(listing, Listing::Query) {
        refuse_unscoped_conflict_query(context, &parent)?;
    }
    list_resources(
        context,
        listing,
        kind.feed_name(),
        async { Ok(engine.list_resources(kind, &parent).await?) },
        || match &parent {
            ResourceParent::Container {
                database_id,
                container_id,
            } => Ok(engine
                .read_container(database_id, container_id)?
                .rid()
                .to_string()),
            ResourceParent::User {
                database_id,
                user_id,
            } => Ok(rid_of(&engine.read_resource(
                ResourceKind::User,
                &ResourceParent::Database {
                    database_id: database_id.clone(),
                },
                user_id,
            )?)),
            ResourceParent::Database { database_id } => {
                Ok(rid_of(&engine.read_database(database_id)?))
            }
        },
    )
    .await
}

/// Conflicts live in their logical partitions, and a query over them follows the rule of item
/// queries: on a partitioned container it names a partition key or consents to reading across
/// partitions (`x-ms-documentdb-query-enablecrosspartition`), else the service's 400.
fn refuse_unscoped_conflict_query(context: &Context<'_>, parent: &ResourceParent) -> ApiResult<()> {
    let ResourceParent::Container {
        database_id,
        container_id,
    } = parent
    else {
        return Ok(());
    };
    let container = context
        .state
        .engine
        .read_container(database_id, container_id)?;
    let head = context.head;
    if container.partition_key.is_system_key()
        || head.enable_cross_partition
        || head.partition_key()?.is_some()
    {
        return Ok(());
    }
    Err(EngineError::new(ErrorCode::CrossPartitionQueryDisabled).into())
}

fn rid_of(resource: &Value) -> String {
    resource
        .get("_rid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

pub async fn create(context: &Context<'_>, kind: ResourceKind) -> ApiResult<Reply> {
    let resource = context
        .state
        .engine
        .create_resource(kind, parent(context, kind), parse_json(context.body)?)
        .await?;
    Ok(resource_reply(
        StatusCode::CREATED,
        &resource,
        request_units::CATALOG_WRITE,
    ))
}

/// Creates (201) or replaces (200) the resource the body's id names.
pub async fn upsert(context: &Context<'_>, kind: ResourceKind) -> ApiResult<Reply> {
    let (resource, created) = context
        .state
        .engine
        .upsert_resource(kind, parent(context, kind), parse_json(context.body)?)
        .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(resource_reply(
        status,
        &resource,
        request_units::CATALOG_WRITE,
    ))
}

pub fn read(context: &Context<'_>, kind: ResourceKind) -> ApiResult<Reply> {
    let resource =
        context
            .state
            .engine
            .read_resource(kind, &parent(context, kind), own_id(context))?;
    // A read whose If-None-Match names the current `_etag` is answered 304, as the service
    // answers any resource read: the JavaScript SDK's client-side encryption re-reads a key so
    // after its key-encryption key fails and takes a 304 to mean the key must be rewrapped.
    let etag = resource.get("_etag").and_then(Value::as_str);
    if etag.is_some() && context.head.if_none_match == etag {
        return Ok(Reply::empty(StatusCode::NOT_MODIFIED)
            .header("etag", etag.unwrap_or_default().to_string())
            .charge(request_units::CATALOG_READ));
    }
    Ok(resource_reply(
        StatusCode::OK,
        &resource,
        request_units::CATALOG_READ,
    ))
}

/// Replaces the resource; its body's id must be the addressed one unless the kind may be
/// renamed (users).
pub async fn replace(context: &Context<'_>, kind: ResourceKind) -> ApiResult<Reply> {
    let resource = context
        .state
        .engine
        .replace_resource(
            kind,
            parent(context, kind),
            own_id(context),
            parse_json(context.body)?,
            context.head.if_match.map(str::to_string),
        )
        .await?;
    Ok(resource_reply(
        StatusCode::OK,
        &resource,
        request_units::CATALOG_WRITE,
    ))
}

/// Deletes the resource and what hangs under it (a user's permissions, which revokes their
/// tokens).
pub async fn delete(context: &Context<'_>, kind: ResourceKind) -> ApiResult<Reply> {
    context
        .state
        .engine
        .delete_resource(
            kind,
            parent(context, kind),
            own_id(context),
            context.head.if_match.map(str::to_string),
        )
        .await?;
    Ok(Reply::empty(StatusCode::NO_CONTENT).charge(request_units::CATALOG_WRITE))
}

/// Reads one conflict by id: a 404 once the container is known to exist.
pub fn read_conflict(context: &Context<'_>) -> ApiResult<Reply> {
    context
        .state
        .engine
        .read_container(context.path.id(0), context.path.id(1))?;
    let kind = ResourceKind::Conflict;
    let resource =
        context
            .state
            .engine
            .read_resource(kind, &parent(context, kind), own_id(context))?;
    Ok(Reply::value(StatusCode::OK, &resource).charge(request_units::CATALOG_READ))
}
