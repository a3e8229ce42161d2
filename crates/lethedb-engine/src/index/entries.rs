//! The index entries of one version of an item under a container's compiled policy: one key
//! per (indexed path, value) of the document, `_ts` included, plus an "undefined" key for each
//! explicitly included path the document lacks, plus one key per composite index, plus one key
//! per grid cell of each geometry at a path of a spatial index, plus one key per distinct stem
//! of the text at a path of a full-text index.
//!
//! A path is the property names from the root with `[]` for any array element, so each element
//! of an array is an entry under `…/[]` (one entry per distinct value), and an array or object
//! is itself an entry under its own path, sorted as the language sorts it. Keys end with the
//! document number (`_rid`), so entries of equal values come in `_rid` order. Pure: the
//! writer stores what this computes (`index/maintain.rs`); nothing here reads storage.

use crate::index::policy::IndexPolicy;
use crate::keys;
use lethedb_query::{
    complement, encode_sort_key, full_text_stem_key, full_text_terms, spatial_cells,
};
use serde_json::{Map, Value};

/// Properties the service adds to every item; the stored body does not carry them, and `_ts`
/// is indexed from the version's own time.
const SYSTEM_PROPERTIES: [&str; 5] = ["_rid", "_self", "_etag", "_attachments", "_ts"];

/// What one version of an item is indexed by.
pub(crate) struct IndexedVersion<'a> {
    /// The document as stored (without system properties).
    pub(crate) document: &'a Value,
    /// `_ts`: the version's last-modified time in seconds.
    pub(crate) ts_secs: i64,
    pub(crate) document_number: u64,
}

/// The entries of `version` under `policy`, sorted and without duplicates.
pub(crate) fn entries(
    container_number: u64,
    policy: &IndexPolicy,
    version: &IndexedVersion<'_>,
) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut emit = |path: &[String], value: Option<&Value>| {
        let mut key = keys::index_path_prefix(container_number, path);
        encode_sort_key(value, &mut key);
        key.extend_from_slice(&version.document_number.to_be_bytes());
        out.push(key);
    };
    let members = version.document.as_object();
    let mut path = Vec::new();
    for (name, child) in members.into_iter().flatten() {
        if SYSTEM_PROPERTIES.contains(&name.as_str()) {
            continue;
        }
        path.push(name.clone());
        visit(policy, &mut path, child, &mut emit);
        path.pop();
    }
    let ts = Value::from(version.ts_secs);
    let ts_path = ["_ts".to_string()];
    if policy.coverage(&ts_path).is_indexed() {
        emit(&ts_path, Some(&ts));
    }
    for explicit in policy.explicit_paths() {
        if lookup(members, explicit).is_none() {
            emit(explicit, None);
        }
    }
    composite_entries(container_number, policy, version, &mut out);
    if policy.has_spatial() {
        let mut path = Vec::new();
        spatial_entries(
            container_number,
            policy,
            version,
            &mut path,
            version.document,
            &mut out,
        );
    }
    full_text_entries(container_number, policy, version, &mut out);
    out.sort_unstable();
    out.dedup();
    out
}

/// One entry per distinct stem of the text at each full-text index's path, stemmed in that
/// index's language as `FullTextContains` stems it (`lethedb_query::full_text_terms`); a value
/// that is no string has none, as no full-text predicate is true of it. Each stem also has an
/// impact entry (how often the text holds it and the text's word count, which is all BM25
/// reads of a document) and each text one length entry (its word count, for the path's total).
fn full_text_entries(
    container_number: u64,
    policy: &IndexPolicy,
    version: &IndexedVersion<'_>,
    out: &mut Vec<Vec<u8>>,
) {
    for (path, language) in policy.full_text_indexes() {
        let Some(Value::String(text)) = lookup(version.document.as_object(), path) else {
            continue;
        };
        let mut stems = full_text_terms(text, *language);
        // Texts far below 4 GiB words: a count saturates rather than wraps.
        let words = u32::try_from(stems.len()).unwrap_or(u32::MAX);
        stems.sort_unstable();
        let number = version.document_number;
        let prefix = keys::index_full_text_prefix(container_number, path);
        let impact = keys::index_full_text_impact_prefix(container_number, path);
        let mut at = 0;
        while at < stems.len() {
            let stem = &stems[at];
            let count = stems[at..]
                .iter()
                .take_while(|other| *other == stem)
                .count();
            at += count;
            let stem_key = full_text_stem_key(stem);
            out.push([prefix.as_slice(), &stem_key, &number.to_be_bytes()].concat());
            let count = u32::try_from(count).unwrap_or(u32::MAX);
            out.push(
                [
                    impact.as_slice(),
                    &stem_key,
                    &(!count).to_be_bytes(),
                    &words.to_be_bytes(),
                    &(!number).to_be_bytes(),
                ]
                .concat(),
            );
        }
        let mut length = keys::index_full_text_length_prefix(container_number, path);
        length.extend_from_slice(&number.to_be_bytes());
        length.extend_from_slice(&words.to_be_bytes());
        out.push(length);
    }
}

/// Emits the entry of one node if the policy indexes its path, then its children's.
fn visit(
    policy: &IndexPolicy,
    path: &mut Vec<String>,
    value: &Value,
    emit: &mut impl FnMut(&[String], Option<&Value>),
) {
    if policy.coverage(path).is_indexed() {
        emit(path, Some(value));
    }
    match value {
        Value::Array(elements) => {
            path.push("[]".to_string());
            for element in elements {
                visit(policy, path, element, emit);
            }
            path.pop();
        }
        Value::Object(members) => {
            for (name, child) in members {
                path.push(name.clone());
                visit(policy, path, child, emit);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The spatial entries of `value` at `path` and below it: one per grid cell of each geometry
/// at a spatially indexed path (`lethedb_query::spatial_cells`), a geometry's own members
/// included (a query may name any path the index covers); system properties are skipped as
/// for range entries.
fn spatial_entries(
    container_number: u64,
    policy: &IndexPolicy,
    version: &IndexedVersion<'_>,
    path: &mut Vec<String>,
    value: &Value,
    out: &mut Vec<Vec<u8>>,
) {
    if !path.is_empty() && policy.spatially_indexed(path) {
        if let Some(cells) = spatial_cells(value) {
            let prefix = keys::index_spatial_prefix(container_number, path);
            for cell in cells {
                let mut key = prefix.clone();
                key.extend_from_slice(&cell);
                key.extend_from_slice(&version.document_number.to_be_bytes());
                out.push(key);
            }
        }
    }
    let mut descend = |step: &str, child: &Value, path: &mut Vec<String>| {
        path.push(step.to_string());
        spatial_entries(container_number, policy, version, path, child, out);
        path.pop();
    };
    match value {
        Value::Array(elements) => {
            for element in elements {
                descend("[]", element, path);
            }
        }
        Value::Object(members) => {
            for (name, child) in members {
                if !(path.is_empty() && SYSTEM_PROPERTIES.contains(&name.as_str())) {
                    descend(name, child, path);
                }
            }
        }
        _ => {}
    }
}

/// The value at a path of property names (no array steps), if defined.
pub(crate) fn lookup<'a>(
    members: Option<&'a Map<String, Value>>,
    path: &[String],
) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut value = members?.get(first)?;
    for name in rest {
        value = value.as_object()?.get(name)?;
    }
    Some(value)
}

/// One entry per composite index whose paths name no array elements: the components' sort
/// keys in order, complemented where descending, then the document number, complemented when
/// the first component is descending (so ties come in `_rid` order in the first key's
/// direction when the index is walked forwards).
fn composite_entries(
    container_number: u64,
    policy: &IndexPolicy,
    version: &IndexedVersion<'_>,
    out: &mut Vec<Vec<u8>>,
) {
    let members = version.document.as_object();
    for (position, composite) in policy.composites().iter().enumerate() {
        if composite
            .paths
            .iter()
            .any(|(path, _)| path.iter().any(|name| name == "[]"))
        {
            continue;
        }
        let mut key = keys::index_composite_prefix(container_number, position as u16);
        for (path, descending) in &composite.paths {
            let start = key.len();
            let ts;
            // A component that is missing or leads to an array or object is undefined in the
            // composite, as the service documents.
            let value = if path.len() == 1 && path[0] == "_ts" {
                ts = Value::from(version.ts_secs);
                Some(&ts)
            } else {
                lookup(members, path).filter(|value| !value.is_array() && !value.is_object())
            };
            encode_sort_key(value, &mut key);
            if *descending {
                complement(&mut key[start..]);
            }
        }
        let mut document = version.document_number.to_be_bytes();
        if composite
            .paths
            .first()
            .is_some_and(|(_, descending)| *descending)
        {
            complement(&mut document);
        }
        key.extend_from_slice(&document);
        out.push(key);
    }
}

#[cfg(test)]
mod tests;
