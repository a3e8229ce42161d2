//! A container's client encryption policy (`clientEncryptionPolicy`): which top-level
//! properties its clients encrypt, with which of the database's client encryption keys, and
//! how. Validated when the container is created, returned as stored, and fixed for the
//! container's life: a replace that changes it is refused, as the service refuses it.
//!
//! Pure functions of a request body, the container's partition key and its stored resource.
//! The encryption itself is the SDKs' business: the service never sees a plain value, so no
//! query rule applies to encrypted paths here. That every key the policy names exists in the
//! database is checked inside the writer (`resource.rs`, `check_encryption_keys_exist`), since
//! it reads the catalog.

use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::partitions::partition_key::PartitionKeyDefinition;
use serde_json::{json, Map, Value};

/// The property of a container's resource that holds the policy.
pub(crate) const POLICY_PROPERTY: &str = "clientEncryptionPolicy";

/// The only encryption algorithm the SDKs implement.
const ALGORITHM: &str = "AEAD_AES_256_CBC_HMAC_SHA256";

/// The encryption types: deterministic (equal values encrypt equally, so they can be compared
/// in queries) and randomized.
const DETERMINISTIC: &str = "Deterministic";
const RANDOMIZED: &str = "Randomized";

/// The policy versions: version 2 is the first that may encrypt the id and the partition key.
const VERSIONS: [u64; 2] = [1, 2];

fn invalid(message: String) -> EngineError {
    EngineError::with_message(ErrorCode::InvalidClientEncryptionPolicy, message)
}

/// The policy a create or replace body sends, checked and in its stored form, or `None` when
/// the body has none (absent or `null`). A policy without `policyFormatVersion` is version 1,
/// as the SDKs default it.
pub(crate) fn normalize_client_encryption_policy(
    body: &Map<String, Value>,
    partition_key: &PartitionKeyDefinition,
) -> EngineResult<Option<Value>> {
    let Some(policy) = body.get(POLICY_PROPERTY).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let Value::Object(policy) = policy else {
        return Err(invalid(
            "The client encryption policy must be a JSON object.".into(),
        ));
    };
    let version = match policy.get("policyFormatVersion") {
        None | Some(Value::Null) => 1,
        Some(sent) => sent
            .as_u64()
            .filter(|version| VERSIONS.contains(version))
            .ok_or_else(|| {
                invalid(format!(
                    "Invalid PolicyFormatVersion:{sent} used in Client Encryption Policy."
                ))
            })?,
    };
    let Some(Value::Array(paths)) = policy.get("includedPaths") else {
        return Err(invalid(
            "The client encryption policy must list its 'includedPaths'.".into(),
        ));
    };
    let mut seen: Vec<&str> = Vec::new();
    for included in paths {
        let path = check_included_path(included, version)?;
        if seen.contains(&path) {
            return Err(invalid(format!("Duplicate Path found: {path}.")));
        }
        check_partition_key_path(included, path, version, partition_key)?;
        seen.push(path);
    }
    let mut stored = policy.clone();
    stored.insert("policyFormatVersion".into(), json!(version));
    Ok(Some(Value::Object(stored)))
}

/// Checks one included path on its own and returns its path: a top-level property, a key id,
/// a known encryption type and algorithm, and the rules of `/id`.
fn check_included_path(included: &Value, version: u64) -> EngineResult<&str> {
    let text = |name: &str| included.get(name).and_then(Value::as_str);
    let path = match text("path") {
        None | Some("" | "/") => {
            return Err(invalid(
                "Path needs to be defined in ClientEncryptionIncludedPath.".into(),
            ))
        }
        Some(path) => path,
    };
    // Only top-level properties can be encrypted: one segment after the leading slash.
    if !path.starts_with('/') || path.rfind('/') != Some(0) {
        return Err(invalid(format!("Invalid path '{path}'.")));
    }
    if text("clientEncryptionKeyId").is_none_or(|id| id.trim().is_empty()) {
        return Err(invalid(
            "ClientEncryptionKeyId needs to be defined as string type in ClientEncryptionIncludedPath.".into(),
        ));
    }
    let encryption_type = text("encryptionType").unwrap_or_default();
    if path == "/id" {
        if version < 2 {
            return Err(invalid(format!(
                "Path: {path} cannot be encrypted with PolicyFormatVersion: {version}. Please use PolicyFormatVersion: 2."
            )));
        }
        if encryption_type != DETERMINISTIC {
            return Err(invalid(format!(
                "Only Deterministic encryption type is supported for path: {path}."
            )));
        }
    }
    if encryption_type != DETERMINISTIC && encryption_type != RANDOMIZED {
        return Err(invalid(
            "EncryptionType should be either 'Deterministic' or 'Randomized'.".into(),
        ));
    }
    if text("encryptionAlgorithm") != Some(ALGORITHM) {
        return Err(invalid(format!(
            "EncryptionAlgorithm should be '{ALGORITHM}'."
        )));
    }
    Ok(path)
}

/// A path that is (the top-level ancestor of) a partition key path may be encrypted only from
/// version 2 on, and only deterministically: the SDKs compute the partition key from the
/// encrypted value, which must be the same for the same plain value.
fn check_partition_key_path(
    included: &Value,
    path: &str,
    version: u64,
    partition_key: &PartitionKeyDefinition,
) -> EngineResult<()> {
    let property = path.strip_prefix('/').unwrap_or(path);
    let in_partition_key = partition_key
        .paths
        .iter()
        .any(|key_path| key_path.first().is_some_and(|top| top == property));
    if !in_partition_key {
        return Ok(());
    }
    if version < 2 {
        return Err(invalid(format!(
            "Path: {path} which is part of the partition key cannot be encrypted with PolicyFormatVersion: {version}. Please use PolicyFormatVersion: 2."
        )));
    }
    if included.get("encryptionType").and_then(Value::as_str) != Some(DETERMINISTIC) {
        return Err(invalid(format!(
            "Path: {path} which is part of the partition key has to be encrypted with Deterministic type Encryption."
        )));
    }
    Ok(())
}

/// The client encryption key ids a container's resource names in its policy, each once.
pub(crate) fn key_ids(resource: &Value) -> Vec<&str> {
    let mut ids: Vec<&str> = Vec::new();
    let paths = resource
        .get(POLICY_PROPERTY)
        .and_then(|policy| policy.get("includedPaths"))
        .and_then(Value::as_array);
    for included in paths.into_iter().flatten() {
        if let Some(id) = included
            .get("clientEncryptionKeyId")
            .and_then(Value::as_str)
        {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    ids
}

/// The service's refusal of a policy that names a key the database does not have.
pub(crate) fn unknown_key(id: &str) -> EngineError {
    invalid(format!(
        "ClientEncryptionKey with id '[{id}]' does not exist."
    ))
}

/// Checks a replace keeps the policy: the same paths with the same settings (in any order), or
/// still none. The service fixes the policy at creation.
pub(crate) fn check_policy_unchanged(existing: &Value, sent: &Value) -> EngineResult<()> {
    if comparable(existing) == comparable(sent) {
        return Ok(());
    }
    Err(invalid(
        "'clientEncryptionPolicy' cannot be changed as part of collection replace operation."
            .into(),
    ))
}

/// A resource's policy with its paths in path order, so that the order they were listed in
/// does not count as a change.
fn comparable(resource: &Value) -> Option<Value> {
    let mut policy = resource.get(POLICY_PROPERTY).cloned()?;
    if let Some(Value::Array(paths)) = policy.get_mut("includedPaths") {
        paths.sort_by(|left, right| {
            let path = |value: &Value| value.get("path").and_then(Value::as_str).map(str::to_owned);
            path(left).cmp(&path(right))
        });
    }
    Some(policy)
}

#[cfg(test)]
mod tests;
