//! Reading the arguments of a built-in: a value of the wanted type or `None` (which makes the
//! call `undefined`, as the service does for mistyped arguments), and small helpers shared by
//! the families of functions. Nothing here knows a function's name.

use serde_json::Value;

use crate::context::Val;
use crate::value::{as_number, number_value};

pub fn string(value: Option<&Value>) -> Option<&str> {
    match value {
        Some(Value::String(text)) => Some(text),
        _ => None,
    }
}

pub fn number(value: Option<&Value>) -> Option<f64> {
    value.and_then(as_number)
}

/// A whole number that fits an `i64`, as the Int* functions and string positions require.
pub fn integer(value: Option<&Value>) -> Option<i64> {
    match value {
        Some(Value::Number(number)) => {
            if let Some(whole) = number.as_i64() {
                return Some(whole);
            }
            let float = number.as_f64()?;
            (float.fract() == 0.0 && float.abs() < 9.2e18).then_some(float as i64)
        }
        _ => None,
    }
}

pub fn boolean_argument(value: Option<&Value>) -> Option<bool> {
    match value {
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    }
}

pub fn array(value: Option<&Value>) -> Option<&Vec<Value>> {
    match value {
        Some(Value::Array(items)) => Some(items),
        _ => None,
    }
}

pub fn text(value: String) -> Option<Value> {
    Some(Value::String(value))
}

pub fn math(value: Option<&Value>, operation: impl Fn(f64) -> f64) -> Option<Value> {
    number(value).and_then(|n| number_value(operation(n)))
}

pub fn int_binary(args: &[Val<'_>], operation: impl Fn(i64, i64) -> Option<i64>) -> Option<Value> {
    let (a, b) = (
        integer(args.first()?.as_deref())?,
        integer(args.get(1)?.as_deref())?,
    );
    operation(a, b).map(Value::from)
}

/// An optional trailing boolean argument (ignore-case flags); a non-boolean makes the whole
/// call undefined, signalled by `None`.
pub fn optional_flag(args: &[Val<'_>], index: usize) -> Option<bool> {
    match args.get(index) {
        None => Some(false),
        Some(value) => boolean_argument(value.as_deref()),
    }
}

pub fn char_slice(text: &str, start: usize, length: usize) -> String {
    text.chars().skip(start).take(length).collect()
}
