//! The sandbox's limits: how long, how much memory and how deep one execution may go.

use std::time::Duration;

/// The memory a syntax check may use: compiling a body the size of the largest script.
pub(crate) const SYNTAX_CHECK_MEMORY_BYTES: usize = 16 << 20;

/// The service's time budget for one execution of a stored procedure, trigger or the UDFs of
/// one query page.
pub const SCRIPT_BUDGET_DEFAULT: Duration = Duration::from_secs(5);
/// The memory one execution's JavaScript heap may use.
pub const SCRIPT_MEMORY_BYTES_DEFAULT: usize = 64 << 20;
/// The native stack one execution may use (deep recursion fails with a RangeError before it).
pub const SCRIPT_STACK_BYTES_DEFAULT: usize = 1 << 20;
/// The share of the budget after which collection operations are refused (they return
/// `false`), so a script that pages through a long job can return its progress in time.
pub const SCRIPT_ACCEPT_FRACTION_DEFAULT: f64 = 0.8;

/// The limits of one execution.
#[derive(Clone, Debug)]
pub struct Limits {
    pub budget: Duration,
    pub memory_bytes: usize,
    pub stack_bytes: usize,
    pub accept_fraction: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            budget: SCRIPT_BUDGET_DEFAULT,
            memory_bytes: SCRIPT_MEMORY_BYTES_DEFAULT,
            stack_bytes: SCRIPT_STACK_BYTES_DEFAULT,
            accept_fraction: SCRIPT_ACCEPT_FRACTION_DEFAULT,
        }
    }
}
