//! The view as the sandbox's `Collection`: each operation a script queued, answered from the
//! view, and each failure as the script API shows it: `err.number` is the status a client would
//! get for the same failure, with its Cosmos code name. Those come from the wire layer's one
//! error table, given to the engine at open (`EngineConfig::wire_status`): the engine holds no
//! status of its own. A failure of the store, or a write outside the script's partition, ends
//! the execution instead of reaching the script.

use super::view::{ScriptView, ScriptWriteError};
use crate::error::{item_not_found, EngineError, ErrorCode};
use crate::items::rules::WriteMode;
use lethedb_scripts::{Answer, Collection, FeedOptions, OperationError, Request, WriteOptions};
use serde_json::{Map, Value};

/// The message of a write outside the partition a script runs in.
const OUTSIDE_PARTITION: &str = "Requests originating from scripts cannot reference partition keys other than the one for which client request was submitted.";

impl ScriptView<'_> {
    /// An operation's failure as the script sees it. A failure of the service (or a `fatal`
    /// one) ends the execution: it is kept as what ended it.
    fn operation_error(&mut self, error: EngineError, fatal: bool) -> OperationError {
        let (status, code) = (self.wire_status)(error.code);
        let fatal = fatal || error.code.is_service_failure();
        let failure = OperationError {
            status,
            code: code.into(),
            message: error.message().to_string(),
            fatal,
        };
        if fatal {
            self.ended_by = Some(error);
        }
        failure
    }

    fn write_failure(&mut self, error: ScriptWriteError) -> OperationError {
        match error {
            ScriptWriteError::Failed(error) => self.operation_error(error, false),
            ScriptWriteError::OutsidePartition => {
                let error = EngineError::with_message(ErrorCode::ScriptFailed, OUTSIDE_PARTITION);
                self.operation_error(error, true)
            }
        }
    }

    /// A create, upsert (`link`: the collection's) or replace (`link`: the document's).
    fn put_request(
        &mut self,
        mode: WriteMode,
        link: &str,
        body: Map<String, Value>,
        options: WriteOptions,
    ) -> Result<Answer, OperationError> {
        let (replaced, generate_id) = if matches!(mode, WriteMode::Replace(_)) {
            let key = self
                .resolve_document_link(link)
                .map_err(|error| self.operation_error(error, false))?;
            (Some(key), false)
        } else {
            self.check_collection_link(link)
                .map_err(|error| self.operation_error(error, false))?;
            (None, !options.disable_automatic_id_generation)
        };
        match self.put(
            mode,
            replaced,
            body,
            generate_id,
            options.if_match.as_deref(),
        ) {
            Ok((document, _)) => Ok(Answer::Resource((*document).clone())),
            Err(error) => Err(self.write_failure(error)),
        }
    }

    fn delete_request(&mut self, link: &str, options: WriteOptions) -> Result<Answer, EngineError> {
        let key = self.resolve_document_link(link)?;
        self.delete(key, options.if_match.as_deref())?;
        Ok(Answer::Nothing {
            not_modified: false,
        })
    }

    fn read_request(
        &mut self,
        link: &str,
        if_none_match: Option<&str>,
    ) -> Result<Answer, EngineError> {
        let key = self.resolve_document_link(link)?;
        let document = self.current(&key)?.ok_or_else(item_not_found)?;
        let etag = document.get("_etag").and_then(Value::as_str);
        if if_none_match.is_some() && if_none_match == etag {
            return Ok(Answer::Nothing { not_modified: true });
        }
        Ok(Answer::Resource((*document).clone()))
    }

    /// A read feed (`query`: none) or a query (its text and parameters) of the partition.
    fn feed_request(
        &mut self,
        link: &str,
        query: Option<(String, Vec<(String, Value)>)>,
        options: FeedOptions,
    ) -> Result<Answer, EngineError> {
        self.check_collection_link(link)?;
        let continuation = options.continuation.as_deref();
        let (documents, continuation) = match query {
            None => self.read_feed(options.page_size, continuation)?,
            Some((text, parameters)) => {
                self.query(&text, &parameters, options.page_size, continuation)?
            }
        };
        Ok(Answer::Feed {
            documents,
            continuation,
        })
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
        let answer = match request {
            Request::Create {
                link,
                body,
                options,
            } => return self.put_request(WriteMode::Create, &link, body, options),
            Request::Upsert {
                link,
                body,
                options,
            } => return self.put_request(WriteMode::Upsert, &link, body, options),
            Request::Replace {
                link,
                body,
                options,
            } => return self.put_request(WriteMode::Replace(String::new()), &link, body, options),
            Request::Delete { link, options } => self.delete_request(&link, options),
            Request::Read { link, options } => {
                self.read_request(&link, options.if_none_match.as_deref())
            }
            Request::ReadFeed { link, options } => self.feed_request(&link, None, options),
            Request::Query {
                link,
                text,
                parameters,
                options,
            } => self.feed_request(&link, Some((text, parameters)), options),
        };
        answer.map_err(|error| self.operation_error(error, false))
    }
}
