//! Feed and batch bodies are built from the items' stored JSON text: the documents in them are
//! the documents a single read returns, byte for byte, inside the same envelopes as before.

use super::*;

/// Items whose JSON text a parse and re-serialisation could disturb: nesting, escapes,
/// non-ASCII text, numbers of every kind, and members in no particular order.
fn awkward_items() -> Vec<Value> {
    vec![
        json!({"id": "a", "pk": "p", "z": 1, "a": {"nested": [1, 2.5, -0.125, {"deep": null}]}}),
        json!({"id": "b", "pk": "p", "text": "quote \" backslash \\ tab \t line\n é 漢字 😀"}),
        json!({"id": "c", "pk": "p", "big": 9_007_199_254_740_993_i64, "small": 1e-7, "float": 0.1}),
        json!({"id": "d", "pk": "p", "empty": {}, "list": [], "flag": false}),
    ]
}

/// The JSON text a single read returns for `id`.
async fn read_text(server: &Server, id: &str) -> String {
    let read = server.read_item(id, "p").await;
    assert_eq!(read.status, StatusCode::OK);
    String::from_utf8(read.bytes.to_vec()).expect("utf-8")
}

#[tokio::test]
async fn read_feed_documents_are_the_stored_documents() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let items = awkward_items();
    for item in &items {
        assert_eq!(
            server.create_item(item.clone()).await.status,
            StatusCode::CREATED
        );
    }
    let page = server
        .send(
            "GET",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            None,
            &[],
        )
        .await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.header("content-type"), "application/json");
    assert_eq!(page.header("x-ms-item-count"), "4");
    let text = String::from_utf8(page.bytes.to_vec()).expect("utf-8");
    let rid = page.body["_rid"].as_str().expect("rid").to_string();
    assert!(!rid.is_empty());
    let mut expected = Vec::new();
    for item in &items {
        let id = item["id"].as_str().expect("id");
        let single = read_text(&server, id).await;
        assert!(
            text.contains(&single),
            "the feed carries {id} as a read returns it:\n{single}\nin\n{text}"
        );
        let document: Value = serde_json::from_str(&single).expect("json");
        for (name, value) in item.as_object().expect("object") {
            assert_eq!(&document[name], value, "{id}.{name}");
        }
        expected.push(document);
    }
    assert_eq!(
        page.body,
        json!({"_rid": rid, "Documents": expected, "_count": 4})
    );
    // The envelope's members come in the service's order.
    assert!(text.starts_with(&format!("{{\"_rid\":\"{rid}\",\"Documents\":[{{")));
    assert!(text.ends_with("}],\"_count\":4}"), "{text}");
}

#[tokio::test]
async fn batch_results_carry_the_stored_documents() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let items = awkward_items();
    server.create_item(items[0].clone()).await;
    let batch = |operations: Value, extra: &'static [(&'static str, &'static str)]| {
        let server = &server;
        async move {
            let mut headers = vec![
                ("x-ms-cosmos-is-batch-request", "True"),
                ("x-ms-documentdb-partitionkey", "[\"p\"]"),
            ];
            headers.extend_from_slice(extra);
            server
                .send(
                    "POST",
                    "/dbs/db/colls/c/docs",
                    ("docs", "dbs/db/colls/c"),
                    Some(operations),
                    &headers,
                )
                .await
        }
    };
    let done = batch(
        json!([
            {"operationType": "Create", "resourceBody": items[1]},
            {"operationType": "Upsert", "resourceBody": items[2]},
            {"operationType": "Read", "id": "a"},
        ]),
        &[],
    )
    .await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.body);
    assert_eq!(done.header("content-type"), "application/json");
    let text = String::from_utf8(done.bytes.to_vec()).expect("utf-8");
    let results = done.body.as_array().expect("results").clone();
    assert_eq!(results.len(), 3);
    for (result, (id, status)) in results.iter().zip([("b", 201), ("c", 201), ("a", 200)]) {
        let single = read_text(&server, id).await;
        assert!(
            text.contains(&format!("\"resourceBody\":{single}")),
            "{id} as a read returns it:\n{single}\nin\n{text}"
        );
        let document: Value = serde_json::from_str(&single).expect("json");
        let members: Vec<&String> = result.as_object().expect("object").keys().collect();
        assert_eq!(
            members,
            ["statusCode", "requestCharge", "eTag", "resourceBody"],
            "{id}"
        );
        assert_eq!(result["statusCode"], json!(status), "{id}");
        assert!(result["requestCharge"].as_f64().expect("charge") > 0.0);
        assert_eq!(result["eTag"], document["_etag"], "{id}");
        assert_eq!(result["resourceBody"], document, "{id}");
    }
    let minimal = batch(
        json!([{"operationType": "Read", "id": "b"}]),
        &[("prefer", "return=minimal")],
    )
    .await;
    assert_eq!(minimal.status, StatusCode::OK);
    let entry = &minimal.body[0];
    assert_eq!(
        entry
            .as_object()
            .expect("object")
            .keys()
            .collect::<Vec<_>>(),
        ["statusCode", "requestCharge", "eTag"]
    );
    let failed = batch(
        json!([
            {"operationType": "Create", "resourceBody": items[3]},
            {"operationType": "Create", "resourceBody": items[1]},
        ]),
        &[],
    )
    .await;
    assert_eq!(failed.status, StatusCode::MULTI_STATUS, "{}", failed.body);
    let statuses: Vec<&Value> = failed
        .body
        .as_array()
        .expect("results")
        .iter()
        .map(|result| &result["statusCode"])
        .collect();
    assert_eq!(statuses, [&json!(424), &json!(409)]);
    for result in failed.body.as_array().expect("results") {
        assert_eq!(result["subStatusCode"], json!(0), "{result}");
        assert!(result.get("resourceBody").is_none(), "{result}");
    }
    check_error(
        &server.read_item("d", "p").await,
        StatusCode::NOT_FOUND,
        "NotFound",
        "",
    );
}
