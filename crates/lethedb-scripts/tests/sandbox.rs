//! The sandbox against an in-memory collection: the server-side API scripts use, the queue that
//! keeps callback chains off the stack, and the limits.

use lethedb_scripts::{
    run, Answer, Collection, Failure, Invocation, Limits, OperationError, Request,
};
use serde_json::{json, Map, Value};
use std::time::Duration;

/// Documents by id, in insertion order; links are `dbs/d/colls/c/docs/<id>`.
#[derive(Default)]
struct Memory {
    documents: Vec<Map<String, Value>>,
    requests: usize,
}

fn not_found() -> OperationError {
    OperationError {
        status: 404,
        code: "NotFound".into(),
        message: "Resource Not Found".into(),
        fatal: false,
    }
}

impl Memory {
    fn position(&self, link: &str) -> Option<usize> {
        let id = link.rsplit('/').next()?;
        self.documents.iter().position(|d| d["id"] == json!(id))
    }
}

impl Collection for Memory {
    fn self_link(&self) -> String {
        "dbs/AA==/colls/AAAAAA==/".into()
    }
    fn alt_link(&self) -> String {
        "dbs/d/colls/c".into()
    }
    fn execute(&mut self, request: Request) -> Result<Answer, OperationError> {
        self.requests += 1;
        match request {
            Request::Create { body, .. } => {
                if self.documents.iter().any(|d| d["id"] == body["id"]) {
                    return Err(OperationError {
                        status: 409,
                        code: "Conflict".into(),
                        message: "Resource with specified id or name already exists.".into(),
                        fatal: false,
                    });
                }
                if body.get("pk") == Some(&json!("elsewhere")) {
                    return Err(OperationError {
                        status: 400,
                        code: "BadRequest".into(),
                        message: "outside the partition".into(),
                        fatal: true,
                    });
                }
                self.documents.push(body.clone());
                Ok(Answer::Resource(Value::Object(body)))
            }
            Request::Upsert { body, .. } => {
                let at = self.documents.iter().position(|d| d["id"] == body["id"]);
                match at {
                    Some(at) => self.documents[at] = body.clone(),
                    None => self.documents.push(body.clone()),
                }
                Ok(Answer::Resource(Value::Object(body)))
            }
            Request::Replace { link, body, .. } => {
                let at = self.position(&link).ok_or_else(not_found)?;
                self.documents[at] = body.clone();
                Ok(Answer::Resource(Value::Object(body)))
            }
            Request::Delete { link, .. } => {
                let at = self.position(&link).ok_or_else(not_found)?;
                self.documents.remove(at);
                Ok(Answer::Nothing {
                    not_modified: false,
                })
            }
            Request::Read { link, .. } => {
                let at = self.position(&link).ok_or_else(not_found)?;
                Ok(Answer::Resource(Value::Object(self.documents[at].clone())))
            }
            Request::ReadFeed { options, .. } | Request::Query { options, .. } => {
                let start: usize = options
                    .continuation
                    .as_deref()
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                let size = options.page_size.filter(|s| *s > 0).unwrap_or(100) as usize;
                let end = (start + size).min(self.documents.len());
                Ok(Answer::Feed {
                    documents: self.documents[start..end]
                        .iter()
                        .cloned()
                        .map(Value::Object)
                        .collect(),
                    continuation: (end < self.documents.len()).then(|| end.to_string()),
                })
            }
        }
    }
}

fn sproc(
    source: &str,
    arguments: Vec<Value>,
) -> (Result<lethedb_scripts::Outcome, Failure>, Memory) {
    let mut memory = Memory::default();
    let outcome = run(
        source,
        &Invocation::StoredProcedure { arguments },
        true,
        &mut memory,
        &Limits::default(),
    );
    (outcome, memory)
}

#[test]
fn the_response_body_is_what_the_script_set_and_an_empty_string_otherwise() {
    let (outcome, _) = sproc(
        "function (a, b) { getContext().getResponse().setBody({sum: a + b.x}); }",
        vec![json!(1), json!({"x": 2})],
    );
    assert_eq!(outcome.unwrap().response_body, json!({"sum": 3}));
    let (outcome, _) = sproc("function () {}", vec![]);
    assert_eq!(outcome.unwrap().response_body, json!(""));
    let (outcome, _) = sproc(
        "function () { for (let i = 0; i < 10; i++) getContext().getResponse().appendValue('Body', i); }",
        vec![],
    );
    assert_eq!(outcome.unwrap().response_body, json!("0123456789"));
}

#[test]
fn console_log_substitutes_percent_s_and_is_captured() {
    let (outcome, _) = sproc(
        "function () { console.log('The value of %s is %s.', 'x', 1); }",
        vec![],
    );
    assert_eq!(outcome.unwrap().log, "The value of x is 1.");
}

#[test]
fn an_error_with_a_number_keeps_it_and_its_message() {
    let (outcome, _) = sproc(
        "function () { throw new Error(409, 'already there'); }",
        vec![],
    );
    match outcome {
        Err(Failure::Thrown {
            number, message, ..
        }) => {
            assert_eq!(number, Some(409));
            assert_eq!(message, "Error: already there");
        }
        other => panic!("{other:?}"),
    }
    // The one-argument form and instanceof still behave as in any engine.
    let (outcome, _) = sproc(
        "function () { const e = new Error('plain'); getContext().getResponse().setBody([e.message, e instanceof Error, e.number === undefined, new TypeError('t') instanceof Error]); }",
        vec![],
    );
    assert_eq!(
        outcome.unwrap().response_body,
        json!(["plain", true, true, true])
    );
}

#[test]
fn callbacks_run_from_a_queue_so_a_long_chain_does_not_grow_the_stack() {
    let source = r#"function bulkImport(count) {
        const collection = getContext().getCollection();
        let done = 0;
        tryCreate();
        function tryCreate() {
            if (done >= count) { getContext().getResponse().setBody(done); return; }
            const accepted = collection.createDocument(collection.getSelfLink(), {id: 'd' + done}, function (err) {
                if (err) throw err;
                done++;
                tryCreate();
            });
            if (!accepted) getContext().getResponse().setBody(done);
        }
    }"#;
    let (outcome, memory) = sproc(source, vec![json!(5_000)]);
    assert_eq!(outcome.unwrap().response_body, json!(5_000));
    assert_eq!(memory.documents.len(), 5_000);
}

#[test]
fn an_operation_error_goes_to_the_callback_or_is_thrown_without_one() {
    let source = r#"function () {
        const c = getContext().getCollection();
        c.createDocument(c.getSelfLink(), {id: 'a'});
        c.createDocument(c.getSelfLink(), {id: 'a'}, function (err) {
            getContext().getResponse().setBody([err.number, err.message, err.number === ErrorCodes.Conflict]);
        });
    }"#;
    let (outcome, _) = sproc(source, vec![]);
    assert_eq!(
        outcome.unwrap().response_body,
        json!([
            409,
            "Resource with specified id or name already exists.",
            true
        ])
    );
    let (outcome, _) = sproc(
        "function () { const c = getContext().getCollection(); c.readDocument(c.getAltLink() + '/docs/nope'); }",
        vec![],
    );
    assert!(
        matches!(
            outcome,
            Err(Failure::Thrown {
                number: Some(404),
                ..
            })
        ),
        "{outcome:?}"
    );
}

#[test]
fn a_fatal_operation_error_ends_the_execution() {
    let (outcome, _) = sproc(
        "function () { const c = getContext().getCollection(); c.createDocument(c.getSelfLink(), {id: 'x', pk: 'elsewhere'}, function () {}); }",
        vec![],
    );
    assert!(
        matches!(outcome, Err(Failure::Operation(ref e)) if e.status == 400),
        "{outcome:?}"
    );
}

#[test]
fn abort_fails_the_execution() {
    let (outcome, _) = sproc(
        "function () { getContext().abort(new Error(400, 'stop')); }",
        vec![],
    );
    assert!(
        matches!(
            outcome,
            Err(Failure::Thrown {
                number: Some(400),
                ..
            })
        ),
        "{outcome:?}"
    );
}

#[test]
fn a_loop_without_end_is_stopped_at_the_budget() {
    let mut memory = Memory::default();
    let limits = Limits {
        budget: Duration::from_millis(200),
        ..Limits::default()
    };
    let outcome = run(
        "function () { try { while (true) {} } catch (e) { while (true) {} } }",
        &Invocation::StoredProcedure { arguments: vec![] },
        false,
        &mut memory,
        &limits,
    );
    assert_eq!(outcome, Err(Failure::Timeout));
}

#[test]
fn allocating_without_end_hits_the_memory_cap() {
    let mut memory = Memory::default();
    let limits = Limits {
        memory_bytes: 16 << 20,
        ..Limits::default()
    };
    let outcome = run(
        "function () { const hog = []; while (true) hog.push('x'.repeat(1000) + hog.length); }",
        &Invocation::StoredProcedure { arguments: vec![] },
        false,
        &mut memory,
        &limits,
    );
    assert_eq!(outcome, Err(Failure::OutOfMemory));
}

#[test]
fn operations_are_refused_once_most_of_the_budget_is_spent() {
    let mut memory = Memory::default();
    let limits = Limits {
        budget: Duration::from_millis(300),
        ..Limits::default()
    };
    let source = r#"function () {
        const c = getContext().getCollection();
        const until = Date.now() + 260;
        while (Date.now() < until) {}
        const accepted = c.createDocument(c.getSelfLink(), {id: 'late'});
        getContext().getResponse().setBody(accepted);
    }"#;
    let outcome = run(
        source,
        &Invocation::StoredProcedure { arguments: vec![] },
        false,
        &mut memory,
        &limits,
    );
    assert_eq!(outcome.unwrap().response_body, json!(false));
    assert!(memory.documents.is_empty());
}

#[test]
fn the_chain_api_filters_maps_and_sorts_a_page() {
    let mut memory = Memory::default();
    for (id, n) in [("a", 3), ("b", 1), ("c", 2), ("d", 5)] {
        memory
            .documents
            .push(json!({"id": id, "n": n}).as_object().cloned().unwrap());
    }
    let source = r#"function () {
        __.chain().filter(d => d.n > 1).sortByDescending(d => d.n).pluck('id').value(function (err, ids) {
            if (err) throw err;
            getContext().getResponse().setBody(ids);
        });
    }"#;
    let outcome = run(
        source,
        &Invocation::StoredProcedure { arguments: vec![] },
        false,
        &mut memory,
        &Limits::default(),
    );
    assert_eq!(outcome.unwrap().response_body, json!(["d", "a", "c"]));
    // Without a callback, a step appends its result to the response body.
    let outcome = run(
        "function () { __.map(d => d.n * 10); }",
        &Invocation::StoredProcedure { arguments: vec![] },
        false,
        &mut memory,
        &Limits::default(),
    );
    assert_eq!(outcome.unwrap().response_body, json!("[30,10,20,50]"));
}

#[test]
fn triggers_see_and_change_the_request_and_response_bodies() {
    let mut memory = Memory::default();
    let outcome = run(
        "function () { const r = getContext().getRequest(); const d = r.getBody(); d.stamped = r.getOperationType(); r.setBody(d); }",
        &Invocation::PreTrigger {
            operation: "Create",
            request_body: json!({"id": "x"}),
        },
        false,
        &mut memory,
        &Limits::default(),
    );
    assert_eq!(
        outcome.unwrap().request_body,
        json!({"id": "x", "stamped": "Create"})
    );
    let outcome = run(
        "function () { const body = getContext().getResponse().getBody(); if (body.n > 1) throw new Error('too big'); }",
        &Invocation::PostTrigger {
            operation: "Create",
            request_body: json!({"id": "x", "n": 2}),
            response_body: json!({"id": "x", "n": 2, "_etag": "e"}),
        },
        false,
        &mut memory,
        &Limits::default(),
    );
    assert!(
        matches!(outcome, Err(Failure::Thrown { .. })),
        "{outcome:?}"
    );
    // A property that does not exist cannot be set.
    let outcome = run(
        "function () { getContext().getResponse().setValue('newHeader', 1); }",
        &Invocation::PostTrigger {
            operation: "Create",
            request_body: json!({}),
            response_body: json!({}),
        },
        false,
        &mut memory,
        &Limits::default(),
    );
    assert!(
        matches!(outcome, Err(Failure::Thrown { number: Some(400), ref message, .. }) if message.contains("Cannot set new values")),
        "{outcome:?}"
    );
}

#[test]
fn a_script_reaches_no_host_facility() {
    let (outcome, _) = sproc(
        "function () { getContext().getResponse().setBody([typeof require, typeof process, typeof std, typeof os, typeof fetch, typeof __lethedb]); }",
        vec![],
    );
    assert_eq!(
        outcome.unwrap().response_body,
        json!([
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined"
        ])
    );
}

#[test]
fn the_wrappers_details_links_log_format_delete_callbacks_and_post_trigger_bodies() {
    // A link outside the collection throws at the call, before anything is queued.
    let (outcome, memory) = sproc(
        r#"function () {
            const c = getContext().getCollection();
            let caught = null;
            try { c.createDocument('dbs/elsewhere/colls/other', {id: 'x'}, () => {}); }
            catch (e) { caught = [e.number, e.message.includes('outside current collection')]; }
            console.log('100%% of %s', 'x');
            c.createDocument(c.getSelfLink(), {id: 'd'}, () => {
                c.deleteDocument(c.getAltLink() + '/docs/d', {}, function (err, options) {
                    getContext().getResponse().setBody([caught, arguments.length, typeof options]);
                });
            });
        }"#,
        vec![],
    );
    let outcome = outcome.unwrap();
    assert_eq!(outcome.response_body, json!([[400, true], 2, "object"]));
    assert_eq!(outcome.log, "100% of x");
    assert_eq!(memory.requests, 2, "the outside link was never queued");
    // A post-trigger that sets the response body says so; one that only reads does not.
    let mut memory = Memory::default();
    let post = |source: &str, memory: &mut Memory| {
        run(
            source,
            &Invocation::PostTrigger {
                operation: "Create",
                request_body: json!({"id": "x"}),
                response_body: json!({"id": "x"}),
            },
            false,
            memory,
            &Limits::default(),
        )
        .unwrap()
    };
    let set = post(
        "function () { const r = getContext().getResponse(); const b = r.getBody(); b.audited = true; r.setBody(b); }",
        &mut memory,
    );
    assert!(set.response_set);
    assert_eq!(set.response_body, json!({"id": "x", "audited": true}));
    assert!(
        !post(
            "function () { getContext().getResponse().getBody(); }",
            &mut memory
        )
        .response_set
    );
}
