//! Fuzzes item bodies and partition key values: any bytes as a JSON item body go through the
//! engine's write path (body preparation, partition key extraction and checks, the item's own
//! `ttl`) in containers with hash v1, hash v2, hierarchical and system partition keys; any bytes
//! as the `x-ms-documentdb-partitionkey` header's JSON text go through
//! `PartitionKeyValue::parse_json_text`. Never a panic, and:
//! - a value's canonical bytes decode to the same value, and its header text parses back to it;
//! - effective partition keys are upper-case hex of the scheme's length (v2: 32 digits, top two
//!   bits clear; hierarchical: 32 per part, a prefix's key a prefix of the full key's);
//! - a write that succeeds stores the body minus system properties, readable by its key; a write
//!   that fails leaves the item as it was (no partial write).

#![no_main]

use lethedb_engine::prefix_range;
use lethedb_engine::{HashScheme, PartitionKeyDefinition, PartitionKeyValue, WriteMode};
use lethedb_fuzz::{definitions, without_system_properties, Harness, DATABASE};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::sync::OnceLock;

fn all_definitions() -> &'static [(&'static str, PartitionKeyDefinition)] {
    static DEFINITIONS: OnceLock<Vec<(&'static str, PartitionKeyDefinition)>> = OnceLock::new();
    DEFINITIONS.get_or_init(definitions)
}

fn check_value(value: &PartitionKeyValue) {
    let encoded = value.encode();
    assert_eq!(
        PartitionKeyValue::decode(&encoded).as_ref(),
        Some(value),
        "decode of encode"
    );
    let text = String::from_utf8(encoded).expect("encoded key is UTF-8");
    let reparsed =
        PartitionKeyValue::parse_json_text(&text).expect("encoded key parses as a header");
    assert_eq!(&reparsed, value, "header text {text}");
    for (name, definition) in all_definitions() {
        let epk = value.effective(definition);
        assert!(
            epk.bytes()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b)),
            "{name}: EPK {epk:?} is not upper-case hex"
        );
        let parts = value.0.len();
        match HashScheme::of(definition) {
            HashScheme::V1 => assert!(epk.len() % 2 == 0, "{name}: odd v1 EPK {epk}"),
            HashScheme::V2 if parts > 0 => {
                assert_eq!(epk.len(), 32, "{name}: v2 EPK {epk}");
                assert!(
                    epk.as_bytes()[0] <= b'3',
                    "{name}: v2 EPK {epk} has a top bit set"
                );
            }
            HashScheme::V2 => assert!(epk.is_empty()),
            HashScheme::MultiHash => {
                assert_eq!(epk.len(), 32 * parts, "{name}: hierarchical EPK {epk}");
                // A prefix (fewer parts than paths) covers every key that extends it.
                for cut in 0..parts.min(definition.paths.len()) {
                    let prefix = PartitionKeyValue(value.0[..cut].to_vec());
                    let prefix_epk = prefix.effective(definition);
                    assert!(
                        epk.starts_with(&prefix_epk),
                        "{name}: prefix EPK {prefix_epk} of {epk}"
                    );
                    let (start, end) = prefix_range(definition, &prefix);
                    assert!(
                        start <= epk && epk < end,
                        "{name}: {epk} outside [{start}, {end})"
                    );
                }
            }
        }
        let (start, end) = prefix_range(definition, value);
        assert!(start <= end, "{name}: range [{start}, {end}]");
        let _ = definition.require_full(value.clone());
    }
}

fn write_and_check(harness: &Harness, container: &str, body: &Value, send_key: bool) {
    let engine = harness.engine();
    let Ok(handle) = engine.read_container(DATABASE, container) else {
        panic!("container {container} is missing");
    };
    let extracted = handle.partition_key.extract(body);
    let key = if handle.partition_key.is_system_key() || !send_key {
        None
    } else {
        Some(extracted.clone())
    };
    let id = body.get("id").and_then(Value::as_str).map(str::to_string);
    let before = id.as_deref().map(|id| {
        engine
            .read_item(&handle, Some(extracted.clone()), id)
            .map(|item| item.record)
    });
    let outcome = harness.block_on(engine.write_item(
        &handle,
        WriteMode::Create,
        key.clone(),
        body.clone(),
        None,
    ));
    match outcome {
        Ok(outcome) => {
            let id = id.expect("a body without a string id was accepted");
            assert!(outcome.created);
            let stored: Value =
                serde_json::from_slice(&outcome.item.record.body).expect("stored body is JSON");
            assert_eq!(
                stored,
                without_system_properties(body.clone()),
                "stored body"
            );
            let read = engine
                .read_item(&handle, Some(extracted.clone()), &id)
                .expect("a created item reads back by its partition key");
            assert_eq!(read.record, outcome.item.record);
            harness
                .block_on(engine.delete_item(&handle, Some(extracted), &id, None))
                .expect("a created item deletes");
        }
        Err(_) => {
            if let (Some(id), Some(before)) = (id, before) {
                let after = engine
                    .read_item(&handle, Some(extracted), &id)
                    .map(|item| item.record);
                assert_eq!(
                    before.as_ref().ok(),
                    after.as_ref().ok(),
                    "a failed create changed item {id} in {container}"
                );
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(value) = PartitionKeyValue::parse_json_text(text) {
            check_value(&value);
        }
    }
    let Ok(body) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    for (_, definition) in all_definitions() {
        check_value(&definition.extract(&body));
    }
    Harness::with(|harness| {
        for (container, _) in all_definitions() {
            write_and_check(harness, container, &body, data.len() % 2 == 0);
        }
    });
});
