//! The TTL rules checked over the spec's whole matrix, at the millisecond around each instant.

use super::*;
use serde_json::json;

const WRITTEN_MS: i64 = 1_700_000_000_123;

/// Checks an item written at `WRITTEN_MS` is visible 1 ms before `expires_after_secs` and
/// invisible at it (or visible for a long time when it never expires).
fn check(state: &TtlState, document: Value, expires_after_secs: Option<i64>) {
    let ttl = item_ttl(&document);
    match expires_after_secs {
        Some(secs) => {
            let instant = WRITTEN_MS + secs * 1000;
            assert!(
                !state.is_expired(WRITTEN_MS, ttl, instant - 1),
                "{state:?} {document}: visible 1 ms before"
            );
            assert!(
                state.is_expired(WRITTEN_MS, ttl, instant),
                "{state:?} {document}: gone at the instant"
            );
            assert!(
                state.is_expired(WRITTEN_MS, ttl, instant + 1),
                "{state:?} {document}: gone after"
            );
        }
        None => {
            for later in [0, 1, 10_000, 100 * 365 * 86_400_000] {
                assert!(
                    !state.is_expired(WRITTEN_MS, ttl, WRITTEN_MS + later),
                    "{state:?} {document}: never expires"
                );
            }
        }
    }
}

#[test]
fn the_whole_matrix() {
    let container_off = TtlState::new(None);
    let container_never = TtlState::new(Some(-1));
    let container_ten = TtlState::new(Some(10));
    let absent = json!({"id": "a"});
    let never = json!({"id": "a", "ttl": -1});
    let five = json!({"id": "a", "ttl": 5});
    let fifteen = json!({"id": "a", "ttl": 15});
    // Rows: item; columns: container absent/null, -1, n.
    check(&container_off, absent.clone(), None);
    check(&container_never, absent.clone(), None);
    check(&container_ten, absent, Some(10));
    check(&container_off, never.clone(), None);
    check(&container_never, never.clone(), None);
    check(&container_ten, never, None);
    check(&container_off, five.clone(), None);
    check(&container_never, five.clone(), Some(5));
    check(&container_ten, five, Some(5));
    // An item may also live longer than the default.
    check(&container_ten, fifteen, Some(15));
}

#[test]
fn a_stored_invalid_ttl_counts_as_absent() {
    for invalid in [
        json!(0),
        json!(null),
        json!(-5),
        json!(1.5),
        json!("5"),
        json!(2_147_483_648_i64),
    ] {
        assert_eq!(
            item_ttl(&json!({"ttl": invalid})),
            ItemTtl::Inherit,
            "{invalid}"
        );
    }
    check(&TtlState::new(Some(10)), json!({"ttl": "5"}), Some(10));
}

#[test]
fn every_invalid_default_ttl_is_rejected_with_the_services_message() {
    for (value, shown) in [
        (json!(0), "0"),
        (json!(-2), "-2"),
        (json!(-100), "-100"),
        (json!(1.5), "1.5"),
        (json!("5"), "5"),
        (json!(2_147_483_648_i64), "2147483648"),
        (json!(true), "true"),
        (json!([1]), "[1]"),
    ] {
        let error = parse_default_ttl(Some(&value)).expect_err("invalid");
        assert_eq!(
            error.to_string(),
            format!("The input defaultTtl '{shown}' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire.")
        );
    }
    for (value, expected) in [
        (json!(null), None),
        (json!(-1), Some(-1)),
        (json!(1), Some(1)),
        (json!(2_147_483_647), Some(2_147_483_647)),
        (json!(7.0), Some(7)),
    ] {
        assert_eq!(
            parse_default_ttl(Some(&value)).expect("valid"),
            expected,
            "{value}"
        );
    }
    assert_eq!(parse_default_ttl(None).expect("absent"), None);
}

#[test]
fn item_ttl_is_validated_only_while_ttl_is_on() {
    for invalid in [
        json!(0),
        json!(null),
        json!(1.5),
        json!("5"),
        json!(2_147_483_648_i64),
    ] {
        let document = json!({"id": "x", "ttl": invalid});
        let error = validate_item_ttl(&document, true).expect_err("invalid while on");
        assert!(error.to_string().starts_with("The input ttl '"), "{error}");
        assert!(
            validate_item_ttl(&document, false).is_ok(),
            "not interpreted while off"
        );
    }
    for valid in [json!(-1), json!(1), json!(2_147_483_647)] {
        assert!(validate_item_ttl(&json!({"ttl": valid}), true).is_ok());
    }
    assert!(validate_item_ttl(&json!({"id": "no ttl"}), true).is_ok());
}

#[test]
fn a_negative_item_ttl_other_than_minus_one_is_refused_even_while_ttl_is_off() {
    for ttl_on in [true, false] {
        for negative in [json!(-10), json!(-2), json!(-5.0)] {
            let document = json!({"id": "x", "ttl": negative});
            let error = validate_item_ttl(&document, ttl_on).expect_err("refused");
            assert_eq!(error.code, ErrorCode::InvalidTtl);
            assert!(error.to_string().starts_with("The input ttl '-"), "{error}");
        }
        assert!(validate_item_ttl(&json!({"ttl": -1}), ttl_on).is_ok());
    }
}

#[test]
fn a_new_default_applies_at_once_to_old_items() {
    // Written with TTL off; turning it on with 10 s at +60 s expires the item at once.
    let off = TtlState::new(None);
    let on = off.changed(Some(10), WRITTEN_MS + 60_000);
    assert!(on.is_expired(WRITTEN_MS, ItemTtl::Inherit, WRITTEN_MS + 60_000));
    // Lowering the default from 100 s to 10 s at +20 s: expired from then on.
    let long = TtlState::new(Some(100));
    assert!(!long.is_expired(WRITTEN_MS, ItemTtl::Inherit, WRITTEN_MS + 19_999));
    let short = long.changed(Some(10), WRITTEN_MS + 20_000);
    assert!(short.is_expired(WRITTEN_MS, ItemTtl::Inherit, WRITTEN_MS + 20_000));
}

#[test]
fn expiry_is_final_when_ttl_is_turned_off_or_raised() {
    let on = TtlState::new(Some(10));
    let change_at = WRITTEN_MS + 30_000;
    for new_setting in [None, Some(-1), Some(1000)] {
        let changed = on.changed(new_setting, change_at);
        // Expired under the old rule before the change: stays expired.
        assert!(
            changed.is_expired(WRITTEN_MS, ItemTtl::Inherit, change_at + 1_000_000),
            "{new_setting:?}"
        );
        assert!(
            changed.is_expired(WRITTEN_MS, ItemTtl::Secs(5), change_at + 1_000_000),
            "{new_setting:?}"
        );
        // Written after the change: follows the new rule.
        let later = change_at + 1;
        assert!(
            !changed.is_expired(later, ItemTtl::Inherit, later + 20_000),
            "{new_setting:?}"
        );
        // Not yet expired at the change (written 5 s before it): follows the new rule.
        let recent = change_at - 5_000;
        assert!(
            !changed.is_expired(recent, ItemTtl::Inherit, change_at + 5_000),
            "{new_setting:?}"
        );
    }
    // With TTL off, own ttls stop counting for items not yet expired.
    let off = on.changed(None, change_at);
    assert!(!off.is_expired(change_at - 1_000, ItemTtl::Secs(5), change_at + 100_000));
    // The bounds survive several changes.
    let twice = off
        .changed(Some(-1), change_at + 1)
        .changed(None, change_at + 2);
    assert!(twice.is_expired(WRITTEN_MS, ItemTtl::Inherit, change_at + 10_000_000));
}

#[test]
fn the_change_instant_belongs_to_the_new_rule() {
    // Expiring exactly at the change instant under the old rule: the new rule (off) governs
    // that instant, so the item was still visible 1 ms before and is not expired.
    let on = TtlState::new(Some(10));
    let change_at = WRITTEN_MS + 10_000;
    let off = on.changed(None, change_at);
    assert!(!off.is_expired(WRITTEN_MS, ItemTtl::Inherit, change_at + 50_000));
    let off_later = on.changed(None, change_at + 1);
    assert!(off_later.is_expired(WRITTEN_MS, ItemTtl::Inherit, change_at + 50_000));
}
