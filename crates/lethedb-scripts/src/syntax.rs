//! Checking a script body when it is stored: a body that is not valid JavaScript is refused at
//! create time with a 400 that names the position, so a broken script fails when it is stored
//! and not at its first execution.
//!
//! A body is run as the value of the expression `(<body>)` (a function). The check compiles
//! exactly that through the `Function` constructor, which compiles without running anything, so
//! a hostile body cannot spend time or memory here beyond what compiling costs.

use crate::limits::SYNTAX_CHECK_MEMORY_BYTES;
use rquickjs::{CatchResultExt, CaughtError, Context, Function, Runtime, Value};

/// Why a body is not valid JavaScript: the engine's message and the 1-based line and column
/// in the body (0 when the engine named none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub message: String,
    pub line: u32,
    pub column: u32,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at line {}, column {}",
            self.message, self.line, self.column
        )
    }
}

/// The lines the `Function` constructor and the wrapper put before the body's first line:
/// `(function anonymous(`, `) {`, `return (`.
const LINES_BEFORE_BODY: u32 = 3;

/// Whether `body` compiles as the function expression a script is run as.
pub fn check_syntax(body: &str) -> Result<(), SyntaxError> {
    let failed = |message: String| SyntaxError {
        message,
        line: 0,
        column: 0,
    };
    let runtime = Runtime::new().map_err(|error| failed(error.to_string()))?;
    runtime.set_memory_limit(SYNTAX_CHECK_MEMORY_BYTES);
    let context = Context::full(&runtime).map_err(|error| failed(error.to_string()))?;
    context.with(|ctx| {
        let constructor: Function = ctx
            .globals()
            .get("Function")
            .map_err(|error| failed(error.to_string()))?;
        let compiled: Result<Value, _> = constructor
            .call((format!("return (\n{body}\n)"),))
            .catch(&ctx);
        match compiled {
            Ok(_) => Ok(()),
            Err(CaughtError::Exception(exception)) => {
                let message = exception.message().unwrap_or_default();
                let (line, column) = position_of(exception.stack().as_deref().unwrap_or(""));
                Err(SyntaxError {
                    message,
                    line: line.saturating_sub(LINES_BEFORE_BODY),
                    column,
                })
            }
            Err(other) => Err(failed(other.to_string())),
        }
    })
}

/// The line and column of the first frame of a QuickJS stack (`at <input>:line:column`).
fn position_of(stack: &str) -> (u32, u32) {
    stack
        .lines()
        .find_map(|frame| {
            let location = frame.trim().strip_prefix("at ")?;
            let location = location
                .rsplit_once('(')
                .map_or(location, |(_, inner)| inner.trim_end_matches(')'));
            let mut parts = location.rsplitn(3, ':');
            let column = parts.next()?.parse().ok()?;
            let line = parts.next()?.parse().ok()?;
            Some((line, column))
        })
        .unwrap_or((0, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_body_compiles() {
        assert_eq!(check_syntax("function (a) { return a + 1; }"), Ok(()));
        assert_eq!(
            check_syntax("function bulkImport(docs) {\n  let n = 0;\n  return n ?? 1;\n}"),
            Ok(())
        );
    }

    #[test]
    fn an_error_names_its_line_and_column_in_the_body() {
        let error = check_syntax("function () {\n  var a = 1;\n  a = +;\n}").unwrap_err();
        assert_eq!((error.line, error.column), (3, 8), "{error}");
        assert!(error.message.contains("unexpected token"), "{error}");
        let error = check_syntax("while (true) {}").unwrap_err();
        assert_eq!(error.line, 1, "{error}");
    }

    #[test]
    fn compiling_runs_nothing() {
        // A body that would loop or allocate forever if run is only compiled.
        assert_eq!(check_syntax("function () { while (true) {} }"), Ok(()));
        assert_eq!(check_syntax("(function () { while (true) {} })()"), Ok(()));
    }
}
