//! The claims the writer keeps against the claims recomputed from the items, after random
//! sequences of writes on every path (create, upsert, replace, patch, delete, partition delete,
//! batches), the clock moving past items' expiry and the sweeper purging them. Each write's
//! outcome is also predicted from the visible items alone (equal values in one partition, a
//! missing value counting as null), without the claims.

use super::claims_of;
use crate::clock::{Clock, ManualClock};
use crate::container::Container;
use crate::engine::{Engine, EngineConfig};
use crate::error::ErrorCode;
use crate::items::batch::{parse_batch, BatchMode};
use crate::items::rules::WriteMode;
use crate::keys;
use crate::partitions::partition_key::PartitionKeyValue;
use crate::records::ItemRecord;
use crate::ttl::expiry::record_is_expired;
use lethedb_storage::{KeyRange, MemoryStore, ReadTxn, Storage, Table};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;

const IDS: [&str; 5] = ["a", "b", "c", "d", "e"];
const PARTITIONS: [&str; 2] = ["p", "q"];

fn wire_status(code: ErrorCode) -> (u16, &'static str) {
    match code {
        ErrorCode::ItemIdConflict => (409, "Conflict"),
        ErrorCode::ItemNotFound => (404, "NotFound"),
        _ => (400, "BadRequest"),
    }
}

/// A tiny deterministic generator (xorshift), so a failure replays.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    fn pick<'a>(&mut self, choices: &[&'a str]) -> &'a str {
        choices[self.below(choices.len() as u64) as usize]
    }
}

fn partition(name: &str) -> Option<PartitionKeyValue> {
    PartitionKeyValue::parse_json_text(&json!([name]).to_string()).ok()
}

/// A random document: `email` (maybe missing or null), `a` and `b` (maybe missing), `ttl`.
fn document(rng: &mut Rng, id: &str, partition: &str) -> Value {
    let mut document = json!({"id": id, "pk": partition});
    match rng.below(5) {
        0 => {}
        1 => document["email"] = Value::Null,
        _ => document["email"] = json!(rng.pick(&["x", "y", "z"])),
    }
    for name in ["a", "b"] {
        if rng.below(4) > 0 {
            document[name] = json!(rng.below(2));
        }
    }
    if rng.below(3) == 0 {
        document["ttl"] = json!([-1, 1, 3][rng.below(3) as usize]);
    }
    document
}

/// What each unique key of the container sees of a document: null for a missing value.
fn values(document: &Value) -> [Vec<Value>; 2] {
    let at = |name: &str| document.get(name).cloned().unwrap_or(Value::Null);
    [vec![at("email")], vec![at("a"), at("b")]]
}

/// The visible items of the container, by (partition, id).
async fn visible(engine: &Engine, container: &Arc<Container>) -> BTreeMap<(String, String), Value> {
    let feed = engine
        .read_feed(
            container,
            None,
            crate::partitions::ranges::RangeFilter::everything(),
            1000,
            None,
        )
        .await
        .expect("feed");
    let mut items = BTreeMap::new();
    for item in feed.items {
        let document = item.to_value().expect("value");
        let key = (
            document["pk"].as_str().unwrap_or_default().to_string(),
            document["id"].as_str().unwrap_or_default().to_string(),
        );
        items.insert(key, document);
    }
    items
}

/// Whether writing `document` (replacing the item of id `replaced` in its partition) would
/// meet another visible item with equal values under some unique key.
fn predicts_conflict(
    items: &BTreeMap<(String, String), Value>,
    document: &Value,
    replaced: &str,
) -> bool {
    let partition = document["pk"].as_str().unwrap_or_default();
    let id = document["id"].as_str().unwrap_or_default();
    let mine = values(document);
    items.iter().any(|((other_partition, other_id), other)| {
        other_partition == partition
            && other_id != id
            && other_id != replaced
            && values(other)
                .iter()
                .zip(mine.iter())
                .any(|(theirs, ours)| theirs == ours)
    })
}

/// The claims stored for the container, and those its items make: every claim of a visible
/// item, and the claims of expired items not yet purged (which may hold them still).
struct Claims {
    stored: BTreeMap<Vec<u8>, Vec<u8>>,
    visible: BTreeMap<Vec<u8>, Vec<u8>>,
    expired: Vec<(Vec<u8>, Vec<u8>)>,
}

fn claims(store: &MemoryStore, container: &Container, now_ms: i64) -> Claims {
    let reader = store.read().expect("read");
    let number = container.key_number();
    let mut stored = BTreeMap::new();
    scan(
        &*reader,
        Table::Index,
        &keys::unique_claims_prefix(number),
        &mut |key, value| {
            stored.insert(key.to_vec(), keys::item_key_from_suffix(number, value));
        },
    );
    let (mut visible, mut expired) = (BTreeMap::new(), Vec::new());
    scan(
        &*reader,
        Table::Items,
        &keys::container_items_prefix(number),
        &mut |key, value| {
            let record = ItemRecord::decode(value).expect("record");
            let document = record.document().expect("document");
            let partition_bytes = keys::partition_bytes(key).expect("partition");
            for claim in claims_of(container, partition_bytes, &document) {
                if record_is_expired(container, &record, now_ms) {
                    expired.push((claim, key.to_vec()));
                } else {
                    assert!(
                        visible.insert(claim, key.to_vec()).is_none(),
                        "two visible holders"
                    );
                }
            }
        },
    );
    Claims {
        stored,
        visible,
        expired,
    }
}

fn scan(reader: &dyn ReadTxn, table: Table, prefix: &[u8], visit: &mut dyn FnMut(&[u8], &[u8])) {
    reader
        .scan(table, &KeyRange::prefix(prefix), &mut |key, value| {
            visit(key, value);
            ControlFlow::Continue(())
        })
        .expect("scan");
}

/// Every visible item's claims are stored and name it; every stored claim names a stored
/// version that makes it.
fn check_consistent(claims: &Claims) {
    for (claim, holder) in &claims.visible {
        assert_eq!(
            claims.stored.get(claim),
            Some(holder),
            "a visible item's claim"
        );
    }
    for (claim, holder) in &claims.stored {
        let made = claims.visible.get(claim) == Some(holder)
            || claims.expired.contains(&(claim.clone(), holder.clone()));
        assert!(made, "a stored claim no version makes");
    }
}

/// One random operation; panics when its outcome is not the predicted one.
async fn step(engine: &Engine, clock: &ManualClock, rng: &mut Rng) {
    let container = engine.read_container("db", "c").expect("container");
    let items = visible(engine, &container).await;
    let (id, partition_name) = (rng.pick(&IDS), rng.pick(&PARTITIONS));
    let pk = partition(partition_name);
    let exists = items.contains_key(&(partition_name.to_string(), id.to_string()));
    let body = document(rng, id, partition_name);
    let conflict = predicts_conflict(&items, &body, id);
    let refused = Err(ErrorCode::ItemIdConflict);
    let (outcome, expected) = match rng.below(9) {
        0 | 1 => {
            let created = engine
                .write_item(&container, WriteMode::Create, pk, body, None)
                .await;
            (
                created.map(drop),
                if exists || conflict { refused } else { Ok(()) },
            )
        }
        2 => {
            let upserted = engine
                .write_item(&container, WriteMode::Upsert, pk, body, None)
                .await;
            (upserted.map(drop), if conflict { refused } else { Ok(()) })
        }
        3 => {
            let mode = WriteMode::Replace(id.to_string());
            let replaced = engine.write_item(&container, mode, pk, body, None).await;
            let expected = match (exists, conflict) {
                (false, _) => Err(ErrorCode::ItemNotFound),
                (true, true) => refused,
                (true, false) => Ok(()),
            };
            (replaced.map(drop), expected)
        }
        4 => {
            let email = body.get("email").cloned().unwrap_or(Value::Null);
            let key = (partition_name.to_string(), id.to_string());
            let mut patched = items.get(&key).cloned().unwrap_or(json!({}));
            patched["email"] = email.clone();
            let conflict = exists && predicts_conflict(&items, &patched, id);
            let operations =
                json!({"operations": [{"op": "set", "path": "/email", "value": email}]});
            let patch = engine
                .patch_item(&container, pk, id, operations, None)
                .await;
            let expected = match (exists, conflict) {
                (false, _) => Err(ErrorCode::ItemNotFound),
                (true, true) => refused,
                (true, false) => Ok(()),
            };
            (patch.map(drop), expected)
        }
        5 => {
            let deleted = engine.delete_item(&container, pk, id, None).await;
            let expected = if exists {
                Ok(())
            } else {
                Err(ErrorCode::ItemNotFound)
            };
            (deleted.map(drop), expected)
        }
        6 => {
            let other_id = rng.pick(&IDS);
            let other = document(rng, other_id, partition_name);
            let operations = parse_batch(&json!([
                {"operationType": "Upsert", "resourceBody": body},
                {"operationType": "Upsert", "resourceBody": other},
            ]))
            .expect("batch");
            let batch = engine
                .execute_batch(&container, pk, operations, BatchMode::Atomic)
                .await;
            (batch.map(drop), Ok(()))
        }
        7 if rng.below(8) == 0 => {
            let deleted = engine.delete_partition(&container, pk.expect("pk")).await;
            (deleted.map(drop), Ok(()))
        }
        _ => {
            clock.advance_ms(rng.below(2_500) as i64);
            let swept = engine.sweep_once(1 + rng.below(3) as usize).await;
            (swept.map(drop), Ok(()))
        }
    };
    assert_eq!(outcome.map_err(|error| error.code), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stored_claims_are_the_claims_the_items_make() {
    for seed in [7_u64, 11, 42, 2024] {
        let clock = Arc::new(ManualClock::new(1_800_000_000_000));
        let store = Arc::new(MemoryStore::new());
        let storage: Arc<dyn Storage> = store.clone();
        let engine =
            Engine::open(storage, clock.clone(), EngineConfig::new(wire_status)).expect("engine");
        engine
            .create_database(json!({"id": "db"}), None)
            .await
            .expect("db");
        let policy = json!({"uniqueKeys": [{"paths": ["/email"]}, {"paths": ["/a", "/b"]}]});
        let definition = json!({"id": "c", "partitionKey": {"paths": ["/pk"]}, "defaultTtl": 5, "uniqueKeyPolicy": policy});
        engine
            .create_container("db", definition, None)
            .await
            .expect("container");
        let mut rng = Rng(seed);
        for _ in 0..300 {
            step(&engine, &clock, &mut rng).await;
            let container = engine.read_container("db", "c").expect("container");
            check_consistent(&claims(&store, &container, clock.now_ms()));
        }
        // Once everything expired is purged, the claims are exactly the visible items' claims.
        clock.advance_ms(10_000);
        while engine.sweep_once(1_000).await.expect("sweep") != (0, false) {}
        let container = engine.read_container("db", "c").expect("container");
        let claims = claims(&store, &container, clock.now_ms());
        assert!(claims.expired.is_empty());
        assert_eq!(claims.stored, claims.visible, "seed {seed}");
    }
}
