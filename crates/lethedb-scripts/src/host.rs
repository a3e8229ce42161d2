//! What a script asks of its collection, and what the caller (the engine) answers.
//!
//! The sandbox knows nothing of storage: every `getCollection()` call a script queues reaches
//! the caller's [`Collection`] as a [`Request`], in the order the script queued them, and the
//! caller's answer goes back to the script's callback. The caller decides visibility, partition
//! scope and transactions.

use serde_json::{Map, Value};

/// Options of a write (`createDocument`, `upsertDocument`, `replaceDocument`, `deleteDocument`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WriteOptions {
    /// `disableAutomaticIdGeneration`: without it, a created document without an `id` gets one.
    pub disable_automatic_id_generation: bool,
    /// `etag`: the write applies only to this version (If-Match).
    pub if_match: Option<String>,
}

/// Options of a point read (`readDocument`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReadOptions {
    /// `ifNoneMatch`: answer "not modified" when the document still has this ETag.
    pub if_none_match: Option<String>,
}

/// Options of a feed (`readDocuments`, `queryDocuments`, the `__` API).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FeedOptions {
    /// `pageSize`: the most documents in one answer (the service's default is 100; -1 means
    /// as many as fit).
    pub page_size: Option<i64>,
    pub continuation: Option<String>,
}

/// One operation a script queued.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    Create {
        link: String,
        body: Map<String, Value>,
        options: WriteOptions,
    },
    Upsert {
        link: String,
        body: Map<String, Value>,
        options: WriteOptions,
    },
    Replace {
        link: String,
        body: Map<String, Value>,
        options: WriteOptions,
    },
    Delete {
        link: String,
        options: WriteOptions,
    },
    Read {
        link: String,
        options: ReadOptions,
    },
    ReadFeed {
        link: String,
        options: FeedOptions,
    },
    Query {
        link: String,
        text: String,
        parameters: Vec<(String, Value)>,
        options: FeedOptions,
    },
}

/// A successful answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// The document read or written.
    Resource(Value),
    /// A delete, or a read whose `ifNoneMatch` matched.
    Nothing { not_modified: bool },
    /// One page of a feed, and where the next starts.
    Feed {
        documents: Vec<Value>,
        continuation: Option<String>,
    },
}

/// Why an operation failed. `fatal` ends the whole execution with this error (and rolls it
/// back) instead of handing it to the script: a write outside the request's partition, or a
/// failure of the store rather than of the operation.
#[derive(Clone, Debug, PartialEq)]
pub struct OperationError {
    /// The HTTP status the operation would have had (409, 404, 412, ...).
    pub status: u16,
    /// The service's code name (`Conflict`, `NotFound`, ...).
    pub code: String,
    pub message: String,
    pub fatal: bool,
}

/// The collection a script runs against.
pub trait Collection {
    /// The RID link of the collection (`dbs/<dbRid>/colls/<collRid>/`).
    fn self_link(&self) -> String;
    /// The name link (`dbs/<db>/colls/<coll>`).
    fn alt_link(&self) -> String;
    /// Runs one operation.
    fn execute(&mut self, request: Request) -> Result<Answer, OperationError>;
}
