//! A container's public resource: the indexing policy as the service checks and normalises it
//! (its paths' grammar is `catalog/index_paths.rs`), the properties kept as sent or defaulted,
//! and the system properties a container carries.
//!
//! Pure functions of a request body; nothing here reads or writes storage or decides TTL
//! behaviour beyond parsing `defaultTtl`.

use crate::catalog::encryption_policy::{normalize_client_encryption_policy, POLICY_PROPERTY};
use crate::catalog::index_paths::{check_path, PathList};
use crate::catalog::search_policy::check_search_policies;
use crate::catalog::unique_key_policy::normalize_unique_key_policy;
use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::partitions::partition_key::PartitionKeyDefinition;
use crate::ttl;
use lethedb_query::ComputedProperties;
use serde_json::{json, Map, Value};

/// The indexing policy as the service stores and returns it, with its defaults filled in.
pub(crate) fn normalize_indexing_policy(policy: Option<&Value>) -> EngineResult<Value> {
    let mut policy = match policy {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => return Err(invalid_policy("it must be an object")),
    };
    let mode = indexing_mode(&policy)?;
    // The service no longer honours `automatic: false` (every item is indexed by the policy's
    // paths): a boolean is accepted and the policy comes back with `automatic: true` whatever
    // was sent, except with indexing mode `none`, which indexes nothing and comes back with
    // `automatic: false` (the Rust SDK sends `automatic: false` on every policy it builds and
    // checks both answers).
    match policy.get("automatic") {
        None | Some(Value::Null | Value::Bool(_)) => {}
        Some(_) => return Err(invalid_policy("'automatic' must be a boolean")),
    }
    let automatic = mode != "none";
    for list in [
        "includedPaths",
        "excludedPaths",
        "compositeIndexes",
        "spatialIndexes",
    ] {
        if let Some(value) = policy.get(list) {
            if !value.is_array() && !value.is_null() {
                return Err(invalid_policy(&format!("'{list}' must be an array")));
            }
        }
    }
    let (included, excluded) = indexed_paths(&policy, &mode)?;
    check_composites(policy.get("compositeIndexes"))?;
    policy.insert("indexingMode".into(), Value::String(mode));
    policy.insert("automatic".into(), Value::Bool(automatic));
    policy.insert("includedPaths".into(), Value::Array(included));
    policy.insert("excludedPaths".into(), Value::Array(excluded));
    Ok(Value::Object(policy))
}

fn invalid_policy(why: &str) -> EngineError {
    EngineError::with_message(
        ErrorCode::InvalidIndexingPolicy,
        format!("The indexing policy is invalid: {why}."),
    )
}

/// The policy's indexing mode, lower case: `consistent` (the default), `lazy` or `none`.
fn indexing_mode(policy: &Map<String, Value>) -> EngineResult<String> {
    let mode = match policy.get("indexingMode") {
        None | Some(Value::Null) => "consistent".to_string(),
        Some(Value::String(mode)) => mode.to_ascii_lowercase(),
        Some(_) => return Err(invalid_policy("'indexingMode' must be a string")),
    };
    if !["consistent", "lazy", "none"].contains(&mode.as_str()) {
        return Err(invalid_policy(
            "'indexingMode' must be 'consistent', 'lazy' or 'none'",
        ));
    }
    Ok(mode)
}

/// The service's refusal of a policy that names the root in neither list while it lists
/// included paths.
const ROOT_MISSING: &str = "The special mandatory indexing path \"/\" is not provided in any of the path type sets. Please provide this path in one of the sets.";

/// The entries of a policy's path list, each an object with a `path` the grammar accepts.
fn path_list(policy: &Map<String, Value>, list: &str) -> EngineResult<Vec<Value>> {
    let entries = policy
        .get(list)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for entry in &entries {
        let Some(path) = entry.get("path").and_then(Value::as_str) else {
            return Err(invalid_policy(&format!(
                "every entry of '{list}' must be an object with a string 'path'"
            )));
        };
        check_path(path, PathList::IncludedOrExcluded)?;
    }
    Ok(entries)
}

/// Whether a path list names the root: `/*`, or the legacy `/`.
fn names_root(entries: &[Value]) -> bool {
    entries
        .iter()
        .filter_map(|entry| entry.get("path").and_then(Value::as_str))
        .any(|path| path == "/*" || path == "/")
}

/// The included and excluded paths as the service returns them under `mode`: the root is
/// included when neither list names it, and refused as missing when included paths are listed
/// without it.
fn indexed_paths(
    policy: &Map<String, Value>,
    mode: &str,
) -> EngineResult<(Vec<Value>, Vec<Value>)> {
    let included = path_list(policy, "includedPaths")?;
    let mut excluded = path_list(policy, "excludedPaths")?;
    if mode == "none" {
        if !included.is_empty() {
            return Err(invalid_policy(
                "a policy with indexing mode 'none' cannot include paths",
            ));
        }
        return Ok((Vec::new(), excluded));
    }
    // Legacy per-path `indexes` (Hash/Range kinds, precisions) are dropped, as the service
    // does since every path is range-indexed: its policies come back without them.
    let mut included: Vec<Value> = included
        .into_iter()
        .map(|mut path| {
            if let Value::Object(map) = &mut path {
                map.shift_remove("indexes");
            }
            path
        })
        .collect();
    if !names_root(&included) && !names_root(&excluded) {
        if !included.is_empty() {
            return Err(EngineError::with_message(
                ErrorCode::InvalidIndexingPolicy,
                ROOT_MISSING,
            ));
        }
        included.push(json!({"path": "/*"}));
    }
    let etag_path = json!({"path": "/\"_etag\"/?"});
    if !excluded.contains(&etag_path) {
        excluded.push(etag_path);
    }
    Ok((included, excluded))
}

/// Checks a policy's composite indexes: each lists two or more paths (no wildcard), each path
/// with an optional `order` of `ascending` or `descending`. They are stored as sent.
fn check_composites(composites: Option<&Value>) -> EngineResult<()> {
    let Some(composites) = composites.and_then(Value::as_array) else {
        return Ok(());
    };
    for composite in composites {
        let Some(paths) = composite.as_array() else {
            return Err(invalid_policy(
                "each composite index must be an array of paths",
            ));
        };
        if paths.len() < 2 {
            return Err(invalid_policy(
                "a composite index must list at least two paths",
            ));
        }
        for entry in paths {
            let Some(path) = entry.get("path").and_then(Value::as_str) else {
                return Err(invalid_policy(
                    "every composite path must be an object with a string 'path'",
                ));
            };
            check_path(path, PathList::Composite)?;
            let order_known = match entry.get("order") {
                None | Some(Value::Null) => true,
                Some(Value::String(order)) => ["ascending", "descending"]
                    .iter()
                    .any(|known| order.eq_ignore_ascii_case(known)),
                Some(_) => false,
            };
            if !order_known {
                return Err(invalid_policy(
                    "a composite path's 'order' must be 'ascending' or 'descending'",
                ));
            }
        }
    }
    Ok(())
}

fn indexing_mode_is_none(policy: &Value) -> bool {
    policy.get("indexingMode").and_then(Value::as_str) == Some("none")
}

/// Builds a container's public resource from a request body; shared by create and replace.
pub(crate) fn container_resource(
    body: &Map<String, Value>,
    id: &str,
    partition_key: &PartitionKeyDefinition,
) -> EngineResult<(Value, Option<i64>)> {
    let default_ttl = ttl::parse_default_ttl(body.get("defaultTtl"))?;
    let indexing_policy = normalize_indexing_policy(body.get("indexingPolicy"))?;
    check_search_policies(body, &indexing_policy)?;
    if default_ttl.is_some() && indexing_mode_is_none(&indexing_policy) {
        return Err(EngineError::with_message(
            ErrorCode::InvalidTtl,
            "The time to live (defaultTtl) cannot be set on a collection whose indexing mode is 'none'.",
        ));
    }
    let mut resource = Map::new();
    resource.insert("id".into(), Value::String(id.to_string()));
    resource.insert("indexingPolicy".into(), indexing_policy);
    resource.insert("partitionKey".into(), partition_key.resource.clone());
    if let Some(secs) = default_ttl {
        resource.insert("defaultTtl".into(), json!(secs));
    }
    let unique_key_policy = normalize_unique_key_policy(body.get("uniqueKeyPolicy"))?;
    resource.insert("uniqueKeyPolicy".into(), unique_key_policy);
    if let Some(policy) = normalize_client_encryption_policy(body, partition_key)? {
        resource.insert(POLICY_PROPERTY.into(), policy);
    }
    // Properties the service keeps as the client set them, with its defaults otherwise.
    let defaults = [
        (
            "conflictResolutionPolicy",
            json!({"mode": "LastWriterWins", "conflictResolutionPath": "/_ts", "conflictResolutionProcedure": ""}),
        ),
        ("geospatialConfig", json!({"type": "Geography"})),
    ];
    for (name, default) in defaults {
        let value = body
            .get(name)
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or(default);
        resource.insert(name.into(), value);
    }
    if let Some(definitions) = body.get("computedProperties").filter(|v| !v.is_null()) {
        ComputedProperties::parse(definitions)
            .map_err(|message| EngineError::with_message(ErrorCode::InvalidDocument, message))?;
    }
    if let Some(policy) = body.get("changeFeedPolicy").filter(|v| !v.is_null()) {
        resource.insert("changeFeedPolicy".into(), change_feed_policy(policy)?);
    }
    for name in [
        "analyticalStorageTtl",
        "computedProperties",
        "fullTextPolicy",
        "vectorEmbeddingPolicy",
    ] {
        if let Some(value) = body.get(name).filter(|v| !v.is_null()) {
            resource.insert(name.into(), value.clone());
        }
    }
    Ok((Value::Object(resource), default_ttl))
}

/// A container's `changeFeedPolicy`: `{"retentionDuration": <minutes>}`, a whole number of
/// minutes, 0 or more (how long all versions and deletes stay readable).
fn change_feed_policy(policy: &Value) -> EngineResult<Value> {
    let bad = |why: &str| {
        EngineError::with_message(
            ErrorCode::InvalidDocument,
            format!("The change feed policy is invalid: {why}."),
        )
    };
    let Value::Object(map) = policy else {
        return Err(bad("it must be an object"));
    };
    let mut policy = map.clone();
    match map.get("retentionDuration") {
        None | Some(Value::Null) => {
            policy.insert("retentionDuration".into(), json!(0));
        }
        Some(Value::Number(minutes)) if minutes.as_u64().is_some_and(|m| m <= i32::MAX as u64) => {}
        Some(_) => {
            return Err(bad(
                "'retentionDuration' must be a whole, non-negative number of minutes",
            ))
        }
    }
    Ok(Value::Object(policy))
}

pub(crate) fn add_container_system_properties(
    resource: &mut Value,
    database_rid: &str,
    rid: &str,
    etag: &str,
    now_ms: i64,
) {
    if let Value::Object(map) = resource {
        map.insert("_rid".into(), json!(rid));
        map.insert("_ts".into(), json!(now_ms.div_euclid(1000)));
        map.insert(
            "_self".into(),
            json!(format!("dbs/{database_rid}/colls/{rid}/")),
        );
        map.insert("_etag".into(), json!(etag));
        map.insert("_docs".into(), json!("docs/"));
        map.insert("_sprocs".into(), json!("sprocs/"));
        map.insert("_triggers".into(), json!("triggers/"));
        map.insert("_udfs".into(), json!("udfs/"));
        map.insert("_conflicts".into(), json!("conflicts/"));
    }
}
