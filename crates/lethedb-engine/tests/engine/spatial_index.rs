//! The spatial index through the public API: `ST_DISTANCE`, `ST_WITHIN` and `ST_INTERSECTS`
//! filters on a container with a spatial index return what the same filters return on a
//! container without one (both in the verify mode, which also runs each page's scan), for
//! random points, lines and polygons clustered at the antimeridian, the north pole and a city,
//! while loading few documents; the index stays consistent through replaces and deletes, is
//! built when a policy change adds it or when a container stored before spatial entries loads,
//! and is named in the index metrics.

use crate::common::{config, create_documents, engine_on_store, page, pk, resolved, Rng};
use crate::index_build::build_to_the_end;
use lethedb_engine::{Engine, EngineConfig, ManualClock, QueryPage, QueryRequest, WriteMode};
use lethedb_storage::{KeyRange, MemoryStore, Storage, Table};
use serde_json::{json, Value};
use std::ops::ControlFlow;
use std::sync::Arc;

const ITEMS: u64 = 400;

/// The places documents and queries cluster around: a city, the antimeridian near Fiji, the
/// north pole, and the whole world.
fn place(rng: &mut Rng) -> (f64, f64) {
    let jitter = |rng: &mut Rng, size: f64| (rng.below(2_000_001) as f64 / 1e6 - 1.0) * size;
    match rng.below(4) {
        0 => (-122.33 + jitter(rng, 0.2), 47.61 + jitter(rng, 0.2)),
        1 => {
            let longitude = 179.9 + jitter(rng, 0.1);
            let longitude = if rng.below(2) == 0 {
                longitude
            } else {
                -longitude
            };
            (longitude, -16.5 + jitter(rng, 0.2))
        }
        2 => (jitter(rng, 180.0), 89.9 + jitter(rng, 0.1)),
        _ => (jitter(rng, 180.0), jitter(rng, 89.0)),
    }
}

fn position((longitude, latitude): (f64, f64)) -> Value {
    json!([longitude.clamp(-180.0, 180.0), latitude.clamp(-90.0, 90.0)])
}

fn point(at: (f64, f64)) -> Value {
    json!({"type": "Point", "coordinates": position(at)})
}

/// A closed ring of a box `size` degrees wide around `at`.
fn square((longitude, latitude): (f64, f64), size: f64) -> Value {
    let corner = |x: f64, y: f64| position((longitude + x * size, latitude + y * size));
    let ring = [
        corner(-1.0, -1.0),
        corner(1.0, -1.0),
        corner(1.0, 1.0),
        corner(-1.0, 1.0),
        corner(-1.0, -1.0),
    ];
    json!({"type": "Polygon", "coordinates": [ring]})
}

/// The location of document `n`: mostly points, some lines and polygons, a few values that
/// are no geometry, and a few documents without one.
fn location(rng: &mut Rng, n: u64) -> Option<Value> {
    let at = place(rng);
    Some(match n % 20 {
        0 => json!({"type": "LineString",
            "coordinates": [position(at), position((at.0 + 0.05, at.1 + 0.02))]}),
        1 => square(at, 0.01),
        2 => json!({"type": "Point", "coordinates": [200, 0]}),
        3 => return None,
        _ => point(at),
    })
}

async fn engine_with(spatial: bool) -> Engine {
    let mut policy = json!({"includedPaths": [{"path": "/*"}]});
    if spatial {
        policy["spatialIndexes"] = json!([{"path": "/loc/*", "types": ["Point", "Polygon"]}]);
    }
    let container =
        json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "indexingPolicy": policy});
    let config = EngineConfig {
        query_verify: true,
        ..config()
    };
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    engine_on_store(Arc::new(MemoryStore::new()), clock, container, config).await
}

fn documents() -> Vec<Value> {
    let mut rng = Rng(0x051a_71a1);
    (0..ITEMS)
        .map(|n| {
            let mut body = json!({"id": format!("i{n}"), "pk": format!("p{}", n % 5), "n": n});
            if let Some(location) = location(&mut rng, n) {
                body["loc"] = location;
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

/// A random filter with its parameters: a distance, a containment or an intersection, written
/// either way round, around one of the places.
fn random_filter(rng: &mut Rng) -> (&'static str, Vec<(&'static str, Value)>) {
    let at = place(rng);
    let meters = [50.0, 2_000.0, 30_000.0, 400_000.0][rng.below(4) as usize];
    let size = [0.001, 0.05, 0.5][rng.below(3) as usize];
    let text = match rng.below(6) {
        0 => "SELECT VALUE c.id FROM c WHERE ST_DISTANCE(c.loc, @p) < @r",
        1 => "SELECT VALUE c.id FROM c WHERE @r >= ST_DISTANCE(@p, c.loc) AND c.n >= 0",
        2 => "SELECT VALUE c.id FROM c WHERE ST_WITHIN(c.loc, @g)",
        3 => "SELECT VALUE c.id FROM c WHERE ST_WITHIN(@g, c.loc)",
        4 => "SELECT VALUE c.id FROM c WHERE ST_INTERSECTS(@g, c.loc)",
        _ => "SELECT VALUE c.id FROM c WHERE ST_INTERSECTS(c.loc, @g) OR c.n = 7",
    };
    let parameters = vec![
        ("@p", point(at)),
        ("@r", json!(meters)),
        ("@g", square(at, size)),
    ];
    (text, parameters)
}

#[tokio::test]
async fn indexed_spatial_filters_return_what_a_scan_returns_loading_few_documents() {
    let (indexed, plain) = (engine_with(true).await, engine_with(false).await);
    create_documents(&indexed, documents()).await;
    create_documents(&plain, documents()).await;
    let mut rng = Rng(0xfeed_beef);
    let (mut found, mut served, mut loaded, mut lookups) = (0usize, 0u64, 0u64, 0u64);
    for _ in 0..150 {
        let (text, parameters) = random_filter(&mut rng);
        let with_index = query(&indexed, text, &parameters).await;
        let without = query(&plain, text, &parameters).await;
        assert_eq!(ids(&with_index), ids(&without), "{text} {parameters:?}");
        // Without a spatial index the spatial conjunct is not served: every item is loaded.
        assert_eq!(retrieved(&without), ITEMS, "{text}");
        found += with_index.items.len();
        if with_index.index_lookups > 0 {
            served += 1;
            loaded += retrieved(&with_index);
            lookups += with_index.index_lookups;
        }
    }
    println!("found {found}, served {served}, loaded {loaded}, index lookups {lookups}");
    // Most filters are selective enough to read the index, and those load a small share of
    // the container on average.
    assert!(found > 150, "{found}");
    assert!(served > 75, "{served}");
    assert!(loaded / served < ITEMS / 8, "{loaded} over {served}");
    // One point near Seattle's center, within a few meters: a handful of candidates.
    let near = query(
        &indexed,
        "SELECT VALUE c.id FROM c WHERE ST_DISTANCE(c.loc, @p) < 5",
        &[("@p", documents()[4]["loc"].clone())],
    )
    .await;
    assert_eq!(near.items, [json!("i4")]);
    assert!(
        near.index_lookups > 0 && retrieved(&near) <= 3,
        "{}",
        retrieved(&near)
    );
    let check = indexed
        .check_index(&resolved(&indexed, "c"))
        .await
        .expect("check");
    assert!(check.is_consistent() && check.stored > ITEMS, "{check:?}");
}

#[tokio::test]
async fn replaced_and_deleted_geometries_leave_the_index() {
    let engine = engine_with(true).await;
    create_documents(&engine, documents()).await;
    let container = resolved(&engine, "c");
    let moved = json!({"id": "i4", "pk": "p4", "n": 4, "loc": point((10.0, 10.0))});
    engine
        .write_item(
            &container,
            WriteMode::Replace("i4".into()),
            pk("p4"),
            moved,
            None,
        )
        .await
        .expect("replace");
    engine
        .delete_item(&container, pk("p0"), "i5", None)
        .await
        .expect("delete");
    let text = "SELECT VALUE c.id FROM c WHERE ST_DISTANCE(c.loc, @p) < 1000";
    let old = documents();
    let at_old = query(&engine, text, &[("@p", old[4]["loc"].clone())]).await;
    assert!(!at_old.items.contains(&json!("i4")));
    let at_new = query(&engine, text, &[("@p", point((10.0, 10.0)))]).await;
    assert_eq!(at_new.items, [json!("i4")]);
    let deleted = query(&engine, text, &[("@p", old[5]["loc"].clone())]).await;
    assert!(!deleted.items.contains(&json!("i5")));
    let check = engine.check_index(&container).await.expect("check");
    assert!(check.is_consistent(), "{check:?}");
}

#[tokio::test]
async fn a_policy_change_builds_the_spatial_index_and_metrics_name_it() {
    let engine = engine_with(false).await;
    create_documents(&engine, documents()).await;
    let text = "SELECT VALUE c.id FROM c WHERE ST_DISTANCE(c.loc, @p) < 5";
    let parameters = [("@p", documents()[4]["loc"].clone())];
    let before = query(&engine, text, &parameters).await;
    assert_eq!((before.index_lookups, retrieved(&before)), (0, ITEMS));
    let policy = json!({"includedPaths": [{"path": "/*"}],
        "spatialIndexes": [{"path": "/loc/*", "types": ["Point"]}]});
    crate::index_build::replace_policy(&engine, policy, None).await;
    assert_eq!(build_to_the_end(&engine, 64).await, ITEMS);
    let after = query(&engine, text, &parameters).await;
    assert_eq!(after.items, before.items);
    assert!(after.index_lookups > 0 && retrieved(&after) <= 3);
    let metrics = after.index_utilization.expect("index metrics");
    let specs: Vec<&Value> = metrics["UtilizedSingleIndexes"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|entry| &entry["IndexSpec"])
        .collect();
    assert_eq!(specs, [&json!("/loc/*")], "{metrics}");
    let check = engine
        .check_index(&resolved(&engine, "c"))
        .await
        .expect("check");
    assert!(check.is_consistent(), "{check:?}");
}

/// Makes the store look as one written before spatial entries: none stored, and container
/// records of index format 1.
fn forget_spatial_entries(store: &MemoryStore) {
    let (mut spatial, mut containers) = (Vec::new(), Vec::new());
    {
        let reader: &dyn lethedb_storage::ReadTxn = &*store.read().expect("read");
        reader
            .scan(Table::Index, &KeyRange::prefix(&[]), &mut |key, _| {
                if key.get(8) == Some(&b'S') {
                    spatial.push(key.to_vec());
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
    assert!(!spatial.is_empty());
    let mut write = store.write().expect("write");
    for key in spatial {
        write.delete(Table::Index, &key).expect("delete");
    }
    for (key, value) in containers {
        let mut record: Value = serde_json::from_slice(&value).expect("record");
        record["index_format"] = json!(1);
        write
            .put(Table::Catalog, &key, record.to_string().as_bytes())
            .expect("put");
    }
    write.commit().expect("commit");
}

#[tokio::test]
async fn a_container_stored_before_spatial_entries_gets_them_in_the_background() {
    let clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let store = Arc::new(MemoryStore::new());
    let container = json!({"id": "c", "partitionKey": {"paths": ["/pk"]},
        "indexingPolicy": {"spatialIndexes": [{"path": "/loc/*", "types": ["Point"]}]}});
    let engine = engine_on_store(store.clone(), clock.clone(), container, config()).await;
    create_documents(&engine, documents()).await;
    assert!(engine.close(), "sole handle");
    forget_spatial_entries(&store);
    let engine = Engine::open(store, clock, config()).expect("engine");
    assert!(!resolved(&engine, "c").index_ready());
    let text = "SELECT VALUE c.id FROM c WHERE ST_DISTANCE(c.loc, @p) < 5";
    let parameters = [("@p", documents()[4]["loc"].clone())];
    let scanned = query(&engine, text, &parameters).await;
    assert_eq!(scanned.items, [json!("i4")]);
    assert_eq!(retrieved(&scanned), ITEMS);
    assert_eq!(build_to_the_end(&engine, 64).await, ITEMS);
    let check = engine
        .check_index(&resolved(&engine, "c"))
        .await
        .expect("check");
    assert!(check.is_consistent(), "{check:?}");
    let served = query(&engine, text, &parameters).await;
    assert_eq!(served.items, [json!("i4")]);
    assert!(served.index_lookups > 0 && retrieved(&served) <= 3);
}
