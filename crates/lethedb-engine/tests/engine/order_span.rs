//! ORDER BY pages with a filter: a composite index whose leading components the filter's
//! equalities fix serves the ORDER BY by walking only that span (loading about what a page
//! returns, whatever the other categories hold), a composite whose first component is
//! descending is walked too, a one-key ORDER BY walked through a composite still sorts arrays
//! and objects as the range index does and leaves out the items without the value, and a
//! selective filter on another path loads its candidates instead. Each query runs on an engine
//! in verify mode, which compares every access with the scan, and on one without, whose loads
//! show the access the planner chose.

use crate::common::{create_documents, engine_on_store, page, pk, resolved};
use lethedb_engine::{Engine, EngineConfig, ManualClock, QueryRequest};
use serde_json::{json, Value};
use std::sync::Arc;

const ITEMS: i64 = 90;

/// Items across three partitions and three categories; `v` interleaves with the ids, a few
/// items have no `v`, an array `v` or an object `v`.
async fn loaded(composites: Value, verify: bool) -> Engine {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let store = Arc::new(lethedb_storage::MemoryStore::new());
    let container = json!({"id": "c", "partitionKey": {"paths": ["/pk"]},
        "indexingPolicy": {"compositeIndexes": composites}});
    let config = EngineConfig {
        query_verify: verify,
        ..crate::common::config()
    };
    let engine = engine_on_store(store, clock, container, config).await;
    let mut documents = Vec::new();
    for n in 0..ITEMS {
        let partition = format!("p{}", n % 3);
        let mut body = json!({"id": format!("i{n}"), "pk": partition, "cat": format!("k{}", n % 2),
            "n": n});
        match n % 15 {
            4 => body["v"] = Value::Null,
            5 => body["v"] = json!([n]),
            6 => body["v"] = json!({"x": n}),
            7 => {}
            _ => body["v"] = json!((n * 37) % 101),
        }
        documents.push(body);
    }
    create_documents(&engine, documents).await;
    engine
}

/// Every page of `text` across the container, following continuations: the items and each
/// page's documents loaded and index lookups.
async fn all_pages(engine: &Engine, text: &str, page_items: usize) -> (Vec<Value>, Vec<u64>) {
    let container = resolved(engine, "c");
    let (mut items, mut loads) = (Vec::new(), Vec::new());
    let mut continuation = None;
    loop {
        let request = QueryRequest {
            text: text.into(),
            partition_key: pk("p1"),
            page_items_max: Some(page_items),
            continuation: continuation.clone(),
            ..QueryRequest::default()
        };
        let result = page(engine.query_items(&container, &request).await.expect(text));
        loads.push(result.documents_scanned);
        items.extend(result.items);
        continuation = result.continuation;
        if continuation.is_none() {
            return (items, loads);
        }
    }
}

fn ns(items: &[Value]) -> Vec<i64> {
    items
        .iter()
        .map(|item| item["n"].as_i64().unwrap_or(-1))
        .collect()
}

/// The items of partition `p1` with category `k0`, sorted by `v` as a one-key ORDER BY on a
/// wildcard path sorts them: without the items that lack `v`, arrays and objects after
/// numbers, ties in `_rid` (creation) order in the first key's direction.
fn expected(descending: bool) -> Vec<i64> {
    let rank = |n: i64| match n % 15 {
        4 => (0, 0),
        5 => (2, n),
        6 => (3, n),
        _ => (1, (n * 37) % 101),
    };
    let mut rows: Vec<i64> = (0..ITEMS)
        .filter(|n| n % 3 == 1 && n % 2 == 0 && n % 15 != 7)
        .collect();
    rows.sort_by_key(|n| (rank(*n), *n));
    if descending {
        rows.reverse();
    }
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_equality_prefix_walks_only_its_span_of_a_composite() {
    for composites in [
        json!([[{"path": "/cat"}, {"path": "/v"}]]),
        json!([[{"path": "/cat", "order": "descending"}, {"path": "/v", "order": "descending"}]]),
    ] {
        let verified = loaded(composites.clone(), true).await;
        let engine = loaded(composites.clone(), false).await;
        for (text, descending) in [
            ("SELECT * FROM c WHERE c.cat = 'k0' ORDER BY c.v", false),
            ("SELECT * FROM c WHERE c.cat = 'k0' ORDER BY c.v DESC", true),
        ] {
            for page_items in [1, 3, 100] {
                let (items, loads) = all_pages(&engine, text, page_items).await;
                assert_eq!(ns(&items), expected(descending), "{composites} {text}");
                let (items, _) = all_pages(&verified, text, page_items).await;
                assert_eq!(ns(&items), expected(descending), "{composites} {text}");
                if page_items == 3 && !descending {
                    // The first page loads its rows and the next value's, not the other
                    // category's items: a walk of `/v` alone would meet them too.
                    assert!(loads[0] <= 6, "{composites} {text}: loaded {loads:?}");
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_by_on_the_fixed_path_and_the_next_walks_the_span() {
    let composites = json!([[{"path": "/cat"}, {"path": "/v"}]]);
    let engine = loaded(composites.clone(), false).await;
    let text = "SELECT * FROM c WHERE c.cat = 'k0' ORDER BY c.cat, c.v";
    let (items, loads) = all_pages(&engine, text, 2).await;
    let (verified, _) = all_pages(&loaded(composites, true).await, text, 2).await;
    assert_eq!(items, verified);
    // A composite ORDER BY treats arrays and objects as undefined: first, and with the items
    // that lack `v`.
    let rank = |n: i64| match n % 15 {
        5..=7 => (0, 0),
        4 => (1, 0),
        _ => (2, (n * 37) % 101),
    };
    let mut rows: Vec<i64> = (0..ITEMS).filter(|n| n % 3 == 1 && n % 2 == 0).collect();
    rows.sort_by_key(|n| (rank(*n), *n));
    assert_eq!(ns(&items), rows, "{text}");
    // Each page re-reads the sort value it resumes at, never the rest of the category.
    assert!(
        loads.iter().all(|loads| *loads <= 7),
        "{text}: loaded {loads:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selective_filter_on_another_path_loads_its_candidates() {
    let engine = loaded(json!([[{"path": "/cat"}, {"path": "/v"}]]), false).await;
    let container = resolved(&engine, "c");
    let request = QueryRequest {
        text: "SELECT * FROM c WHERE c.n = 31 ORDER BY c.v".into(),
        partition_key: pk("p1"),
        ..QueryRequest::default()
    };
    let result = page(
        engine
            .query_items(&container, &request)
            .await
            .expect("query"),
    );
    assert_eq!(ns(&result.items), vec![31]);
    assert!(result.index_lookups > 0, "{result:?}");
    assert_eq!(result.documents_scanned, 1, "{result:?}");
}
