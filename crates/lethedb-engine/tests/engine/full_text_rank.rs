//! BM25 served by the full-text index through the public API: the hybrid pipelines' global
//! statistics query (answered from the writer's counters) and their full-text component query
//! (`ORDER BY _FullTextScore(...) DESC` with TOP, walked from the impact entries) return on a
//! container with a full-text index exactly what they return on one without it (same rows,
//! order and scores; both in the verify mode, which also runs each served page's scan), for
//! random texts and terms with many ties, after creates, replaces and deletes, and while items
//! have expired and wait for the sweeper; served pages load few documents.

use crate::common::{config, create_documents, engine_on_store, page, pk, resolved, Rng};
use crate::index_build::build_to_the_end;
use lethedb_engine::{Engine, EngineConfig, ManualClock, QueryPage, QueryRequest, WriteMode};
use lethedb_storage::{KeyRange, MemoryStore, Storage, Table};
use serde_json::{json, Value};
use std::ops::ControlFlow;
use std::sync::Arc;

const ITEMS: u64 = 400;

/// Words of skewed frequency: the first are in most texts, the last in few.
const WORDS: [&str; 14] = [
    "the", "running", "runs", "shoes", "shoe", "red", "helmet", "blue", "mountain", "bike",
    "trail", "okapi", "zebra", "giraffe",
];

fn text(rng: &mut Rng) -> String {
    let count = 2 + rng.below(7);
    (0..count)
        .map(|_| {
            let index = rng
                .below(WORDS.len() as u64)
                .min(rng.below(WORDS.len() as u64));
            WORDS[index as usize]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn document(rng: &mut Rng, n: u64) -> Value {
    let mut body = json!({"id": format!("i{n}"), "pk": format!("p{}", n % 4), "n": n,
        "text": text(rng)});
    if n % 37 == 5 {
        body["text"] = json!(5);
    }
    body
}

async fn engine_with(indexed: bool, clock: Arc<ManualClock>, store: Arc<MemoryStore>) -> Engine {
    let mut policy = json!({"includedPaths": [{"path": "/*"}]});
    if indexed {
        policy["fullTextIndexes"] = json!([{"path": "/text"}]);
    }
    let container = json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": -1,
        "indexingPolicy": policy,
        "fullTextPolicy": {"defaultLanguage": "en-US", "fullTextPaths": [{"path": "/text"}]}});
    let config = EngineConfig {
        query_verify: true,
        ..config()
    };
    engine_on_store(store, clock, container, config).await
}

/// Runs `text` on the container's one range, as the SDKs send each range its query.
async fn query(engine: &Engine, text: &str) -> QueryPage {
    let request = QueryRequest {
        text: text.into(),
        populate_query_metrics: true,
        page_items_max: Some(1000),
        range_id: Some("0".into()),
        ..QueryRequest::default()
    };
    page(
        engine
            .query_items(&resolved(engine, "c"), &request)
            .await
            .unwrap_or_else(|error| panic!("{text}: {error:?}")),
    )
}

fn loaded(page: &QueryPage) -> u64 {
    page.metrics.as_ref().expect("metrics").documents_retrieved
}

/// The statistics query of the hybrid plan for `terms` (`hybrid_plan.rs`'s text).
fn statistics_query(terms: &[&str]) -> String {
    let hits: Vec<String> = terms
        .iter()
        .map(|term| format!("COUNTIF(FullTextContains(c.text, {}))", json!(term)))
        .collect();
    format!(
        "SELECT COUNT(1) AS documentCount, [{{\"totalWordCount\": SUM(_FullTextWordCount(c.text)), \"hitCounts\": [{}]}}] AS fullTextStatistics\nFROM c",
        hits.join(", ")
    )
}

/// A component query ranking by `terms` with the statistics `answer` gave.
fn component_query(terms: &[&str], answer: &Value, top: u64) -> String {
    let statistics = &answer["fullTextStatistics"][0];
    let score = format!(
        "_FullTextScore(c.text, {}, {}, {}, {})",
        json!(terms),
        answer["documentCount"],
        statistics["totalWordCount"],
        statistics["hitCounts"]
    );
    format!("SELECT TOP {top} c.id, {score} AS score FROM c WHERE (true) ORDER BY {score} DESC")
}

/// Random term lists: common, rare and absent words, repeated stems, and a term of no words.
fn random_terms(rng: &mut Rng) -> Vec<&'static str> {
    let extra = ["giraffes", "Running", "...", "unicorn"];
    let count = 1 + rng.below(3);
    (0..count)
        .map(|_| match rng.below(6) {
            0 => extra[rng.below(extra.len() as u64) as usize],
            _ => WORDS[rng.below(WORDS.len() as u64) as usize],
        })
        .collect()
}

/// Runs random statistics and component queries on both engines and compares them; returns
/// how many component pages the index served and what they loaded.
async fn compare(indexed: &Engine, plain: &Engine, seed: u64, rounds: usize) -> (u64, u64) {
    let mut rng = Rng(seed);
    let (mut served, mut documents) = (0, 0);
    for _ in 0..rounds {
        let terms = random_terms(&mut rng);
        let statistics = statistics_query(&terms);
        let (with_index, without) = (
            query(indexed, &statistics).await,
            query(plain, &statistics).await,
        );
        assert_eq!(with_index.items, without.items, "{statistics}");
        assert_eq!(loaded(&with_index), 0, "{statistics}: {with_index:?}");
        assert!(with_index.index_lookups > 0, "{statistics}");
        let top = [1, 5, 20, 120][rng.below(4) as usize];
        let component = component_query(&terms, &with_index.items[0], top);
        let (ranked, scanned) = (
            query(indexed, &component).await,
            query(plain, &component).await,
        );
        assert_eq!(ranked.items, scanned.items, "{component}");
        if ranked.index_lookups > 0 {
            served += 1;
            documents += loaded(&ranked);
        }
    }
    (served, documents)
}

/// An engine with the index on `store` and one without, holding the same items.
async fn both_on(clock: &Arc<ManualClock>, store: Arc<MemoryStore>) -> (Engine, Engine) {
    let (indexed, plain) = (
        engine_with(true, clock.clone(), store).await,
        engine_with(false, clock.clone(), Arc::new(MemoryStore::new())).await,
    );
    let mut rng = Rng(0xb325);
    let documents: Vec<Value> = (0..ITEMS).map(|n| document(&mut rng, n)).collect();
    create_documents(&indexed, documents.clone()).await;
    create_documents(&plain, documents).await;
    (indexed, plain)
}

async fn both(clock: &Arc<ManualClock>) -> (Engine, Engine) {
    both_on(clock, Arc::new(MemoryStore::new())).await
}

#[tokio::test]
async fn ranking_from_the_index_is_the_scans_with_few_documents_loaded() {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let (indexed, plain) = both(&clock).await;
    let (served, documents) = compare(&indexed, &plain, 0x5eed, 60).await;
    println!("served {served}, loaded {documents}");
    assert!(served > 20, "{served}");
    assert!(documents / served < ITEMS / 2, "{documents} over {served}");
    // A rare word with a common one, TOP 5: the common word's walk stops early.
    let terms = ["zebra", "the"];
    let answer = query(&indexed, &statistics_query(&terms)).await;
    let ranked = query(&indexed, &component_query(&terms, &answer.items[0], 5)).await;
    assert!(
        ranked.index_lookups > 0 && loaded(&ranked) < 40,
        "{ranked:?}"
    );
    let check = indexed
        .check_index(&resolved(&indexed, "c"))
        .await
        .expect("check");
    assert!(check.is_consistent(), "{check:?}");
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Kept,
    Deleted,
    Replaced,
    Expiring,
}

/// What the second test does to item `n`.
fn fate(n: u64) -> Fate {
    match (n % 6, n % 10) {
        (0, _) => Fate::Deleted,
        (3, _) => Fate::Replaced,
        (_, 1) => Fate::Expiring,
        _ => Fate::Kept,
    }
}

#[tokio::test]
async fn replaces_deletes_and_expiry_keep_the_ranking_the_scans() {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let (indexed, plain) = both(&clock).await;
    for n in 0..ITEMS {
        let fate = fate(n);
        if fate == Fate::Kept {
            continue;
        }
        for engine in [&indexed, &plain] {
            let container = resolved(engine, "c");
            let key = pk(&format!("p{}", n % 4));
            let id = format!("i{n}");
            if fate == Fate::Deleted {
                engine
                    .delete_item(&container, key, &id, None)
                    .await
                    .expect("delete");
                continue;
            }
            // Another text than the first one.
            let mut body = document(&mut Rng(n + 1), n);
            if fate == Fate::Expiring {
                // Expires in a second, and the sweeper does not run.
                body["ttl"] = json!(1);
            }
            engine
                .write_item(&container, WriteMode::Replace(id), key, body, None)
                .await
                .expect("replace");
        }
    }
    compare(&indexed, &plain, 0x0dd5, 30).await;
    clock.advance_ms(5_000);
    let terms = ["the", "zebra"];
    let statistics = statistics_query(&terms);
    let (expired, scanned) = (
        query(&indexed, &statistics).await,
        query(&plain, &statistics).await,
    );
    assert_eq!(expired.items, scanned.items);
    let live = (0..ITEMS)
        .filter(|n| matches!(fate(*n), Fate::Kept | Fate::Replaced))
        .count();
    assert_eq!(expired.items[0]["documentCount"], json!(live));
    // The counters would count the expired items: the statistics scan until the sweeper runs.
    assert!(loaded(&expired) > 0);
    let component = component_query(&terms, &expired.items[0], 50);
    assert_eq!(
        query(&indexed, &component).await.items,
        query(&plain, &component).await.items
    );
    let check = indexed
        .check_index(&resolved(&indexed, "c"))
        .await
        .expect("check");
    assert!(check.is_consistent(), "{check:?}");
}

/// Makes the store look as one written before full-text entries kept frequencies: no impact
/// or length entries nor statistics, and container records of index format 3.
fn forget_frequencies(store: &MemoryStore) {
    let (mut entries, mut containers) = (Vec::new(), Vec::new());
    {
        let reader: &dyn lethedb_storage::ReadTxn = &*store.read().expect("read");
        reader
            .scan(Table::Index, &KeyRange::prefix(&[]), &mut |key, _| {
                if matches!(key.get(8), Some(b'I' | b'L' | b'N' | b'n')) {
                    entries.push(key.to_vec());
                }
                ControlFlow::Continue(())
            })
            .expect("scan");
        reader
            .scan(
                Table::Catalog,
                &KeyRange::prefix(b"c"),
                &mut |key, value| {
                    containers.push((key.to_vec(), value.to_vec()));
                    ControlFlow::Continue(())
                },
            )
            .expect("scan");
    }
    assert!(!entries.is_empty());
    let mut write = store.write().expect("write");
    for key in entries {
        write.delete(Table::Index, &key).expect("delete");
    }
    for (key, value) in containers {
        let mut record: Value = serde_json::from_slice(&value).expect("record");
        record["index_format"] = json!(3);
        write
            .put(Table::Catalog, &key, record.to_string().as_bytes())
            .expect("put");
    }
    write.commit().expect("commit");
}

#[tokio::test]
async fn a_store_written_before_frequencies_scans_until_its_entries_are_rebuilt() {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let store = Arc::new(MemoryStore::new());
    let (indexed, plain) = both_on(&clock, store.clone()).await;
    assert!(indexed.close(), "sole handle");
    forget_frequencies(&store);
    let config = EngineConfig {
        query_verify: true,
        ..config()
    };
    let indexed = Engine::open(store, clock, config).expect("engine");
    assert!(!resolved(&indexed, "c").index_ready());
    let terms = ["zebra", "the"];
    let statistics = statistics_query(&terms);
    let scanned = query(&indexed, &statistics).await;
    assert_eq!(scanned.items, query(&plain, &statistics).await.items);
    assert_eq!(loaded(&scanned), ITEMS);
    let component = component_query(&terms, &scanned.items[0], 10);
    let ranked = query(&indexed, &component).await;
    assert_eq!((ranked.index_lookups, loaded(&ranked)), (0, ITEMS));
    assert_eq!(build_to_the_end(&indexed, 64).await, ITEMS);
    let check = indexed
        .check_index(&resolved(&indexed, "c"))
        .await
        .expect("check");
    assert!(check.is_consistent(), "{check:?}");
    let (served, _) = compare(&indexed, &plain, 0xa9e, 20).await;
    assert!(served > 5, "{served}");
}
