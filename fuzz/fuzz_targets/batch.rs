//! Fuzzes batch bodies: any bytes as a JSON batch body give `Ok` or `Err` from
//! `lethedb_engine::parse_batch`, never a panic. A body that parses is then run by the
//! engine (`Engine::execute_batch`) over a container holding a few items, as a transactional
//! batch on partition `["a"]` and as a bulk (non-atomic) request, and:
//! - every run answers one entry per operation;
//! - a transactional batch that fails, or whose request is refused, leaves the container exactly
//!   as it was (no partial write); one that succeeds has every entry `Ok`.
//!
//! A run that changed the container starts the next input on a fresh engine.

#![no_main]

use lethedb_engine::{parse_batch, BatchMode};
use lethedb_fuzz::{partition_key_of, same_snapshot, snapshot, Harness, DATABASE};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(body) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Ok(operations) = parse_batch(&body) else {
        return;
    };
    let count = operations.len();
    Harness::with(|harness| {
        let engine = harness.engine();
        let container = engine.read_container(DATABASE, "v2").expect("container");
        let before = snapshot(harness, "v2");
        let atomic = harness.block_on(engine.execute_batch(
            &container,
            partition_key_of(&json!("a")),
            operations.clone(),
            BatchMode::Atomic,
        ));
        match atomic {
            Ok((entries, true, _)) => {
                assert_eq!(entries.len(), count);
                assert!(
                    entries.iter().all(Result::is_ok),
                    "a committed batch with a failed entry"
                );
            }
            Ok((entries, false, _)) => {
                assert_eq!(entries.len(), count);
                assert!(
                    entries.iter().any(Result::is_err),
                    "a failed batch with no failed entry"
                );
                let after = snapshot(harness, "v2");
                assert!(
                    same_snapshot(&before, &after),
                    "a failed batch changed the container"
                );
            }
            Err(_) => {
                let after = snapshot(harness, "v2");
                assert!(
                    same_snapshot(&before, &after),
                    "a refused batch changed the container"
                );
            }
        }
        let middle = snapshot(harness, "v2");
        if let Ok((entries, _, _)) = harness.block_on(engine.execute_batch(
            &container,
            None,
            operations,
            BatchMode::ContinueOnError,
        )) {
            assert_eq!(entries.len(), count);
        }
        let after = snapshot(harness, "v2");
        if !same_snapshot(&before, &middle) || !same_snapshot(&middle, &after) {
            harness.renew();
        }
    });
});
