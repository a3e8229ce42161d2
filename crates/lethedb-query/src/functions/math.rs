//! Mathematical functions, and the Int* functions on whole numbers that fit an `i64`.
//!
//! As everywhere in the language, a mistyped argument makes the call `undefined`; the
//! argument counts were checked by the planner against `builtins.rs`.

use serde_json::Value;

use super::args::{int_binary, integer, math, number};
use crate::builtins::Builtin;
use crate::context::Val;
use crate::error::QueryError;
use crate::value::number_value;

/// Computes a built-in of this family; any other built-in is an internal inconsistency.
pub fn call(builtin: Builtin, args: &[Val<'_>]) -> Result<Option<Value>, QueryError> {
    let arg =
        |index: usize| -> Option<&Value> { args.get(index).and_then(|value| value.as_deref()) };
    let result = match builtin {
        Builtin::Abs => math(arg(0), f64::abs),
        Builtin::Ceiling => math(arg(0), f64::ceil),
        Builtin::Floor => math(arg(0), f64::floor),
        Builtin::Truncate => math(arg(0), f64::trunc),
        Builtin::Sign => math(arg(0), |n| {
            if n > 0.0 {
                1.0
            } else if n < 0.0 {
                -1.0
            } else {
                0.0
            }
        }),
        Builtin::SquareRoot => math(arg(0), f64::sqrt),
        Builtin::Square => math(arg(0), |n| n * n),
        Builtin::Exponential => math(arg(0), f64::exp),
        Builtin::Log10 => math(arg(0), f64::log10),
        Builtin::Sine => math(arg(0), f64::sin),
        Builtin::Cosine => math(arg(0), f64::cos),
        Builtin::Tangent => math(arg(0), f64::tan),
        Builtin::Cotangent => math(arg(0), |n| 1.0 / n.tan()),
        Builtin::ArcSine => math(arg(0), f64::asin),
        Builtin::ArcCosine => math(arg(0), f64::acos),
        Builtin::ArcTangent => math(arg(0), f64::atan),
        Builtin::Degrees => math(arg(0), f64::to_degrees),
        Builtin::Radians => math(arg(0), f64::to_radians),
        Builtin::Pi => number_value(std::f64::consts::PI),
        // ROUND rounds half away from zero; with a precision it rounds to that many decimals.
        Builtin::Round => match (number(arg(0)), args.get(1)) {
            (Some(n), None) => number_value(n.round()),
            (Some(n), Some(precision)) => match integer(precision.as_deref()) {
                Some(digits) => {
                    let scale = 10f64.powi(digits.clamp(-308, 308) as i32);
                    number_value((n * scale).round() / scale)
                }
                None => None,
            },
            _ => None,
        },
        Builtin::Log => match (number(arg(0)), args.get(1)) {
            (Some(n), None) => number_value(n.ln()),
            (Some(n), Some(base)) => {
                number(base.as_deref()).and_then(|base| number_value(n.ln() / base.ln()))
            }
            _ => None,
        },
        Builtin::Power => match (number(arg(0)), number(arg(1))) {
            (Some(base), Some(exponent)) => number_value(base.powf(exponent)),
            _ => None,
        },
        Builtin::ArcTangent2 => match (number(arg(0)), number(arg(1))) {
            // ATN2(x, y) is the angle of the point (x, y): atan2(y, x).
            (Some(x), Some(y)) => number_value(y.atan2(x)),
            _ => None,
        },
        Builtin::NumberBin => {
            let size = match args.get(1) {
                None => Some(1.0),
                Some(size) => number(size.as_deref()),
            };
            match (number(arg(0)), size) {
                (Some(n), Some(size)) if size > 0.0 => number_value((n / size).floor() * size),
                _ => None,
            }
        }
        Builtin::IntAdd => int_binary(args, |a, b| Some(a.wrapping_add(b))),
        Builtin::IntSub => int_binary(args, |a, b| Some(a.wrapping_sub(b))),
        Builtin::IntMul => int_binary(args, |a, b| Some(a.wrapping_mul(b))),
        Builtin::IntDiv => int_binary(args, i64::checked_div),
        Builtin::IntMod => int_binary(args, i64::checked_rem),
        Builtin::IntBitAnd => int_binary(args, |a, b| Some(a & b)),
        Builtin::IntBitOr => int_binary(args, |a, b| Some(a | b)),
        Builtin::IntBitXor => int_binary(args, |a, b| Some(a ^ b)),
        Builtin::IntBitLeftShift => int_binary(args, |a, b| {
            (0..64).contains(&b).then(|| a.wrapping_shl(b as u32))
        }),
        Builtin::IntBitRightShift => int_binary(args, |a, b| {
            (0..64).contains(&b).then(|| a.wrapping_shr(b as u32))
        }),
        Builtin::IntBitNot => integer(arg(0)).map(|a| Value::from(!a)),
        _ => {
            return Err(QueryError::semantic(format!(
                "'{}' is not a recognized built-in function name.",
                builtin.name()
            )))
        }
    };
    Ok(result)
}
