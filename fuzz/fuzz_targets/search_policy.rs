//! Fuzzes the search policies a container create and replace validate: any bytes as JSON give
//! a container body's `vectorEmbeddingPolicy`, `fullTextPolicy` and `indexingPolicy` (with its
//! `vectorIndexes`, `fullTextIndexes` and `spatialIndexes`), created in the fuzzing engine and
//! then sent as a replace of a container that already has a vector policy. Never a panic, and:
//! - a create that succeeds reads back with the same vector embedding and full-text policies it
//!   was given, and a create that fails leaves no container behind;
//! - a replace that changes the vector embedding policy or the vector indexes of a container
//!   that has them is refused (the service's "cannot be changed in Collection Replace"), and a
//!   refused replace leaves the container's policies as they were.

#![no_main]

use lethedb_fuzz::{Harness, DATABASE};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};

const POLICIES: [&str; 3] = ["vectorEmbeddingPolicy", "fullTextPolicy", "indexingPolicy"];

/// The container that replaces are tried on: one vector path, a flat index on it.
fn vector_container(id: &str) -> Value {
    json!({
        "id": id,
        "partitionKey": {"paths": ["/pk"], "kind": "Hash"},
        "vectorEmbeddingPolicy": {"vectorEmbeddings": [
            {"path": "/v", "dataType": "float32", "dimensions": 3, "distanceFunction": "cosine"}
        ]},
        "indexingPolicy": {"vectorIndexes": [{"path": "/v", "type": "flat"}]}
    })
}

/// The fuzzed policies on a container body: the input's own fields where it is an object, else
/// the input as the vector embedding policy.
fn with_policies(mut body: Value, input: &Value) -> Value {
    match input.as_object() {
        Some(fields) => {
            for name in POLICIES {
                if let Some(policy) = fields.get(name) {
                    body[name] = policy.clone();
                }
            }
        }
        None => body["vectorEmbeddingPolicy"] = input.clone(),
    }
    body
}

fn check_create(harness: &Harness, id: &str, input: &Value) {
    let engine = harness.engine();
    let body = with_policies(
        json!({"id": id, "partitionKey": {"paths": ["/pk"], "kind": "Hash"}}),
        input,
    );
    match harness.block_on(engine.create_container(DATABASE, body.clone(), None)) {
        Ok(created) => {
            for name in ["vectorEmbeddingPolicy", "fullTextPolicy"] {
                if let Some(sent) = body.get(name).filter(|policy| !policy.is_null()) {
                    assert_eq!(created.resource.get(name), Some(sent), "{name} read back");
                }
            }
            harness
                .block_on(engine.delete_container(DATABASE, id))
                .expect("a created container deletes");
        }
        Err(_) => assert!(
            engine.read_container(DATABASE, id).is_err(),
            "a refused create left container {id}"
        ),
    }
}

fn check_replace(harness: &Harness, id: &str, input: &Value) {
    let engine = harness.engine();
    let original = vector_container(id);
    harness
        .block_on(engine.create_container(DATABASE, original.clone(), None))
        .expect("the vector container");
    let sent = with_policies(original.clone(), input);
    let before = engine.read_container(DATABASE, id).expect("created").resource.clone();
    let outcome = harness.block_on(engine.replace_container(DATABASE, id, sent.clone(), None));
    let vectors_changed = sent["vectorEmbeddingPolicy"] != original["vectorEmbeddingPolicy"]
        || sent["indexingPolicy"]["vectorIndexes"] != original["indexingPolicy"]["vectorIndexes"];
    match outcome {
        Ok(_) => assert!(!vectors_changed, "a replace changed the vector policy: {sent}"),
        Err(_) => {
            let after = engine.read_container(DATABASE, id).expect("kept");
            for name in POLICIES {
                assert_eq!(after.resource.get(name), before.get(name), "{name} after a refusal");
            }
        }
    }
    harness
        .block_on(engine.delete_container(DATABASE, id))
        .expect("the vector container deletes");
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let number = NEXT.fetch_add(1, Ordering::Relaxed);
    Harness::with(|harness| {
        check_create(harness, &format!("policy{number}"), &input);
        check_replace(harness, &format!("replace{number}"), &input);
    });
});
