//! Fuzzes patch bodies: any bytes as a JSON patch body give `Ok` or `Err` from
//! `lethedb_engine::parse_patch`, and a parsed patch `Ok` or `Err` from `apply_patch`
//! over a few documents, never a panic. The body is also sent through the engine
//! (`Engine::patch_item`) against a stored item, and:
//! - a patch the engine applies stores exactly what `apply_patch` computes from the stored
//!   document (its condition, if any, held);
//! - a patch the engine refuses leaves the item and the container as they were.

#![no_main]

use lethedb_engine::{apply_patch, parse_patch};
use lethedb_engine::WriteMode;
use lethedb_fuzz::{base_documents, partition_key_of, same_snapshot, snapshot, Harness, DATABASE};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(body) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Ok((operations, _condition)) = parse_patch(&body) else {
        return;
    };
    for document in base_documents() {
        let copy = document.clone();
        let _ = apply_patch(&document, &operations);
        assert_eq!(copy, document, "apply_patch changed its input");
    }
    Harness::with(|harness| {
        let engine = harness.engine();
        let container = engine.read_container(DATABASE, "v2").expect("container");
        let key = partition_key_of(&json!("a"));
        let before = snapshot(harness, "v2");
        let stored = engine
            .read_item(&container, key.clone(), "one")
            .expect("item one");
        let document: Value = serde_json::from_slice(&stored.record.body).expect("stored body");
        let outcome =
            harness.block_on(engine.patch_item(&container, key.clone(), "one", body.clone(), None));
        match outcome {
            Ok(outcome) => {
                let expected = apply_patch(&document, &operations)
                    .expect("the engine applied a patch apply_patch refuses");
                let written: Value =
                    serde_json::from_slice(&outcome.item.record.body).expect("patched body");
                assert_eq!(written, expected, "the engine stored another document");
                // Put the item back for the next input.
                harness
                    .block_on(engine.write_item(
                        &container,
                        WriteMode::Replace("one".into()),
                        key,
                        document,
                        None,
                    ))
                    .expect("restore item one");
            }
            Err(_) => {
                let after = snapshot(harness, "v2");
                assert!(
                    same_snapshot(&before, &after),
                    "a refused patch changed the container"
                );
            }
        }
    });
});
