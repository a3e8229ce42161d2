//! LetheDB's server-side JavaScript: the sandbox that runs stored procedures, triggers and
//! user-defined functions (QuickJS through `rquickjs`).
//!
//! Public API, by file:
//! - `syntax.rs` — [`check_syntax`]: whether a script body is valid JavaScript, and where not.

mod limits;
mod syntax;

pub use syntax::{check_syntax, SyntaxError};
