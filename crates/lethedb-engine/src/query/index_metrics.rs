//! Index metrics (`x-ms-cosmos-populateindexmetrics`): which indexes of the container's
//! indexing policy a query's filter and ORDER BY would use, and which it would need, in the
//! service's shape (`UtilizedSingleIndexes`, `PotentialSingleIndexes`, `UtilizedCompositeIndexes`,
//! `PotentialCompositeIndexes`).
//!
//! Derived from the query's document paths and the policy's included, excluded and composite
//! paths, the more precise path winning as in the service. LetheDB scans rather than reading
//! indexes, so this says what the policy covers; it reads no items and changes no plan.

use crate::container::Container;
use lethedb_query::Prepared;
use serde_json::{json, Value};

/// The index utilization of a prepared query on `container`, as the service reports it.
pub(crate) fn report(prepared: &Prepared, container: &Container) -> Value {
    let policy = container
        .resource
        .get("indexingPolicy")
        .cloned()
        .unwrap_or(Value::Null);
    utilization(&prepared.filter_paths(), &prepared.order_paths(), &policy)
}

/// The report for a query reading `filter_paths` and sorting by `order_paths` under `policy`.
pub fn utilization(
    filter_paths: &[Vec<String>],
    order_paths: &[Option<(Vec<String>, bool)>],
    policy: &Value,
) -> Value {
    let mut singles: Vec<&[String]> = filter_paths.iter().map(Vec::as_slice).collect();
    let sorted: Vec<(&[String], bool)> = order_paths
        .iter()
        .flatten()
        .map(|(path, descending)| (path.as_slice(), *descending))
        .collect();
    if let [(only, _)] = sorted.as_slice() {
        if !singles.contains(only) {
            singles.push(only);
        }
    }
    let (mut utilized, mut potential) = (Vec::new(), Vec::new());
    for path in singles {
        let entry = json!({
            "FilterExpression": "",
            "IndexSpec": format!("{}/?", spec(path)),
            "FilterPreciseSet": true,
            "IndexPreciseSet": true,
            "IndexImpactScore": "High",
        });
        if is_indexed(policy, path) {
            utilized.push(entry);
        } else {
            potential.push(entry);
        }
    }
    let (mut composite_utilized, mut composite_potential) = (Vec::new(), Vec::new());
    if sorted.len() > 1 && sorted.len() == order_paths.len() {
        let specs: Vec<String> = sorted
            .iter()
            .map(|(path, descending)| {
                format!(
                    "{} {}",
                    spec(path),
                    if *descending { "DESC" } else { "ASC" }
                )
            })
            .collect();
        let entry = json!({"IndexSpecs": specs, "IndexImpactScore": "High"});
        if has_composite(policy, &sorted) {
            composite_utilized.push(entry);
        } else {
            composite_potential.push(entry);
        }
    }
    json!({
        "UtilizedSingleIndexes": utilized,
        "PotentialSingleIndexes": potential,
        "UtilizedCompositeIndexes": composite_utilized,
        "PotentialCompositeIndexes": composite_potential,
    })
}

/// `/a/b` for the path `[a, b]`.
fn spec(path: &[String]) -> String {
    path.iter().map(|name| format!("/{name}")).collect()
}

/// A policy path's segments without quotes, and whether it ends in `/*` (everything under) or
/// `/?` (the value itself).
fn pattern(text: &str) -> (Vec<String>, bool) {
    let mut segments: Vec<String> = text
        .split('/')
        .filter(|segment| !segment.is_empty())
        .map(|segment| segment.trim_matches('"').to_string())
        .collect();
    let subtree = segments.last().is_some_and(|last| last == "*");
    if matches!(segments.last().map(String::as_str), Some("*" | "?")) {
        segments.pop();
    }
    (segments, subtree)
}

/// How precisely `pattern_text` covers `path`: `None` when it does not, else a rank where a
/// longer pattern, and at equal length one naming the value itself, is more precise.
fn precision(pattern_text: &str, path: &[String]) -> Option<usize> {
    let (segments, subtree) = pattern(pattern_text);
    let matches = |pattern: &String, name: &String| pattern == "[]" || pattern == name;
    let covered = if subtree {
        segments.len() <= path.len() && segments.iter().zip(path).all(|(p, n)| matches(p, n))
    } else {
        segments.len() == path.len() && segments.iter().zip(path).all(|(p, n)| matches(p, n))
    };
    covered.then_some(segments.len() * 2 + usize::from(!subtree))
}

fn most_precise(policy: &Value, list: &str, path: &[String]) -> Option<usize> {
    policy
        .get(list)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.get("path").and_then(Value::as_str))
        .filter_map(|text| precision(text, path))
        .max()
}

/// Whether the policy indexes `path`: the most precise included path is more precise than
/// every excluded one that covers it; nothing is indexed with indexing mode `none`.
pub fn is_indexed(policy: &Value, path: &[String]) -> bool {
    if policy.get("indexingMode").and_then(Value::as_str) == Some("none") {
        return false;
    }
    match (
        most_precise(policy, "includedPaths", path),
        most_precise(policy, "excludedPaths", path),
    ) {
        (Some(included), Some(excluded)) => included > excluded,
        (Some(_), None) => true,
        _ => false,
    }
}

/// Whether a composite index of the policy lists exactly `paths` in order, each in its
/// direction.
fn has_composite(policy: &Value, paths: &[(&[String], bool)]) -> bool {
    let wanted: Vec<(String, bool)> = paths
        .iter()
        .map(|(path, descending)| (spec(path), *descending))
        .collect();
    policy
        .get("compositeIndexes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .any(|composite| {
            composite.len() == wanted.len()
                && composite
                    .iter()
                    .zip(&wanted)
                    .all(|(entry, (want, descending))| {
                        let path = entry.get("path").and_then(Value::as_str).unwrap_or("");
                        let order = entry
                            .get("order")
                            .and_then(Value::as_str)
                            .unwrap_or("ascending");
                        pattern(path).0 == pattern(want).0
                            && order.eq_ignore_ascii_case("descending") == *descending
                    })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> Vec<String> {
        text.split('/').map(str::to_string).collect()
    }

    #[test]
    fn the_more_precise_path_decides_what_is_indexed() {
        let default = json!({"indexingMode": "consistent", "includedPaths": [{"path": "/*"}], "excludedPaths": [{"path": "/\"_etag\"/?"}]});
        assert!(is_indexed(&default, &path("name")));
        assert!(is_indexed(&default, &path("a/b")));
        assert!(!is_indexed(&default, &path("_etag")));
        let narrow = json!({"includedPaths": [{"path": "/kept/?"}, {"path": "/tree/*"}], "excludedPaths": [{"path": "/*"}, {"path": "/tree/secret/?"}]});
        assert!(is_indexed(&narrow, &path("kept")));
        assert!(!is_indexed(&narrow, &path("kept/deeper")));
        assert!(is_indexed(&narrow, &path("tree/leaf")));
        assert!(!is_indexed(&narrow, &path("tree/secret")));
        assert!(!is_indexed(&narrow, &path("other")));
        let none =
            json!({"indexingMode": "none", "includedPaths": [], "excludedPaths": [{"path": "/*"}]});
        assert!(!is_indexed(&none, &path("name")));
    }

    #[test]
    fn filters_and_sorts_report_utilized_and_potential_indexes() {
        let policy = json!({"includedPaths": [{"path": "/*"}], "excludedPaths": [{"path": "/skip/?"}],
            "compositeIndexes": [[{"path": "/a", "order": "ascending"}, {"path": "/b"}]]});
        let report = utilization(&[path("name"), path("skip")], &[], &policy);
        assert_eq!(report["UtilizedSingleIndexes"][0]["IndexSpec"], "/name/?");
        assert_eq!(report["PotentialSingleIndexes"][0]["IndexSpec"], "/skip/?");
        assert_eq!(report["UtilizedCompositeIndexes"], json!([]));
        let sorted = utilization(
            &[],
            &[Some((path("a"), false)), Some((path("b"), false))],
            &policy,
        );
        assert_eq!(
            sorted["UtilizedCompositeIndexes"][0]["IndexSpecs"],
            json!(["/a ASC", "/b ASC"])
        );
        let missing = utilization(
            &[],
            &[Some((path("b"), false)), Some((path("a"), true))],
            &policy,
        );
        assert_eq!(missing["UtilizedCompositeIndexes"], json!([]));
        assert_eq!(
            missing["PotentialCompositeIndexes"][0]["IndexSpecs"],
            json!(["/b ASC", "/a DESC"])
        );
    }
}
