//! What a request is: `classify` over a table of (method, path, headers), covering every
//! operation, the 404 and 405 it answers otherwise, and the operations' names and kinds.

use crate::operation::{classify, Operation};
use crate::routes::ResourcePath;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method};
use std::collections::HashSet;

/// One row of the table: method, path, headers, and the operation they make.
pub(super) type Row = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    Operation,
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
    classify(&method, &path, &headers(pairs))
        .map_err(|error| format!("{} {:?}", error.status().as_u16(), error.message))
}

/// Every operation as a request that makes it: the table `classify` is checked against, and
/// the routes the hostile-request sweep (`hostile.rs`) tries.
pub(super) const ROUTES: &[Row] = {
    use Operation::*;
    &[
        ("GET", "/", &[], ReadAccount),
        ("GET", "/dbs", &[], ReadDatabaseFeed),
        ("POST", "/dbs", QUERY, QueryDatabases),
        ("POST", "/dbs", QUERY_BY_TYPE, QueryDatabases),
        ("POST", "/dbs", &[], CreateDatabase),
        ("GET", "/dbs/d", &[], ReadDatabase),
        ("DELETE", "/dbs/d", &[], DeleteDatabase),
        ("GET", "/dbs/d/colls", &[], ReadContainerFeed),
        ("POST", "/dbs/d/colls", QUERY, QueryContainers),
        ("POST", "/dbs/d/colls", &[], CreateContainer),
        ("GET", "/dbs/d/colls/c", &[], ReadContainer),
        ("PUT", "/dbs/d/colls/c", &[], ReplaceContainer),
        ("DELETE", "/dbs/d/colls/c", &[], DeleteContainer),
        ("GET", "/dbs/d/colls/c/docs", &[], ReadFeed),
        (
            "GET",
            "/dbs/d/colls/c/docs",
            &[("a-im", "Incremental Feed")],
            ReadChangeFeed,
        ),
        ("POST", "/dbs/d/colls/c/docs", QUERY, Query),
        ("POST", "/dbs/d/colls/c/docs", QUERY_BY_TYPE, Query),
        (
            "POST",
            "/dbs/d/colls/c/docs",
            &[
                ("x-ms-cosmos-is-query-plan-request", "True"),
                ("x-ms-documentdb-isquery", "True"),
            ],
            QueryPlan,
        ),
        (
            "POST",
            "/dbs/d/colls/c/docs",
            &[
                ("x-ms-cosmos-is-batch-request", "True"),
                ("x-ms-documentdb-is-upsert", "True"),
            ],
            Batch,
        ),
        (
            "POST",
            "/dbs/d/colls/c/docs",
            &[
                ("x-ms-cosmos-is-batch-request", "True"),
                ("x-ms-cosmos-batch-atomic", "False"),
            ],
            Batch,
        ),
        ("POST", "/dbs/d/colls/c/docs", &[], Create),
        (
            "POST",
            "/dbs/d/colls/c/docs",
            &[("x-ms-documentdb-is-upsert", "false")],
            Create,
        ),
        (
            "POST",
            "/dbs/d/colls/c/docs",
            &[("x-ms-documentdb-is-upsert", "True")],
            Upsert,
        ),
        ("GET", "/dbs/d/colls/c/docs/i", &[], Read),
        ("PUT", "/dbs/d/colls/c/docs/i", &[], Replace),
        ("PATCH", "/dbs/d/colls/c/docs/i", &[], Patch),
        ("DELETE", "/dbs/d/colls/c/docs/i", &[], Delete),
        (
            "GET",
            "/dbs/d/colls/c/pkranges",
            &[],
            ReadPartitionKeyRanges,
        ),
        (
            "POST",
            "/dbs/d/colls/c/operations/partitionkeydelete",
            &[],
            DeletePartition,
        ),
        ("GET", "/offers", &[], ReadOfferFeed),
        ("POST", "/offers", QUERY, QueryOffers),
        ("POST", "/offers", &[], QueryOffers),
        ("GET", "/offers/o", &[], ReadOffer),
        ("PUT", "/offers/o", &[], ReplaceOffer),
        ("GET", "/dbs/d/users", &[], ReadUserFeed),
        ("GET", "/dbs/d/colls/c/sprocs", &[], ReadStoredProcedureFeed),
        (
            "GET",
            "/dbs/d/colls/c/udfs",
            &[],
            ReadUserDefinedFunctionFeed,
        ),
        ("GET", "/dbs/d/colls/c/triggers", &[], ReadTriggerFeed),
        ("GET", "/dbs/d/colls/c/conflicts", &[], ReadConflictFeed),
        ("POST", "/dbs/d/colls/c/conflicts", QUERY, QueryConflicts),
        ("GET", "/dbs/d/colls/c/conflicts/x", &[], ReadConflict),
        ("POST", "/dbs/d/users", &[], CreateUser),
        ("POST", "/dbs/d/users", QUERY, QueryUsers),
        ("POST", "/dbs/d/users", UPSERT, UpsertUser),
        ("GET", "/dbs/d/users/u", &[], ReadUser),
        ("PUT", "/dbs/d/users/u", &[], ReplaceUser),
        ("DELETE", "/dbs/d/users/u", &[], DeleteUser),
        ("GET", "/dbs/d/users/u/permissions", &[], ReadPermissionFeed),
        (
            "POST",
            "/dbs/d/users/u/permissions",
            QUERY,
            QueryPermissions,
        ),
        ("POST", "/dbs/d/users/u/permissions", &[], CreatePermission),
        (
            "POST",
            "/dbs/d/users/u/permissions",
            UPSERT,
            UpsertPermission,
        ),
        ("GET", "/dbs/d/users/u/permissions/p", &[], ReadPermission),
        (
            "PUT",
            "/dbs/d/users/u/permissions/p",
            &[],
            ReplacePermission,
        ),
        (
            "DELETE",
            "/dbs/d/users/u/permissions/p",
            &[],
            DeletePermission,
        ),
        ("POST", "/dbs/d/colls/c/sprocs", &[], CreateStoredProcedure),
        (
            "POST",
            "/dbs/d/colls/c/sprocs",
            QUERY,
            QueryStoredProcedures,
        ),
        (
            "POST",
            "/dbs/d/colls/c/sprocs",
            UPSERT,
            UpsertStoredProcedure,
        ),
        ("GET", "/dbs/d/colls/c/sprocs/s", &[], ReadStoredProcedure),
        (
            "POST",
            "/dbs/d/colls/c/sprocs/s",
            &[],
            ExecuteStoredProcedure,
        ),
        (
            "PUT",
            "/dbs/d/colls/c/sprocs/s",
            &[],
            ReplaceStoredProcedure,
        ),
        (
            "DELETE",
            "/dbs/d/colls/c/sprocs/s",
            &[],
            DeleteStoredProcedure,
        ),
        ("POST", "/dbs/d/colls/c/triggers", &[], CreateTrigger),
        ("POST", "/dbs/d/colls/c/triggers", QUERY, QueryTriggers),
        ("POST", "/dbs/d/colls/c/triggers", UPSERT, UpsertTrigger),
        ("GET", "/dbs/d/colls/c/triggers/s", &[], ReadTrigger),
        ("PUT", "/dbs/d/colls/c/triggers/s", &[], ReplaceTrigger),
        ("DELETE", "/dbs/d/colls/c/triggers/s", &[], DeleteTrigger),
        (
            "POST",
            "/dbs/d/colls/c/udfs",
            &[],
            CreateUserDefinedFunction,
        ),
        (
            "POST",
            "/dbs/d/colls/c/udfs",
            QUERY,
            QueryUserDefinedFunctions,
        ),
        (
            "POST",
            "/dbs/d/colls/c/udfs",
            UPSERT,
            UpsertUserDefinedFunction,
        ),
        ("GET", "/dbs/d/colls/c/udfs/s", &[], ReadUserDefinedFunction),
        (
            "PUT",
            "/dbs/d/colls/c/udfs/s",
            &[],
            ReplaceUserDefinedFunction,
        ),
        (
            "DELETE",
            "/dbs/d/colls/c/udfs/s",
            &[],
            DeleteUserDefinedFunction,
        ),
    ]
};

#[test]
fn every_operation_is_classified_from_method_path_and_headers() {
    let table = ROUTES;
    let mut seen = HashSet::new();
    for (method, path, pairs, expected) in table {
        assert_eq!(
            classified(method, path, pairs),
            Ok(*expected),
            "{method} {path} {pairs:?}"
        );
        seen.insert(*expected);
    }
    let missing: Vec<&Operation> = Operation::ALL
        .iter()
        .filter(|operation| !seen.contains(operation))
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

#[test]
fn every_operation_has_a_unique_name_and_one_kind() {
    let mut names = HashSet::new();
    for operation in Operation::ALL {
        let name = operation.name();
        assert!(!name.is_empty(), "{operation:?}");
        assert_eq!(name, format!("{operation:?}"), "names follow the variants");
        assert!(names.insert(name), "{name} is used twice");
        assert_ne!(operation.is_read(), operation.is_write(), "{name}");
    }
    assert_eq!(names.len(), Operation::ALL.len());
    // The labels dashboards already scrape keep their spelling.
    for (operation, label) in [
        (Operation::Create, "Create"),
        (Operation::Upsert, "Upsert"),
        (Operation::ReadFeed, "ReadFeed"),
        (Operation::Query, "Query"),
        (Operation::ReadPartitionKeyRanges, "ReadPartitionKeyRanges"),
    ] {
        assert_eq!(operation.name(), label);
    }
    let item_operations: Vec<&str> = Operation::ALL
        .iter()
        .filter(|operation| operation.is_item_operation())
        .map(|operation| operation.name())
        .collect();
    assert_eq!(
        item_operations,
        [
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
            "ExecuteStoredProcedure"
        ]
    );
    let writes: Vec<&str> = Operation::ALL
        .iter()
        .filter(|operation| operation.is_write())
        .map(|operation| operation.name())
        .collect();
    assert_eq!(
        writes,
        [
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
            "ExecuteStoredProcedure"
        ]
    );
}
