//! Aggregates answered from the index without loading documents: `COUNT(1)` of a filter made
//! of served conjuncts (in a partition, a range, the whole container, and in the shape the
//! SDKs' pipelines send per range), `MIN` and `MAX` of an indexed path (a numeric extreme loads
//! the one document that spells it), each equal to what the scan gives (the engines run in
//! verify mode, which recomputes every covered page by scan). And where the index must not
//! answer: an expired item not yet purged, an extreme that is a cut text, a filter on a path
//! the policy excludes.

use crate::common::{create_documents, engine_on_store, page, pk, resolved};
use lethedb_engine::{Engine, EngineConfig, ManualClock, QueryPage, QueryRequest, WriteMode};
use serde_json::{json, Value};
use std::sync::Arc;

const ITEMS: i64 = 60;

/// Items across three partitions (two physical ranges): `cat` in `k0`..`k3`, a number `p`
/// (with `-7` spelled `-7.0` once, after a `-7` in the same partition), a short `name`, and `long` texts that share
/// their first 128 bytes.
async fn loaded(container: Value) -> (Engine, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let store = Arc::new(lethedb_storage::MemoryStore::new());
    let config = EngineConfig {
        query_verify: true,
        partition_key_ranges: Some(2),
        ..crate::common::config()
    };
    let engine = engine_on_store(store, clock.clone(), container, config).await;
    let mut documents = Vec::new();
    for n in 0..ITEMS {
        let partition = format!("p{}", n % 3);
        let mut body = json!({"id": format!("i{n}"), "pk": partition, "cat": format!("k{}", n % 4),
            "p": (n * 37) % 101 - 50, "name": format!("n{:02}", (n * 7) % 60),
            "long": format!("{}{}", "x".repeat(130), n % 5)});
        if n == 43 {
            body["p"] = json!(-7.0);
        }
        if n == 40 {
            body["p"] = json!(-7);
        }
        documents.push(body);
    }
    create_documents(&engine, documents).await;
    (engine, clock)
}

fn container() -> Value {
    json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": -1,
        "indexingPolicy": {"includedPaths": [{"path": "/*"}],
            "excludedPaths": [{"path": "/hidden/?"}]}})
}

async fn query(
    engine: &Engine,
    text: &str,
    partition: Option<&str>,
    range: Option<&str>,
) -> QueryPage {
    let request = QueryRequest {
        text: text.into(),
        partition_key: partition.and_then(pk),
        range_id: range.map(str::to_string),
        enable_cross_partition: true,
        populate_query_metrics: true,
        ..QueryRequest::default()
    };
    page(
        engine
            .query_items(&resolved(engine, "c"), &request)
            .await
            .expect(text),
    )
}

fn loaded_documents(page: &QueryPage) -> u64 {
    page.metrics
        .as_ref()
        .map_or(u64::MAX, |metrics| metrics.documents_retrieved)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_of_served_conjuncts_loads_no_document() {
    let (engine, _) = loaded(container()).await;
    let k1 = |n: &i64| n % 4 == 1;
    for (text, partition, range, expected) in [
        (
            "SELECT VALUE COUNT(1) FROM c WHERE c.cat = 'k1'",
            None,
            Some("0"),
            None,
        ),
        (
            "SELECT VALUE COUNT(1) FROM c WHERE c.cat = 'k1'",
            Some("p2"),
            None,
            Some((0..ITEMS).filter(|n| k1(n) && n % 3 == 2).count()),
        ),
        (
            "SELECT VALUE [{\"item\": COUNT(1)}] FROM c WHERE c.cat = 'k1' AND c.p > 0",
            None,
            Some("1"),
            None,
        ),
        ("SELECT VALUE COUNT(1) FROM c", None, Some("0"), None),
        (
            "SELECT COUNT(1) AS n FROM c WHERE c.cat IN ('k1', 'k2') AND STARTSWITH(c.name, 'n1')",
            Some("p0"),
            None,
            None,
        ),
    ] {
        let result = query(&engine, text, partition, range).await;
        assert_eq!(loaded_documents(&result), 0, "{text}: {result:?}");
        assert_eq!(result.documents_scanned, 0, "{text}");
        assert!(result.index_lookups > 0, "{text}");
        if let Some(expected) = expected {
            assert_eq!(result.items, vec![json!(expected)], "{text}");
        }
    }
    // An item without the partition key is in the undefined partition, where the key's own
    // entries name nothing.
    let undefined = || lethedb_engine::PartitionKeyValue::parse_json_text("[{}]").ok();
    let item = json!({"id": "keyless", "cat": "k1"});
    engine
        .write_item(
            &resolved(&engine, "c"),
            WriteMode::Create,
            undefined(),
            item,
            None,
        )
        .await
        .expect("create");
    let request = QueryRequest {
        text: "SELECT VALUE COUNT(1) FROM c WHERE c.cat = 'k1'".into(),
        partition_key: undefined(),
        ..QueryRequest::default()
    };
    let keyless = page(
        engine
            .query_items(&resolved(&engine, "c"), &request)
            .await
            .expect("keyless"),
    );
    assert_eq!(keyless.items, vec![json!(1)]);
    let mut total = 0;
    for range in ["0", "1"] {
        let text = "SELECT VALUE COUNT(1) FROM c WHERE c.cat = 'k1'";
        total += query(&engine, text, None, Some(range)).await.items[0]
            .as_i64()
            .unwrap_or(-1);
    }
    assert_eq!(total, ITEMS / 4 + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_and_max_come_from_the_ends_of_the_index() {
    let (engine, _) = loaded(container()).await;
    let text = "SELECT MIN(c.name) AS low, MAX(c.name) AS high FROM c";
    let names = query(&engine, text, Some("p1"), None).await;
    let p1 = || (0..ITEMS).filter(|n| n % 3 == 1);
    let spelled: Vec<String> = p1().map(|n| format!("n{:02}", (n * 7) % 60)).collect();
    let low = spelled.iter().min().cloned();
    let high = spelled.iter().max().cloned();
    assert_eq!(names.items, vec![json!({"low": low, "high": high})]);
    assert_eq!(loaded_documents(&names), 0);
    // A number is read from the one document that spells it.
    let text = "SELECT VALUE MAX(c.p) FROM c WHERE c.cat = 'k0'";
    let numbers = query(&engine, text, Some("p1"), None).await;
    let expected = p1()
        .filter(|n| n % 4 == 0 && *n != 40)
        .map(|n| (n * 37) % 101 - 50)
        .max();
    assert_eq!(numbers.items, vec![json!(expected)]);
    assert_eq!(loaded_documents(&numbers), 1);
    // `-7` (i40) and `-7.0` (i43) tie; the scan keeps the first in key order, and so does the
    // index's answer (verify mode compares the spellings too).
    let text = "SELECT VALUE MIN(c.p) FROM c WHERE c.p >= -7";
    let tie = query(&engine, text, Some("p1"), None).await;
    assert_eq!(tie.items, vec![json!(-7)]);
    assert_eq!(loaded_documents(&tie), 1);
    // The SDKs' per-range shape of MIN.
    let text = "SELECT VALUE [{\"item\": MIN(c.p), \"item2\": {\"min\": MIN(c.p), \"count\": COUNT(c.p)}}] FROM c";
    let partial = query(&engine, text, None, Some("0")).await;
    assert_eq!(loaded_documents(&partial), 1, "{partial:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_does_not_answer_what_it_cannot_answer_exactly() {
    let (engine, clock) = loaded(container()).await;
    // A cut text: every `long` shares its first 128 bytes.
    let long = query(&engine, "SELECT VALUE MAX(c.long) FROM c", Some("p0"), None).await;
    assert_eq!(long.items, vec![json!(format!("{}4", "x".repeat(130)))]);
    assert_eq!(loaded_documents(&long), (ITEMS / 3) as u64);
    let long = query(&engine, "SELECT VALUE MIN(c.long) FROM c", Some("p0"), None).await;
    assert_eq!(long.items, vec![json!(format!("{}0", "x".repeat(130)))]);
    assert_eq!(loaded_documents(&long), (ITEMS / 3) as u64);
    // A conjunct on an excluded path.
    let text = "SELECT VALUE COUNT(1) FROM c WHERE c.hidden = 1";
    let hidden = query(&engine, text, Some("p0"), None).await;
    assert_eq!(hidden.items, vec![json!(0)]);
    assert_eq!(loaded_documents(&hidden), (ITEMS / 3) as u64);
    // A conjunct that is not served.
    let lower = "SELECT VALUE COUNT(1) FROM c WHERE c.cat = 'k1' AND LOWER(c.name) = 'n01'";
    assert!(loaded_documents(&query(&engine, lower, Some("p0"), None).await) > 0);
    // An item that expired and waits for the sweeper: the index still holds its entries.
    let item = json!({"id": "brief", "pk": "p0", "cat": "k1", "p": 1000, "ttl": 1});
    engine
        .write_item(
            &resolved(&engine, "c"),
            WriteMode::Create,
            pk("p0"),
            item,
            None,
        )
        .await
        .expect("create");
    let k1 = (0..ITEMS).filter(|n| n % 4 == 1 && n % 3 == 0).count();
    let text = "SELECT VALUE COUNT(1) FROM c WHERE c.cat = 'k1'";
    let before = query(&engine, text, Some("p0"), None).await;
    assert_eq!(before.items, vec![json!(k1 + 1)]);
    assert_eq!(loaded_documents(&before), 0);
    clock.advance_ms(2_000);
    let after = query(&engine, text, Some("p0"), None).await;
    assert_eq!(after.items, vec![json!(k1)]);
    assert!(loaded_documents(&after) > 0, "{after:?}");
    let max = query(&engine, "SELECT VALUE MAX(c.p) FROM c", Some("p0"), None).await;
    assert_ne!(max.items, vec![json!(1000)]);
}
