//! ORDER BY pages served by walking the index: every page, followed through its continuations
//! in both directions and at several page sizes, returns exactly the rows the sorted data calls
//! for, loads about what it returns rather than the container, skips expired items, and a
//! filtered walk still re-checks the WHERE clause.

use crate::common::{create_documents, engine_with_container, page};
use lethedb_engine::{Engine, ManualClock, QueryRequest};
use serde_json::{json, Value};
use std::sync::Arc;

const ITEMS: i64 = 60;

/// Items `i0`.. across three partitions; `v` is distinct for most items, with a tie group.
async fn loaded() -> (Engine, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let engine = engine_with_container(
        clock.clone(),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
    )
    .await;
    let mut documents = Vec::new();
    for n in 0..ITEMS {
        let partition = format!("p{}", n % 3);
        // Values interleave with ids, so the sort order is not the key order.
        let v = if n % 10 == 7 { 500 } else { (n * 37) % 101 };
        let body = json!({"id": format!("i{n}"), "pk": partition, "v": v, "odd": n % 2 == 1});
        documents.push(body);
    }
    create_documents(&engine, documents).await;
    (engine, clock)
}

/// Every page of `text` on range 0, following continuations; the ids and each page's
/// documents loaded.
async fn all_pages(engine: &Engine, text: &str, page_items: usize) -> (Vec<String>, Vec<u64>) {
    let container = engine.read_container("db", "c").expect("container");
    let (mut ids, mut loads) = (Vec::new(), Vec::new());
    let mut continuation = None;
    loop {
        let request = QueryRequest {
            text: text.into(),
            range_id: Some("0".into()),
            page_items_max: Some(page_items),
            continuation: continuation.clone(),
            ..QueryRequest::default()
        };
        let result = page(
            engine
                .query_items(&container, &request)
                .await
                .expect("query"),
        );
        loads.push(result.documents_scanned);
        ids.extend(
            result
                .items
                .iter()
                .map(|item| item["id"].as_str().unwrap_or_default().to_string()),
        );
        continuation = result.continuation;
        if continuation.is_none() {
            return (ids, loads);
        }
    }
}

/// The ids sorted by `v` (ties in ascending id order of creation), as the walk must give them.
fn sorted_ids(filter: impl Fn(i64) -> bool, descending: bool) -> Vec<(i64, i64)> {
    let mut rows: Vec<(i64, i64)> = (0..ITEMS)
        .filter(|&n| filter(n))
        .map(|n| (if n % 10 == 7 { 500 } else { (n * 37) % 101 }, n))
        .collect();
    rows.sort();
    if descending {
        rows.reverse();
    }
    rows
}

fn values_of(ids: &[String]) -> Vec<i64> {
    ids.iter()
        .map(|id| {
            let n: i64 = id[1..].parse().expect("id");
            if n % 10 == 7 {
                500
            } else {
                (n * 37) % 101
            }
        })
        .collect()
}

#[tokio::test]
async fn pages_follow_the_sort_order_and_load_about_what_they_return() {
    let (engine, _) = loaded().await;
    for (text, descending) in [
        ("SELECT * FROM c ORDER BY c.v", false),
        ("SELECT * FROM c ORDER BY c.v DESC", true),
    ] {
        for page_items in [1, 4, 7, 100] {
            let (ids, loads) = all_pages(&engine, text, page_items).await;
            let expected = sorted_ids(|_| true, descending);
            let mut got: Vec<String> = ids.clone();
            got.sort();
            got.dedup();
            assert_eq!(
                got.len(),
                ITEMS as usize,
                "{text} by {page_items}: every item once"
            );
            assert_eq!(
                values_of(&ids),
                expected.iter().map(|(v, _)| *v).collect::<Vec<_>>(),
                "{text} by {page_items}"
            );
            // A page loads what it returns, one more to know another exists, and the tie group
            // of ten; never the container.
            if page_items < 10 {
                assert!(
                    loads[0] <= page_items as u64 + 12,
                    "{text}: first page loaded {loads:?}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_walk_rechecks_the_filter_and_skips_expired_items() {
    let (engine, clock) = loaded().await;
    let (ids, _) = all_pages(&engine, "SELECT * FROM c WHERE c.odd ORDER BY c.v", 5).await;
    let expected = sorted_ids(|n| n % 2 == 1, false);
    assert_eq!(
        values_of(&ids),
        expected.iter().map(|(v, _)| *v).collect::<Vec<_>>()
    );
    // A TTL on the container expires every item: the walk finds entries but returns nothing.
    let container = engine.read_container("db", "c").expect("container");
    let body: Value = json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 1});
    engine
        .replace_container("db", "c", body, Some(container.etag().to_string()))
        .await
        .expect("replace");
    clock.advance_ms(2_000);
    let (ids, _) = all_pages(&engine, "SELECT TOP 5 * FROM c ORDER BY c.v", 5).await;
    assert!(ids.is_empty(), "{ids:?}");
}
