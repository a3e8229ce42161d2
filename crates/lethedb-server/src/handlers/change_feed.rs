//! The change feed: `GET .../docs` with `A-IM: Incremental feed` (latest version) or
//! `A-IM: Full-Fidelity Feed` (all versions and deletes), read per partition key range, EPK
//! range or logical partition, from the start the `If-None-Match`/`If-Modified-Since` headers
//! name. What the feed holds is the engine's (`change_feed.rs`); this file reads the headers and
//! writes the page, its `etag` (the cursor) and the 304 that ends the SDKs' polling loops.

use super::context::Context;
use crate::error::{ApiError, ApiResult, Code};
use crate::request::header;
use crate::respond::Reply;
use axum::http::StatusCode;
use lethedb_engine::{
    request_units, ChangeFeedMode, ChangeFeedRequest, ChangeFeedStart, Container, FeedCursor,
};
use std::sync::Arc;

/// The start position: a continuation (`If-None-Match`: an earlier page's ETag) wins over a point in time
/// (`If-Modified-Since`, which the SDKs send on every request); `*` is now; neither is the
/// beginning.
fn start(context: &Context<'_>) -> ApiResult<ChangeFeedStart> {
    let invalid = |name: &str, value: &str| {
        ApiError::new(
            Code::BadRequestHeader,
            format!("The value '{value}' of header {name} is invalid."),
        )
    };
    if let Some(value) = context.head.if_none_match {
        let trimmed = value.trim();
        if trimmed == "*" {
            return Ok(ChangeFeedStart::Now);
        }
        let cursor = FeedCursor::parse(trimmed.trim_start_matches("W/").trim_matches('"'))
            .ok_or_else(|| invalid("If-None-Match", value))?;
        return Ok(ChangeFeedStart::Continuation { cursor });
    }
    if let Some(value) = header(context.headers, "if-modified-since") {
        let time =
            httpdate::parse_http_date(value).map_err(|_| invalid("If-Modified-Since", value))?;
        let ms = time
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| {
                i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
            });
        return Ok(ChangeFeedStart::PointInTime { ms });
    }
    Ok(ChangeFeedStart::Beginning)
}

pub async fn read(context: &Context<'_>, container: &Arc<Container>) -> ApiResult<Reply> {
    let head = context.head;
    // The EPK headers narrow the read only when `x-ms-read-key-type` says they are EPKs (the
    // SDKs always send it with them).
    let epk = header(context.headers, "x-ms-read-key-type")
        .is_none_or(|kind| kind.eq_ignore_ascii_case("EffectivePartitionKeyRange"))
        .then_some(head.effective_range.as_ref())
        .flatten();
    let request = ChangeFeedRequest {
        // The classifier made this operation only for an `A-IM` that names a mode.
        mode: head.change_feed.unwrap_or(ChangeFeedMode::LatestVersion),
        start: start(context)?,
        partition_key: head.partition_key()?.cloned(),
        filter: container.range_filter(head.range_id, epk)?,
        page_items_max: head.page_items_max()?,
    };
    let page = context
        .state
        .engine
        .read_change_feed(container, request)
        .await?;
    let etag = format!("\"{}\"", page.etag);
    let reply = if page.not_modified {
        Reply::empty(StatusCode::NOT_MODIFIED).charge(1.0)
    } else {
        let bytes: usize = page.entries.iter().map(Vec::len).sum();
        Reply::feed(
            container.rid(),
            "Documents",
            page.entries.iter(),
            None,
            request_units::read(bytes),
        )
    };
    let lsn = context.scoped_lsn(container, head.range_id, page.lsn).await;
    Ok(reply
        .header("etag", etag)
        .scoped_to(container, context.path, lsn, head.range_id))
}
