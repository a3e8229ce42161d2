//! The search policies' checks, case by case with the service's messages as the official SDKs'
//! policy tests expect them.

use super::*;
use serde_json::json;

fn body(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("a test body is an object"),
    }
}

fn embeddings() -> Value {
    json!({"vectorEmbeddings": [
        {"path": "/vector1", "dataType": "float32", "dimensions": 256, "distanceFunction": "euclidean"},
        {"path": "/vector2", "dataType": "int8", "dimensions": 550, "distanceFunction": "dotproduct"},
    ]})
}

/// The message of checking a body with `embedding_policy` and these vector indexes.
fn vector_error(embedding_policy: Value, indexes: Value) -> Option<String> {
    let body = body(json!({"vectorEmbeddingPolicy": embedding_policy}));
    check_search_policies(&body, &json!({"vectorIndexes": indexes}))
        .err()
        .map(|error| error.to_string())
}

#[test]
fn valid_vector_policies_pass() {
    for data_type in ["float32", "float16", "int8", "uint8"] {
        let policy = json!({"vectorEmbeddings": [{"path": "/v", "dataType": data_type, "dimensions": 4096, "distanceFunction": "cosine"}]});
        assert_eq!(
            vector_error(policy, json!([{"path": "/v", "type": "diskANN"}])),
            None
        );
    }
    let indexes = json!([
        {"path": "/vector1", "type": "flat"},
        {"path": "/vector2", "type": "diskANN", "quantizerType": "product", "quantizationByteSize": 512,
         "indexingSearchListSize": 500, "vectorIndexShardKey": ["/country/city"]},
    ]);
    assert_eq!(vector_error(embeddings(), indexes), None);
}

#[test]
fn vector_indexes_are_refused_with_the_services_words() {
    let cases = [
        (json!(null), json!([{"path": "/vector1", "type": "flat"}]),
         "The Vector Indexing Policy's path::/vector1 not matching in Embedding's path."),
        (embeddings(), json!([{"path": "/vector3", "type": "flat"}]), "vector3 not matching in Embedding's path"),
        (embeddings(), json!([{"path": "/vector1", "type": "notFlat"}]), "Index Type::notFlat is invalid"),
        (embeddings(), json!([{"path": "/vector1", "type": "quantizedFlat", "quantizationByteSize": 0}]),
         "The Vector Indexing Policy parameter QuantizationByteSize value :: 0 is out of range. The allowed range is between 1 and 256."),
        (embeddings(), json!([{"path": "/vector2", "type": "quantizedFlat", "quantizationByteSize": 513}]),
         "The Vector Indexing Policy parameter QuantizationByteSize value :: 513 is out of range."),
        (embeddings(), json!([{"path": "/vector1", "type": "diskANN", "indexingSearchListSize": 5}]),
         "IndexingSearchListSize value :: 5 is out of range. The allowed range is between 25 and 500."),
        (embeddings(), json!([{"path": "/vector2", "type": "diskANN", "vectorIndexShardKey": ["country"]}]),
         "The Vector Indexing Policy has an invalid Shard Path: country."),
        (embeddings(), json!([{"path": "/vector2", "type": "diskANN", "vectorIndexShardKey": ["/a", "/b", "/c"]}]),
         "The number of shard paths defined in the Vector Indexing Policy: 3 exceeds the maximum: 1."),
        (embeddings(), json!([{"path": "/vector2", "type": "diskANN", "vectorIndexShardKey": "/country"}]),
         "One of the specified inputs is invalid"),
    ];
    for (policy, indexes, expected) in cases {
        let message = vector_error(policy, indexes.clone()).unwrap_or_default();
        assert!(
            message.contains(expected),
            "{indexes}: {message:?} lacks {expected:?}"
        );
    }
}

#[test]
fn embeddings_are_refused_with_the_services_words() {
    let cases = [
        (json!({"dataType": "float33"}), "Vector Embedding Policy has an invalid DataType"),
        (json!({"dimensions": 8000}), "Vector Embedding Policy has Dimensions:8000 which is more than the maximum supported value"),
        (json!({"dimensions": -1}), "The Vector Embedding Policy has Dimensions:-1"),
        (json!({"distanceFunction": "handMeasured"}), "The Vector Embedding Policy has an invalid DistanceFunction:handMeasured"),
        (json!({"path": "vector1"}), "invalid Path:vector1"),
    ];
    for (change, expected) in cases {
        let mut embedding = json!({"path": "/vector1", "dataType": "float32", "dimensions": 256, "distanceFunction": "euclidean"});
        for (name, value) in change.as_object().into_iter().flatten() {
            embedding[name] = value.clone();
        }
        let message =
            vector_error(json!({"vectorEmbeddings": [embedding]}), json!([])).unwrap_or_default();
        assert!(
            message.contains(expected),
            "{change}: {message:?} lacks {expected:?}"
        );
    }
}

#[test]
fn full_text_policies_check_paths_languages_and_indexes() {
    let check = |policy: Value, indexes: Value| {
        let body = body(json!({"fullTextPolicy": policy}));
        check_search_policies(&body, &json!({"fullTextIndexes": indexes}))
            .err()
            .map(|error| error.to_string())
    };
    let good = json!({"defaultLanguage": "en-US", "fullTextPaths": [{"path": "/abstract", "language": "en-US"}]});
    assert_eq!(check(good.clone(), json!([{"path": "/abstract"}])), None);
    assert_eq!(check(json!({"defaultLanguage": "fr-FR"}), json!([])), None);
    let wrong_path = json!({"defaultLanguage": "en-US", "fullTextPaths": [{"path": "abstract"}]});
    let message = check(wrong_path, json!([]))
        .unwrap_or_default()
        .to_lowercase();
    assert!(
        message.contains("the full text policy contains an invalid path: abstract"),
        "{message}"
    );
    assert!(check(json!({"defaultLanguage": "spa-SPA"}), json!([])).is_some());
    // `1033`, en-US's Windows locale number, is taken as a path's language; other numbers are not.
    let numbered =
        json!({"defaultLanguage": "en-US", "fullTextPaths": [{"path": "/a", "language": "1033"}]});
    assert_eq!(check(numbered, json!([])), None);
    assert!(check(json!({"defaultLanguage": "1036"}), json!([])).is_some());
    let path_language = json!({"defaultLanguage": "en-US", "fullTextPaths": [{"path": "/a", "language": "spa-SPA"}]});
    assert!(check(path_language, json!([])).is_some());
    for indexes in [
        json!([{"path": "/path"}]),
        json!([{"path": "abstract"}]),
        json!([{"not_path": "abstract"}]),
    ] {
        assert!(check(good.clone(), indexes.clone()).is_some(), "{indexes}");
    }
}

#[test]
fn spatial_indexes_name_a_property_and_known_types() {
    let check =
        |indexes: Value| check_search_policies(&Map::new(), &json!({"spatialIndexes": indexes}));
    assert!(check(json!([{"path": "/location/*", "types": ["Point", "Polygon", "MultiPolygon", "LineString"]}])).is_ok());
    assert!(check(json!([{"path": "/location/*", "types": ["Circle"]}])).is_err());
    assert!(check(json!([{"path": "location", "types": ["Point"]}])).is_err());
}

#[test]
fn a_replace_keeps_every_embedding_and_vector_index_and_may_add() {
    let resource = |embeddings: Value, indexes: Value| json!({"vectorEmbeddingPolicy": {"vectorEmbeddings": embeddings}, "indexingPolicy": {"vectorIndexes": indexes}});
    let one =
        json!({"path": "/v", "dataType": "float32", "dimensions": 3, "distanceFunction": "cosine"});
    let two =
        json!({"path": "/w", "dataType": "float32", "dimensions": 3, "distanceFunction": "cosine"});
    let flat = json!({"path": "/v", "type": "flat"});
    let existing = resource(json!([one.clone()]), json!([flat.clone()]));
    assert!(check_replace_keeps_vectors(&existing, &existing).is_ok());
    let added = resource(
        json!([one.clone(), two]),
        json!([flat.clone(), {"path": "/w", "type": "flat"}]),
    );
    assert!(check_replace_keeps_vectors(&existing, &added).is_ok());
    let wider =
        json!({"path": "/v", "dataType": "float32", "dimensions": 4, "distanceFunction": "cosine"});
    let changed = check_replace_keeps_vectors(&existing, &resource(json!([wider]), json!([flat])));
    let message = changed
        .err()
        .map(|error| error.to_string())
        .unwrap_or_default();
    assert!(message
        .contains("Paths in existing embedding policy cannot be modified in Collection Replace"));
    let requantized = resource(
        json!([one]),
        json!([{"path": "/v", "type": "quantizedFlat"}]),
    );
    let message = check_replace_keeps_vectors(&existing, &requantized)
        .err()
        .map(|error| error.to_string())
        .unwrap_or_default();
    assert!(message.contains(
        "Paths in existing vector indexing policy cannot be modified in Collection Replace"
    ));
}
