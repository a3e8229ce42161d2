//! What every handler receives: the request as classified and authenticated, the shared
//! helper for listing catalog resources as a feed or a query, and the session LSN of the range
//! an answer is scoped to.
//!
//! Its own room below the handlers, so that they import it and `route` imports them, never
//! the other way round.

use crate::error::ApiResult;
use crate::head::RequestHead;
use crate::request::{feed_request, query_request};
use crate::respond::Reply;
use crate::routes::ResourcePath;
use crate::state::AppState;
use axum::body::Bytes;
use axum::http::HeaderMap;
use lethedb_engine::{Container, QueryRequest};
use serde_json::Value;
use std::future::Future;

/// One classified, authenticated request as the handlers see it.
pub struct Context<'a> {
    pub state: &'a AppState,
    /// The raw headers, for the few that one handler alone reads.
    pub headers: &'a HeaderMap,
    /// The headers the dispatcher parsed once: partition key, preconditions, paging, ...
    pub head: &'a RequestHead<'a>,
    /// The path with resource ids already resolved to ids.
    pub path: &'a ResourcePath,
    pub body: &'a Bytes,
}

impl Context<'_> {
    /// The session LSN of partition key range `range` of `container` (the sum of its shards'
    /// sequences, `lethedb_engine::Engine::range_session_lsn`) for an answer that read or wrote
    /// the shard LSN `seen`. When the store cannot be read for it, the answer, which itself
    /// succeeded, carries `fallback`.
    pub async fn range_lsn(
        &self,
        container: &Container,
        range: u32,
        seen: Option<u64>,
        fallback: u64,
    ) -> u64 {
        self.state
            .engine
            .range_session_lsn(container, range, seen)
            .await
            .unwrap_or(fallback)
    }

    /// The session LSN of a feed or query page about the range `range_id` names, else
    /// (every range) the container's version `lsn` the page read.
    pub async fn scoped_lsn(&self, container: &Container, range_id: Option<&str>, lsn: u64) -> u64 {
        match range_id.and_then(|id| container.range(id).ok()) {
            Some(range) => self.range_lsn(container, range.id, None, lsn).await,
            None => lsn,
        }
    }
}

/// How a list of resources was asked for: a read feed (GET) or a query (POST).
#[derive(Clone, Copy)]
pub enum Listing {
    Feed,
    Query,
}

impl Listing {
    /// The query the listing runs: the client's, or `SELECT * FROM root` for a read feed.
    pub fn request(self, context: &Context<'_>) -> ApiResult<QueryRequest> {
        match self {
            Listing::Feed => feed_request(context.head),
            Listing::Query => query_request(context.head, context.body),
        }
    }
}

/// Runs a listing over catalog resources and answers one feed page. The request is read
/// before the resources are listed (the listing is a future, awaited only then), so a malformed
/// query is a 400 even when the parent is gone.
pub async fn list_resources(
    context: &Context<'_>,
    listing: Listing,
    name: &str,
    resources: impl Future<Output = ApiResult<Vec<Value>>>,
    rid: impl FnOnce() -> ApiResult<String>,
) -> ApiResult<Reply> {
    let request = listing.request(context)?;
    let page = context
        .state
        .engine
        .query_resources(&resources.await?, &request)
        .await?;
    Ok(Reply::value_feed(
        &rid()?,
        name,
        &page.items,
        page.continuation,
        1.0,
    ))
}
