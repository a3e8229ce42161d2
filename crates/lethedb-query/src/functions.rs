//! The built-in scalar functions of the language, looked up by upper-cased name.
//!
//! As in the service, a function given arguments of the wrong type returns `undefined`
//! instead of failing; only an unknown name or a wrong argument count is an error, and that is
//! caught before execution by `check_call`. Aggregates (COUNT, SUM, AVG, MIN, MAX) are named
//! here but computed by `exec.rs`. Date and time arithmetic lives in `datetime.rs`; the current
//! time comes from the caller's `now_ms`, never from the system clock.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::context::Context;
use crate::datetime;
use crate::error::QueryError;
use crate::value::{as_number, canonical_key, equals, number_value};

/// The longest string REPLICATE may build, in characters, as in the service.
const REPLICATE_RESULT_CHARS_MAX: usize = 10_000;

/// The longest regular expression REGEXMATCH compiles, in bytes, and the compiled size the
/// `regex` crate may use, so a hostile pattern cannot take unbounded memory.
const REGEX_PATTERN_BYTES_MAX: usize = 4_096;
const REGEX_COMPILED_BYTES_MAX: usize = 1 << 20;

pub fn is_aggregate(upper: &str) -> bool {
    matches!(upper, "COUNT" | "SUM" | "AVG" | "MIN" | "MAX")
}

/// Functions of the service this implementation refuses rather than approximates.
const UNSUPPORTED: &[&str] = &[
    "RAND",
    "DOCUMENTID",
    "ST_DISTANCE",
    "ST_WITHIN",
    "ST_INTERSECTS",
    "ST_ISVALID",
    "ST_ISVALIDDETAILED",
    "ST_AREA",
    "FULLTEXTCONTAINS",
    "FULLTEXTCONTAINSALL",
    "FULLTEXTCONTAINSANY",
    "FULLTEXTSCORE",
    "VECTORDISTANCE",
    "RRF",
    "DATETIMEFORMAT",
    "ARRAY_MEDIAN",
];

/// The accepted argument counts of each supported function: (fewest, most).
fn arity(upper: &str) -> Option<(usize, usize)> {
    Some(match upper {
        "IS_ARRAY" | "IS_BOOL" | "IS_DEFINED" | "IS_NULL" | "IS_NUMBER" | "IS_OBJECT"
        | "IS_PRIMITIVE" | "IS_STRING" | "IS_INTEGER" | "IS_FINITE_NUMBER" | "IS_DATETIME" => {
            (1, 1)
        }
        "CONCAT" => (2, usize::MAX),
        "CONTAINS" | "STARTSWITH" | "ENDSWITH" | "STRINGEQUALS" => (2, 3),
        "REGEXMATCH" => (2, 3),
        "SUBSTRING" => (3, 3),
        "INDEX_OF" => (2, 3),
        "LASTINDEXOF" => (2, 2),
        "REPLACE" => (3, 3),
        "REPLICATE" | "LEFT" | "RIGHT" => (2, 2),
        "REVERSE" | "LENGTH" | "LOWER" | "UPPER" | "LTRIM" | "RTRIM" | "TRIM" | "STRINGTOARRAY"
        | "STRINGTOBOOLEAN" | "STRINGTONULL" | "STRINGTONUMBER" | "STRINGTOOBJECT" | "TOSTRING" => {
            (1, 1)
        }
        "ABS" | "CEILING" | "FLOOR" | "TRUNC" | "SIGN" | "SQRT" | "SQUARE" | "EXP" | "LOG10"
        | "SIN" | "COS" | "TAN" | "COT" | "ASIN" | "ACOS" | "ATAN" | "DEGREES" | "RADIANS"
        | "INTBITNOT" => (1, 1),
        "ROUND" | "LOG" | "NUMBERBIN" => (1, 2),
        "POWER" | "ATN2" | "INTADD" | "INTSUB" | "INTMUL" | "INTDIV" | "INTMOD" | "INTBITAND"
        | "INTBITOR" | "INTBITXOR" | "INTBITLEFTSHIFT" | "INTBITRIGHTSHIFT" => (2, 2),
        "PI" => (0, 0),
        "ARRAY_CONTAINS" => (2, 3),
        "ARRAY_CONTAINS_ANY" | "ARRAY_CONTAINS_ALL" => (2, usize::MAX),
        "ARRAY_LENGTH" | "ARRAY_SUM" | "ARRAY_AVG" | "ARRAY_MIN" | "ARRAY_MAX" => (1, 1),
        "ARRAY_SLICE" => (2, 3),
        "ARRAY_CONCAT" => (2, usize::MAX),
        "SETINTERSECT" | "SETUNION" => (2, 2),
        "GETCURRENTDATETIME"
        | "GETCURRENTTIMESTAMP"
        | "GETCURRENTTICKS"
        | "GETCURRENTDATETIMESTATIC"
        | "GETCURRENTTIMESTAMPSTATIC"
        | "GETCURRENTTICKSSTATIC" => (0, 0),
        "DATETIMEADD" | "DATETIMEDIFF" => (3, 3),
        "DATETIMEPART" => (2, 2),
        "DATETIMEBIN" => (2, 4),
        "DATETIMEFROMPARTS" => (3, 7),
        "DATETIMETOTICKS" | "DATETIMETOTIMESTAMP" | "TICKSTODATETIME" | "TIMESTAMPTODATETIME" => {
            (1, 1)
        }
        "IIF" => (3, 3),
        "CHOOSE" => (2, usize::MAX),
        "OBJECTTOARRAY" => (1, 3),
        _ => return None,
    })
}

/// Rejects an unknown or refused function, or a wrong number of arguments, before execution.
pub fn check_call(name: &str, argument_count: usize) -> Result<(), QueryError> {
    let upper = name.to_ascii_uppercase();
    if UNSUPPORTED.contains(&upper.as_str()) || upper.starts_with("ST_") {
        return Err(QueryError::unsupported(format!(
            "the built-in function '{name}' is not supported"
        )));
    }
    let Some((fewest, most)) = arity(&upper) else {
        return Err(QueryError::semantic(format!(
            "'{name}' is not a recognized built-in function name."
        )));
    };
    if argument_count < fewest || argument_count > most {
        let expected = if fewest == most {
            fewest.to_string()
        } else if most == usize::MAX {
            format!("at least {fewest}")
        } else {
            format!("{fewest} to {most}")
        };
        return Err(QueryError::semantic(format!(
            "The {upper} function requires {expected} argument(s), got {argument_count}."
        )));
    }
    Ok(())
}

fn string(value: &Option<Value>) -> Option<&str> {
    match value {
        Some(Value::String(text)) => Some(text),
        _ => None,
    }
}

fn number(value: &Option<Value>) -> Option<f64> {
    value.as_ref().and_then(as_number)
}

/// A whole number that fits an `i64`, as the Int* functions and string positions require.
fn integer(value: &Option<Value>) -> Option<i64> {
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

fn boolean_argument(value: &Option<Value>) -> Option<bool> {
    match value {
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    }
}

fn array(value: &Option<Value>) -> Option<&Vec<Value>> {
    match value {
        Some(Value::Array(items)) => Some(items),
        _ => None,
    }
}

fn text(value: String) -> Option<Value> {
    Some(Value::String(value))
}

fn math(value: &Option<Value>, operation: impl Fn(f64) -> f64) -> Option<Value> {
    number(value).and_then(|n| number_value(operation(n)))
}

fn int_binary(
    args: &[Option<Value>],
    operation: impl Fn(i64, i64) -> Option<i64>,
) -> Option<Value> {
    let (a, b) = (integer(args.first()?)?, integer(args.get(1)?)?);
    operation(a, b).map(Value::from)
}

/// An optional trailing boolean argument (ignore-case flags); a non-boolean makes the whole
/// call undefined, signalled by `None`.
fn optional_flag(args: &[Option<Value>], index: usize) -> Option<bool> {
    match args.get(index) {
        None => Some(false),
        Some(value) => boolean_argument(value),
    }
}

fn char_slice(text: &str, start: usize, length: usize) -> String {
    text.chars().skip(start).take(length).collect()
}

pub fn call(
    upper: &str,
    args: Vec<Option<Value>>,
    context: &Context,
) -> Result<Option<Value>, QueryError> {
    let arg = |index: usize| -> &Option<Value> { args.get(index).unwrap_or(&None) };
    let result = match upper {
        // Type checks answer false, never undefined, for an undefined argument.
        "IS_ARRAY" => Some(Value::Bool(matches!(arg(0), Some(Value::Array(_))))),
        "IS_BOOL" => Some(Value::Bool(matches!(arg(0), Some(Value::Bool(_))))),
        "IS_DEFINED" => Some(Value::Bool(arg(0).is_some())),
        "IS_NULL" => Some(Value::Bool(matches!(arg(0), Some(Value::Null)))),
        "IS_NUMBER" => Some(Value::Bool(matches!(arg(0), Some(Value::Number(_))))),
        "IS_OBJECT" => Some(Value::Bool(matches!(arg(0), Some(Value::Object(_))))),
        "IS_STRING" => Some(Value::Bool(matches!(arg(0), Some(Value::String(_))))),
        "IS_PRIMITIVE" => Some(Value::Bool(matches!(
            arg(0),
            Some(Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_))
        ))),
        "IS_INTEGER" => Some(Value::Bool(integer(arg(0)).is_some())),
        // JSON cannot hold NaN or infinities, so every JSON number is finite.
        "IS_FINITE_NUMBER" => Some(Value::Bool(matches!(arg(0), Some(Value::Number(_))))),
        "IS_DATETIME" => Some(Value::Bool(
            string(arg(0)).and_then(datetime::parse).is_some(),
        )),

        "CONCAT" => {
            let mut joined = String::new();
            for value in &args {
                match string(value) {
                    Some(part) => joined.push_str(part),
                    None => return Ok(None),
                }
            }
            text(joined)
        }
        "CONTAINS" | "STARTSWITH" | "ENDSWITH" | "STRINGEQUALS" => {
            match (string(arg(0)), string(arg(1)), optional_flag(&args, 2)) {
                (Some(haystack), Some(needle), Some(ignore_case)) => {
                    let (haystack, needle) = if ignore_case {
                        (haystack.to_lowercase(), needle.to_lowercase())
                    } else {
                        (haystack.to_string(), needle.to_string())
                    };
                    Some(Value::Bool(match upper {
                        "CONTAINS" => haystack.contains(&needle),
                        "STARTSWITH" => haystack.starts_with(&needle),
                        "ENDSWITH" => haystack.ends_with(&needle),
                        _ => haystack == needle,
                    }))
                }
                _ => None,
            }
        }
        "REGEXMATCH" => regex_match(arg(0), arg(1), args.get(2))?,
        "SUBSTRING" => match (string(arg(0)), integer(arg(1)), integer(arg(2))) {
            (Some(source), Some(start), Some(length)) => text(char_slice(
                source,
                start.max(0) as usize,
                length.max(0) as usize,
            )),
            _ => None,
        },
        "INDEX_OF" => match (string(arg(0)), string(arg(1))) {
            (Some(haystack), Some(needle)) => {
                let start = match args.get(2) {
                    None => 0,
                    Some(value) => match integer(value) {
                        Some(start) => start,
                        None => return Ok(None),
                    },
                };
                let characters: Vec<char> = haystack.chars().collect();
                let needle: Vec<char> = needle.chars().collect();
                let start = start.max(0) as usize;
                let found =
                    (start..=characters.len().saturating_sub(needle.len())).find(|&position| {
                        position + needle.len() <= characters.len()
                            && characters[position..position + needle.len()] == needle[..]
                    });
                Some(Value::from(found.map_or(-1, |position| position as i64)))
            }
            _ => None,
        },
        "LASTINDEXOF" => match (string(arg(0)), string(arg(1))) {
            (Some(haystack), Some(needle)) => {
                let characters: Vec<char> = haystack.chars().collect();
                let needle: Vec<char> = needle.chars().collect();
                let found = (0..=characters.len().saturating_sub(needle.len()))
                    .rev()
                    .find(|&position| {
                        position + needle.len() <= characters.len()
                            && characters[position..position + needle.len()] == needle[..]
                    });
                Some(Value::from(found.map_or(-1, |position| position as i64)))
            }
            _ => None,
        },
        "REPLACE" => match (string(arg(0)), string(arg(1)), string(arg(2))) {
            (Some(source), Some(find), Some(replacement)) if !find.is_empty() => {
                text(source.replace(find, replacement))
            }
            (Some(source), Some(_), Some(_)) => text(source.to_string()),
            _ => None,
        },
        "REPLICATE" => match (string(arg(0)), integer(arg(1))) {
            (Some(source), Some(count)) if count >= 0 => {
                let count = count as usize;
                let total = source.chars().count().saturating_mul(count);
                if total > REPLICATE_RESULT_CHARS_MAX {
                    None
                } else {
                    text(source.repeat(count))
                }
            }
            _ => None,
        },
        "REVERSE" => string(arg(0)).and_then(|source| text(source.chars().rev().collect())),
        "LEFT" => match (string(arg(0)), integer(arg(1))) {
            (Some(source), Some(count)) if count >= 0 => {
                text(char_slice(source, 0, count as usize))
            }
            _ => None,
        },
        "RIGHT" => match (string(arg(0)), integer(arg(1))) {
            (Some(source), Some(count)) if count >= 0 => {
                let length = source.chars().count();
                let count = (count as usize).min(length);
                text(char_slice(source, length - count, count))
            }
            _ => None,
        },
        "LENGTH" => string(arg(0)).map(|source| Value::from(source.chars().count())),
        "LOWER" => string(arg(0)).and_then(|source| text(source.to_lowercase())),
        "UPPER" => string(arg(0)).and_then(|source| text(source.to_uppercase())),
        "LTRIM" => string(arg(0)).and_then(|source| text(source.trim_start().to_string())),
        "RTRIM" => string(arg(0)).and_then(|source| text(source.trim_end().to_string())),
        "TRIM" => string(arg(0)).and_then(|source| text(source.trim().to_string())),
        "STRINGTOARRAY" => parse_json_text(arg(0)).filter(Value::is_array),
        "STRINGTOOBJECT" => parse_json_text(arg(0)).filter(Value::is_object),
        "STRINGTOBOOLEAN" => parse_json_text(arg(0)).filter(Value::is_boolean),
        "STRINGTONULL" => parse_json_text(arg(0)).filter(Value::is_null),
        "STRINGTONUMBER" => parse_json_text(arg(0)).filter(Value::is_number),
        "TOSTRING" => match arg(0) {
            None => None,
            Some(Value::String(source)) => text(source.clone()),
            Some(other) => text(other.to_string()),
        },

        "ABS" => math(arg(0), f64::abs),
        "CEILING" => math(arg(0), f64::ceil),
        "FLOOR" => math(arg(0), f64::floor),
        "TRUNC" => math(arg(0), f64::trunc),
        "SIGN" => math(arg(0), |n| {
            if n > 0.0 {
                1.0
            } else if n < 0.0 {
                -1.0
            } else {
                0.0
            }
        }),
        "SQRT" => math(arg(0), f64::sqrt),
        "SQUARE" => math(arg(0), |n| n * n),
        "EXP" => math(arg(0), f64::exp),
        "LOG10" => math(arg(0), f64::log10),
        "SIN" => math(arg(0), f64::sin),
        "COS" => math(arg(0), f64::cos),
        "TAN" => math(arg(0), f64::tan),
        "COT" => math(arg(0), |n| 1.0 / n.tan()),
        "ASIN" => math(arg(0), f64::asin),
        "ACOS" => math(arg(0), f64::acos),
        "ATAN" => math(arg(0), f64::atan),
        "DEGREES" => math(arg(0), f64::to_degrees),
        "RADIANS" => math(arg(0), f64::to_radians),
        "PI" => number_value(std::f64::consts::PI),
        // ROUND rounds half away from zero; with a precision it rounds to that many decimals.
        "ROUND" => match (number(arg(0)), args.get(1)) {
            (Some(n), None) => number_value(n.round()),
            (Some(n), Some(precision)) => match integer(precision) {
                Some(digits) => {
                    let scale = 10f64.powi(digits.clamp(-308, 308) as i32);
                    number_value((n * scale).round() / scale)
                }
                None => None,
            },
            _ => None,
        },
        "LOG" => match (number(arg(0)), args.get(1)) {
            (Some(n), None) => number_value(n.ln()),
            (Some(n), Some(base)) => number(base).and_then(|base| number_value(n.ln() / base.ln())),
            _ => None,
        },
        "POWER" => match (number(arg(0)), number(arg(1))) {
            (Some(base), Some(exponent)) => number_value(base.powf(exponent)),
            _ => None,
        },
        "ATN2" => match (number(arg(0)), number(arg(1))) {
            // ATN2(x, y) is the angle of the point (x, y): atan2(y, x).
            (Some(x), Some(y)) => number_value(y.atan2(x)),
            _ => None,
        },
        "NUMBERBIN" => {
            let size = match args.get(1) {
                None => Some(1.0),
                Some(size) => number(size),
            };
            match (number(arg(0)), size) {
                (Some(n), Some(size)) if size > 0.0 => number_value((n / size).floor() * size),
                _ => None,
            }
        }
        "INTADD" => int_binary(&args, |a, b| Some(a.wrapping_add(b))),
        "INTSUB" => int_binary(&args, |a, b| Some(a.wrapping_sub(b))),
        "INTMUL" => int_binary(&args, |a, b| Some(a.wrapping_mul(b))),
        "INTDIV" => int_binary(&args, |a, b| a.checked_div(b)),
        "INTMOD" => int_binary(&args, |a, b| a.checked_rem(b)),
        "INTBITAND" => int_binary(&args, |a, b| Some(a & b)),
        "INTBITOR" => int_binary(&args, |a, b| Some(a | b)),
        "INTBITXOR" => int_binary(&args, |a, b| Some(a ^ b)),
        "INTBITLEFTSHIFT" => int_binary(&args, |a, b| {
            (0..64).contains(&b).then(|| a.wrapping_shl(b as u32))
        }),
        "INTBITRIGHTSHIFT" => int_binary(&args, |a, b| {
            (0..64).contains(&b).then(|| a.wrapping_shr(b as u32))
        }),
        "INTBITNOT" => integer(arg(0)).map(|a| Value::from(!a)),

        "ARRAY_CONTAINS" => match (array(arg(0)), arg(1), optional_flag(&args, 2)) {
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
        "ARRAY_CONTAINS_ANY" | "ARRAY_CONTAINS_ALL" => match array(arg(0)) {
            Some(items) => {
                let contains = |wanted: &Option<Value>| match wanted {
                    Some(wanted) => items.iter().any(|item| equals(item, wanted) == Some(true)),
                    None => false,
                };
                let rest = &args[1..];
                Some(Value::Bool(if upper == "ARRAY_CONTAINS_ANY" {
                    rest.iter().any(contains)
                } else {
                    rest.iter().all(contains)
                }))
            }
            None => None,
        },
        "ARRAY_LENGTH" => array(arg(0)).map(|items| Value::from(items.len())),
        "ARRAY_SUM" | "ARRAY_AVG" => match array(arg(0)) {
            Some(items) => {
                let numbers: Option<Vec<f64>> = items.iter().map(as_number).collect();
                match numbers {
                    Some(numbers) if upper == "ARRAY_SUM" => number_value(numbers.iter().sum()),
                    Some(numbers) if !numbers.is_empty() => {
                        number_value(numbers.iter().sum::<f64>() / numbers.len() as f64)
                    }
                    _ => None,
                }
            }
            None => None,
        },
        "ARRAY_MIN" | "ARRAY_MAX" => match array(arg(0)) {
            Some(items) => {
                let maximum = upper == "ARRAY_MAX";
                let mut best: Option<&Value> = None;
                for item in items {
                    if matches!(item, Value::Array(_) | Value::Object(_)) {
                        return Ok(None);
                    }
                    let ordering =
                        best.map(|current| crate::value::total_order(Some(item), Some(current)));
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
        "ARRAY_SLICE" => match (array(arg(0)), integer(arg(1))) {
            (Some(items), Some(start)) => {
                let length = items.len() as i64;
                let start = if start < 0 {
                    (length + start).max(0)
                } else {
                    start.min(length)
                };
                let count = match args.get(2) {
                    None => length - start,
                    Some(value) => match integer(value) {
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
        "ARRAY_CONCAT" => {
            let mut joined = Vec::new();
            for value in &args {
                match array(value) {
                    Some(items) => joined.extend(items.iter().cloned()),
                    None => return Ok(None),
                }
            }
            Some(Value::Array(joined))
        }
        "SETINTERSECT" | "SETUNION" => match (array(arg(0)), array(arg(1))) {
            (Some(first), Some(second)) => {
                let mut seen = HashSet::new();
                let mut result = Vec::new();
                if upper == "SETUNION" {
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

        "GETCURRENTDATETIME" | "GETCURRENTDATETIMESTATIC" => {
            datetime::format(datetime::ticks_from_unix_ms(context.now_ms)).map(Value::String)
        }
        "GETCURRENTTIMESTAMP" | "GETCURRENTTIMESTAMPSTATIC" => Some(Value::from(context.now_ms)),
        "GETCURRENTTICKS" | "GETCURRENTTICKSSTATIC" => {
            Some(Value::from(context.now_ms.saturating_mul(10_000)))
        }
        "DATETIMEADD" => match (string(arg(0)), integer(arg(1)), string(arg(2))) {
            (Some(part), Some(amount), Some(moment)) => datetime::add(part, amount, moment)
                .and_then(datetime::format)
                .map(Value::String),
            _ => None,
        },
        "DATETIMEDIFF" => match (string(arg(0)), string(arg(1)), string(arg(2))) {
            (Some(part), Some(start), Some(end)) => {
                datetime::diff(part, start, end).map(Value::from)
            }
            _ => None,
        },
        "DATETIMEPART" => match (string(arg(0)), string(arg(1))) {
            (Some(part), Some(moment)) => datetime::part(part, moment).map(Value::from),
            _ => None,
        },
        "DATETIMEBIN" => {
            let size = match args.get(2) {
                None => Some(1),
                Some(value) => integer(value),
            };
            let origin = match args.get(3) {
                None => Some(datetime::UNIX_EPOCH_TEXT),
                Some(value) => string(value),
            };
            match (string(arg(0)), string(arg(1)), size, origin) {
                (Some(moment), Some(part), Some(size), Some(origin)) => {
                    datetime::bin(moment, part, size, origin)
                        .and_then(datetime::format)
                        .map(Value::String)
                }
                _ => None,
            }
        }
        "DATETIMEFROMPARTS" => {
            let mut parts = [0i64; 7];
            for (index, slot) in parts.iter_mut().enumerate() {
                match args.get(index) {
                    None => {}
                    Some(value) => match integer(value) {
                        Some(part) => *slot = part,
                        None => return Ok(None),
                    },
                }
            }
            datetime::from_parts(parts)
                .and_then(datetime::format)
                .map(Value::String)
        }
        "DATETIMETOTICKS" => string(arg(0))
            .and_then(datetime::parse)
            .map(|ticks| Value::from(datetime::unix_ticks(ticks))),
        "DATETIMETOTIMESTAMP" => string(arg(0))
            .and_then(datetime::parse)
            .map(|ticks| Value::from(datetime::unix_ticks(ticks).div_euclid(10_000))),
        "TICKSTODATETIME" => integer(arg(0))
            .and_then(|ticks| ticks.checked_add(datetime::UNIX_EPOCH_TICKS))
            .and_then(datetime::format)
            .map(Value::String),
        "TIMESTAMPTODATETIME" => integer(arg(0))
            .and_then(|ms| ms.checked_mul(10_000))
            .and_then(|ticks| ticks.checked_add(datetime::UNIX_EPOCH_TICKS))
            .and_then(datetime::format)
            .map(Value::String),

        // IIF picks the second argument only for exactly `true`.
        "IIF" => {
            if matches!(arg(0), Some(Value::Bool(true))) {
                arg(1).clone()
            } else {
                arg(2).clone()
            }
        }
        // CHOOSE is 1-based; an index outside the list is undefined.
        "CHOOSE" => match integer(arg(0)) {
            Some(index) if index >= 1 && (index as usize) < args.len() => {
                arg(index as usize).clone()
            }
            _ => None,
        },
        "OBJECTTOARRAY" => match arg(0) {
            Some(Value::Object(members)) => {
                let key_name = match args.get(1) {
                    None => Some("k"),
                    Some(value) => string(value),
                };
                let value_name = match args.get(2) {
                    None => Some("v"),
                    Some(value) => string(value),
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
                "'{upper}' is not a recognized built-in function name."
            )));
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

/// The string as JSON text, surrounding whitespace allowed; not JSON is undefined.
fn parse_json_text(value: &Option<Value>) -> Option<Value> {
    serde_json::from_str::<Value>(string(value)?.trim()).ok()
}

fn regex_match(
    source: &Option<Value>,
    pattern: &Option<Value>,
    modifiers: Option<&Option<Value>>,
) -> Result<Option<Value>, QueryError> {
    let (Some(source), Some(pattern)) = (string(source), string(pattern)) else {
        return Ok(None);
    };
    let modifiers = match modifiers {
        None => "",
        Some(value) => match string(value) {
            Some(modifiers) => modifiers,
            None => return Ok(None),
        },
    };
    if pattern.len() > REGEX_PATTERN_BYTES_MAX {
        return Err(QueryError::LimitExceeded(format!(
            "a REGEXMATCH pattern is longer than {REGEX_PATTERN_BYTES_MAX} bytes"
        )));
    }
    let mut builder = regex::RegexBuilder::new(pattern);
    builder.size_limit(REGEX_COMPILED_BYTES_MAX);
    for modifier in modifiers.chars() {
        match modifier {
            'i' => builder.case_insensitive(true),
            'm' => builder.multi_line(true),
            's' => builder.dot_matches_new_line(true),
            'x' => builder.ignore_whitespace(true),
            _ => return Ok(None),
        };
    }
    // An invalid pattern makes the call undefined rather than failing the query.
    Ok(builder
        .build()
        .ok()
        .map(|regex| Value::Bool(regex.is_match(source))))
}
