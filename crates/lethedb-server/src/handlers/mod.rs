//! Route handlers, one room per resource: they turn an [`Operation`] into engine calls and
//! engine results into the service's JSON shapes and headers.
//!
//! Handlers keep no state and apply no resource rules of their own (validation of ids,
//! partition keys and TTL is the engine's). They do not decide what a request is either:
//! [`route`] receives the operation already classified and matches on it exhaustively, so an
//! operation without a handler does not compile.

mod account;
mod batch;
mod change_feed;
mod children;
mod containers;
mod context;
mod databases;
mod internal;
mod items;
mod offers;
mod scripts;
mod ttl;
mod users;

pub use context::Context;
pub use internal::{certificate, metrics, metrics_not_public, stats, STATS_PATH};
pub use ttl::{ttl_overview, TTL_OVERVIEW_PREFIX};

use context::Listing;

use crate::error::{ApiError, ApiResult, Code};
use crate::operation::Operation;
use crate::respond::Reply;
use lethedb_engine::{Container, ErrorCode, ResourceKind};
use std::sync::Arc;

/// Runs `operation`. Item operations get the container the dispatcher loaded and admitted.
pub async fn route(
    operation: Operation,
    context: &Context<'_>,
    admitted: Option<&Arc<Container>>,
) -> ApiResult<Reply> {
    let container = || {
        admitted.ok_or_else(|| {
            ApiError::new(
                Code::Engine(ErrorCode::Internal),
                format!(
                    "{} reached its handler without an admitted container",
                    operation.name()
                ),
            )
        })
    };
    match operation {
        Operation::ReadAccount => Ok(account::read(context)),
        Operation::ReadDatabaseFeed => databases::feed_or_query(context, Listing::Feed).await,
        Operation::QueryDatabases => databases::feed_or_query(context, Listing::Query).await,
        Operation::CreateDatabase => databases::create(context).await,
        Operation::ReadDatabase => databases::read(context),
        Operation::DeleteDatabase => databases::delete(context).await,
        Operation::ReadContainerFeed => containers::feed_or_query(context, Listing::Feed).await,
        Operation::QueryContainers => containers::feed_or_query(context, Listing::Query).await,
        Operation::CreateContainer => containers::create(context).await,
        Operation::ReadContainer => containers::read(context).await,
        Operation::ReplaceContainer => containers::replace(context).await,
        Operation::DeleteContainer => containers::delete(context).await,
        Operation::ReadPartitionKeyRanges => containers::partition_key_ranges(context),
        Operation::DeletePartition => containers::delete_partition(context).await,
        Operation::ReadFeed => items::read_feed(context, container()?).await,
        Operation::ReadChangeFeed => change_feed::read(context, container()?).await,
        Operation::Query => items::query(context, container()?).await,
        Operation::QueryPlan => items::query_plan(context, container()?).await,
        Operation::Batch => batch::execute(context, container()?).await,
        Operation::Create => {
            items::create(context, container()?, lethedb_engine::WriteMode::Create).await
        }
        Operation::Upsert => {
            items::create(context, container()?, lethedb_engine::WriteMode::Upsert).await
        }
        Operation::Read => items::read(context, container()?),
        Operation::Replace => items::replace(context, container()?).await,
        Operation::Patch => items::patch(context).await,
        Operation::Delete => items::delete(context, container()?).await,
        Operation::ReadOfferFeed => offers::feed_or_query(context, Listing::Feed).await,
        Operation::QueryOffers => offers::feed_or_query(context, Listing::Query).await,
        Operation::ReadOffer => offers::read(context),
        Operation::ReplaceOffer => offers::replace(context).await,
        Operation::ReadUserFeed => children::feed(context, ResourceKind::User).await,
        Operation::ReadStoredProcedureFeed => {
            children::feed(context, ResourceKind::StoredProcedure).await
        }
        Operation::ReadUserDefinedFunctionFeed => {
            children::feed(context, ResourceKind::UserDefinedFunction).await
        }
        Operation::ReadTriggerFeed => children::feed(context, ResourceKind::Trigger).await,
        Operation::ReadConflictFeed => children::feed(context, ResourceKind::Conflict).await,
        Operation::QueryConflicts => {
            children::feed_or_query(context, ResourceKind::Conflict, Listing::Query).await
        }
        Operation::ReadConflict => children::read_conflict(context),
        Operation::CreateUser => children::create(context, ResourceKind::User).await,
        Operation::QueryUsers => {
            children::feed_or_query(context, ResourceKind::User, Listing::Query).await
        }
        Operation::ReadUser => children::read(context, ResourceKind::User),
        Operation::ReplaceUser => children::replace(context, ResourceKind::User).await,
        Operation::UpsertUser => children::upsert(context, ResourceKind::User).await,
        Operation::DeleteUser => children::delete(context, ResourceKind::User).await,
        Operation::ReadPermissionFeed => {
            users::feed_or_query_permissions(context, Listing::Feed).await
        }
        Operation::QueryPermissions => {
            users::feed_or_query_permissions(context, Listing::Query).await
        }
        Operation::CreatePermission => users::create_permission(context).await,
        Operation::ReadPermission => users::read_permission(context),
        Operation::ReplacePermission => users::replace_permission(context).await,
        Operation::UpsertPermission => users::upsert_permission(context).await,
        Operation::DeletePermission => users::delete_permission(context).await,
        Operation::ExecuteStoredProcedure => scripts::execute(context, container()?).await,
        Operation::CreateStoredProcedure => {
            children::create(context, ResourceKind::StoredProcedure).await
        }
        Operation::QueryStoredProcedures => {
            children::feed_or_query(context, ResourceKind::StoredProcedure, Listing::Query).await
        }
        Operation::ReadStoredProcedure => children::read(context, ResourceKind::StoredProcedure),
        Operation::ReplaceStoredProcedure => {
            children::replace(context, ResourceKind::StoredProcedure).await
        }
        Operation::UpsertStoredProcedure => {
            children::upsert(context, ResourceKind::StoredProcedure).await
        }
        Operation::DeleteStoredProcedure => {
            children::delete(context, ResourceKind::StoredProcedure).await
        }
        Operation::CreateTrigger => children::create(context, ResourceKind::Trigger).await,
        Operation::QueryTriggers => {
            children::feed_or_query(context, ResourceKind::Trigger, Listing::Query).await
        }
        Operation::ReadTrigger => children::read(context, ResourceKind::Trigger),
        Operation::ReplaceTrigger => children::replace(context, ResourceKind::Trigger).await,
        Operation::UpsertTrigger => children::upsert(context, ResourceKind::Trigger).await,
        Operation::DeleteTrigger => children::delete(context, ResourceKind::Trigger).await,
        Operation::CreateUserDefinedFunction => {
            children::create(context, ResourceKind::UserDefinedFunction).await
        }
        Operation::QueryUserDefinedFunctions => {
            children::feed_or_query(context, ResourceKind::UserDefinedFunction, Listing::Query)
                .await
        }
        Operation::ReadUserDefinedFunction => {
            children::read(context, ResourceKind::UserDefinedFunction)
        }
        Operation::ReplaceUserDefinedFunction => {
            children::replace(context, ResourceKind::UserDefinedFunction).await
        }
        Operation::UpsertUserDefinedFunction => {
            children::upsert(context, ResourceKind::UserDefinedFunction).await
        }
        Operation::DeleteUserDefinedFunction => {
            children::delete(context, ResourceKind::UserDefinedFunction).await
        }
    }
}
