//! `ORDER BY VectorDistance(...)` served from the container's vector set: for each distance
//! function the rows equal a brute-force reference computed here, with filters, partition
//! keys, ranges, OFFSET/LIMIT and pages; an expired, deleted or rewritten item is answered
//! as it now is; irregular values and ties come out as the scan gives them. Every engine runs
//! in verify mode, which runs each vector page again as a scan and fails on any difference,
//! and the pages are checked to load only a few documents.

use crate::common::{create_documents, engine_on_store, page, pk, resolved};
use lethedb_engine::{Engine, EngineConfig, ManualClock, QueryPage, QueryRequest, WriteMode};
use serde_json::{json, Value};
use std::sync::Arc;

const ITEMS: usize = 150;
const DIMENSIONS: usize = 8;

fn container() -> Value {
    let embedding = |path: &str, function: &str| {
        json!({"path": path, "dataType": "float32", "dimensions": DIMENSIONS,
            "distanceFunction": function})
    };
    json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": -1,
        "vectorEmbeddingPolicy": {"vectorEmbeddings": [
            embedding("/v", "cosine"), embedding("/d", "dotproduct"),
            embedding("/e", "euclidean")]},
        "indexingPolicy": {"vectorIndexes": [{"path": "/v", "type": "flat"},
            {"path": "/d", "type": "flat"}, {"path": "/e", "type": "flat"}]}})
}

/// A deterministic vector for item `n` (components in -1..1, none equal between items).
fn vector(n: usize) -> Vec<f64> {
    let mut seed = (n as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (0..DIMENSIONS)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 20_001) as f64 / 10_000.0 - 1.0
        })
        .collect()
}

fn document(n: usize) -> Value {
    let v = vector(n);
    json!({"id": format!("i{n}"), "pk": format!("p{}", n % 4), "cat": format!("k{}", n % 5),
        "v": v, "d": v, "e": v})
}

/// An engine with the items, over `ranges` physical partitions.
async fn loaded_in(ranges: usize) -> (Engine, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let store = Arc::new(lethedb_storage::MemoryStore::new());
    let config = EngineConfig {
        query_verify: true,
        partition_key_ranges: Some(ranges),
        ..crate::common::config()
    };
    let engine = engine_on_store(store, clock.clone(), container(), config).await;
    create_documents(&engine, (0..ITEMS).map(document)).await;
    (engine, clock)
}

/// An engine with the items in one physical partition, which a query reads whole (as the SDKs
/// send it, by range id).
async fn loaded() -> (Engine, Arc<ManualClock>) {
    loaded_in(1).await
}

/// The query crate's scores, in double precision.
fn score(function: &str, left: &[f64], right: &[f64]) -> f64 {
    let dot: f64 = left.iter().zip(right).map(|(a, b)| a * b).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    match function {
        "cosine" => dot / (norm(left) * norm(right)),
        "dotproduct" => dot,
        _ => left
            .iter()
            .zip(right)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
            .sqrt(),
    }
}

/// The ids of the `rows` items among `candidates` closest to `q` by `function`.
fn reference(
    function: &str,
    q: &[f64],
    candidates: &[(String, Vec<f64>)],
    rows: usize,
) -> Vec<String> {
    let mut scored: Vec<(f64, &String)> = candidates
        .iter()
        .map(|(id, v)| (score(function, q, v), id))
        .collect();
    scored.sort_by(|a, b| {
        let order = a.0.total_cmp(&b.0);
        if function == "euclidean" {
            order
        } else {
            order.reverse()
        }
    });
    scored
        .into_iter()
        .take(rows)
        .map(|(_, id)| id.clone())
        .collect()
}

/// The items `keep` admits, as ids and vectors.
fn items(keep: impl Fn(usize) -> bool) -> Vec<(String, Vec<f64>)> {
    (0..ITEMS)
        .filter(|&n| keep(n))
        .map(|n| (format!("i{n}"), vector(n)))
        .collect()
}

async fn query(engine: &Engine, request: QueryRequest) -> QueryPage {
    let text = request.text.clone();
    page(
        engine
            .query_items(&resolved(engine, "c"), &request)
            .await
            .unwrap_or_else(|error| panic!("{text}: {error:?}")),
    )
}

fn request(text: &str, q: &[f64]) -> QueryRequest {
    QueryRequest {
        text: text.into(),
        parameters: vec![("@q".into(), json!(q))],
        range_id: Some("0".into()),
        ..QueryRequest::default()
    }
}

fn ids(page: &QueryPage) -> Vec<String> {
    page.items
        .iter()
        .map(|item| item["id"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_distance_function_equals_the_brute_force_reference() {
    let (engine, _) = loaded().await;
    let q = vector(1_000);
    for (path, function) in [("v", "cosine"), ("d", "dotproduct"), ("e", "euclidean")] {
        for written in [
            String::new(),
            format!(", false, {{distanceFunction: '{function}'}}"),
        ] {
            let text =
                format!("SELECT TOP 7 c.id FROM c ORDER BY VectorDistance(c.{path}, @q{written})");
            let result = query(&engine, request(&text, &q)).await;
            assert_eq!(
                ids(&result),
                reference(function, &q, &items(|_| true), 7),
                "{text}"
            );
            assert!(
                result.documents_scanned < 40,
                "{text} loaded {}",
                result.documents_scanned
            );
        }
    }
    // The options' function wins over the policy's, and bruteForce answers the same.
    let text = "SELECT TOP 5 c.id FROM c ORDER BY VectorDistance(c.v, @q, true, {distanceFunction: 'euclidean'})";
    let result = query(&engine, request(text, &q)).await;
    assert_eq!(
        ids(&result),
        reference("euclidean", &q, &items(|_| true), 5)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_partitions_ranges_and_pages_equal_the_reference() {
    let (engine, _) = loaded().await;
    let q = vector(2_000);
    let all = items(|_| true);
    // A filter that passes a fifth of the items, and one that passes two.
    let text = "SELECT TOP 6 c.id FROM c WHERE c.cat = 'k1' ORDER BY VectorDistance(c.v, @q)";
    let result = query(&engine, request(text, &q)).await;
    assert_eq!(
        ids(&result),
        reference("cosine", &q, &items(|n| n % 5 == 1), 6)
    );
    let text =
        "SELECT TOP 6 c.id FROM c WHERE c.id IN ('i3', 'i77') ORDER BY VectorDistance(c.e, @q)";
    let result = query(&engine, request(text, &q)).await;
    let two = items(|n| n == 3 || n == 77);
    assert_eq!(ids(&result), reference("euclidean", &q, &two, 6));
    // One partition, by header and by the filter.
    let text = "SELECT TOP 4 c.id FROM c ORDER BY VectorDistance(c.d, @q)";
    let mut in_partition = request(text, &q);
    in_partition.partition_key = pk("p2");
    in_partition.range_id = None;
    let expected = reference("dotproduct", &q, &items(|n| n % 4 == 2), 4);
    assert_eq!(ids(&query(&engine, in_partition).await), expected);
    let text = "SELECT TOP 4 c.id FROM c WHERE c.pk = 'p2' ORDER BY VectorDistance(c.d, @q)";
    assert_eq!(ids(&query(&engine, request(text, &q)).await), expected);
    // Each physical range gives its own top; together they hold the container's.
    let (split, _) = loaded_in(2).await;
    let text = "SELECT TOP 5 c.id FROM c ORDER BY VectorDistance(c.v, @q)";
    let mut merged = Vec::new();
    for range in ["0", "1"] {
        let mut per_range = request(text, &q);
        per_range.range_id = Some(range.into());
        merged.extend(ids(&query(&split, per_range).await));
    }
    let best = reference("cosine", &q, &all, 5);
    assert!(
        best.iter().all(|id| merged.contains(id)),
        "{merged:?} lacks some of {best:?}"
    );
    // OFFSET + LIMIT, read two rows a page.
    let text = "SELECT c.id FROM c ORDER BY VectorDistance(c.e, @q) OFFSET 3 LIMIT 5";
    let mut paged = request(text, &q);
    paged.page_items_max = Some(2);
    let mut read = Vec::new();
    loop {
        let result = query(&engine, paged.clone()).await;
        read.extend(ids(&result));
        match result.continuation {
            Some(token) => paged.continuation = Some(token),
            None => break,
        }
    }
    assert_eq!(read, reference("euclidean", &q, &all, 8)[3..].to_vec());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_deleted_and_rewritten_items_are_answered_as_they_now_are() {
    let (engine, clock) = loaded().await;
    let container = resolved(&engine, "c");
    let q = vector(3_000);
    let text = "SELECT TOP 3 c.id FROM c ORDER BY VectorDistance(c.v, @q)";
    // Warm the set, then change the three closest: one expires, one is deleted, one moves far.
    let first = ids(&query(&engine, request(text, &q)).await);
    let number = |id: &str| id[1..].parse::<usize>().unwrap_or(usize::MAX);
    let (expiring, deleted, moved) = (number(&first[0]), number(&first[1]), number(&first[2]));
    let mut body = document(expiring);
    body["ttl"] = json!(10);
    let write = |body: Value| {
        let partition = body["pk"].as_str().unwrap_or_default().to_string();
        engine.write_item(&container, WriteMode::Upsert, pk(&partition), body, None)
    };
    write(body).await.expect("upsert with ttl");
    let mut far = document(moved);
    let away: Vec<f64> = q.iter().map(|x| -x).collect();
    far["v"] = json!(away);
    far["e"] = json!(away);
    write(far).await.expect("move");
    let partition = format!("p{}", deleted % 4);
    engine
        .delete_item(&container, pk(&partition), &format!("i{deleted}"), None)
        .await
        .expect("delete");
    let live = |n: usize| n != deleted && n != moved;
    let now = ids(&query(&engine, request(text, &q)).await);
    assert_eq!(now, reference("cosine", &q, &items(live), 3));
    assert!(
        now.contains(&format!("i{expiring}")),
        "not expired yet: {now:?}"
    );
    clock.advance_ms(11_000);
    let later = ids(&query(&engine, request(text, &q)).await);
    let alive = |n: usize| live(n) && n != expiring;
    assert_eq!(later, reference("cosine", &q, &items(alive), 3));
    // The moved item is now the farthest of all.
    let last = "SELECT TOP 1 c.id FROM c ORDER BY VectorDistance(c.e, @q)";
    let closest_to_away = ids(&query(&engine, request(last, &away)).await);
    assert_eq!(closest_to_away, vec![format!("i{moved}")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn irregular_values_and_ties_come_out_as_the_scan_gives_them() {
    let (engine, _) = loaded().await;
    let q = vector(4_000);
    // The same vector as i5 twice (ties), a missing vector, a short one, one with a string, a
    // zero vector (cosine undefined): the verify mode compares every page with the scan.
    create_documents(
        &engine,
        [
            json!({"id": "twin1", "pk": "p1", "cat": "k0", "v": vector(5), "e": vector(5)}),
            json!({"id": "twin2", "pk": "p2", "cat": "k0", "v": vector(5), "e": vector(5)}),
            json!({"id": "none", "pk": "p1", "cat": "k0"}),
            json!({"id": "short", "pk": "p2", "cat": "k0", "v": [1, 2], "e": [1, 2]}),
            json!({"id": "text", "pk": "p3", "cat": "k0", "v": [1, "2", 3, 4, 5, 6, 7, 8]}),
            json!({"id": "zero", "pk": "p3", "cat": "k0", "v": [0, 0, 0, 0, 0, 0, 0, 0]}),
        ],
    )
    .await;
    let near_twins: Vec<f64> = vector(5).iter().map(|x| x + 1e-9).collect();
    for (text, vector) in [
        (
            "SELECT TOP 4 c.id FROM c ORDER BY VectorDistance(c.v, @q)",
            &near_twins,
        ),
        (
            "SELECT TOP 4 c.id FROM c ORDER BY VectorDistance(c.e, @q)",
            &near_twins,
        ),
        (
            "SELECT TOP 200 c.id FROM c WHERE c.cat = 'k0' ORDER BY VectorDistance(c.e, @q)",
            &q,
        ),
        (
            "SELECT TOP 200 c.id FROM c WHERE c.cat = 'k0' ORDER BY VectorDistance(c.v, @q)",
            &q,
        ),
    ] {
        let result = query(&engine, request(text, vector)).await;
        assert!(!result.items.is_empty(), "{text}");
    }
    let text = "SELECT TOP 3 c.id FROM c ORDER BY VectorDistance(c.v, @q)";
    let twins = ids(&query(&engine, request(text, &near_twins)).await);
    assert!(twins.contains(&"twin1".to_string()) && twins.contains(&"twin2".to_string()));
}
