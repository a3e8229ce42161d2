//! What a resource token allows: one rule per [`Operation`], read from the operation table's
//! columns (`operation.rs`: a catalog resource's `tokens` and `entra`, an item operation's key
//! scope), the permission's scope and mode, and its partition key.
//!
//! - A `Read` permission allows reads, read feeds, queries, query plans and the change feed on
//!   its resource and below it; `All` allows every operation there, writes and batches too.
//! - Either also allows reading the ancestors the SDKs read before the resource itself: the
//!   account (`GET /`), the database, the container and its partition key ranges.
//! - A `resourcePartitionKey` limits item operations to that logical partition: a request for
//!   another key, a batch holding one, or a query or feed across partitions is refused. Keys
//!   are the engine's `PartitionKeyValue`, compared as the engine stores them, so the header
//!   has one grammar (an array of parts) whoever reads it.
//! - A container's stored procedures, triggers and user-defined functions are below it: read
//!   with `Read`, created, replaced and deleted with `All`.
//! - A database's client encryption keys are below it: read with `Read`, created and replaced
//!   with `All`; a token on one of its containers is refused them.
//! - No token ever allows users, permissions, offers, or listing and creating databases.
//!
//! An Entra ID token is judged by [`entra_allows`]: data operations and metadata reads, never
//! management operations (databases, containers, throughput, users and permissions, scripts),
//! as the service's data-plane RBAC and the emulator answer them (403, substatus 5300).
//!
//! The decisions are pure functions of the grant and the request, so they are tested as a
//! table. Loading the grant (and checking the permission still exists) is `access.rs`'s.

use crate::error::{ApiError, ApiResult, Code};
use crate::operation::{Entra, KeyScope, Operation, Resource, Tokens, Verb};
use crate::routes::ResourcePath;
use lethedb_engine::{ErrorCode, PartitionKeyValue};
use serde_json::Value;

/// A permission's mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Read,
    All,
}

/// What a valid, unrevoked resource token allows.
#[derive(Clone, Debug, PartialEq)]
pub struct Grant {
    pub mode: Mode,
    /// The permission's resource as path segments (`dbs`, `db`, `colls`, `c`, ...), ids
    /// resolved to names where they name an existing resource.
    pub resource: Vec<String>,
    /// The permission's `resourcePartitionKey`, in the engine's type.
    pub partition_key: Option<PartitionKeyValue>,
}

/// How an operation is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    /// The account: every token may read it (the SDKs start there).
    Account,
    /// Never with a resource token.
    Never,
    /// A read of the resource or below it.
    Read,
    /// A read of the resource, below it, or of one of its ancestors (database, container).
    ReadOrAncestor,
    /// A container's partition key ranges: read when the grant is the container, within it, or
    /// above it.
    Ranges,
    /// A change at or below the resource: `All` only.
    Write,
}

fn rule(operation: Operation) -> (Rule, KeyScope) {
    match operation {
        Operation::ReadAccount => (Rule::Account, KeyScope::Ignored),
        Operation::Resource(resource, verb) => (resource_rule(resource, verb), KeyScope::Ignored),
        Operation::ReadPartitionKeyRanges => (Rule::Ranges, KeyScope::Ignored),
        Operation::DeletePartition | Operation::ExecuteStoredProcedure => {
            (Rule::Write, KeyScope::Header)
        }
        Operation::Item(item) if item.is_read() => (Rule::Read, item.key_scope()),
        Operation::Item(item) => (Rule::Write, item.key_scope()),
    }
}

/// A verb on a catalog resource, by the row's `tokens`.
fn resource_rule(resource: Resource, verb: Verb) -> Rule {
    match (resource.row().tokens, verb) {
        (Tokens::Never, _) => Rule::Never,
        (Tokens::ScopedReadFromBelow, Verb::Read) => Rule::ReadOrAncestor,
        (Tokens::Scoped | Tokens::ScopedReadFromBelow, verb) if verb.is_read() => Rule::Read,
        (Tokens::Scoped | Tokens::ScopedReadFromBelow, _) => Rule::Write,
    }
}

/// Whether an Entra ID token may perform the operation: what the data plane's role-based access
/// covers (reading metadata, items, queries, the change feed, conflicts), not management.
pub fn entra_allows(operation: Operation) -> bool {
    match operation {
        Operation::ReadAccount
        | Operation::ReadPartitionKeyRanges
        | Operation::DeletePartition
        | Operation::Item(_)
        | Operation::ExecuteStoredProcedure => true,
        Operation::Resource(resource, verb) => {
            resource.row().entra == Entra::Reads && verb.is_read()
        }
    }
}

impl Grant {
    /// Whether the segments lie at or below the grant's resource.
    fn covers(&self, segments: &[String]) -> bool {
        segments.len() >= self.resource.len()
            && segments[..self.resource.len()] == self.resource[..]
    }

    /// Whether the segments name one resource above the grant's.
    fn is_ancestor(&self, segments: &[String]) -> bool {
        !segments.is_empty()
            && segments.len().is_multiple_of(2)
            && segments.len() < self.resource.len()
            && self.resource[..segments.len()] == segments[..]
    }

    /// Whether judging `operation` looks at the request's partition key header: only when the
    /// grant is limited to one partition and the operation is in one.
    pub fn reads_partition_key(&self, operation: Operation) -> bool {
        self.partition_key.is_some() && rule(operation).1 != KeyScope::Ignored
    }

    /// Whether the grant allows `operation` on `path` with this partition key (the header's,
    /// parsed) and body.
    pub fn allows(
        &self,
        operation: Operation,
        path: &ResourcePath,
        partition_key: Option<&PartitionKeyValue>,
        body: &[u8],
    ) -> bool {
        let segments = &path.segments;
        let (rule, scope) = rule(operation);
        // No token reaches the account's own lists (databases, offers).
        let account_list = segments.len() < 2;
        let in_scope = match rule {
            Rule::Account => return true,
            Rule::Never => false,
            _ if account_list => false,
            Rule::Read => self.covers(segments),
            Rule::ReadOrAncestor => self.covers(segments) || self.is_ancestor(segments),
            Rule::Ranges => {
                let container = &segments[..segments.len().min(4)];
                self.covers(segments) || self.is_ancestor(container)
            }
            Rule::Write => self.mode == Mode::All && self.covers(segments),
        };
        in_scope && self.partition_allows(scope, partition_key, body)
    }

    fn partition_allows(
        &self,
        scope: KeyScope,
        header: Option<&PartitionKeyValue>,
        body: &[u8],
    ) -> bool {
        let Some(granted) = &self.partition_key else {
            return true;
        };
        // One logical partition is one stored key: values compare as the engine encodes them.
        let granted = granted.encode();
        let matches = |key: &PartitionKeyValue| key.encode() == granted;
        match scope {
            KeyScope::Ignored => true,
            KeyScope::Header => header.is_some_and(matches),
            KeyScope::Batch => {
                if header.is_some_and(|key| !matches(key)) {
                    return false;
                }
                // The operations as the engine will read them: each one's own key, else the
                // header's.
                let operations = serde_json::from_slice::<Value>(body)
                    .ok()
                    .and_then(|body| lethedb_engine::parse_batch(&body).ok());
                operations.is_some_and(|operations| {
                    operations
                        .iter()
                        .all(|operation| match (&operation.partition_key, header) {
                            (Some(key), _) => matches(key),
                            (None, header) => header.is_some(),
                        })
                })
            }
        }
    }
}

/// A permission's `resourcePartitionKey` in the engine's type: absent or `null` is none; an
/// array of parts is the key, as the SDKs send it; a bare value is a key of that one part
/// (accepted as it always was). Anything else is refused with a 400 when the permission is
/// written.
pub fn granted_partition_key(permission: &Value) -> ApiResult<Option<PartitionKeyValue>> {
    let invalid = || {
        ApiError::new(
            Code::Engine(ErrorCode::InvalidDocument),
            "The resourcePartitionKey of a permission must be a partition key value.",
        )
    };
    let parts = match permission.get("resourcePartitionKey") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(parts)) => parts.clone(),
        Some(Value::Object(_)) => return Err(invalid()),
        Some(one) => vec![one.clone()],
    };
    PartitionKeyValue::parse_json_text(&Value::Array(parts).to_string())
        .map(Some)
        .map_err(|_| invalid())
}
