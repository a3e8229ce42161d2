//! The table of what a resource token allows: every operation × mode (Read, All) × scope (the
//! resource, below it, an ancestor, a sibling, another partition key); and what an Entra ID
//! token allows. Each operation is tried on the path of its first row in the route table
//! (`operations.rs`), and the test fails until a new operation has a row here.

use super::operations::ROUTES;
use super::tokens::{PK_A, PK_B};
use crate::grants::{entra_allows, granted_partition_key, Grant, Mode};
use crate::operation::Operation;
use crate::routes::ResourcePath;
use lethedb_engine::PartitionKeyValue;
use serde_json::{json, Value};

/// The path an operation is tried on: its first row's in the route table.
fn trial_path(operation: Operation) -> &'static str {
    let row = ROUTES.iter().find(|(.., name)| *name == operation.name());
    let (_, path, ..) = row.unwrap_or_else(|| panic!("no route for {}", operation.name()));
    path
}

/// Expected answers, `y` allowed and `n` refused, in the columns: Read on container `c`, All
/// on `c`, Read on item `c/docs/i`, All on it (so `c` and the database are ancestors), Read
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
    // Keys are the database's: no token on a container reaches them; Entra ID reads them.
    ("ReadClientEncryptionKeyFeed", "nnnnnnnny"),
    ("QueryClientEncryptionKeys", "nnnnnnnny"),
    ("CreateClientEncryptionKey", "nnnnnnnnn"),
    ("ReadClientEncryptionKey", "nnnnnnnny"),
    ("ReplaceClientEncryptionKey", "nnnnnnnnn"),
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
        partition_key: partition_key
            .map(|key| PartitionKeyValue::parse_json_text(&json!([key]).to_string()).expect("key")),
    }
}

#[test]
fn every_operation_has_a_rule_for_each_mode_and_scope() {
    let columns: [(Grant, Option<&str>); 8] = [
        (grant(Mode::Read, "dbs/d/colls/c", None), None),
        (grant(Mode::All, "dbs/d/colls/c", None), None),
        (grant(Mode::Read, "dbs/d/colls/c/docs/i", None), None),
        (grant(Mode::All, "dbs/d/colls/c/docs/i", None), None),
        (grant(Mode::Read, "dbs/d/colls/s", None), None),
        (grant(Mode::All, "dbs/d/colls/s", None), None),
        (grant(Mode::All, "dbs/d/colls/c", Some("a")), Some(PK_B)),
        (grant(Mode::All, "dbs/d/colls/c", Some("a")), Some(PK_A)),
    ];
    assert_eq!(TABLE.len(), Operation::all().len(), "one row per operation");
    for &operation in Operation::all() {
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
                let key = key.map(|text| PartitionKeyValue::parse_json_text(text).expect("key"));
                if grant.allows(operation, &path, key.as_ref(), body.as_bytes()) {
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

/// A permission's `resourcePartitionKey` as the grant holds it: the engine's one grammar (an
/// array of parts), plus a bare value, which permissions have always been allowed to name.
#[test]
fn a_permission_key_is_read_in_the_engine_grammar() {
    let key = |value: Value| granted_partition_key(&json!({ "resourcePartitionKey": value }));
    let parsed = |text: &str| Some(PartitionKeyValue::parse_json_text(text).expect("key"));
    for (stored, same_as) in [
        (json!(["a"]), r#"["a"]"#),
        (json!("a"), r#"["a"]"#),
        (json!([1]), "[1.0]"),
        (json!(1.5), "[1.5]"),
        (json!(true), "[true]"),
        (json!([{}]), "[{}]"),
        (json!(["a", 2]), r#"["a", 2]"#),
        (json!([]), "[]"),
    ] {
        assert_eq!(
            key(stored.clone()).expect("accepted"),
            parsed(same_as),
            "{stored}"
        );
    }
    assert_eq!(key(Value::Null).expect("accepted"), None);
    assert_eq!(granted_partition_key(&json!({})).expect("accepted"), None);
    for refused in [json!({}), json!({"a": 1}), json!([[1]]), json!([{"a": 1}])] {
        assert!(key(refused.clone()).is_err(), "{refused}");
    }
}

/// Keys compare as the engine stores them: `1` and `1.0` are one partition, `"1"` another.
#[test]
fn a_partition_scoped_grant_compares_keys_as_the_engine_stores_them() {
    let grant = Grant {
        mode: Mode::All,
        resource: ResourcePath::parse("dbs/d/colls/c").expect("link").segments,
        partition_key: granted_partition_key(&json!({"resourcePartitionKey": [1]})).expect("key"),
    };
    let path = ResourcePath::parse("/dbs/d/colls/c/docs/i").expect("path");
    let read = Operation::Item(crate::operation::ItemOperation::Read);
    let allows = |header: &str| {
        let key = PartitionKeyValue::parse_json_text(header).expect("key");
        grant.allows(read, &path, Some(&key), b"")
    };
    assert!(allows("[1]"));
    assert!(allows("[1.0]"));
    assert!(!allows(r#"["1"]"#));
    assert!(!allows("[2]"));
    assert!(!grant.allows(read, &path, None, b""), "a key must be named");
    assert!(grant.reads_partition_key(read));
}

/// A batch is judged by its operations as the engine reads them: each one's own key (a JSON
/// string holding the key, or the key itself), else the header's.
#[test]
fn a_partition_scoped_grant_reads_a_batch_as_the_engine_does() {
    let grant = grant(Mode::All, "dbs/d/colls/c", Some("a"));
    let path = ResourcePath::parse("/dbs/d/colls/c/docs").expect("path");
    let batch = Operation::Item(crate::operation::ItemOperation::Batch);
    let header = PartitionKeyValue::parse_json_text(PK_A).expect("key");
    let allows = |body: Value, header: Option<&PartitionKeyValue>| {
        grant.allows(batch, &path, header, body.to_string().as_bytes())
    };
    let create = |key: Value| json!([{"operationType": "Create", "partitionKey": key}]);
    assert!(allows(create(json!(PK_A)), None));
    assert!(allows(create(json!(["a"])), None));
    assert!(allows(json!([{"operationType": "Create"}]), Some(&header)));
    assert!(!allows(json!([{"operationType": "Create"}]), None));
    assert!(!allows(create(json!(PK_B)), Some(&header)));
    // Another partition named by the key itself rather than a string holding it.
    assert!(!allows(create(json!(["b"])), Some(&header)));
    // Outside the grammar (a bare value): the engine would refuse it; so does the grant.
    assert!(!allows(create(json!("\"a\"")), Some(&header)));
    assert!(!allows(json!({"not": "a batch"}), Some(&header)));
}
