//! What a request is: one [`Operation`] per Cosmos operation the server serves, decided once
//! from the method, the resource path and the request head by [`classify`].
//!
//! An operation is a product, not a flat list: a catalog resource and a verb
//! ([`Operation::Resource`]), an operation on a container's items ([`Operation::Item`]), or one of
//! the few that are neither. Everything the server decides per catalog resource is one row of
//! [`Resource::row`]: its name, the verbs it answers, what a resource token and an Entra ID
//! token may do with it. A new child kind in the engine's `ResourceKind` does not compile until
//! it has a row, and then it is classified, named, routed and authorized without another list.
//! Routing, metrics, logs and authorization all read the same decision. This module looks only
//! at the request line and head: it reads no body, touches no engine, and does not know whether
//! the named resources exist.

use crate::error::{ApiError, ApiResult, Code};
use crate::head::RequestHead;
use crate::routes::ResourcePath;
use axum::http::Method;
use lethedb_engine::ResourceKind;
use std::collections::HashMap;
use std::sync::LazyLock;

/// Every operation the server serves. Adding a top-level variant without a handler, a name or
/// a rule fails to compile: `handlers::route`, [`Operation::name`] and the grants match on it
/// exhaustively.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `GET /`: the account.
    ReadAccount,
    /// A verb on a catalog resource: databases, containers, offers and the child kinds of the
    /// engine's generic catalog (users, permissions, scripts, conflicts, client encryption
    /// keys). Upserts are POSTs with
    /// `x-ms-documentdb-is-upsert`; only the verbs of the resource's row are classified.
    Resource(Resource, Verb),
    /// A container's partition key ranges (`GET .../pkranges`).
    ReadPartitionKeyRanges,
    /// Deleting every item of one logical partition.
    DeletePartition,
    /// An operation on a container's items, which draws on the container's throughput budget.
    Item(ItemOperation),
    /// Running a stored procedure (`POST .../sprocs/{id}`) in one logical partition.
    ExecuteStoredProcedure,
}

/// A catalog resource that answers the common verbs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Resource {
    Database,
    Container,
    Offer,
    /// A kind the engine's generic catalog holds.
    Child(ResourceKind),
}

/// What is done to a catalog resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    /// A read feed: `GET` on the resource's list.
    Feed,
    /// A query: `POST` on the list with the query flag or content type.
    Query,
    Create,
    Upsert,
    Read,
    Replace,
    Delete,
}

/// What is done to a container's items.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ItemOperation {
    /// Reading a container's items page by page, without a query.
    ReadFeed,
    /// A change-feed read (`A-IM: Incremental feed` or `Full-Fidelity Feed`).
    ReadChangeFeed,
    Query,
    /// The SDKs ask for a query plan before running a query.
    QueryPlan,
    /// A transactional batch, or a bulk request when `x-ms-cosmos-batch-atomic` is false.
    Batch,
    Create,
    Upsert,
    Read,
    Replace,
    Patch,
    Delete,
}

/// How far a resource token reaches a catalog resource (judged in `grants.rs`). No token
/// reaches the account's own lists (databases, offers), whatever the row says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tokens {
    /// No resource token reaches it.
    Never,
    /// Read with `Read` at or below the grant's resource, changed with `All` there.
    Scoped,
    /// As `Scoped`, and read from below too: the SDKs read the database and container of a
    /// token's resource before the resource itself.
    ScopedReadFromBelow,
}

/// Whether an Entra ID token may read a catalog resource. No Entra ID token changes one: the
/// data plane's role-based access covers data, not management.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entra {
    Reads,
    Never,
}

/// How a partition-scoped resource token judges an operation's partition key (`grants.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyScope {
    /// Not in one logical partition: the key does not matter.
    Ignored,
    /// The request must name the grant's key (`x-ms-documentdb-partitionkey`).
    Header,
    /// A batch: the header, if any, and every operation's own key.
    Batch,
}

/// Everything the server decides about one catalog resource.
#[derive(Clone, Copy, Debug)]
pub struct ResourceRow {
    /// The resource in operation names: `Read{name}`, `Read{name}Feed`, `Query{name}s`.
    pub name: &'static str,
    /// The verbs it answers; another is a 405.
    pub verbs: &'static [Verb],
    pub tokens: Tokens,
    pub entra: Entra,
}

const fn row(
    name: &'static str,
    verbs: &'static [Verb],
    tokens: Tokens,
    entra: Entra,
) -> ResourceRow {
    ResourceRow {
        name,
        verbs,
        tokens,
        entra,
    }
}

/// Every verb: what each of the engine's generic child kinds answers but conflicts.
const EVERY_VERB: &[Verb] = &[
    Verb::Feed,
    Verb::Query,
    Verb::Create,
    Verb::Upsert,
    Verb::Read,
    Verb::Replace,
    Verb::Delete,
];

impl Resource {
    /// The table of catalog resources, one row each.
    pub fn row(self) -> ResourceRow {
        use Verb::{Create, Delete, Feed, Query, Read, Replace};
        match self {
            Resource::Database => row(
                "Database",
                &[Feed, Query, Create, Read, Delete],
                Tokens::ScopedReadFromBelow,
                Entra::Reads,
            ),
            Resource::Container => row(
                "Container",
                &[Feed, Query, Create, Read, Replace, Delete],
                Tokens::ScopedReadFromBelow,
                Entra::Reads,
            ),
            Resource::Offer => row(
                "Offer",
                &[Feed, Query, Read, Replace],
                Tokens::Never,
                Entra::Never,
            ),
            Resource::Child(kind) => match kind {
                ResourceKind::User => row("User", EVERY_VERB, Tokens::Never, Entra::Never),
                ResourceKind::Permission => {
                    row("Permission", EVERY_VERB, Tokens::Never, Entra::Never)
                }
                ResourceKind::StoredProcedure => {
                    row("StoredProcedure", EVERY_VERB, Tokens::Scoped, Entra::Never)
                }
                ResourceKind::Trigger => row("Trigger", EVERY_VERB, Tokens::Scoped, Entra::Never),
                ResourceKind::UserDefinedFunction => row(
                    "UserDefinedFunction",
                    EVERY_VERB,
                    Tokens::Scoped,
                    Entra::Never,
                ),
                // One region never has a conflict: they can only be listed and read.
                ResourceKind::Conflict => row(
                    "Conflict",
                    &[Feed, Query, Read],
                    Tokens::Scoped,
                    Entra::Reads,
                ),
                // The SDKs create, read, rewrap (replace) and list client encryption keys; none
                // deletes or upserts one, and a key goes only with its database. A token on a
                // container of the database is refused them (403), as the SDKs' tests expect.
                ResourceKind::ClientEncryptionKey => row(
                    "ClientEncryptionKey",
                    &[Feed, Query, Create, Read, Replace],
                    Tokens::Scoped,
                    Entra::Reads,
                ),
            },
        }
    }

    /// Every catalog resource, in the order [`Operation::all`] lists them.
    fn all() -> impl Iterator<Item = Resource> {
        [Resource::Database, Resource::Container, Resource::Offer]
            .into_iter()
            .chain(ResourceKind::ALL.into_iter().map(Resource::Child))
    }
}

impl Verb {
    /// Whether the verb changes nothing.
    pub fn is_read(self) -> bool {
        match self {
            Verb::Feed | Verb::Query | Verb::Read => true,
            Verb::Create | Verb::Upsert | Verb::Replace | Verb::Delete => false,
        }
    }

    /// The operation's name for this verb on the resource named `name`.
    fn operation_name(self, name: &str) -> String {
        match self {
            Verb::Feed => format!("Read{name}Feed"),
            Verb::Query => format!("Query{name}s"),
            Verb::Create => format!("Create{name}"),
            Verb::Upsert => format!("Upsert{name}"),
            Verb::Read => format!("Read{name}"),
            Verb::Replace => format!("Replace{name}"),
            Verb::Delete => format!("Delete{name}"),
        }
    }
}

impl ItemOperation {
    pub const ALL: [ItemOperation; 11] = [
        ItemOperation::ReadFeed,
        ItemOperation::ReadChangeFeed,
        ItemOperation::Query,
        ItemOperation::QueryPlan,
        ItemOperation::Batch,
        ItemOperation::Create,
        ItemOperation::Upsert,
        ItemOperation::Read,
        ItemOperation::Replace,
        ItemOperation::Patch,
        ItemOperation::Delete,
    ];

    /// The table of item operations: name, whether it only reads, and how a partition-scoped
    /// token judges its key.
    fn row(self) -> (&'static str, bool, KeyScope) {
        use KeyScope::{Batch, Header, Ignored};
        match self {
            ItemOperation::ReadFeed => ("ReadFeed", true, Header),
            ItemOperation::ReadChangeFeed => ("ReadChangeFeed", true, Header),
            ItemOperation::Query => ("Query", true, Header),
            // A plan reads no item.
            ItemOperation::QueryPlan => ("QueryPlan", true, Ignored),
            ItemOperation::Batch => ("Batch", false, Batch),
            ItemOperation::Create => ("Create", false, Header),
            ItemOperation::Upsert => ("Upsert", false, Header),
            ItemOperation::Read => ("Read", true, Header),
            ItemOperation::Replace => ("Replace", false, Header),
            ItemOperation::Patch => ("Patch", false, Header),
            ItemOperation::Delete => ("Delete", false, Header),
        }
    }

    pub fn is_read(self) -> bool {
        self.row().1
    }

    pub fn key_scope(self) -> KeyScope {
        self.row().2
    }
}

/// Every operation, listed once from the tables.
static ALL: LazyLock<Vec<Operation>> = LazyLock::new(|| {
    let resources = |wanted: fn(&Resource) -> bool| {
        Resource::all().filter(wanted).flat_map(|resource| {
            let verbs = resource.row().verbs;
            verbs
                .iter()
                .map(move |verb| Operation::Resource(resource, *verb))
        })
    };
    // Databases and containers first, then what is in containers, then the rest.
    let storage =
        |resource: &Resource| matches!(resource, Resource::Database | Resource::Container);
    let others =
        |resource: &Resource| !matches!(resource, Resource::Database | Resource::Container);
    std::iter::once(Operation::ReadAccount)
        .chain(resources(storage))
        .chain([
            Operation::ReadPartitionKeyRanges,
            Operation::DeletePartition,
        ])
        .chain(ItemOperation::ALL.into_iter().map(Operation::Item))
        .chain(resources(others))
        .chain(std::iter::once(Operation::ExecuteStoredProcedure))
        .collect()
});

/// The names of the catalog operations, made once from the rows.
static RESOURCE_NAMES: LazyLock<HashMap<(Resource, Verb), String>> = LazyLock::new(|| {
    Resource::all()
        .flat_map(|resource| {
            let name = resource.row().name;
            EVERY_VERB
                .iter()
                .map(move |verb| ((resource, *verb), verb.operation_name(name)))
        })
        .collect()
});

impl Operation {
    /// Every operation the server classifies, for tests and documentation.
    pub fn all() -> &'static [Operation] {
        &ALL
    }

    /// The stable name used as the metrics label and in logs. Names already scraped by
    /// dashboards (`Create`, `Upsert`, `ReadFeed`, ...) must not change: a test pins them all.
    pub fn name(self) -> &'static str {
        match self {
            Operation::ReadAccount => "ReadAccount",
            Operation::Resource(resource, verb) => RESOURCE_NAMES
                .get(&(resource, verb))
                .map_or("Other", String::as_str),
            Operation::ReadPartitionKeyRanges => "ReadPartitionKeyRanges",
            Operation::DeletePartition => "DeletePartition",
            Operation::Item(item) => item.row().0,
            Operation::ExecuteStoredProcedure => "ExecuteStoredProcedure",
        }
    }

    /// Whether the operation changes nothing (a read-only resource token may perform it).
    pub fn is_read(self) -> bool {
        match self {
            Operation::ReadAccount | Operation::ReadPartitionKeyRanges => true,
            Operation::DeletePartition | Operation::ExecuteStoredProcedure => false,
            Operation::Resource(_, verb) => verb.is_read(),
            Operation::Item(item) => item.is_read(),
        }
    }

    /// Whether the operation may change data (a batch counts, whatever it holds).
    pub fn is_write(self) -> bool {
        !self.is_read()
    }

    /// Whether the operation works on a container's items, and so draws on the container's
    /// throughput budget: admitted while this second's budget lasts, charged afterwards.
    pub fn is_item_operation(self) -> bool {
        match self {
            Operation::Item(_) | Operation::ExecuteStoredProcedure => true,
            Operation::ReadAccount
            | Operation::Resource(..)
            | Operation::ReadPartitionKeyRanges
            | Operation::DeletePartition => false,
        }
    }
}

/// Why a request names no operation.
enum Miss {
    /// A resource that does not answer this method: 405.
    Verb,
    /// No resource LetheDB serves: 404.
    Resource,
}

/// Decides what a request is. An unknown resource type is a 404 and a verb the resource does
/// not support is a 405, both Cosmos-shaped.
pub fn classify(method: &Method, path: &ResourcePath, head: &RequestHead) -> ApiResult<Operation> {
    let (types, names_one) = path.shape();
    let found = match types.as_slice() {
        [] if method == Method::GET => Ok(Operation::ReadAccount),
        [] => Err(Miss::Verb),
        ["dbs", "colls", "docs"] => item_operation(method, names_one, head)
            .map(Operation::Item)
            .ok_or(Miss::Verb),
        ["dbs", "colls", "pkranges"] if method == Method::GET && !names_one => {
            Ok(Operation::ReadPartitionKeyRanges)
        }
        ["dbs", "colls", "operations"]
            if method == Method::POST && names_one && path.id(2) == "partitionkeydelete" =>
        {
            Ok(Operation::DeletePartition)
        }
        types => match catalog_resource(types) {
            Some(resource) => resource_operation(resource, method, names_one, head),
            None => Err(Miss::Resource),
        },
    };
    found.map_err(|miss| match miss {
        Miss::Verb => ApiError::new(
            Code::MethodNotAllowed,
            format!(
                "The requested verb {method} is not supported on resource type '{}'.",
                path.resource_type
            ),
        ),
        Miss::Resource => ApiError::new(
            Code::UnknownResource,
            format!(
                "The resource type '{}' at '{}' is not supported by LetheDB.",
                path.resource_type, path.link
            ),
        ),
    })
}

/// The catalog resource the path's types name; a child kind only under its own parent.
fn catalog_resource(types: &[&str]) -> Option<Resource> {
    match types {
        ["dbs"] => Some(Resource::Database),
        ["dbs", "colls"] => Some(Resource::Container),
        ["offers"] => Some(Resource::Offer),
        [parents @ .., last] => {
            let kind = ResourceKind::from_path_segment(last)?;
            (kind.parent_path_types() == parents).then_some(Resource::Child(kind))
        }
        [] => None,
    }
}

/// The verb a method makes on a catalog resource's list or on one of them.
fn resource_operation(
    resource: Resource,
    method: &Method,
    names_one: bool,
    head: &RequestHead,
) -> Result<Operation, Miss> {
    let row = resource.row();
    let verb = match (method, names_one) {
        (&Method::POST, true) if resource == Resource::Child(ResourceKind::StoredProcedure) => {
            return Ok(Operation::ExecuteStoredProcedure);
        }
        (&Method::GET, false) => Some(Verb::Feed),
        // The offers feed answers a POST as a query whatever its headers say, as the service does.
        (&Method::POST, false) if head.is_query || resource == Resource::Offer => Some(Verb::Query),
        (&Method::POST, false) if head.is_upsert && row.verbs.contains(&Verb::Upsert) => {
            Some(Verb::Upsert)
        }
        (&Method::POST, false) => Some(Verb::Create),
        (&Method::GET, true) => Some(Verb::Read),
        (&Method::PUT, true) => Some(Verb::Replace),
        (&Method::DELETE, true) => Some(Verb::Delete),
        _ => None,
    };
    match verb {
        Some(verb) if row.verbs.contains(&verb) => Ok(Operation::Resource(resource, verb)),
        // A resource that can only be read by id (a conflict) names nothing for other verbs.
        _ if names_one
            && !row
                .verbs
                .iter()
                .any(|verb| matches!(verb, Verb::Replace | Verb::Delete)) =>
        {
            Err(Miss::Resource)
        }
        _ => Err(Miss::Verb),
    }
}

/// The item operation a method and head make on a container's items or on one item.
fn item_operation(method: &Method, names_one: bool, head: &RequestHead) -> Option<ItemOperation> {
    Some(match (method, names_one) {
        (&Method::POST, false) if head.is_batch => ItemOperation::Batch,
        (&Method::POST, false) if head.is_query_plan => ItemOperation::QueryPlan,
        (&Method::POST, false) if head.is_query => ItemOperation::Query,
        (&Method::POST, false) if head.is_upsert => ItemOperation::Upsert,
        (&Method::POST, false) => ItemOperation::Create,
        (&Method::GET, false) if head.change_feed.is_some() => ItemOperation::ReadChangeFeed,
        (&Method::GET, false) => ItemOperation::ReadFeed,
        (&Method::GET, true) => ItemOperation::Read,
        (&Method::PUT, true) => ItemOperation::Replace,
        (&Method::PATCH, true) => ItemOperation::Patch,
        (&Method::DELETE, true) => ItemOperation::Delete,
        _ => return None,
    })
}
