//! Read feeds of the child resources the engine's generic catalog holds: a database's users
//! and a container's stored procedures, triggers, user-defined functions and conflicts.
//!
//! Only the feeds are served so far (creating these resources comes with the features that
//! use them); a feed lists what the catalog holds under its parent, and a parent that does not
//! exist is a 404 as for any other feed.

use super::context::{list_resources, Context, Listing};
use crate::error::ApiResult;
use crate::respond::Reply;
use lethedb_engine::{ResourceKind, ResourceParent};
use serde_json::Value;

pub async fn feed(context: &Context<'_>, kind: ResourceKind) -> ApiResult<Reply> {
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
        Listing::Feed,
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
