//! The item write rules are the same on every path: each request below goes once through the
//! request path (`write_item`, `delete_item`) and once through a stored procedure doing the same
//! on a fresh engine with the same items, and both give the same outcome (the same `ErrorCode`)
//! and leave the same items. For this test the engine is given wire statuses that number every
//! error code apart, so the script's `err.number` names the code exactly.

use crate::common::{engine_on_store, pk, resolved};
use lethedb_engine::RangeFilter;
use lethedb_engine::{
    Engine, EngineConfig, EngineError, ErrorCode, ManualClock, ResourceKind, ResourceParent,
    WriteMode, ITEM_BYTES_MAX,
};
use serde_json::{json, Value};
use std::sync::Arc;

/// The codes a write can meet here; the script sees each as its own number.
const CODES: [ErrorCode; 9] = [
    ErrorCode::ItemNotFound,
    ErrorCode::ItemIdConflict,
    ErrorCode::PreconditionFailed,
    ErrorCode::ItemTooLarge,
    ErrorCode::InvalidId,
    ErrorCode::InvalidDocument,
    ErrorCode::InvalidTtl,
    ErrorCode::PartitionKeyMismatch,
    ErrorCode::InvalidPartitionKey,
];

/// The first number of [`CODES`]: clear of every HTTP status.
const CODE_NUMBER_BASE: u16 = 1000;

/// Numbers each code of [`CODES`] apart (anything else is one number past them).
fn code_numbers(code: ErrorCode) -> (u16, &'static str) {
    let index = CODES.iter().position(|known| *known == code);
    let index = index.unwrap_or(CODES.len());
    (CODE_NUMBER_BASE + index as u16, "Numbered")
}

/// A request: the write, its id or body, and its If-Match condition.
#[derive(Clone, Debug)]
enum Operation {
    Create(Value),
    Upsert(Value),
    /// Replace the item of this id (the URL's) by the body.
    Replace(&'static str, Value),
    Delete(&'static str),
}

/// An If-Match condition: none, `*`, a stale ETag, or the current ETag of the named item.
#[derive(Clone, Copy, Debug)]
enum Condition {
    None,
    Any,
    Stale,
    CurrentOf(&'static str),
}

const STALE_ETAG: &str = "\"00000000-0000-0000-0000-000000000000\"";

/// Applies each operation on the same path: the stored procedure's arguments are the operation
/// (`op`, the URL's id, the body) and the condition (`null`, `*`, a stale ETag, or an id whose
/// current ETag to use).
const APPLY: &str = r#"function (op, urlId, body, condition) {
    const c = getContext().getCollection();
    const docs = c.getAltLink() + '/docs/';
    const respond = (err) => getContext().getResponse().setBody(err ? {number: err.number} : {ok: true});
    function run(etag) {
        const options = etag === null ? {} : {etag: etag};
        let accepted;
        if (op === 'Create') accepted = c.createDocument(c.getSelfLink(), body, options, respond);
        else if (op === 'Upsert') accepted = c.upsertDocument(c.getSelfLink(), body, options, respond);
        else if (op === 'Replace') accepted = c.replaceDocument(docs + urlId, body, options, respond);
        else accepted = c.deleteDocument(docs + urlId, options, respond);
        if (!accepted) throw new Error('not accepted');
    }
    if (condition === null || condition.etag !== undefined) run(condition && condition.etag);
    else c.readDocument(docs + condition.of, {}, (err, doc) => { if (err) throw err; run(doc._etag); });
}"#;

/// An engine with items `a` and `b` (`v: 0`) in partition `p` of a container with TTL on, and
/// the stored procedure `apply`.
async fn seeded() -> Engine {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let container =
        json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}, "defaultTtl": -1});
    let store = crate::common::test_store();
    let config = EngineConfig::new(code_numbers);
    let engine = engine_on_store(store, clock, container, config).await;
    for id in ["a", "b"] {
        let body = json!({"id": id, "pk": "p", "v": 0});
        engine
            .write_item(
                &resolved(&engine, "c"),
                WriteMode::Create,
                pk("p"),
                body,
                None,
            )
            .await
            .expect("seed");
    }
    let parent = ResourceParent::Container {
        database_id: "db".into(),
        container_id: "c".into(),
    };
    let sproc = json!({"id": "apply", "body": APPLY});
    engine
        .create_resource(ResourceKind::StoredProcedure, parent, sproc)
        .await
        .expect("sproc");
    engine
}

/// The current ETag of item `id`.
fn etag_of(engine: &Engine, id: &str) -> String {
    let container = engine.read_container("db", "c").expect("container");
    engine
        .read_item(&container, pk("p"), id)
        .expect("item")
        .etag()
}

fn if_match(engine: &Engine, condition: Condition) -> Option<String> {
    match condition {
        Condition::None => None,
        Condition::Any => Some("*".into()),
        Condition::Stale => Some(STALE_ETAG.into()),
        Condition::CurrentOf(id) => Some(etag_of(engine, id)),
    }
}

/// The outcome on the request path.
async fn by_request(
    engine: &Engine,
    operation: Operation,
    condition: Condition,
) -> Result<(), ErrorCode> {
    let if_match = if_match(engine, condition);
    let container = resolved(engine, "c");
    let done = match operation {
        Operation::Create(body) => engine
            .write_item(&container, WriteMode::Create, pk("p"), body, if_match)
            .await
            .map(|_| ()),
        Operation::Upsert(body) => engine
            .write_item(&container, WriteMode::Upsert, pk("p"), body, if_match)
            .await
            .map(|_| ()),
        Operation::Replace(id, body) => engine
            .write_item(
                &container,
                WriteMode::Replace(id.into()),
                pk("p"),
                body,
                if_match,
            )
            .await
            .map(|_| ()),
        Operation::Delete(id) => engine
            .delete_item(&container, pk("p"), id, if_match)
            .await
            .map(|_| ()),
    };
    done.map_err(|error: EngineError| error.code)
}

/// The outcome of the same operation in a stored procedure.
async fn by_script(
    engine: &Engine,
    operation: Operation,
    condition: Condition,
) -> Result<(), ErrorCode> {
    let (op, url_id, body) = match operation {
        Operation::Create(body) => ("Create", Value::Null, body),
        Operation::Upsert(body) => ("Upsert", Value::Null, body),
        Operation::Replace(id, body) => ("Replace", json!(id), body),
        Operation::Delete(id) => ("Delete", json!(id), Value::Null),
    };
    let condition = match condition {
        Condition::None => Value::Null,
        Condition::Any => json!({"etag": "*"}),
        Condition::Stale => json!({"etag": STALE_ETAG}),
        Condition::CurrentOf(id) => json!({"of": id}),
    };
    let container = engine.read_container("db", "c").expect("container");
    let arguments = vec![json!(op), url_id, body, condition];
    let response = engine
        .execute_stored_procedure(&container, "apply", pk("p"), arguments, false)
        .await
        .expect("the script runs");
    if response.body["ok"] == json!(true) {
        return Ok(());
    }
    let number = response.body["number"].as_u64().expect("a number");
    let index = usize::try_from(number - u64::from(CODE_NUMBER_BASE)).expect("index");
    Err(*CODES.get(index).expect("a known code"))
}

/// The items left, as (id, v).
async fn items(engine: &Engine) -> Vec<(String, Value)> {
    let container = engine.read_container("db", "c").expect("container");
    let feed = engine
        .read_feed(&container, None, RangeFilter::everything(), 100, None)
        .await
        .expect("feed");
    feed.items
        .iter()
        .map(|item| {
            let document = item.to_value().expect("json");
            (
                document["id"].as_str().unwrap_or("").to_string(),
                document["v"].clone(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_and_stored_procedures_meet_the_same_item_rules() {
    use Condition::{Any, CurrentOf, Stale};
    use ErrorCode::{
        InvalidDocument, InvalidId, InvalidTtl, ItemIdConflict, ItemNotFound, ItemTooLarge,
        PreconditionFailed,
    };
    let doc = |id: &str| json!({"id": id, "pk": "p", "v": 1});
    let big = json!({"id": "big", "pk": "p", "v": "x".repeat(ITEM_BYTES_MAX)});
    let cases: Vec<(&str, Operation, Condition, Result<(), ErrorCode>)> = vec![
        (
            "create on an existing id",
            Operation::Create(doc("a")),
            Condition::None,
            Err(ItemIdConflict),
        ),
        (
            "create ignores a condition",
            Operation::Create(doc("n")),
            Stale,
            Ok(()),
        ),
        (
            "replace a missing item",
            Operation::Replace("zz", doc("zz")),
            Condition::None,
            Err(ItemNotFound),
        ),
        (
            "replace with a stale condition",
            Operation::Replace("a", doc("a")),
            Stale,
            Err(PreconditionFailed),
        ),
        (
            "replace with *",
            Operation::Replace("a", doc("a")),
            Any,
            Ok(()),
        ),
        (
            "replace with the current ETag",
            Operation::Replace("a", doc("a")),
            CurrentOf("a"),
            Ok(()),
        ),
        (
            "upsert with a condition on a missing item",
            Operation::Upsert(doc("n")),
            Stale,
            Ok(()),
        ),
        (
            "upsert with a stale condition",
            Operation::Upsert(doc("a")),
            Stale,
            Err(PreconditionFailed),
        ),
        (
            "upsert with the current ETag",
            Operation::Upsert(doc("a")),
            CurrentOf("a"),
            Ok(()),
        ),
        (
            "rename onto an existing id",
            Operation::Replace("a", doc("b")),
            Condition::None,
            Err(ItemIdConflict),
        ),
        (
            "rename onto an existing id, stale condition",
            Operation::Replace("a", doc("b")),
            Stale,
            Err(PreconditionFailed),
        ),
        (
            "rename onto an existing id, current ETag",
            Operation::Replace("a", doc("b")),
            CurrentOf("a"),
            Err(ItemIdConflict),
        ),
        (
            "rename to a free id",
            Operation::Replace("a", doc("r")),
            CurrentOf("a"),
            Ok(()),
        ),
        (
            "delete a missing item",
            Operation::Delete("zz"),
            Condition::None,
            Err(ItemNotFound),
        ),
        (
            "delete with a stale condition",
            Operation::Delete("a"),
            Stale,
            Err(PreconditionFailed),
        ),
        (
            "delete with the current ETag",
            Operation::Delete("a"),
            CurrentOf("a"),
            Ok(()),
        ),
        (
            "too large",
            Operation::Create(big),
            Condition::None,
            Err(ItemTooLarge),
        ),
        (
            "an id with a slash",
            Operation::Create(doc("a/b")),
            Condition::None,
            Err(InvalidId),
        ),
        (
            "an id that is not a string",
            Operation::Create(json!({"id": 5, "pk": "p"})),
            Condition::None,
            Err(InvalidDocument),
        ),
        (
            "a ttl that is not a number",
            Operation::Create(json!({"id": "t", "pk": "p", "ttl": "soon"})),
            Condition::None,
            Err(InvalidTtl),
        ),
        (
            "a ttl of 0",
            Operation::Create(json!({"id": "t", "pk": "p", "ttl": 0})),
            Condition::None,
            Err(InvalidTtl),
        ),
    ];
    for (name, operation, condition, expected) in cases {
        let request_engine = seeded().await;
        let requested = by_request(&request_engine, operation.clone(), condition).await;
        let script_engine = seeded().await;
        let scripted = by_script(&script_engine, operation, condition).await;
        assert_eq!(requested, expected, "{name}: the request path");
        assert_eq!(scripted, expected, "{name}: the stored procedure");
        assert_eq!(
            items(&request_engine).await,
            items(&script_engine).await,
            "{name}: the same items are left"
        );
        request_engine.close();
        script_engine.close();
    }
}
