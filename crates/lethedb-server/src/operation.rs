//! What a request is: one [`Operation`] per Cosmos operation the server serves, decided once
//! from the method, the resource path and the headers by [`classify`].
//!
//! Routing, metrics, logs and resource-token authorization all read the same decision,
//! so they cannot drift apart. This module looks only at the request line and headers: it reads
//! no body, touches no engine, and does not know whether the named resources exist.

use crate::error::{ApiError, ApiResult, Code};
use crate::request::{header, header_is_true, is_query};
use crate::routes::ResourcePath;
use axum::http::{HeaderMap, Method};

/// Every operation the server serves. Adding one without a handler fails to compile, because
/// `handlers::route` matches on it exhaustively.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    ReadAccount,
    ReadDatabaseFeed,
    QueryDatabases,
    CreateDatabase,
    ReadDatabase,
    DeleteDatabase,
    ReadContainerFeed,
    QueryContainers,
    CreateContainer,
    ReadContainer,
    ReplaceContainer,
    DeleteContainer,
    /// Reading a container's items page by page, without a query.
    ReadFeed,
    /// A change-feed read (`A-IM: Incremental feed`), refused until the change feed exists.
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
    ReadPartitionKeyRanges,
    /// Deleting every item of one logical partition.
    DeletePartition,
    ReadOfferFeed,
    QueryOffers,
    ReadOffer,
    ReplaceOffer,
    /// The feeds of the child resources the engine's generic catalog holds (users, scripts,
    /// conflicts).
    ReadUserFeed,
    ReadStoredProcedureFeed,
    ReadUserDefinedFunctionFeed,
    ReadTriggerFeed,
    ReadConflictFeed,
    /// Users of a database (`dbs/{db}/users`) and their permissions
    /// (`dbs/{db}/users/{user}/permissions`); upserts are POSTs with `x-ms-documentdb-is-upsert`.
    CreateUser,
    QueryUsers,
    ReadUser,
    ReplaceUser,
    UpsertUser,
    DeleteUser,
    ReadPermissionFeed,
    QueryPermissions,
    CreatePermission,
    ReadPermission,
    ReplacePermission,
    UpsertPermission,
    DeletePermission,
    QueryConflicts,
    ReadConflict,
    /// Stored procedures, triggers and user-defined functions of a container
    /// (`dbs/{db}/colls/{c}/sprocs`, `triggers`, `udfs`): their REST resources. Executing a
    /// stored procedure (a POST to its own path) is not one of these.
    CreateStoredProcedure,
    QueryStoredProcedures,
    ReadStoredProcedure,
    ReplaceStoredProcedure,
    UpsertStoredProcedure,
    DeleteStoredProcedure,
    CreateTrigger,
    QueryTriggers,
    ReadTrigger,
    ReplaceTrigger,
    UpsertTrigger,
    DeleteTrigger,
    CreateUserDefinedFunction,
    QueryUserDefinedFunctions,
    ReadUserDefinedFunction,
    ReplaceUserDefinedFunction,
    UpsertUserDefinedFunction,
    DeleteUserDefinedFunction,
    /// Running a stored procedure (`POST .../sprocs/{id}`) in one logical partition.
    ExecuteStoredProcedure,
}

impl Operation {
    /// Every operation, for tests and documentation.
    pub const ALL: [Operation; 68] = [
        Operation::ReadAccount,
        Operation::ReadDatabaseFeed,
        Operation::QueryDatabases,
        Operation::CreateDatabase,
        Operation::ReadDatabase,
        Operation::DeleteDatabase,
        Operation::ReadContainerFeed,
        Operation::QueryContainers,
        Operation::CreateContainer,
        Operation::ReadContainer,
        Operation::ReplaceContainer,
        Operation::DeleteContainer,
        Operation::ReadFeed,
        Operation::ReadChangeFeed,
        Operation::Query,
        Operation::QueryPlan,
        Operation::Batch,
        Operation::Create,
        Operation::Upsert,
        Operation::Read,
        Operation::Replace,
        Operation::Patch,
        Operation::Delete,
        Operation::ReadPartitionKeyRanges,
        Operation::DeletePartition,
        Operation::ReadOfferFeed,
        Operation::QueryOffers,
        Operation::ReadOffer,
        Operation::ReplaceOffer,
        Operation::ReadUserFeed,
        Operation::ReadStoredProcedureFeed,
        Operation::ReadUserDefinedFunctionFeed,
        Operation::ReadTriggerFeed,
        Operation::ReadConflictFeed,
        Operation::CreateUser,
        Operation::QueryUsers,
        Operation::ReadUser,
        Operation::ReplaceUser,
        Operation::UpsertUser,
        Operation::DeleteUser,
        Operation::ReadPermissionFeed,
        Operation::QueryPermissions,
        Operation::CreatePermission,
        Operation::ReadPermission,
        Operation::ReplacePermission,
        Operation::UpsertPermission,
        Operation::DeletePermission,
        Operation::QueryConflicts,
        Operation::ReadConflict,
        Operation::CreateStoredProcedure,
        Operation::QueryStoredProcedures,
        Operation::ReadStoredProcedure,
        Operation::ReplaceStoredProcedure,
        Operation::UpsertStoredProcedure,
        Operation::DeleteStoredProcedure,
        Operation::CreateTrigger,
        Operation::QueryTriggers,
        Operation::ReadTrigger,
        Operation::ReplaceTrigger,
        Operation::UpsertTrigger,
        Operation::DeleteTrigger,
        Operation::CreateUserDefinedFunction,
        Operation::QueryUserDefinedFunctions,
        Operation::ReadUserDefinedFunction,
        Operation::ReplaceUserDefinedFunction,
        Operation::UpsertUserDefinedFunction,
        Operation::DeleteUserDefinedFunction,
        Operation::ExecuteStoredProcedure,
    ];

    /// The stable name used as the metrics label and in logs. Names already scraped by
    /// dashboards (`Create`, `Upsert`, `ReadFeed`, ...) must not change.
    pub fn name(self) -> &'static str {
        match self {
            Operation::ReadAccount => "ReadAccount",
            Operation::ReadDatabaseFeed => "ReadDatabaseFeed",
            Operation::QueryDatabases => "QueryDatabases",
            Operation::CreateDatabase => "CreateDatabase",
            Operation::ReadDatabase => "ReadDatabase",
            Operation::DeleteDatabase => "DeleteDatabase",
            Operation::ReadContainerFeed => "ReadContainerFeed",
            Operation::QueryContainers => "QueryContainers",
            Operation::CreateContainer => "CreateContainer",
            Operation::ReadContainer => "ReadContainer",
            Operation::ReplaceContainer => "ReplaceContainer",
            Operation::DeleteContainer => "DeleteContainer",
            Operation::ReadFeed => "ReadFeed",
            Operation::ReadChangeFeed => "ReadChangeFeed",
            Operation::Query => "Query",
            Operation::QueryPlan => "QueryPlan",
            Operation::Batch => "Batch",
            Operation::Create => "Create",
            Operation::Upsert => "Upsert",
            Operation::Read => "Read",
            Operation::Replace => "Replace",
            Operation::Patch => "Patch",
            Operation::Delete => "Delete",
            Operation::ReadPartitionKeyRanges => "ReadPartitionKeyRanges",
            Operation::DeletePartition => "DeletePartition",
            Operation::ReadOfferFeed => "ReadOfferFeed",
            Operation::QueryOffers => "QueryOffers",
            Operation::ReadOffer => "ReadOffer",
            Operation::ReplaceOffer => "ReplaceOffer",
            Operation::ReadUserFeed => "ReadUserFeed",
            Operation::ReadStoredProcedureFeed => "ReadStoredProcedureFeed",
            Operation::ReadUserDefinedFunctionFeed => "ReadUserDefinedFunctionFeed",
            Operation::ReadTriggerFeed => "ReadTriggerFeed",
            Operation::ReadConflictFeed => "ReadConflictFeed",
            Operation::CreateUser => "CreateUser",
            Operation::QueryUsers => "QueryUsers",
            Operation::ReadUser => "ReadUser",
            Operation::ReplaceUser => "ReplaceUser",
            Operation::UpsertUser => "UpsertUser",
            Operation::DeleteUser => "DeleteUser",
            Operation::ReadPermissionFeed => "ReadPermissionFeed",
            Operation::QueryPermissions => "QueryPermissions",
            Operation::CreatePermission => "CreatePermission",
            Operation::ReadPermission => "ReadPermission",
            Operation::ReplacePermission => "ReplacePermission",
            Operation::UpsertPermission => "UpsertPermission",
            Operation::DeletePermission => "DeletePermission",
            Operation::QueryConflicts => "QueryConflicts",
            Operation::ReadConflict => "ReadConflict",
            Operation::CreateStoredProcedure => "CreateStoredProcedure",
            Operation::QueryStoredProcedures => "QueryStoredProcedures",
            Operation::ReadStoredProcedure => "ReadStoredProcedure",
            Operation::ReplaceStoredProcedure => "ReplaceStoredProcedure",
            Operation::UpsertStoredProcedure => "UpsertStoredProcedure",
            Operation::DeleteStoredProcedure => "DeleteStoredProcedure",
            Operation::CreateTrigger => "CreateTrigger",
            Operation::QueryTriggers => "QueryTriggers",
            Operation::ReadTrigger => "ReadTrigger",
            Operation::ReplaceTrigger => "ReplaceTrigger",
            Operation::UpsertTrigger => "UpsertTrigger",
            Operation::DeleteTrigger => "DeleteTrigger",
            Operation::CreateUserDefinedFunction => "CreateUserDefinedFunction",
            Operation::QueryUserDefinedFunctions => "QueryUserDefinedFunctions",
            Operation::ReadUserDefinedFunction => "ReadUserDefinedFunction",
            Operation::ReplaceUserDefinedFunction => "ReplaceUserDefinedFunction",
            Operation::UpsertUserDefinedFunction => "UpsertUserDefinedFunction",
            Operation::DeleteUserDefinedFunction => "DeleteUserDefinedFunction",
            Operation::ExecuteStoredProcedure => "ExecuteStoredProcedure",
        }
    }

    /// Whether the operation changes nothing (a read-only resource token may perform it).
    pub fn is_read(self) -> bool {
        match self {
            Operation::ReadAccount
            | Operation::ReadDatabaseFeed
            | Operation::QueryDatabases
            | Operation::ReadDatabase
            | Operation::ReadContainerFeed
            | Operation::QueryContainers
            | Operation::ReadContainer
            | Operation::ReadFeed
            | Operation::ReadChangeFeed
            | Operation::Query
            | Operation::QueryPlan
            | Operation::Read
            | Operation::ReadPartitionKeyRanges
            | Operation::ReadOfferFeed
            | Operation::QueryOffers
            | Operation::ReadOffer
            | Operation::ReadUserFeed
            | Operation::ReadStoredProcedureFeed
            | Operation::ReadUserDefinedFunctionFeed
            | Operation::ReadTriggerFeed
            | Operation::ReadConflictFeed
            | Operation::QueryUsers
            | Operation::ReadUser
            | Operation::ReadPermissionFeed
            | Operation::QueryPermissions
            | Operation::ReadPermission
            | Operation::QueryConflicts
            | Operation::ReadConflict
            | Operation::QueryStoredProcedures
            | Operation::ReadStoredProcedure
            | Operation::QueryTriggers
            | Operation::ReadTrigger
            | Operation::QueryUserDefinedFunctions
            | Operation::ReadUserDefinedFunction => true,
            Operation::CreateDatabase
            | Operation::DeleteDatabase
            | Operation::CreateContainer
            | Operation::ReplaceContainer
            | Operation::DeleteContainer
            | Operation::Batch
            | Operation::Create
            | Operation::Upsert
            | Operation::Replace
            | Operation::Patch
            | Operation::Delete
            | Operation::DeletePartition
            | Operation::ReplaceOffer
            | Operation::CreateUser
            | Operation::ReplaceUser
            | Operation::UpsertUser
            | Operation::DeleteUser
            | Operation::CreatePermission
            | Operation::ReplacePermission
            | Operation::UpsertPermission
            | Operation::DeletePermission
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
            | Operation::DeleteUserDefinedFunction
            | Operation::ExecuteStoredProcedure => false,
        }
    }

    /// Whether the operation may change data (a batch counts, whatever it holds).
    pub fn is_write(self) -> bool {
        !self.is_read()
    }

    /// Whether the operation works on a container's items, and so draws on the container's
    /// throughput budget: admitted while this second's budget lasts, charged afterwards.
    pub fn is_item_operation(self) -> bool {
        matches!(
            self,
            Operation::ReadFeed
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
                | Operation::ExecuteStoredProcedure
        )
    }
}

/// Decides what a request is. An unknown resource type is a 404 and a verb the resource does
/// not support is a 405, both Cosmos-shaped.
pub fn classify(method: &Method, path: &ResourcePath, headers: &HeaderMap) -> ApiResult<Operation> {
    let (types, names_one) = path.shape();
    let operation = match (types.as_slice(), names_one) {
        ([], _) => match *method {
            Method::GET => Operation::ReadAccount,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs"], false) => match *method {
            Method::POST if is_query(headers) => Operation::QueryDatabases,
            Method::POST => Operation::CreateDatabase,
            Method::GET => Operation::ReadDatabaseFeed,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs"], true) => match *method {
            Method::GET => Operation::ReadDatabase,
            Method::DELETE => Operation::DeleteDatabase,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs", "colls"], false) => match *method {
            Method::POST if is_query(headers) => Operation::QueryContainers,
            Method::POST => Operation::CreateContainer,
            Method::GET => Operation::ReadContainerFeed,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs", "colls"], true) => match *method {
            Method::GET => Operation::ReadContainer,
            Method::PUT => Operation::ReplaceContainer,
            Method::DELETE => Operation::DeleteContainer,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs", "colls", "docs"], false) => match *method {
            Method::POST if header_is_true(headers, "x-ms-cosmos-is-batch-request") => {
                Operation::Batch
            }
            Method::POST if header_is_true(headers, "x-ms-cosmos-is-query-plan-request") => {
                Operation::QueryPlan
            }
            Method::POST if is_query(headers) => Operation::Query,
            Method::POST if header_is_true(headers, "x-ms-documentdb-is-upsert") => {
                Operation::Upsert
            }
            Method::POST => Operation::Create,
            Method::GET
                if header(headers, "a-im").is_some_and(|v| {
                    v.eq_ignore_ascii_case("incremental feed")
                        || v.eq_ignore_ascii_case("full-fidelity feed")
                }) =>
            {
                Operation::ReadChangeFeed
            }
            Method::GET => Operation::ReadFeed,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs", "colls", "docs"], true) => match *method {
            Method::GET => Operation::Read,
            Method::PUT => Operation::Replace,
            Method::PATCH => Operation::Patch,
            Method::DELETE => Operation::Delete,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs", "colls", "pkranges"], false) if method == Method::GET => {
            Operation::ReadPartitionKeyRanges
        }
        (["dbs", "colls", "operations"], true)
            if method == Method::POST && path.id(2) == "partitionkeydelete" =>
        {
            Operation::DeletePartition
        }
        // The offers feed answers a POST as a query whatever its headers say, as the service does.
        (["offers"], false) => match *method {
            Method::POST => Operation::QueryOffers,
            Method::GET => Operation::ReadOfferFeed,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["offers"], true) => match *method {
            Method::GET => Operation::ReadOffer,
            Method::PUT => Operation::ReplaceOffer,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs", "users"], false) => match *method {
            Method::POST if is_query(headers) => Operation::QueryUsers,
            Method::POST if header_is_true(headers, "x-ms-documentdb-is-upsert") => {
                Operation::UpsertUser
            }
            Method::POST => Operation::CreateUser,
            Method::GET => Operation::ReadUserFeed,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs", "users"], true) => match *method {
            Method::GET => Operation::ReadUser,
            Method::PUT => Operation::ReplaceUser,
            Method::DELETE => Operation::DeleteUser,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs", "users", "permissions"], false) => match *method {
            Method::POST if is_query(headers) => Operation::QueryPermissions,
            Method::POST if header_is_true(headers, "x-ms-documentdb-is-upsert") => {
                Operation::UpsertPermission
            }
            Method::POST => Operation::CreatePermission,
            Method::GET => Operation::ReadPermissionFeed,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs", "users", "permissions"], true) => match *method {
            Method::GET => Operation::ReadPermission,
            Method::PUT => Operation::ReplacePermission,
            Method::DELETE => Operation::DeletePermission,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs", "colls", "sprocs"], false) => match *method {
            Method::POST if is_query(headers) => Operation::QueryStoredProcedures,
            Method::POST if header_is_true(headers, "x-ms-documentdb-is-upsert") => {
                Operation::UpsertStoredProcedure
            }
            Method::POST => Operation::CreateStoredProcedure,
            Method::GET => Operation::ReadStoredProcedureFeed,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs", "colls", "sprocs"], true) if method == Method::POST => {
            Operation::ExecuteStoredProcedure
        }
        (["dbs", "colls", "sprocs"], true) if method == Method::GET => {
            Operation::ReadStoredProcedure
        }
        (["dbs", "colls", "sprocs"], true) if method == Method::PUT => {
            Operation::ReplaceStoredProcedure
        }
        (["dbs", "colls", "sprocs"], true) if method == Method::DELETE => {
            Operation::DeleteStoredProcedure
        }
        (["dbs", "colls", "triggers"], false) => match *method {
            Method::POST if is_query(headers) => Operation::QueryTriggers,
            Method::POST if header_is_true(headers, "x-ms-documentdb-is-upsert") => {
                Operation::UpsertTrigger
            }
            Method::POST => Operation::CreateTrigger,
            Method::GET => Operation::ReadTriggerFeed,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs", "colls", "triggers"], true) => match *method {
            Method::GET => Operation::ReadTrigger,
            Method::PUT => Operation::ReplaceTrigger,
            Method::DELETE => Operation::DeleteTrigger,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs", "colls", "udfs"], false) => match *method {
            Method::POST if is_query(headers) => Operation::QueryUserDefinedFunctions,
            Method::POST if header_is_true(headers, "x-ms-documentdb-is-upsert") => {
                Operation::UpsertUserDefinedFunction
            }
            Method::POST => Operation::CreateUserDefinedFunction,
            Method::GET => Operation::ReadUserDefinedFunctionFeed,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs", "colls", "udfs"], true) => match *method {
            Method::GET => Operation::ReadUserDefinedFunction,
            Method::PUT => Operation::ReplaceUserDefinedFunction,
            Method::DELETE => Operation::DeleteUserDefinedFunction,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs", "colls", "conflicts"], false) => match *method {
            Method::POST if is_query(headers) => Operation::QueryConflicts,
            Method::GET => Operation::ReadConflictFeed,
            _ => return Err(method_not_allowed(method, path)),
        },
        (["dbs", "colls", "conflicts"], true) if method == Method::GET => Operation::ReadConflict,
        _ => {
            return Err(ApiError::new(
                Code::UnknownResource,
                format!(
                    "The resource type '{}' at '{}' is not supported by LetheDB.",
                    path.resource_type, path.link
                ),
            ))
        }
    };
    Ok(operation)
}

fn method_not_allowed(method: &Method, path: &ResourcePath) -> ApiError {
    ApiError::new(
        Code::MethodNotAllowed,
        format!(
            "The requested verb {method} is not supported on resource type '{}'.",
            path.resource_type
        ),
    )
}
