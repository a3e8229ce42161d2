//! User-defined functions: compute-only JavaScript called per row of a query.
//!
//! A [`Udfs`] holds one query page's functions and its deadline. Calls run in a QuickJS runtime
//! kept per thread and rebuilt only when another set of functions comes to that thread, so a
//! query over thousands of rows compiles its functions once and converts only the arguments
//! and the result per call. UDFs get no `getContext()`: they see their arguments and nothing
//! else. The runtime has the same memory cap and stack as a stored procedure; the time budget
//! covers the whole page.

use crate::limits::Limits;
use rquickjs::{
    Array, CatchResultExt, CaughtError, Context, Ctx, Function, Object, Runtime, Value,
};
use serde_json::{Map, Number, Value as Json};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why a call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UdfError {
    /// The function threw (or did not compile); the message names it.
    Thrown(String),
    /// The page's time budget ran out.
    Timeout,
    /// The memory cap was reached.
    OutOfMemory,
}

static NEXT_SET: AtomicU64 = AtomicU64::new(1);

/// One query page's user-defined functions: `(id, body)` pairs, callable as `udf.<id>(...)`.
pub struct Udfs {
    set: u64,
    functions: Vec<(String, String)>,
    deadline: Instant,
    limits: Limits,
}

impl Udfs {
    pub fn new(functions: Vec<(String, String)>, limits: &Limits) -> Udfs {
        Udfs {
            set: NEXT_SET.fetch_add(1, Ordering::Relaxed),
            functions,
            deadline: Instant::now() + limits.budget,
            limits: limits.clone(),
        }
    }

    pub fn defines(&self, name: &str) -> bool {
        self.functions.iter().any(|(id, _)| id == name)
    }

    /// Calls `name` with `args` (`None`: undefined); `None` back is undefined.
    pub fn call(&self, name: &str, args: &[Option<Json>]) -> Result<Option<Json>, UdfError> {
        SANDBOX.with(|cell| {
            let mut slot = cell.borrow_mut();
            let fresh = match slot.as_ref() {
                Some(sandbox) => sandbox.set != self.set,
                None => true,
            };
            if fresh {
                *slot = None;
                *slot = Some(Sandbox::new(self)?);
            }
            let Some(sandbox) = slot.as_ref() else {
                return Err(UdfError::Thrown("the UDF sandbox could not start".into()));
            };
            sandbox.call(self, name, args)
        })
    }
}

thread_local! {
    static SANDBOX: RefCell<Option<Sandbox>> = const { RefCell::new(None) };
}

/// A runtime with one set of functions compiled.
struct Sandbox {
    set: u64,
    /// Milliseconds after `epoch` at which calls are interrupted.
    deadline_ms: Arc<AtomicU64>,
    interrupted: Arc<AtomicBool>,
    epoch: Instant,
    // Declared before the runtime, so it is dropped first.
    context: Context,
    runtime: Runtime,
}

fn thrown(message: impl std::fmt::Display) -> UdfError {
    UdfError::Thrown(message.to_string())
}

impl Sandbox {
    fn new(udfs: &Udfs) -> Result<Sandbox, UdfError> {
        let runtime = Runtime::new().map_err(thrown)?;
        runtime.set_memory_limit(udfs.limits.memory_bytes);
        runtime.set_max_stack_size(udfs.limits.stack_bytes);
        let epoch = Instant::now();
        let deadline_ms = Arc::new(AtomicU64::new(0));
        let interrupted = Arc::new(AtomicBool::new(false));
        let (deadline, flag) = (Arc::clone(&deadline_ms), Arc::clone(&interrupted));
        runtime.set_interrupt_handler(Some(Box::new(move || {
            let late = epoch.elapsed().as_millis() as u64 >= deadline.load(Ordering::Relaxed);
            if late {
                flag.store(true, Ordering::Relaxed);
            }
            late
        })));
        let context = Context::full(&runtime).map_err(thrown)?;
        let sandbox = Sandbox {
            set: udfs.set,
            deadline_ms,
            interrupted,
            epoch,
            context,
            runtime,
        };
        sandbox.arm(udfs);
        sandbox.context.with(|ctx| -> Result<(), UdfError> {
            let table = Object::new(ctx.clone()).map_err(thrown)?;
            for (id, body) in &udfs.functions {
                let function: Value = ctx
                    .eval(format!("({body}\n)"))
                    .catch(&ctx)
                    .map_err(|error| sandbox.failure(&ctx, error, id))?;
                table.set(id.as_str(), function).map_err(thrown)?;
            }
            ctx.globals().set("__udfs", table).map_err(thrown)
        })?;
        Ok(sandbox)
    }

    fn arm(&self, udfs: &Udfs) {
        let remaining = udfs.deadline.saturating_duration_since(Instant::now());
        let at = self.epoch.elapsed() + remaining.min(Duration::from_secs(3600));
        self.deadline_ms
            .store(at.as_millis() as u64, Ordering::Relaxed);
        self.interrupted.store(false, Ordering::Relaxed);
    }

    fn failure<'js>(&self, ctx: &Ctx<'js>, error: CaughtError<'js>, name: &str) -> UdfError {
        if self.interrupted.load(Ordering::Relaxed) {
            return UdfError::Timeout;
        }
        let message = match &error {
            CaughtError::Exception(exception) => {
                let text = exception.message().unwrap_or_default();
                if text.contains("out of memory") {
                    return UdfError::OutOfMemory;
                }
                format!("Error: {text}")
            }
            CaughtError::Value(value) => ctx
                .json_stringify(value.clone())
                .ok()
                .flatten()
                .and_then(|text| text.to_string().ok())
                .unwrap_or_else(|| "a non-error value".into()),
            CaughtError::Error(error) => error.to_string(),
        };
        UdfError::Thrown(format!(
            "Encountered exception while executing Javascript. Exception = {message} (in udf.{name})"
        ))
    }

    fn call(
        &self,
        udfs: &Udfs,
        name: &str,
        args: &[Option<Json>],
    ) -> Result<Option<Json>, UdfError> {
        self.arm(udfs);
        let _ = &self.runtime;
        self.context.with(|ctx| {
            let table: Object = ctx.globals().get("__udfs").map_err(thrown)?;
            let function: Function = table
                .get(name)
                .map_err(|_| thrown(format!("udf.{name} is not a function")))?;
            let mut values = rquickjs::function::Args::new(ctx.clone(), args.len());
            for arg in args {
                let value = match arg {
                    None => Value::new_undefined(ctx.clone()),
                    Some(json) => to_js(&ctx, json).map_err(thrown)?,
                };
                values.push_arg(value).map_err(thrown)?;
            }
            let result: Value = function
                .call_arg(values)
                .catch(&ctx)
                .map_err(|error| self.failure(&ctx, error, name))?;
            Ok(from_js(&result))
        })
    }
}

/// A JSON value as a JavaScript one.
fn to_js<'js>(ctx: &Ctx<'js>, json: &Json) -> rquickjs::Result<Value<'js>> {
    Ok(match json {
        Json::Null => Value::new_null(ctx.clone()),
        Json::Bool(flag) => Value::new_bool(ctx.clone(), *flag),
        Json::Number(number) => match number.as_i64().and_then(|n| i32::try_from(n).ok()) {
            Some(small) => Value::new_int(ctx.clone(), small),
            None => Value::new_float(ctx.clone(), number.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(text) => rquickjs::String::from_str(ctx.clone(), text)?.into_value(),
        Json::Array(items) => {
            let array = Array::new(ctx.clone())?;
            for (index, item) in items.iter().enumerate() {
                array.set(index, to_js(ctx, item)?)?;
            }
            array.into_value()
        }
        Json::Object(map) => {
            let object = Object::new(ctx.clone())?;
            for (key, item) in map {
                object.set(key.as_str(), to_js(ctx, item)?)?;
            }
            object.into_value()
        }
    })
}

/// A JavaScript value as JSON, as `JSON.stringify` sees it: `undefined`, functions and symbols
/// are undefined (dropped from objects, `null` in arrays); a number that is not finite too.
fn from_js(value: &Value<'_>) -> Option<Json> {
    if let Some(flag) = value.as_bool() {
        return Some(Json::Bool(flag));
    }
    if let Some(small) = value.as_int() {
        return Some(Json::from(small));
    }
    if let Some(number) = value.as_float() {
        return Number::from_f64(number).map(|n| {
            if number.fract() == 0.0 && number.abs() < 9_007_199_254_740_992.0 {
                Json::from(number as i64)
            } else {
                Json::Number(n)
            }
        });
    }
    if value.is_null() {
        return Some(Json::Null);
    }
    if let Some(text) = value.as_string() {
        return text.to_string().ok().map(Json::String);
    }
    if let Some(array) = value.as_array() {
        let items = array
            .iter::<Value>()
            .map(|item| {
                item.ok()
                    .and_then(|item| from_js(&item))
                    .unwrap_or(Json::Null)
            })
            .collect();
        return Some(Json::Array(items));
    }
    if value.is_function() {
        return None;
    }
    if let Some(object) = value.as_object() {
        let mut map = Map::new();
        for (key, item) in object.props::<String, Value>().flatten() {
            if let Some(item) = from_js(&item) {
                map.insert(key, item);
            }
        }
        return Some(Json::Object(map));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn udfs(functions: &[(&str, &str)]) -> Udfs {
        Udfs::new(
            functions
                .iter()
                .map(|(id, body)| (id.to_string(), body.to_string()))
                .collect(),
            &Limits {
                budget: Duration::from_millis(300),
                ..Limits::default()
            },
        )
    }

    #[test]
    fn calls_convert_arguments_and_results() {
        let set = udfs(&[
            ("tax", "function (income) { return income > 1000 ? income * 0.1 : 0; }"),
            ("shape", "function (o) { return {n: o.list.length, name: o.name + '!', gone: undefined, f: function () {}}; }"),
            ("nothing", "function () {}"),
        ]);
        assert!(set.defines("tax") && !set.defines("other"));
        assert_eq!(set.call("tax", &[Some(json!(5000))]), Ok(Some(json!(500))));
        assert_eq!(set.call("tax", &[Some(json!(10))]), Ok(Some(json!(0))));
        assert_eq!(
            set.call("shape", &[Some(json!({"list": [1, 2, 3], "name": "x"}))]),
            Ok(Some(json!({"n": 3, "name": "x!"})))
        );
        assert_eq!(set.call("nothing", &[None]), Ok(None));
    }

    #[test]
    fn an_exception_a_loop_and_a_new_set_are_told_apart() {
        let set = udfs(&[
            ("boom", "function () { throw new Error('no input'); }"),
            ("spin", "function () { while (true) {} }"),
        ]);
        match set.call("boom", &[]) {
            Err(UdfError::Thrown(message)) => assert!(message.contains("no input"), "{message}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(set.call("spin", &[]), Err(UdfError::Timeout));
        // Another set on the same thread gets its own functions and its own budget.
        let other = udfs(&[("one", "function () { return 1; }")]);
        assert_eq!(other.call("one", &[]), Ok(Some(json!(1))));
    }
}
