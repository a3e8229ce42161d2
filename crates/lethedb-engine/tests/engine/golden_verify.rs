//! Every golden query of the query crate (`lethedb-query/tests/golden/`), over its dataset
//! stored in a container, through an engine in verify mode at several page sizes: each page an
//! index can serve runs through the index and as a scan, and a difference fails the test. The
//! results themselves are the query crate's golden test's business (the engine adds system
//! properties); what this checks is that the two plans never disagree.

use crate::common::{engine_on_store, resolved};
use lethedb_engine::{EngineConfig, ErrorCode, ManualClock, QueryOutcome, QueryRequest, WriteMode};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// One golden case: its dataset, query text and parameters.
struct Case {
    dataset: String,
    query: String,
    parameters: Vec<(String, Value)>,
}

/// The cases of one `.cases` file (the format is described in the query crate's `golden.rs`).
fn cases(text: &str) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    let mut dataset = String::from("empty");
    let mut key = "";
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix("dataset:") {
            dataset = name.trim().to_string();
            key = "";
        } else if let Some(query) = line.strip_prefix("query:") {
            out.push(Case {
                dataset: dataset.clone(),
                query: query.trim().to_string(),
                parameters: Vec::new(),
            });
            key = "query";
        } else if let Some(parameters) = line.strip_prefix("params:") {
            if let (Some(case), Ok(Value::Object(map))) =
                (out.last_mut(), serde_json::from_str(parameters.trim()))
            {
                case.parameters = map.into_iter().collect();
            }
            key = "params";
        } else if ["expect:", "unordered:", "error:"]
            .iter()
            .any(|prefix| line.starts_with(prefix))
        {
            key = "other";
        } else if key == "query" {
            if let Some(case) = out.last_mut() {
                case.query.push('\n');
                case.query.push_str(line);
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_plan_and_the_scan_agree_on_every_golden_query() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lethedb-query/tests/golden");
    let mut by_dataset: BTreeMap<String, Vec<Case>> = BTreeMap::new();
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .expect("golden folder")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "cases"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("cases");
        for case in cases(&text) {
            by_dataset
                .entry(case.dataset.clone())
                .or_default()
                .push(case);
        }
    }
    let (mut pages, mut index_pages) = (0u64, 0u64);
    for (dataset, cases) in &by_dataset {
        // `empty` names no file: no documents.
        let documents: Vec<Value> =
            std::fs::read_to_string(root.join(format!("datasets/{dataset}.json")))
                .map(|text| serde_json::from_str(&text).expect("dataset json"))
                .unwrap_or_default();
        let config = EngineConfig {
            query_verify: true,
            ..crate::common::config()
        };
        let engine = engine_on_store(
            Arc::new(lethedb_storage::MemoryStore::new()),
            Arc::new(ManualClock::new(1_704_164_645_678)),
            serde_json::json!({"id": "c", "partitionKey": {"paths": ["/id"]}}),
            config,
        )
        .await;
        let container = resolved(&engine, "c");
        for document in documents {
            let partition = document["id"].as_str().and_then(crate::common::pk);
            engine
                .write_item(&container, WriteMode::Create, partition, document, None)
                .await
                .expect("create");
        }
        for case in cases {
            for page_size in [1, 3, 1000] {
                let mut request = QueryRequest {
                    text: case.query.clone(),
                    parameters: case.parameters.clone(),
                    range_id: Some("0".into()),
                    page_items_max: Some(page_size),
                    ..QueryRequest::default()
                };
                for _ in 0..100 {
                    let page = match engine.query_items(&container, &request).await {
                        Ok(QueryOutcome::Page(page)) => page,
                        Ok(QueryOutcome::NeedsClientPipeline(_)) => break,
                        Err(error) if error.code == ErrorCode::Internal => {
                            panic!("{}: {}", case.query, error.message())
                        }
                        Err(_) => break,
                    };
                    pages += 1;
                    index_pages += u64::from(page.index_lookups > 0);
                    match page.continuation {
                        Some(token) => request.continuation = Some(token),
                        None => break,
                    }
                }
            }
        }
    }
    println!("{pages} pages, {index_pages} through the index");
    assert!(by_dataset.values().map(Vec::len).sum::<usize>() > 500);
    assert!(index_pages > 100, "{index_pages} of {pages}");
}
