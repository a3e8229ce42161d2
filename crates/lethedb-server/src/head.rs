//! The request head: the protocol headers the dispatcher, the classifier, authorization and
//! more than one handler read, parsed once per request into types, in one pass over the
//! headers.
//!
//! Parsing never fails here. A value that cannot be parsed is kept as the 400 it makes, and
//! answered only by the operations that read it (a bad `x-ms-max-item-count` fails a feed, not a
//! point read), as when each handler parsed its own. Values the service ignores when they are
//! unknown (consistency, priority, throughput bucket) are kept as absent instead. Headers that
//! one handler alone reads (a permission's token lifetime, a script's logging flag, a batch's
//! atomicity, trigger lists) stay with that handler; authentication headers are `access.rs`'s.

use crate::error::{ApiError, ApiResult, Code};
use axum::http::{HeaderMap, HeaderValue};
use lethedb_engine::{ChangeFeedMode, PartitionKeyValue, BUCKET_IDS};

/// The request header that caps continuation tokens, in KiB.
pub const CONTINUATION_LIMIT_HEADER: &str = "x-ms-documentdb-responsecontinuationtokenlimitinkb";

/// The consistency a request asks for (`x-ms-consistency-level`). Every read is strongly
/// consistent here, so each level is served as asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsistencyLevel {
    Strong,
    BoundedStaleness,
    Session,
    ConsistentPrefix,
    Eventual,
}

/// The priority a request asks for under throttling (`x-ms-cosmos-priority-level`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriorityLevel {
    High,
    Low,
}

/// The headers of one request, parsed. Text values borrow from the request's headers.
#[derive(Clone, Debug)]
pub struct RequestHead<'a> {
    /// `x-ms-documentdb-isquery: true`, or a `application/query+json` body.
    pub is_query: bool,
    /// `x-ms-documentdb-is-upsert: true`.
    pub is_upsert: bool,
    /// `x-ms-cosmos-is-batch-request: true`.
    pub is_batch: bool,
    /// `x-ms-cosmos-is-query-plan-request: true`.
    pub is_query_plan: bool,
    /// `A-IM`: the change feed's mode, when it names one.
    pub change_feed: Option<ChangeFeedMode>,
    partition_key: Result<Option<PartitionKeyValue>, ApiError>,
    /// `x-ms-documentdb-partitionkeyrangeid`: the range's id (a `collection rid,id` pair names
    /// the range after its comma).
    pub range_id: Option<&'a str>,
    /// `x-ms-start-epk` and `x-ms-end-epk`, upper-cased.
    pub effective_range: Option<(String, String)>,
    pub if_match: Option<&'a str>,
    pub if_none_match: Option<&'a str>,
    pub consistency: Option<ConsistencyLevel>,
    pub session_token: Option<&'a str>,
    /// `x-ms-continuation`, when not empty.
    pub continuation: Option<&'a str>,
    page_items_max: Result<Option<usize>, ApiError>,
    continuation_limit_kb: Result<Option<u64>, ApiError>,
    /// `x-ms-documentdb-query-enablecrosspartition: true`.
    pub enable_cross_partition: bool,
    /// `x-ms-documentdb-populatequerymetrics: true`: answer with the query's metrics.
    pub populate_query_metrics: bool,
    /// `x-ms-cosmos-populateindexmetrics: true`: answer with the index utilization report.
    pub populate_index_metrics: bool,
    /// `Prefer: return=minimal`: writes answer without the document.
    pub prefers_minimal: bool,
    /// `x-ms-cosmos-priority-level`: low-priority requests are throttled first.
    pub priority: Option<PriorityLevel>,
    throughput_bucket: Result<Option<u8>, ApiError>,
}

/// The first value of each header the head reads, before parsing.
#[derive(Default)]
struct RawHead<'a> {
    is_query: Option<&'a HeaderValue>,
    content_type: Option<&'a HeaderValue>,
    is_upsert: Option<&'a HeaderValue>,
    is_batch: Option<&'a HeaderValue>,
    is_query_plan: Option<&'a HeaderValue>,
    a_im: Option<&'a HeaderValue>,
    partition_key: Option<&'a HeaderValue>,
    range_id: Option<&'a HeaderValue>,
    start_epk: Option<&'a HeaderValue>,
    end_epk: Option<&'a HeaderValue>,
    if_match: Option<&'a HeaderValue>,
    if_none_match: Option<&'a HeaderValue>,
    consistency: Option<&'a HeaderValue>,
    session_token: Option<&'a HeaderValue>,
    continuation: Option<&'a HeaderValue>,
    page_items_max: Option<&'a HeaderValue>,
    continuation_limit_kb: Option<&'a HeaderValue>,
    enable_cross_partition: Option<&'a HeaderValue>,
    populate_query_metrics: Option<&'a HeaderValue>,
    populate_index_metrics: Option<&'a HeaderValue>,
    prefer: Option<&'a HeaderValue>,
    priority: Option<&'a HeaderValue>,
    throughput_bucket: Option<&'a HeaderValue>,
}

impl<'a> RawHead<'a> {
    /// Keeps the first value of every header the head reads (what `HeaderMap::get` would give).
    fn collect(headers: &'a HeaderMap) -> RawHead<'a> {
        let mut raw = RawHead::default();
        for (name, value) in headers {
            let slot = match name.as_str() {
                "x-ms-documentdb-isquery" => &mut raw.is_query,
                "content-type" => &mut raw.content_type,
                "x-ms-documentdb-is-upsert" => &mut raw.is_upsert,
                "x-ms-cosmos-is-batch-request" => &mut raw.is_batch,
                "x-ms-cosmos-is-query-plan-request" => &mut raw.is_query_plan,
                "a-im" => &mut raw.a_im,
                "x-ms-documentdb-partitionkey" => &mut raw.partition_key,
                "x-ms-documentdb-partitionkeyrangeid" => &mut raw.range_id,
                "x-ms-start-epk" => &mut raw.start_epk,
                "x-ms-end-epk" => &mut raw.end_epk,
                "if-match" => &mut raw.if_match,
                "if-none-match" => &mut raw.if_none_match,
                "x-ms-consistency-level" => &mut raw.consistency,
                "x-ms-session-token" => &mut raw.session_token,
                "x-ms-continuation" => &mut raw.continuation,
                "x-ms-max-item-count" => &mut raw.page_items_max,
                CONTINUATION_LIMIT_HEADER => &mut raw.continuation_limit_kb,
                "x-ms-documentdb-query-enablecrosspartition" => &mut raw.enable_cross_partition,
                "x-ms-documentdb-populatequerymetrics" => &mut raw.populate_query_metrics,
                "x-ms-cosmos-populateindexmetrics" => &mut raw.populate_index_metrics,
                "prefer" => &mut raw.prefer,
                "x-ms-cosmos-priority-level" => &mut raw.priority,
                "x-ms-cosmos-throughput-bucket" => &mut raw.throughput_bucket,
                _ => continue,
            };
            slot.get_or_insert(value);
        }
        raw
    }
}

/// A header's value, when present and visible ASCII.
fn text(value: Option<&HeaderValue>) -> Option<&str> {
    value.and_then(|value| value.to_str().ok())
}

/// Whether a flag header says `true` (the SDKs send `True`).
fn is_true(value: Option<&HeaderValue>) -> bool {
    text(value).is_some_and(|text| text.eq_ignore_ascii_case("true"))
}

impl<'a> RequestHead<'a> {
    pub fn parse(headers: &'a HeaderMap) -> RequestHead<'a> {
        let raw = RawHead::collect(headers);
        RequestHead {
            is_query: is_true(raw.is_query)
                || text(raw.content_type)
                    .is_some_and(|value| value.starts_with("application/query+json")),
            is_upsert: is_true(raw.is_upsert),
            is_batch: is_true(raw.is_batch),
            is_query_plan: is_true(raw.is_query_plan),
            change_feed: text(raw.a_im).and_then(change_feed_mode),
            partition_key: text(raw.partition_key)
                .map(|text| PartitionKeyValue::parse_json_text(text).map_err(ApiError::from))
                .transpose(),
            range_id: text(raw.range_id)
                .map(|value| value.rsplit(',').next().unwrap_or(value).trim()),
            effective_range: text(raw.start_epk)
                .zip(text(raw.end_epk))
                .map(|(start, end)| (start.to_ascii_uppercase(), end.to_ascii_uppercase())),
            if_match: text(raw.if_match),
            if_none_match: text(raw.if_none_match),
            consistency: text(raw.consistency).and_then(consistency_level),
            session_token: text(raw.session_token),
            continuation: text(raw.continuation).filter(|token| !token.is_empty()),
            page_items_max: text(raw.page_items_max).map_or(Ok(None), page_items_max),
            continuation_limit_kb: text(raw.continuation_limit_kb)
                .map(continuation_limit_kb)
                .transpose(),
            enable_cross_partition: is_true(raw.enable_cross_partition),
            populate_query_metrics: is_true(raw.populate_query_metrics),
            populate_index_metrics: is_true(raw.populate_index_metrics),
            prefers_minimal: text(raw.prefer).is_some_and(|value| value.contains("return=minimal")),
            priority: text(raw.priority).and_then(priority_level),
            throughput_bucket: text(raw.throughput_bucket)
                .map(throughput_bucket)
                .transpose(),
        }
    }

    /// `x-ms-documentdb-partitionkey`: a JSON array of the key's parts, the engine's one
    /// grammar for it; a value outside it is the engine's 400.
    pub fn partition_key(&self) -> ApiResult<Option<&PartitionKeyValue>> {
        self.partition_key
            .as_ref()
            .map(Option::as_ref)
            .map_err(Clone::clone)
    }

    /// `x-ms-max-item-count`: a page's size; -1 and 0 ask for the service's dynamic size.
    pub fn page_items_max(&self) -> ApiResult<Option<usize>> {
        self.page_items_max.clone()
    }

    /// `x-ms-documentdb-responsecontinuationtokenlimitinkb`: the largest continuation token the
    /// client accepts, in KiB (0 or more; absent: no limit).
    pub fn continuation_limit_kb(&self) -> ApiResult<Option<u64>> {
        self.continuation_limit_kb.clone()
    }

    /// `x-ms-cosmos-throughput-bucket`: the bucket (1 to 5) whose share of the container's
    /// throughput an item operation draws on; another value is a 400, as the service's
    /// throughput-bucket FAQ says (its message is LetheDB's).
    pub fn throughput_bucket(&self) -> ApiResult<Option<u8>> {
        self.throughput_bucket.clone()
    }
}

fn change_feed_mode(value: &str) -> Option<ChangeFeedMode> {
    if value.eq_ignore_ascii_case("incremental feed") {
        Some(ChangeFeedMode::LatestVersion)
    } else if value.eq_ignore_ascii_case("full-fidelity feed") {
        Some(ChangeFeedMode::AllVersionsAndDeletes)
    } else {
        None
    }
}

fn page_items_max(text: &str) -> ApiResult<Option<usize>> {
    let count: i64 = text.trim().parse().map_err(|_| {
        ApiError::new(
            Code::BadRequestHeader,
            format!("Invalid value '{text}' for header x-ms-max-item-count."),
        )
    })?;
    Ok((count > 0).then_some(count as usize))
}

fn throughput_bucket(text: &str) -> ApiResult<u8> {
    text.trim()
        .parse::<u8>()
        .ok()
        .filter(|bucket| BUCKET_IDS.contains(bucket))
        .ok_or_else(|| {
            ApiError::new(
                Code::BadRequestHeader,
                format!("Invalid value '{text}' for header x-ms-cosmos-throughput-bucket: a throughput bucket is a whole number from 1 to 5."),
            )
        })
}

fn continuation_limit_kb(text: &str) -> ApiResult<u64> {
    text.trim().parse::<u64>().map_err(|_| {
        ApiError::new(
            Code::BadRequestHeader,
            format!("Invalid value '{text}' for header {CONTINUATION_LIMIT_HEADER}."),
        )
    })
}

/// A level by its name in any case; an unknown one is as if none were sent.
fn consistency_level(value: &str) -> Option<ConsistencyLevel> {
    [
        ("Strong", ConsistencyLevel::Strong),
        ("BoundedStaleness", ConsistencyLevel::BoundedStaleness),
        ("Session", ConsistencyLevel::Session),
        ("ConsistentPrefix", ConsistencyLevel::ConsistentPrefix),
        ("Eventual", ConsistencyLevel::Eventual),
    ]
    .into_iter()
    .find(|(name, _)| value.trim().eq_ignore_ascii_case(name))
    .map(|(_, level)| level)
}

/// `High` or `Low` in any case; anything else is as if none were sent.
fn priority_level(value: &str) -> Option<PriorityLevel> {
    match value.trim() {
        high if high.eq_ignore_ascii_case("high") => Some(PriorityLevel::High),
        low if low.eq_ignore_ascii_case("low") => Some(PriorityLevel::Low),
        _ => None,
    }
}
