//! Fault rules: failures a test asks the server to produce on purpose, so that an application's
//! and an SDK's retry behaviour can be tested from any client. A rule matches an operation (its
//! metrics name: `Create`, `Read`, `Query`, `CreateDatabase`...), a resource link prefix and a
//! partition key, fires with a probability or for a number of hits, and answers a chosen status
//! and substatus (with `x-ms-retry-after-ms` for a 429), adds latency, or resets the connection.
//!
//! Rules are kept in memory, in the order they were added; the first that matches a request
//! decides. They are managed through `/_lethedb/faults` (`handlers::faults`) or loaded at start
//! (`--faults FILE`). This module matches and shapes answers; it authenticates nothing.

use crate::activity::activity_id;
use crate::error::{ApiError, ApiResult, Code};
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use http_body::{Body as HttpBody, Frame};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::task::{Context, Poll};

/// One fault rule as clients send and read it.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultRule {
    /// Given by the server when the rule is added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The operation's name (any letter case); every operation when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// A resource link prefix such as `dbs/db/colls/orders`; every resource when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// The partition key value the request names (`"a"` or `["a", 1]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_key: Option<Value>,
    /// The chance, from 0 to 1, that a matching request is hit (1 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    /// How many more requests the rule hits; it is removed after the last (unlimited when
    /// absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// The status to answer (400 to 599).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub substatus: Option<u32>,
    /// `x-ms-retry-after-ms` of the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// Latency added before the request is answered (by the fault or as usual).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Whether the connection is dropped instead of answered.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reset_connection: bool,
    /// The error message of the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The longest latency a rule may add: long enough for any client timeout, short enough that a
/// forgotten rule does not hold requests for ever.
pub const DELAY_MS_MAX: u64 = 120_000;

impl FaultRule {
    /// Why the rule cannot be used, if it cannot.
    pub fn problem(&self) -> Option<String> {
        if self.status.is_none() && self.delay_ms.is_none() && !self.reset_connection {
            return Some("A fault rule needs a status, a delayMs or resetConnection.".into());
        }
        if let Some(status) = self.status.filter(|s| !(400..=599).contains(s)) {
            return Some(format!("The status {status} is not between 400 and 599."));
        }
        if let Some(p) = self.probability.filter(|p| !(0.0..=1.0).contains(p)) {
            return Some(format!("The probability {p} is not between 0 and 1."));
        }
        if self.delay_ms.is_some_and(|delay| delay > DELAY_MS_MAX) {
            return Some(format!("The delayMs is above {DELAY_MS_MAX}."));
        }
        (self.count == Some(0)).then(|| "A count of 0 would never hit.".to_string())
    }

    fn matches(&self, operation: &str, link: &str, partition_key: Option<&Value>) -> bool {
        let operation_matches = self
            .operation
            .as_deref()
            .is_none_or(|wanted| wanted.eq_ignore_ascii_case(operation));
        let resource_matches = self.resource.as_deref().is_none_or(|prefix| {
            let prefix = prefix.trim_matches('/');
            link == prefix || link.starts_with(&format!("{prefix}/"))
        });
        let key_matches = self.partition_key.as_ref().is_none_or(|wanted| {
            let wanted = match wanted {
                Value::Array(_) => wanted.clone(),
                single => Value::Array(vec![single.clone()]),
            };
            partition_key == Some(&wanted)
        });
        operation_matches && resource_matches && key_matches
    }
}

/// The rules in force.
#[derive(Debug, Default)]
pub struct Faults {
    rules: Mutex<Vec<FaultRule>>,
    /// How many rules there are, so that a request finds none without taking the lock (every
    /// request asks; rules are rare).
    count: AtomicUsize,
    next_id: AtomicU64,
}

impl Faults {
    /// Adds a rule (checked by the caller with [`FaultRule::problem`]) and returns it with its id.
    pub fn add(&self, mut rule: FaultRule) -> FaultRule {
        let number = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        rule.id = Some(number.to_string());
        let mut rules = self.lock();
        rules.push(rule.clone());
        self.count.store(rules.len(), Ordering::Relaxed);
        rule
    }

    pub fn list(&self) -> Vec<FaultRule> {
        self.lock().clone()
    }

    /// Removes the rule `id`; whether it was there.
    pub fn remove(&self, id: &str) -> bool {
        let mut rules = self.lock();
        let before = rules.len();
        rules.retain(|rule| rule.id.as_deref() != Some(id));
        self.count.store(rules.len(), Ordering::Relaxed);
        rules.len() != before
    }

    pub fn clear(&self) {
        self.lock().clear();
        self.count.store(0, Ordering::Relaxed);
    }

    /// The rule that hits this request, if any, counting the hit.
    pub fn hit(
        &self,
        operation: &str,
        link: &str,
        partition_key: Option<&str>,
    ) -> Option<FaultRule> {
        if self.count.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut rules = self.lock();
        let key: Option<Value> = partition_key.and_then(|raw| serde_json::from_str(raw).ok());
        let index = rules
            .iter()
            .position(|rule| rule.matches(operation, link, key.as_ref()))?;
        let rule = &mut rules[index];
        if rule.probability.is_some_and(|p| chance() >= p) {
            return None;
        }
        let fired = rule.clone();
        match rule.count {
            Some(1) => {
                rules.remove(index);
                self.count.store(rules.len(), Ordering::Relaxed);
            }
            Some(left) => rule.count = Some(left - 1),
            None => {}
        }
        Some(fired)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<FaultRule>> {
        // A panic while holding the lock leaves the list whole: every change is one call.
        self.rules
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A uniform number in [0, 1) from the operating system's randomness (a version 4 UUID's bits).
fn chance() -> f64 {
    let bits = uuid::Uuid::new_v4().as_u128() as u64 >> 11;
    bits as f64 / (1u64 << 53) as f64
}

/// The answer a rule with a status gives, shaped as the service's errors.
pub fn answer(rule: &FaultRule, status: u16) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let code = status.canonical_reason().map_or_else(
        || status.as_u16().to_string(),
        |reason| reason.replace(' ', ""),
    );
    let activity = activity_id();
    let message = rule.message.clone().unwrap_or_else(|| {
        format!(
            "Injected by the fault rule {} (/_lethedb/faults). ActivityId: {activity}",
            rule.id.as_deref().unwrap_or("from --faults")
        )
    });
    let body = serde_json::json!({"code": code, "message": message}).to_string();
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert("x-ms-request-charge", HeaderValue::from_static("0"));
    headers.insert(
        "x-ms-substatus",
        HeaderValue::from(rule.substatus.unwrap_or(0)),
    );
    if let Ok(value) = HeaderValue::from_str(&activity) {
        headers.insert("x-ms-activity-id", value);
    }
    if let Some(retry_after) = rule.retry_after_ms {
        headers.insert("x-ms-retry-after-ms", HeaderValue::from(retry_after));
    }
    response
}

/// A response whose body fails at once: the server drops the connection mid-answer, which a
/// client sees as a reset.
pub fn reset() -> Response {
    Response::new(Body::new(FailingBody))
}

struct FailingBody;

impl HttpBody for FailingBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Poll::Ready(Some(Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset by a fault rule",
        ))))
    }
}

/// A rule from a request body, checked.
pub fn parse_rule(body: &[u8]) -> ApiResult<FaultRule> {
    let rule: FaultRule = serde_json::from_slice(body).map_err(|error| {
        ApiError::new(
            Code::InvalidJson,
            format!("The fault rule is not valid: {error}."),
        )
    })?;
    match rule.problem() {
        Some(problem) => Err(ApiError::new(Code::InvalidJson, problem)),
        None => Ok(rule),
    }
}
