//! The value semantics of the language over JSON: numbers as doubles, equality, relational
//! comparison, the cross-type sort order, and canonical keys for grouping and DISTINCT.
//!
//! `undefined` is represented as `None` wherever a value may be missing. Nothing here knows
//! the syntax tree or evaluates expressions.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde_json::{Number, Value};

/// The largest magnitude written as an integer. Every integral double below 2^63 converts to
/// `i64` exactly, so results such as `1 + 1` print as `2`, not `2.0`, as the service prints them.
const INTEGRAL_MAGNITUDE_MAX: f64 = 9.2e18;

/// A double as a JSON number: integral values become integers, non-finite ones (which JSON
/// cannot carry) become `None`, i.e. undefined.
pub fn number_value(number: f64) -> Option<Value> {
    if !number.is_finite() {
        return None;
    }
    if number.fract() == 0.0 && number.abs() < INTEGRAL_MAGNITUDE_MAX {
        return Some(Value::Number(Number::from(number as i64)));
    }
    Number::from_f64(number).map(Value::Number)
}

pub fn as_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(number) => number.as_f64(),
        _ => None,
    }
}

/// The rank of a type in the service's cross-type order.
pub fn type_rank(value: Option<&Value>) -> u8 {
    match value {
        None => 0,
        Some(Value::Null) => 1,
        Some(Value::Bool(_)) => 2,
        Some(Value::Number(_)) => 3,
        Some(Value::String(_)) => 4,
        Some(Value::Array(_)) => 5,
        Some(Value::Object(_)) => 6,
    }
}

/// Equality of two defined values. Different types are not comparable (`None`, i.e.
/// undefined); objects and arrays compare deeply, numbers by value (`1 = 1.0`).
pub fn equals(left: &Value, right: &Value) -> Option<bool> {
    match (left, right) {
        (Value::Null, Value::Null) => Some(true),
        (Value::Bool(a), Value::Bool(b)) => Some(a == b),
        (Value::Number(_), Value::Number(_)) => Some(as_number(left) == as_number(right)),
        (Value::String(a), Value::String(b)) => Some(a == b),
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => {
            Some(deep_equal(left, right))
        }
        _ => None,
    }
}

/// Structural equality where numbers compare by value and object member order is ignored.
pub fn deep_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(_), Value::Number(_)) => as_number(left) == as_number(right),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| deep_equal(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, x)| b.get(key).is_some_and(|y| deep_equal(x, y)))
        }
        _ => left == right,
    }
}

/// Relational comparison (`<`, `<=`, `>`, `>=`): defined only between two values of the same
/// scalar type; across types, and between objects or arrays, the result is undefined.
pub fn compare_scalars(left: &Value, right: &Value) -> Option<Ordering> {
    match (left, right) {
        (Value::Null, Value::Null) => Some(Ordering::Equal),
        (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
        (Value::Number(_), Value::Number(_)) => as_number(left)?.partial_cmp(&as_number(right)?),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

/// The total order used by ORDER BY, MIN and MAX: undefined < null < false < true < numbers <
/// strings < arrays < objects. The service orders arrays and objects by an internal hash; this
/// implementation orders them by their canonical text, which is deterministic but not the
/// service's order.
pub fn total_order(left: Option<&Value>, right: Option<&Value>) -> Ordering {
    let by_rank = type_rank(left).cmp(&type_rank(right));
    if by_rank != Ordering::Equal {
        return by_rank;
    }
    match (left, right) {
        (Some(Value::Array(_)), Some(Value::Array(_)))
        | (Some(Value::Object(_)), Some(Value::Object(_))) => {
            canonical_key(left).cmp(&canonical_key(right))
        }
        (Some(a), Some(b)) => compare_scalars(a, b).unwrap_or(Ordering::Equal),
        _ => Ordering::Equal,
    }
}

/// A string that is equal for two values exactly when they are equal in the language:
/// numbers by value, objects regardless of member order. Undefined has its own key.
pub fn canonical_key(value: Option<&Value>) -> String {
    let mut out = String::new();
    match value {
        None => out.push('u'),
        Some(value) => {
            out.push('v');
            write_canonical(&mut out, value);
        }
    }
    out
}

fn write_canonical(out: &mut String, value: &Value) {
    match value {
        Value::Number(_) => {
            let normalized = as_number(value)
                .and_then(number_value)
                .unwrap_or(Value::Null);
            let _ = write!(out, "{normalized}");
        }
        Value::Array(items) => {
            out.push('[');
            for (position, item) in items.iter().enumerate() {
                if position > 0 {
                    out.push(',');
                }
                write_canonical(out, item);
            }
            out.push(']');
        }
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (position, (key, item)) in sorted.into_iter().enumerate() {
                if position > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{}:", Value::String(key.clone()));
                write_canonical(out, item);
            }
            out.push('}');
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integral_doubles_become_integers() {
        assert_eq!(number_value(2.0), Some(json!(2)));
        assert_eq!(number_value(-0.0), Some(json!(0)));
        assert_eq!(number_value(2.5), Some(json!(2.5)));
        assert_eq!(number_value(f64::INFINITY), None);
        assert_eq!(number_value(f64::NAN), None);
    }

    #[test]
    fn equality_is_undefined_across_types() {
        assert_eq!(equals(&json!(1), &json!(1.0)), Some(true));
        assert_eq!(equals(&json!(1), &json!("1")), None);
        assert_eq!(equals(&json!(null), &json!(null)), Some(true));
        assert_eq!(
            equals(&json!({"a": 1, "b": [1]}), &json!({"b": [1.0], "a": 1})),
            Some(true)
        );
        assert_eq!(equals(&json!([1, 2]), &json!([2, 1])), Some(false));
    }

    #[test]
    fn total_order_ranks_types() {
        let values = [
            None,
            Some(json!(null)),
            Some(json!(false)),
            Some(json!(true)),
            Some(json!(-1)),
            Some(json!(2.5)),
            Some(json!("")),
            Some(json!("a")),
            Some(json!([])),
            Some(json!({})),
        ];
        for window in values.windows(2) {
            assert_eq!(
                total_order(window[0].as_ref(), window[1].as_ref()),
                Ordering::Less,
                "{window:?}"
            );
        }
    }

    #[test]
    fn canonical_keys_ignore_member_order_and_number_spelling() {
        assert_eq!(
            canonical_key(Some(&json!({"a": 1.0, "b": 2}))),
            canonical_key(Some(&json!({"b": 2, "a": 1})))
        );
        assert_ne!(canonical_key(None), canonical_key(Some(&json!(null))));
    }
}
