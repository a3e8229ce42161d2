//! String functions, REGEXMATCH included (its pattern is bounded in length and compiled
//! size, so a hostile pattern cannot take unbounded memory).
//!
//! As everywhere in the language, a mistyped argument makes the call `undefined`; the
//! argument counts were checked by the planner against `builtins.rs`.

use serde_json::Value;

use super::args::{char_slice, integer, optional_flag, string, text};
use regex::{Regex, RegexBuilder};

use crate::builtins::Builtin;
use crate::context::{Context, Val};
use crate::error::QueryError;

/// The longest string REPLICATE may build, in characters, as in the service.
const REPLICATE_RESULT_CHARS_MAX: usize = 10_000;

/// The longest regular expression REGEXMATCH compiles, in bytes, and the compiled size the
/// `regex` crate may use, so a hostile pattern cannot take unbounded memory.
const REGEX_PATTERN_BYTES_MAX: usize = 4_096;
const REGEX_COMPILED_BYTES_MAX: usize = 1 << 20;

/// Computes a built-in of this family; any other built-in is an internal inconsistency.
pub fn call(
    builtin: Builtin,
    args: &[Val<'_>],
    context: &Context,
) -> Result<Option<Value>, QueryError> {
    let arg =
        |index: usize| -> Option<&Value> { args.get(index).and_then(|value| value.as_deref()) };
    let result = match builtin {
        Builtin::Concat => {
            let mut joined = String::new();
            for value in args {
                match string(value.as_deref()) {
                    Some(part) => joined.push_str(part),
                    None => return Ok(None),
                }
            }
            text(joined)
        }
        Builtin::Contains | Builtin::StartsWith | Builtin::EndsWith | Builtin::StringEquals => {
            match (string(arg(0)), string(arg(1)), optional_flag(args, 2)) {
                (Some(haystack), Some(needle), Some(ignore_case)) => {
                    let (haystack, needle) = if ignore_case {
                        (haystack.to_lowercase(), needle.to_lowercase())
                    } else {
                        (haystack.to_string(), needle.to_string())
                    };
                    Some(Value::Bool(match builtin {
                        Builtin::Contains => haystack.contains(&needle),
                        Builtin::StartsWith => haystack.starts_with(&needle),
                        Builtin::EndsWith => haystack.ends_with(&needle),
                        _ => haystack == needle,
                    }))
                }
                _ => None,
            }
        }
        Builtin::RegexMatch => regex_match(arg(0), arg(1), args.get(2), context)?,
        Builtin::Substring => match (string(arg(0)), integer(arg(1)), integer(arg(2))) {
            (Some(source), Some(start), Some(length)) => text(char_slice(
                source,
                start.max(0) as usize,
                length.max(0) as usize,
            )),
            _ => None,
        },
        Builtin::IndexOf => match (string(arg(0)), string(arg(1))) {
            (Some(haystack), Some(needle)) => {
                let start = match args.get(2) {
                    None => 0,
                    Some(value) => match integer(value.as_deref()) {
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
        Builtin::LastIndexOf => match (string(arg(0)), string(arg(1))) {
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
        Builtin::Replace => match (string(arg(0)), string(arg(1)), string(arg(2))) {
            (Some(source), Some(find), Some(replacement)) if !find.is_empty() => {
                text(source.replace(find, replacement))
            }
            (Some(source), Some(_), Some(_)) => text(source.to_string()),
            _ => None,
        },
        Builtin::Replicate => match (string(arg(0)), integer(arg(1))) {
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
        Builtin::Reverse => string(arg(0)).and_then(|source| text(source.chars().rev().collect())),
        Builtin::Left => match (string(arg(0)), integer(arg(1))) {
            (Some(source), Some(count)) if count >= 0 => {
                text(char_slice(source, 0, count as usize))
            }
            _ => None,
        },
        Builtin::Right => match (string(arg(0)), integer(arg(1))) {
            (Some(source), Some(count)) if count >= 0 => {
                let length = source.chars().count();
                let count = (count as usize).min(length);
                text(char_slice(source, length - count, count))
            }
            _ => None,
        },
        Builtin::Length => string(arg(0)).map(|source| Value::from(source.chars().count())),
        Builtin::Lower => string(arg(0)).and_then(|source| text(source.to_lowercase())),
        Builtin::Upper => string(arg(0)).and_then(|source| text(source.to_uppercase())),
        Builtin::LeftTrim => {
            string(arg(0)).and_then(|source| text(source.trim_start().to_string()))
        }
        Builtin::RightTrim => string(arg(0)).and_then(|source| text(source.trim_end().to_string())),
        Builtin::Trim => string(arg(0)).and_then(|source| text(source.trim().to_string())),
        _ => {
            return Err(QueryError::semantic(format!(
                "'{}' is not a recognized built-in function name.",
                builtin.name()
            )))
        }
    };
    Ok(result)
}

fn regex_match(
    source: Option<&Value>,
    pattern: Option<&Value>,
    modifiers: Option<&Val<'_>>,
    context: &Context,
) -> Result<Option<Value>, QueryError> {
    let (Some(source), Some(pattern)) = (string(source), string(pattern)) else {
        return Ok(None);
    };
    let modifiers = match modifiers {
        None => "",
        Some(value) => match string(value.as_deref()) {
            Some(modifiers) => modifiers,
            None => return Ok(None),
        },
    };
    let compiled;
    let regex = match context.regexes.get(pattern, modifiers) {
        Some(regex) => regex,
        None => match compile_regex(pattern, modifiers)? {
            Some(regex) => {
                compiled = regex;
                &compiled
            }
            None => return Ok(None),
        },
    };
    Ok(Some(Value::Bool(regex.is_match(source))))
}

/// Compiles a REGEXMATCH pattern with its modifiers, within the size limits. `None` (an
/// unknown modifier or an invalid pattern) makes the call undefined rather than failing the
/// query; only a pattern over the length limit is an error.
pub fn compile_regex(pattern: &str, modifiers: &str) -> Result<Option<Regex>, QueryError> {
    if pattern.len() > REGEX_PATTERN_BYTES_MAX {
        return Err(QueryError::LimitExceeded(format!(
            "a REGEXMATCH pattern is longer than {REGEX_PATTERN_BYTES_MAX} bytes"
        )));
    }
    let mut builder = RegexBuilder::new(pattern);
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
    Ok(builder.build().ok())
}
