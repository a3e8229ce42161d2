//! Array functions (ARRAY_*) and the set functions SETINTERSECT and SETUNION.
//!
//! As everywhere in the language, a mistyped argument makes the call `undefined`; the
//! argument counts were checked by the planner against `builtins.rs`.

use std::collections::HashSet;

use serde_json::Value;

use super::args::{array, integer, optional_flag};
use crate::builtins::Builtin;
use crate::context::Val;
use crate::error::QueryError;
use crate::value::{as_number, canonical_key, equals, number_value, total_order};

/// Computes a built-in of this family; any other built-in is an internal inconsistency.
pub fn call(builtin: Builtin, args: &[Val<'_>]) -> Result<Option<Value>, QueryError> {
    let arg =
        |index: usize| -> Option<&Value> { args.get(index).and_then(|value| value.as_deref()) };
    let result = match builtin {
        Builtin::ArrayContains => match (array(arg(0)), arg(1), optional_flag(args, 2)) {
            (Some(items), Some(wanted), Some(partial)) => {
                Some(Value::Bool(items.iter().any(|item| {
                    if partial {
                        partial_match(item, wanted)
                    } else {
                        equals(item, wanted) == Some(true)
                    }
                })))
            }
            (Some(_), None, Some(_)) => Some(Value::Bool(false)),
            _ => None,
        },
        Builtin::ArrayContainsAny | Builtin::ArrayContainsAll => match array(arg(0)) {
            Some(items) => {
                let contains = |wanted: &Val<'_>| match wanted {
                    Some(wanted) => items.iter().any(|item| equals(item, wanted) == Some(true)),
                    None => false,
                };
                let rest = &args[1..];
                Some(Value::Bool(if builtin == Builtin::ArrayContainsAny {
                    rest.iter().any(contains)
                } else {
                    rest.iter().all(contains)
                }))
            }
            None => None,
        },
        Builtin::ArrayLength => array(arg(0)).map(|items| Value::from(items.len())),
        Builtin::ArraySum | Builtin::ArrayAverage => match array(arg(0)) {
            Some(items) => {
                let numbers: Option<Vec<f64>> = items.iter().map(as_number).collect();
                match numbers {
                    Some(numbers) if builtin == Builtin::ArraySum => {
                        number_value(numbers.iter().sum())
                    }
                    Some(numbers) if !numbers.is_empty() => {
                        number_value(numbers.iter().sum::<f64>() / numbers.len() as f64)
                    }
                    _ => None,
                }
            }
            None => None,
        },
        Builtin::ArrayMin | Builtin::ArrayMax => match array(arg(0)) {
            Some(items) => {
                let maximum = builtin == Builtin::ArrayMax;
                let mut best: Option<&Value> = None;
                for item in items {
                    if matches!(item, Value::Array(_) | Value::Object(_)) {
                        return Ok(None);
                    }
                    let ordering = best.map(|current| total_order(Some(item), Some(current)));
                    let better = match ordering {
                        None => true,
                        Some(ordering) => {
                            (maximum && ordering.is_gt()) || (!maximum && ordering.is_lt())
                        }
                    };
                    if better {
                        best = Some(item);
                    }
                }
                best.cloned()
            }
            None => None,
        },
        Builtin::ArraySlice => match (array(arg(0)), integer(arg(1))) {
            (Some(items), Some(start)) => {
                let length = items.len() as i64;
                let start = if start < 0 {
                    (length + start).max(0)
                } else {
                    start.min(length)
                };
                let count = match args.get(2) {
                    None => length - start,
                    Some(value) => match integer(value.as_deref()) {
                        Some(count) => count.max(0).min(length - start),
                        None => return Ok(None),
                    },
                };
                Some(Value::Array(
                    items[start as usize..(start + count) as usize].to_vec(),
                ))
            }
            _ => None,
        },
        Builtin::ArrayConcat => {
            let mut joined = Vec::new();
            for value in args {
                match array(value.as_deref()) {
                    Some(items) => joined.extend(items.iter().cloned()),
                    None => return Ok(None),
                }
            }
            Some(Value::Array(joined))
        }
        Builtin::SetIntersect | Builtin::SetUnion => match (array(arg(0)), array(arg(1))) {
            (Some(first), Some(second)) => {
                let mut seen = HashSet::new();
                let mut result = Vec::new();
                if builtin == Builtin::SetUnion {
                    for item in first.iter().chain(second) {
                        if seen.insert(canonical_key(Some(item))) {
                            result.push(item.clone());
                        }
                    }
                } else {
                    let in_second: HashSet<String> = second
                        .iter()
                        .map(|item| canonical_key(Some(item)))
                        .collect();
                    for item in first {
                        let key = canonical_key(Some(item));
                        if in_second.contains(&key) && seen.insert(key) {
                            result.push(item.clone());
                        }
                    }
                }
                Some(Value::Array(result))
            }
            _ => None,
        },
        _ => {
            return Err(QueryError::semantic(format!(
                "'{}' is not a recognized built-in function name.",
                builtin.name()
            )))
        }
    };
    Ok(result)
}

/// ARRAY_CONTAINS with partial matching: an object matches when it has every member of the
/// wanted object with an equal value (objects nested inside compared the same way).
fn partial_match(item: &Value, wanted: &Value) -> bool {
    match (item, wanted) {
        (Value::Object(members), Value::Object(wanted_members)) => {
            wanted_members.iter().all(|(key, wanted_value)| {
                members
                    .get(key)
                    .is_some_and(|value| partial_match(value, wanted_value))
            })
        }
        _ => equals(item, wanted) == Some(true),
    }
}
