//! Type checks (IS_*), conversions from text (STRINGTO*, TOSTRING) and the conditional
//! functions IIF, CHOOSE and OBJECTTOARRAY.
//!
//! As everywhere in the language, a mistyped argument makes the call `undefined`; the
//! argument counts were checked by the planner against `builtins.rs`.

use serde_json::{Map, Value};

use super::args::{integer, string, text};
use crate::builtins::Builtin;
use crate::context::Val;
use crate::datetime;
use crate::error::QueryError;

/// Computes a built-in of this family; any other built-in is an internal inconsistency.
pub fn call(builtin: Builtin, args: &[Val<'_>]) -> Result<Option<Value>, QueryError> {
    let arg =
        |index: usize| -> Option<&Value> { args.get(index).and_then(|value| value.as_deref()) };
    let result = match builtin {
        // Type checks answer false, never undefined, for an undefined argument.
        Builtin::IsArray => Some(Value::Bool(matches!(arg(0), Some(Value::Array(_))))),
        Builtin::IsBool => Some(Value::Bool(matches!(arg(0), Some(Value::Bool(_))))),
        Builtin::IsDefined => Some(Value::Bool(arg(0).is_some())),
        Builtin::IsNull => Some(Value::Bool(matches!(arg(0), Some(Value::Null)))),
        Builtin::IsNumber => Some(Value::Bool(matches!(arg(0), Some(Value::Number(_))))),
        Builtin::IsObject => Some(Value::Bool(matches!(arg(0), Some(Value::Object(_))))),
        Builtin::IsString => Some(Value::Bool(matches!(arg(0), Some(Value::String(_))))),
        Builtin::IsPrimitive => Some(Value::Bool(matches!(
            arg(0),
            Some(Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_))
        ))),
        Builtin::IsInteger => Some(Value::Bool(integer(arg(0)).is_some())),
        // JSON cannot hold NaN or infinities, so every JSON number is finite.
        Builtin::IsFiniteNumber => Some(Value::Bool(matches!(arg(0), Some(Value::Number(_))))),
        Builtin::IsDateTime => Some(Value::Bool(
            string(arg(0)).and_then(datetime::parse).is_some(),
        )),
        Builtin::StringToArray => parse_json_text(arg(0)).filter(Value::is_array),
        Builtin::StringToObject => parse_json_text(arg(0)).filter(Value::is_object),
        Builtin::StringToBoolean => parse_json_text(arg(0)).filter(Value::is_boolean),
        Builtin::StringToNull => parse_json_text(arg(0)).filter(Value::is_null),
        Builtin::StringToNumber => parse_json_text(arg(0)).filter(Value::is_number),
        Builtin::ToString => match arg(0) {
            None => None,
            Some(Value::String(source)) => text(source.clone()),
            Some(other) => text(other.to_string()),
        },
        // IIF picks the second argument only for exactly `true`.
        Builtin::Iif => {
            if matches!(arg(0), Some(Value::Bool(true))) {
                arg(1).cloned()
            } else {
                arg(2).cloned()
            }
        }
        // CHOOSE is 1-based; an index outside the list is undefined.
        Builtin::Choose => match integer(arg(0)) {
            Some(index) if index >= 1 && (index as usize) < args.len() => {
                arg(index as usize).cloned()
            }
            _ => None,
        },
        Builtin::ObjectToArray => match arg(0) {
            Some(Value::Object(members)) => {
                let key_name = match args.get(1) {
                    None => Some("k"),
                    Some(value) => string(value.as_deref()),
                };
                let value_name = match args.get(2) {
                    None => Some("v"),
                    Some(value) => string(value.as_deref()),
                };
                match (key_name, value_name) {
                    (Some(key_name), Some(value_name)) => Some(Value::Array(
                        members
                            .iter()
                            .map(|(key, value)| {
                                let mut pair = Map::new();
                                pair.insert(key_name.to_string(), Value::String(key.clone()));
                                pair.insert(value_name.to_string(), value.clone());
                                Value::Object(pair)
                            })
                            .collect(),
                    )),
                    _ => None,
                }
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

/// The string as JSON text, surrounding whitespace allowed; not JSON is undefined.
fn parse_json_text(value: Option<&Value>) -> Option<Value> {
    serde_json::from_str::<Value>(string(value)?.trim()).ok()
}
