//! Date and time functions. The arithmetic lives in `datetime.rs`; the current time is
//! the query's `now_ms`, never the system clock.
//!
//! As everywhere in the language, a mistyped argument makes the call `undefined`; the
//! argument counts were checked by the planner against `builtins.rs`.

use serde_json::Value;

use super::args::{integer, string};
use crate::builtins::Builtin;
use crate::context::{Context, Val};
use crate::datetime;
use crate::error::QueryError;

/// Computes a built-in of this family; any other built-in is an internal inconsistency.
pub fn call(
    builtin: Builtin,
    args: &[Val<'_>],
    context: &Context,
) -> Result<Option<Value>, QueryError> {
    let arg =
        |index: usize| -> Option<&Value> { args.get(index).and_then(|value| value.as_deref()) };
    let result = match builtin {
        Builtin::GetCurrentDateTime | Builtin::GetCurrentDateTimeStatic => {
            datetime::format(datetime::ticks_from_unix_ms(context.now_ms)).map(Value::String)
        }
        Builtin::GetCurrentTimestamp | Builtin::GetCurrentTimestampStatic => {
            Some(Value::from(context.now_ms))
        }
        Builtin::GetCurrentTicks | Builtin::GetCurrentTicksStatic => {
            Some(Value::from(context.now_ms.saturating_mul(10_000)))
        }
        Builtin::DateTimeAdd => match (string(arg(0)), integer(arg(1)), string(arg(2))) {
            (Some(part), Some(amount), Some(moment)) => datetime::add(part, amount, moment)
                .and_then(datetime::format)
                .map(Value::String),
            _ => None,
        },
        Builtin::DateTimeDiff => match (string(arg(0)), string(arg(1)), string(arg(2))) {
            (Some(part), Some(start), Some(end)) => {
                datetime::diff(part, start, end).map(Value::from)
            }
            _ => None,
        },
        Builtin::DateTimePart => match (string(arg(0)), string(arg(1))) {
            (Some(part), Some(moment)) => datetime::part(part, moment).map(Value::from),
            _ => None,
        },
        Builtin::DateTimeBin => {
            let size = match args.get(2) {
                None => Some(1),
                Some(value) => integer(value.as_deref()),
            };
            let origin = match args.get(3) {
                None => Some(datetime::UNIX_EPOCH_TEXT),
                Some(value) => string(value.as_deref()),
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
        Builtin::DateTimeFromParts => {
            let mut parts = [0i64; 7];
            for (index, slot) in parts.iter_mut().enumerate() {
                match args.get(index) {
                    None => {}
                    Some(value) => match integer(value.as_deref()) {
                        Some(part) => *slot = part,
                        None => return Ok(None),
                    },
                }
            }
            datetime::from_parts(parts)
                .and_then(datetime::format)
                .map(Value::String)
        }
        Builtin::DateTimeToTicks => string(arg(0))
            .and_then(datetime::parse)
            .map(|ticks| Value::from(datetime::unix_ticks(ticks))),
        Builtin::DateTimeToTimestamp => string(arg(0))
            .and_then(datetime::parse)
            .map(|ticks| Value::from(datetime::unix_ticks(ticks).div_euclid(10_000))),
        Builtin::TicksToDateTime => integer(arg(0))
            .and_then(|ticks| ticks.checked_add(datetime::UNIX_EPOCH_TICKS))
            .and_then(datetime::format)
            .map(Value::String),
        Builtin::TimestampToDateTime => integer(arg(0))
            .and_then(|ms| ms.checked_mul(10_000))
            .and_then(|ticks| ticks.checked_add(datetime::UNIX_EPOCH_TICKS))
            .and_then(datetime::format)
            .map(Value::String),
        _ => {
            return Err(QueryError::semantic(format!(
                "'{}' is not a recognized built-in function name.",
                builtin.name()
            )))
        }
    };
    Ok(result)
}
