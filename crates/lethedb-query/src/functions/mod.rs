//! The built-in scalar functions of the language, dispatched on `Builtin` to one module per
//! family: `types`, `strings`, `math`, `arrays`, `dates` (argument readers in `args`).
//!
//! As in the service, a function given arguments of the wrong type returns `undefined`
//! instead of failing; an unknown name or a wrong argument count is caught before execution
//! by `builtins::check_call`. Aggregates (COUNT, SUM, AVG, MIN, MAX) are computed by
//! `exec.rs`, and refused functions never get this far.

mod args;
mod arrays;
mod dates;
mod math;
mod strings;
mod types;

use serde_json::Value;

use crate::builtins::{Builtin, Family, Kind};
use crate::context::Context;
use crate::error::QueryError;

/// Computes a scalar built-in over evaluated arguments (`None` is `undefined`).
pub fn call(
    builtin: Builtin,
    args: &[Option<Value>],
    context: &Context,
) -> Result<Option<Value>, QueryError> {
    match builtin.kind() {
        Kind::Scalar(Family::Types) => types::call(builtin, args),
        Kind::Scalar(Family::Strings) => strings::call(builtin, args),
        Kind::Scalar(Family::Math) => math::call(builtin, args),
        Kind::Scalar(Family::Arrays) => arrays::call(builtin, args),
        Kind::Scalar(Family::Dates) => dates::call(builtin, args, context),
        Kind::Aggregate => Err(QueryError::semantic(format!(
            "Aggregate function '{}' is not allowed in this context.",
            builtin.name()
        ))),
        Kind::Refused => Err(QueryError::unsupported(format!(
            "the built-in function '{}' is not supported",
            builtin.name()
        ))),
    }
}
