//! Running a stored procedure or a trigger: a fresh QuickJS runtime per execution, with a memory
//! cap, a stack cap and an interrupt at the time budget; the prelude (`prelude.js`) defines the
//! server-side API; the driver answers the collection operations the script queues, one turn at
//! a time, until nothing is queued and no promise job is pending.
//!
//! Nothing here reaches the file system, the network or another collection: the runtime has
//! no modules and no host functions but the two the prelude is given (the acceptance check and
//! nothing else), and every collection operation goes through the caller's [`Collection`].

use crate::host::{
    Answer, Collection, FeedOptions, OperationError, ReadOptions, Request, WriteOptions,
};
use crate::limits::Limits;
use rquickjs::{CatchResultExt, CaughtError, Context, Ctx, Function, Object, Runtime, Value};
use serde_json::{json, Map, Value as Json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

const PRELUDE: &str = include_str!("prelude.js");

/// What runs, and with what.
#[derive(Clone, Debug)]
pub enum Invocation {
    /// A stored procedure, with its arguments (the request body's array).
    StoredProcedure { arguments: Vec<Json> },
    /// A pre-trigger: it may replace the request's document.
    PreTrigger {
        operation: &'static str,
        request_body: Json,
    },
    /// A post-trigger: it sees the request's document and the stored one, and may replace the
    /// response's body.
    PostTrigger {
        operation: &'static str,
        request_body: Json,
        response_body: Json,
    },
}

/// What a successful execution produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The response body (a stored procedure's `setBody`, `""` when never set; a post-trigger's
    /// response document).
    pub response_body: Json,
    /// The request body after the script (a pre-trigger's `setBody`).
    pub request_body: Json,
    /// `console.log` output, when logging was asked for.
    pub log: String,
    /// Whether the script set the response body (a post-trigger's replaces the written item in
    /// the answer).
    pub response_set: bool,
}

/// Why an execution failed. Every failure means: roll back whatever it did.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// The script threw (or called `abort`): `number` is the `Error(number, message)` code.
    Thrown {
        number: Option<i64>,
        message: String,
        log: String,
    },
    /// The time budget ran out.
    Timeout,
    /// The memory cap was reached.
    OutOfMemory,
    /// A collection operation failed in a way that ends the execution.
    Operation(OperationError),
    /// The sandbox itself could not run (a bug or resource exhaustion in the host).
    Sandbox(String),
}

/// Runs `source` (a function expression) as `invocation` against `collection`.
pub fn run(
    source: &str,
    invocation: &Invocation,
    logging: bool,
    collection: &mut dyn Collection,
    limits: &Limits,
) -> Result<Outcome, Failure> {
    let started = Instant::now();
    let deadline = started + limits.budget;
    let accept_until = started + limits.budget.mul_f64(limits.accept_fraction);
    let runtime = Runtime::new().map_err(sandbox)?;
    runtime.set_memory_limit(limits.memory_bytes);
    runtime.set_max_stack_size(limits.stack_bytes);
    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&interrupted);
    runtime.set_interrupt_handler(Some(Box::new(move || {
        let late = Instant::now() >= deadline;
        if late {
            flag.store(true, Ordering::Relaxed);
        }
        late
    })));
    let context = Context::full(&runtime).map_err(sandbox)?;
    let result = context.with(|ctx| {
        let api = install(&ctx, accept_until, source, invocation, logging, collection)?;
        drive(&ctx, &api, collection)?;
        finish(&ctx, &api)
    });
    result.map_err(|failure| classify(failure, &interrupted, &runtime, limits))
}

/// A failure seen inside the sandbox, before it is told apart from a timeout or the memory cap.
enum Raw {
    Thrown(ThrownFacts),
    Operation(OperationError),
    Sandbox(String),
}

struct ThrownFacts {
    number: Option<i64>,
    message: String,
    log: String,
}

fn sandbox(error: impl std::fmt::Display) -> Failure {
    Failure::Sandbox(error.to_string())
}

fn classify(raw: Raw, interrupted: &AtomicBool, runtime: &Runtime, limits: &Limits) -> Failure {
    if interrupted.load(Ordering::Relaxed) {
        return Failure::Timeout;
    }
    match raw {
        Raw::Operation(error) => Failure::Operation(error),
        Raw::Thrown(facts) => {
            // What the heap holds tells the memory cap from a script's own exception.
            let usage = runtime.memory_usage();
            let near_cap = limits.memory_bytes / 10 * 9;
            let out_of_memory = facts.message.contains("out of memory")
                || usage.malloc_size.max(0) as usize >= near_cap
                || usage.memory_used_size.max(0) as usize >= near_cap;
            if out_of_memory && facts.number.is_none() {
                Failure::OutOfMemory
            } else {
                Failure::Thrown {
                    number: facts.number,
                    message: facts.message,
                    log: facts.log,
                }
            }
        }
        Raw::Sandbox(message) if message.contains("out of memory") => Failure::OutOfMemory,
        Raw::Sandbox(message) => Failure::Sandbox(message),
    }
}

/// The prelude's functions the driver calls.
struct Api<'js> {
    object: Object<'js>,
}

impl<'js> Api<'js> {
    fn function(&self, name: &str) -> Result<Function<'js>, Raw> {
        self.object
            .get(name)
            .map_err(|error| Raw::Sandbox(error.to_string()))
    }
}

/// Turns whatever the script threw into the facts of a failure.
fn thrown<'js>(ctx: &Ctx<'js>, api: Option<&Api<'js>>, error: CaughtError<'js>) -> Raw {
    let value = match error {
        CaughtError::Exception(exception) => exception.into_value(),
        CaughtError::Value(value) => value,
        CaughtError::Error(error) => return Raw::Sandbox(error.to_string()),
    };
    if value.is_null() {
        // What QuickJS throws when the memory cap leaves it no room for the error object itself.
        return Raw::Sandbox("out of memory (the engine threw null)".into());
    }
    let described = api
        .and_then(|api| api.function("describe").ok())
        .and_then(|describe| describe.call::<_, Object>((value.clone(),)).ok());
    let Some(described) = described else {
        let message = value
            .as_string()
            .and_then(|text| text.to_string().ok())
            .unwrap_or_else(|| "the script threw".to_string());
        return Raw::Thrown(ThrownFacts {
            number: None,
            message,
            log: String::new(),
        });
    };
    let text = |name: &str| described.get::<_, Option<String>>(name).ok().flatten();
    let name = text("name").unwrap_or_default();
    let message = text("message").unwrap_or_default();
    let number = described
        .get::<_, Option<f64>>("number")
        .ok()
        .flatten()
        .map(|number| number as i64);
    let message = if name.is_empty() {
        message
    } else {
        format!("{name}: {message}")
    };
    let log = api.map(|api| current_log(ctx, api)).unwrap_or_default();
    Raw::Thrown(ThrownFacts {
        number,
        message,
        log,
    })
}

fn current_log<'js>(_ctx: &Ctx<'js>, api: &Api<'js>) -> String {
    api.function("finish")
        .ok()
        .and_then(|finish| finish.call::<_, String>(()).ok())
        .and_then(|text| serde_json::from_str::<Json>(&text).ok())
        .and_then(|facts| facts.get("log").and_then(Json::as_str).map(str::to_string))
        .unwrap_or_default()
}

/// Evaluates the prelude, starts it with the execution's facts, and calls the script.
fn install<'js>(
    ctx: &Ctx<'js>,
    accept_until: Instant,
    source: &str,
    invocation: &Invocation,
    logging: bool,
    collection: &dyn Collection,
) -> Result<Api<'js>, Raw> {
    let host = Object::new(ctx.clone()).map_err(|error| Raw::Sandbox(error.to_string()))?;
    let accepting = Function::new(ctx.clone(), move || Instant::now() < accept_until)
        .map_err(|error| Raw::Sandbox(error.to_string()))?;
    host.set("accepting", accepting)
        .map_err(|error| Raw::Sandbox(error.to_string()))?;
    let factory: Function = ctx
        .eval(PRELUDE)
        .catch(ctx)
        .map_err(|error| thrown(ctx, None, error))?;
    let object: Object = factory
        .call((ctx.globals(), host))
        .catch(ctx)
        .map_err(|error| thrown(ctx, None, error))?;
    let api = Api { object };
    let (kind, operation, request_body, response_body, arguments) = match invocation {
        Invocation::StoredProcedure { arguments } => (
            "sproc",
            Json::Null,
            Json::Array(arguments.clone()),
            Json::Null,
            arguments.clone(),
        ),
        Invocation::PreTrigger {
            operation,
            request_body,
        } => (
            "pre",
            json!(operation),
            request_body.clone(),
            Json::Null,
            Vec::new(),
        ),
        Invocation::PostTrigger {
            operation,
            request_body,
            response_body,
        } => (
            "post",
            json!(operation),
            request_body.clone(),
            response_body.clone(),
            Vec::new(),
        ),
    };
    let facts = json!({
        "kind": kind,
        "operationType": operation,
        "requestBody": request_body,
        "responseBody": response_body,
        "logging": logging,
        "selfLink": collection.self_link(),
        "altLink": collection.alt_link(),
    });
    api.function("start")?
        .call::<_, ()>((facts.to_string(),))
        .catch(ctx)
        .map_err(|error| thrown(ctx, Some(&api), error))?;
    // Positions in the script's errors are its own: line 1 is the body's first line.
    let script: Value = ctx
        .eval(format!("({source}\n)"))
        .catch(ctx)
        .map_err(|error| thrown(ctx, Some(&api), error))?;
    api.function("invoke")?
        .call::<_, Value>((script, Json::Array(arguments).to_string()))
        .catch(ctx)
        .map_err(|error| thrown(ctx, Some(&api), error))?;
    Ok(api)
}

/// Answers queued operations and runs promise jobs until neither is left.
fn drive<'js>(ctx: &Ctx<'js>, api: &Api<'js>, collection: &mut dyn Collection) -> Result<(), Raw> {
    let take = api.function("take")?;
    let settle = api.function("settle")?;
    loop {
        while ctx.execute_pending_job() {}
        let queued: String = take
            .call(())
            .catch(ctx)
            .map_err(|error| thrown(ctx, Some(api), error))?;
        if queued.is_empty() {
            return Ok(());
        }
        let queued: Vec<Json> = serde_json::from_str(&queued)
            .map_err(|error| Raw::Sandbox(format!("the prelude queued bad JSON: {error}")))?;
        for entry in queued {
            let id = entry.get("id").and_then(Json::as_f64).unwrap_or_default();
            let outcome = match parse_request(&entry) {
                Ok(request) => match collection.execute(request) {
                    Ok(answer) => answer_json(answer),
                    Err(error) if error.fatal => return Err(Raw::Operation(error)),
                    Err(error) => error_json(&error),
                },
                Err(error) => error_json(&error),
            };
            settle
                .call::<_, Value>((id, outcome.to_string()))
                .catch(ctx)
                .map_err(|error| thrown(ctx, Some(api), error))?;
            while ctx.execute_pending_job() {}
        }
    }
}

fn finish<'js>(ctx: &Ctx<'js>, api: &Api<'js>) -> Result<Outcome, Raw> {
    let text: String = api
        .function("finish")?
        .call(())
        .catch(ctx)
        .map_err(|error| thrown(ctx, Some(api), error))?;
    let facts: Json =
        serde_json::from_str(&text).map_err(|error| Raw::Sandbox(error.to_string()))?;
    let inner = |name: &str| -> Json {
        facts
            .get(name)
            .and_then(Json::as_str)
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or(Json::Null)
    };
    Ok(Outcome {
        response_body: inner("body"),
        request_body: inner("requestBody"),
        log: facts
            .get("log")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_string(),
        response_set: facts
            .get("responseSet")
            .and_then(Json::as_bool)
            .unwrap_or(false),
    })
}

fn bad_request(message: impl Into<String>) -> OperationError {
    OperationError {
        status: 400,
        code: "BadRequest".into(),
        message: message.into(),
        fatal: false,
    }
}

fn parse_request(entry: &Json) -> Result<Request, OperationError> {
    let args = entry.get("args").cloned().unwrap_or(Json::Null);
    let kind = entry.get("kind").and_then(Json::as_str).unwrap_or_default();
    let link = args
        .get("link")
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_string();
    let options = args.get("options").cloned().unwrap_or(Json::Null);
    let text = |name: &str| options.get(name).and_then(Json::as_str).map(str::to_string);
    let write_options = || WriteOptions {
        disable_automatic_id_generation: options
            .get("disableAutomaticIdGeneration")
            .and_then(Json::as_bool)
            .unwrap_or(false),
        if_match: text("etag"),
    };
    let feed_options = || FeedOptions {
        page_size: options.get("pageSize").and_then(Json::as_i64),
        continuation: text("continuation"),
    };
    let body = || match args.get("body") {
        Some(Json::Object(map)) => Ok(map.clone()),
        _ => Err(bad_request("The document body must be an object.")),
    };
    Ok(match kind {
        "create" => Request::Create {
            link,
            body: body()?,
            options: write_options(),
        },
        "upsert" => Request::Upsert {
            link,
            body: body()?,
            options: write_options(),
        },
        "replace" => Request::Replace {
            link,
            body: body()?,
            options: write_options(),
        },
        "delete" => Request::Delete {
            link,
            options: write_options(),
        },
        "read" => Request::Read {
            link,
            options: ReadOptions {
                if_none_match: text("ifNoneMatch"),
            },
        },
        "readFeed" => Request::ReadFeed {
            link,
            options: feed_options(),
        },
        "query" => {
            let (text, parameters) = match args.get("query") {
                Some(Json::String(text)) => (text.clone(), Vec::new()),
                Some(spec) => query_spec(spec)?,
                None => return Err(bad_request("The query is missing.")),
            };
            Request::Query {
                link,
                text,
                parameters,
                options: feed_options(),
            }
        }
        other => return Err(bad_request(format!("Unknown operation '{other}'."))),
    })
}

/// A parameterized query: `{query, parameters: [{name, value}]}`.
fn query_spec(spec: &Json) -> Result<(String, Vec<(String, Json)>), OperationError> {
    let text = spec
        .get("query")
        .and_then(Json::as_str)
        .ok_or_else(|| bad_request("The query spec needs a 'query' string."))?;
    let parameters = match spec.get("parameters") {
        None | Some(Json::Null) => Vec::new(),
        Some(Json::Array(list)) => list
            .iter()
            .map(|parameter| {
                let name = parameter
                    .get("name")
                    .and_then(Json::as_str)
                    .ok_or_else(|| bad_request("Each query parameter needs a 'name' string."))?;
                Ok((
                    name.to_string(),
                    parameter.get("value").cloned().unwrap_or(Json::Null),
                ))
            })
            .collect::<Result<_, OperationError>>()?,
        Some(_) => return Err(bad_request("The query parameters must be an array.")),
    };
    Ok((text.to_string(), parameters))
}

fn answer_json(answer: Answer) -> Json {
    match answer {
        Answer::Resource(resource) => json!({ "resource": resource, "options": {} }),
        Answer::Nothing { not_modified } => {
            json!({ "resource": null, "options": { "notModified": not_modified } })
        }
        Answer::Feed {
            documents,
            continuation,
        } => {
            let mut options = Map::new();
            if let Some(token) = continuation {
                options.insert("continuation".into(), Json::String(token));
            }
            json!({ "feed": documents, "options": options })
        }
    }
}

fn error_json(error: &OperationError) -> Json {
    let body = json!({ "code": error.code, "message": error.message }).to_string();
    json!({ "error": { "number": error.status, "message": error.message, "body": body } })
}
