//! The engine's error type: a code naming what went wrong, in terms of resources, and an optional
//! message that replaces the code's default text.
//!
//! The wire layer maps each [`ErrorCode`] to a status, a substatus and a Cosmos error code in one
//! table; this module says nothing about HTTP. Every message a client sees is written here once,
//! as a code's default, or at the one raise site that needs its own wording.

use lethedb_query::QueryError;
use lethedb_storage::StorageError;
use std::fmt;

/// Every distinct failure a client can see from the engine.
///
/// Not `#[non_exhaustive]` on purpose: the server's table matches on it without a wildcard arm,
/// so a new code fails to compile there until it is given a status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The addressed database does not exist.
    DatabaseNotFound,
    /// The addressed container does not exist.
    ContainerNotFound,
    /// A child resource (user, permission, script, offer...) does not exist.
    ResourceNotFound,
    /// The item does not exist or has expired, which is the same thing to a client.
    ItemNotFound,
    /// A database, container or child resource with the same id already exists.
    ResourceIdConflict,
    /// An item with the same id already exists in its partition.
    ItemIdConflict,
    /// An `If-Match` condition (or a patch condition) did not hold.
    PreconditionFailed,
    /// A resource id is empty, too long or has a forbidden character.
    InvalidId,
    /// The id in the body differs from the id the request addresses.
    IdMismatch,
    /// A body is not a JSON object, or lacks a required property.
    InvalidDocument,
    /// A child resource is addressed under a parent of the wrong level.
    InvalidResourcePath,
    /// A partition key value cannot be parsed or has a component of the wrong type.
    InvalidPartitionKey,
    /// The partition key given does not match the container's definition or the document.
    PartitionKeyMismatch,
    /// The operation needs a partition key and none was given.
    PartitionKeyMissing,
    /// A container's partition key definition is invalid or would change.
    InvalidPartitionKeyDefinition,
    /// A range of effective partition keys cannot be served for this container.
    InvalidPartitionKeyRange,
    /// The request names a partition key range that was split (or never existed): the
    /// client's routing map is stale.
    PartitionKeyRangeGone,
    /// A `ttl` or `defaultTtl` value is invalid.
    InvalidTtl,
    /// An indexing policy is invalid.
    InvalidIndexingPolicy,
    /// A unique key policy is invalid: its shape, a path, a limit, or a repeated path or key.
    InvalidUniqueKeyPolicy,
    /// A container replace would change the unique key policy, which is fixed at creation.
    UniqueKeyPolicyChanged,
    /// A client encryption policy is invalid, names a client encryption key the database does
    /// not have, or a container replace would change it.
    InvalidClientEncryptionPolicy,
    /// A stored procedure's, trigger's or user-defined function's body does not compile as
    /// JavaScript.
    InvalidScript,
    /// Manual or autoscale throughput settings are invalid.
    InvalidThroughput,
    /// A batch body or one of its operations is malformed.
    InvalidBatch,
    /// A patch body or one of its operations is malformed or cannot apply.
    InvalidPatch,
    /// A query needs several partitions and the client did not allow that.
    CrossPartitionQueryDisabled,
    /// The query text is not a query of the language.
    QuerySyntax,
    /// The query is well formed but meaningless, or asks for what is not implemented.
    QuerySemantic,
    /// The query hit a named limit.
    QueryLimit,
    /// The container's indexing policy cannot serve the query's ORDER BY: several keys without
    /// a composite index for them, or one key on an excluded path.
    OrderByWithoutIndex,
    /// A continuation token the engine did not issue, or issued for another scope.
    InvalidContinuation,
    /// An all-versions change feed read from the beginning, a point in time, or a cursor whose
    /// changes were trimmed from the log.
    ChangeFeedOutsideRetention,
    /// An item is larger than the item size limit.
    ItemTooLarge,
    /// A batch operation was not attempted because another operation of the atomic batch failed.
    BatchOperationNotAttempted,
    /// A script (stored procedure, trigger, user-defined function) threw, aborted or broke a
    /// rule of the script API; nothing it wrote took effect.
    ScriptFailed,
    /// A script ran past its time budget; nothing it wrote took effect.
    ScriptTimeout,
    /// A script used more memory than an execution may; nothing it wrote took effect.
    ScriptOutOfMemory,
    /// Concurrent writes kept changing what a script read before it could commit; retry.
    ScriptConflict,
    /// A trigger named for an operation it is not registered for (or of the wrong type).
    TriggerNotApplicable,
    /// The store failed to read or write; nothing of the request took effect. Transient.
    StorageUnavailable,
    /// A stored record could not be decoded. Not transient: retrying reads the same bytes.
    StoreCorrupted,
    /// A commit failed earlier, so the store refuses writes until the server restarts.
    StorePoisoned,
    /// The writer has stopped (the engine is shutting down, or its thread could not start).
    WriterStopped,
    /// The writer's queue is full; the client should retry later.
    WriterBusy,
    /// A bug: the engine broke one of its own rules.
    Internal,
}

const NOT_FOUND: &str = "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found";
/// The service's answer to a container replace that changes the unique key policy.
const UNIQUE_KEY_POLICY_FIXED: &str = "The unique index cannot be modified. To change the unique index, remove the collection and re-create a new one.";

/// The service's refusal of an ORDER BY over several keys that no composite index serves.
const NO_COMPOSITE_INDEX: &str =
    "The order by query does not have a corresponding composite index that it can be served from.";

impl ErrorCode {
    /// The text a client sees when the raise site gives no message of its own.
    pub fn default_message(self) -> &'static str {
        match self {
            ErrorCode::DatabaseNotFound
            | ErrorCode::ContainerNotFound
            | ErrorCode::ResourceNotFound => NOT_FOUND,
            ErrorCode::ItemNotFound => "Entity with the specified id does not exist in the system.",
            ErrorCode::ResourceIdConflict => "Resource with specified id or name already exists.",
            ErrorCode::ItemIdConflict => "Entity with the specified id already exists in the system.",
            ErrorCode::PreconditionFailed => {
                "Operation cannot be performed because one of the specified precondition is not met."
            }
            ErrorCode::InvalidId => "The id is invalid.",
            ErrorCode::IdMismatch => {
                "The id in the request body does not match the id in the request URI."
            }
            ErrorCode::InvalidDocument => "The request body must be a JSON object.",
            ErrorCode::InvalidResourcePath => {
                "The resource cannot be addressed under this parent."
            }
            ErrorCode::InvalidPartitionKey => "The partition key value is invalid.",
            ErrorCode::PartitionKeyMismatch => {
                "Partition key provided either doesn't correspond to definition in the collection or doesn't match partition key field values specified in the document."
            }
            ErrorCode::PartitionKeyMissing => {
                "PartitionKey value must be supplied for this operation."
            }
            ErrorCode::InvalidPartitionKeyDefinition => {
                "The partition key definition is invalid."
            }
            ErrorCode::InvalidPartitionKeyRange => {
                "The effective partition key range is invalid."
            }
            ErrorCode::PartitionKeyRangeGone => {
                "The requested partition key range is no longer available: it has been split. Refresh the partition key ranges and retry."
            }
            ErrorCode::InvalidTtl => "The time to live is invalid.",
            ErrorCode::InvalidIndexingPolicy => "The indexing policy is invalid.",
            ErrorCode::InvalidUniqueKeyPolicy => "The unique key policy is invalid.",
            ErrorCode::UniqueKeyPolicyChanged => UNIQUE_KEY_POLICY_FIXED,
            ErrorCode::InvalidClientEncryptionPolicy => {
                "The client encryption policy is invalid."
            }
            ErrorCode::InvalidScript => {
                "Encountered exception while compiling Javascript. Exception = SyntaxError"
            }
            ErrorCode::InvalidThroughput => "The throughput settings are invalid.",
            ErrorCode::InvalidBatch => "The batch request is invalid.",
            ErrorCode::InvalidPatch => "The patch request is invalid.",
            ErrorCode::CrossPartitionQueryDisabled => {
                "Cross partition query is required but disabled. Please set x-ms-documentdb-query-enablecrosspartition to true, specify x-ms-documentdb-partitionkey, or revise your query to avoid this exception."
            }
            ErrorCode::QuerySyntax => "The query text is not a valid query.",
            ErrorCode::QuerySemantic => "The query is invalid.",
            ErrorCode::QueryLimit => "The query exceeds a limit.",
            ErrorCode::OrderByWithoutIndex => NO_COMPOSITE_INDEX,
            ErrorCode::InvalidContinuation => "Invalid Continuation Token.",
            ErrorCode::ChangeFeedOutsideRetention => {
                "You must read the change feed from within the retention period. The all versions and deletes change feed starts from now or from a continuation taken within the retention period."
            }
            ErrorCode::ItemTooLarge => "Request size is too large",
            ErrorCode::BatchOperationNotAttempted => {
                "The operation was not attempted because another operation in the batch failed."
            }
            ErrorCode::ScriptFailed => "Encountered exception while executing function.",
            ErrorCode::ScriptTimeout => {
                "The script did not complete within its time limit, so everything it did was rolled back."
            }
            ErrorCode::ScriptOutOfMemory => {
                "The script exceeded its memory limit, so everything it did was rolled back."
            }
            ErrorCode::ScriptConflict => {
                "Conflicting request to resource has been attempted. Retry to avoid conflicts."
            }
            ErrorCode::TriggerNotApplicable => "The trigger cannot run on this operation.",
            ErrorCode::StorageUnavailable => "The store could not complete the operation.",
            ErrorCode::StoreCorrupted => "A stored value could not be read.",
            ErrorCode::StorePoisoned => {
                "The store refuses writes because an earlier commit failed, so its state on disk is unknown; restart the server to reopen it from its last durable state."
            }
            ErrorCode::WriterStopped => "The writer has stopped; the engine is shutting down.",
            ErrorCode::WriterBusy => "The writer is busy; retry the request later.",
            ErrorCode::Internal => "An internal error occurred.",
        }
    }

    /// Whether the failure is the service's rather than the operation's: such a failure ends a
    /// whole batch instead of being reported as one operation's outcome.
    pub fn is_service_failure(self) -> bool {
        matches!(
            self,
            ErrorCode::StorageUnavailable
                | ErrorCode::StoreCorrupted
                | ErrorCode::StorePoisoned
                | ErrorCode::WriterStopped
                | ErrorCode::WriterBusy
                | ErrorCode::Internal
        )
    }
}

/// A failure: its code, and a message that replaces the code's default text when present.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineError {
    pub code: ErrorCode,
    pub message: Option<String>,
    /// A substatus of the failure's own, replacing its code's: a script's
    /// `new Error(number, message)` reaches the client as `x-ms-substatus: number`.
    pub substatus: Option<u32>,
}

impl EngineError {
    /// A failure shown with its code's default message.
    pub fn new(code: ErrorCode) -> EngineError {
        EngineError {
            code,
            message: None,
            substatus: None,
        }
    }

    /// A failure with a message of its own.
    pub fn with_message(code: ErrorCode, message: impl Into<String>) -> EngineError {
        EngineError {
            code,
            message: Some(message.into()),
            substatus: None,
        }
    }

    /// This failure with a substatus of its own.
    pub fn with_substatus(self, substatus: Option<u32>) -> EngineError {
        EngineError { substatus, ..self }
    }

    /// The text to show: the raise site's own, or the code's default.
    pub fn message(&self) -> &str {
        self.message
            .as_deref()
            .unwrap_or_else(|| self.code.default_message())
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.message())
    }
}

impl std::error::Error for EngineError {}

pub type EngineResult<T> = Result<T, EngineError>;

impl From<&StorageError> for EngineError {
    fn from(error: &StorageError) -> EngineError {
        match error {
            // The detail is for the log; the wire layer does not show it.
            StorageError::Io(_) | StorageError::AlreadyOpen(_) | StorageError::Unavailable(_) => {
                EngineError::with_message(ErrorCode::StorageUnavailable, error.to_string())
            }
            StorageError::Corrupted(_) => {
                EngineError::with_message(ErrorCode::StoreCorrupted, error.to_string())
            }
            StorageError::Poisoned => EngineError::new(ErrorCode::StorePoisoned),
        }
    }
}

impl From<StorageError> for EngineError {
    fn from(error: StorageError) -> EngineError {
        EngineError::from(&error)
    }
}

impl From<QueryError> for EngineError {
    fn from(error: QueryError) -> EngineError {
        let code = match &error {
            QueryError::Syntax { .. } => ErrorCode::QuerySyntax,
            QueryError::Unsupported(_) | QueryError::Semantic(_) => ErrorCode::QuerySemantic,
            QueryError::LimitExceeded(_) => ErrorCode::QueryLimit,
            QueryError::InvalidContinuation(_) => ErrorCode::InvalidContinuation,
            QueryError::FunctionFailed(_) => ErrorCode::ScriptFailed,
            QueryError::FunctionTimeout => ErrorCode::ScriptTimeout,
            // The engine broke the paging contract: a bug, not the client's doing.
            QueryError::Usage(_) => ErrorCode::Internal,
        };
        EngineError::with_message(code, error.to_string())
    }
}

// The shared constructors, for the failures raised at many sites.

/// A stored value of the named kind that could not be decoded.
pub(crate) fn corrupted(what: &str) -> EngineError {
    EngineError::with_message(
        ErrorCode::StoreCorrupted,
        format!("a stored {what} could not be read"),
    )
}

// One function per code raised at many sites, so `ok_or_else` can take it by name.

pub(crate) fn database_not_found() -> EngineError {
    EngineError::new(ErrorCode::DatabaseNotFound)
}

pub(crate) fn container_not_found() -> EngineError {
    EngineError::new(ErrorCode::ContainerNotFound)
}

pub(crate) fn resource_not_found() -> EngineError {
    EngineError::new(ErrorCode::ResourceNotFound)
}

pub(crate) fn item_not_found() -> EngineError {
    EngineError::new(ErrorCode::ItemNotFound)
}

pub(crate) fn conflict() -> EngineError {
    EngineError::new(ErrorCode::ResourceIdConflict)
}

pub(crate) fn item_conflict() -> EngineError {
    EngineError::new(ErrorCode::ItemIdConflict)
}

pub(crate) fn precondition_failed() -> EngineError {
    EngineError::new(ErrorCode::PreconditionFailed)
}

pub(crate) fn invalid_continuation() -> EngineError {
    EngineError::new(ErrorCode::InvalidContinuation)
}

/// A write refused because the writer's queue is full; it took no effect.
pub(crate) fn writer_busy() -> EngineError {
    EngineError::new(ErrorCode::WriterBusy)
}

/// A write refused because the engine is poisoned; `reason` says what happened first.
pub(crate) fn store_poisoned(reason: &str) -> EngineError {
    EngineError::with_message(
        ErrorCode::StorePoisoned,
        format!(
            "The engine stopped accepting writes after an internal error and must be restarted: {reason}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_replaces_the_default_and_display_shows_it() {
        let plain = EngineError::new(ErrorCode::ItemNotFound);
        assert_eq!(
            plain.to_string(),
            "Entity with the specified id does not exist in the system."
        );
        let own = EngineError::with_message(ErrorCode::InvalidId, "The id must not be empty.");
        assert_eq!(own.to_string(), "The id must not be empty.");
        assert_eq!(own.code, ErrorCode::InvalidId);
    }

    #[test]
    fn storage_failures_keep_their_kind() {
        let check = |error: StorageError, code: ErrorCode| {
            assert_eq!(EngineError::from(error).code, code);
        };
        check(
            StorageError::Io("disk".into()),
            ErrorCode::StorageUnavailable,
        );
        check(
            StorageError::AlreadyOpen("/data".into()),
            ErrorCode::StorageUnavailable,
        );
        check(
            StorageError::Corrupted("page".into()),
            ErrorCode::StoreCorrupted,
        );
        check(StorageError::Poisoned, ErrorCode::StorePoisoned);
        assert!(EngineError::from(StorageError::Poisoned)
            .to_string()
            .contains("restart the server"));
    }

    #[test]
    fn query_failures_map_by_kind_and_keep_their_text() {
        let check = |error: QueryError, code: ErrorCode| {
            let text = error.to_string();
            let mapped = EngineError::from(error);
            assert_eq!((mapped.code, mapped.to_string()), (code, text));
        };
        check(
            QueryError::Syntax {
                near: "FROM".into(),
                position: 7,
            },
            ErrorCode::QuerySyntax,
        );
        check(QueryError::Semantic("x".into()), ErrorCode::QuerySemantic);
        check(
            QueryError::Unsupported("x".into()),
            ErrorCode::QuerySemantic,
        );
        check(QueryError::LimitExceeded("x".into()), ErrorCode::QueryLimit);
        check(
            QueryError::InvalidContinuation("x".into()),
            ErrorCode::InvalidContinuation,
        );
        check(QueryError::Usage("x".into()), ErrorCode::Internal);
    }

    #[test]
    fn only_failures_of_the_service_end_a_whole_batch() {
        assert!(ErrorCode::StoreCorrupted.is_service_failure());
        assert!(ErrorCode::WriterBusy.is_service_failure());
        assert!(!ErrorCode::ItemIdConflict.is_service_failure());
        assert!(!ErrorCode::BatchOperationNotAttempted.is_service_failure());
    }
}
