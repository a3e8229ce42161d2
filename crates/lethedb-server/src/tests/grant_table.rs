//! The table of what a resource token allows: every operation × mode (Read, All) × scope (the
//! resource, below it, an ancestor, a sibling, another partition key); and what an Entra ID
//! token allows. A new operation fails
//! to compile here (an exhaustive match) until it has a trial path, and the test fails until it
//! has a row.

use super::tokens::{PK_A, PK_B};
use crate::grants::{entra_allows, Grant, Mode};
use crate::operation::Operation;
use crate::routes::ResourcePath;
use serde_json::json;

/// The path each operation is tried on, under container `c` where it has one. An exhaustive
/// match: a new operation does not compile until it has a path and a row below.
fn trial_path(operation: Operation) -> &'static str {
    match operation {
        Operation::ReadAccount => "/",
        Operation::ReadDatabaseFeed | Operation::QueryDatabases | Operation::CreateDatabase => {
            "/dbs"
        }
        Operation::ReadDatabase | Operation::DeleteDatabase => "/dbs/db",
        Operation::ReadContainerFeed | Operation::QueryContainers | Operation::CreateContainer => {
            "/dbs/db/colls"
        }
        Operation::ReadContainer | Operation::ReplaceContainer | Operation::DeleteContainer => {
            "/dbs/db/colls/c"
        }
        Operation::ReadFeed
        | Operation::ReadChangeFeed
        | Operation::Query
        | Operation::QueryPlan
        | Operation::Batch
        | Operation::Create
        | Operation::Upsert => "/dbs/db/colls/c/docs",
        Operation::Read | Operation::Replace | Operation::Patch | Operation::Delete => {
            "/dbs/db/colls/c/docs/d"
        }
        Operation::ReadPartitionKeyRanges => "/dbs/db/colls/c/pkranges",
        Operation::DeletePartition => "/dbs/db/colls/c/operations/partitionkeydelete",
        Operation::ReadOfferFeed | Operation::QueryOffers => "/offers",
        Operation::ReadOffer | Operation::ReplaceOffer => "/offers/o",
        Operation::ReadUserFeed
        | Operation::CreateUser
        | Operation::QueryUsers
        | Operation::UpsertUser => "/dbs/db/users",
        Operation::ReadUser | Operation::ReplaceUser | Operation::DeleteUser => "/dbs/db/users/u",
        Operation::ReadPermissionFeed
        | Operation::QueryPermissions
        | Operation::CreatePermission
        | Operation::UpsertPermission => "/dbs/db/users/u/permissions",
        Operation::ReadPermission | Operation::ReplacePermission | Operation::DeletePermission => {
            "/dbs/db/users/u/permissions/p"
        }
        Operation::ReadStoredProcedureFeed
        | Operation::QueryStoredProcedures
        | Operation::CreateStoredProcedure
        | Operation::UpsertStoredProcedure => "/dbs/db/colls/c/sprocs",
        Operation::ReadStoredProcedure
        | Operation::ReplaceStoredProcedure
        | Operation::DeleteStoredProcedure => "/dbs/db/colls/c/sprocs/s",
        Operation::ReadTriggerFeed
        | Operation::QueryTriggers
        | Operation::CreateTrigger
        | Operation::UpsertTrigger => "/dbs/db/colls/c/triggers",
        Operation::ReadTrigger | Operation::ReplaceTrigger | Operation::DeleteTrigger => {
            "/dbs/db/colls/c/triggers/s"
        }
        Operation::ReadUserDefinedFunctionFeed
        | Operation::QueryUserDefinedFunctions
        | Operation::CreateUserDefinedFunction
        | Operation::UpsertUserDefinedFunction => "/dbs/db/colls/c/udfs",
        Operation::ReadUserDefinedFunction
        | Operation::ReplaceUserDefinedFunction
        | Operation::DeleteUserDefinedFunction => "/dbs/db/colls/c/udfs/s",
        Operation::ReadConflictFeed | Operation::QueryConflicts => "/dbs/db/colls/c/conflicts",
        Operation::ReadConflict => "/dbs/db/colls/c/conflicts/x",
        Operation::ExecuteStoredProcedure => "/dbs/db/colls/c/sprocs/s",
    }
}

/// Expected answers, `y` allowed and `n` refused, in the columns: Read on container `c`, All
/// on `c`, Read on item `c/docs/d`, All on it (so `c` and the database are ancestors), Read
/// and All on a sibling container, All on `c` limited to key `a` asked with key `b`, and with
/// key `a`; last, an Entra ID token (data operations only).
const TABLE: &[(&str, &str)] = &[
    ("ReadAccount", "yyyyyyyyy"),
    ("ReadDatabaseFeed", "nnnnnnnny"),
    ("QueryDatabases", "nnnnnnnny"),
    ("CreateDatabase", "nnnnnnnnn"),
    ("ReadDatabase", "yyyyyyyyy"),
    ("DeleteDatabase", "nnnnnnnnn"),
    ("ReadContainerFeed", "nnnnnnnny"),
    ("QueryContainers", "nnnnnnnny"),
    ("CreateContainer", "nnnnnnnnn"),
    ("ReadContainer", "yyyynnyyy"),
    ("ReplaceContainer", "nynnnnyyn"),
    ("DeleteContainer", "nynnnnyyn"),
    ("ReadFeed", "yynnnnnyy"),
    ("ReadChangeFeed", "yynnnnnyy"),
    ("Query", "yynnnnnyy"),
    ("QueryPlan", "yynnnnyyy"),
    ("Batch", "nynnnnnyy"),
    ("Create", "nynnnnnyy"),
    ("Upsert", "nynnnnnyy"),
    ("Read", "yyyynnnyy"),
    ("Replace", "nynynnnyy"),
    ("Patch", "nynynnnyy"),
    ("Delete", "nynynnnyy"),
    ("ReadPartitionKeyRanges", "yyyynnyyy"),
    ("DeletePartition", "nynnnnnyy"),
    ("ReadOfferFeed", "nnnnnnnnn"),
    ("QueryOffers", "nnnnnnnnn"),
    ("ReadOffer", "nnnnnnnnn"),
    ("ReplaceOffer", "nnnnnnnnn"),
    ("ReadUserFeed", "nnnnnnnnn"),
    ("ReadStoredProcedureFeed", "yynnnnyyn"),
    ("ReadUserDefinedFunctionFeed", "yynnnnyyn"),
    ("ReadTriggerFeed", "yynnnnyyn"),
    ("ReadConflictFeed", "yynnnnyyy"),
    ("CreateUser", "nnnnnnnnn"),
    ("QueryUsers", "nnnnnnnnn"),
    ("ReadUser", "nnnnnnnnn"),
    ("ReplaceUser", "nnnnnnnnn"),
    ("UpsertUser", "nnnnnnnnn"),
    ("DeleteUser", "nnnnnnnnn"),
    ("ReadPermissionFeed", "nnnnnnnnn"),
    ("QueryPermissions", "nnnnnnnnn"),
    ("CreatePermission", "nnnnnnnnn"),
    ("ReadPermission", "nnnnnnnnn"),
    ("ReplacePermission", "nnnnnnnnn"),
    ("UpsertPermission", "nnnnnnnnn"),
    ("DeletePermission", "nnnnnnnnn"),
    ("QueryConflicts", "yynnnnyyy"),
    ("ReadConflict", "yynnnnyyy"),
    ("ExecuteStoredProcedure", "nynnnnnyy"),
    ("CreateStoredProcedure", "nynnnnyyn"),
    ("QueryStoredProcedures", "yynnnnyyn"),
    ("ReadStoredProcedure", "yynnnnyyn"),
    ("ReplaceStoredProcedure", "nynnnnyyn"),
    ("UpsertStoredProcedure", "nynnnnyyn"),
    ("DeleteStoredProcedure", "nynnnnyyn"),
    ("CreateTrigger", "nynnnnyyn"),
    ("QueryTriggers", "yynnnnyyn"),
    ("ReadTrigger", "yynnnnyyn"),
    ("ReplaceTrigger", "nynnnnyyn"),
    ("UpsertTrigger", "nynnnnyyn"),
    ("DeleteTrigger", "nynnnnyyn"),
    ("CreateUserDefinedFunction", "nynnnnyyn"),
    ("QueryUserDefinedFunctions", "yynnnnyyn"),
    ("ReadUserDefinedFunction", "yynnnnyyn"),
    ("ReplaceUserDefinedFunction", "nynnnnyyn"),
    ("UpsertUserDefinedFunction", "nynnnnyyn"),
    ("DeleteUserDefinedFunction", "nynnnnyyn"),
];

fn grant(mode: Mode, link: &str, partition_key: Option<&str>) -> Grant {
    Grant {
        mode,
        resource: ResourcePath::parse(link).expect("link").segments,
        partition_key: partition_key.map(|key| vec![json!(key)]),
    }
}

#[test]
fn every_operation_has_a_rule_for_each_mode_and_scope() {
    let columns: [(Grant, Option<&str>); 8] = [
        (grant(Mode::Read, "dbs/db/colls/c", None), None),
        (grant(Mode::All, "dbs/db/colls/c", None), None),
        (grant(Mode::Read, "dbs/db/colls/c/docs/d", None), None),
        (grant(Mode::All, "dbs/db/colls/c/docs/d", None), None),
        (grant(Mode::Read, "dbs/db/colls/s", None), None),
        (grant(Mode::All, "dbs/db/colls/s", None), None),
        (grant(Mode::All, "dbs/db/colls/c", Some("a")), Some(PK_B)),
        (grant(Mode::All, "dbs/db/colls/c", Some("a")), Some(PK_A)),
    ];
    assert_eq!(TABLE.len(), Operation::ALL.len(), "one row per operation");
    for operation in Operation::ALL {
        let (_, expected) = TABLE
            .iter()
            .find(|(name, _)| *name == operation.name())
            .unwrap_or_else(|| panic!("no row for {}", operation.name()));
        let path = ResourcePath::parse(trial_path(operation)).expect("path");
        let mut got: String = columns
            .iter()
            .map(|(grant, key)| {
                let body =
                    json!([{"operationType": "Create", "partitionKey": key.unwrap_or("[]")}])
                        .to_string();
                if grant.allows(operation, &path, *key, body.as_bytes()) {
                    'y'
                } else {
                    'n'
                }
            })
            .collect();
        got.push(if entra_allows(operation) { 'y' } else { 'n' });
        assert_eq!(&got, expected, "{}", operation.name());
    }
}
