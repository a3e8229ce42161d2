//! `GET /_lethedb/ttl/dbs/{db}/colls/{coll}`: a container's time to live as the server sees it,
//! for the explorer's countdowns, histogram, sweeper chart and TTL-change preview.
//!
//! Not a Cosmos resource, but authenticated exactly like one: a master-key signature over
//! `get`, `colls`, `dbs/{db}/colls/{coll}` and the date, as for reading the container. Anything
//! else (no signature, a wrong one, a resource or Entra ID token) is refused before the catalog
//! is read (`index_check::signed_container_path`), so the endpoint tells a caller without the
//! key nothing, not even what exists. The
//! figures are the engine's (`Engine::ttl_overview`); this module only authenticates, reads the
//! preview parameter and shapes the JSON.

use super::index_check::signed_container_path;
use crate::error::ApiResult;
use crate::respond::Reply;
use crate::state::AppState;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use lethedb_engine::{parse_default_ttl, ExpiringCounts, TtlOverview};
use serde_json::{json, Value};

/// Where the endpoint lives; the rest of the path is the container's Cosmos path.
pub const TTL_OVERVIEW_PREFIX: &str = "/_lethedb/ttl";

/// The query parameter that asks for a preview of another `defaultTtl`: `off`, `-1`, or a
/// number of seconds.
const PREVIEW_PARAMETER: &str = "previewDefaultTtl";

/// Answers one request; `path` is what follows [`TTL_OVERVIEW_PREFIX`].
pub async fn ttl_overview(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
    path: &str,
    query: Option<&str>,
) -> ApiResult<Response> {
    // The signature first: nothing below may answer differently for a caller without the key.
    let target = (TTL_OVERVIEW_PREFIX, path);
    let resource = signed_container_path(state, method, headers, target, "time-to-live overview")?;
    let proposed = match preview_parameter(query) {
        None => None,
        Some(text) => Some(parse_proposed(&text)?),
    };
    let container = state
        .engine
        .read_container(resource.id(0), resource.id(1))?;
    let overview = state.engine.ttl_overview(&container, proposed).await?;
    let mut body = overview_json(&overview);
    body["database"] = json!(container.database_id);
    body["container"] = json!(container.id);
    Ok(Reply::value(StatusCode::OK, &body)
        .header("cache-control", "no-store")
        .finish())
}

fn preview_parameter(query: Option<&str>) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        (name == PREVIEW_PARAMETER).then(|| {
            percent_encoding::percent_decode_str(value)
                .decode_utf8_lossy()
                .into_owned()
        })
    })
}

/// `off` (or empty) turns TTL off; anything else must be a valid `defaultTtl`.
fn parse_proposed(text: &str) -> ApiResult<Option<i64>> {
    let text = text.trim();
    if text.is_empty() || text.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let value = text
        .parse::<i64>()
        .map_or_else(|_| Value::String(text.to_string()), Value::from);
    Ok(parse_default_ttl(Some(&value))?)
}

fn counts_json(counts: &ExpiringCounts) -> Value {
    json!({
        "nextMinute": counts.next_minute,
        "nextHour": counts.next_hour,
        "nextDay": counts.next_day,
    })
}

fn overview_json(overview: &TtlOverview) -> Value {
    let mut body = json!({
        "nowMs": overview.now_ms,
        "defaultTtl": overview.default_ttl_secs,
        "expiring": counts_json(&overview.expiring),
        "expiredUnswept": overview.expired_unswept,
        "oldestExpiredAgeMs": overview.oldest_expired_age_ms,
        "sweeper": {
            "deletedTotal": overview.deleted_total,
            // Two decimals are plenty for a chart, and keep the JSON short.
            "deletionsPerSec": (overview.deletions_per_sec * 100.0).round() / 100.0,
        },
        "complete": overview.complete,
    });
    if let Some(preview) = &overview.preview {
        body["preview"] = json!({
            "defaultTtl": preview.default_ttl_secs,
            "expireAtOnce": preview.expire_at_once,
            "expiring": counts_json(&preview.expiring),
        });
    }
    body
}
