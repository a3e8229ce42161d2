//! Partial document update (PATCH): the service's operations `add`, `set`, `replace`, `remove`,
//! `incr` and `move` over JSON-pointer-like paths, with an optional SQL filter condition.
//!
//! Operations apply to a copy of the current document, all or nothing; the result is then
//! written as an ordinary replace (so TTL, ETags and the partition key rules apply unchanged).
//! This module decides nothing about visibility or storage.

use crate::container::Container;
use crate::error::{corrupted, EngineError, EngineResult, ErrorCode};
use crate::items::rules::{self, prepare_body, WriteMode};
use crate::items::{apply_write, stored_version, visible_record, ItemOutcome, WriteRequest};
use crate::partitions::partition_key::PartitionKeyValue;
use crate::records::SYSTEM_PROPERTIES;
use crate::throughput::request_units;
use crate::writer::WriteContext;
use serde_json::Value;
use std::sync::Arc;

/// The most operations one patch may carry (the service's limit).
pub const PATCH_OPERATIONS_MAX: usize = 10;

/// One patch operation, parsed.
#[derive(Clone, Debug, PartialEq)]
pub enum PatchOperation {
    Add {
        path: Vec<String>,
        value: Value,
    },
    Set {
        path: Vec<String>,
        value: Value,
    },
    Replace {
        path: Vec<String>,
        value: Value,
    },
    Remove {
        path: Vec<String>,
    },
    Increment {
        path: Vec<String>,
        value: Value,
    },
    Move {
        from: Vec<String>,
        path: Vec<String>,
    },
}

fn bad(message: impl Into<String>) -> EngineError {
    EngineError::with_message(ErrorCode::InvalidPatch, message.into())
}

fn parse_path(text: &str) -> EngineResult<Vec<String>> {
    let Some(rest) = text.strip_prefix('/') else {
        return Err(bad(format!("The patch path '{text}' must start with '/'.")));
    };
    if rest.is_empty() {
        return Err(bad("The patch path '/' cannot name the whole document."));
    }
    // JSON pointer escapes: ~1 is '/', ~0 is '~'.
    let segments: Vec<String> = rest
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    if let Some(first) = segments.first() {
        if first == "id" || SYSTEM_PROPERTIES.contains(&first.as_str()) {
            return Err(bad(format!(
                "The patch path '{text}' names a property that cannot be patched."
            )));
        }
    }
    Ok(segments)
}

/// Parses the request body: `{"operations": [...], "condition": "FROM c WHERE ..."}` or a bare
/// array of operations.
pub fn parse_patch(body: &Value) -> EngineResult<(Vec<PatchOperation>, Option<String>)> {
    let (list, condition) = match body {
        Value::Array(list) => (list, None),
        Value::Object(map) => match map.get("operations") {
            Some(Value::Array(list)) => (
                list,
                map.get("condition")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            ),
            _ => return Err(bad("The patch body must have an array 'operations'.")),
        },
        _ => {
            return Err(bad(
                "The patch body must be an object with 'operations' or an array.",
            ))
        }
    };
    if list.is_empty() {
        return Err(bad("A patch needs at least one operation."));
    }
    if list.len() > PATCH_OPERATIONS_MAX {
        return Err(bad(format!(
            "A patch may carry at most {PATCH_OPERATIONS_MAX} operations."
        )));
    }
    let mut operations = Vec::with_capacity(list.len());
    for raw in list {
        let op = raw
            .get("op")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_ascii_lowercase();
        let path = parse_path(raw.get("path").and_then(Value::as_str).unwrap_or_default())?;
        let value = || {
            raw.get("value")
                .cloned()
                .ok_or_else(|| bad(format!("The patch operation '{op}' needs a 'value'.")))
        };
        operations.push(match op.as_str() {
            "add" => PatchOperation::Add { path, value: value()? },
            "set" => PatchOperation::Set { path, value: value()? },
            "replace" => PatchOperation::Replace { path, value: value()? },
            "remove" => PatchOperation::Remove { path },
            "incr" | "increment" => {
                let value = value()?;
                if !value.is_number() {
                    return Err(bad("The 'incr' patch operation needs a numeric value."));
                }
                PatchOperation::Increment { path, value }
            }
            "move" => {
                let from = parse_path(raw.get("from").and_then(Value::as_str).unwrap_or_default())?;
                PatchOperation::Move { from, path }
            }
            other => return Err(bad(format!("The patch operation '{other}' is not one of add, set, replace, remove, incr, move."))),
        });
    }
    Ok((operations, condition))
}

/// The parent container of the last path segment, created on the way for `add`/`set`.
fn parent<'a>(document: &'a mut Value, path: &[String]) -> EngineResult<&'a mut Value> {
    let mut node = document;
    for segment in &path[..path.len() - 1] {
        node = match node {
            Value::Object(map) => map.get_mut(segment).ok_or_else(|| {
                bad(format!(
                    "The patch path segment '{segment}' does not exist."
                ))
            })?,
            Value::Array(items) => {
                let index: usize = segment
                    .parse()
                    .map_err(|_| bad(format!("'{segment}' is not an array index.")))?;
                items
                    .get_mut(index)
                    .ok_or_else(|| bad(format!("The array index {index} is out of range.")))?
            }
            _ => {
                return Err(bad(format!(
                    "The patch path segment '{segment}' is not inside an object or array."
                )))
            }
        };
    }
    Ok(node)
}

fn array_index(segment: &str, len: usize, allow_end: bool) -> EngineResult<usize> {
    if allow_end && segment == "-" {
        return Ok(len);
    }
    let index: usize = segment
        .parse()
        .map_err(|_| bad(format!("'{segment}' is not an array index.")))?;
    let limit = if allow_end {
        len
    } else {
        len.saturating_sub(1)
    };
    if index > limit || (!allow_end && len == 0) {
        return Err(bad(format!("The array index {index} is out of range.")));
    }
    Ok(index)
}

fn remove_at(document: &mut Value, path: &[String]) -> EngineResult<Value> {
    let last = &path[path.len() - 1];
    match parent(document, path)? {
        Value::Object(map) => map
            .shift_remove(last)
            .ok_or_else(|| bad(format!("The property '{last}' to remove does not exist."))),
        Value::Array(items) => {
            let index = array_index(last, items.len(), false)?;
            Ok(items.remove(index))
        }
        _ => Err(bad("The patch path does not name a property or element.")),
    }
}

/// Applies the operations in order to a copy of `document`; all or nothing.
pub fn apply_patch(document: &Value, operations: &[PatchOperation]) -> EngineResult<Value> {
    let mut patched = document.clone();
    for operation in operations {
        match operation {
            PatchOperation::Add { path, value } => put_at(&mut patched, path, value, true)?,
            PatchOperation::Set { path, value } => put_at(&mut patched, path, value, false)?,
            PatchOperation::Replace { path, value } => replace_at(&mut patched, path, value)?,
            PatchOperation::Remove { path } => {
                remove_at(&mut patched, path)?;
            }
            PatchOperation::Increment { path, value } => increment_at(&mut patched, path, value)?,
            PatchOperation::Move { from, path } => {
                let moved = remove_at(&mut patched, from)?;
                let last = &path[path.len() - 1];
                match parent(&mut patched, path)? {
                    Value::Object(map) => {
                        map.insert(last.clone(), moved);
                    }
                    _ => return Err(bad("The 'move' target must be an object property.")),
                }
            }
        }
    }
    Ok(patched)
}

/// `add` (`insert`: an array element goes before the index) and `set` (it replaces the
/// element at the index); both create or overwrite an object's property.
fn put_at(document: &mut Value, path: &[String], value: &Value, insert: bool) -> EngineResult<()> {
    let last = &path[path.len() - 1];
    match parent(document, path)? {
        Value::Object(map) => {
            map.insert(last.clone(), value.clone());
        }
        Value::Array(items) => {
            let index = array_index(last, items.len(), true)?;
            if insert {
                items.insert(index, value.clone());
            } else if index == items.len() {
                items.push(value.clone());
            } else {
                items[index] = value.clone();
            }
        }
        _ => {
            return Err(bad(
                "The patch path does not end inside an object or array.",
            ))
        }
    }
    Ok(())
}

/// `replace`: the property or element must exist.
fn replace_at(document: &mut Value, path: &[String], value: &Value) -> EngineResult<()> {
    let last = &path[path.len() - 1];
    match parent(document, path)? {
        Value::Object(map) => match map.get_mut(last) {
            Some(slot) => *slot = value.clone(),
            None => {
                return Err(bad(format!(
                    "The property '{last}' to replace does not exist."
                )))
            }
        },
        Value::Array(items) => {
            let index = array_index(last, items.len(), false)?;
            items[index] = value.clone();
        }
        _ => return Err(bad("The patch path does not name a property or element.")),
    }
    Ok(())
}

/// `incr`: adds to a number (a missing property counts as 0), in integers while both are.
fn increment_at(document: &mut Value, path: &[String], value: &Value) -> EngineResult<()> {
    let last = &path[path.len() - 1];
    let Value::Object(map) = parent(document, path)? else {
        return Err(bad("The 'incr' path must name an object property."));
    };
    let current = map.get(last).cloned().unwrap_or(Value::from(0));
    let sum = match (current.as_i64(), value.as_i64()) {
        (Some(a), Some(b)) => a.checked_add(b).map(Value::from),
        _ => match (current.as_f64(), value.as_f64()) {
            (Some(a), Some(b)) if current.is_number() => {
                serde_json::Number::from_f64(a + b).map(Value::Number)
            }
            _ => None,
        },
    };
    let sum = sum.ok_or_else(|| {
        bad(format!(
            "The property '{last}' is not a number that can be incremented."
        ))
    })?;
    map.insert(last.clone(), sum);
    Ok(())
}

/// Whether `document` satisfies a patch's `FROM c WHERE ...` condition.
fn condition_holds(condition: &str, document: &Value, now_ms: i64) -> EngineResult<bool> {
    let prepared = lethedb_query::prepare(&format!("SELECT VALUE 1 {condition}"), &[], now_ms)?;
    let mut run = prepared.start_page(None, 1)?;
    // The push's answer does not matter: one document either passes the filter or not.
    let _ = run.push(b"", document)?;
    Ok(!run.finish(true)?.items.is_empty())
}

/// Patches one visible item inside the writer: a replace of the item by its patched copy, so
/// the item rules decide it (the item must exist, an If-Match must hold) before the patch's own
/// condition and operations apply.
pub(crate) fn apply_patch_item(
    context: &mut WriteContext<'_>,
    container: Arc<Container>,
    partition_key: Option<PartitionKeyValue>,
    id: &str,
    operations: &[PatchOperation],
    condition: Option<&str>,
    if_match: Option<String>,
) -> EngineResult<ItemOutcome> {
    let partition_key = container.partition_key.point_key(partition_key)?;
    let key = container.item_key(&partition_key, id);
    let current = visible_record(context, &container, &key)?
        .map(|record| (stored_version(container.key_number(), &record), record));
    let current = rules::decide_existing(if_match.as_deref(), current)?;
    // Parsed once: the same document gives the index entries the write removes.
    let document = match context.written.get(&key, current.lsn) {
        Some(document) => document,
        None => Arc::new(current.document().ok_or_else(|| corrupted("item"))?),
    };
    if let Some(condition) = condition {
        if !condition_holds(condition, &document, context.now_ms)? {
            return Err(EngineError::with_message(
                ErrorCode::PreconditionFailed,
                "The patch condition is not met by the current document.",
            ));
        }
    }
    let patched = apply_patch(&document, operations)?;
    if container.partition_key.extract(&patched).encode() != partition_key.encode() {
        return Err(bad("A patch cannot change the partition key of an item."));
    }
    // The same writer job: the version just decided on is still the current one.
    let request = WriteRequest {
        mode: WriteMode::Replace(id.to_string()),
        partition_key: Some(partition_key),
        body: prepare_body(patched)?,
        if_match: None,
        replaced_document: Some((current.lsn, document)),
    };
    let mut outcome = apply_write(context, container, request)?;
    outcome.created = false;
    // A patch is charged as the replace it amounts to, plus its operations.
    outcome.request_units = request_units::patch(outcome.request_units, operations.len());
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(document: Value, operations: Value, expected: Result<Value, &str>) {
        let result = parse_patch(&json!({"operations": operations}))
            .and_then(|(ops, _)| apply_patch(&document, &ops));
        match (result, expected) {
            (Ok(patched), Ok(expected)) => assert_eq!(patched, expected),
            (Err(error), Err(part)) => assert!(error.to_string().contains(part), "{error}"),
            (other, expected) => panic!("got {other:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn operations() {
        let doc = json!({"id": "a", "n": 1, "tags": ["x", "y"], "o": {"p": 1}});
        check(
            doc.clone(),
            json!([{"op": "add", "path": "/new", "value": 5}]),
            Ok(json!({"id": "a", "n": 1, "tags": ["x", "y"], "o": {"p": 1}, "new": 5})),
        );
        check(
            doc.clone(),
            json!([{"op": "add", "path": "/tags/1", "value": "z"}]),
            Ok(json!({"id": "a", "n": 1, "tags": ["x", "z", "y"], "o": {"p": 1}})),
        );
        check(
            doc.clone(),
            json!([{"op": "add", "path": "/tags/-", "value": "z"}]),
            Ok(json!({"id": "a", "n": 1, "tags": ["x", "y", "z"], "o": {"p": 1}})),
        );
        check(
            doc.clone(),
            json!([{"op": "set", "path": "/tags/0", "value": "w"}]),
            Ok(json!({"id": "a", "n": 1, "tags": ["w", "y"], "o": {"p": 1}})),
        );
        check(
            doc.clone(),
            json!([{"op": "replace", "path": "/o/p", "value": 2}]),
            Ok(json!({"id": "a", "n": 1, "tags": ["x", "y"], "o": {"p": 2}})),
        );
        check(
            doc.clone(),
            json!([{"op": "replace", "path": "/missing", "value": 2}]),
            Err("does not exist"),
        );
        check(
            doc.clone(),
            json!([{"op": "remove", "path": "/tags/0"}]),
            Ok(json!({"id": "a", "n": 1, "tags": ["y"], "o": {"p": 1}})),
        );
        check(
            doc.clone(),
            json!([{"op": "remove", "path": "/nope"}]),
            Err("does not exist"),
        );
        check(
            doc.clone(),
            json!([{"op": "incr", "path": "/n", "value": 2}, {"op": "incr", "path": "/m", "value": 1.5}]),
            Ok(json!({"id": "a", "n": 3, "tags": ["x", "y"], "o": {"p": 1}, "m": 1.5})),
        );
        check(
            doc.clone(),
            json!([{"op": "incr", "path": "/tags", "value": 1}]),
            Err("not a number"),
        );
        check(
            doc.clone(),
            json!([{"op": "move", "from": "/o", "path": "/q"}]),
            Ok(json!({"id": "a", "n": 1, "tags": ["x", "y"], "q": {"p": 1}})),
        );
        check(
            doc.clone(),
            json!([{"op": "set", "path": "/id", "value": "b"}]),
            Err("cannot be patched"),
        );
        check(
            doc.clone(),
            json!([{"op": "frobnicate", "path": "/n"}]),
            Err("not one of"),
        );
        // All or nothing: a failing second operation leaves no trace of the first.
        check(
            doc,
            json!([{"op": "set", "path": "/n", "value": 9}, {"op": "remove", "path": "/nope"}]),
            Err("does not exist"),
        );
        let too_many: Vec<Value> = (0..11)
            .map(|i| json!({"op": "set", "path": format!("/f{i}"), "value": i}))
            .collect();
        assert!(parse_patch(&json!(too_many)).is_err());
    }
}
