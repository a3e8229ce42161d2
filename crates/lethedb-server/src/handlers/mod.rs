//! Route handlers, one room per resource: they turn an [`Operation`] into engine calls and
//! engine results into the service's JSON shapes and headers.
//!
//! Handlers keep no state and apply no resource rules of their own (validation of ids,
//! partition keys and TTL is the engine's). They do not decide what a request is either:
//! [`route`] receives the operation already classified and matches on it exhaustively, one small
//! `match` per resource, so an operation without a handler does not compile. A new child kind of
//! the engine's catalog is served by `children.rs` without a line here.

mod account;
mod batch;
mod change_feed;
mod children;
mod containers;
mod context;
mod databases;
mod faults;
mod health;
mod index_check;
mod internal;
mod items;
mod offers;
mod reset;
mod scripts;
mod snapshots;
mod throughput_buckets;
mod ttl;
mod users;

pub use context::Context;
pub use faults::{faults, FAULTS_PATH};
pub use health::{alive, ready, status, ALIVE_PATH, READY_PATH, STATUS_PATH};
pub use index_check::{index_check, INDEX_CHECK_PREFIX};
pub use internal::{certificate, metrics, metrics_not_public, stats, STATS_PATH};
pub use reset::{reset, RESET_PATH};
pub use snapshots::{snapshots, SNAPSHOTS_PATH};
pub use throughput_buckets::{throughput_buckets, THROUGHPUT_BUCKETS_PREFIX};
pub use ttl::{ttl_overview, TTL_OVERVIEW_PREFIX};

use context::Listing;

use crate::error::{ApiError, ApiResult, Code};
use crate::operation::{ItemOperation, Operation, Resource, Verb};
use crate::respond::Reply;
use lethedb_engine::{Container, ErrorCode, ResourceKind, WriteMode};
use std::sync::Arc;

/// Runs `operation`. Item operations get the container the dispatcher loaded and admitted.
pub async fn route(
    operation: Operation,
    context: &Context<'_>,
    admitted: Option<&Arc<Container>>,
) -> ApiResult<Reply> {
    let container = || admitted.ok_or_else(|| unrouted(operation, "without an admitted container"));
    match operation {
        Operation::ReadAccount => Ok(account::read(context)),
        Operation::Resource(Resource::Database, verb) => database(context, verb).await,
        Operation::Resource(Resource::Container, verb) => container_route(context, verb).await,
        Operation::Resource(Resource::Offer, verb) => offer(context, verb).await,
        Operation::Resource(Resource::Child(ResourceKind::Permission), verb) => {
            permission(context, verb).await
        }
        Operation::Resource(Resource::Child(kind), verb) => child(context, kind, verb).await,
        Operation::ReadPartitionKeyRanges => containers::partition_key_ranges(context),
        Operation::DeletePartition => containers::delete_partition(context).await,
        Operation::Item(item) => item_route(context, item, container()?).await,
        Operation::ExecuteStoredProcedure => scripts::execute(context, container()?).await,
    }
}

/// A 500 for an operation that reached no handler: one the classifier does not make (a verb
/// outside its resource's row), or an item operation without its container.
fn unrouted(operation: Operation, why: &str) -> ApiError {
    ApiError::new(
        Code::Engine(ErrorCode::Internal),
        format!("{} reached its handler {why}", operation.name()),
    )
}

/// A verb the resource's row (`Resource::row`) does not list, so the classifier never makes it.
fn not_in_row(resource: Resource, verb: Verb) -> ApiError {
    unrouted(
        Operation::Resource(resource, verb),
        "though its resource does not answer it",
    )
}

async fn item_route(
    context: &Context<'_>,
    item: ItemOperation,
    container: &Arc<Container>,
) -> ApiResult<Reply> {
    match item {
        ItemOperation::ReadFeed => items::read_feed(context, container).await,
        ItemOperation::ReadChangeFeed => change_feed::read(context, container).await,
        ItemOperation::Query => items::query(context, container).await,
        ItemOperation::QueryPlan => items::query_plan(context, container).await,
        ItemOperation::Batch => batch::execute(context, container).await,
        ItemOperation::Create => items::create(context, container, WriteMode::Create).await,
        ItemOperation::Upsert => items::create(context, container, WriteMode::Upsert).await,
        ItemOperation::Read => items::read(context, container).await,
        ItemOperation::Replace => items::replace(context, container).await,
        ItemOperation::Patch => items::patch(context, container).await,
        ItemOperation::Delete => items::delete(context, container).await,
    }
}

async fn database(context: &Context<'_>, verb: Verb) -> ApiResult<Reply> {
    match verb {
        Verb::Feed => databases::feed_or_query(context, Listing::Feed).await,
        Verb::Query => databases::feed_or_query(context, Listing::Query).await,
        Verb::Create => databases::create(context).await,
        Verb::Read => databases::read(context),
        Verb::Delete => databases::delete(context).await,
        Verb::Upsert | Verb::Replace => Err(not_in_row(Resource::Database, verb)),
    }
}

async fn container_route(context: &Context<'_>, verb: Verb) -> ApiResult<Reply> {
    match verb {
        Verb::Feed => containers::feed_or_query(context, Listing::Feed).await,
        Verb::Query => containers::feed_or_query(context, Listing::Query).await,
        Verb::Create => containers::create(context).await,
        Verb::Read => containers::read(context).await,
        Verb::Replace => containers::replace(context).await,
        Verb::Delete => containers::delete(context).await,
        Verb::Upsert => Err(not_in_row(Resource::Container, verb)),
    }
}

async fn offer(context: &Context<'_>, verb: Verb) -> ApiResult<Reply> {
    match verb {
        Verb::Feed => offers::feed_or_query(context, Listing::Feed).await,
        Verb::Query => offers::feed_or_query(context, Listing::Query).await,
        Verb::Read => offers::read(context).await,
        Verb::Replace => offers::replace(context).await,
        Verb::Create | Verb::Upsert | Verb::Delete => Err(not_in_row(Resource::Offer, verb)),
    }
}

/// Permissions: served over the generic catalog like any child, and each answer carries a
/// fresh token.
async fn permission(context: &Context<'_>, verb: Verb) -> ApiResult<Reply> {
    match verb {
        Verb::Feed => users::feed_or_query_permissions(context, Listing::Feed).await,
        Verb::Query => users::feed_or_query_permissions(context, Listing::Query).await,
        Verb::Create => users::create_permission(context).await,
        Verb::Upsert => users::upsert_permission(context).await,
        Verb::Read => users::read_permission(context),
        Verb::Replace => users::replace_permission(context).await,
        Verb::Delete => users::delete_permission(context).await,
    }
}

/// Every other child kind of the engine's generic catalog, served the same way.
async fn child(context: &Context<'_>, kind: ResourceKind, verb: Verb) -> ApiResult<Reply> {
    match verb {
        Verb::Feed => children::feed_or_query(context, kind, Listing::Feed).await,
        Verb::Query => children::feed_or_query(context, kind, Listing::Query).await,
        Verb::Create => children::create(context, kind).await,
        Verb::Upsert => children::upsert(context, kind).await,
        // No conflict is ever stored: a read by id checks the container exists first.
        Verb::Read if kind == ResourceKind::Conflict => children::read_conflict(context),
        Verb::Read => children::read(context, kind),
        Verb::Replace => children::replace(context, kind).await,
        Verb::Delete => children::delete(context, kind).await,
    }
}
