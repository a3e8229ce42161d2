//! The approximate vector indexes (`quantizedFlat`, `diskANN`): recall at 10 against exact
//! answers computed here, `bruteForce` giving the exact answer, an expired or deleted item
//! never returned, a filter or a partition key honoured (with the exact search taking over
//! when the graph's candidates pass too few), and the graph following later writes.
//! These engines do not run in verify mode, which makes every vector page exact.

use crate::common::{create_documents, engine_on_store, page, pk, resolved};
use lethedb_engine::{Engine, ManualClock, QueryPage, QueryRequest, WriteMode};
use serde_json::{json, Value};
use std::sync::Arc;

const ITEMS: usize = 2_000;
const DIMENSIONS: usize = 16;

/// Vectors around 20 centres (as embeddings cluster), deterministic.
fn vector(n: usize) -> Vec<f64> {
    let mut seed = (n as u64 + 7).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % 20_001) as f64 / 10_000.0 - 1.0
    };
    let centre = n % 20;
    (0..DIMENSIONS)
        .map(|d| ((centre * 7 + d * 3) % 11) as f64 / 5.0 - 1.0 + 0.2 * next())
        .collect()
}

fn container(kind: &str, function: &str) -> Value {
    json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": -1,
        "vectorEmbeddingPolicy": {"vectorEmbeddings": [{"path": "/v", "dataType": "float32",
            "dimensions": DIMENSIONS, "distanceFunction": function}]},
        "indexingPolicy": {"vectorIndexes": [{"path": "/v", "type": kind}]}})
}

async fn loaded(kind: &str, function: &str) -> (Engine, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let store = Arc::new(lethedb_storage::MemoryStore::new());
    let config = lethedb_engine::EngineConfig {
        partition_key_ranges: Some(1),
        ..crate::common::config()
    };
    let engine = engine_on_store(store, clock.clone(), container(kind, function), config).await;
    let documents = (0..ITEMS).map(|n| {
        json!({"id": format!("i{n}"), "pk": format!("p{}", n % 8), "cat": n % 3, "v": vector(n)})
    });
    create_documents(&engine, documents).await;
    (engine, clock)
}

fn score(function: &str, left: &[f64], right: &[f64]) -> f64 {
    let dot: f64 = left.iter().zip(right).map(|(a, b)| a * b).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    match function {
        "cosine" => dot / (norm(left) * norm(right)),
        "dotproduct" => dot,
        _ => -left
            .iter()
            .zip(right)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt(),
    }
}

/// The exact ids of the `rows` items `keep` admits closest to `q` (larger score first, the
/// euclidean distance negated).
fn exact(function: &str, q: &[f64], rows: usize, keep: impl Fn(usize) -> bool) -> Vec<String> {
    let mut scored: Vec<(f64, usize)> = (0..ITEMS)
        .filter(|&n| keep(n))
        .map(|n| (score(function, q, &vector(n)), n))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored
        .into_iter()
        .take(rows)
        .map(|(_, n)| format!("i{n}"))
        .collect()
}

async fn search(engine: &Engine, text: &str, q: &[f64], partition: Option<&str>) -> QueryPage {
    let request = QueryRequest {
        text: text.into(),
        parameters: vec![("@q".into(), json!(q))],
        partition_key: partition.and_then(pk),
        range_id: partition.is_none().then(|| "0".to_string()),
        ..QueryRequest::default()
    };
    page(
        engine
            .query_items(&resolved(engine, "c"), &request)
            .await
            .unwrap_or_else(|error| panic!("{text}: {error:?}")),
    )
}

fn ids(page: &QueryPage) -> Vec<String> {
    page.items
        .iter()
        .map(|item| item["id"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn recall(found: &[String], truth: &[String]) -> f64 {
    found.iter().filter(|id| truth.contains(id)).count() as f64 / truth.len() as f64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approximate_search_recalls_the_exact_ten() {
    for (kind, function) in [
        ("diskANN", "cosine"),
        ("quantizedFlat", "euclidean"),
        ("diskANN", "dotproduct"),
    ] {
        let (engine, _) = loaded(kind, function).await;
        let text = "SELECT TOP 10 c.id FROM c ORDER BY VectorDistance(c.v, @q)";
        let mut total = 0.0;
        for query in 0..20 {
            let q = vector(10_000 + query);
            let truth = exact(function, &q, 10, |_| true);
            let found = search(&engine, text, &q, None).await;
            assert_eq!(found.items.len(), 10);
            // The graph's candidates are loaded, not every document.
            assert!(
                found.documents_scanned < 200,
                "{kind}: {}",
                found.documents_scanned
            );
            assert_eq!(found.index_lookups, 1, "{kind}: the graph served the page");
            total += recall(&ids(&found), &truth);
            let brute = "SELECT TOP 10 c.id FROM c ORDER BY VectorDistance(c.v, @q, true)";
            let brute = search(&engine, brute, &q, None).await;
            assert_eq!(ids(&brute), truth, "{kind} brute force");
            assert_eq!(brute.index_lookups, 0, "{kind}: brute force is exact");
        }
        assert!(
            total / 20.0 >= 0.95,
            "{kind} {function}: recall {}",
            total / 20.0
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_partitions_and_later_writes_are_honoured() {
    let (engine, clock) = loaded("diskANN", "euclidean").await;
    let q = vector(20_000);
    let text = "SELECT TOP 5 c.id FROM c ORDER BY VectorDistance(c.v, @q)";
    // A filter that passes a third, one that passes a single item (served first: the range
    // index names its one candidate, the only document loaded), and one partition.
    let third = "SELECT TOP 5 c.id FROM c WHERE c.cat = 1 ORDER BY VectorDistance(c.v, @q)";
    let found = ids(&search(&engine, third, &q, None).await);
    assert!(recall(&found, &exact("euclidean", &q, 5, |n| n % 3 == 1)) >= 0.8);
    let one = "SELECT TOP 5 c.id FROM c WHERE c.id = 'i1234' ORDER BY VectorDistance(c.v, @q)";
    let single = search(&engine, one, &q, None).await;
    assert_eq!(ids(&single), vec!["i1234"]);
    assert!(
        single.index_lookups > 0 && single.documents_scanned == 1,
        "{single:?}"
    );
    // A filter the range index cannot serve that passes ten items: the graph's fifty
    // candidates hold fewer than five of them, and the exact search finishes the page.
    let few = "SELECT TOP 5 c.id FROM c WHERE LENGTH(c.id) = 2 ORDER BY VectorDistance(c.v, @q)";
    let result = search(&engine, few, &q, None).await;
    assert_eq!(ids(&result), exact("euclidean", &q, 5, |n| n < 10));
    assert_eq!(result.index_lookups, 0, "the exact search took over");
    let found = ids(&search(&engine, text, &q, Some("p3")).await);
    assert_eq!(found.len(), 5);
    assert!(
        found
            .iter()
            .all(|id| id[1..].parse::<usize>().unwrap() % 8 == 3),
        "{found:?}"
    );
    // The five closest change: one expires, one is deleted, and a new item lands on the query.
    let first = ids(&search(&engine, text, &q, None).await);
    let container = resolved(&engine, "c");
    let number = |id: &str| id[1..].parse::<usize>().unwrap();
    let (expiring, deleted) = (number(&first[0]), number(&first[1]));
    let body = json!({"id": format!("i{expiring}"), "pk": format!("p{}", expiring % 8),
        "cat": expiring % 3, "v": vector(expiring), "ttl": 5});
    let partition = format!("p{}", expiring % 8);
    engine
        .write_item(&container, WriteMode::Upsert, pk(&partition), body, None)
        .await
        .expect("upsert");
    let partition = format!("p{}", deleted % 8);
    engine
        .delete_item(&container, pk(&partition), &format!("i{deleted}"), None)
        .await
        .expect("delete");
    create_documents(
        &engine,
        [json!({"id": "new", "pk": "p0", "cat": 0, "v": q})],
    )
    .await;
    clock.advance_ms(6_000);
    let now = ids(&search(&engine, text, &q, None).await);
    assert_eq!(now[0], "new");
    assert!(!now.contains(&format!("i{expiring}")) && !now.contains(&format!("i{deleted}")));
    let gone = |n: usize| n != expiring && n != deleted;
    let mut truth = vec!["new".to_string()];
    truth.extend(exact("euclidean", &q, 4, gone));
    assert!(recall(&now, &truth) >= 0.8, "{now:?} against {truth:?}");
}
