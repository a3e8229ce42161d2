//! What a resource token allows: one rule per [`Operation`] (an exhaustive `match`, so a new
//! operation does not compile until it has one), the permission's scope and mode, and its
//! partition key.
//!
//! - A `Read` permission allows reads, read feeds, queries, query plans and the change feed on
//!   its resource and below it; `All` allows every operation there, writes and batches too.
//! - Either also allows reading the ancestors the SDKs read before the resource itself: the
//!   account (`GET /`), the database, the container and its partition key ranges.
//! - A `resourcePartitionKey` limits item operations to that logical partition: a request for
//!   another key, a batch holding one, or a query or feed across partitions is refused.
//! - A container's stored procedures, triggers and user-defined functions are below it: read
//!   with `Read`, created, replaced and deleted with `All`.
//! - No token ever allows users, permissions, offers, or listing and creating databases.
//!
//! An Entra ID token is judged by [`entra_allows`]: data operations and metadata reads, never
//! management operations (databases, containers, throughput, users and permissions, scripts),
//! as the service's data-plane RBAC and the emulator answer them (403, substatus 5300).
//!
//! The decisions are pure functions of the grant and the request, so they are tested as a
//! table. Loading the grant (and checking the permission still exists) is `access.rs`'s.

use crate::operation::Operation;
use crate::routes::ResourcePath;
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
    /// The permission's `resourcePartitionKey`, as an array of its components.
    pub partition_key: Option<Vec<Value>>,
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

/// Whether a partition-scoped grant looks at the request's partition key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Partition {
    /// Not an item operation: the key does not matter.
    Ignored,
    /// The request must name the grant's key (`x-ms-documentdb-partitionkey`).
    Header,
    /// A batch: the header, if any, and every operation's `partitionKey`.
    Batch,
}

fn rule(operation: Operation) -> (Rule, Partition) {
    use Partition::{Batch, Header, Ignored};
    match operation {
        Operation::ReadAccount => (Rule::Account, Ignored),
        Operation::ReadDatabaseFeed | Operation::QueryDatabases | Operation::CreateDatabase => {
            (Rule::Never, Ignored)
        }
        Operation::ReadDatabase | Operation::ReadContainer => (Rule::ReadOrAncestor, Ignored),
        Operation::DeleteDatabase
        | Operation::CreateContainer
        | Operation::ReplaceContainer
        | Operation::DeleteContainer => (Rule::Write, Ignored),
        Operation::ReadContainerFeed | Operation::QueryContainers => (Rule::Read, Ignored),
        Operation::ReadPartitionKeyRanges => (Rule::Ranges, Ignored),
        Operation::ReadFeed | Operation::ReadChangeFeed | Operation::Query | Operation::Read => {
            (Rule::Read, Header)
        }
        Operation::QueryPlan => (Rule::Read, Ignored),
        Operation::Batch => (Rule::Write, Batch),
        Operation::Create
        | Operation::Upsert
        | Operation::Replace
        | Operation::Patch
        | Operation::Delete
        | Operation::DeletePartition
        | Operation::ExecuteStoredProcedure => (Rule::Write, Header),
        Operation::ReadOfferFeed
        | Operation::QueryOffers
        | Operation::ReadOffer
        | Operation::ReplaceOffer => (Rule::Never, Ignored),
        Operation::ReadUserFeed
        | Operation::CreateUser
        | Operation::QueryUsers
        | Operation::ReadUser
        | Operation::ReplaceUser
        | Operation::UpsertUser
        | Operation::DeleteUser
        | Operation::ReadPermissionFeed
        | Operation::QueryPermissions
        | Operation::CreatePermission
        | Operation::ReadPermission
        | Operation::ReplacePermission
        | Operation::UpsertPermission
        | Operation::DeletePermission => (Rule::Never, Ignored),
        Operation::ReadStoredProcedureFeed
        | Operation::ReadUserDefinedFunctionFeed
        | Operation::ReadTriggerFeed
        | Operation::ReadConflictFeed
        | Operation::QueryConflicts
        | Operation::ReadConflict
        | Operation::QueryStoredProcedures
        | Operation::ReadStoredProcedure
        | Operation::QueryTriggers
        | Operation::ReadTrigger
        | Operation::QueryUserDefinedFunctions
        | Operation::ReadUserDefinedFunction => (Rule::Read, Ignored),
        Operation::CreateStoredProcedure
        | Operation::ReplaceStoredProcedure
        | Operation::UpsertStoredProcedure
        | Operation::DeleteStoredProcedure
        | Operation::CreateTrigger
        | Operation::ReplaceTrigger
        | Operation::UpsertTrigger
        | Operation::DeleteTrigger
        | Operation::CreateUserDefinedFunction
        | Operation::ReplaceUserDefinedFunction
        | Operation::UpsertUserDefinedFunction
        | Operation::DeleteUserDefinedFunction => (Rule::Write, Ignored),
    }
}

/// Whether an Entra ID token may perform the operation: what the data plane's role-based access
/// covers (reading metadata, items, queries, the change feed, conflicts), not management.
pub fn entra_allows(operation: Operation) -> bool {
    match operation {
        Operation::ReadAccount
        | Operation::ReadDatabaseFeed
        | Operation::QueryDatabases
        | Operation::ReadDatabase
        | Operation::ReadContainerFeed
        | Operation::QueryContainers
        | Operation::ReadContainer
        | Operation::ReadPartitionKeyRanges
        | Operation::ReadFeed
        | Operation::ReadChangeFeed
        | Operation::Query
        | Operation::QueryPlan
        | Operation::Batch
        | Operation::Create
        | Operation::Upsert
        | Operation::Read
        | Operation::Replace
        | Operation::Patch
        | Operation::Delete
        | Operation::DeletePartition
        | Operation::ReadConflictFeed
        | Operation::QueryConflicts
        | Operation::ReadConflict
        | Operation::ExecuteStoredProcedure => true,
        Operation::CreateDatabase
        | Operation::DeleteDatabase
        | Operation::CreateContainer
        | Operation::ReplaceContainer
        | Operation::DeleteContainer
        | Operation::ReadOfferFeed
        | Operation::QueryOffers
        | Operation::ReadOffer
        | Operation::ReplaceOffer
        | Operation::ReadUserFeed
        | Operation::CreateUser
        | Operation::QueryUsers
        | Operation::ReadUser
        | Operation::ReplaceUser
        | Operation::UpsertUser
        | Operation::DeleteUser
        | Operation::ReadPermissionFeed
        | Operation::QueryPermissions
        | Operation::CreatePermission
        | Operation::ReadPermission
        | Operation::ReplacePermission
        | Operation::UpsertPermission
        | Operation::DeletePermission
        | Operation::ReadStoredProcedureFeed
        | Operation::ReadUserDefinedFunctionFeed
        | Operation::ReadTriggerFeed
        | Operation::QueryStoredProcedures
        | Operation::ReadStoredProcedure
        | Operation::QueryTriggers
        | Operation::ReadTrigger
        | Operation::QueryUserDefinedFunctions
        | Operation::ReadUserDefinedFunction
        | Operation::CreateStoredProcedure
        | Operation::ReplaceStoredProcedure
        | Operation::UpsertStoredProcedure
        | Operation::DeleteStoredProcedure
        | Operation::CreateTrigger
        | Operation::ReplaceTrigger
        | Operation::UpsertTrigger
        | Operation::DeleteTrigger
        | Operation::CreateUserDefinedFunction
        | Operation::ReplaceUserDefinedFunction
        | Operation::UpsertUserDefinedFunction
        | Operation::DeleteUserDefinedFunction => false,
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

    /// Whether the grant allows `operation` on `path` with this partition key header and body.
    pub fn allows(
        &self,
        operation: Operation,
        path: &ResourcePath,
        partition_key: Option<&str>,
        body: &[u8],
    ) -> bool {
        let segments = &path.segments;
        let (rule, partition) = rule(operation);
        let in_scope = match rule {
            Rule::Account => return true,
            Rule::Never => false,
            Rule::Read => self.covers(segments),
            Rule::ReadOrAncestor => self.covers(segments) || self.is_ancestor(segments),
            Rule::Ranges => {
                let container = &segments[..segments.len().min(4)];
                self.covers(segments) || self.is_ancestor(container)
            }
            Rule::Write => self.mode == Mode::All && self.covers(segments),
        };
        in_scope && self.partition_allows(partition, partition_key, body)
    }

    fn partition_allows(&self, partition: Partition, header: Option<&str>, body: &[u8]) -> bool {
        let Some(granted) = &self.partition_key else {
            return true;
        };
        let matches = |text: &str| {
            serde_json::from_str::<Value>(text).is_ok_and(|value| same_key(granted, &value))
        };
        match partition {
            Partition::Ignored => true,
            Partition::Header => header.is_some_and(matches),
            Partition::Batch => {
                if header.is_some_and(|text| !matches(text)) {
                    return false;
                }
                let Ok(Value::Array(operations)) = serde_json::from_slice::<Value>(body) else {
                    return false;
                };
                operations.iter().all(|operation| {
                    match operation.get("partitionKey").and_then(Value::as_str) {
                        Some(text) => matches(text),
                        None => header.is_some(),
                    }
                })
            }
        }
    }
}

/// Whether a request's partition key (JSON, an array or one value) is the granted one.
fn same_key(granted: &[Value], requested: &Value) -> bool {
    let requested = match requested {
        Value::Array(parts) => parts.as_slice(),
        one => std::slice::from_ref(one),
    };
    granted.len() == requested.len()
        && granted.iter().zip(requested).all(|(a, b)| match (a, b) {
            (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
            _ => a == b,
        })
}

/// A permission's `resourcePartitionKey` as the array of its components.
pub fn granted_partition_key(permission: &Value) -> Option<Vec<Value>> {
    match permission.get("resourcePartitionKey")? {
        Value::Null => None,
        Value::Array(parts) => Some(parts.clone()),
        one => Some(vec![one.clone()]),
    }
}
