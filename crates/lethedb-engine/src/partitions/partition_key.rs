//! Partition keys: the container's definition, values taken from documents and from the JSON
//! text clients send, and their canonical byte form in storage keys.
//!
//! Every value is one of undefined (the path is absent), null, a boolean, a number or a string;
//! numbers compare as 64-bit floats, as the service hashes them, so `1` and `1.0` name the same
//! partition. Hashing values into effective partition keys is `partitions/epk.rs`'s work.

use crate::error::{EngineError, EngineResult, ErrorCode};
use serde_json::{json, Map, Value};

/// The most paths a hierarchical partition key may have (the service allows three).
pub const PARTITION_KEY_PATHS_MAX: usize = 3;
/// The longest partition key value, in bytes of its canonical form (the service's limit is 2 KiB
/// for hash v2).
pub const PARTITION_KEY_BYTES_MAX: usize = 2048;
/// The path the service gives containers created without a partition key.
pub const SYSTEM_PARTITION_KEY_PATH: &str = "/_partitionKey";

/// One component of a partition key value.
#[derive(Clone, Debug, PartialEq)]
pub enum PartitionKeyPart {
    Undefined,
    Null,
    Bool(bool),
    Number(f64),
    String(String),
}

impl PartitionKeyPart {
    /// The part a JSON value stands for (`{}` means undefined, as clients write it).
    pub fn from_value(value: &Value) -> PartitionKeyPart {
        match value {
            Value::Object(map) if map.is_empty() => PartitionKeyPart::Undefined,
            other => PartitionKeyPart::from_document_value(Some(other)),
        }
    }

    fn from_document_value(value: Option<&Value>) -> PartitionKeyPart {
        match value {
            None => PartitionKeyPart::Undefined,
            Some(Value::Null) => PartitionKeyPart::Null,
            Some(Value::Bool(b)) => PartitionKeyPart::Bool(*b),
            Some(Value::Number(n)) => PartitionKeyPart::Number(n.as_f64().unwrap_or(f64::NAN)),
            Some(Value::String(s)) => PartitionKeyPart::String(s.clone()),
            // The service treats a path that ends in an object or array as having no value.
            Some(Value::Array(_) | Value::Object(_)) => PartitionKeyPart::Undefined,
        }
    }

    fn from_json_value(value: &Value) -> EngineResult<PartitionKeyPart> {
        match value {
            Value::Object(map) if map.is_empty() => Ok(PartitionKeyPart::Undefined),
            Value::Array(_) | Value::Object(_) => Err(EngineError::with_message(
                ErrorCode::InvalidPartitionKey,
                format!(
                    "Partition key component {value} is invalid: it must be a string, number, boolean, null or {{}} for undefined."
                ),
            )),
            other => Ok(PartitionKeyPart::from_document_value(Some(other))),
        }
    }

    /// The JSON form used in the canonical encoding and in query equality checks.
    pub fn to_json(&self) -> Value {
        match self {
            PartitionKeyPart::Undefined => Value::Object(Map::new()),
            PartitionKeyPart::Null => Value::Null,
            PartitionKeyPart::Bool(b) => Value::Bool(*b),
            PartitionKeyPart::Number(n) => json!(n),
            PartitionKeyPart::String(s) => Value::String(s.clone()),
        }
    }
}

/// A full or prefix partition key value.
#[derive(Clone, Debug, PartialEq)]
pub struct PartitionKeyValue(pub Vec<PartitionKeyPart>);

impl PartitionKeyValue {
    /// The canonical bytes stored in item keys: the JSON array of the parts, numbers as floats.
    pub fn encode(&self) -> Vec<u8> {
        let parts: Vec<Value> = self.0.iter().map(PartitionKeyPart::to_json).collect();
        // Serialising a Value built from plain parts cannot fail.
        serde_json::to_vec(&Value::Array(parts)).unwrap_or_default()
    }

    /// The value `encode` wrote, or `None` if the bytes are not its output.
    pub fn decode(bytes: &[u8]) -> Option<PartitionKeyValue> {
        let parsed: Vec<Value> = serde_json::from_slice(bytes).ok()?;
        Some(PartitionKeyValue(
            parsed.iter().map(PartitionKeyPart::from_value).collect(),
        ))
    }

    /// Parses a partition key value written as JSON text: an array of parts (`{}` for an
    /// undefined part), as clients send it.
    pub fn parse_json_text(text: &str) -> EngineResult<PartitionKeyValue> {
        let invalid = || {
            EngineError::with_message(
                ErrorCode::InvalidPartitionKey,
                format!("Partition key {text} is invalid: it must be a JSON array of values."),
            )
        };
        let parsed: Value = serde_json::from_str(text).map_err(|_| invalid())?;
        let Value::Array(items) = parsed else {
            return Err(invalid());
        };
        let parts = items
            .iter()
            .map(PartitionKeyPart::from_json_value)
            .collect::<EngineResult<Vec<_>>>()?;
        Ok(PartitionKeyValue(parts))
    }
}

/// A container's partition key definition, as stored and returned.
#[derive(Clone, Debug, PartialEq)]
pub struct PartitionKeyDefinition {
    /// Each path split into property names: `/a/b` is `["a", "b"]`.
    pub paths: Vec<Vec<String>>,
    /// The definition as the client sees it (`paths`, `kind`, `version`, `systemKey`).
    pub resource: Value,
}

fn invalid_definition(why: &str) -> EngineError {
    EngineError::with_message(
        ErrorCode::InvalidPartitionKeyDefinition,
        format!("The partition key definition is invalid: {why}."),
    )
}

/// One path of a partition key definition, refused with the service's message when it does not
/// start with `/`, does not parse, or holds whitespace inside an unquoted name (`/id ds`).
/// The position the service names is where it stopped reading; here it is the first character
/// found wrong, which for these cases is where the service's parser stops as far as its
/// messages in the SDKs' tests show (an uncertain detail).
fn parse_key_path(text: &str) -> EngineResult<Vec<String>> {
    let refused = |position: usize| {
        EngineError::with_message(
            ErrorCode::InvalidPartitionKeyDefinition,
            format!(
                "The partition key component definition path '{text}' could not be accepted, failed near position '{position}'. Partition key paths must contain only valid characters and not contain a trailing slash or wildcard character."
            ),
        )
    };
    if !text.starts_with('/') {
        return Err(refused(0));
    }
    let names = parse_path(text).ok_or_else(|| refused(text.len()))?;
    // An unquoted name is trimmed, so whitespace inside it is whitespace between two words.
    let inner_space = text.char_indices().skip(1).find(|&(at, character)| {
        character.is_whitespace() && !text[..at].contains(['"', '\'']) && {
            let segment_start = text[..at].rfind('/').map_or(0, |slash| slash + 1);
            let before = text[segment_start..at].trim();
            let after = text[at..].split('/').next().unwrap_or_default().trim();
            !before.is_empty() && !after.is_empty()
        }
    });
    match inner_space {
        Some((at, _)) => Err(refused(at)),
        None => Ok(names),
    }
}

/// The definition's kind (`Hash` or `MultiHash`) and hash version, with their defaults, checked
/// against each other and against the number of paths.
fn kind_and_version(
    definition: &Map<String, Value>,
    path_count: usize,
) -> EngineResult<(&str, u64)> {
    let kind = match definition.get("kind") {
        None | Some(Value::Null) => {
            if path_count > 1 {
                "MultiHash"
            } else {
                "Hash"
            }
        }
        Some(Value::String(kind)) if kind == "Hash" || kind == "MultiHash" => kind.as_str(),
        Some(Value::String(kind)) if kind == "Range" => {
            return Err(invalid_definition(
                "partition key kind 'Range' is not supported",
            ))
        }
        Some(_) => return Err(invalid_definition("'kind' must be 'Hash' or 'MultiHash'")),
    };
    let version = match definition.get("version") {
        None | Some(Value::Null) => {
            if kind == "MultiHash" {
                2
            } else {
                1
            }
        }
        Some(Value::Number(n)) if n.as_u64() == Some(1) || n.as_u64() == Some(2) => {
            n.as_u64().unwrap_or(2)
        }
        Some(_) => return Err(invalid_definition("'version' must be 1 or 2")),
    };
    match (kind, path_count) {
        ("Hash", 1) => {}
        ("Hash", _) => {
            return Err(invalid_definition(
                "a 'Hash' partition key has exactly one path",
            ))
        }
        ("MultiHash", 1..=PARTITION_KEY_PATHS_MAX) => {}
        _ => {
            return Err(invalid_definition(
                "a 'MultiHash' partition key has one to three paths",
            ))
        }
    }
    if kind == "MultiHash" && version != 2 {
        return Err(invalid_definition(
            "a 'MultiHash' partition key requires version 2",
        ));
    }
    Ok((kind, version))
}

impl PartitionKeyDefinition {
    /// Validates the `partitionKey` property of a container body; absent means the system key.
    pub fn from_container_body(value: Option<&Value>) -> EngineResult<PartitionKeyDefinition> {
        let Some(value) = value.filter(|v| !v.is_null()) else {
            return Ok(PartitionKeyDefinition {
                paths: vec![vec!["_partitionKey".to_string()]],
                resource: json!({"paths": [SYSTEM_PARTITION_KEY_PATH], "kind": "Hash", "systemKey": true}),
            });
        };
        let Value::Object(definition) = value else {
            return Err(invalid_definition("it must be an object"));
        };
        let Some(Value::Array(raw_paths)) = definition.get("paths") else {
            return Err(invalid_definition("'paths' must be an array of paths"));
        };
        let (kind, version) = kind_and_version(definition, raw_paths.len())?;
        let mut paths = Vec::with_capacity(raw_paths.len());
        let mut path_strings = Vec::with_capacity(raw_paths.len());
        for raw in raw_paths {
            let Value::String(text) = raw else {
                return Err(invalid_definition("each path must be a string"));
            };
            paths.push(parse_key_path(text)?);
            path_strings.push(Value::String(text.clone()));
        }
        let mut resource = Map::new();
        resource.insert("paths".into(), Value::Array(path_strings));
        resource.insert("kind".into(), Value::String(kind.into()));
        // The service echoes a `version` only when the client sent one; without it a `Hash`
        // key is version 1 and a `MultiHash` key version 2, as read back from this resource.
        if definition.get("version").is_some_and(|v| !v.is_null()) {
            resource.insert("version".into(), json!(version));
        }
        if let Some(system_key) = definition.get("systemKey") {
            resource.insert("systemKey".into(), system_key.clone());
        }
        Ok(PartitionKeyDefinition {
            paths,
            resource: Value::Object(resource),
        })
    }

    /// The partition key value of a document.
    pub fn extract(&self, document: &Value) -> PartitionKeyValue {
        PartitionKeyValue(
            self.paths
                .iter()
                .map(|path| {
                    let mut node = Some(document);
                    for name in path {
                        node = node.and_then(|n| n.get(name));
                    }
                    PartitionKeyPart::from_document_value(node)
                })
                .collect(),
        )
    }

    /// True for containers created without a partition key.
    pub fn is_system_key(&self) -> bool {
        self.resource.get("systemKey").and_then(Value::as_bool) == Some(true)
    }

    /// Checks a value sent names a whole key (every path), as point operations need. Containers
    /// without a partition key accept `[]` for "no value".
    pub fn require_full(&self, value: PartitionKeyValue) -> EngineResult<PartitionKeyValue> {
        if value.0.len() == self.paths.len() {
            return Ok(value);
        }
        if value.0.is_empty() && self.is_system_key() {
            return Ok(PartitionKeyValue(vec![
                PartitionKeyPart::Undefined;
                self.paths.len()
            ]));
        }
        Err(EngineError::with_message(
            ErrorCode::PartitionKeyMismatch,
            format!(
                "Partition key provided either doesn't correspond to definition in the collection or doesn't match partition key field values specified in the document. It has {} components; the collection's definition has {}.",
                value.0.len(),
                self.paths.len()
            ),
        ))
    }

    /// The partition key a point operation addresses: the value sent, which must name a whole
    /// key, or the value that stands for none sent.
    pub fn point_key(&self, sent: Option<PartitionKeyValue>) -> EngineResult<PartitionKeyValue> {
        match sent {
            Some(sent) => self.require_full(sent),
            None => self.missing_value(),
        }
    }

    /// The value to use when a point operation sent no partition key.
    pub fn missing_value(&self) -> EngineResult<PartitionKeyValue> {
        if self.is_system_key() {
            Ok(PartitionKeyValue(vec![
                PartitionKeyPart::Undefined;
                self.paths.len()
            ]))
        } else {
            Err(EngineError::new(ErrorCode::PartitionKeyMissing))
        }
    }
}

/// Splits `/a/b`, `/"a b"/c` or `/'le/vel'/c` into property names, as the service (and the
/// SDKs' path parsers) read them: a segment quoted with `"` or `'` is taken as written between
/// its quotes (a quote preceded by `\\` does not close it), others are trimmed; `None` for
/// malformed paths.
pub(crate) fn parse_path(text: &str) -> Option<Vec<String>> {
    let mut rest = text.strip_prefix('/')?;
    let mut names = Vec::new();
    loop {
        let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'');
        if let Some(quote) = quote {
            let quoted = &rest[1..];
            let mut end = None;
            let mut from = 0;
            while let Some(found) = quoted[from..].find(quote) {
                let at = from + found;
                if at > 0 && quoted.as_bytes()[at - 1] == b'\\' {
                    from = at + 1;
                    continue;
                }
                end = Some(at);
                break;
            }
            let end = end?;
            names.push(quoted[..end].to_string());
            rest = &quoted[end + 1..];
        } else {
            let end = rest.find('/').unwrap_or(rest.len());
            let name = rest[..end].trim();
            if name.is_empty() || name.contains(['*', '?', '[', ']']) {
                return None;
            }
            names.push(name.to_string());
            rest = &rest[end..];
        }
        if rest.is_empty() {
            return Some(names);
        }
        rest = rest.strip_prefix('/')?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_path_with_a_space_inside_a_name_or_without_a_slash_is_refused() {
        let message = |path: &str| {
            PartitionKeyDefinition::from_container_body(Some(&json!({"paths": [path]})))
                .err()
                .map(|error| (error.code, error.message))
        };
        let refusal = |path: &str, position: usize| {
            Some((
                ErrorCode::InvalidPartitionKeyDefinition,
                Some(format!("The partition key component definition path '{path}' could not be accepted, failed near position '{position}'. Partition key paths must contain only valid characters and not contain a trailing slash or wildcard character.")),
            ))
        };
        assert_eq!(message("/id ds"), refusal("/id ds", 3));
        assert_eq!(message("/a/b c/d"), refusal("/a/b c/d", 4));
        assert_eq!(message("id"), refusal("id", 0));
        for accepted in ["/id", "/ padded ", "/\"a b\"/c", "/'x y'"] {
            assert_eq!(message(accepted), None, "{accepted}");
        }
    }

    #[test]
    fn paths_with_quoted_segments_parse_as_the_service_reads_them() {
        let cases: [(&str, Option<Vec<&str>>); 7] = [
            ("/a/b", Some(vec!["a", "b"])),
            ("/\"a b\"/c", Some(vec!["a b", "c"])),
            (
                "/'level\" 1*()'/'le/vel2'",
                Some(vec!["level\" 1*()", "le/vel2"]),
            ),
            ("/'it\\'s'", Some(vec!["it\\'s"])),
            ("/ padded ", Some(vec!["padded"])),
            ("/'open", None),
            ("/a*", None),
        ];
        for (path, want) in cases {
            let want = want.map(|names| names.into_iter().map(str::to_string).collect());
            assert_eq!(parse_path(path), want, "{path}");
        }
    }

    #[test]
    fn numbers_of_equal_value_encode_alike() {
        let a = PartitionKeyValue::parse_json_text("[1]").expect("parse");
        let b = PartitionKeyValue::parse_json_text("[1.0]").expect("parse");
        assert_eq!(a.encode(), b.encode());
    }

    #[test]
    fn header_and_document_agree_for_every_kind_of_value() {
        let definition = PartitionKeyDefinition::from_container_body(Some(
            &json!({"paths": ["/a/b"], "kind": "Hash"}),
        ))
        .expect("definition");
        for (document, header) in [
            (json!({"a": {"b": "x"}}), r#"["x"]"#),
            (json!({"a": {"b": 5}}), "[5]"),
            (json!({"a": {"b": true}}), "[true]"),
            (json!({"a": {"b": null}}), "[null]"),
            (json!({"a": {}}), "[{}]"),
            (json!({}), "[{}]"),
        ] {
            let header = PartitionKeyValue::parse_json_text(header).expect("header");
            assert_eq!(
                definition.extract(&document).encode(),
                header.encode(),
                "{document}"
            );
        }
    }

    #[test]
    fn definitions_are_validated() {
        for bad in [
            json!({"paths": []}),
            json!({"paths": ["a"]}),
            json!({"paths": ["/a", "/b"], "kind": "Hash"}),
            json!({"paths": ["/a"], "kind": "Range"}),
            json!("x"),
        ] {
            assert!(
                PartitionKeyDefinition::from_container_body(Some(&bad)).is_err(),
                "{bad}"
            );
        }
        let multi = PartitionKeyDefinition::from_container_body(Some(
            &json!({"paths": ["/t", "/\"u v\""], "kind": "MultiHash", "version": 2}),
        ))
        .expect("multi");
        assert_eq!(
            multi.paths,
            vec![vec!["t".to_string()], vec!["u v".to_string()]]
        );
        let system = PartitionKeyDefinition::from_container_body(None).expect("system");
        assert!(system.is_system_key());
        assert_eq!(
            system
                .require_full(PartitionKeyValue(vec![]))
                .expect("empty")
                .0,
            vec![PartitionKeyPart::Undefined]
        );
    }
}
