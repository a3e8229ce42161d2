//! The entries of a version under a few policies: what is indexed, what is not, undefined
//! entries for explicit paths, array elements, composites and their directions.

use super::*;
use serde_json::json;

fn policy(value: Value) -> IndexPolicy {
    IndexPolicy::compile(&value)
}

fn entries_of(policy: &IndexPolicy, document: Value) -> Vec<Vec<u8>> {
    let version = IndexedVersion {
        document: &document,
        ts_secs: 1_700_000_000,
        document_number: 7,
    };
    entries(3, policy, &version)
}

fn path_entry(path: &[&str], value: Option<Value>) -> Vec<u8> {
    let path: Vec<String> = path.iter().map(ToString::to_string).collect();
    let mut key = keys::index_path_prefix(3, &path);
    encode_sort_key(value.as_ref(), &mut key);
    key.extend_from_slice(&7u64.to_be_bytes());
    key
}

#[test]
fn the_default_policy_indexes_every_value_and_its_containers() {
    let default = policy(json!({"includedPaths": [{"path": "/*"}],
        "excludedPaths": [{"path": "/\"_etag\"/?"}]}));
    let found = entries_of(
        &default,
        json!({"id": "a", "n": 1, "tags": ["x", "y", "x"], "o": {"k": null}}),
    );
    let mut expected = vec![
        path_entry(&["id"], Some(json!("a"))),
        path_entry(&["n"], Some(json!(1))),
        path_entry(&["tags"], Some(json!(["x", "y", "x"]))),
        path_entry(&["tags", "[]"], Some(json!("x"))),
        path_entry(&["tags", "[]"], Some(json!("y"))),
        path_entry(&["o"], Some(json!({"k": null}))),
        path_entry(&["o", "k"], Some(json!(null))),
        path_entry(&["_ts"], Some(json!(1_700_000_000))),
    ];
    expected.sort();
    assert_eq!(found, expected);
}

#[test]
fn excluded_paths_have_no_entries_and_explicit_ones_record_undefined() {
    let narrow = policy(
        json!({"includedPaths": [{"path": "/kept/?"}, {"path": "/gone/?"}],
        "excludedPaths": [{"path": "/*"}]}),
    );
    let found = entries_of(&narrow, json!({"id": "a", "kept": 2, "other": 3}));
    let mut expected = vec![
        path_entry(&["id"], Some(json!("a"))),
        path_entry(&["kept"], Some(json!(2))),
        path_entry(&["gone"], None),
        path_entry(&["_ts"], Some(json!(1_700_000_000))),
    ];
    expected.sort();
    assert_eq!(found, expected);
    let none = policy(json!({"indexingMode": "none", "excludedPaths": [{"path": "/*"}]}));
    assert!(entries_of(&none, json!({"id": "a", "kept": 2})).is_empty());
}

#[test]
fn composite_entries_sort_by_components_in_their_directions() {
    let with_composite = policy(json!({"includedPaths": [{"path": "/*"}],
        "compositeIndexes": [[{"path": "/a", "order": "descending"}, {"path": "/b"}]]}));
    let composite_of = |document: Value| -> Vec<u8> {
        entries_of(&with_composite, document)
            .into_iter()
            .find(|key| key[8] == keys::INDEX_KIND_COMPOSITE)
            .expect("a composite entry")
    };
    let high = composite_of(json!({"id": "1", "a": 5, "b": "x"}));
    let low = composite_of(json!({"id": "2", "a": 1, "b": "x"}));
    let missing = composite_of(json!({"id": "3", "b": "x"}));
    // Descending on `a`: 5 before 1 before undefined (undefined sorts lowest ascending).
    assert!(high < low && low < missing);
    let first_b = composite_of(json!({"id": "4", "a": 1, "b": "a"}));
    assert!(first_b < low);
}

#[test]
fn geometries_under_a_spatial_path_have_one_entry_per_cell() {
    let spatial = policy(json!({"includedPaths": [{"path": "/*"}],
        "spatialIndexes": [{"path": "/loc/*", "types": ["Point"]}, {"path": "/home/?"}]}));
    let spatial_keys = |found: &[Vec<u8>]| -> Vec<Vec<u8>> {
        found
            .iter()
            .filter(|key| key[8] == keys::INDEX_KIND_SPATIAL)
            .cloned()
            .collect()
    };
    let cell_entries = |path: &[&str], geometry: &Value| -> Vec<Vec<u8>> {
        let path: Vec<String> = path.iter().map(ToString::to_string).collect();
        let cells = lethedb_query::spatial_cells(geometry).expect("a geometry");
        cells
            .iter()
            .map(|cell| {
                let mut key = keys::index_spatial_prefix(3, &path);
                key.extend_from_slice(cell);
                key.extend_from_slice(&7u64.to_be_bytes());
                key
            })
            .collect()
    };
    let point = json!({"type": "Point", "coordinates": [179.9, -16.5]});
    let square = json!({"type": "Polygon",
        "coordinates": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]]});
    let found = entries_of(
        &spatial,
        json!({"id": "a", "loc": point, "home": square,
            "other": point, "broken": {"loc": 1},
            "nested": {"x": 1}}),
    );
    let mut expected = cell_entries(&["loc"], &point);
    expected.extend(cell_entries(&["home"], &square));
    expected.sort();
    assert_eq!(spatial_keys(&found), expected);
    assert!(expected.len() > 1 && expected.len() <= 9);
    // Below a `/*` path every geometry is indexed at its own path, array elements included;
    // below a `/?` path nothing is; a value that is no geometry has no entry.
    let deeper = entries_of(
        &spatial,
        json!({"loc": {"a": point, "list": [point, {"type": "Point"}]},
            "home": {"a": point}}),
    );
    let mut expected = cell_entries(&["loc", "a"], &point);
    expected.extend(cell_entries(&["loc", "list", "[]"], &point));
    expected.sort();
    assert_eq!(spatial_keys(&deeper), expected);
    // Mode none indexes nothing, spatial entries included.
    let none = policy(json!({"indexingMode": "none",
        "spatialIndexes": [{"path": "/loc/*", "types": ["Point"]}]}));
    assert!(entries_of(&none, json!({"loc": point})).is_empty());
}

#[test]
fn texts_under_a_full_text_path_have_one_entry_per_distinct_stem_in_its_language() {
    let full_text = |language: &str| {
        policy(json!({"excludedPaths": [{"path": "/*"}],
            "fullTextIndexes": [{"path": "/t", "language": language}, {"path": "/o/u"}]}))
    };
    let stem_entry = |path: &[&str], stem: &str| {
        let path: Vec<String> = path.iter().map(ToString::to_string).collect();
        let mut key = keys::index_full_text_prefix(3, &path);
        key.extend_from_slice(&full_text_stem_key(stem));
        key.extend_from_slice(&7u64.to_be_bytes());
        key
    };
    let impact_entry = |path: &[&str], stem: &str, count: u32, words: u32| {
        let path: Vec<String> = path.iter().map(ToString::to_string).collect();
        let mut key = keys::index_full_text_impact_prefix(3, &path);
        key.extend_from_slice(&full_text_stem_key(stem));
        key.extend_from_slice(&(!count).to_be_bytes());
        key.extend_from_slice(&words.to_be_bytes());
        key.extend_from_slice(&(!7u64).to_be_bytes());
        key
    };
    let length_entry = |path: &[&str], words: u32| {
        let path: Vec<String> = path.iter().map(ToString::to_string).collect();
        let mut key = keys::index_full_text_length_prefix(3, &path);
        key.extend_from_slice(&7u64.to_be_bytes());
        key.extend_from_slice(&words.to_be_bytes());
        key
    };
    let document = json!({"id": "a", "t": "Maisons, maison!", "o": {"u": "Running runs"}});
    let mut expected = vec![
        path_entry(&["id"], Some(json!("a"))),
        path_entry(&["_ts"], Some(json!(1_700_000_000))),
        stem_entry(&["t"], "maison"),
        impact_entry(&["t"], "maison", 2, 2),
        length_entry(&["t"], 2),
        stem_entry(&["o", "u"], "run"),
        impact_entry(&["o", "u"], "run", 2, 2),
        length_entry(&["o", "u"], 2),
    ];
    expected.sort();
    assert_eq!(entries_of(&full_text("fr-FR"), document.clone()), expected);
    // In Spanish "maisons" keeps its s: two stems, each once in the text's two words.
    let spanish = entries_of(&full_text("es-ES"), document);
    assert!(spanish.contains(&stem_entry(&["t"], "maisons")));
    assert!(spanish.contains(&impact_entry(&["t"], "maisons", 1, 2)));
    assert!(spanish.contains(&impact_entry(&["t"], "maison", 1, 2)));
    assert_eq!(spanish.len(), expected.len() + 2);
    // A value that is no string has none, nor has any text under mode none.
    let number = json!({"id": "a", "t": 5, "o": {"u": ["run"]}});
    assert_eq!(entries_of(&full_text("fr-FR"), number).len(), 2);
    let none = policy(json!({"indexingMode": "none", "fullTextIndexes": [{"path": "/t"}]}));
    assert!(entries_of(&none, json!({"id": "a", "t": "run"})).is_empty());
}
