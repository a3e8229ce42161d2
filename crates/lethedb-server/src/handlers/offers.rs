//! Offers: the throughput of databases and containers as the SDKs read and replace it.
//!
//! Offers are derived from the catalog by the engine; this module only lists, reads and
//! replaces them.

use super::context::{list_resources, Context, Listing};
use crate::error::ApiResult;
use crate::request::parse_json;
use crate::respond::Reply;
use axum::http::StatusCode;
use lethedb_engine::request_units;

pub async fn feed_or_query(context: &Context<'_>, listing: Listing) -> ApiResult<Reply> {
    let engine = &context.state.engine;
    list_resources(
        context,
        listing,
        "Offers",
        async { Ok(engine.list_offers().await?) },
        || Ok(String::new()),
    )
    .await
}

pub async fn read(context: &Context<'_>) -> ApiResult<Reply> {
    let offer = context.state.engine.read_offer(context.path.id(0)).await?;
    Ok(Reply::value(StatusCode::OK, &offer).charge(request_units::CATALOG_READ))
}

pub async fn replace(context: &Context<'_>) -> ApiResult<Reply> {
    let replaced = context
        .state
        .engine
        .replace_offer(context.path.id(0), parse_json(context.body)?)
        .await?;
    Ok(Reply::value(StatusCode::OK, &replaced).charge(request_units::CATALOG_WRITE))
}
