//! The client encryption policy's checks, case by case with the messages a client sees, and
//! the replace rule.

use super::*;

/// A partition key definition on these paths.
fn partition_key(paths: &[&str]) -> PartitionKeyDefinition {
    let definition = json!({"paths": paths, "kind": if paths.len() > 1 { "MultiHash" } else { "Hash" }, "version": 2});
    match PartitionKeyDefinition::from_container_body(Some(&definition)) {
        Ok(definition) => definition,
        Err(error) => unreachable!("a test partition key is valid: {error}"),
    }
}

fn included(path: &str, encryption_type: &str) -> Value {
    json!({
        "path": path,
        "clientEncryptionKeyId": "key1",
        "encryptionType": encryption_type,
        "encryptionAlgorithm": "AEAD_AES_256_CBC_HMAC_SHA256",
    })
}

/// The stored policy, or the refusal's message, of a body holding `policy`.
fn check(policy: Value, partition_key_paths: &[&str]) -> Result<Option<Value>, String> {
    let Value::Object(body) = json!({ "id": "c", "clientEncryptionPolicy": policy }) else {
        unreachable!("a test body is an object");
    };
    normalize_client_encryption_policy(&body, &partition_key(partition_key_paths)).map_err(
        |error| {
            assert_eq!(error.code, ErrorCode::InvalidClientEncryptionPolicy);
            error.to_string()
        },
    )
}

fn refusal(policy: Value, partition_key_paths: &[&str]) -> String {
    match check(policy, partition_key_paths) {
        Err(message) => message,
        Ok(stored) => unreachable!("the policy should be refused, was stored as {stored:?}"),
    }
}

#[test]
fn a_valid_policy_is_stored_with_its_version() {
    let paths = json!([
        included("/PK", "Deterministic"),
        included("/id", "Deterministic"),
        included("/secret", "Randomized")
    ]);
    let stored = check(
        json!({"includedPaths": paths, "policyFormatVersion": 2}),
        &["/PK"],
    );
    assert_eq!(
        stored,
        Ok(Some(
            json!({"includedPaths": paths, "policyFormatVersion": 2})
        ))
    );
    // Without a version the policy is version 1, as the SDKs send it.
    let paths = json!([included("/secret", "Randomized")]);
    let stored = check(json!({"includedPaths": paths}), &["/PK"]);
    assert_eq!(
        stored,
        Ok(Some(
            json!({"includedPaths": paths, "policyFormatVersion": 1})
        ))
    );
}

#[test]
fn no_policy_is_none() {
    assert_eq!(check(Value::Null, &["/PK"]), Ok(None));
    let Value::Object(body) = json!({"id": "c"}) else {
        unreachable!("a test body is an object");
    };
    let stored = normalize_client_encryption_policy(&body, &partition_key(&["/PK"]));
    assert!(matches!(stored, Ok(None)));
}

#[test]
fn shapes_and_versions_are_checked() {
    assert_eq!(
        refusal(json!([]), &["/PK"]),
        "The client encryption policy must be a JSON object."
    );
    assert_eq!(
        refusal(json!({"policyFormatVersion": 1}), &["/PK"]),
        "The client encryption policy must list its 'includedPaths'."
    );
    assert_eq!(
        refusal(
            json!({"includedPaths": [], "policyFormatVersion": 3}),
            &["/PK"]
        ),
        "Invalid PolicyFormatVersion:3 used in Client Encryption Policy."
    );
}

#[test]
fn each_included_path_is_checked() {
    let policy = |path: Value| json!({"includedPaths": [path], "policyFormatVersion": 2});
    let mut path = included("/a", "Deterministic");
    path["path"] = json!("/");
    assert_eq!(
        refusal(policy(path), &["/PK"]),
        "Path needs to be defined in ClientEncryptionIncludedPath."
    );
    assert_eq!(
        refusal(policy(included("a", "Deterministic")), &["/PK"]),
        "Invalid path 'a'."
    );
    assert_eq!(
        refusal(policy(included("/address/zip", "Deterministic")), &["/PK"]),
        "Invalid path '/address/zip'."
    );
    let mut path = included("/a", "Deterministic");
    path["clientEncryptionKeyId"] = json!("");
    assert_eq!(
        refusal(policy(path), &["/PK"]),
        "ClientEncryptionKeyId needs to be defined as string type in ClientEncryptionIncludedPath."
    );
    assert_eq!(
        refusal(policy(included("/a", "Plaintext")), &["/PK"]),
        "EncryptionType should be either 'Deterministic' or 'Randomized'."
    );
    let mut path = included("/a", "Deterministic");
    path["encryptionAlgorithm"] = json!("LegacyAeadAes256CbcHmac256");
    assert_eq!(
        refusal(policy(path), &["/PK"]),
        "EncryptionAlgorithm should be 'AEAD_AES_256_CBC_HMAC_SHA256'."
    );
    let twice =
        json!({"includedPaths": [included("/a", "Deterministic"), included("/a", "Randomized")]});
    assert_eq!(refusal(twice, &["/PK"]), "Duplicate Path found: /a.");
}

#[test]
fn the_id_and_the_partition_key_need_version_2_and_deterministic_encryption() {
    let version = |version: u64, path: Value| json!({"includedPaths": [path], "policyFormatVersion": version});
    assert_eq!(
        refusal(version(1, included("/id", "Deterministic")), &["/PK"]),
        "Path: /id cannot be encrypted with PolicyFormatVersion: 1. Please use PolicyFormatVersion: 2."
    );
    assert_eq!(
        refusal(version(2, included("/id", "Randomized")), &["/PK"]),
        "Only Deterministic encryption type is supported for path: /id."
    );
    assert_eq!(
        refusal(version(1, included("/PK", "Deterministic")), &["/PK"]),
        "Path: /PK which is part of the partition key cannot be encrypted with PolicyFormatVersion: 1. Please use PolicyFormatVersion: 2."
    );
    // A path is part of the partition key when a key path starts with it.
    assert_eq!(
        refusal(version(2, included("/address", "Randomized")), &["/PK", "/address/zip"]),
        "Path: /address which is part of the partition key has to be encrypted with Deterministic type Encryption."
    );
    assert!(check(
        version(2, included("/address", "Deterministic")),
        &["/PK", "/address/zip"]
    )
    .is_ok());
    // A property that only shares a prefix with a key path is not part of the key.
    assert!(check(version(1, included("/PKX", "Randomized")), &["/PK"]).is_ok());
}

#[test]
fn key_ids_are_listed_once() {
    let mut other = included("/b", "Randomized");
    other["clientEncryptionKeyId"] = json!("key2");
    let resource = json!({"clientEncryptionPolicy": {"includedPaths": [included("/a", "Deterministic"), other, included("/c", "Randomized")]}});
    assert_eq!(key_ids(&resource), vec!["key1", "key2"]);
    assert!(key_ids(&json!({"id": "c"})).is_empty());
    assert_eq!(
        unknown_key("k").to_string(),
        "ClientEncryptionKey with id '[k]' does not exist."
    );
}

#[test]
fn a_replace_keeps_the_policy() {
    let paths = [
        included("/a", "Deterministic"),
        included("/b", "Randomized"),
    ];
    let existing =
        json!({"clientEncryptionPolicy": {"includedPaths": paths, "policyFormatVersion": 2}});
    assert!(check_policy_unchanged(&existing, &existing).is_ok());
    let reordered = json!({"clientEncryptionPolicy": {"policyFormatVersion": 2, "includedPaths": [paths[1], paths[0]]}});
    assert!(check_policy_unchanged(&existing, &reordered).is_ok());
    assert!(check_policy_unchanged(&json!({}), &json!({})).is_ok());
    let changed = [
        json!({}),
        json!({"clientEncryptionPolicy": {"includedPaths": [paths[0]], "policyFormatVersion": 2}}),
        json!({"clientEncryptionPolicy": {"includedPaths": paths, "policyFormatVersion": 1}}),
    ];
    for sent in changed {
        let refused = check_policy_unchanged(&existing, &sent)
            .err()
            .map(|error| error.to_string());
        assert_eq!(
            refused.as_deref(),
            Some("'clientEncryptionPolicy' cannot be changed as part of collection replace operation.")
        );
    }
    // Adding a policy to a container that had none is a change too.
    assert!(check_policy_unchanged(&json!({}), &existing).is_err());
}
