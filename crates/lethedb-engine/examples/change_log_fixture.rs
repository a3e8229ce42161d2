//! Writes the store fixture of `tests/engine/log_layout.rs`: a small history of one container
//! (creates, a replace, a delete, a log trimmed past retention, a replace after it) written by
//! the engine this is built with into a store in memory, dumped table by table as JSON (keys
//! and values in hex). Run on the release whose layout the fixture is to hold:
//! `cargo run -p lethedb-engine --example change_log_fixture > FILE`.

use lethedb_engine::{Engine, EngineConfig, ErrorCode, ManualClock, PartitionKeyValue, WriteMode};
use lethedb_storage::{KeyRange, MemoryStore, Storage, Table};
use serde_json::{json, Map, Value};
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

/// The fixture's first instant; the test's clock starts from it too.
const START_MS: i64 = 1_800_000_000_000;

/// The statuses the engine names failures with (none are expected here).
fn wire_status(_: ErrorCode) -> (u16, &'static str) {
    (500, "InternalServerError")
}

/// A single string partition key.
fn pk(value: &Value) -> Result<PartitionKeyValue, Box<dyn std::error::Error>> {
    Ok(PartitionKeyValue::parse_json_text(
        &json!([value]).to_string(),
    )?)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

async fn upsert(engine: &Engine, item: Value) -> Result<(), Box<dyn std::error::Error>> {
    let container = engine.read_container("db", "c")?;
    let key = pk(&item["pk"])?;
    engine
        .write_item(&container, WriteMode::Upsert, Some(key), item, None)
        .await?;
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(ManualClock::new(START_MS));
    let config = EngineConfig::new(wire_status);
    let engine = Engine::open(store.clone(), clock.clone(), config)?;
    engine.create_database(json!({"id": "db"}), None).await?;
    let definition =
        json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2}});
    engine.create_container("db", definition, None).await?;
    upsert(&engine, json!({"id": "a", "pk": "p", "v": 1})).await?;
    upsert(&engine, json!({"id": "a", "pk": "p", "v": 2})).await?;
    upsert(&engine, json!({"id": "b", "pk": "q", "v": 1})).await?;
    upsert(&engine, json!({"id": "d", "pk": "p", "v": 1})).await?;
    let container = engine.read_container("db", "c")?;
    let p = pk(&json!("p"))?;
    engine.delete_item(&container, Some(p), "d", None).await?;
    // Past the default retention of 60 minutes: the maintenance trims every entry so far.
    clock.advance_ms(61 * 60_000);
    upsert(&engine, json!({"id": "f", "pk": "q", "v": 1})).await?;
    engine.maintain_change_feeds().await?;
    upsert(&engine, json!({"id": "f", "pk": "q", "v": 2})).await?;
    engine.close();
    let mut tables = Map::new();
    let reader = store.read()?;
    for table in Table::ALL {
        let mut rows = Vec::new();
        let everything = KeyRange {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
        };
        reader.scan(table, &everything, &mut |key, value| {
            rows.push(json!([hex(key), hex(value)]));
            ControlFlow::Continue(())
        })?;
        tables.insert(format!("{table:?}"), Value::Array(rows));
    }
    println!("{}", serde_json::to_string_pretty(&Value::Object(tables))?);
    Ok(())
}
