//! The table of what a resource token allows: every operation × mode (Read, All) × scope (the
//! resource, below it, an ancestor, a sibling, another partition key). A new operation fails
//! to compile here (an exhaustive match) until it has a trial path, and the test fails until it
//! has a row.

use super::tokens::{PK_A, PK_B};
use crate::grants::{Grant, Mode};
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
        Operation::ReadStoredProcedureFeed => "/dbs/db/colls/c/sprocs",
        Operation::ReadUserDefinedFunctionFeed => "/dbs/db/colls/c/udfs",
        Operation::ReadTriggerFeed => "/dbs/db/colls/c/triggers",
        Operation::ReadConflictFeed | Operation::QueryConflicts => "/dbs/db/colls/c/conflicts",
        Operation::ReadConflict => "/dbs/db/colls/c/conflicts/x",
    }
}

/// Expected answers, `y` allowed and `n` refused, in the columns: Read on container `c`, All
/// on `c`, Read on item `c/docs/d`, All on it (so `c` and the database are ancestors), Read
/// and All on a sibling container, All on `c` limited to key `a` asked with key `b`, and with
/// key `a`.
const TABLE: &[(&str, &str)] = &[
    ("ReadAccount", "yyyyyyyy"),
    ("ReadDatabaseFeed", "nnnnnnnn"),
    ("QueryDatabases", "nnnnnnnn"),
    ("CreateDatabase", "nnnnnnnn"),
    ("ReadDatabase", "yyyyyyyy"),
    ("DeleteDatabase", "nnnnnnnn"),
    ("ReadContainerFeed", "nnnnnnnn"),
    ("QueryContainers", "nnnnnnnn"),
    ("CreateContainer", "nnnnnnnn"),
    ("ReadContainer", "yyyynnyy"),
    ("ReplaceContainer", "nynnnnyy"),
    ("DeleteContainer", "nynnnnyy"),
    ("ReadFeed", "yynnnnny"),
    ("ReadChangeFeed", "yynnnnny"),
    ("Query", "yynnnnny"),
    ("QueryPlan", "yynnnnyy"),
    ("Batch", "nynnnnny"),
    ("Create", "nynnnnny"),
    ("Upsert", "nynnnnny"),
    ("Read", "yyyynnny"),
    ("Replace", "nynynnny"),
    ("Patch", "nynynnny"),
    ("Delete", "nynynnny"),
    ("ReadPartitionKeyRanges", "yyyynnyy"),
    ("DeletePartition", "nynnnnny"),
    ("ReadOfferFeed", "nnnnnnnn"),
    ("QueryOffers", "nnnnnnnn"),
    ("ReadOffer", "nnnnnnnn"),
    ("ReplaceOffer", "nnnnnnnn"),
    ("ReadUserFeed", "nnnnnnnn"),
    ("ReadStoredProcedureFeed", "yynnnnyy"),
    ("ReadUserDefinedFunctionFeed", "yynnnnyy"),
    ("ReadTriggerFeed", "yynnnnyy"),
    ("ReadConflictFeed", "yynnnnyy"),
    ("CreateUser", "nnnnnnnn"),
    ("QueryUsers", "nnnnnnnn"),
    ("ReadUser", "nnnnnnnn"),
    ("ReplaceUser", "nnnnnnnn"),
    ("UpsertUser", "nnnnnnnn"),
    ("DeleteUser", "nnnnnnnn"),
    ("ReadPermissionFeed", "nnnnnnnn"),
    ("QueryPermissions", "nnnnnnnn"),
    ("CreatePermission", "nnnnnnnn"),
    ("ReadPermission", "nnnnnnnn"),
    ("ReplacePermission", "nnnnnnnn"),
    ("UpsertPermission", "nnnnnnnn"),
    ("DeletePermission", "nnnnnnnn"),
    ("QueryConflicts", "yynnnnyy"),
    ("ReadConflict", "yynnnnyy"),
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
        let got: String = columns
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
        assert_eq!(&got, expected, "{}", operation.name());
    }
}
