//! A container's search policies as the service checks them: the `vectorEmbeddingPolicy`, the
//! indexing policy's `vectorIndexes`, the `fullTextPolicy` and `fullTextIndexes`, and the
//! `spatialIndexes`; and which of them a container replace may change. The service keeps these
//! as sent, so nothing here rewrites them: a policy is accepted whole or refused with the
//! service's words.
//!
//! Pure functions of request bodies; nothing here reads storage, and nothing here searches
//! (the policies only say what a search may use).

use crate::error::{EngineError, EngineResult, ErrorCode};
use serde_json::{Map, Value};

/// The vector data types the service accepts (`float16` is accepted at creation, as the
/// Python SDK's own policy test sends it).
const DATA_TYPES: [&str; 4] = ["float32", "float16", "int8", "uint8"];
/// The distance functions of a vector embedding.
const DISTANCE_FUNCTIONS: [&str; 3] = ["cosine", "dotproduct", "euclidean"];
/// The most dimensions a vector embedding may have.
pub(crate) const VECTOR_DIMENSIONS_MAX: i64 = 4096;
/// The vector index types.
const VECTOR_INDEX_TYPES: [&str; 3] = ["flat", "quantizedFlat", "diskANN"];
/// The range of `indexingSearchListSize`.
const SEARCH_LIST_SIZE: (i64, i64) = (25, 500);
/// The largest `quantizationByteSize` whatever the dimensions.
const QUANTIZATION_BYTES_MAX: i64 = 512;
/// The most `vectorIndexShardKey` paths.
const SHARD_PATHS_MAX: usize = 1;
/// The full-text languages: English, and the languages the service offers in preview.
pub(crate) const FULL_TEXT_LANGUAGES: [&str; 7] = [
    "en-US", "fr-FR", "de-DE", "it-IT", "pt-BR", "pt-PT", "es-ES",
];
/// Language codes the service takes beside those it lists in its refusal: `1033`, the Windows
/// locale number of `en-US` (the JavaScript SDK's own full-text policy test sends it).
const FULL_TEXT_LANGUAGE_NUMBERS: [&str; 1] = ["1033"];
/// The geometry types a spatial index may name.
const SPATIAL_TYPES: [&str; 4] = ["Point", "LineString", "Polygon", "MultiPolygon"];

/// The service's answer to a malformed input it does not explain further.
const INVALID_INPUT: &str = "One of the specified inputs is invalid";

fn refused(code: ErrorCode, message: String) -> EngineError {
    EngineError::with_message(code, message)
}

fn bad_policy(message: String) -> EngineError {
    refused(ErrorCode::InvalidDocument, message)
}

fn bad_index(message: String) -> EngineError {
    refused(ErrorCode::InvalidIndexingPolicy, message)
}

/// Checks the search policies of a container body whose indexing policy is `indexing_policy`
/// (already normalised). Shared by create and replace.
pub(crate) fn check_search_policies(
    body: &Map<String, Value>,
    indexing_policy: &Value,
) -> EngineResult<()> {
    let embeddings = vector_embeddings(body.get("vectorEmbeddingPolicy"))?;
    check_vector_indexes(indexing_policy.get("vectorIndexes"), &embeddings)?;
    let full_text_paths = full_text_paths(body.get("fullTextPolicy"))?;
    check_full_text_indexes(indexing_policy.get("fullTextIndexes"), &full_text_paths)?;
    check_spatial_indexes(indexing_policy.get("spatialIndexes"))
}

/// One checked vector embedding: its path and dimensions.
pub(crate) struct Embedding {
    pub(crate) path: String,
    pub(crate) dimensions: i64,
}

/// The embeddings of a `vectorEmbeddingPolicy` (absent or null: none), each checked.
pub(crate) fn vector_embeddings(policy: Option<&Value>) -> EngineResult<Vec<Embedding>> {
    let list = match policy {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(policy)) => match policy.get("vectorEmbeddings") {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(list)) => list,
            Some(_) => return Err(bad_policy(INVALID_INPUT.into())),
        },
        Some(_) => return Err(bad_policy(INVALID_INPUT.into())),
    };
    let mut embeddings: Vec<Embedding> = Vec::with_capacity(list.len());
    for entry in list {
        let embedding = embedding(entry)?;
        if embeddings.iter().any(|seen| seen.path == embedding.path) {
            return Err(bad_policy(format!(
                "The Vector Embedding Policy has a duplicate Path:{}.",
                embedding.path
            )));
        }
        embeddings.push(embedding);
    }
    Ok(embeddings)
}

fn embedding(entry: &Value) -> EngineResult<Embedding> {
    let Value::Object(entry) = entry else {
        return Err(bad_policy(INVALID_INPUT.into()));
    };
    let path = text_field(entry, "path").unwrap_or_default();
    if !is_property_path(path) {
        return Err(bad_policy(format!(
            "The Vector Embedding Policy has an invalid Path:{path}."
        )));
    }
    let data_type = text_field(entry, "dataType").unwrap_or_default();
    if !DATA_TYPES.contains(&data_type) {
        return Err(bad_policy(format!(
            "The Vector Embedding Policy has an invalid DataType:{data_type}. Supported types are {}.",
            DATA_TYPES.join(", ")
        )));
    }
    let distance = text_field(entry, "distanceFunction").unwrap_or_default();
    if !DISTANCE_FUNCTIONS.contains(&distance) {
        return Err(bad_policy(format!(
            "The Vector Embedding Policy has an invalid DistanceFunction:{distance}. Supported functions are {}.",
            DISTANCE_FUNCTIONS.join(", ")
        )));
    }
    let dimensions = match entry.get("dimensions") {
        Some(Value::Number(number)) => number.as_i64(),
        _ => None,
    }
    .ok_or_else(|| bad_policy(INVALID_INPUT.into()))?;
    if dimensions < 1 {
        return Err(bad_policy(format!(
            "The Vector Embedding Policy has Dimensions:{dimensions} which is less than the minimum supported value: 1."
        )));
    }
    if dimensions > VECTOR_DIMENSIONS_MAX {
        return Err(bad_policy(format!(
            "The Vector Embedding Policy has Dimensions:{dimensions} which is more than the maximum supported value: {VECTOR_DIMENSIONS_MAX}."
        )));
    }
    Ok(Embedding {
        path: path.to_string(),
        dimensions,
    })
}

/// Checks `indexingPolicy.vectorIndexes` against the embeddings they index.
fn check_vector_indexes(indexes: Option<&Value>, embeddings: &[Embedding]) -> EngineResult<()> {
    let Some(list) = list_of(indexes, bad_index)? else {
        return Ok(());
    };
    for index in list {
        let Value::Object(index) = index else {
            return Err(bad_index(INVALID_INPUT.into()));
        };
        let path = text_field(index, "path").unwrap_or_default();
        let Some(embedding) = embeddings.iter().find(|embedding| embedding.path == path) else {
            return Err(bad_index(format!(
                "The Vector Indexing Policy's path::{path} not matching in Embedding's path."
            )));
        };
        let kind = text_field(index, "type").unwrap_or_default();
        if !VECTOR_INDEX_TYPES.contains(&kind) {
            return Err(bad_index(format!(
                "The Vector Indexing Policy's Index Type::{kind} is invalid. Supported types are {}.",
                VECTOR_INDEX_TYPES.join(", ")
            )));
        }
        let quantized_most = embedding.dimensions.min(QUANTIZATION_BYTES_MAX);
        check_parameter(
            index,
            "quantizationByteSize",
            "QuantizationByteSize",
            (1, quantized_most),
        )?;
        check_parameter(
            index,
            "indexingSearchListSize",
            "IndexingSearchListSize",
            SEARCH_LIST_SIZE,
        )?;
        check_shard_key(index.get("vectorIndexShardKey"))?;
    }
    Ok(())
}

/// A whole-number parameter of a vector index, when present, within `range` (inclusive).
fn check_parameter(
    index: &Map<String, Value>,
    field: &str,
    name: &str,
    (least, most): (i64, i64),
) -> EngineResult<()> {
    let Some(value) = index.get(field).filter(|value| !value.is_null()) else {
        return Ok(());
    };
    let value = value
        .as_i64()
        .ok_or_else(|| bad_index(INVALID_INPUT.into()))?;
    if (least..=most).contains(&value) {
        return Ok(());
    }
    Err(bad_index(format!(
        "The Vector Indexing Policy parameter {name} value :: {value} is out of range. The allowed range is between {least} and {most}."
    )))
}

/// `vectorIndexShardKey`: a list of at most one property path.
fn check_shard_key(key: Option<&Value>) -> EngineResult<()> {
    let Some(list) = list_of(key, bad_index)? else {
        return Ok(());
    };
    if list.len() > SHARD_PATHS_MAX {
        return Err(bad_index(format!(
            "The number of shard paths defined in the Vector Indexing Policy: {} exceeds the maximum: {SHARD_PATHS_MAX}.",
            list.len()
        )));
    }
    for path in list {
        let path = path
            .as_str()
            .ok_or_else(|| bad_index(INVALID_INPUT.into()))?;
        if !is_property_path(path) {
            return Err(bad_index(format!(
                "The Vector Indexing Policy has an invalid Shard Path: {path}."
            )));
        }
    }
    Ok(())
}

/// The paths of a `fullTextPolicy` (absent or null: none), its languages checked.
pub(crate) fn full_text_paths(policy: Option<&Value>) -> EngineResult<Vec<String>> {
    let policy = match policy {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(policy)) => policy,
        Some(_) => return Err(bad_policy(INVALID_INPUT.into())),
    };
    if let Some(language) = policy.get("defaultLanguage").filter(|v| !v.is_null()) {
        check_language(language)?;
    }
    let Some(list) = list_of(policy.get("fullTextPaths"), bad_policy)? else {
        return Ok(Vec::new());
    };
    let mut paths = Vec::with_capacity(list.len());
    for entry in list {
        let Value::Object(entry) = entry else {
            return Err(bad_policy(INVALID_INPUT.into()));
        };
        let path = text_field(entry, "path").unwrap_or_default();
        if !is_property_path(path) {
            return Err(bad_policy(format!(
                "The Full Text Policy contains an invalid Path: {path}."
            )));
        }
        if let Some(language) = entry.get("language").filter(|v| !v.is_null()) {
            check_language(language)?;
        }
        paths.push(path.to_string());
    }
    Ok(paths)
}

fn check_language(language: &Value) -> EngineResult<()> {
    match language.as_str() {
        Some(language)
            if FULL_TEXT_LANGUAGES.contains(&language)
                || FULL_TEXT_LANGUAGE_NUMBERS.contains(&language) =>
        {
            Ok(())
        }
        _ => Err(bad_policy(format!(
            "The Full Text Policy contains an unsupported language {language}. Supported languages are {}.",
            FULL_TEXT_LANGUAGES.join(", ")
        ))),
    }
}

/// `indexingPolicy.fullTextIndexes`: each a path of the full-text policy.
fn check_full_text_indexes(indexes: Option<&Value>, paths: &[String]) -> EngineResult<()> {
    let Some(list) = list_of(indexes, bad_index)? else {
        return Ok(());
    };
    for index in list {
        let path = index
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| bad_index(INVALID_INPUT.into()))?;
        if !is_property_path(path) {
            return Err(bad_index(format!(
                "The Full Text Index contains an invalid Path: {path}."
            )));
        }
        if !paths.iter().any(|known| known == path) {
            return Err(bad_index(format!(
                "The Full Text Index's path::{path} not matching in Full Text Policy's path."
            )));
        }
    }
    Ok(())
}

/// `indexingPolicy.spatialIndexes`: each a path ending in `/*` (or `/?`) with known types.
fn check_spatial_indexes(indexes: Option<&Value>) -> EngineResult<()> {
    let Some(list) = list_of(indexes, bad_index)? else {
        return Ok(());
    };
    for index in list {
        let path = index
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let under = path
            .strip_suffix("/*")
            .or_else(|| path.strip_suffix("/?"))
            .unwrap_or_default();
        if !is_property_path(under) {
            return Err(bad_index(format!(
                "The spatial index path '{path}' is invalid: it must name a property and end with '/*'."
            )));
        }
        let types = match index.get("types") {
            None | Some(Value::Null) => continue,
            Some(Value::Array(types)) => types,
            Some(_) => return Err(bad_index(INVALID_INPUT.into())),
        };
        for kind in types {
            if !kind
                .as_str()
                .is_some_and(|kind| SPATIAL_TYPES.contains(&kind))
            {
                return Err(bad_index(format!(
                    "The spatial index type {kind} is invalid. Supported types are {}.",
                    SPATIAL_TYPES.join(", ")
                )));
            }
        }
    }
    Ok(())
}

/// Checks what a replace may not change: every vector embedding and every vector index the
/// container has must come back unchanged (new ones may be added).
pub(crate) fn check_replace_keeps_vectors(existing: &Value, sent: &Value) -> EngineResult<()> {
    let kept = |list: Option<&Value>, sent_list: Option<&Value>| {
        let sent_list = sent_list.and_then(Value::as_array);
        list.and_then(Value::as_array).is_none_or(|entries| {
            entries
                .iter()
                .all(|entry| sent_list.is_some_and(|sent| sent.contains(entry)))
        })
    };
    let embeddings = |resource: &Value| {
        resource
            .get("vectorEmbeddingPolicy")
            .and_then(|policy| policy.get("vectorEmbeddings"))
            .cloned()
    };
    if !kept(embeddings(existing).as_ref(), embeddings(sent).as_ref()) {
        return Err(bad_policy(
            "Paths in existing embedding policy cannot be modified in Collection Replace".into(),
        ));
    }
    let indexes = |resource: &Value| {
        resource
            .get("indexingPolicy")
            .and_then(|policy| policy.get("vectorIndexes"))
            .cloned()
    };
    if !kept(indexes(existing).as_ref(), indexes(sent).as_ref()) {
        return Err(bad_index(
            "Paths in existing vector indexing policy cannot be modified in Collection Replace"
                .into(),
        ));
    }
    Ok(())
}

/// A list a policy may leave out (absent or null: `None`); anything but an array is refused
/// with `refusal`'s generic "invalid input".
fn list_of(
    value: Option<&Value>,
    refusal: fn(String) -> EngineError,
) -> EngineResult<Option<&Vec<Value>>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(list)) => Ok(Some(list)),
        Some(_) => Err(refusal(INVALID_INPUT.into())),
    }
}

fn text_field<'a>(map: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    map.get(name).and_then(Value::as_str)
}

/// A path to one property: `/a` or `/a/b`, no empty segment, no wildcard, no array step.
fn is_property_path(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    !rest.is_empty()
        && rest
            .split('/')
            .all(|segment| !segment.is_empty() && !segment.contains(['*', '?', '[', ']']))
}

#[cfg(test)]
mod tests;
