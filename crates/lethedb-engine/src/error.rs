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
}

pub type EngineResult<T> = Result<T, EngineError>;

impl From<lethedb_query::QueryError> for EngineError {
    fn from(error: lethedb_query::QueryError) -> EngineError {
        EngineError::Query(error.to_string())
    }
}
