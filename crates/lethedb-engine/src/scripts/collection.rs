//! The view as the sandbox's `Collection`: each operation a script queued, answered from the
//! view, and each failure in the script API's own vocabulary (`err.number` is one of the
//! `ErrorCodes` scripts compare against). A failure of the store, or a write outside the
//! script's partition, ends the execution instead of reaching the script.

use super::view::{ScriptView, ScriptWriteError};
use crate::error::{item_not_found, EngineError, ErrorCode};
use crate::items::WriteMode;
use lethedb_scripts::{Answer, Collection, OperationError, Request};
use serde_json::Value;
use std::sync::Arc;

/// The message of a write outside the partition a script runs in.
pub(crate) const OUTSIDE_PARTITION: &str = "Requests originating from scripts cannot reference partition keys other than the one for which client request was submitted.";

/// An operation's failure as the script sees it: the status it would have had, and its name
/// in `ErrorCodes`.
pub(crate) fn operation_error(error: &EngineError) -> OperationError {
    let (status, code) = match error.code {
        ErrorCode::ItemNotFound | ErrorCode::ResourceNotFound => (404, "NotFound"),
        ErrorCode::ItemIdConflict | ErrorCode::ResourceIdConflict => (409, "Conflict"),
        ErrorCode::PreconditionFailed => (412, "PreconditionFailed"),
        ErrorCode::ItemTooLarge => (413, "RequestEntityTooLarge"),
        code if code.is_service_failure() => (500, "InternalServerError"),
        _ => (400, "BadRequest"),
    };
    OperationError {
        status,
        code: code.into(),
        message: error.message().to_string(),
        fatal: error.code.is_service_failure(),
    }
}

fn write_failure(error: ScriptWriteError) -> OperationError {
    match error {
        ScriptWriteError::Failed(error) => operation_error(&error),
        ScriptWriteError::OutsidePartition => OperationError {
            status: 400,
            code: "BadRequest".into(),
            message: OUTSIDE_PARTITION.into(),
            fatal: true,
        },
    }
}

impl Collection for ScriptView<'_> {
    fn self_link(&self) -> String {
        ScriptView::self_link(self)
    }

    fn alt_link(&self) -> String {
        ScriptView::alt_link(self)
    }

    fn execute(&mut self, request: Request) -> Result<Answer, OperationError> {
        let failed = |error: EngineError| operation_error(&error);
        let resource = |document: Arc<Value>| Answer::Resource((*document).clone());
        match request {
            Request::Create {
                link,
                body,
                options,
            } => {
                self.check_collection_link(&link).map_err(failed)?;
                self.put(
                    WriteMode::Create,
                    None,
                    body,
                    !options.disable_automatic_id_generation,
                    options.if_match.as_deref(),
                )
                .map(resource)
                .map_err(write_failure)
            }
            Request::Upsert {
                link,
                body,
                options,
            } => {
                self.check_collection_link(&link).map_err(failed)?;
                self.put(
                    WriteMode::Upsert,
                    None,
                    body,
                    !options.disable_automatic_id_generation,
                    options.if_match.as_deref(),
                )
                .map(resource)
                .map_err(write_failure)
            }
            Request::Replace {
                link,
                body,
                options,
            } => {
                let key = self.resolve_document_link(&link).map_err(failed)?;
                self.put(
                    WriteMode::Replace(String::new()),
                    Some(key),
                    body,
                    false,
                    options.if_match.as_deref(),
                )
                .map(resource)
                .map_err(write_failure)
            }
            Request::Delete { link, options } => {
                let key = self.resolve_document_link(&link).map_err(failed)?;
                self.delete(key, options.if_match.as_deref())
                    .map(|()| Answer::Nothing {
                        not_modified: false,
                    })
                    .map_err(failed)
            }
            Request::Read { link, options } => {
                let key = self.resolve_document_link(&link).map_err(failed)?;
                let document = self
                    .current(&key)
                    .map_err(failed)?
                    .ok_or_else(|| failed(item_not_found()))?;
                let etag = document.get("_etag").and_then(Value::as_str);
                if options.if_none_match.is_some() && options.if_none_match.as_deref() == etag {
                    return Ok(Answer::Nothing { not_modified: true });
                }
                Ok(resource(document))
            }
            Request::ReadFeed { link, options } => {
                self.check_collection_link(&link).map_err(failed)?;
                let (documents, continuation) = self
                    .read_feed(options.page_size, options.continuation.as_deref())
                    .map_err(failed)?;
                Ok(Answer::Feed {
                    documents,
                    continuation,
                })
            }
            Request::Query {
                link,
                text,
                parameters,
                options,
            } => {
                self.check_collection_link(&link).map_err(failed)?;
                let (documents, continuation) = self
                    .query(
                        &text,
                        &parameters,
                        options.page_size,
                        options.continuation.as_deref(),
                    )
                    .map_err(failed)?;
                Ok(Answer::Feed {
                    documents,
                    continuation,
                })
            }
        }
    }
}
