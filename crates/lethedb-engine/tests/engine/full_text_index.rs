//! The full-text index through the public API: `FullTextContains`, `FullTextContainsAll` and
//! `FullTextContainsAny` on a container with full-text indexes return what the same filters
//! return on a container without them (both in the verify mode, which also runs each page's
//! scan), for random texts and terms in English, French and German, while a selective term
//! loads few documents; the index stays consistent through replaces and deletes, is rebuilt
//! when a policy change adds it or a path's language changes, and is built when a container
//! stored before full-text entries loads.

use crate::common::{config, create_documents, engine_on_store, page, pk, resolved, Rng};
use crate::index_build::build_to_the_end;
use lethedb_engine::{Engine, EngineConfig, ManualClock, QueryPage, QueryRequest, WriteMode};
use lethedb_storage::{KeyRange, MemoryStore, Storage, Table};
use serde_json::{json, Value};
use std::ops::ControlFlow;
use std::sync::Arc;

const ITEMS: u64 = 300;

/// Each path's words: inflected forms that share stems, a few words every text may hold, and
/// rarer ones. `/text` is English, `/fr` French and `/de` German (the policy's default).
const ENGLISH: [&str; 16] = [
    "the",
    "running",
    "runs",
    "runner",
    "shoes",
    "shoe",
    "helmet",
    "helmets",
    "red",
    "blue",
    "mountain",
    "mountains",
    "bike",
    "biking",
    "trail",
    "Trails",
];
const FRENCH: [&str; 12] = [
    "chanter",
    "chantons",
    "chanson",
    "chansons",
    "maison",
    "maisons",
    "rouge",
    "rouges",
    "vélo",
    "vélos",
    "montagne",
    "montagnes",
];
const GERMAN: [&str; 12] = [
    "Häuser",
    "Haus",
    "laufen",
    "läuft",
    "Berg",
    "Berge",
    "Fahrrad",
    "Fahrräder",
    "rot",
    "rote",
    "Schuh",
    "Schuhe",
];

/// A text of 2 to 7 words of `words`, the earlier words likelier, with case and punctuation
/// varied.
fn text(rng: &mut Rng, words: &[&str]) -> String {
    let count = 2 + rng.below(6);
    let mut out = Vec::new();
    for _ in 0..count {
        // The lower of two draws: the first words are common, the last rare.
        let index = rng
            .below(words.len() as u64)
            .min(rng.below(words.len() as u64));
        let word = words[index as usize];
        out.push(match rng.below(5) {
            0 => word.to_uppercase(),
            1 => format!("{word},"),
            _ => word.to_string(),
        });
    }
    out.join(" ")
}

fn policy(indexed: bool) -> Value {
    let mut policy = json!({"includedPaths": [{"path": "/*"}]});
    if indexed {
        policy["fullTextIndexes"] = json!([{"path": "/text"}, {"path": "/fr"}, {"path": "/de"}]);
    }
    policy
}

fn full_text_policy(french: &str) -> Value {
    json!({"defaultLanguage": "de-DE", "fullTextPaths": [
        {"path": "/text", "language": "en-US"},
        {"path": "/fr", "language": french},
        {"path": "/de"}]})
}

async fn engine_with(indexed: bool) -> Engine {
    let container = json!({"id": "c", "partitionKey": {"paths": ["/pk"]},
        "indexingPolicy": policy(indexed), "fullTextPolicy": full_text_policy("fr-FR")});
    let config = EngineConfig {
        query_verify: true,
        ..config()
    };
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    engine_on_store(Arc::new(MemoryStore::new()), clock, container, config).await
}

/// Texts at each path; some documents hold a number or null there, and document 7 alone
/// holds "zebra".
fn documents() -> Vec<Value> {
    let mut rng = Rng(0x7e57_f00d);
    (0..ITEMS)
        .map(|n| {
            let mut body = json!({"id": format!("i{n}"), "pk": format!("p{}", n % 5), "n": n,
                "text": text(&mut rng, &ENGLISH), "fr": text(&mut rng, &FRENCH),
                "de": text(&mut rng, &GERMAN)});
            match n % 25 {
                3 => body["text"] = json!(3),
                4 => body["fr"] = Value::Null,
                _ => {}
            }
            if n == 7 {
                body["text"] = json!("A zebra on the TRAIL");
            }
            body
        })
        .collect()
}

async fn query(engine: &Engine, text: &str, parameters: &[(&str, Value)]) -> QueryPage {
    let request = QueryRequest {
        text: text.into(),
        parameters: parameters
            .iter()
            .map(|(name, value)| (name.to_string(), value.clone()))
            .collect(),
        enable_cross_partition: true,
        populate_query_metrics: true,
        populate_index_metrics: true,
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

fn ids(page: &QueryPage) -> Vec<String> {
    let mut ids: Vec<String> = page.items.iter().map(ToString::to_string).collect();
    ids.sort();
    ids
}

fn retrieved(page: &QueryPage) -> u64 {
    page.metrics.as_ref().expect("metrics").documents_retrieved
}

/// A term of one path's words: one word, two, a word no text holds, or none at all.
fn term(rng: &mut Rng, words: &[&str]) -> Value {
    let word = |rng: &mut Rng| words[rng.below(words.len() as u64) as usize];
    json!(match rng.below(8) {
        0 => format!("{} {}", word(rng), word(rng)),
        1 => "zebras".to_string(),
        2 => "...".to_string(),
        _ => word(rng).to_lowercase(),
    })
}

/// A random full-text filter on one of the paths, with its parameters.
fn random_filter(rng: &mut Rng) -> (String, Vec<(&'static str, Value)>) {
    let (path, words): (&str, &[&str]) = match rng.below(3) {
        0 => ("text", &ENGLISH),
        1 => ("fr", &FRENCH),
        _ => ("de", &GERMAN),
    };
    let filter = match rng.below(6) {
        0 | 1 => format!("FullTextContains(c.{path}, @a)"),
        2 => format!("FullTextContainsAll(c.{path}, @a, @b)"),
        3 => format!("FullTextContainsAny(c.{path}, @a, @b, @c)"),
        4 => format!("FullTextContains(c.{path}, @a) AND c.n > 50"),
        _ => format!("FullTextContains(c.{path}, @a) OR c.n = 7"),
    };
    let parameters = vec![
        ("@a", term(rng, words)),
        ("@b", term(rng, words)),
        ("@c", term(rng, words)),
    ];
    (
        format!("SELECT VALUE c.id FROM c WHERE {filter}"),
        parameters,
    )
}

#[tokio::test]
async fn indexed_full_text_filters_return_what_a_scan_returns_loading_few_documents() {
    let (indexed, plain) = (engine_with(true).await, engine_with(false).await);
    create_documents(&indexed, documents()).await;
    create_documents(&plain, documents()).await;
    let mut rng = Rng(0x0f00_7e47);
    let (mut found, mut served, mut loaded) = (0usize, 0u64, 0u64);
    for _ in 0..200 {
        let (text, parameters) = random_filter(&mut rng);
        let with_index = query(&indexed, &text, &parameters).await;
        let without = query(&plain, &text, &parameters).await;
        assert_eq!(ids(&with_index), ids(&without), "{text} {parameters:?}");
        found += with_index.items.len();
        if with_index.index_lookups > 0 {
            served += 1;
            loaded += retrieved(&with_index);
        }
    }
    println!("found {found}, served {served}, loaded {loaded}");
    // Most filters read the index (those on a stem most texts hold scan), and load less than
    // half the container on average: the vocabularies are small, so that filters find much,
    // and a stem is in a third of the texts.
    assert!(found > 8_000, "{found}");
    assert!(served > 120, "{served}");
    assert!(loaded / served < ITEMS / 2, "{loaded} over {served}");
    // One document holds "zebra": its stem's entries name it alone.
    let zebra = "SELECT VALUE c.id FROM c WHERE FullTextContains(c.text, 'Zebras')";
    let rare = query(&indexed, zebra, &[]).await;
    assert_eq!(rare.items, [json!("i7")]);
    assert!(rare.index_lookups > 0 && retrieved(&rare) <= 1, "{rare:?}");
    assert_eq!(retrieved(&query(&plain, zebra, &[]).await), ITEMS);
    let metrics = rare.index_utilization.expect("index metrics");
    let specs: Vec<&Value> = metrics["UtilizedSingleIndexes"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|entry| &entry["IndexSpec"])
        .collect();
    assert_eq!(specs, [&json!("/text")], "{metrics}");
    let check = indexed
        .check_index(&resolved(&indexed, "c"))
        .await
        .expect("check");
    assert!(
        check.is_consistent() && check.stored > ITEMS * 4,
        "{check:?}"
    );
}

#[tokio::test]
async fn replaced_and_deleted_texts_leave_the_index() {
    let engine = engine_with(true).await;
    create_documents(&engine, documents()).await;
    let container = resolved(&engine, "c");
    let replaced = json!({"id": "i7", "pk": "p2", "n": 7, "text": "a giraffe"});
    engine
        .write_item(
            &container,
            WriteMode::Replace("i7".into()),
            pk("p2"),
            replaced,
            None,
        )
        .await
        .expect("replace");
    let giraffe = "SELECT VALUE c.id FROM c WHERE FullTextContains(c.text, 'giraffes')";
    let zebra = "SELECT VALUE c.id FROM c WHERE FullTextContains(c.text, 'zebra')";
    assert_eq!(query(&engine, giraffe, &[]).await.items, [json!("i7")]);
    assert!(query(&engine, zebra, &[]).await.items.is_empty());
    engine
        .delete_item(&container, pk("p2"), "i7", None)
        .await
        .expect("delete");
    assert!(query(&engine, giraffe, &[]).await.items.is_empty());
    let check = engine.check_index(&container).await.expect("check");
    assert!(check.is_consistent(), "{check:?}");
}

/// Replaces the container's policies: `indexed` says whether it has full-text indexes, and
/// `french` is the language of `/fr`.
async fn replace_policies(engine: &Engine, indexed: bool, french: &str) {
    let body = json!({"id": "c", "partitionKey": {"paths": ["/pk"]},
        "indexingPolicy": policy(indexed), "fullTextPolicy": full_text_policy(french)});
    engine
        .replace_container("db", "c", body, None)
        .await
        .expect("replace");
}

#[tokio::test]
async fn a_policy_change_builds_the_index_and_a_language_change_rebuilds_it() {
    let engine = engine_with(false).await;
    create_documents(&engine, documents()).await;
    let zebra = "SELECT VALUE c.id FROM c WHERE FullTextContains(c.text, 'zebra')";
    let before = query(&engine, zebra, &[]).await;
    assert_eq!((before.index_lookups, retrieved(&before)), (0, ITEMS));
    replace_policies(&engine, true, "fr-FR").await;
    assert_eq!(build_to_the_end(&engine, 64).await, ITEMS);
    let after = query(&engine, zebra, &[]).await;
    assert_eq!(after.items, [json!("i7")]);
    assert!(after.index_lookups > 0 && retrieved(&after) <= 1);
    // French stems "maisons" and "maison" alike, Spanish keeps "maisons" whole: the entries
    // must follow the language, or the served query would miss texts or find too many.
    let french = "SELECT VALUE c.id FROM c WHERE FullTextContains(c.fr, 'maisons')";
    let in_french = query(&engine, french, &[]).await;
    replace_policies(&engine, true, "es-ES").await;
    assert!(!resolved(&engine, "c").index_ready());
    let scanned = query(&engine, french, &[]).await;
    assert_eq!(scanned.index_lookups, 0);
    assert_eq!(build_to_the_end(&engine, 64).await, ITEMS);
    let in_spanish = query(&engine, french, &[]).await;
    assert_eq!(ids(&in_spanish), ids(&scanned));
    assert_ne!(ids(&in_spanish), ids(&in_french));
    let check = engine
        .check_index(&resolved(&engine, "c"))
        .await
        .expect("check");
    assert!(check.is_consistent(), "{check:?}");
}

/// Makes the store look as one written before full-text entries: none stored, and container
/// records of index format 2.
fn forget_full_text_entries(store: &MemoryStore) {
    let (mut full_text, mut containers) = (Vec::new(), Vec::new());
    {
        let reader: &dyn lethedb_storage::ReadTxn = &*store.read().expect("read");
        reader
            .scan(Table::Index, &KeyRange::prefix(&[]), &mut |key, _| {
                if key.get(8) == Some(&b'F') {
                    full_text.push(key.to_vec());
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
    assert!(!full_text.is_empty());
    let mut write = store.write().expect("write");
    for key in full_text {
        write.delete(Table::Index, &key).expect("delete");
    }
    for (key, value) in containers {
        let mut record: Value = serde_json::from_slice(&value).expect("record");
        record["index_format"] = json!(2);
        write
            .put(Table::Catalog, &key, record.to_string().as_bytes())
            .expect("put");
    }
    write.commit().expect("commit");
}

#[tokio::test]
async fn a_container_stored_before_full_text_entries_gets_them_in_the_background() {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let store = Arc::new(MemoryStore::new());
    let container = json!({"id": "c", "partitionKey": {"paths": ["/pk"]},
        "indexingPolicy": policy(true), "fullTextPolicy": full_text_policy("fr-FR")});
    let engine = engine_on_store(store.clone(), clock.clone(), container, config()).await;
    create_documents(&engine, documents()).await;
    assert!(engine.close(), "sole handle");
    forget_full_text_entries(&store);
    let engine = Engine::open(store, clock, config()).expect("engine");
    assert!(!resolved(&engine, "c").index_ready());
    let zebra = "SELECT VALUE c.id FROM c WHERE FullTextContainsAny(c.text, 'zebra', 'okapi')";
    let scanned = query(&engine, zebra, &[]).await;
    assert_eq!(scanned.items, [json!("i7")]);
    assert_eq!(retrieved(&scanned), ITEMS);
    assert_eq!(build_to_the_end(&engine, 64).await, ITEMS);
    let check = engine
        .check_index(&resolved(&engine, "c"))
        .await
        .expect("check");
    assert!(check.is_consistent(), "{check:?}");
    let served = query(&engine, zebra, &[]).await;
    assert_eq!(served.items, [json!("i7")]);
    assert!(served.index_lookups > 0 && retrieved(&served) <= 1);
}
