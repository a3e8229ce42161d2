//! The sandbox's named limits.

/// The memory a syntax check may use: compiling a body the size of the largest script.
pub(crate) const SYNTAX_CHECK_MEMORY_BYTES: usize = 16 << 20;
