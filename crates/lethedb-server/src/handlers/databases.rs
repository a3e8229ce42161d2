//! Databases: list or query them, create, read and delete one.
//!
//! Database rules (ids, throughput, deleting what is inside) are the engine's; this module
//! maps them to HTTP.

use super::context::{list_resources, Context, Listing};
use crate::error::ApiResult;
use crate::request::{parse_json, throughput};
use crate::respond::Reply;
use axum::http::StatusCode;
use lethedb_engine::request_units;

pub async fn feed_or_query(context: &Context<'_>, listing: Listing) -> ApiResult<Reply> {
    let engine = &context.state.engine;
    list_resources(
        context,
        listing,
        "Databases",
        async { Ok(engine.list_databases().await?) },
        || Ok(String::new()),
    )
    .await
}

pub async fn create(context: &Context<'_>) -> ApiResult<Reply> {
    let resource = context
        .state
        .engine
        .create_database(parse_json(context.body)?, throughput(context.headers)?)
        .await?;
    Ok(Reply::value(StatusCode::CREATED, &resource).charge(request_units::CATALOG_WRITE))
}

pub fn read(context: &Context<'_>) -> ApiResult<Reply> {
    let resource = context.state.engine.read_database(context.path.id(0))?;
    Ok(Reply::value(StatusCode::OK, &resource).charge(request_units::CATALOG_READ))
}

pub async fn delete(context: &Context<'_>) -> ApiResult<Reply> {
    context
        .state
        .engine
        .delete_database(context.path.id(0))
        .await?;
    Ok(Reply::empty(StatusCode::NO_CONTENT).charge(request_units::CATALOG_WRITE))
}
