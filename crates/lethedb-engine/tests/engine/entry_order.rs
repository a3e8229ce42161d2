//! Pages of a selective filter served in the order of its index entries: followed through
//! their continuations at several page sizes, they return every matching row once, in entry
//! order (value, then creation), each page loading about what it returns rather than every
//! candidate; and a policy change between two pages (the index not ready, or no longer
//! holding the path) neither skips nor repeats a row.

use crate::common::{create_documents, engine_with_container, page, resolved};
use crate::index_build::{build_to_the_end, replace_policy};
use lethedb_engine::{Engine, ManualClock, QueryRequest};
use serde_json::json;
use std::sync::Arc;

const ITEMS: u64 = 400;

/// `v` of item `n`: two items for each value in 0..200, created far apart.
fn value_of(n: u64) -> u64 {
    (n * 37) % 200
}

async fn loaded() -> Engine {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let engine = engine_with_container(
        clock,
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
    )
    .await;
    let mut documents = Vec::new();
    for n in 0..ITEMS {
        let partition = format!("p{}", n % 3);
        let body = json!({"id": format!("i{n}"), "pk": partition, "v": value_of(n)});
        documents.push(body);
    }
    create_documents(&engine, documents).await;
    engine
}

/// One page of `text` on range 0: its ids, documents loaded, index ranges read and token.
async fn one_page(
    engine: &Engine,
    text: &str,
    page_items: usize,
    continuation: Option<String>,
) -> (Vec<u64>, u64, u64, Option<String>) {
    let request = QueryRequest {
        text: text.into(),
        range_id: Some("0".into()),
        page_items_max: Some(page_items),
        continuation,
        ..QueryRequest::default()
    };
    let result = page(
        engine
            .query_items(&resolved(engine, "c"), &request)
            .await
            .expect("query"),
    );
    let ids = result
        .items
        .iter()
        .map(|item| {
            let id = item["id"].as_str().expect("id");
            id[1..].parse().expect("number")
        })
        .collect();
    (
        ids,
        result.documents_scanned,
        result.index_lookups,
        result.continuation,
    )
}

/// The items with `v < 20`, in entry order: by value, then by creation.
fn expected() -> Vec<u64> {
    let mut rows: Vec<(u64, u64)> = (0..ITEMS)
        .filter(|&n| value_of(n) < 20)
        .map(|n| (value_of(n), n))
        .collect();
    rows.sort();
    rows.into_iter().map(|(_, n)| n).collect()
}

const TEXT: &str = "SELECT c.id FROM c WHERE c.v < 20";

#[tokio::test]
async fn pages_come_in_entry_order_and_load_about_what_they_return() {
    let engine = loaded().await;
    for page_items in [1, 3, 7, 100] {
        let (mut ids, mut continuation) = (Vec::new(), None);
        loop {
            let (page, loaded, lookups, next) =
                one_page(&engine, TEXT, page_items, continuation).await;
            assert!(lookups > 0, "the index serves every page");
            // The page and the one result it looks ahead for.
            assert!(
                loaded <= page_items as u64 + 1,
                "by {page_items}: loaded {loaded}"
            );
            ids.extend(page);
            continuation = next;
            if continuation.is_none() {
                break;
            }
        }
        assert_eq!(ids, expected(), "by {page_items}");
    }
}

#[tokio::test]
async fn a_policy_change_between_pages_neither_skips_nor_repeats_a_row() {
    let policies = [
        // The index is not ready until the rebuild runs.
        (
            json!({"compositeIndexes": [[{"path": "/pk"}, {"path": "/v"}]]}),
            false,
        ),
        // The rebuilt index no longer holds the path.
        (
            json!({"includedPaths": [{"path": "/*"}], "excludedPaths": [{"path": "/v/?"}]}),
            true,
        ),
    ];
    for (policy, rebuild) in policies {
        let engine = loaded().await;
        let (mut ids, _, lookups, mut continuation) = one_page(&engine, TEXT, 7, None).await;
        assert!(lookups > 0, "the first page reads the index");
        replace_policy(&engine, policy.clone(), None).await;
        if rebuild {
            build_to_the_end(&engine, 1000).await;
        }
        while let Some(token) = continuation {
            let (page, _, lookups, next) = one_page(&engine, TEXT, 7, Some(token)).await;
            assert_eq!(lookups, 0, "{policy}: the index cannot serve the page");
            ids.extend(page);
            continuation = next;
        }
        assert_eq!(ids, expected(), "{policy}");
    }
}
