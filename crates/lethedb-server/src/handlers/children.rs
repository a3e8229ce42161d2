//! Read feeds of the child resources the engine's generic catalog holds: a database's users
//! and a container's stored procedures, triggers, user-defined functions and conflicts.
//!
//! Only the feeds are served so far (creating scripts comes with the feature that uses them;
//! users have their own room, `users.rs`); a feed lists what the catalog holds under its
//! parent, and a parent that does not exist is a 404 as for any other feed. Conflicts can also
//! be queried and read by id: one region never has any, so the feed is empty and an id a 404,
//! as on a single-region account.

use super::context::{list_resources, Context, Listing};
use crate::error::ApiResult;
use crate::respond::Reply;
use lethedb_engine::{ResourceKind, ResourceParent};
use serde_json::Value;

pub async fn feed(context: &Context<'_>, kind: ResourceKind) -> ApiResult<Reply> {
    feed_or_query(context, kind, Listing::Feed).await
}

/// A feed or a query of one kind under its parent.
pub async fn feed_or_query(
    context: &Context<'_>,
    kind: ResourceKind,
    listing: Listing,
) -> ApiResult<Reply> {
    let engine = &context.state.engine;
    let database_id = context.path.id(0);
    let parent = match kind {
        ResourceKind::User => ResourceParent::Database {
            database_id: database_id.to_string(),
        },
        _ => ResourceParent::Container {
            database_id: database_id.to_string(),
            container_id: context.path.id(1).to_string(),
        },
    };
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
            _ => Ok(engine
                .read_database(database_id)?
                .get("_rid")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()),
        },
    )
    .await
}

/// Reads one conflict by id: a 404 once the container is known to exist.
pub fn read_conflict(context: &Context<'_>) -> ApiResult<Reply> {
    let parent = ResourceParent::Container {
        database_id: context.path.id(0).to_string(),
        container_id: context.path.id(1).to_string(),
    };
    context
        .state
        .engine
        .read_container(context.path.id(0), context.path.id(1))?;
    let resource =
        context
            .state
            .engine
            .read_resource(ResourceKind::Conflict, &parent, context.path.id(2))?;
    Ok(Reply::value(axum::http::StatusCode::OK, &resource)
        .charge(lethedb_engine::request_units::CATALOG_READ))
}
