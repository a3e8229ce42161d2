//! The index plan against the scan, differentially: random documents (a small vocabulary with
//! every type at every path, missing fields, arrays, ties, replaced and deleted items, some
//! expired by a manual clock) × random policies (default, excluded paths, explicit `/x/?`
//! paths, mode `none`) × random queries from a small grammar (served conjuncts and not,
//! AND/OR/NOT, parameters, ORDER BY (with equality prefixes a composite serves), TOP,
//! OFFSET/LIMIT, DISTINCT, GROUP BY, aggregates (those an index answers among them), JOIN) ×
//! page sizes, each followed through every continuation, on an engine in verify mode: every
//! page an index can serve runs through the index and as a scan in the same order, and any
//! difference fails it. Followed through its continuations, a query returns the same rows in
//! the same order at every page size: no page skips or repeats a row. Queries go to the whole
//! container (two ranges), one partition, or one range.

use crate::common::{engine_on_store, pk, resolved, Rng};
use lethedb_engine::{
    Engine, EngineConfig, ErrorCode, ManualClock, QueryOutcome, QueryRequest, WriteMode,
};
use serde_json::{json, Value};
use std::sync::Arc;

const PARTITIONS: [&str; 3] = ["p0", "p1", "p2"];
const DOCUMENTS: u64 = 36;
const PAGE_SIZES: [usize; 4] = [1, 2, 5, 1000];
/// Containers filled, each with a policy of its own (the four kinds in turn).
const ROUNDS: u64 = 40;
/// Queries per container, each run at every page size: 40 × 640 × 4 = 102,400 cases.
const QUERIES_PER_ROUND: u64 = 640;

/// Scalars and containers with ties across spellings and long texts that share a cut key.
fn random_value(rng: &mut Rng) -> Option<Value> {
    let long = "x".repeat(130);
    Some(match rng.below(16) {
        0 | 1 => return None,
        2 => Value::Null,
        3 => json!(true),
        4 => json!(false),
        5 => json!(1),
        6 => json!(1.0),
        7 => json!(2),
        8 => json!(-3.5),
        9 => json!("a"),
        10 => json!("ab"),
        11 => json!("b"),
        12 => json!(format!("{long}a")),
        13 => json!(format!("{long}b")),
        14 => json!([1, "a"]),
        _ => json!({"a": 1}),
    })
}

fn random_document(rng: &mut Rng, n: u64) -> Value {
    let partition = PARTITIONS[rng.below(PARTITIONS.len() as u64) as usize];
    let mut document = json!({"id": format!("d{}", rng.below(3 * DOCUMENTS)), "pk": partition});
    if n.is_multiple_of(4) {
        // A few ids shared across partitions.
        document["id"] = json!(format!("shared{}", n % 3));
    }
    for name in ["a", "b"] {
        if let Some(value) = random_value(rng) {
            document[name] = value;
        }
    }
    if let Some(value) = random_value(rng) {
        document["o"] = if rng.below(3) == 0 {
            value
        } else {
            json!({ "a": value })
        };
    }
    if rng.below(4) != 0 {
        let elements: Vec<Value> = (0..rng.below(4))
            .filter_map(|_| random_value(rng))
            .collect();
        document["arr"] = Value::Array(elements);
    }
    if rng.below(5) == 0 {
        document["ttl"] = json!(if rng.below(2) == 0 { 5 } else { 1000 });
    }
    document
}

/// One of the policies the planner must handle, by number.
fn policy(choice: u64, rng: &mut Rng) -> Value {
    match choice {
        // Composites that serve ORDER BY keys whole, and after an equality prefix (`/pk`,
        // `/a`), one with a descending first component.
        0 => json!({"compositeIndexes": [
            [{"path": "/a"}, {"path": "/b", "order": "descending"}],
            [{"path": "/pk"}, {"path": "/b"}],
            [{"path": "/b", "order": "descending"}, {"path": "/a"}],
            [{"path": "/a", "order": "descending"}, {"path": "/pk"}, {"path": "/_ts"}],
        ]}),
        1 => {
            let candidates = ["/a/?", "/b/*", "/o/*", "/arr/[]/?", "/arr/?", "/id/?"];
            let excluded: Vec<Value> = candidates
                .iter()
                .filter(|_| rng.below(2) == 0)
                .map(|path| json!({ "path": path }))
                .collect();
            json!({"includedPaths": [{"path": "/*"}], "excludedPaths": excluded})
        }
        2 => json!({
            "includedPaths": [{"path": "/a/?"}, {"path": "/o/a/?"}, {"path": "/arr/[]/?"},
                {"path": "/b/*"}],
            "excludedPaths": [{"path": "/*"}]}),
        _ => json!({"indexingMode": "none"}),
    }
}

/// A container `c` with `policy`, filled with random documents, some replaced, deleted or
/// expired (the clock moves past their TTL; the sweeper never runs).
async fn filled(policy: Value, rng: &mut Rng) -> Engine {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let store = Arc::new(lethedb_storage::MemoryStore::new());
    let mut container = json!({"id": "c", "partitionKey": {"paths": ["/pk"]}});
    let indexes_nothing = policy["indexingMode"] == "none";
    if !indexes_nothing {
        container["defaultTtl"] = json!(-1);
    }
    container["indexingPolicy"] = policy;
    let config = EngineConfig {
        query_verify: true,
        partition_key_ranges: Some(2),
        ..crate::common::config()
    };
    let engine = engine_on_store(store, Arc::clone(&clock), container, config).await;
    for n in 0..DOCUMENTS {
        let mut document = random_document(rng, n);
        // The service refuses a TTL on a container that indexes nothing.
        if indexes_nothing {
            if let Some(members) = document.as_object_mut() {
                members.remove("ttl");
            }
        }
        let partition = document["pk"].as_str().map(str::to_string);
        let mode = if rng.below(5) == 0 {
            WriteMode::Upsert
        } else {
            WriteMode::Create
        };
        let written = engine
            .write_item(
                &resolved(&engine, "c"),
                mode,
                partition.as_deref().and_then(pk),
                document.clone(),
                None,
            )
            .await;
        if written.is_ok() && rng.below(8) == 0 {
            let id = document["id"].as_str().unwrap_or_default().to_string();
            let _gone = engine
                .delete_item(
                    &resolved(&engine, "c"),
                    partition.as_deref().and_then(pk),
                    &id,
                    None,
                )
                .await;
        }
        // Two write times, so `_ts` has ties and differences.
        if n == DOCUMENTS / 2 {
            clock.advance_ms(2_000);
        }
    }
    clock.advance_ms(10_000);
    engine
}

const PATHS: [&str; 8] = [
    "c.a", "c.b", "c.o.a", "c.o", "c.arr", "c.id", "c._ts", "c['b']",
];
const CONSTANTS: [&str; 12] = [
    "1", "1.0", "2", "-3.5", "null", "true", "false", "'a'", "'ab'", "@p", "@long", "'d1'",
];

fn pick<'a>(rng: &mut Rng, choices: &[&'a str]) -> &'a str {
    choices[rng.below(choices.len() as u64) as usize]
}

fn random_leaf(rng: &mut Rng) -> String {
    let path = pick(rng, &PATHS);
    let constant = pick(rng, &CONSTANTS);
    let other = pick(rng, &CONSTANTS);
    match rng.below(14) {
        0 | 1 => format!("{path} = {constant}"),
        2 => format!("{path} < {constant}"),
        3 => format!("{constant} <= {path}"),
        4 => format!("{path} > {constant}"),
        5 => format!("{path} BETWEEN {constant} AND {other}"),
        6 => format!("{path} IN ({constant}, {other})"),
        7 => format!(
            "STARTSWITH({path}, {})",
            pick(rng, &["'a'", "''", "@long", "'d'"])
        ),
        8 => format!("ARRAY_CONTAINS({path}, {constant})"),
        9 => format!(
            "{}({path})",
            pick(
                rng,
                &["IS_DEFINED", "IS_NUMBER", "IS_STRING", "IS_NULL", "IS_BOOL"]
            )
        ),
        10 => format!(
            "{}({path})",
            pick(rng, &["IS_ARRAY", "IS_OBJECT", "IS_PRIMITIVE"])
        ),
        11 => format!("{path} != {constant}"),
        12 => format!("LOWER({path}) = 'ab'"),
        _ => path.to_string(),
    }
}

fn random_filter(rng: &mut Rng, depth: u32) -> String {
    if depth == 0 || rng.below(2) == 0 {
        return random_leaf(rng);
    }
    let left = random_filter(rng, depth - 1);
    let right = random_filter(rng, depth - 1);
    match rng.below(5) {
        0 => format!("NOT ({left})"),
        1 => format!("({left}) OR ({right})"),
        _ => format!("({left}) AND ({right})"),
    }
}

/// A random query, and whether it needs a scope (one partition or range) to run without the
/// SDK's client pipeline (ORDER BY, aggregates, DISTINCT, TOP, OFFSET).
fn random_query(rng: &mut Rng) -> (String, bool) {
    let mut filter = random_filter(rng, 2);
    if rng.below(3) == 0 {
        // An equality prefix a composite can serve an ORDER BY after.
        let equality = pick(
            rng,
            &[
                "c.pk = 'p1'",
                "c.a = 1",
                "c.a = @p",
                "c.a = 'a'",
                "c.a IN (2)",
                "c.a = @long",
            ],
        );
        filter = format!("{equality} AND ({filter})");
    }
    let (select, pipeline) = match rng.below(11) {
        0 | 1 => ("SELECT * FROM c", false),
        2 => ("SELECT VALUE c.id FROM c", false),
        3 => ("SELECT c.id, t FROM c JOIN t IN c.arr", false),
        4 => ("SELECT TOP 3 c.id, c.a FROM c", true),
        5 => ("SELECT DISTINCT VALUE c.a FROM c", true),
        6 => ("SELECT VALUE COUNT(1) FROM c", true),
        7 => ("SELECT VALUE MAX(c.b) FROM c", true),
        // Aggregates an index may answer, in the shapes the SDKs send per range.
        8 => (
            pick(
                rng,
                &[
                    "SELECT VALUE [{\"item\": COUNT(1)}] FROM c",
                    "SELECT VALUE [{\"item\": MIN(c.a), \"item2\": {\"min\": MIN(c.a), \"count\": COUNT(c.a)}}] FROM c",
                    "SELECT MAX(c.o.a) AS high, MIN(c._ts) AS low, COUNT(c.id) AS n FROM c",
                    "SELECT VALUE MIN(c.id) FROM c",
                ],
            ),
            true,
        ),
        9 => ("SELECT VALUE MIN(c.b) FROM c", true),
        _ => ("SELECT c.a, COUNT(1) AS n FROM c", true),
    };
    if select.contains("MIN") || select.contains("item") {
        // Filters an index serves exactly, or none, so the covered answer is tried.
        filter = pick(
            rng,
            &[
                "",
                "c.a = 1",
                "c.b > 'a'",
                "c.a = @p",
                "IS_STRING(c.b)",
                "c.pk = 'p2' AND c.a <= 2",
                "ARRAY_CONTAINS(c.arr, 'a')",
                "c.a IN (1, 'ab')",
                "STARTSWITH(c.b, 'a')",
                "c.a = @long",
            ],
        )
        .to_string();
    }
    let mut text = if filter.is_empty() {
        select.to_string()
    } else {
        format!("{select} WHERE {filter}")
    };
    if select.ends_with("AS n FROM c") {
        text.push_str(" GROUP BY c.a");
    } else if !select.contains("COUNT")
        && !select.contains("MAX")
        && !select.contains("MIN")
        && rng.below(2) == 0
    {
        let key = pick(
            rng,
            &[
                "c.a",
                "c.id",
                "c._ts",
                "c.b DESC",
                "c.o.a DESC",
                "c.a, c.b DESC",
                "c.a DESC, c.b",
                "c.b",
                "c.b DESC",
                "c.pk, c.b",
                "c.pk DESC, c.b DESC",
                "c.b DESC, c.a",
                "c.a DESC, c.pk, c._ts",
                "c.pk, c._ts",
                "c._ts DESC",
            ],
        );
        text.push_str(&format!(" ORDER BY {key}"));
        return (text, true);
    } else if !pipeline && rng.below(4) == 0 {
        text.push_str(" OFFSET 1 LIMIT 4");
        return (text, true);
    }
    (text, pipeline)
}

/// What the cases came to.
#[derive(Default, Debug)]
struct Tally {
    cases: u64,
    pages: u64,
    index_pages: u64,
    nonempty_pages: u64,
    refused: u64,
    /// Aggregate pages answered without loading a document (counts on a non-empty scope).
    covered_pages: u64,
}

/// Runs `text` through every page at `page_size` and returns the rows of all its pages; an
/// internal error (a difference the verify mode found) fails the test, any other failure ends
/// the case (`None`) as both plans agreed on it.
async fn run_case(engine: &Engine, request: QueryRequest, tally: &mut Tally) -> Option<Vec<Value>> {
    let container = resolved(engine, "c");
    let mut request = request;
    let mut rows = Vec::new();
    tally.cases += 1;
    for _ in 0..200 {
        let page = match engine.query_items(&container, &request).await {
            Ok(QueryOutcome::Page(page)) => page,
            Ok(QueryOutcome::NeedsClientPipeline(_)) => return None,
            Err(error) if error.code == ErrorCode::Internal => {
                panic!("{}: {}", request.text, error.message())
            }
            Err(_) => {
                tally.refused += 1;
                return None;
            }
        };
        tally.pages += 1;
        tally.index_pages += u64::from(page.index_lookups > 0);
        tally.nonempty_pages += u64::from(!page.items.is_empty());
        tally.covered_pages += u64::from(
            request.text.contains("COUNT") && page.index_lookups > 0 && page.documents_scanned == 0,
        );
        rows.extend(page.items);
        match page.continuation {
            Some(token) => request.continuation = Some(token),
            None => return Some(rows),
        }
    }
    panic!("{}: too many pages", request.text);
}

/// Where a query is sent.
enum Scope {
    Container,
    Partition(&'static str),
    Range(String),
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_plan_and_the_scan_return_the_same_pages() {
    let mut rng = Rng(0x0dd_ba11);
    let mut tally = Tally::default();
    let long = format!("{}a", "x".repeat(130));
    for round in 0..ROUNDS {
        let policy = policy(round % 4, &mut rng);
        let engine = filled(policy, &mut rng).await;
        for _ in 0..QUERIES_PER_ROUND {
            let (text, needs_scope) = random_query(&mut rng);
            let parameter = random_value(&mut rng).unwrap_or(json!("a"));
            let partition = PARTITIONS[rng.below(PARTITIONS.len() as u64) as usize];
            let scope = match rng.below(3) {
                0 if !needs_scope => Scope::Container,
                0 | 1 => Scope::Partition(partition),
                _ => Scope::Range(rng.below(2).to_string()),
            };
            let mut answers = Vec::new();
            for page_size in PAGE_SIZES {
                let request = QueryRequest {
                    text: text.clone(),
                    parameters: vec![
                        ("@p".into(), parameter.clone()),
                        ("@long".into(), json!(long)),
                    ],
                    partition_key: match scope {
                        Scope::Partition(partition) => pk(partition),
                        _ => None,
                    },
                    range_id: match &scope {
                        Scope::Range(id) => Some(id.clone()),
                        _ => None,
                    },
                    enable_cross_partition: true,
                    page_items_max: Some(page_size),
                    ..QueryRequest::default()
                };
                answers.push(run_case(&engine, request, &mut tally).await);
            }
            // Every page size follows the same order through its continuations.
            if let Some(Some(whole)) = answers.last() {
                for (rows, page_size) in answers.iter().zip(PAGE_SIZES) {
                    if let Some(rows) = rows {
                        assert_eq!(rows, whole, "{text} by {page_size}");
                    }
                }
            }
        }
    }
    println!("{tally:?}");
    // The comparison would hold vacuously if the index served nothing.
    assert!(tally.cases >= 100_000, "{tally:?}");
    assert!(tally.nonempty_pages * 3 > tally.pages, "{tally:?}");
    assert!(tally.index_pages * 4 > tally.pages, "{tally:?}");
    assert!(tally.covered_pages > 1_000, "{tally:?}");
}
