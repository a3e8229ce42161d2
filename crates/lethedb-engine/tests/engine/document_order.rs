//! A streamed query (no ORDER BY, GROUP BY, DISTINCT or aggregate) over one range returns its
//! items in document (`_rid`) order, as the service does, page after page and with or without
//! the verify mode; a replaced item keeps its place. A query of one logical partition keeps the
//! item-key order of its scan. Across the ranges of a container, each page holds one range's
//! items, as the service's gateway pages such a query.

use crate::common::{config, engine_on_store, page, pk, resolved, upsert_document};
use lethedb_engine::{Engine, ManualClock, QueryRequest};
use lethedb_storage::MemoryStore;
use serde_json::json;
use std::sync::Arc;

/// Ids in the order they are created: descending, so item-key (id) order is the reverse.
const IDS: [&str; 6] = ["f", "e", "d", "c", "b", "a"];

async fn engine(verify: bool) -> (Engine, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let config = lethedb_engine::EngineConfig {
        partition_key_ranges: Some(3),
        query_verify: verify,
        ..config()
    };
    let engine = engine_on_store(
        Arc::new(MemoryStore::new()),
        Arc::clone(&clock),
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}),
        config,
    )
    .await;
    (engine, clock)
}

/// Every id `text` returns in range `range` (or in partition `partition`), two per page.
async fn ids(
    engine: &Engine,
    text: &str,
    range: Option<&str>,
    partition: Option<&str>,
) -> Vec<String> {
    pages(engine, text, range, partition).await.concat()
}

/// The ids of each page `text` returns in range `range` (or in partition `partition`), two
/// per page.
async fn pages(
    engine: &Engine,
    text: &str,
    range: Option<&str>,
    partition: Option<&str>,
) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut continuation: Option<String> = None;
    loop {
        let request = QueryRequest {
            text: text.into(),
            enable_cross_partition: true,
            range_id: range.map(str::to_string),
            partition_key: partition.and_then(pk),
            page_items_max: Some(2),
            continuation: continuation.clone(),
            ..QueryRequest::default()
        };
        let outcome = engine
            .query_items(&resolved(engine, "c"), &request)
            .await
            .unwrap_or_else(|error| panic!("{text}: {error}"));
        let page = page(outcome);
        found.push(
            page.items
                .iter()
                .map(|item| item["id"].as_str().unwrap_or_default().to_string())
                .collect(),
        );
        match page.continuation {
            Some(token) => continuation = Some(token),
            None => return found,
        }
    }
}

#[tokio::test]
async fn a_streamed_query_of_a_range_returns_documents_in_creation_order() {
    for verify in [false, true] {
        let (engine, clock) = engine(verify).await;
        // Two partitions of two ids each, created interleaved.
        for (position, id) in IDS.iter().enumerate() {
            let partition = if position % 2 == 0 { "p" } else { "q" };
            upsert_document(&engine, json!({"id": id, "pk": partition, "n": position})).await;
            clock.advance_ms(1);
        }
        // A replace keeps the document's place.
        upsert_document(&engine, json!({"id": "f", "pk": "p", "n": 99})).await;
        let mut seen = Vec::new();
        for range in ["0", "1", "2"] {
            let found = ids(&engine, "SELECT * FROM c", Some(range), None).await;
            let in_creation_order: Vec<String> = IDS
                .iter()
                .filter(|id| found.contains(&id.to_string()))
                .map(ToString::to_string)
                .collect();
            assert_eq!(found, in_creation_order, "range {range}, verify {verify}");
            seen.extend(found);
        }
        seen.sort();
        assert_eq!(seen, ["a", "b", "c", "d", "e", "f"], "verify {verify}");
        // One partition's query scans its keys: id order.
        let partition = ids(&engine, "SELECT * FROM c", None, Some("p")).await;
        assert_eq!(partition, ["b", "d", "f"], "verify {verify}");
    }
}

#[tokio::test]
async fn a_streamed_query_across_ranges_pages_one_range_at_a_time() {
    for verify in [false, true] {
        let (engine, clock) = engine(verify).await;
        for number in 0..12 {
            let partition = format!("p{number}");
            upsert_document(
                &engine,
                json!({"id": format!("i{number}"), "pk": partition}),
            )
            .await;
            clock.advance_ms(1);
        }
        let mut ranges = Vec::new();
        for range in ["0", "1", "2"] {
            ranges.push(ids(&engine, "SELECT * FROM c", Some(range), None).await);
        }
        assert!(ranges.iter().all(|ids| !ids.is_empty()), "{ranges:?}");
        let across = pages(&engine, "SELECT * FROM c", None, None).await;
        let mut owners = Vec::new();
        for page in &across {
            assert!(!page.is_empty() && page.len() <= 2, "{across:?}");
            let owner = ranges.iter().position(|ids| ids.contains(&page[0]));
            assert!(
                page.iter()
                    .all(|id| owner.is_some_and(|owner| ranges[owner].contains(id))),
                "a page holds one range's items: {across:?} of {ranges:?}, verify {verify}"
            );
            owners.push(owner);
        }
        // The ranges come in order, and every item once.
        let mut in_order = owners.clone();
        in_order.sort();
        assert_eq!(owners, in_order, "verify {verify}");
        let mut seen = across.concat();
        seen.sort();
        let mut all = ranges.concat();
        all.sort();
        assert_eq!(seen, all, "verify {verify}");
    }
}
