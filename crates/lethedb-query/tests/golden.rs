//! Golden query cases: text files under `tests/golden/` hold a query, optional parameters and
//! the expected results (or an expected error substring) over a fixed dataset.
//!
//! Every case runs through the public paging interface with page sizes 1, 2, 3, 7 and
//! unlimited, and all five must give the expected results, so each case also checks paging.
//! Expected results were written from the service's documented semantics, not from this
//! implementation's output.
//!
//! Case file format: `dataset: NAME` selects `golden/datasets/NAME.json` for the cases after
//! it. A case starts at `query:`; `params:` (a JSON object), `expect:` (a JSON array, in
//! order), `unordered:` (a JSON array, any order) or `error:` (a substring of the error
//! message) follow. A value may continue on the lines below its key. `#` starts a comment line.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use lethedb_query::{prepare, QueryError};
use serde_json::Value;

/// The clock every golden case sees: 2024-01-02T03:04:05.678Z.
const NOW_MS: i64 = 1_704_164_645_678;

const PAGE_SIZES: [usize; 5] = [1, 2, 3, 7, usize::MAX];

/// The most pages one run may take before the test calls it a loop.
const PAGES_MAX: usize = 10_000;

#[derive(Debug)]
enum Expected {
    Ordered(Vec<Value>),
    Unordered(Vec<Value>),
    Error(String),
}

#[derive(Debug)]
struct Case {
    location: String,
    dataset: String,
    query: String,
    parameters: Vec<(String, Value)>,
    expected: Expected,
}

fn key_of(index: usize) -> Vec<u8> {
    // Keys in dataset order, compared bytewise as the engine's storage keys are.
    (index as u64).to_be_bytes().to_vec()
}

/// Runs a query to the end with one page size, following continuations.
fn run_all_pages(
    documents: &[Value],
    query: &str,
    parameters: &[(String, Value)],
    page_size: usize,
) -> Result<Vec<Value>, QueryError> {
    let prepared = prepare(query, parameters, NOW_MS)?;
    let mut results = Vec::new();
    let mut continuation: Option<String> = None;
    for _ in 0..PAGES_MAX {
        let mut run = prepared.start_page(continuation.as_deref(), page_size)?;
        let start = match run.resume_after() {
            Some(after) => documents
                .iter()
                .enumerate()
                .position(|(index, _)| key_of(index).as_slice() > after)
                .unwrap_or(documents.len()),
            None => 0,
        };
        let mut exhausted = true;
        for (index, document) in documents.iter().enumerate().skip(start) {
            if run.push(&key_of(index), document)?.is_break() {
                exhausted = false;
                break;
            }
        }
        let page = run.finish(exhausted)?;
        assert!(
            page.items.len() <= page_size,
            "{query}: page of {} items for page size {page_size}",
            page.items.len()
        );
        results.extend(page.items);
        match page.continuation {
            Some(token) => continuation = Some(token),
            None => return Ok(results),
        }
    }
    panic!("{query}: more than {PAGES_MAX} pages");
}

fn check(case: &Case, documents: &[Value]) -> Result<(), String> {
    for page_size in PAGE_SIZES {
        let outcome = run_all_pages(documents, &case.query, &case.parameters, page_size);
        let failure = |detail: String| {
            Err(format!(
                "{}: {}\n  page size {page_size}: {detail}",
                case.location, case.query
            ))
        };
        match (&case.expected, outcome) {
            (Expected::Error(wanted), Err(error)) => {
                if !error.to_string().contains(wanted.as_str()) {
                    return failure(format!(
                        "expected an error containing {wanted:?}, got {error}"
                    ));
                }
            }
            (Expected::Error(wanted), Ok(results)) => {
                return failure(format!(
                    "expected an error containing {wanted:?}, got {}",
                    Value::Array(results)
                ))
            }
            (_, Err(error)) => return failure(format!("unexpected error: {error}")),
            (Expected::Ordered(wanted), Ok(results)) => {
                if !same_values(wanted, &results) {
                    return failure(format!(
                        "expected {}\n  got      {}",
                        Value::Array(wanted.clone()),
                        Value::Array(results)
                    ));
                }
            }
            (Expected::Unordered(wanted), Ok(results)) => {
                let mut wanted_sorted: Vec<String> = wanted.iter().map(normalized).collect();
                let mut got_sorted: Vec<String> = results.iter().map(normalized).collect();
                wanted_sorted.sort();
                got_sorted.sort();
                if wanted_sorted != got_sorted {
                    return failure(format!(
                        "expected (any order) {}\n  got {}",
                        Value::Array(wanted.clone()),
                        Value::Array(results)
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Numbers compare by value (`2` equals `2.0`); everything else exactly, member order aside.
fn same_values(wanted: &[Value], got: &[Value]) -> bool {
    wanted.len() == got.len()
        && wanted
            .iter()
            .zip(got)
            .all(|(a, b)| normalized(a) == normalized(b))
}

fn normalized(value: &Value) -> String {
    match value {
        Value::Number(number) => {
            let float = number.as_f64().unwrap_or(f64::NAN);
            // Tolerate the last bits of floating-point results written as decimals.
            format!("{float:.9e}")
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(normalized).collect::<Vec<_>>().join(",")
        ),
        Value::Object(members) => {
            let mut entries: Vec<String> = members
                .iter()
                .map(|(key, item)| format!("{key:?}:{}", normalized(item)))
                .collect();
            entries.sort();
            format!("{{{}}}", entries.join(","))
        }
        other => other.to_string(),
    }
}

fn parse_cases(path: &Path) -> Vec<Case> {
    let text =
        fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut cases = Vec::new();
    let mut dataset = String::from("empty");
    // (key, value, line number) of the fields of the case being read.
    let mut fields: Vec<(String, String, usize)> = Vec::new();
    let flush = |fields: &mut Vec<(String, String, usize)>,
                 dataset: &str,
                 cases: &mut Vec<Case>| {
        if fields.is_empty() {
            return;
        }
        let line = fields[0].2;
        let location = format!("{file_name}:{line}");
        let mut query = None;
        let mut parameters = Vec::new();
        let mut expected = None;
        for (key, value, _) in fields.drain(..) {
            let value = value.trim().to_string();
            let json = || {
                serde_json::from_str::<Value>(&value).unwrap_or_else(|error| {
                    panic!("{location}: bad JSON in {key}: {error}\n{value}")
                })
            };
            match key.as_str() {
                "query" => query = Some(value.clone()),
                "params" => match json() {
                    Value::Object(members) => parameters = members.into_iter().collect(),
                    _ => panic!("{location}: params must be a JSON object"),
                },
                "expect" => match json() {
                    Value::Array(items) => expected = Some(Expected::Ordered(items)),
                    _ => panic!("{location}: expect must be a JSON array"),
                },
                "unordered" => match json() {
                    Value::Array(items) => expected = Some(Expected::Unordered(items)),
                    _ => panic!("{location}: unordered must be a JSON array"),
                },
                "error" => expected = Some(Expected::Error(value.clone())),
                other => panic!("{location}: unknown key {other}"),
            }
        }
        cases.push(Case {
            query: query.unwrap_or_else(|| panic!("{location}: case without query")),
            expected: expected
                .unwrap_or_else(|| panic!("{location}: case without expect, unordered or error")),
            location,
            dataset: dataset.to_string(),
            parameters,
        });
    };
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') {
            continue;
        }
        if let Some(name) = trimmed.strip_prefix("dataset:") {
            flush(&mut fields, &dataset, &mut cases);
            dataset = name.trim().to_string();
            continue;
        }
        let key = ["query", "params", "expect", "unordered", "error"]
            .into_iter()
            .find(|key| trimmed.starts_with(key) && trimmed[key.len()..].starts_with(':'));
        match key {
            Some(key) => {
                if key == "query" {
                    flush(&mut fields, &dataset, &mut cases);
                }
                fields.push((
                    key.to_string(),
                    trimmed[key.len() + 1..].to_string(),
                    number + 1,
                ));
            }
            None if trimmed.is_empty() => {}
            None => match fields.last_mut() {
                Some((_, value, _)) => {
                    value.push('\n');
                    value.push_str(line);
                }
                None => panic!("{file_name}:{}: text outside a case", number + 1),
            },
        }
    }
    flush(&mut fields, &dataset, &mut cases);
    cases
}

#[test]
fn golden_cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut datasets: HashMap<String, Vec<Value>> = HashMap::new();
    datasets.insert("empty".into(), Vec::new());
    for entry in
        fs::read_dir(root.join("datasets")).unwrap_or_else(|error| panic!("datasets: {error}"))
    {
        let path = entry.unwrap_or_else(|error| panic!("{error}")).path();
        let name = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text =
            fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        match serde_json::from_str(&text) {
            Ok(Value::Array(documents)) => {
                datasets.insert(name, documents);
            }
            other => panic!("{}: not a JSON array: {other:?}", path.display()),
        }
    }
    let mut files: Vec<_> = fs::read_dir(&root)
        .unwrap_or_else(|error| panic!("{error}"))
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "cases")
        })
        .collect();
    files.sort();
    let mut failures = Vec::new();
    let mut count = 0;
    for file in files {
        for case in parse_cases(&file) {
            count += 1;
            let documents = datasets
                .get(&case.dataset)
                .unwrap_or_else(|| panic!("{}: unknown dataset {}", case.location, case.dataset));
            if let Err(failure) = check(&case, documents) {
                failures.push(failure);
            }
        }
    }
    println!("{count} golden cases, {} failed", failures.len());
    assert!(
        failures.is_empty(),
        "{} of {count} golden cases failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(count >= 300, "only {count} golden cases");
}
