//! User-defined functions through the hook the caller fills: `udf.name(...)` is refused at
//! prepare time without a host, checked against the host's names with one, and evaluated per
//! row through it (including inside WHERE and subqueries).

use lethedb_query::{prepare, prepare_with_udfs, QueryError, UdfHost};
use serde_json::{json, Value};
use std::sync::Arc;

/// A host with two functions: `double(x)` and `greet(name)`.
struct TestHost;

impl UdfHost for TestHost {
    fn defines(&self, name: &str) -> bool {
        matches!(name, "double" | "greet")
    }

    fn call(&self, name: &str, args: &[Option<Value>]) -> Result<Option<Value>, QueryError> {
        Ok(match (name, args) {
            ("double", [Some(Value::Number(n))]) => n.as_f64().map(|n| json!(n * 2.0)),
            ("greet", [Some(Value::String(who))]) => Some(json!(format!("hello {who}"))),
            // Anything else is undefined, as a JavaScript UDF returning undefined would be.
            _ => None,
        })
    }
}

fn run(text: &str, documents: &[Value]) -> Result<Vec<Value>, QueryError> {
    let host: Arc<dyn UdfHost> = Arc::new(TestHost);
    let prepared = prepare_with_udfs(text, &[], 0, Some(host))?;
    let mut page = prepared.start_page(None, 100)?;
    for (number, document) in documents.iter().enumerate() {
        let key = (number as u64).to_be_bytes();
        if page.push(&key, document)?.is_break() {
            break;
        }
    }
    Ok(page.finish(true)?.items)
}

#[test]
fn without_a_host_user_defined_functions_are_refused_at_prepare() {
    assert!(matches!(
        prepare("SELECT udf.double(c.n) FROM c", &[], 0),
        Err(QueryError::Unsupported(_))
    ));
}

#[test]
fn an_unknown_function_is_refused_at_prepare() {
    let host: Arc<dyn UdfHost> = Arc::new(TestHost);
    let error = prepare_with_udfs("SELECT VALUE udf.triple(c.n) FROM c", &[], 0, Some(host))
        .expect_err("unknown UDF");
    assert!(error.to_string().contains("udf.triple"), "{error}");
}

#[test]
fn calls_run_per_row_in_projections_filters_and_subqueries() {
    let documents = [
        json!({"id": "a", "n": 1, "tags": ["x"]}),
        json!({"id": "b", "n": 5, "tags": ["y", "z"]}),
        json!({"id": "c", "n": "text", "tags": []}),
    ];
    assert_eq!(
        run("SELECT VALUE udf.double(c.n) FROM c", &documents).expect("projection"),
        // An undefined result leaves the row out of a VALUE projection.
        vec![json!(2.0), json!(10.0)]
    );
    assert_eq!(
        run(
            "SELECT VALUE c.id FROM c WHERE udf.double(c.n) > 4",
            &documents
        )
        .expect("filter"),
        vec![json!("b")]
    );
    assert_eq!(
        run(
            "SELECT VALUE ARRAY(SELECT VALUE udf.greet(t) FROM t IN c.tags) FROM c WHERE c.id = 'b'",
            &documents
        )
        .expect("subquery"),
        vec![json!(["hello y", "hello z"])]
    );
}
