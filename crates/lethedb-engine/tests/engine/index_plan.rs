//! The planner through the public API, judged by what the query metrics say was loaded: a
//! selective filter on an indexed path loads its candidates only (an `id` without a partition
//! key included), the same filter on an excluded path or an unselective one scans, each costs
//! accordingly, and an expired item is never returned or counted through the index.

use crate::common::{config, create_documents, engine_on_store, page, pk, resolved};
use lethedb_engine::{Engine, ManualClock, QueryPage, QueryRequest, WriteMode};
use serde_json::{json, Value};
use std::sync::Arc;

const ITEMS: u64 = 400;

/// An engine whose container `c` (partitioned by `/pk`, with `policy`) holds `ITEMS` items of
/// about 1 KiB: `n` unique, `half` 0 or 1, `color` red for one item in 50, one tag of 50,
/// spread over `partitions` partitions (`p0`, `p1`, ...).
async fn filled(policy: Value, clock: Arc<ManualClock>, partitions: u64) -> Engine {
    let store = Arc::new(lethedb_storage::MemoryStore::new());
    let mut container = json!({"id": "c", "partitionKey": {"paths": ["/pk"]}});
    // The service refuses a TTL on a container that indexes nothing.
    if policy["indexingMode"] != "none" {
        container["defaultTtl"] = json!(-1);
    }
    container["indexingPolicy"] = policy;
    let engine = engine_on_store(store, clock, container, config()).await;
    let mut documents = Vec::new();
    for n in 0..ITEMS {
        let partition = format!("p{}", n % partitions);
        let color = if n % 50 == 0 { "red" } else { "blue" };
        let body = json!({"id": format!("i{n}"), "pk": partition, "n": n, "half": n % 2,
            "color": color, "tags": [format!("t{}", n % 50)], "padding": "x".repeat(900)});
        documents.push(body);
    }
    create_documents(&engine, documents).await;
    engine
}

async fn query(engine: &Engine, text: &str, partition: Option<&str>) -> QueryPage {
    let request = QueryRequest {
        text: text.into(),
        parameters: vec![("@id".into(), json!("i123"))],
        partition_key: partition.and_then(pk),
        enable_cross_partition: true,
        populate_query_metrics: true,
        page_items_max: Some(1000),
        ..QueryRequest::default()
    };
    page(
        engine
            .query_items(&resolved(engine, "c"), &request)
            .await
            .unwrap_or_else(|error| panic!("{text}: {error:?}")),
    )
}

fn retrieved(page: &QueryPage) -> u64 {
    page.metrics.as_ref().expect("metrics").documents_retrieved
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(1_800_000_000_000))
}

#[tokio::test]
async fn a_selective_filter_loads_only_its_candidates() {
    let engine = filled(json!({"includedPaths": [{"path": "/*"}]}), clock(), 20).await;
    // (query, results, documents loaded)
    let cases = [
        ("SELECT * FROM c WHERE c.n = 7", 1, 1),
        ("SELECT * FROM c WHERE c.id = @id", 1, 1),
        ("SELECT * FROM c WHERE c.n IN (3, 5, 9999)", 2, 2),
        ("SELECT * FROM c WHERE c.n >= 390", 10, 10),
        // The most selective conjunct drives; the other is checked on its candidates.
        (
            "SELECT * FROM c WHERE c.n BETWEEN 10 AND 14 AND c.half = 0",
            3,
            5,
        ),
        ("SELECT * FROM c WHERE c.color = 'red'", 8, 8),
        // The red items' candidates, narrowed by the entries of `n < 30` (few enough to read).
        ("SELECT * FROM c WHERE c.n < 30 AND c.color = 'red'", 1, 1),
        ("SELECT * FROM c WHERE STARTSWITH(c.id, 'i39')", 11, 11),
        ("SELECT * FROM c WHERE c.color = 'red' OR c.n = 1", 9, 9),
        ("SELECT * FROM c WHERE ARRAY_CONTAINS(c.tags, 't3')", 8, 8),
    ];
    for (text, results, loaded) in cases {
        let found = query(&engine, text, None).await;
        assert_eq!(found.items.len(), results, "{text}");
        assert!(found.index_lookups >= 1, "{text} scanned");
        assert_eq!(retrieved(&found), loaded, "{text}");
        println!(
            "{text}: {} loaded, {} returned, {} RU",
            retrieved(&found),
            found.items.len(),
            found.request_charge
        );
    }
    // Scoped to one partition of 20 items, a single candidate is still worth a seek.
    let scoped = query(&engine, "SELECT * FROM c WHERE c.n = 7", Some("p7")).await;
    assert_eq!(scoped.items.len(), 1);
    assert_eq!((scoped.index_lookups, retrieved(&scoped)), (1, 1));
    let elsewhere = query(&engine, "SELECT * FROM c WHERE c.n = 7", Some("p8")).await;
    assert!(elsewhere.items.is_empty());
    assert_eq!(retrieved(&elsewhere), 0);
    // Eight candidates in the container are not worth reading for a partition of 20 items:
    // the partition is scanned.
    let tagged = "SELECT * FROM c WHERE ARRAY_CONTAINS(c.tags, 't3')";
    let partition = query(&engine, tagged, Some("p3")).await;
    assert_eq!(partition.items.len(), 4);
    assert_eq!((partition.index_lookups, retrieved(&partition)), (0, 20));
    // The partition key's own conjunct names the whole partition: the other one drives, or
    // the partition is scanned (the bench's filter within one partition).
    let pinned = "SELECT * FROM c WHERE c.pk = 'p7' AND c.n = 7";
    let pinned = query(&engine, pinned, Some("p7")).await;
    assert_eq!((pinned.index_lookups, retrieved(&pinned)), (1, 1));
    let half = "SELECT * FROM c WHERE c.pk = 'p7' AND c.half = 1";
    let half = query(&engine, half, Some("p7")).await;
    assert_eq!(half.items.len(), 20);
    assert_eq!((half.index_lookups, retrieved(&half)), (0, 20));
}

#[tokio::test]
async fn an_unselective_or_unindexed_filter_scans_and_costs_more() {
    let engine = filled(json!({"includedPaths": [{"path": "/*"}]}), clock(), 20).await;
    let half = query(&engine, "SELECT * FROM c WHERE c.half = 0", None).await;
    assert_eq!(half.items.len(), 200);
    assert_eq!((half.index_lookups, retrieved(&half)), (0, ITEMS));
    let seek = query(&engine, "SELECT * FROM c WHERE c.n = 7", None).await;
    let excluded = filled(
        json!({"includedPaths": [{"path": "/*"}], "excludedPaths": [{"path": "/n/?"}]}),
        clock(),
        20,
    )
    .await;
    let scan = query(&excluded, "SELECT * FROM c WHERE c.n = 7", None).await;
    assert_eq!(scan.items, seek.items);
    assert_eq!((scan.index_lookups, retrieved(&scan)), (0, ITEMS));
    println!(
        "c.n = 7: indexed {} loaded, {} RU; excluded {} loaded, {} RU",
        retrieved(&seek),
        seek.request_charge,
        retrieved(&scan),
        scan.request_charge
    );
    assert!(seek.request_charge < 3.0, "{}", seek.request_charge);
    assert!(
        scan.request_charge > 3.0 * seek.request_charge,
        "{} against {}",
        scan.request_charge,
        seek.request_charge
    );
    // Indexing mode none: every filter scans.
    let none = filled(json!({"indexingMode": "none"}), clock(), 20).await;
    let by_id = query(&none, "SELECT * FROM c WHERE c.id = @id", None).await;
    assert_eq!(by_id.items.len(), 1);
    assert_eq!((by_id.index_lookups, retrieved(&by_id)), (0, ITEMS));
}

#[tokio::test]
async fn expired_items_are_never_returned_or_counted_through_the_index() {
    let clock = clock();
    // One partition, so that an ORDER BY or an aggregate needs no client pipeline.
    let engine = filled(
        json!({"includedPaths": [{"path": "/*"}]}),
        Arc::clone(&clock),
        1,
    )
    .await;
    // Two of the eight red items get a TTL and expire; the sweeper never runs, so their
    // versions and index entries are still stored.
    for n in [0u64, 100] {
        let partition = "p0".to_string();
        let body = json!({"id": format!("i{n}"), "pk": partition, "n": n, "half": n % 2,
            "color": "red", "ttl": 5});
        engine
            .write_item(
                &resolved(&engine, "c"),
                WriteMode::Replace(format!("i{n}")),
                pk(&partition),
                body,
                None,
            )
            .await
            .expect("replace");
    }
    clock.advance_ms(6_000);
    let red = query(
        &engine,
        "SELECT VALUE c.n FROM c WHERE c.color = 'red' ORDER BY c.n DESC",
        Some("p0"),
    )
    .await;
    assert!(red.index_lookups >= 1);
    assert_eq!(
        red.items,
        [
            json!(350),
            json!(300),
            json!(250),
            json!(200),
            json!(150),
            json!(50)
        ]
    );
    // Expired candidates are not even loaded: the header decides.
    assert_eq!(retrieved(&red), 6);
    let counted = query(
        &engine,
        "SELECT VALUE COUNT(1) FROM c WHERE c.color = 'red'",
        Some("p0"),
    )
    .await;
    assert!(counted.index_lookups >= 1);
    assert_eq!(counted.items, [json!(6)]);
    assert_eq!(retrieved(&counted), 6);
    let check = engine
        .check_index(&resolved(&engine, "c"))
        .await
        .expect("check");
    assert!(check.is_consistent(), "{check:?}");
}
