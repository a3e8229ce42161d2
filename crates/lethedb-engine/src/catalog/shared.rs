//! What every catalog resource shares, databases and containers included: a JSON object body
//! with a valid id, listing the stored records under one key prefix, and finding one by `_rid`.
//!
//! It decides nothing about any one kind and writes nothing.

use crate::error::{corrupted, EngineError, EngineResult, ErrorCode};
use crate::limits::validate_id;
use crate::scan_visit::try_scan;
use lethedb_storage::{KeyRange, ReadTxn, Table};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::ops::ControlFlow;

/// The request body as a JSON object.
pub(crate) fn body_object(body: Value) -> EngineResult<Map<String, Value>> {
    match body {
        Value::Object(map) => Ok(map),
        _ => Err(EngineError::new(ErrorCode::InvalidDocument)),
    }
}

/// The body's id, checked against the id rules.
pub(crate) fn body_id(body: &Map<String, Value>) -> EngineResult<String> {
    match body.get("id") {
        Some(Value::String(id)) => {
            validate_id(id)?;
            Ok(id.clone())
        }
        _ => Err(EngineError::with_message(
            ErrorCode::InvalidDocument,
            "The input content is invalid because the required properties - 'id; ' - are missing",
        )),
    }
}

/// Every stored record under `prefix` in the catalog, as clients see it.
pub(crate) fn list_records<T: DeserializeOwned>(
    reader: &dyn ReadTxn,
    prefix: &[u8],
    what: &str,
    resource_of: impl Fn(T) -> Value,
) -> EngineResult<Vec<Value>> {
    let mut found = Vec::new();
    try_scan(
        reader,
        Table::Catalog,
        &KeyRange::prefix(prefix),
        &mut |_, value| {
            let record = serde_json::from_slice::<T>(value).map_err(|_| corrupted(what))?;
            found.push(resource_of(record));
            Ok(ControlFlow::Continue(()))
        },
    )?;
    Ok(found)
}

/// The id of the resource among `resources` whose `_rid` is `rid`.
pub(crate) fn id_with_rid(resources: Vec<Value>, rid: &str) -> Option<String> {
    resources.into_iter().find_map(|resource| {
        (resource.get("_rid").and_then(Value::as_str) == Some(rid))
            .then(|| {
                resource
                    .get("id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .flatten()
    })
}
