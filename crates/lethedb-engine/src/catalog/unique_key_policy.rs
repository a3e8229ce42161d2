//! A container's unique key policy: validated when the container is created, returned as the
//! service returns it (`{"uniqueKeys": []}` when none was sent), parsed once into the paths
//! each unique key combines, and fixed for the container's life (a replace that changes it is
//! refused, as the service refuses it).
//!
//! Pure functions of a request body and a container's resource. What an item's values claim
//! under these keys, and who holds a claim, is `items/unique_keys.rs`'s business; the rule that
//! a claim held by another visible item refuses a write is in `items/rules.rs`.

use crate::error::{EngineError, EngineResult, ErrorCode};
use crate::limits::{SYSTEM_PROPERTIES, UNIQUE_KEYS_MAX, UNIQUE_KEY_PATHS_MAX};
use crate::partitions::partition_key::parse_path;
use serde_json::{json, Map, Value};

/// A container's unique keys, in the policy's order: a key's position is its number in the
/// claims it makes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UniqueKeyPolicy {
    keys: Vec<UniqueKey>,
}

/// One unique key: the paths whose values, together and within one logical partition, no two
/// items may share. Each path is its property names from the document's root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UniqueKey {
    pub(crate) paths: Vec<Vec<String>>,
}

impl UniqueKeyPolicy {
    /// The policy a container's resource holds. The resource was normalised when the container
    /// was made; a stored policy that no longer parses (or a container made before unique keys
    /// were enforced, which has none) enforces nothing rather than failing every write.
    pub(crate) fn from_resource(resource: &Value) -> UniqueKeyPolicy {
        resource
            .get("uniqueKeyPolicy")
            .and_then(|policy| parse_policy(Some(policy)).ok())
            .unwrap_or_default()
    }

    pub(crate) fn keys(&self) -> &[UniqueKey] {
        &self.keys
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// The `uniqueKeyPolicy` of a container body as the service stores and returns it: every unique
/// key with its paths as sent, `{"uniqueKeys": []}` when none was sent.
pub(crate) fn normalize_unique_key_policy(policy: Option<&Value>) -> EngineResult<Value> {
    let parsed = parse_policy(policy)?;
    let keys: Vec<Value> = raw_keys(policy)
        .iter()
        .map(|key| json!({"paths": key.get("paths").cloned().unwrap_or(json!([]))}))
        .collect();
    debug_assert_eq!(keys.len(), parsed.keys.len());
    Ok(json!({"uniqueKeys": keys}))
}

/// A container replace must send the unique key policy the container has (none sent is an
/// empty policy): the service refuses any other with 403, even one that only drops the policy.
pub(crate) fn check_unchanged(existing: &UniqueKeyPolicy, sent: &Value) -> EngineResult<()> {
    if UniqueKeyPolicy::from_resource(sent) == *existing {
        return Ok(());
    }
    Err(EngineError::new(ErrorCode::UniqueKeyPolicyChanged))
}

fn invalid(why: &str) -> EngineError {
    EngineError::with_message(
        ErrorCode::InvalidUniqueKeyPolicy,
        format!("The unique key policy is invalid: {why}."),
    )
}

/// The policy's `uniqueKeys` entries, empty when the policy or the list is absent or malformed
/// (`parse_policy` has refused a malformed one before this is used).
fn raw_keys(policy: Option<&Value>) -> Vec<Map<String, Value>> {
    policy
        .and_then(|policy| policy.get("uniqueKeys"))
        .and_then(Value::as_array)
        .map(|keys| {
            keys.iter()
                .filter_map(|key| key.as_object().cloned())
                .collect()
        })
        .unwrap_or_default()
}

/// Validates a `uniqueKeyPolicy` as the service does: its shape, at most
/// [`UNIQUE_KEYS_MAX`] unique keys of 1 to [`UNIQUE_KEY_PATHS_MAX`] paths, each path rooted,
/// free of wildcards and array segments and not a system property, and nothing repeated.
fn parse_policy(policy: Option<&Value>) -> EngineResult<UniqueKeyPolicy> {
    let keys = match policy {
        None | Some(Value::Null) => return Ok(UniqueKeyPolicy::default()),
        Some(Value::Object(map)) => match map.get("uniqueKeys") {
            None | Some(Value::Null) => return Ok(UniqueKeyPolicy::default()),
            Some(Value::Array(keys)) => keys,
            Some(_) => return Err(invalid("'uniqueKeys' must be an array")),
        },
        Some(_) => return Err(invalid("it must be an object")),
    };
    if keys.len() > UNIQUE_KEYS_MAX {
        return Err(invalid(&format!(
            "a container can have at most {UNIQUE_KEYS_MAX} unique keys, and {} were given",
            keys.len()
        )));
    }
    let mut parsed: Vec<UniqueKey> = Vec::with_capacity(keys.len());
    for key in keys {
        let key = parse_key(key)?;
        let mut sorted = key.paths.clone();
        sorted.sort();
        if parsed.iter().any(|other| {
            let mut others = other.paths.clone();
            others.sort();
            others == sorted
        }) {
            return Err(invalid("the same unique key is given twice"));
        }
        parsed.push(key);
    }
    Ok(UniqueKeyPolicy { keys: parsed })
}

/// One `{"paths": [...]}` entry.
fn parse_key(key: &Value) -> EngineResult<UniqueKey> {
    let Some(Value::Array(raw_paths)) = key.get("paths") else {
        return Err(invalid(
            "each unique key must be an object with an array 'paths'",
        ));
    };
    if raw_paths.is_empty() {
        return Err(invalid("a unique key must have at least one path"));
    }
    if raw_paths.len() > UNIQUE_KEY_PATHS_MAX {
        return Err(invalid(&format!(
            "a unique key can have at most {UNIQUE_KEY_PATHS_MAX} paths, and {} were given",
            raw_paths.len()
        )));
    }
    let mut paths: Vec<Vec<String>> = Vec::with_capacity(raw_paths.len());
    for raw in raw_paths {
        let Value::String(text) = raw else {
            return Err(invalid("each path of a unique key must be a string"));
        };
        let path = parse_unique_path(text)?;
        if paths.contains(&path) {
            return Err(invalid(&format!(
                "the path '{text}' is given twice in one unique key"
            )));
        }
        paths.push(path);
    }
    Ok(UniqueKey { paths })
}

/// A unique key path: the partition key's grammar (`/a/b`, quoted segments), without the
/// wildcards (`*`, `?`) and array segments (`[]`) an indexing path may have, and not a system
/// property.
fn parse_unique_path(text: &str) -> EngineResult<Vec<String>> {
    let Some(path) = parse_path(text) else {
        return Err(EngineError::with_message(
            ErrorCode::InvalidUniqueKeyPolicy,
            format!(
                "Error parsing the unique key path '{text}' at position {}. Make sure the unique key path does not contain wildcards and invalid characters.",
                parse_error_position(text)
            ),
        ));
    };
    if let Some(first) = path.first() {
        if first == "id" || SYSTEM_PROPERTIES.contains(&first.as_str()) {
            return Err(EngineError::with_message(
                ErrorCode::InvalidUniqueKeyPolicy,
                format!(
                    "The unique key path cannot contain system properties. '{first}' is a system property."
                ),
            ));
        }
    }
    Ok(path)
}

/// Where a path that does not parse goes wrong, counted in characters from 0: its first
/// character when it is not rooted, else its first wildcard or bracket, else an empty segment,
/// else its end (an unclosed quote, a trailing `/`). The service names a position too; how it
/// counts is not documented.
fn parse_error_position(text: &str) -> usize {
    if !text.starts_with('/') {
        return 0;
    }
    let chars: Vec<char> = text.chars().collect();
    if let Some(at) = chars
        .iter()
        .position(|c| matches!(c, '*' | '?' | '[' | ']'))
    {
        return at;
    }
    if let Some(at) = chars.windows(2).position(|pair| pair == ['/', '/']) {
        return at + 1;
    }
    chars.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message of the refusal of `policy`, or the normalised policy.
    fn check(policy: Value) -> Result<Value, String> {
        normalize_unique_key_policy(Some(&policy)).map_err(|error| {
            assert_eq!(error.code, ErrorCode::InvalidUniqueKeyPolicy);
            error.message().to_string()
        })
    }

    #[test]
    fn policies_are_normalised_as_the_service_returns_them() {
        assert_eq!(
            normalize_unique_key_policy(None).expect("none"),
            json!({"uniqueKeys": []})
        );
        assert_eq!(check(json!({})), Ok(json!({"uniqueKeys": []})));
        assert_eq!(
            check(
                json!({"uniqueKeys": [{"paths": ["/email"], "other": 1}, {"paths": ["/a/b", "/\"c d\""]}]})
            ),
            Ok(json!({"uniqueKeys": [{"paths": ["/email"]}, {"paths": ["/a/b", "/\"c d\""]}]}))
        );
        let policy = UniqueKeyPolicy::from_resource(
            &json!({"uniqueKeyPolicy": {"uniqueKeys": [{"paths": ["/a/b", "/\"c d\""]}]}}),
        );
        assert_eq!(
            policy.keys()[0].paths,
            vec![
                vec!["a".to_string(), "b".to_string()],
                vec!["c d".to_string()]
            ]
        );
    }

    #[test]
    fn malformed_policies_are_refused() {
        let refused = |policy: Value, expected: &str| {
            let message = check(policy).expect_err("refused");
            assert!(message.contains(expected), "{message}");
        };
        refused(json!([]), "it must be an object");
        refused(json!({"uniqueKeys": {}}), "'uniqueKeys' must be an array");
        refused(json!({"uniqueKeys": [{"paths": "/a"}]}), "array 'paths'");
        refused(json!({"uniqueKeys": [{}]}), "array 'paths'");
        refused(json!({"uniqueKeys": [{"paths": []}]}), "at least one path");
        refused(json!({"uniqueKeys": [{"paths": [1]}]}), "must be a string");
        refused(
            json!({"uniqueKeys": [{"paths": ["/a", "/a"]}]}),
            "'/a' is given twice",
        );
        refused(
            json!({"uniqueKeys": [{"paths": ["/a", "/b"]}, {"paths": ["/b", "/a"]}]}),
            "the same unique key is given twice",
        );
    }

    #[test]
    fn paths_must_be_rooted_plain_and_not_system_properties() {
        for (path, position) in [
            ("email", 0),
            ("/name/*", 6),
            ("/tags/[]", 6),
            ("/a?", 2),
            ("/a//b", 3),
            ("/", 1),
        ] {
            assert_eq!(
                check(json!({"uniqueKeys": [{"paths": [path]}]})),
                Err(format!("Error parsing the unique key path '{path}' at position {position}. Make sure the unique key path does not contain wildcards and invalid characters.")),
            );
        }
        for name in ["id", "_ts", "_etag"] {
            assert_eq!(
                check(json!({"uniqueKeys": [{"paths": ["/x", format!("/{name}")]}]})),
                Err(format!("The unique key path cannot contain system properties. '{name}' is a system property.")),
            );
        }
        // A nested property of the same name is an ordinary one.
        assert!(check(json!({"uniqueKeys": [{"paths": ["/user/id"]}]})).is_ok());
    }

    #[test]
    fn the_documented_limits_hold() {
        let paths =
            |count: usize| -> Vec<String> { (0..count).map(|i| format!("/p{i}")).collect() };
        assert!(check(json!({"uniqueKeys": [{"paths": paths(16)}]})).is_ok());
        assert!(check(json!({"uniqueKeys": [{"paths": paths(17)}]}))
            .expect_err("17 paths")
            .contains("at most 16 paths, and 17 were given"));
        let keys = |count: usize| -> Vec<Value> {
            (0..count)
                .map(|i| json!({"paths": [format!("/k{i}")]}))
                .collect()
        };
        assert!(check(json!({"uniqueKeys": keys(10)})).is_ok());
        assert!(check(json!({"uniqueKeys": keys(11)}))
            .expect_err("11 keys")
            .contains("at most 10 unique keys, and 11 were given"));
    }

    #[test]
    fn a_replace_must_send_the_same_policy() {
        let existing = UniqueKeyPolicy::from_resource(
            &json!({"uniqueKeyPolicy": {"uniqueKeys": [{"paths": ["/email"]}]}}),
        );
        let same = json!({"uniqueKeyPolicy": {"uniqueKeys": [{"paths": ["/email"]}]}});
        assert!(check_unchanged(&existing, &same).is_ok());
        for other in [
            json!({"uniqueKeyPolicy": {"uniqueKeys": []}}),
            json!({"uniqueKeyPolicy": {"uniqueKeys": [{"paths": ["/name"]}]}}),
        ] {
            let error = check_unchanged(&existing, &other).expect_err("changed");
            assert_eq!(error.code, ErrorCode::UniqueKeyPolicyChanged);
        }
        let none = UniqueKeyPolicy::default();
        assert!(check_unchanged(&none, &json!({"uniqueKeyPolicy": {"uniqueKeys": []}})).is_ok());
    }
}
