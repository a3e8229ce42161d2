//! Building responses: bodies, the headers every response carries, and the per-resource ones
//! (ETag, session token, LSN, request charge) the SDKs read.
//!
//! This module shapes what goes out; it calls no engine and decides no status on its own.

use crate::activity::activity_id;
use crate::json_text::ObjectWriter;
use crate::routes::ResourcePath;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use lethedb_engine::Container;
use std::time::Duration;

/// The REST API version LetheDB answers as.
const SCHEMA_VERSION: &str = "1.18";
const SERVICE_VERSION: &str = "version=2.14.0.0";

/// The names every response carries, made once: a name made from a string is checked and
/// hashed again at every use, which a profile of point reads found in 4% of their instructions.
const REQUEST_DURATION: HeaderName = HeaderName::from_static("x-ms-request-duration-ms");
const ACTIVITY_ID: HeaderName = HeaderName::from_static("x-ms-activity-id");
const SCHEMA_VERSION_NAME: HeaderName = HeaderName::from_static("x-ms-schemaversion");
const SERVICE_VERSION_NAME: HeaderName = HeaderName::from_static("x-ms-serviceversion");
const GATEWAY_VERSION_NAME: HeaderName = HeaderName::from_static("x-ms-gatewayversion");
const REQUEST_CHARGE: HeaderName = HeaderName::from_static("x-ms-request-charge");
const SESSION_TOKEN: HeaderName = HeaderName::from_static("x-ms-session-token");
const LSN: HeaderName = HeaderName::from_static("lsn");
const GLOBAL_COMMITTED_LSN: HeaderName = HeaderName::from_static("x-ms-global-committed-lsn");
const CONTENT_PATH: HeaderName = HeaderName::from_static("x-ms-content-path");
const ALT_CONTENT_PATH: HeaderName = HeaderName::from_static("x-ms-alt-content-path");
const ITEM_COUNT: HeaderName = HeaderName::from_static("x-ms-item-count");
const CONTINUATION: HeaderName = HeaderName::from_static("x-ms-continuation");
pub const PARTITION_KEY_RANGE_ID: HeaderName =
    HeaderName::from_static("x-ms-documentdb-partitionkeyrangeid");
/// How many headers [`add_common_headers`] may add.
const COMMON_HEADERS: usize = 6;

/// A response under construction.
pub struct Reply {
    status: StatusCode,
    body: Vec<u8>,
    headers: Vec<(HeaderName, String)>,
}

impl Reply {
    pub fn json(status: StatusCode, body: Vec<u8>) -> Reply {
        Reply {
            status,
            body,
            headers: Vec::new(),
        }
    }

    pub fn value(status: StatusCode, value: &serde_json::Value) -> Reply {
        Reply::json(status, lethedb_engine::to_json_vec(value))
    }

    pub fn empty(status: StatusCode) -> Reply {
        Reply::json(status, Vec::new())
    }

    pub fn header(self, name: &'static str, value: impl Into<String>) -> Reply {
        self.named(HeaderName::from_static(name), value)
    }

    /// A header whose name was made once (the constants below): what every point operation's
    /// reply carries, so its names are not checked again on every reply.
    pub fn named(mut self, name: HeaderName, value: impl Into<String>) -> Reply {
        self.headers.push((name, value.into()));
        self
    }

    /// The request charge in request units.
    pub fn charge(self, request_units: f64) -> Reply {
        self.named(REQUEST_CHARGE, charge_text(request_units))
    }

    /// `Content-Location`: the request's URL on the advertised endpoint, on a success only:
    /// the path with anything after `?` (which belongs to the last id, see `cosmos.rs`).
    pub fn content_location(self, endpoint: &str, (path, query): (&str, Option<&str>)) -> Reply {
        if !self.status.is_success() {
            return self;
        }
        let endpoint = endpoint.trim_end_matches('/');
        let query_len = query.map_or(0, |query| query.len() + 1);
        let mut location = String::with_capacity(endpoint.len() + path.len() + query_len);
        location.push_str(endpoint);
        location.push_str(path);
        if let Some(query) = query {
            location.push('?');
            location.push_str(query);
        }
        self.named(header::CONTENT_LOCATION, location)
    }

    /// The continuation token set on this reply, if any.
    pub fn continuation(&self) -> Option<&str> {
        self.headers
            .iter()
            .find(|(name, _)| name == "x-ms-continuation")
            .map(|(_, value)| value.as_str())
    }

    /// The request charge set on this reply, if any.
    pub fn request_charge(&self) -> f64 {
        self.headers
            .iter()
            .rev()
            .find(|(name, _)| name == "x-ms-request-charge")
            .and_then(|(_, value)| value.parse().ok())
            .unwrap_or(0.0)
    }

    /// Session and LSN headers of a container-scoped response: the session token names every
    /// partition key range (`0:-1#5,1:-1#5`), as for a response that read them all.
    fn session(self, token: String, lsn: u64, container_rid: &str, alt_path: &str) -> Reply {
        let lsn = lethedb_engine::lsn_sequence(lsn).to_string();
        self.named(SESSION_TOKEN, token)
            .named(LSN, lsn.clone())
            .named(GLOBAL_COMMITTED_LSN, lsn)
            .named(CONTENT_PATH, container_rid)
            .named(ALT_CONTENT_PATH, alt_path)
    }

    /// Session and LSN headers of a response about `container` or its items as a whole, with
    /// the container path keyed as the client sent it.
    pub fn container_scoped(self, container: &Container, path: &ResourcePath, lsn: u64) -> Reply {
        let token = every_range_token(container, lsn);
        self.session(token, lsn, container.rid(), &alt_path(container, path))
    }

    /// Session and LSN headers of a reply about the container resource itself (its create,
    /// read or replace). Its owner is its database, so the owner headers name the database
    /// (`x-ms-content-path` its rid, `x-ms-alt-content-path` `dbs/{id}` as the client sent it)
    /// as the service's do: the JavaScript SDK keys session tokens by a container-sized owner
    /// rid, and one keyed to the container here would merge every range into its token.
    pub fn container_resource(self, container: &Container, path: &ResourcePath, lsn: u64) -> Reply {
        let token = every_range_token(container, lsn);
        let database_rid = container.database_rid();
        let database_path = path
            .raw_container_path
            .split('/')
            .take(2)
            .collect::<Vec<_>>()
            .join("/");
        self.session(token, lsn, &database_rid, &database_path)
    }

    /// Session and LSN headers of a feed or query page: of the one range the request named
    /// (`x-ms-documentdb-partitionkeyrangeid`), else of every range.
    pub fn scoped_to(
        self,
        container: &Container,
        path: &ResourcePath,
        lsn: u64,
        range_id: Option<&str>,
    ) -> Reply {
        match range_id.and_then(|id| container.range(id).ok()) {
            Some(range) => {
                let id = range.id;
                self.range_scoped(container, path, lsn, id)
                    .named(PARTITION_KEY_RANGE_ID, id.to_string())
            }
            None => self.container_scoped(container, path, lsn),
        }
    }

    /// Session and LSN headers of a response served by one partition key range.
    pub fn range_scoped(
        self,
        container: &Container,
        path: &ResourcePath,
        lsn: u64,
        range_id: u32,
    ) -> Reply {
        let token = session_token(range_id, lsn);
        self.session(token, lsn, container.rid(), &alt_path(container, path))
    }

    /// A feed page: `{"_rid": ..., "<name>": [...], "_count": n}` from documents that are
    /// already JSON text, copied in unparsed, with the item count and continuation headers.
    pub fn feed<T: AsRef<[u8]>>(
        rid: &str,
        name: &str,
        documents: impl IntoIterator<Item = T>,
        continuation: Option<String>,
        request_units: f64,
    ) -> Reply {
        let mut writer = ObjectWriter::new().value("_rid", rid);
        let count = writer.fragments(name, documents);
        let body = writer.value("_count", count).finish();
        let mut reply = Reply::json(StatusCode::OK, body)
            .named(ITEM_COUNT, count.to_string())
            .charge(request_units);
        if let Some(token) = continuation {
            reply = reply.named(CONTINUATION, token);
        }
        reply
    }

    /// A feed page of values the engine built (resources, query results).
    pub fn value_feed(
        rid: &str,
        name: &str,
        values: &[serde_json::Value],
        continuation: Option<String>,
        request_units: f64,
    ) -> Reply {
        let texts = values.iter().map(lethedb_engine::to_json_vec);
        Reply::feed(rid, name, texts, continuation, request_units)
    }

    /// The headers set so far, for a failure that carries them (a 404 point read's session).
    pub fn into_headers(self) -> Vec<(HeaderName, String)> {
        self.headers
    }

    pub fn finish(self) -> Response {
        let has_body = !self.body.is_empty()
            && !self
                .headers
                .iter()
                .any(|(name, _)| name == header::CONTENT_TYPE);
        let mut response = Response::new(axum::body::Body::from(self.body));
        *response.status_mut() = self.status;
        // Sized once for these and the common headers: a map grown twice on the way out was
        // two reallocations and two rehashes of every name per response.
        let mut headers =
            HeaderMap::with_capacity(self.headers.len() + COMMON_HEADERS + usize::from(has_body));
        if has_body {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        for (name, value) in self.headers {
            // Values come from our own formatting or from validated ids; an unrepresentable one
            // is dropped rather than failing the request. The value's bytes are taken, not
            // copied.
            if let Ok(value) = HeaderValue::try_from(value) {
                headers.append(name, value);
            }
        }
        *response.headers_mut() = headers;
        response
    }
}

/// Headers on every response: activity id (the client's, if it sent one), versions, and how
/// long the server spent on the request (`x-ms-request-duration-ms`, which the SDKs record as
/// the server's share of the latency); the standard names go out in the service's letter case.
pub fn add_common_headers(response: &mut Response, request_headers: &HeaderMap, spent: Duration) {
    let headers = response.headers_mut();
    let spent_ms = milliseconds_text(spent);
    if let Ok(value) = HeaderValue::from_str(&spent_ms) {
        headers.insert(REQUEST_DURATION, value);
    }
    if !headers.contains_key(ACTIVITY_ID) {
        let activity = request_headers
            .get(ACTIVITY_ID)
            .cloned()
            .or_else(|| HeaderValue::from_str(&activity_id()).ok());
        if let Some(activity) = activity {
            headers.insert(ACTIVITY_ID, activity);
        }
    }
    headers.insert(
        SCHEMA_VERSION_NAME,
        HeaderValue::from_static(SCHEMA_VERSION),
    );
    headers.insert(
        SERVICE_VERSION_NAME,
        HeaderValue::from_static(SERVICE_VERSION),
    );
    headers.insert(
        GATEWAY_VERSION_NAME,
        HeaderValue::from_static(SERVICE_VERSION),
    );
    if !headers.contains_key(REQUEST_CHARGE) {
        headers.insert(REQUEST_CHARGE, HeaderValue::from_static("0"));
    }
    crate::header_case::apply(response);
}

/// `spent` in milliseconds with three decimals (`12.345`), as `{:.3}` writes them, from whole
/// microseconds (rounded to the nearest): integer formatting, where a float's cost a tenth of the
/// common headers' instructions.
fn milliseconds_text(spent: Duration) -> String {
    let micros = (spent.as_nanos() + 500) / 1000;
    format!("{}.{:03}", micros / 1000, micros % 1000)
}

/// Hundredths below this are formatted from an integer: the float's spacing there (at most
/// 2^-23) is far below [`ROUNDING_MARGIN`], so the product's rounding cannot move a value across
/// a rounding boundary.
const CHARGE_HUNDREDTHS_MAX: f64 = (1u64 << 29) as f64;
/// How far from a half-hundredth a value must be to be rounded without the exact formatting.
const ROUNDING_MARGIN: f64 = 1e-6;

/// A charge with two decimals, as `{:.2}` writes it, from whole hundredths (integer
/// formatting: a float's exact formatting cost ~1,800 instructions a reply). A value within
/// [`ROUNDING_MARGIN`] of a half-hundredth, negative or out of range takes `{:.2}` itself.
fn charge_text(request_units: f64) -> String {
    let hundredths = request_units * 100.0;
    let past_half = (hundredths - hundredths.floor() - 0.5).abs();
    if request_units.is_sign_positive()
        && hundredths < CHARGE_HUNDREDTHS_MAX
        && past_half > ROUNDING_MARGIN
    {
        // Non-negative and below 2^29, so the cast is exact.
        let whole = hundredths.round() as u64;
        return format!("{}.{:02}", whole / 100, whole % 100);
    }
    format!("{request_units:.2}")
}

/// One range's session token: `range id:-1#LSN` (the `-1` is the version the SDKs expect),
/// with the LSN as clients see it (an item's shard's sequence).
fn session_token(range_id: u32, lsn: u64) -> String {
    format!("{range_id}:-1#{}", lethedb_engine::lsn_sequence(lsn))
}

/// The session token of a reply about the whole container: every range's, at `lsn`.
fn every_range_token(container: &Container, lsn: u64) -> String {
    let tokens: Vec<String> = container
        .ranges
        .ranges
        .iter()
        .map(|range| session_token(range.id, lsn))
        .collect();
    tokens.join(",")
}

/// The container path clients key session tokens by; they expect it as they sent it.
fn alt_path(container: &Container, path: &ResourcePath) -> String {
    if path.raw_container_path.split('/').count() == 4 {
        path.raw_container_path.clone()
    } else {
        format!("dbs/{}/colls/{}", container.database_id, container.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_are_written_with_two_decimals_as_a_float_would_be() {
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            1.005,
            1.015,
            2.675,
            0.125,
            5.71,
            1e9,
            1e20,
            f64::NAN,
            f64::INFINITY,
            -1.5,
        ];
        // Every thousandth up to 200 (every half-hundredth among them), and a spread of others.
        values.extend((0..200_000).map(|thousandths| f64::from(thousandths) / 1000.0));
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..200_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            values.push((seed >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi((seed % 12) as i32));
        }
        for value in values {
            assert_eq!(charge_text(value), format!("{value:.2}"), "{value:e}");
        }
    }

    #[test]
    fn milliseconds_are_written_with_three_decimals_as_a_float_would_be() {
        for nanos in [
            0u64,
            499,
            500,
            1_234_567,
            999_999,
            1_000_000,
            12_345_678_901,
            7_000_400,
        ] {
            let spent = Duration::from_nanos(nanos);
            assert_eq!(
                milliseconds_text(spent),
                format!("{:.3}", spent.as_secs_f64() * 1000.0),
                "{nanos} ns"
            );
        }
    }
}
