//! Every failure a client can see, and the one table that maps it to an HTTP status, a substatus
//! (`x-ms-substatus`) and a Cosmos error body `{"code": ..., "message": ...}`.
//!
//! The codes are the engine's [`ErrorCode`]s and the few that only the wire layer raises
//! (authorization, routing, headers, bodies, admission). Nothing else in the crate decides a
//! status for a failure: handlers raise a [`Code`], batch results look their status up here, and
//! [`ApiError`] renders the body. A 5xx whose message is hidden never carries internal detail:
//! the detail goes to the log, the client gets a generic message and an activity id.

use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use lethedb_engine::{EngineError, ErrorCode};

/// Every failure a client can see: one of the engine's, or one raised by the wire layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    Engine(ErrorCode),
    /// The request path is not a valid URI, or not UTF-8 once decoded.
    InvalidUri,
    /// A request header has a value that cannot be parsed.
    BadRequestHeader,
    /// The body is missing, or is not JSON.
    InvalidJson,
    /// A query body lacks its `query` text or has malformed parameters.
    InvalidQueryBody,
    /// Authorization is missing or wrong.
    Unauthorized,
    /// The request's date is too far from the server's clock.
    ClockSkew,
    /// A resource token that does not allow the request.
    Forbidden,
    /// A management operation (databases, containers, throughput, users, scripts) with an Entra
    /// ID token, which the data plane's role-based access does not cover.
    EntraForbidden,
    /// The path names no resource type LetheDB serves.
    UnknownResource,
    /// A route that this listener does not serve (the metrics port serves only `/metrics`).
    RouteNotFound,
    /// `/metrics` on a server started with metrics turned off.
    MetricsOff,
    /// The certificate on a server that does not serve TLS.
    NoCertificate,
    /// The verb is not one the resource type accepts.
    MethodNotAllowed,
    /// The request body is larger than the body size limit.
    RequestTooLarge,
    /// The container's throughput budget for this second is spent.
    TooManyRequests,
    /// The request's throughput bucket has spent its share of this second's budget.
    ThroughputBucketSpent,
    /// A query across partitions needs the SDK's client pipeline (ORDER BY, aggregates, GROUP BY,
    /// DISTINCT, TOP, OFFSET/LIMIT): the answer carries the plan, and the SDK asks for it and
    /// runs the query per partition key range.
    CrossPartitionQueryNotServable,
    /// A query-plan request from a client that does not declare every feature the plan needs.
    UnsupportedQueryFeatures,
    /// `x-ms-cosmos-intended-collection-rid` names another container than the one now under the
    /// path's name (it was deleted and created again): the SDKs refresh their cache and retry.
    CollectionRidMismatch,
}

/// Whether a client may see the message (as it is, or in the gateway's long form), or only a
/// generic one naming the activity id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Disclosure {
    Shown,
    Hidden,
    /// Shown in the gateway's long form, `Message: {"Errors":["..."]}` and a line naming the
    /// activity id, where an SDK's own test reads that form (the JavaScript SDK's bulk test, of
    /// the 413's `Message: {"Errors":["Request size is too large"]}\r\n`).
    Wrapped,
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
struct Row {
    status: StatusCode,
    /// `None`: the answer carries no `x-ms-substatus` at all.
    substatus: Option<u32>,
    cosmos_code: &'static str,
    shown: Disclosure,
}

/// The statuses the table uses: HTTP's, and the service's own 449 (RetryWith), which HTTP
/// does not name.
mod statuses {
    use axum::http::StatusCode;

    macro_rules! named {
        ($($name:ident),*) => {
            $(pub const $name: StatusCode = StatusCode::$name;)*
        };
    }
    named!(
        BAD_REQUEST,
        CONFLICT,
        FAILED_DEPENDENCY,
        FORBIDDEN,
        GONE,
        INTERNAL_SERVER_ERROR,
        METHOD_NOT_ALLOWED,
        NOT_FOUND,
        PAYLOAD_TOO_LARGE,
        PRECONDITION_FAILED,
        REQUEST_TIMEOUT,
        SERVICE_UNAVAILABLE,
        TOO_MANY_REQUESTS,
        UNAUTHORIZED
    );
    /// The service's "retry with": a write conflicted with another; the SDKs retry it.
    pub const RETRY_WITH: StatusCode = match StatusCode::from_u16(449) {
        Ok(status) => status,
        Err(_) => StatusCode::SERVICE_UNAVAILABLE,
    };
}

/// A row's substatus: a number, or `none` for an answer that carries no `x-ms-substatus`.
macro_rules! substatus {
    (none) => {
        None
    };
    ($value:literal) => {
        Some($value)
    };
}

/// Writes the table as aligned rows, `code => status, substatus, Cosmos code, shown;`, and
/// generates from them the lookup (a `match` with no wildcard arm, so a new engine code does not
/// compile until it has a row) and the list of every code.
macro_rules! error_table {
    ($($variant:ident $(($engine:ident))? => $status:ident, $substatus:tt, $cosmos_code:literal, $shown:ident;)*) => {
        impl Code {
            /// Every code, in table order.
            pub const ALL: &'static [Code] = &[$(Code::$variant $((ErrorCode::$engine))?),*];

            fn row(self) -> Row {
                match self {
                    $(Code::$variant $((ErrorCode::$engine))? => Row {
                        status: statuses::$status,
                        substatus: substatus!($substatus),
                        cosmos_code: $cosmos_code,
                        shown: Disclosure::$shown,
                    },)*
                }
            }
        }
    };
}

// Substatus values are 0 except where the service sends another and the official SDKs name it
// (azure-cosmos `SubStatusCodes`, @azure/cosmos `SubStatusCodes`). Some substatus values make the
// SDKs retry or refresh caches (404/1002 "read session not available", 410/*, 400/1004 "cross
// partition query not servable"), so a plain failure never carries one of those. A `none` row
// sends no `x-ms-substatus`, where the service sends none either and an SDK tells the two apart.
error_table! {
    Engine(DatabaseNotFound)            => NOT_FOUND,             0,    "NotFound",              Shown;
    Engine(ContainerNotFound)           => NOT_FOUND,             0,    "NotFound",              Shown;
    Engine(ResourceNotFound)            => NOT_FOUND,             0,    "NotFound",              Shown;
    Engine(ItemNotFound)                => NOT_FOUND,             0,    "NotFound",              Shown;
    Engine(ResourceIdConflict)          => CONFLICT,              0,    "Conflict",              Shown;
    Engine(ItemIdConflict)              => CONFLICT,              0,    "Conflict",              Shown;
    Engine(PreconditionFailed)          => PRECONDITION_FAILED,   0,    "PreconditionFailed",    Shown;
    Engine(InvalidId)                   => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(IdMismatch)                  => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(InvalidDocument)             => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(InvalidResourcePath)         => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(InvalidPartitionKey)         => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(PartitionKeyMismatch)        => BAD_REQUEST,           1001, "BadRequest",            Shown;
    Engine(PartitionKeyMissing)         => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(InvalidPartitionKeyDefinition) => BAD_REQUEST,         0,    "BadRequest",            Shown;
    Engine(InvalidPartitionKeyRange)    => BAD_REQUEST,           0,    "BadRequest",            Shown;
    // 1002: the SDKs refresh their routing map and retry on the ranges that replaced it.
    Engine(PartitionKeyRangeGone)       => GONE,                  1002, "Gone",                  Shown;
    Engine(InvalidTtl)                  => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(InvalidIndexingPolicy)       => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(InvalidUniqueKeyPolicy)      => BAD_REQUEST,           0,    "BadRequest",            Shown;
    // 403: the service's answer to a container replace that changes the unique key policy.
    Engine(UniqueKeyPolicyChanged)      => FORBIDDEN,             0,    "Forbidden",             Shown;
    Engine(InvalidClientEncryptionPolicy) => BAD_REQUEST,         0,    "BadRequest",            Shown;
    Engine(InvalidScript)               => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(InvalidThroughput)           => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(InvalidBatch)                => BAD_REQUEST,           0,    "BadRequest",            Shown;
    // No substatus: the Rust SDK's emulator test holds the service's 400 for a patch it refuses
    // equal to the SDK's own client-side refusal, which has none.
    Engine(InvalidPatch)                => BAD_REQUEST,           none, "BadRequest",            Shown;
    Engine(CrossPartitionQueryDisabled) => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(QuerySyntax)                 => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(QuerySemantic)               => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(QueryLimit)                  => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(OrderByWithoutIndex)         => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(InvalidContinuation)         => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(ChangeFeedOutsideRetention)  => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(ItemTooLarge)                => PAYLOAD_TOO_LARGE,     0,    "RequestEntityTooLarge", Wrapped;
    Engine(BatchOperationNotAttempted)  => FAILED_DEPENDENCY,     0,    "FailedDependency",      Shown;
    Engine(ScriptFailed)                => BAD_REQUEST,           0,    "BadRequest",            Shown;
    // 408: the service's answer when a script runs past its time limit.
    Engine(ScriptTimeout)               => REQUEST_TIMEOUT,       0,    "RequestTimeout",        Shown;
    Engine(ScriptOutOfMemory)           => BAD_REQUEST,           0,    "BadRequest",            Shown;
    // 449: the SDKs retry it by themselves.
    Engine(ScriptConflict)              => RETRY_WITH,            0,    "RetryWith",             Shown;
    Engine(TriggerNotApplicable)        => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Engine(StorageUnavailable)          => SERVICE_UNAVAILABLE,   0,    "ServiceUnavailable",    Hidden;
    // Retrying reads the same bytes, so corruption is a 500, which the SDKs do not retry.
    Engine(StoreCorrupted)              => INTERNAL_SERVER_ERROR, 0,    "InternalServerError",   Hidden;
    Engine(StorePoisoned)               => SERVICE_UNAVAILABLE,   0,    "ServiceUnavailable",    Shown;
    Engine(WriterStopped)               => SERVICE_UNAVAILABLE,   0,    "ServiceUnavailable",    Hidden;
    Engine(WriterBusy)                  => TOO_MANY_REQUESTS,     0,    "TooManyRequests",       Shown;
    Engine(Internal)                    => INTERNAL_SERVER_ERROR, 0,    "InternalServerError",   Hidden;
    InvalidUri                          => BAD_REQUEST,           0,    "BadRequest",            Shown;
    BadRequestHeader                    => BAD_REQUEST,           0,    "BadRequest",            Shown;
    InvalidJson                         => BAD_REQUEST,           0,    "BadRequest",            Shown;
    InvalidQueryBody                    => BAD_REQUEST,           0,    "BadRequest",            Shown;
    Unauthorized                        => UNAUTHORIZED,          0,    "Unauthorized",          Shown;
    ClockSkew                           => FORBIDDEN,             0,    "Forbidden",             Shown;
    Forbidden                           => FORBIDDEN,             0,    "Forbidden",             Shown;
    // 5300: the SDKs' AAD_REQUEST_NOT_AUTHORIZED.
    EntraForbidden                      => FORBIDDEN,             5300, "Forbidden",             Shown;
    UnknownResource                     => NOT_FOUND,             0,    "NotFound",              Shown;
    RouteNotFound                       => NOT_FOUND,             0,    "NotFound",              Shown;
    MetricsOff                          => NOT_FOUND,             0,    "NotFound",              Shown;
    NoCertificate                       => NOT_FOUND,             0,    "NotFound",              Shown;
    MethodNotAllowed                    => METHOD_NOT_ALLOWED,    0,    "MethodNotAllowed",      Shown;
    RequestTooLarge                     => PAYLOAD_TOO_LARGE,     0,    "RequestEntityTooLarge", Wrapped;
    // 3200: the request-unit budget is spent, as the service reports it.
    TooManyRequests                     => TOO_MANY_REQUESTS,     3200, "TooManyRequests",       Shown;
    // 3212: a throughput bucket's share is spent, as the service's throughput-bucket FAQ says.
    ThroughputBucketSpent               => TOO_MANY_REQUESTS,     3212, "TooManyRequests",       Shown;
    // 1004: the SDKs then fetch the query plan and run the query per range themselves.
    CrossPartitionQueryNotServable      => BAD_REQUEST,           1004, "BadRequest",            Shown;
    UnsupportedQueryFeatures            => BAD_REQUEST,           0,    "BadRequest",            Shown;
    // 1024: the SDKs' CollectionRidMismatch, on which they refresh the container and retry.
    CollectionRidMismatch               => BAD_REQUEST,           1024, "BadRequest",            Shown;
}

impl Code {
    /// The HTTP status a failure with this code gets.
    pub fn status(self) -> StatusCode {
        self.row().status
    }

    /// The `x-ms-substatus` (and a batch entry's `subStatusCode`) for this code; `None` when
    /// the answer carries none.
    pub fn substatus(self) -> Option<u32> {
        self.row().substatus
    }

    /// The text a client sees when the raise site gives no message of its own.
    pub fn default_message(self) -> &'static str {
        match self {
            Code::Engine(code) => code.default_message(),
            Code::InvalidUri => "The request path is not a valid URI.",
            Code::BadRequestHeader => "A request header has an invalid value.",
            Code::InvalidJson => "The request payload is invalid JSON.",
            Code::InvalidQueryBody => "The query body must have a string property 'query'.",
            Code::Unauthorized => "The authorization token is invalid.",
            Code::ClockSkew => "The authorization token is not valid at the current time.",
            Code::EntraForbidden => {
                "The given request cannot be authorized by AAD token in data plane. Learn more: https://aka.ms/cosmos-native-rbac."
            }
            Code::Forbidden => {
                "Insufficient permissions provided in the authorization header for the corresponding request. Please retry with another authorization header."
            }
            Code::UnknownResource => "The path names no resource.",
            Code::RouteNotFound => "This listener does not serve the path.",
            Code::MetricsOff => "Metrics are turned off on this server.",
            Code::NoCertificate => "This server does not serve TLS, so it has no certificate.",
            Code::MethodNotAllowed => "The requested verb is not supported on this resource type.",
            Code::RequestTooLarge => "Request size is too large",
            Code::TooManyRequests | Code::ThroughputBucketSpent => {
                "Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later."
            }
            Code::CrossPartitionQueryNotServable => {
                "The provided cross partition query can not be directly served by the gateway. This is a first chance (internal) exception that all newer clients will know how to handle gracefully. This exception is traced, but unless you see it bubble up as an exception (which only happens on older SDK clients), then you can safely ignore this message."
            }
            Code::UnsupportedQueryFeatures => {
                "Query contains 1 or more unsupported features. Upgrade your SDK to a version that does support the requested features:"
            }
            Code::CollectionRidMismatch => {
                "Collection rid provided by the user does not match the existing collection."
            }
        }
    }
}

/// What an engine failure is on the wire: its status and Cosmos code name, from the one table.
/// The engine is given this at open (`EngineConfig::wire_status`), so a script's failed
/// operation shows the status a client would get (`err.number`), and the engine holds no status
/// table of its own.
pub fn wire_status(code: ErrorCode) -> (u16, &'static str) {
    let row = Code::Engine(code).row();
    (row.status.as_u16(), row.cosmos_code)
}

/// A failure to report to the client.
#[derive(Clone, Debug)]
pub struct ApiError {
    pub code: Code,
    pub message: String,
    /// For a 429: how long the client should wait before retrying.
    pub retry_after_ms: Option<i64>,
    /// The body's `additionalErrorInfo`: the query plan, as JSON text, when a query needs the
    /// SDK's client pipeline.
    pub additional_error_info: Option<String>,
    /// A substatus of this failure's own, replacing its code's (a script's error number).
    pub substatus: Option<u32>,
    /// Headers the failure carries besides the common ones (the session of a 404 point read).
    pub headers: Vec<(HeaderName, String)>,
}

impl ApiError {
    /// A failure with a message of its own.
    pub fn new(code: Code, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            retry_after_ms: None,
            additional_error_info: None,
            substatus: None,
            headers: Vec::new(),
        }
    }

    /// A failure shown with its code's default message.
    pub fn from_code(code: Code) -> ApiError {
        ApiError::new(code, code.default_message())
    }

    /// The container's throughput budget for this second is spent.
    pub fn too_many_requests(retry_after_ms: i64) -> ApiError {
        ApiError {
            retry_after_ms: Some(retry_after_ms),
            ..ApiError::from_code(Code::TooManyRequests)
        }
    }

    /// A 429 (3212) for a throughput bucket whose share of this second is spent.
    pub fn throughput_bucket_spent(retry_after_ms: i64) -> ApiError {
        ApiError {
            retry_after_ms: Some(retry_after_ms),
            ..ApiError::from_code(Code::ThroughputBucketSpent)
        }
    }

    /// This failure with the plan of the query that caused it in `additionalErrorInfo`.
    pub fn with_additional_info(self, info: String) -> ApiError {
        ApiError {
            additional_error_info: Some(info),
            ..self
        }
    }

    /// This failure with headers of its own added to the response.
    pub fn with_headers(self, headers: Vec<(HeaderName, String)>) -> ApiError {
        ApiError { headers, ..self }
    }

    pub fn status(&self) -> StatusCode {
        self.code.status()
    }
}

impl From<EngineError> for ApiError {
    fn from(error: EngineError) -> ApiError {
        let code = error.code;
        ApiError {
            code: Code::Engine(code),
            message: error.to_string(),
            retry_after_ms: (code == ErrorCode::WriterBusy)
                .then_some(lethedb_engine::writer::WRITER_BUSY_RETRY_AFTER_MS),
            additional_error_info: None,
            substatus: error.substatus,
            headers: Vec::new(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let row = self.code.row();
        let activity_id = crate::activity::activity_id();
        let message = match row.shown {
            Disclosure::Shown => self.message,
            Disclosure::Wrapped => {
                let errors = serde_json::json!({ "Errors": [self.message] });
                format!("Message: {errors}\r\nActivityId: {activity_id}")
            }
            Disclosure::Hidden => {
                tracing::error!(
                    %activity_id,
                    code = ?self.code,
                    detail = self.message,
                    "request failed"
                );
                format!("The request could not be completed. ActivityId: {activity_id}")
            }
        };
        let mut body = serde_json::json!({ "code": row.cosmos_code, "message": message });
        if let Some(info) = self.additional_error_info {
            body["additionalErrorInfo"] = serde_json::Value::String(info);
        }
        let body = body.to_string();
        let mut response = (row.status, body).into_response();
        let headers = response.headers_mut();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        if let Ok(value) = HeaderValue::from_str(&activity_id) {
            headers.insert("x-ms-activity-id", value);
        }
        headers.insert("x-ms-request-charge", HeaderValue::from_static("0"));
        // The SDKs read the substatus to tell apart failures with one status; it is sent (0 when
        // the status says it all) except where the table's row says the service sends none.
        if let Some(substatus) = self.substatus.or(row.substatus) {
            headers.insert("x-ms-substatus", HeaderValue::from(substatus));
        }
        for (name, value) in self.headers {
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.append(name, value);
            }
        }
        if let Some(retry_after_ms) = self.retry_after_ms {
            // The SDKs retry 429s after this many milliseconds.
            headers.insert(
                "x-ms-retry-after-ms",
                HeaderValue::from(retry_after_ms.max(1)),
            );
        }
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
