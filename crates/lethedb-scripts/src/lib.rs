//! LetheDB's server-side JavaScript: the sandbox that runs stored procedures, triggers and
//! user-defined functions (QuickJS through `rquickjs`). It knows nothing of storage: a script's
//! collection operations go to the caller's [`Collection`], which decides what they see and
//! do (the engine keeps them in one transaction).
//!
//! Public API, by file:
//! - `syntax.rs` — [`check_syntax`]: whether a script body is valid JavaScript, and where not.
//! - `limits.rs` — [`Limits`]: the time budget, memory cap and stack of one execution.
//! - `host.rs` — [`Collection`], [`Request`], [`Answer`], [`OperationError`]: what a script
//!   asks of its collection and what it is answered.
//! - `run.rs` — [`run`]: executes a stored procedure or trigger ([`Invocation`]) into an
//!   [`Outcome`] or a [`Failure`]; `prelude.js` is the server-side API scripts call.
//! - `udf.rs` — [`Udfs`]: one query page's user-defined functions, called per row.

mod host;
mod limits;
mod run;
mod syntax;
mod udf;

pub use host::{
    Answer, Collection, FeedOptions, OperationError, ReadOptions, Request, WriteOptions,
};
pub use limits::{
    Limits, SCRIPT_ACCEPT_FRACTION_DEFAULT, SCRIPT_BUDGET_DEFAULT, SCRIPT_MEMORY_BYTES_DEFAULT,
    SCRIPT_STACK_BYTES_DEFAULT,
};
pub use run::{run, Failure, Invocation, Outcome};
pub use syntax::{check_syntax, SyntaxError};
pub use udf::{UdfError, Udfs};
