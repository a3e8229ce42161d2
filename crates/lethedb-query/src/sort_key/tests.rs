//! The sort key's bytes against the language's order: for random values of every type (with
//! the corners: `-0.0`, large integers, NUL bytes, characters beyond the basic plane, long
//! texts that are cut), comparing encodings bytewise agrees with `value::total_order`, exactly
//! when both encodings are exact and never in the wrong direction otherwise.

use super::*;
use crate::value::total_order;
use serde_json::json;
use std::cmp::Ordering;

/// A fixed-seed xorshift, so a failure reproduces exactly.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }
}

const NUMBERS: [f64; 12] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -2.5,
    1e300,
    -1e300,
    9007199254740993.0,
    3.0,
    1e-300,
    -1e-300,
];
const TEXTS: [&str; 9] = [
    "", "a", "ab", "a\u{0}", "a\u{0}b", "\u{ffff}", "😀", "b", "A",
];

fn random_text(rng: &mut Xorshift) -> String {
    if rng.below(6) == 0 {
        // Long texts sharing a prefix, to exercise the cut.
        let mut text = "x".repeat(SORT_KEY_TEXT_BYTES_MAX - 1 + rng.below(3));
        text.push_str(TEXTS[rng.below(TEXTS.len())]);
        return text;
    }
    (0..rng.below(3))
        .map(|_| TEXTS[rng.below(TEXTS.len())])
        .collect()
}

fn random_value(rng: &mut Xorshift, depth: usize) -> Option<Value> {
    let kinds = if depth > 1 { 6 } else { 8 };
    Some(match rng.below(kinds) {
        0 => return None,
        1 => Value::Null,
        2 => Value::Bool(rng.below(2) == 0),
        3 => json!(NUMBERS[rng.below(NUMBERS.len())]),
        4 => json!(rng.below(5) as i64 - 2),
        5 => Value::String(random_text(rng)),
        6 => Value::Array(
            (0..rng.below(3))
                .filter_map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let mut map = serde_json::Map::new();
            for _ in 0..rng.below(3) {
                if let Some(value) = random_value(rng, depth + 1) {
                    map.insert(TEXTS[rng.below(TEXTS.len())].to_string(), value);
                }
            }
            Value::Object(map)
        }
    })
}

fn encoded(value: Option<&Value>) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let exact = encode_sort_key(value, &mut out);
    (out, exact)
}

#[test]
fn bytes_sort_as_the_language_sorts() {
    let mut rng = Xorshift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..200_000 {
        let (left, right) = (random_value(&mut rng, 0), random_value(&mut rng, 0));
        let (left_key, left_exact) = encoded(left.as_ref());
        let (right_key, right_exact) = encoded(right.as_ref());
        let language = total_order(left.as_ref(), right.as_ref());
        let bytes = left_key.cmp(&right_key);
        if left_exact && right_exact {
            assert_eq!(bytes, language, "{left:?} vs {right:?}");
        } else {
            // A cut text may tie with another, but never sorts on the wrong side.
            assert!(
                bytes == language || bytes == Ordering::Equal,
                "{left:?} vs {right:?}"
            );
        }
        let mut left_down = left_key.clone();
        let mut right_down = right_key.clone();
        complement(&mut left_down);
        complement(&mut right_down);
        assert_eq!(left_down.cmp(&right_down), bytes.reverse());
    }
}

#[test]
fn concatenated_keys_sort_component_by_component() {
    let mut rng = Xorshift(0x2545_f491_4f6c_dd1d);
    for _ in 0..50_000 {
        let pairs: Vec<(Option<Value>, Option<Value>)> = (0..2)
            .map(|_| (random_value(&mut rng, 1), random_value(&mut rng, 1)))
            .collect();
        let (mut left, mut right) = (Vec::new(), Vec::new());
        let mut exact = true;
        let mut language = Ordering::Equal;
        for (a, b) in &pairs {
            exact &= encode_sort_key(a.as_ref(), &mut left);
            exact &= encode_sort_key(b.as_ref(), &mut right);
            language = language.then(total_order(a.as_ref(), b.as_ref()));
        }
        if exact {
            assert_eq!(left.cmp(&right), language, "{pairs:?}");
        }
    }
}

#[test]
fn type_bounds_hold_every_key_of_the_type() {
    let samples = [
        (0, None),
        (1, Some(json!(null))),
        (2, Some(json!(false))),
        (2, Some(json!(true))),
        (3, Some(json!(-1e300))),
        (3, Some(json!(1e300))),
        (4, Some(json!(""))),
        (4, Some(json!("\u{ffff}\u{ffff}"))),
        (5, Some(json!([]))),
        (6, Some(json!({"z": [1]}))),
    ];
    for (rank, value) in samples {
        let (key, _) = encoded(value.as_ref());
        for other in 0..7u8 {
            let (start, end) = type_bounds(other);
            let inside = key >= start && key < end;
            assert_eq!(inside, other == rank, "{value:?} in rank {other}");
        }
    }
}

#[test]
fn a_string_prefix_key_starts_exactly_the_strings_with_that_prefix() {
    let prefix = string_prefix_key("ab");
    for (text, starts) in [
        ("ab", true),
        ("abc", true),
        ("a", false),
        ("b", false),
        ("aa", false),
    ] {
        let (key, _) = encoded(Some(&json!(text)));
        assert_eq!(key.starts_with(&prefix), starts, "{text}");
    }
    let long = "y".repeat(SORT_KEY_TEXT_BYTES_MAX + 10);
    let (key, exact) = encoded(Some(&json!(format!("{long}z"))));
    assert!(!exact);
    assert!(key.starts_with(&string_prefix_key(&long)));
}

#[test]
fn a_cut_text_is_the_only_inexact_key() {
    for value in [
        json!(null),
        json!(1.5),
        json!("a"),
        json!([1]),
        json!({"a": "b"}),
        json!(true),
    ] {
        assert!(sort_key_is_exact(&encoded(Some(&value)).0), "{value}");
    }
    assert!(sort_key_is_exact(&encoded(None).0));
    let long = json!("z".repeat(SORT_KEY_TEXT_BYTES_MAX + 1));
    assert!(!sort_key_is_exact(&encoded(Some(&long)).0));
}

#[test]
fn zero_has_one_key() {
    assert_eq!(encoded(Some(&json!(0.0))), encoded(Some(&json!(-0.0))));
    assert_eq!(encoded(Some(&json!(1))), encoded(Some(&json!(1.0))));
}

#[test]
fn a_key_says_where_it_ends_and_scalars_decode_back() {
    let long = json!("q".repeat(SORT_KEY_TEXT_BYTES_MAX + 3));
    for value in [
        None,
        Some(json!(null)),
        Some(json!(false)),
        Some(json!(true)),
        Some(json!(-2.5)),
        Some(json!("a\u{0}b")),
        Some(json!("")),
        Some(json!([1, "a"])),
        Some(json!({"a": null})),
        Some(long.clone()),
    ] {
        let (mut key, exact) = encoded(value.as_ref());
        let length = key.len();
        // A key is followed by others in a composite: its extent must not run into them.
        key.extend_from_slice(&[TAG_STRING, 0x00, 0x01]);
        assert_eq!(
            sort_key_extent(&key, false),
            Some((length, exact)),
            "{value:?}"
        );
        complement(&mut key);
        assert_eq!(
            sort_key_extent(&key, true),
            Some((length, exact)),
            "{value:?}"
        );
        complement(&mut key);
        let decoded = decode_scalar_key(&key[..length]);
        match &value {
            Some(Value::Null | Value::Bool(_) | Value::String(_)) if exact => {
                assert_eq!(decoded.as_ref(), value.as_ref());
            }
            _ => assert_eq!(decoded, None, "{value:?}"),
        }
    }
}
