//! The table of an item's write rules: every mode (create, upsert, replace, a replace that
//! renames, patch, delete) × what it meets × each kind of If-Match condition, with the outcome;
//! and the body rules, body by body. Each combination must have exactly one row, so a new mode
//! or state fails here until it has one.

use super::*;
use serde_json::json;

/// The conditions of the columns, in order: none, `*`, the current version's ETag, a stale one.
const CONDITIONS: usize = 4;

/// Expected outcomes by (mode, state), one letter per condition column: `c` create (201), `r`
/// replace (200), `d` delete, `4` not found, `9` conflict, `2` precondition failed. A rename is a
/// replace whose body names another id than its URL; "taken" means an item of that other id is
/// visible.
const TABLE: &[(&str, &str, &str)] = &[
    ("Create", "absent", "cccc"),
    ("Create", "present", "9999"),
    ("Upsert", "absent", "cccc"),
    ("Upsert", "present", "rrr2"),
    ("Replace", "absent", "4444"),
    ("Replace", "present", "rrr2"),
    ("Rename", "absent", "4444"),
    ("Rename", "absent, taken", "4444"),
    ("Rename", "present", "rrr2"),
    // The condition is checked against the URL's item before the write meets the other id.
    ("Rename", "present, taken", "9992"),
    ("Patch", "absent", "4444"),
    ("Patch", "present", "rrr2"),
    ("Delete", "absent", "4444"),
    ("Delete", "present", "ddd2"),
];

const MODES: [&str; 6] = ["Create", "Upsert", "Replace", "Rename", "Patch", "Delete"];

/// The states a mode can meet: only a rename meets a second item.
fn states(mode: &str) -> &'static [&'static str] {
    if mode == "Rename" {
        &["absent", "absent, taken", "present", "present, taken"]
    } else {
        &["absent", "present"]
    }
}

fn letter(outcome: EngineResult<char>) -> char {
    match outcome {
        Ok(letter) => letter,
        Err(error) => match error.code {
            ErrorCode::ItemNotFound => '4',
            ErrorCode::ItemIdConflict => '9',
            ErrorCode::PreconditionFailed => '2',
            other => panic!("unexpected {other:?}"),
        },
    }
}

/// The outcome of `mode` meeting `state` under `condition`, with the current version seen as
/// `current` (its ETag is `current_etag`).
fn outcome(mode: &str, state: &str, condition: usize, current: Version<'_>) -> char {
    let current_etag = match current {
        Version::Stored {
            container_number,
            lsn,
        } => rids::etag(container_number, lsn),
        Version::Shown(etag) => etag.to_string(),
    };
    let if_match = [
        None,
        Some("*"),
        Some(current_etag.as_str()),
        Some("\"stale\""),
    ][condition];
    let present = state.starts_with("present");
    let taken = state.ends_with("taken");
    let current = present.then_some(current);
    match mode {
        "Delete" => {
            return letter(decide_existing(
                if_match,
                current.map(|version| (version, 'd')),
            ))
        }
        "Patch" => {
            return letter(decide_existing(
                if_match,
                current.map(|version| (version, 'r')),
            ))
        }
        _ => {}
    }
    let mode = match mode {
        "Create" => WriteMode::Create,
        "Upsert" => WriteMode::Upsert,
        _ => WriteMode::Replace("url".into()),
    };
    let effect = decide_write(&mode, if_match, current, taken);
    letter(effect.map(|effect| match effect {
        Effect::Create => 'c',
        Effect::Replace => 'r',
    }))
}

#[test]
fn every_mode_state_and_condition_has_one_outcome() {
    let count: usize = MODES.iter().map(|mode| states(mode).len()).sum();
    assert_eq!(TABLE.len(), count, "one row per mode and state");
    // Both ways a version is known give the same answers.
    let versions = [
        Version::Stored {
            container_number: 7,
            lsn: 42,
        },
        Version::Shown("\"lethedb-provisional-1\""),
    ];
    for mode in MODES {
        for state in states(mode) {
            let rows: Vec<_> = TABLE
                .iter()
                .filter(|(m, s, _)| *m == mode && s == state)
                .collect();
            assert_eq!(rows.len(), 1, "{mode} meeting {state}: one row");
            let expected = rows[0].2;
            for version in versions {
                let got: String = (0..CONDITIONS)
                    .map(|condition| outcome(mode, state, condition, version))
                    .collect();
                assert_eq!(got, expected, "{mode} meeting {state} ({version:?})");
            }
        }
    }
}

#[test]
fn the_body_rules() {
    let check = |body: Value, expected: Result<&str, ErrorCode>| match (
        prepare_body(body.clone()),
        expected,
    ) {
        (Ok(prepared), Ok(id)) => {
            assert_eq!(prepared.id, id);
            assert_eq!(
                prepared.bytes,
                serde_json::to_vec(&prepared.document).unwrap()
            );
            for name in SYSTEM_PROPERTIES {
                assert!(prepared.document.get(name).is_none(), "{name} kept");
            }
        }
        (Err(error), Err(code)) => assert_eq!(error.code, code, "{body}"),
        (got, expected) => panic!("{body}: got {got:?}, expected {expected:?}"),
    };
    check(json!({"id": "a"}), Ok("a"));
    let mut with_system_properties = json!({"id": "a"});
    for name in SYSTEM_PROPERTIES {
        with_system_properties[name] = json!("sent");
    }
    check(with_system_properties, Ok("a"));
    check(json!([1]), Err(ErrorCode::InvalidDocument));
    check(json!({"v": 1}), Err(ErrorCode::InvalidDocument));
    check(json!({"id": 5}), Err(ErrorCode::InvalidDocument));
    check(json!({"id": ""}), Err(ErrorCode::InvalidId));
    check(json!({"id": "a/b"}), Err(ErrorCode::InvalidId));
    check(json!({"id": "a\\b"}), Err(ErrorCode::InvalidId));
    check(json!({"id": "a#b"}), Err(ErrorCode::InvalidId));
    // An item's id may hold a `?`, as on the service; other resources' ids may not.
    check(json!({"id": "a?b"}), Ok("a?b"));
    check(json!({"id": "i".repeat(256)}), Err(ErrorCode::InvalidId));
    check(json!({"id": "i".repeat(255)}), Ok(&"i".repeat(255)));
    check(
        json!({"id": "big", "v": "x".repeat(ITEM_BYTES_MAX)}),
        Err(ErrorCode::ItemTooLarge),
    );
}

#[test]
fn a_partition_key_within_its_limit() {
    assert!(check_partition_key_size(&[0; PARTITION_KEY_BYTES_MAX]).is_ok());
    let error = check_partition_key_size(&[0; PARTITION_KEY_BYTES_MAX + 1]).unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidPartitionKey);
}
