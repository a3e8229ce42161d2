//! The one error type of the query crate. It does not know HTTP status codes or Cosmos error
//! bodies: the wire layer maps each variant to those in its single error table.

use thiserror::Error;

/// Everything that can go wrong while preparing or running a query.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum QueryError {
    /// The text is not a query of the language. The message follows the service's wording and
    /// names the character offset where the parser gave up.
    #[error("Syntax error, incorrect syntax near '{near}'. (at position {position})")]
    Syntax { near: String, position: usize },
    /// The query is well formed but asks for something this implementation does not do.
    #[error("Unsupported query construct: {0}")]
    Unsupported(String),
    /// The query is well formed but meaningless, e.g. an unknown function, identifier or
    /// parameter, or a non-aggregated property next to an aggregate.
    #[error("{0}")]
    Semantic(String),
    /// A named limit (query length, nesting depth, accumulated state...) was hit.
    #[error("Query limit exceeded: {0}")]
    LimitExceeded(String),
    /// A continuation token that this query did not produce, or that was damaged. The words
    /// "Invalid Continuation Token" open the message as in the service's answer, which SDK tests
    /// and applications match on.
    #[error("Invalid Continuation Token: {0}")]
    InvalidContinuation(String),
    /// A user-defined function threw (or did not compile); the message names it.
    #[error("{0}")]
    FunctionFailed(String),
    /// The user-defined functions of the query ran past their time budget.
    #[error("The user-defined functions of the query did not complete within their time limit.")]
    FunctionTimeout,
    /// The caller broke the paging contract (e.g. unordered keys, zero page size).
    #[error("Invalid use of the paging interface: {0}")]
    Usage(String),
}

impl QueryError {
    pub(crate) fn semantic(message: impl Into<String>) -> Self {
        QueryError::Semantic(message.into())
    }

    pub(crate) fn unsupported(message: impl Into<String>) -> Self {
        QueryError::Unsupported(message.into())
    }
}
