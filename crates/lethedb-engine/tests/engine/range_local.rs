//! Range-local storage: in a container with ten partition key ranges, a query, a read feed and a
//! change feed on one range read (from the items table) only about that range's share of the
//! items, and return exactly what the old whole-container walk filtered by hash returns: the
//! same items as a container stored before range-local storage (which keeps its walk), each
//! range's own, every item once over all ranges.

use crate::common::{config, create_documents, page, pk, resolved};
use crate::counting_store::CountingStore;
use lethedb_engine::{
    ChangeFeedMode, ChangeFeedRequest, ChangeFeedStart, Container, Engine, EngineConfig,
    ManualClock, PartitionKeyValue, QueryRequest, RangeFilter, WriteMode,
};
use lethedb_storage::{KeyRange, Storage, Table};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::sync::Arc;

const RANGES: usize = 10;
const PARTITIONS: usize = 1_500;
const ITEMS_PER_PARTITION: usize = 2;
const ITEMS: usize = PARTITIONS * ITEMS_PER_PARTITION;
/// The most items one range's read may read: 1.2 × its tenth (the target).
const RANGE_READS_MAX: u64 = (ITEMS as u64 * 12) / (RANGES as u64 * 10);

fn ten_ranges() -> EngineConfig {
    EngineConfig {
        partition_key_ranges: Some(RANGES),
        ..config()
    }
}

/// Makes the store look as one written before range-local storage: container records without
/// their item layout (done before any item is written, as such a store's items were).
fn forget_the_layout(store: &CountingStore) {
    let mut containers = Vec::new();
    store
        .inner()
        .read()
        .expect("read")
        .scan(
            Table::Catalog,
            &KeyRange::prefix(b"c"),
            &mut |key, value| {
                containers.push((key.to_vec(), value.to_vec()));
                ControlFlow::Continue(())
            },
        )
        .expect("scan");
    let mut write = store.inner().write().expect("write");
    for (key, value) in containers {
        let mut record: Value = serde_json::from_slice(&value).expect("record");
        assert_eq!(
            record["item_layout"],
            json!(1),
            "a new container is EPK-ordered"
        );
        record
            .as_object_mut()
            .expect("object")
            .remove("item_layout");
        write
            .put(Table::Catalog, &key, record.to_string().as_bytes())
            .expect("put");
    }
    write.commit().expect("commit");
}

/// An engine on a counting store with container `c` (ten ranges, hash v2 on `/pk`) holding
/// `ITEMS` items over `PARTITIONS` partition keys; `old` stores them in the old layout.
async fn filled(old: bool) -> (Engine, Arc<CountingStore>) {
    let store = Arc::new(CountingStore::new());
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let mut engine = Engine::open(store.clone(), clock.clone(), ten_ranges()).expect("engine");
    engine
        .create_database(json!({"id": "db"}), None)
        .await
        .expect("db");
    let definition = json!({"paths": ["/pk"], "kind": "Hash", "version": 2});
    engine
        .create_container("db", json!({"id": "c", "partitionKey": definition}), None)
        .await
        .expect("container");
    if old {
        assert!(engine.close(), "sole handle");
        forget_the_layout(&store);
        engine = Engine::open(store.clone(), clock, ten_ranges()).expect("engine");
    }
    let mut documents = Vec::new();
    for n in 0..ITEMS {
        let partition = format!("p{}", n % PARTITIONS);
        let document = json!({"id": format!("i{n}"), "pk": partition, "n": n});
        documents.push(document);
    }
    create_documents(&engine, documents).await;
    store.taken();
    (engine, store)
}

/// Each item's id, by the range its partition key hashes to: what the whole-container walk
/// filtered by hash returned for each range.
fn by_hash(container: &Container) -> BTreeMap<u32, BTreeSet<String>> {
    let mut ranges: BTreeMap<u32, BTreeSet<String>> = BTreeMap::new();
    for n in 0..ITEMS {
        let value = pk(&format!("p{}", n % PARTITIONS)).expect("pk");
        ranges
            .entry(container.range_of(&value))
            .or_default()
            .insert(format!("i{n}"));
    }
    ranges
}

/// Every page of `text` on range `range_id`: the ids, in order, and the item rows read.
async fn query_range(
    engine: &Engine,
    store: &CountingStore,
    text: &str,
    range_id: u32,
) -> (Vec<String>, u64) {
    let container = resolved(engine, "c");
    let mut ids = Vec::new();
    let mut continuation = None;
    loop {
        let request = QueryRequest {
            text: text.into(),
            range_id: Some(range_id.to_string()),
            page_items_max: Some(64),
            continuation,
            ..QueryRequest::default()
        };
        let result = page(
            engine
                .query_items(&container, &request)
                .await
                .expect("query"),
        );
        ids.extend(
            result
                .items
                .iter()
                .map(|id| id.as_str().expect("id").to_string()),
        );
        continuation = result.continuation;
        if continuation.is_none() {
            break;
        }
    }
    (ids, store.taken())
}

/// Every page of the read feed of `filter`: the ids and the item rows read.
async fn feed_range(
    engine: &Engine,
    store: &CountingStore,
    filter: &RangeFilter,
) -> (Vec<String>, u64) {
    let container = resolved(engine, "c");
    let mut ids = Vec::new();
    let mut continuation: Option<String> = None;
    loop {
        let feed = engine
            .read_feed(
                &container,
                None,
                filter.clone(),
                64,
                continuation.as_deref(),
            )
            .await
            .expect("feed");
        for item in &feed.items {
            ids.push(
                item.to_value().expect("item")["id"]
                    .as_str()
                    .expect("id")
                    .into(),
            );
        }
        continuation = feed.continuation;
        if continuation.is_none() {
            break;
        }
    }
    (ids, store.taken())
}

/// The latest-version change feed of `filter` from the beginning: the ids and the item rows
/// read (the change index it walks is keyed by LSN; only its own range's items are loaded).
async fn changes_of_range(
    engine: &Engine,
    store: &CountingStore,
    filter: &RangeFilter,
) -> (Vec<String>, u64) {
    let request = ChangeFeedRequest {
        mode: ChangeFeedMode::LatestVersion,
        start: ChangeFeedStart::Beginning,
        partition_key: None,
        filter: filter.clone(),
        page_items_max: Some(ITEMS),
    };
    let changes = engine
        .read_change_feed(&resolved(engine, "c"), request)
        .await
        .expect("change feed");
    let ids = changes
        .entries
        .iter()
        .map(|entry| {
            let document: Value = serde_json::from_slice(entry).expect("entry");
            document["id"].as_str().expect("id").to_string()
        })
        .collect();
    (ids, store.taken())
}

fn sorted(ids: &[String]) -> BTreeSet<String> {
    let set: BTreeSet<String> = ids.iter().cloned().collect();
    assert_eq!(set.len(), ids.len(), "an item came twice");
    set
}

#[tokio::test]
async fn a_read_of_one_range_reads_only_its_share_and_returns_what_the_walk_did() {
    let (engine, store) = filled(false).await;
    let (old_engine, old_store) = filled(true).await;
    let container = resolved(&engine, "c");
    let expected = by_hash(&container);
    let mut seen = BTreeSet::new();
    for range in &container.ranges.ranges {
        let own = &expected[&range.id];
        let filter = RangeFilter::of(range);
        let text = "SELECT VALUE c.id FROM c";
        let (ids, reads) = query_range(&engine, &store, text, range.id).await;
        assert_eq!(&sorted(&ids), own, "query of range {}", range.id);
        assert!(
            reads <= RANGE_READS_MAX,
            "query of range {}: {reads} reads",
            range.id
        );
        // Its own items, and one past each full page to know there is more.
        let own_reads_max = (own.len() + own.len().div_ceil(64)) as u64;
        assert!(
            reads <= own_reads_max,
            "query of range {}: {reads} reads",
            range.id
        );
        let (old_ids, old_reads) = query_range(&old_engine, &old_store, text, range.id).await;
        assert_eq!(
            sorted(&old_ids),
            sorted(&ids),
            "old layout, range {}",
            range.id
        );
        assert!(
            old_reads >= ITEMS as u64,
            "the old layout walks the whole container"
        );
        let ordered = "SELECT VALUE c.id FROM c ORDER BY c.n";
        let (ordered_ids, reads) = query_range(&engine, &store, ordered, range.id).await;
        let (old_ordered, _) = query_range(&old_engine, &old_store, ordered, range.id).await;
        assert_eq!(ordered_ids, old_ordered, "ORDER BY on range {}", range.id);
        assert!(
            reads <= RANGE_READS_MAX,
            "ORDER BY on range {}: {reads}",
            range.id
        );
        let (ids, reads) = feed_range(&engine, &store, &filter).await;
        assert_eq!(&sorted(&ids), own, "read feed of range {}", range.id);
        assert!(
            reads <= RANGE_READS_MAX,
            "feed of range {}: {reads} reads",
            range.id
        );
        let (old_ids, _) = feed_range(&old_engine, &old_store, &filter).await;
        assert_eq!(
            sorted(&old_ids),
            sorted(&ids),
            "old feed, range {}",
            range.id
        );
        let (ids, reads) = changes_of_range(&engine, &store, &filter).await;
        assert_eq!(&sorted(&ids), own, "change feed of range {}", range.id);
        assert!(
            reads <= RANGE_READS_MAX,
            "change feed of {}: {reads}",
            range.id
        );
        assert!(seen.is_disjoint(own), "range {} shares an item", range.id);
        seen.extend(own.iter().cloned());
    }
    assert_eq!(seen.len(), ITEMS, "the ranges cover every item once");
}

#[tokio::test]
async fn an_epk_interval_inside_a_range_reads_its_span_and_filters_exactly() {
    let (engine, store) = filled(false).await;
    let container = resolved(&engine, "c");
    let epk_of = |n: usize| {
        let value: PartitionKeyValue = pk(&format!("p{}", n % PARTITIONS)).expect("pk");
        value.effective(&container.partition_key)
    };
    // Bounds that are items' own EPKs, so items sit on both edges of the interval.
    let mut epks: Vec<String> = (0..PARTITIONS).map(epk_of).collect();
    epks.sort();
    let filter = RangeFilter {
        start: epks[PARTITIONS / 3].clone(),
        end: epks[PARTITIONS / 3 + 100].clone(),
    };
    let expected: BTreeSet<String> = (0..ITEMS)
        .filter(|n| filter.contains(&epk_of(*n)))
        .map(|n| format!("i{n}"))
        .collect();
    assert_eq!(expected.len(), 100 * ITEMS_PER_PARTITION);
    let (ids, reads) = feed_range(&engine, &store, &filter).await;
    assert_eq!(sorted(&ids), expected);
    // The span holds the interval's items and those of the partition at its end, which share
    // the end's point; each page but the last reads one item past its own to know there is more.
    let span_max = (expected.len() + ITEMS_PER_PARTITION + expected.len().div_ceil(64)) as u64;
    assert!(reads <= span_max, "{reads} reads");
    let request = QueryRequest {
        text: "SELECT VALUE c.id FROM c".into(),
        effective_range: Some((filter.start.clone(), filter.end.clone())),
        page_items_max: Some(1_000),
        ..QueryRequest::default()
    };
    let result = page(
        engine
            .query_items(&container, &request)
            .await
            .expect("query"),
    );
    let ids: Vec<String> = result
        .items
        .iter()
        .map(|id| id.as_str().expect("id").to_string())
        .collect();
    assert_eq!(sorted(&ids), expected);
    assert!(store.taken() <= span_max);
}

#[tokio::test]
async fn a_hierarchical_prefix_reads_only_its_partitions() {
    let store = Arc::new(CountingStore::new());
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let engine = Engine::open(store.clone(), clock, ten_ranges()).expect("engine");
    engine
        .create_database(json!({"id": "db"}), None)
        .await
        .expect("db");
    let definition = json!({"paths": ["/tenant", "/user"], "kind": "MultiHash", "version": 2});
    engine
        .create_container("db", json!({"id": "c", "partitionKey": definition}), None)
        .await
        .expect("container");
    let container = resolved(&engine, "c");
    let key = |text: String| PartitionKeyValue::parse_json_text(&text).expect("key");
    for n in 0..600 {
        let (tenant, user) = (format!("t{}", n % 20), format!("u{}", n % 7));
        let document = json!({"id": format!("i{n}"), "tenant": tenant, "user": user});
        let full = key(json!([tenant, user]).to_string());
        engine
            .write_item(&container, WriteMode::Create, Some(full), document, None)
            .await
            .expect("create");
    }
    store.taken();
    let request = QueryRequest {
        text: "SELECT VALUE c.id FROM c".into(),
        partition_key: Some(key(json!(["t3"]).to_string())),
        page_items_max: Some(1_000),
        ..QueryRequest::default()
    };
    let result = page(
        engine
            .query_items(&container, &request)
            .await
            .expect("query"),
    );
    let ids: Vec<String> = result
        .items
        .iter()
        .map(|id| id.as_str().expect("id").to_string())
        .collect();
    let expected: BTreeSet<String> = (0..600)
        .filter(|n| n % 20 == 3)
        .map(|n| format!("i{n}"))
        .collect();
    assert_eq!(sorted(&ids), expected);
    // The prefix's EPKs share their first 16 hex digits: one span, its own items only.
    assert_eq!(store.taken(), expected.len() as u64);
}

/// The byte after the container number of every item key in `store`: the layout marker.
fn layout_bytes(store: &CountingStore) -> BTreeSet<u8> {
    let mut markers = BTreeSet::new();
    store
        .inner()
        .read()
        .expect("read")
        .scan(Table::Items, &KeyRange::prefix(&[]), &mut |key, _| {
            markers.insert(key[8]);
            ControlFlow::Continue(())
        })
        .expect("scan");
    markers
}

#[tokio::test]
async fn a_container_stored_before_keeps_its_layout_for_life() {
    let (engine, store) = filled(false).await;
    assert_eq!(layout_bytes(&store), BTreeSet::from([b'E']));
    drop(engine);
    let (engine, store) = filled(true).await;
    // An old key opens with its partition key's length, whose high byte is zero.
    assert_eq!(layout_bytes(&store), BTreeSet::from([0]));
    let definition = json!({"paths": ["/pk"], "kind": "Hash", "version": 2});
    let body = json!({"id": "c", "partitionKey": definition, "defaultTtl": -1});
    engine
        .replace_container("db", "c", body, None)
        .await
        .expect("replace");
    assert!(engine.close(), "sole handle");
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let engine = Engine::open(store.clone(), clock, ten_ranges()).expect("engine");
    let container = resolved(&engine, "c");
    let item = engine
        .read_item(&container, pk("p7"), "i7")
        .expect("an old item reads by its key");
    assert_eq!(item.to_value().expect("item")["n"], json!(7));
    engine
        .delete_item(&container, pk("p7"), "i7", None)
        .await
        .expect("delete");
    let document = json!({"id": "new", "pk": "p7"});
    engine
        .write_item(&container, WriteMode::Create, pk("p7"), document, None)
        .await
        .expect("create");
    assert_eq!(
        layout_bytes(&store),
        BTreeSet::from([0]),
        "still the old layout"
    );
    let removed = engine
        .delete_partition(&container, pk("p7").expect("pk"))
        .await
        .expect("delete partition");
    assert_eq!(removed, ITEMS_PER_PARTITION as u64, "i1507 and new");
}

#[tokio::test]
async fn a_token_of_a_split_range_resumes_in_each_of_its_halves() {
    let store = Arc::new(CountingStore::new());
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let engine = Engine::open(store, clock, config()).expect("engine");
    engine
        .create_database(json!({"id": "db"}), None)
        .await
        .expect("db");
    let definition = json!({"paths": ["/pk"], "kind": "Hash", "version": 2});
    engine
        .create_container(
            "db",
            json!({"id": "c", "partitionKey": definition}),
            Some(lethedb_engine::Throughput::Manual(10_000)),
        )
        .await
        .expect("container");
    let container = resolved(&engine, "c");
    for n in 0..200 {
        let document = json!({"id": format!("i{n}"), "pk": format!("p{n}")});
        engine
            .write_item(
                &container,
                WriteMode::Create,
                pk(&format!("p{n}")),
                document,
                None,
            )
            .await
            .expect("create");
    }
    let query = |range_id: u32, continuation: Option<String>| QueryRequest {
        text: "SELECT VALUE c.id FROM c".into(),
        range_id: Some(range_id.to_string()),
        page_items_max: Some(30),
        continuation,
        ..QueryRequest::default()
    };
    let first = page(
        engine
            .query_items(&container, &query(0, None))
            .await
            .expect("page"),
    );
    let mut seen: Vec<Value> = first.items.clone();
    let offers = engine.list_offers().await.expect("offers");
    let mut offer = offers[0].clone();
    let offer_id = offer["id"].as_str().expect("id").to_string();
    offer["content"]["offerThroughput"] = json!(20_000);
    engine.replace_offer(&offer_id, offer).await.expect("split");
    let container = resolved(&engine, "c");
    let halves: Vec<u32> = container
        .ranges
        .ranges
        .iter()
        .map(|range| range.id)
        .collect();
    assert_eq!(halves, [1, 2]);
    // As the SDKs do after a split: the parent's token goes to each half.
    for half in halves {
        let mut continuation = first.continuation.clone();
        while let Some(token) = continuation.take() {
            let next = page(
                engine
                    .query_items(&container, &query(half, Some(token)))
                    .await
                    .expect("page"),
            );
            seen.extend(next.items);
            continuation = next.continuation;
        }
    }
    let ids: Vec<String> = seen
        .iter()
        .map(|id| id.as_str().expect("id").to_string())
        .collect();
    assert_eq!(sorted(&ids).len(), 200, "every item once");
}
