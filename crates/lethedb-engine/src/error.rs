//! The engine's error type: what went wrong, in terms of resources, not of HTTP.
//!
//! The wire layer maps each variant to a status code and a Cosmos error body in one table; this
//! module says nothing about status codes.

use lethedb_storage::StorageError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The named resource does not exist (or has expired, which is the same thing to a client).
    #[error("{0}")]
    NotFound(String),
    /// A resource with the same id already exists.
    #[error("{0}")]
    Conflict(String),
    /// An `If-Match` condition did not hold.
    #[error("{0}")]
    PreconditionFailed(String),
    /// The request is malformed or asks for something invalid.
    #[error("{0}")]
    BadRequest(String),
    /// The request or a resource in it is larger than a named limit allows.
    #[error("{0}")]
    TooLarge(String),
    /// The query could not be parsed or run.
    #[error("{0}")]
    Query(String),
    /// Storage failed; nothing of the request took effect.
    #[error("storage failure: {0}")]
    Storage(#[from] StorageError),
    /// The engine is shutting down or its writer has stopped.
    #[error("the service is unavailable: {0}")]
    Unavailable(String),
    /// The writer's queue is full: the write was refused at once and took no effect; retrying
    /// after a few milliseconds is expected to succeed.
    #[error("{0}")]
    WriterBusy(String),
    /// The engine stopped accepting writes after an internal error (a panic or a failed commit);
    /// reads still work, and a restart re-opens the store from its last durable state.
    #[error("{0}")]
    StorePoisoned(String),
}

pub type EngineResult<T> = Result<T, EngineError>;

impl From<lethedb_query::QueryError> for EngineError {
    fn from(error: lethedb_query::QueryError) -> EngineError {
        EngineError::Query(error.to_string())
    }
}

// The shared constructors: every module builds its errors here, so each message is written once.

/// A database, container or child resource that does not exist.
pub(crate) fn not_found() -> EngineError {
    EngineError::NotFound(
        "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found".into(),
    )
}

/// An item that does not exist or has expired.
pub(crate) fn item_not_found() -> EngineError {
    EngineError::NotFound("Entity with the specified id does not exist in the system.".into())
}

/// A database, container or child resource whose id is taken.
pub(crate) fn conflict() -> EngineError {
    EngineError::Conflict("Resource with specified id or name already exists.".into())
}

/// An item whose id is taken in its partition.
pub(crate) fn item_conflict() -> EngineError {
    EngineError::Conflict("Entity with the specified id already exists in the system.".into())
}

/// An `If-Match` condition that did not hold.
pub(crate) fn precondition_failed() -> EngineError {
    EngineError::PreconditionFailed(
        "Operation cannot be performed because one of the specified precondition is not met."
            .into(),
    )
}

/// A stored value of the named kind that could not be decoded.
pub(crate) fn corrupted(what: &str) -> EngineError {
    EngineError::Unavailable(format!("a stored {what} could not be read"))
}

/// A continuation token the engine did not issue (or issued for another scope).
pub(crate) fn invalid_continuation() -> EngineError {
    EngineError::BadRequest("The continuation token is invalid.".into())
}

/// A write refused because the writer's queue is full.
pub(crate) fn writer_busy() -> EngineError {
    EngineError::WriterBusy(
        "The writer's queue is full; no changes were made. Please retry this request later.".into(),
    )
}

/// A write refused because the engine is poisoned; `reason` says what happened first.
pub(crate) fn store_poisoned(reason: &str) -> EngineError {
    EngineError::StorePoisoned(format!(
        "The engine stopped accepting writes after an internal error and must be restarted: {reason}"
    ))
}
