//! Index metrics (`x-ms-cosmos-populateindexmetrics`): which indexes of the container's
//! indexing policy a query's filter and ORDER BY would use, and which it would need, in the
//! service's shape (`UtilizedSingleIndexes`, `PotentialSingleIndexes`, `UtilizedCompositeIndexes`,
//! `PotentialCompositeIndexes`).
//!
//! Derived from the conjuncts an index plan reads (`Prepared::index_conjuncts`: for
//! `ARRAY_CONTAINS(c.tags, …)` the index of `/tags/[]/?`, not `/tags/?`), the query's other
//! document paths, and the container's compiled policy (`index/policy.rs`). It describes the
//! plan the service would run: a page this engine chose to scan because the filter was not
//! selective enough reports the indexes the service would use all the same, as its charges
//! would. A filter a spatial index serves names it (`/loc/*`) instead of the path's range
//! index, and one a full-text index serves names that (`/text`, as its policy writes it). It
//! reads no items and changes no plan.

use crate::container::Container;
use crate::index::plan::accesses;
use crate::index::policy::IndexPolicy;
use lethedb_query::Prepared;
use serde_json::{json, Value};

/// The index utilization of a prepared query on `container`, as the service reports it.
pub(crate) fn report(prepared: &Prepared, container: &Container) -> Value {
    let (mut served, mut searched) = (Vec::new(), Vec::new());
    for access in accesses(container, &prepared.index_conjuncts()) {
        served.extend(access.paths);
        let spatial = access.spatial_paths.into_iter().map(|path| (path, "/*"));
        let full_text = access.full_text_paths.into_iter().map(|path| (path, ""));
        for searched_path in spatial.chain(full_text) {
            if !searched.contains(&searched_path) {
                searched.push(searched_path);
            }
        }
    }
    let mut filter_paths = prepared.filter_paths();
    filter_paths.retain(|path| !searched.iter().any(|(searched, _)| searched == path));
    let mut report = utilization(
        &served,
        &filter_paths,
        &prepared.order_paths(),
        &container.index_policy,
    );
    if let Some(Value::Array(utilized)) = report.get_mut("UtilizedSingleIndexes") {
        utilized.extend(
            searched
                .iter()
                .map(|(path, suffix)| search_entry(path, suffix)),
        );
    }
    report
}

/// A spatial or full-text index a filter is served by, named by its path as the policy writes
/// it (`/a/*` with `suffix` `/*` for a spatial index, `/a` for a full-text one). Its cells or
/// stems name candidates, not answers, so neither set is precise. The service's report of these
/// indexes is not documented: this shape is LetheDB's.
fn search_entry(path: &[String], suffix: &str) -> Value {
    json!({
        "FilterExpression": "",
        "IndexSpec": format!("{}{suffix}", spec(path)),
        "FilterPreciseSet": false,
        "IndexPreciseSet": false,
        "IndexImpactScore": "High",
    })
}

/// The report for a query whose index plan reads the indexes of `served` (indexed paths), whose
/// filter reads `filter_paths` and which sorts by `order_paths`, under `policy`. A filter path
/// whose elements (`path/[]`) are served stands for them and is not reported itself.
pub fn utilization(
    served: &[Vec<String>],
    filter_paths: &[Vec<String>],
    order_paths: &[Option<(Vec<String>, bool)>],
    policy: &IndexPolicy,
) -> Value {
    let mut singles: Vec<&[String]> = served.iter().map(Vec::as_slice).collect();
    for path in filter_paths {
        let elements_served = served
            .iter()
            .any(|index| index.len() > path.len() && index.starts_with(path));
        if !elements_served && !singles.contains(&path.as_slice()) {
            singles.push(path);
        }
    }
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
        if policy.coverage(path).is_indexed() {
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
        let keys: Vec<(Vec<String>, bool)> = sorted
            .iter()
            .map(|(path, descending)| (path.to_vec(), *descending))
            .collect();
        if policy.composite_for(&keys).is_some() {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> Vec<String> {
        text.split('/').map(str::to_string).collect()
    }

    #[test]
    fn filters_and_sorts_report_utilized_and_potential_indexes() {
        let policy = IndexPolicy::compile(
            &json!({"includedPaths": [{"path": "/*"}], "excludedPaths": [{"path": "/skip/?"}],
            "compositeIndexes": [[{"path": "/a", "order": "ascending"}, {"path": "/b"}]]}),
        );
        let report = utilization(&[path("name")], &[path("name"), path("skip")], &[], &policy);
        assert_eq!(report["UtilizedSingleIndexes"][0]["IndexSpec"], "/name/?");
        assert_eq!(report["PotentialSingleIndexes"][0]["IndexSpec"], "/skip/?");
        assert_eq!(report["UtilizedCompositeIndexes"], json!([]));
        let sorted = utilization(
            &[],
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

    #[test]
    fn served_array_elements_stand_for_their_array() {
        let policy = IndexPolicy::compile(&json!({"includedPaths": [{"path": "/*"}]}));
        let report = utilization(&[path("tags/[]")], &[path("tags"), path("n")], &[], &policy);
        assert_eq!(
            report["UtilizedSingleIndexes"],
            json!([
                {"FilterExpression": "", "IndexSpec": "/tags/[]/?", "FilterPreciseSet": true,
                 "IndexPreciseSet": true, "IndexImpactScore": "High"},
                {"FilterExpression": "", "IndexSpec": "/n/?", "FilterPreciseSet": true,
                 "IndexPreciseSet": true, "IndexImpactScore": "High"},
            ])
        );
    }
}
