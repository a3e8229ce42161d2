//! Every failure a client can see, and the one table that maps it to an HTTP status and a Cosmos
//! error body `{"code": ..., "message": ...}`.
//!
//! Engine errors convert into [`ApiError`] here and nowhere else. A 5xx never carries internal
//! detail: the detail goes to the log, the client gets a generic message and an activity id.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use lethedb_engine::EngineError;

/// A failure to report to the client.
#[derive(Debug)]
pub enum ApiError {
    BadRequest(String),
    Unauthorized(String),
    Forbidden(String),
    NotFound(String),
    MethodNotAllowed(String),
    Conflict(String),
    PreconditionFailed(String),
    TooLarge(String),
    /// The container's throughput budget for this second is spent.
    TooManyRequests {
        retry_after_ms: i64,
    },
    Unavailable(String),
    Internal(String),
}

/// The one table: variant → status, Cosmos code, and whether the message may be shown.
fn describe(error: &ApiError) -> (StatusCode, &'static str, &str, bool) {
    match error {
        ApiError::BadRequest(m) => (StatusCode::BAD_REQUEST, "BadRequest", m, true),
        ApiError::Unauthorized(m) => (StatusCode::UNAUTHORIZED, "Unauthorized", m, true),
        ApiError::Forbidden(m) => (StatusCode::FORBIDDEN, "Forbidden", m, true),
        ApiError::NotFound(m) => (StatusCode::NOT_FOUND, "NotFound", m, true),
        ApiError::MethodNotAllowed(m) => {
            (StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", m, true)
        }
        ApiError::Conflict(m) => (StatusCode::CONFLICT, "Conflict", m, true),
        ApiError::PreconditionFailed(m) => (
            StatusCode::PRECONDITION_FAILED,
            "PreconditionFailed",
            m,
            true,
        ),
        ApiError::TooLarge(m) => (
            StatusCode::PAYLOAD_TOO_LARGE,
            "RequestEntityTooLarge",
            m,
            true,
        ),
        ApiError::TooManyRequests { .. } => (
            StatusCode::TOO_MANY_REQUESTS,
            "TooManyRequests",
            "Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later.",
            true,
        ),
        ApiError::Unavailable(m) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            m,
            false,
        ),
        ApiError::Internal(m) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            m,
            false,
        ),
    }
}

impl From<EngineError> for ApiError {
    fn from(error: EngineError) -> ApiError {
        match error {
            EngineError::NotFound(m) => ApiError::NotFound(m),
            EngineError::Conflict(m) => ApiError::Conflict(m),
            EngineError::PreconditionFailed(m) => ApiError::PreconditionFailed(m),
            EngineError::BadRequest(m) | EngineError::Query(m) => ApiError::BadRequest(m),
            EngineError::TooLarge(m) => ApiError::TooLarge(m),
            EngineError::Storage(e) => ApiError::Unavailable(e.to_string()),
            EngineError::Unavailable(m) => ApiError::Unavailable(m),
            // A full writer queue is throttling like a spent budget: the SDKs retry every 429.
            EngineError::WriterBusy(_) => ApiError::TooManyRequests {
                retry_after_ms: lethedb_engine::writer::WRITER_BUSY_RETRY_AFTER_MS,
            },
            EngineError::StorePoisoned(m) => ApiError::Unavailable(m),
        }
    }
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        describe(self).0
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code, message, shown) = describe(&self);
        let message = message.to_string();
        let activity_id = crate::respond::activity_id();
        let message = if shown {
            message
        } else {
            tracing::error!(%activity_id, code, detail = message, "request failed");
            format!("The request could not be completed. ActivityId: {activity_id}")
        };
        let body = serde_json::json!({ "code": code, "message": message }).to_string();
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        if let Ok(value) = HeaderValue::from_str(&activity_id) {
            headers.insert("x-ms-activity-id", value);
        }
        headers.insert("x-ms-request-charge", HeaderValue::from_static("0"));
        if let ApiError::TooManyRequests { retry_after_ms } = &self {
            // The SDKs retry 429s after this many milliseconds; substatus 3200 is "RU budget spent".
            if let Ok(value) = HeaderValue::from_str(&retry_after_ms.max(&1).to_string()) {
                headers.insert("x-ms-retry-after-ms", value);
            }
            headers.insert("x-ms-substatus", HeaderValue::from_static("3200"));
        }
        if status == StatusCode::SERVICE_UNAVAILABLE {
            // Tells the SDKs' retry policies this is transient.
            headers.insert("x-ms-substatus", HeaderValue::from_static("0"));
        }
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
