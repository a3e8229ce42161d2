//! A streamed query (no ORDER BY, GROUP BY, DISTINCT or aggregate) over a range or the whole
//! container returns its items in document (`_rid`) order, as the service does, page after
//! page and with or without the verify mode; a replaced item keeps its place. A query of one
//! logical partition keeps the item-key order of its scan.

use crate::common::{config, engine_on_store, page, pk, resolved};
use lethedb_engine::{Engine, ManualClock, QueryRequest, WriteMode};
use lethedb_storage::MemoryStore;
use serde_json::{json, Value};
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

async fn upsert(engine: &Engine, body: Value) {
    let partition = body["pk"].as_str().map(str::to_string);
    engine
        .write_item(
            &resolved(engine, "c"),
            WriteMode::Upsert,
            partition.as_deref().and_then(pk),
            body,
            None,
        )
        .await
        .expect("write");
}

/// Every id `text` returns in range `range` (or in partition `partition`), two per page.
async fn ids(
    engine: &Engine,
    text: &str,
    range: Option<&str>,
    partition: Option<&str>,
) -> Vec<String> {
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
        found.extend(
            page.items
                .iter()
                .map(|item| item["id"].as_str().unwrap_or_default().to_string()),
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
            upsert(&engine, json!({"id": id, "pk": partition, "n": position})).await;
            clock.advance_ms(1);
        }
        // A replace keeps the document's place.
        upsert(&engine, json!({"id": "f", "pk": "p", "n": 99})).await;
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
        // Across the container, under a filter no index serves, the order is the same.
        let filtered = ids(&engine, "SELECT * FROM c WHERE c.n + 0 >= 0", None, None).await;
        assert_eq!(filtered, IDS, "verify {verify}");
        // One partition's query scans its keys: id order.
        let partition = ids(&engine, "SELECT * FROM c", None, Some("p")).await;
        assert_eq!(partition, ["b", "d", "f"], "verify {verify}");
    }
}
