//! What a request is: `classify` over a table of (method, path, headers) and the name of the
//! operation they make, covering every operation, the 404 and 405 it answers otherwise, the
//! operations' names (pinned byte for byte: dashboards scrape them) and kinds, and every
//! operation reaching its handler.

use super::hostile::populated;
use crate::head::RequestHead;
use crate::operation::{classify, Operation};
use crate::routes::ResourcePath;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use std::collections::HashSet;

/// One row of the table: method, path, headers, and the name of the operation they make.
pub(super) type Row = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
);

const QUERY: &[(&str, &str)] = &[("x-ms-documentdb-isquery", "True")];
const QUERY_BY_TYPE: &[(&str, &str)] = &[("content-type", "application/query+json")];
const UPSERT: &[(&str, &str)] = &[("x-ms-documentdb-is-upsert", "True")];

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(
            HeaderName::from_bytes(name.as_bytes()).expect("name"),
            HeaderValue::from_str(value).expect("value"),
        );
    }
    map
}

fn classified(method: &str, path: &str, pairs: &[(&str, &str)]) -> Result<Operation, String> {
    let method = Method::from_bytes(method.as_bytes()).expect("method");
    let path = ResourcePath::parse(path).expect("path");
    let headers = headers(pairs);
    classify(&method, &path, &RequestHead::parse(&headers))
        .map_err(|error| format!("{} {:?}", error.status().as_u16(), error.message))
}

/// Every operation as a request that makes it: the table `classify` is checked against, and
/// the routes the hostile-request sweep (`hostile.rs`) tries.
pub(super) const ROUTES: &[Row] = &[
    ("GET", "/", &[], "ReadAccount"),
    ("GET", "/dbs", &[], "ReadDatabaseFeed"),
    ("POST", "/dbs", QUERY, "QueryDatabases"),
    ("POST", "/dbs", QUERY_BY_TYPE, "QueryDatabases"),
    ("POST", "/dbs", &[], "CreateDatabase"),
    ("GET", "/dbs/d", &[], "ReadDatabase"),
    ("DELETE", "/dbs/d", &[], "DeleteDatabase"),
    ("GET", "/dbs/d/colls", &[], "ReadContainerFeed"),
    ("POST", "/dbs/d/colls", QUERY, "QueryContainers"),
    ("POST", "/dbs/d/colls", &[], "CreateContainer"),
    ("GET", "/dbs/d/colls/c", &[], "ReadContainer"),
    ("PUT", "/dbs/d/colls/c", &[], "ReplaceContainer"),
    ("DELETE", "/dbs/d/colls/c", &[], "DeleteContainer"),
    ("GET", "/dbs/d/colls/c/docs", &[], "ReadFeed"),
    (
        "GET",
        "/dbs/d/colls/c/docs",
        &[("a-im", "Incremental Feed")],
        "ReadChangeFeed",
    ),
    ("POST", "/dbs/d/colls/c/docs", QUERY, "Query"),
    ("POST", "/dbs/d/colls/c/docs", QUERY_BY_TYPE, "Query"),
    (
        "POST",
        "/dbs/d/colls/c/docs",
        &[
            ("x-ms-cosmos-is-query-plan-request", "True"),
            ("x-ms-documentdb-isquery", "True"),
        ],
        "QueryPlan",
    ),
    (
        "POST",
        "/dbs/d/colls/c/docs",
        &[
            ("x-ms-cosmos-is-batch-request", "True"),
            ("x-ms-documentdb-is-upsert", "True"),
        ],
        "Batch",
    ),
    (
        "POST",
        "/dbs/d/colls/c/docs",
        &[
            ("x-ms-cosmos-is-batch-request", "True"),
            ("x-ms-cosmos-batch-atomic", "False"),
        ],
        "Batch",
    ),
    ("POST", "/dbs/d/colls/c/docs", &[], "Create"),
    (
        "POST",
        "/dbs/d/colls/c/docs",
        &[("x-ms-documentdb-is-upsert", "false")],
        "Create",
    ),
    (
        "POST",
        "/dbs/d/colls/c/docs",
        &[("x-ms-documentdb-is-upsert", "True")],
        "Upsert",
    ),
    ("GET", "/dbs/d/colls/c/docs/i", &[], "Read"),
    ("PUT", "/dbs/d/colls/c/docs/i", &[], "Replace"),
    ("PATCH", "/dbs/d/colls/c/docs/i", &[], "Patch"),
    ("DELETE", "/dbs/d/colls/c/docs/i", &[], "Delete"),
    (
        "GET",
        "/dbs/d/colls/c/pkranges",
        &[],
        "ReadPartitionKeyRanges",
    ),
    (
        "POST",
        "/dbs/d/colls/c/operations/partitionkeydelete",
        &[],
        "DeletePartition",
    ),
    ("GET", "/offers", &[], "ReadOfferFeed"),
    ("POST", "/offers", QUERY, "QueryOffers"),
    ("POST", "/offers", &[], "QueryOffers"),
    ("GET", "/offers/o", &[], "ReadOffer"),
    ("PUT", "/offers/o", &[], "ReplaceOffer"),
    ("GET", "/dbs/d/users", &[], "ReadUserFeed"),
    (
        "GET",
        "/dbs/d/colls/c/sprocs",
        &[],
        "ReadStoredProcedureFeed",
    ),
    (
        "GET",
        "/dbs/d/colls/c/udfs",
        &[],
        "ReadUserDefinedFunctionFeed",
    ),
    ("GET", "/dbs/d/colls/c/triggers", &[], "ReadTriggerFeed"),
    ("GET", "/dbs/d/colls/c/conflicts", &[], "ReadConflictFeed"),
    ("POST", "/dbs/d/colls/c/conflicts", QUERY, "QueryConflicts"),
    ("GET", "/dbs/d/colls/c/conflicts/x", &[], "ReadConflict"),
    (
        "GET",
        "/dbs/d/clientencryptionkeys",
        &[],
        "ReadClientEncryptionKeyFeed",
    ),
    (
        "POST",
        "/dbs/d/clientencryptionkeys",
        QUERY,
        "QueryClientEncryptionKeys",
    ),
    (
        "POST",
        "/dbs/d/clientencryptionkeys",
        &[],
        "CreateClientEncryptionKey",
    ),
    (
        "GET",
        "/dbs/d/clientencryptionkeys/k",
        &[],
        "ReadClientEncryptionKey",
    ),
    (
        "PUT",
        "/dbs/d/clientencryptionkeys/k",
        &[],
        "ReplaceClientEncryptionKey",
    ),
    ("POST", "/dbs/d/users", &[], "CreateUser"),
    ("POST", "/dbs/d/users", QUERY, "QueryUsers"),
    ("POST", "/dbs/d/users", UPSERT, "UpsertUser"),
    ("GET", "/dbs/d/users/u", &[], "ReadUser"),
    ("PUT", "/dbs/d/users/u", &[], "ReplaceUser"),
    ("DELETE", "/dbs/d/users/u", &[], "DeleteUser"),
    (
        "GET",
        "/dbs/d/users/u/permissions",
        &[],
        "ReadPermissionFeed",
    ),
    (
        "POST",
        "/dbs/d/users/u/permissions",
        QUERY,
        "QueryPermissions",
    ),
    (
        "POST",
        "/dbs/d/users/u/permissions",
        &[],
        "CreatePermission",
    ),
    (
        "POST",
        "/dbs/d/users/u/permissions",
        UPSERT,
        "UpsertPermission",
    ),
    ("GET", "/dbs/d/users/u/permissions/p", &[], "ReadPermission"),
    (
        "PUT",
        "/dbs/d/users/u/permissions/p",
        &[],
        "ReplacePermission",
    ),
    (
        "DELETE",
        "/dbs/d/users/u/permissions/p",
        &[],
        "DeletePermission",
    ),
    (
        "POST",
        "/dbs/d/colls/c/sprocs",
        &[],
        "CreateStoredProcedure",
    ),
    (
        "POST",
        "/dbs/d/colls/c/sprocs",
        QUERY,
        "QueryStoredProcedures",
    ),
    (
        "POST",
        "/dbs/d/colls/c/sprocs",
        UPSERT,
        "UpsertStoredProcedure",
    ),
    ("GET", "/dbs/d/colls/c/sprocs/s", &[], "ReadStoredProcedure"),
    (
        "POST",
        "/dbs/d/colls/c/sprocs/s",
        &[],
        "ExecuteStoredProcedure",
    ),
    (
        "PUT",
        "/dbs/d/colls/c/sprocs/s",
        &[],
        "ReplaceStoredProcedure",
    ),
    (
        "DELETE",
        "/dbs/d/colls/c/sprocs/s",
        &[],
        "DeleteStoredProcedure",
    ),
    ("POST", "/dbs/d/colls/c/triggers", &[], "CreateTrigger"),
    ("POST", "/dbs/d/colls/c/triggers", QUERY, "QueryTriggers"),
    ("POST", "/dbs/d/colls/c/triggers", UPSERT, "UpsertTrigger"),
    ("GET", "/dbs/d/colls/c/triggers/s", &[], "ReadTrigger"),
    ("PUT", "/dbs/d/colls/c/triggers/s", &[], "ReplaceTrigger"),
    ("DELETE", "/dbs/d/colls/c/triggers/s", &[], "DeleteTrigger"),
    (
        "POST",
        "/dbs/d/colls/c/udfs",
        &[],
        "CreateUserDefinedFunction",
    ),
    (
        "POST",
        "/dbs/d/colls/c/udfs",
        QUERY,
        "QueryUserDefinedFunctions",
    ),
    (
        "POST",
        "/dbs/d/colls/c/udfs",
        UPSERT,
        "UpsertUserDefinedFunction",
    ),
    (
        "GET",
        "/dbs/d/colls/c/udfs/s",
        &[],
        "ReadUserDefinedFunction",
    ),
    (
        "PUT",
        "/dbs/d/colls/c/udfs/s",
        &[],
        "ReplaceUserDefinedFunction",
    ),
    (
        "DELETE",
        "/dbs/d/colls/c/udfs/s",
        &[],
        "DeleteUserDefinedFunction",
    ),
];

#[test]
fn every_operation_is_classified_from_method_path_and_headers() {
    let mut seen = HashSet::new();
    for (method, path, pairs, expected) in ROUTES {
        assert_eq!(
            classified(method, path, pairs).map(Operation::name),
            Ok(*expected),
            "{method} {path} {pairs:?}"
        );
        let operation = classified(method, path, pairs).expect("classified");
        assert!(
            Operation::all().contains(&operation),
            "{expected} is missing from Operation::all()"
        );
        seen.insert(*expected);
    }
    let missing: Vec<&str> = Operation::all()
        .iter()
        .map(|operation| operation.name())
        .filter(|name| !seen.contains(name))
        .collect();
    assert!(missing.is_empty(), "not covered by the table: {missing:?}");
}

#[test]
fn requests_that_name_no_operation_get_404_or_405() {
    let not_found = |method: &str, path: &str| {
        let error = classified(method, path, &[]).expect_err(path);
        assert!(
            error.starts_with("404 ") && error.contains("is not supported by LetheDB"),
            "{method} {path}: {error}"
        );
    };
    not_found("GET", "/nothing/here");
    not_found("POST", "/metrics");
    not_found("GET", "/_explorer/other");
    not_found("POST", "/dbs/d/colls/c/pkranges");
    not_found("GET", "/dbs/d/colls/c/pkranges/0");
    not_found("POST", "/dbs/d/colls/c/operations/other");
    not_found("GET", "/dbs/d/colls/c/operations/partitionkeydelete");
    not_found("POST", "/dbs/d/colls/c/conflicts/x");
    assert_eq!(
        classified("GET", "/nothing/here", &[]),
        Err(
            "404 \"The resource type 'nothing' at 'nothing/here' is not supported by LetheDB.\""
                .into()
        )
    );
    for (method, path, resource_type) in [
        ("POST", "/", ""),
        ("PUT", "/dbs", "dbs"),
        ("PUT", "/dbs/d", "dbs"),
        ("DELETE", "/dbs/d/colls", "colls"),
        ("POST", "/dbs/d/colls/c", "colls"),
        ("PUT", "/dbs/d/colls/c/docs", "docs"),
        ("DELETE", "/dbs/d/colls/c/docs", "docs"),
        ("POST", "/dbs/d/colls/c/docs/i", "docs"),
        ("DELETE", "/offers", "offers"),
        ("DELETE", "/offers/o", "offers"),
        ("PUT", "/dbs/d/users", "users"),
        ("POST", "/dbs/d/users/u", "users"),
        ("PATCH", "/dbs/d/users/u/permissions/p", "permissions"),
        ("DELETE", "/dbs/d/colls/c/conflicts", "conflicts"),
        ("DELETE", "/dbs/d/colls/c/sprocs", "sprocs"),
        ("PUT", "/dbs/d/colls/c/triggers", "triggers"),
        ("POST", "/dbs/d/colls/c/triggers/t", "triggers"),
        ("PATCH", "/dbs/d/colls/c/udfs/f", "udfs"),
        // No SDK deletes a client encryption key: it goes with its database.
        (
            "DELETE",
            "/dbs/d/clientencryptionkeys/k",
            "clientencryptionkeys",
        ),
        ("PUT", "/dbs/d/clientencryptionkeys", "clientencryptionkeys"),
    ] {
        assert_eq!(
            classified(method, path, &[]),
            Err(format!(
                "405 \"The requested verb {method} is not supported on resource type '{resource_type}'.\""
            )),
            "{method} {path}"
        );
    }
}

/// Every operation's name as metrics and logs have always spelled it, in `Operation::all()`'s
/// order. A change here breaks dashboards.
const NAMES: [&str; 73] = [
    "ReadAccount",
    "ReadDatabaseFeed",
    "QueryDatabases",
    "CreateDatabase",
    "ReadDatabase",
    "DeleteDatabase",
    "ReadContainerFeed",
    "QueryContainers",
    "CreateContainer",
    "ReadContainer",
    "ReplaceContainer",
    "DeleteContainer",
    "ReadPartitionKeyRanges",
    "DeletePartition",
    "ReadFeed",
    "ReadChangeFeed",
    "Query",
    "QueryPlan",
    "Batch",
    "Create",
    "Upsert",
    "Read",
    "Replace",
    "Patch",
    "Delete",
    "ReadOfferFeed",
    "QueryOffers",
    "ReadOffer",
    "ReplaceOffer",
    "ReadUserFeed",
    "QueryUsers",
    "CreateUser",
    "UpsertUser",
    "ReadUser",
    "ReplaceUser",
    "DeleteUser",
    "ReadPermissionFeed",
    "QueryPermissions",
    "CreatePermission",
    "UpsertPermission",
    "ReadPermission",
    "ReplacePermission",
    "DeletePermission",
    "ReadStoredProcedureFeed",
    "QueryStoredProcedures",
    "CreateStoredProcedure",
    "UpsertStoredProcedure",
    "ReadStoredProcedure",
    "ReplaceStoredProcedure",
    "DeleteStoredProcedure",
    "ReadTriggerFeed",
    "QueryTriggers",
    "CreateTrigger",
    "UpsertTrigger",
    "ReadTrigger",
    "ReplaceTrigger",
    "DeleteTrigger",
    "ReadUserDefinedFunctionFeed",
    "QueryUserDefinedFunctions",
    "CreateUserDefinedFunction",
    "UpsertUserDefinedFunction",
    "ReadUserDefinedFunction",
    "ReplaceUserDefinedFunction",
    "DeleteUserDefinedFunction",
    "ReadConflictFeed",
    "QueryConflicts",
    "ReadConflict",
    "ReadClientEncryptionKeyFeed",
    "QueryClientEncryptionKeys",
    "CreateClientEncryptionKey",
    "ReadClientEncryptionKey",
    "ReplaceClientEncryptionKey",
    "ExecuteStoredProcedure",
];

#[test]
fn every_operation_keeps_its_name_and_has_one_kind() {
    let names: Vec<&str> = Operation::all()
        .iter()
        .map(|operation| operation.name())
        .collect();
    assert_eq!(names, NAMES);
    let unique: HashSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), NAMES.len(), "a name is used twice");
    for operation in Operation::all() {
        assert_ne!(
            operation.is_read(),
            operation.is_write(),
            "{}",
            operation.name()
        );
    }
    let mut item_operations: Vec<&str> = Operation::all()
        .iter()
        .filter(|operation| operation.is_item_operation())
        .map(|operation| operation.name())
        .collect();
    item_operations.sort_unstable();
    assert_eq!(
        item_operations,
        [
            "Batch",
            "Create",
            "Delete",
            "ExecuteStoredProcedure",
            "Patch",
            "Query",
            "QueryPlan",
            "Read",
            "ReadChangeFeed",
            "ReadFeed",
            "Replace",
            "Upsert",
        ]
    );
    let mut writes: Vec<&str> = Operation::all()
        .iter()
        .filter(|operation| operation.is_write())
        .map(|operation| operation.name())
        .collect();
    writes.sort_unstable();
    let mut expected = [
        "CreateDatabase",
        "DeleteDatabase",
        "CreateContainer",
        "ReplaceContainer",
        "DeleteContainer",
        "Batch",
        "Create",
        "Upsert",
        "Replace",
        "Patch",
        "Delete",
        "DeletePartition",
        "ReplaceOffer",
        "CreateUser",
        "ReplaceUser",
        "UpsertUser",
        "DeleteUser",
        "CreatePermission",
        "ReplacePermission",
        "UpsertPermission",
        "DeletePermission",
        "CreateStoredProcedure",
        "ReplaceStoredProcedure",
        "UpsertStoredProcedure",
        "DeleteStoredProcedure",
        "CreateTrigger",
        "ReplaceTrigger",
        "UpsertTrigger",
        "DeleteTrigger",
        "CreateUserDefinedFunction",
        "ReplaceUserDefinedFunction",
        "UpsertUserDefinedFunction",
        "DeleteUserDefinedFunction",
        "CreateClientEncryptionKey",
        "ReplaceClientEncryptionKey",
        "ExecuteStoredProcedure",
    ];
    expected.sort_unstable();
    assert_eq!(writes, expected);
}

/// Every row of the route table, signed with the master key, reaches a handler: none answers
/// the 500 of an operation `route` has no handler for. The resources the paths name exist (the
/// deletes run last, innermost first), so item operations pass admission.
#[tokio::test]
async fn every_operation_reaches_its_handler() {
    let server = populated().await;
    let (deletes, others): (Vec<&Row>, Vec<&Row>) =
        ROUTES.iter().partition(|(method, ..)| *method == "DELETE");
    for (method, path, pairs, name) in others.into_iter().chain(deletes.into_iter().rev()) {
        let signed = ResourcePath::parse(path).expect("path");
        let answer = server
            .send(
                method,
                path,
                (&signed.resource_type, &signed.link),
                None,
                pairs,
            )
            .await;
        assert_ne!(
            answer.status,
            StatusCode::INTERNAL_SERVER_ERROR,
            "{name}: {method} {path}: {}",
            answer.body
        );
    }
}
