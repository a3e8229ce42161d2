//! Request bodies in the Cosmos binary JSON encoding, as the Rust SDK sends item bodies: decoded
//! once before anything reads the body, so creates, upserts, replaces, queries and batches all
//! take them, and a malformed one is a 400 naming the byte offset with nothing written.

use super::*;

/// A small encoder for the tests' own bodies, in the verbose forms the SDK's encoder uses
/// (64-bit integers, doubles, length-prefixed strings, containers with a 4-byte length).
fn encode(value: &Value) -> Vec<u8> {
    fn write(value: &Value, out: &mut Vec<u8>) {
        match value {
            Value::Null => out.push(0xD0),
            Value::Bool(flag) => out.push(if *flag { 0xD2 } else { 0xD1 }),
            Value::Number(number) => {
                if let Some(integer) = number.as_i64() {
                    out.push(0xCB);
                    out.extend_from_slice(&integer.to_le_bytes());
                } else {
                    out.push(0xCC);
                    let double = number.as_f64().expect("f64");
                    out.extend_from_slice(&double.to_le_bytes());
                }
            }
            Value::String(text) => write_string(text, out),
            Value::Array(items) => {
                let mut payload = Vec::new();
                items.iter().for_each(|item| write(item, &mut payload));
                frame(0xE4, &payload, out);
            }
            Value::Object(members) => {
                let mut payload = Vec::new();
                for (name, member) in members {
                    write_string(name, &mut payload);
                    write(member, &mut payload);
                }
                frame(0xEC, &payload, out);
            }
        }
    }
    fn write_string(text: &str, out: &mut Vec<u8>) {
        out.push(0xC2);
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
    }
    fn frame(marker: u8, payload: &[u8], out: &mut Vec<u8>) {
        out.push(marker);
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(payload);
    }
    let mut out = vec![0x80];
    write(value, &mut out);
    out
}

/// The body the Rust SDK's encoder wrote for a typed item, and the text it stands for.
fn sdk_order() -> (Vec<u8>, String) {
    let fixtures: Value =
        serde_json::from_str(include_str!("../binary_json/fixtures/sdk_encoded.json"))
            .expect("fixtures");
    let order = &fixtures[0];
    assert_eq!(order["name"], "typed_order");
    let binary = order["binary"]
        .as_str()
        .expect("hex")
        .split_whitespace()
        .map(|byte| u8::from_str_radix(byte, 16).expect("hex"))
        .collect();
    (binary, order["text"].as_str().expect("text").to_string())
}

const DOCS: (&str, &str) = ("docs", "dbs/db/colls/c");

#[tokio::test]
async fn an_sdk_encoded_item_is_stored_as_its_text_with_members_in_order() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let (binary, text) = sdk_order();
    let pk = r#"["customer-42"]"#;
    let created = server
        .send_bytes(
            "POST",
            "/dbs/db/colls/c/docs",
            DOCS,
            Some(binary),
            &[
                ("x-ms-documentdb-partitionkey", pk),
                (
                    "x-ms-cosmos-supported-serialization-formats",
                    "CosmosBinary",
                ),
            ],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    // Answered in text, which the SDKs accept.
    assert_eq!(created.header("content-type"), "application/json");
    let read = server.read_item("order-1", "customer-42").await;
    assert_eq!(read.status, StatusCode::OK);
    let stored = String::from_utf8(read.bytes.to_vec()).expect("utf-8");
    let body = text.strip_suffix('}').expect("object");
    assert!(
        stored.starts_with(body) && stored[body.len()..].starts_with(",\"_rid\""),
        "stored {stored}\nsent {text}"
    );
}

#[tokio::test]
async fn upserts_and_replaces_take_binary_bodies() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let upsert = encode(&json!({"id": "u", "pk": "p", "n": 1, "half": 0.5}));
    let pk = r#"["p"]"#;
    let headers = [
        ("x-ms-documentdb-partitionkey", pk),
        ("x-ms-documentdb-is-upsert", "True"),
    ];
    for expected in [StatusCode::CREATED, StatusCode::OK] {
        let answer = server
            .send_bytes(
                "POST",
                "/dbs/db/colls/c/docs",
                DOCS,
                Some(upsert.clone()),
                &headers,
            )
            .await;
        assert_eq!(answer.status, expected, "{}", answer.body);
        assert_eq!(answer.body["half"], json!(0.5));
    }
    let replacement = encode(&json!({"id": "u", "pk": "p", "n": 2, "tags": ["a", null, true]}));
    let replaced = server
        .send_bytes(
            "PUT",
            "/dbs/db/colls/c/docs/u",
            ("docs", "dbs/db/colls/c/docs/u"),
            Some(replacement),
            &[("x-ms-documentdb-partitionkey", pk)],
        )
        .await;
    assert_eq!(replaced.status, StatusCode::OK, "{}", replaced.body);
    let read = server.read_item("u", "p").await;
    assert_eq!(read.body["n"], json!(2));
    assert_eq!(read.body["tags"], json!(["a", null, true]));
    assert!(read.body.get("half").is_none());
}

#[tokio::test]
async fn a_malformed_binary_body_is_a_400_naming_the_offset_and_writes_nothing() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let mut body = encode(&json!({"id": "m", "pk": "p"}));
    // Cut inside the last string: the object's length now runs past the end.
    body.truncate(body.len() - 1);
    let answer = server
        .send_bytes(
            "POST",
            "/dbs/db/colls/c/docs",
            DOCS,
            Some(body),
            &[("x-ms-documentdb-partitionkey", r#"["p"]"#)],
        )
        .await;
    check_error(
        &answer,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "invalid Cosmos binary JSON: the buffer ends inside a value at byte offset 6",
    );
    assert_eq!(answer.header("x-ms-substatus"), "0");
    let answer = server
        .send_bytes(
            "POST",
            "/dbs/db/colls/c/docs",
            DOCS,
            Some(vec![0x80, 0xEA, 0x02, 0x01, 0x01]),
            &[("x-ms-documentdb-partitionkey", r#"["p"]"#)],
        )
        .await;
    check_error(
        &answer,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "an object member's name is not a string at byte offset 3",
    );
    assert_eq!(
        server.read_item("m", "p").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_binary_body_that_expands_past_the_text_limit_is_a_413() {
    let server = Server::new();
    server.setup(partitioned()).await;
    // 200 arrays of 65,535 one-byte numbers each: a few bytes that would decode to 13 MB of text.
    let body = vec![0x80, 0xF3, 0xF1, 0xD7, 0xFF, 0xFF, 0xC8, 0x00];
    let answer = server
        .send_bytes(
            "POST",
            "/dbs/db/colls/c/docs",
            DOCS,
            Some(body),
            &[("x-ms-documentdb-partitionkey", r#"["p"]"#)],
        )
        .await;
    check_error(
        &answer,
        StatusCode::PAYLOAD_TOO_LARGE,
        "RequestEntityTooLarge",
        "Request size is too large",
    );
}

#[tokio::test]
async fn queries_and_batches_take_binary_bodies_too() {
    let server = Server::new();
    server.setup(partitioned()).await;
    for n in 1..=3 {
        let created = server
            .create_item(json!({"id": format!("q{n}"), "pk": "p", "n": n}))
            .await;
        assert_eq!(created.status, StatusCode::CREATED);
    }
    let query = encode(&json!({
        "query": "SELECT VALUE c.id FROM c WHERE c.n >= @low",
        "parameters": [{"name": "@low", "value": 2}]
    }));
    let answer = server
        .send_bytes(
            "POST",
            "/dbs/db/colls/c/docs",
            DOCS,
            Some(query),
            &[
                ("content-type", "application/query+json"),
                ("x-ms-documentdb-isquery", "True"),
                ("x-ms-documentdb-partitionkey", r#"["p"]"#),
            ],
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(answer.body["Documents"], json!(["q2", "q3"]));
    let batch = encode(&json!([
        {"operationType": "Create", "resourceBody": {"id": "b1", "pk": "p"}},
        {"operationType": "Read", "id": "q1"}
    ]));
    let answer = server
        .send_bytes(
            "POST",
            "/dbs/db/colls/c/docs",
            DOCS,
            Some(batch),
            &[
                ("x-ms-cosmos-is-batch-request", "True"),
                ("x-ms-cosmos-batch-atomic", "True"),
                ("x-ms-documentdb-partitionkey", r#"["p"]"#),
            ],
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(answer.body[0]["statusCode"], json!(201));
    assert_eq!(answer.body[1]["resourceBody"]["n"], json!(1));
}
