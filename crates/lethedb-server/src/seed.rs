//! Test data: `--seed PATH` creates databases, containers (with the properties a create takes:
//! partition key, indexing policy, TTL, unique keys...) and items when the server starts, and
//! `POST /_lethedb/reset` deletes every database and applies the seed again, so a test suite
//! can start each test from the same state.
//!
//! A seed is a JSON file `{"databases": [{"id", "throughput"?, "containers": [{<container
//! properties>, "throughput"?, "throughputBuckets"?: [{"id", "maxThroughputPercentage"}],
//! "items"?: [...], "itemsFile"?: "NAME.ndjson"}]}]}`, or a folder of
//! such files applied in name order. Applying is idempotent: a database or container that exists
//! is kept, and items are upserted. This module reads files and calls the engine's doors; it
//! answers no HTTP.

use anyhow::Context as _;
use lethedb_engine::{Engine, ErrorCode, Throughput, WriteMode};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Everything a seed creates.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Seed {
    #[serde(default)]
    databases: Vec<SeedDatabase>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SeedDatabase {
    id: String,
    #[serde(default)]
    throughput: Option<u32>,
    #[serde(default)]
    containers: Vec<SeedContainer>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SeedContainer {
    #[serde(default)]
    throughput: Option<u32>,
    /// Its throughput buckets, which the service sets through its control plane.
    #[serde(default)]
    throughput_buckets: Option<Value>,
    #[serde(default)]
    items: Vec<Value>,
    /// NDJSON items, relative to the seed file (resolved when the seed is loaded).
    #[serde(default)]
    items_file: Option<PathBuf>,
    /// The container's properties, as a create request's body.
    #[serde(flatten)]
    properties: Map<String, Value>,
}

/// What applying a seed created or wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Seeded {
    pub databases: usize,
    pub containers: usize,
    pub items: usize,
}

impl Seed {
    /// Reads a seed file, or every `.json` file of a folder in name order, with the items of
    /// their `itemsFile`s.
    pub fn load(path: &Path) -> anyhow::Result<Seed> {
        let files = if path.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("cannot read the seed folder {}", path.display()))?
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .filter(|file| file.extension().is_some_and(|ext| ext == "json"))
                .collect();
            files.sort();
            files
        } else {
            vec![path.to_path_buf()]
        };
        let mut seed = Seed::default();
        for file in files {
            seed.databases.extend(load_file(&file)?.databases);
        }
        Ok(seed)
    }

    /// Creates what is missing and upserts every item.
    pub async fn apply(&self, engine: &Engine) -> anyhow::Result<Seeded> {
        let mut seeded = Seeded::default();
        for database in &self.databases {
            let body = serde_json::json!({ "id": database.id });
            let throughput = throughput(database.throughput)?;
            if created(engine.create_database(body, throughput).await)? {
                seeded.databases += 1;
            }
            for container in &database.containers {
                seeded.items += apply_container(engine, &database.id, container, &mut seeded)
                    .await
                    .with_context(|| format!("seeding database {}", database.id))?;
            }
        }
        Ok(seeded)
    }
}

fn load_file(file: &Path) -> anyhow::Result<Seed> {
    let text = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut seed: Seed = serde_json::from_slice(&text)
        .with_context(|| format!("{} is not a seed", file.display()))?;
    let folder = file.parent().unwrap_or(Path::new("."));
    for container in seed
        .databases
        .iter_mut()
        .flat_map(|d| d.containers.iter_mut())
    {
        if let Some(items_file) = container.items_file.take() {
            let items_path = folder.join(items_file);
            let lines = std::fs::read_to_string(&items_path)
                .with_context(|| format!("cannot read {}", items_path.display()))?;
            for (number, line) in lines.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let item = serde_json::from_str(line).with_context(|| {
                    format!(
                        "{} line {}: not a JSON item",
                        items_path.display(),
                        number + 1
                    )
                })?;
                container.items.push(item);
            }
        }
    }
    Ok(seed)
}

/// Creates one container (unless it exists) and upserts its items; the number of items.
async fn apply_container(
    engine: &Engine,
    database_id: &str,
    container: &SeedContainer,
    seeded: &mut Seeded,
) -> anyhow::Result<usize> {
    let body = Value::Object(container.properties.clone());
    let id = body
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let throughput = throughput(container.throughput)?;
    if created(engine.create_container(database_id, body, throughput).await)? {
        seeded.containers += 1;
    }
    if let Some(buckets) = &container.throughput_buckets {
        engine
            .set_throughput_buckets(database_id, &id, buckets)
            .await
            .map_err(|error| anyhow::anyhow!("the throughput buckets of {id}: {error}"))?;
    }
    let resolved = engine
        .read_container(database_id, &id)
        .map_err(|error| anyhow::anyhow!("container {id}: {error}"))?;
    let mut written = 0;
    for item in &container.items {
        let mut item = item.clone();
        let outcome = match last_modified_ms(&mut item) {
            Some(instant) => engine
                .import_item(&resolved, item, instant)
                .await
                .map(|outcome| outcome.is_some()),
            None => engine
                .write_item(&resolved, WriteMode::Upsert, None, item, None)
                .await
                .map(|_| true),
        };
        written +=
            usize::from(outcome.map_err(|error| anyhow::anyhow!("an item of {id}: {error}"))?);
    }
    Ok(written)
}

/// The instant an exported item was last modified, which an import keeps: its exact
/// `_lastModifiedMs` (written by `lethedb export`, taken out of the item here), else its `_ts`
/// in seconds; none for an item without them, which is written as new.
fn last_modified_ms(item: &mut Value) -> Option<i64> {
    let exact = item
        .as_object_mut()
        .and_then(|fields| fields.remove(LAST_MODIFIED_MS))
        .and_then(|value| value.as_i64());
    exact.or_else(|| {
        item.get("_ts")
            .and_then(Value::as_i64)
            .map(|secs| secs.saturating_mul(1000))
    })
}

/// The property `lethedb export` adds to each item: the instant it was last modified, to the
/// millisecond (`_ts` has whole seconds), so that an import ends its time to live exactly.
pub const LAST_MODIFIED_MS: &str = "_lastModifiedMs";

/// Whether a create made the resource: a conflict means it was there already.
fn created<T>(outcome: lethedb_engine::EngineResult<T>) -> anyhow::Result<bool> {
    match outcome {
        Ok(_) => Ok(true),
        Err(error) if error.code == ErrorCode::ResourceIdConflict => Ok(false),
        Err(error) => Err(anyhow::anyhow!("{error}")),
    }
}

fn throughput(ru: Option<u32>) -> anyhow::Result<Option<Throughput>> {
    let text = ru.map(|ru| ru.to_string());
    Throughput::from_request(text.as_deref(), None).map_err(|error| anyhow::anyhow!("{error}"))
}
