//! `lethedb export`: a store's databases, containers and items written as a seed folder
//! (`seed.rs`): one `<database>.json` per database with its containers' properties, and one
//! NDJSON file of items per container (each item as it was written, without system
//! properties). Starting a server with `--seed` on that folder imports it.
//!
//! It reads through the engine's doors and writes files; it serves nothing.

use crate::seed::LAST_MODIFIED_MS;
use anyhow::Context as _;
use lethedb_engine::{Engine, RangeFilter};
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde_json::{json, Map, Value};
use std::io::Write as _;
use std::path::Path;

/// Items read per page of a container's feed.
const PAGE_ITEMS: usize = 1000;

/// What an export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Exported {
    pub databases: usize,
    pub containers: usize,
    pub items: usize,
}

/// Writes every database of `engine` into the folder `out` (created if missing).
pub async fn export(engine: &Engine, out: &Path) -> anyhow::Result<Exported> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut exported = Exported::default();
    for database in engine.list_databases().await? {
        let database_id = id_of(&database)?;
        let mut containers = Vec::new();
        for container in engine.list_containers(&database_id).await? {
            let container_id = id_of(&container)?;
            let items_file = format!(
                "{}.{}.ndjson",
                file_part(&database_id),
                file_part(&container_id)
            );
            exported.items +=
                export_items(engine, &database_id, &container_id, &out.join(&items_file))
                    .await
                    .with_context(|| format!("exporting {database_id}/{container_id}"))?;
            let mut properties = without_system_properties(&container);
            properties.insert("itemsFile".into(), Value::String(items_file));
            containers.push(Value::Object(properties));
            exported.containers += 1;
        }
        let seed = json!({"databases": [{"id": database_id, "containers": containers}]});
        let file = out.join(format!("{}.json", file_part(&database_id)));
        std::fs::write(&file, serde_json::to_vec_pretty(&seed)?)
            .with_context(|| format!("cannot write {}", file.display()))?;
        exported.databases += 1;
    }
    Ok(exported)
}

/// Writes one container's items, a JSON document a line; the number written.
async fn export_items(
    engine: &Engine,
    database_id: &str,
    container_id: &str,
    file: &Path,
) -> anyhow::Result<usize> {
    let container = engine.read_container(database_id, container_id)?;
    let mut writer = std::io::BufWriter::new(
        std::fs::File::create(file).with_context(|| format!("cannot write {}", file.display()))?,
    );
    let mut written = 0;
    let mut continuation: Option<String> = None;
    loop {
        let feed = engine
            .read_feed(
                &container,
                None,
                RangeFilter::everything(),
                PAGE_ITEMS,
                continuation.as_deref(),
            )
            .await?;
        for item in &feed.items {
            // The document as written, with the instant it was last modified, which an import
            // keeps (`seed.rs`): compact JSON on one line.
            let mut document: Value = serde_json::from_slice(&item.record.body)?;
            if let Some(fields) = document.as_object_mut() {
                let modified_ms = item.record.last_modified_ms;
                fields.insert("_ts".into(), json!(modified_ms.div_euclid(1000)));
                fields.insert(LAST_MODIFIED_MS.into(), json!(modified_ms));
            }
            serde_json::to_writer(&mut writer, &document)?;
            writer.write_all(b"\n")?;
            written += 1;
        }
        match feed.continuation {
            Some(next) => continuation = Some(next),
            None => break,
        }
    }
    writer.flush()?;
    Ok(written)
}

fn id_of(resource: &Value) -> anyhow::Result<String> {
    resource
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .context("a resource without an id")
}

/// A resource's properties as a create request takes them: the system ones (`_rid`, `_ts`...)
/// left out.
fn without_system_properties(resource: &Value) -> Map<String, Value> {
    resource
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(name, _)| !name.starts_with('_'))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// An id as part of a file name: letters and digits kept, everything else percent-encoded.
fn file_part(id: &str) -> String {
    utf8_percent_encode(id, NON_ALPHANUMERIC).to_string()
}
