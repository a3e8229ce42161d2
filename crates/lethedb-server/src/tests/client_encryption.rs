//! Client encryption keys and policies over HTTP: a database's keys created (409 on a taken
//! id), read (404 when missing), rewrapped by a replace under `If-Match` (412 on a stale ETag),
//! listed and queried, never deleted on their own but dropped with their database; a
//! container's `clientEncryptionPolicy` checked when created (every key it names must exist),
//! returned as stored, and fixed for the container's life.

use super::*;

fn key_body(id: &str, wrapped: &str) -> Value {
    json!({
        "id": id,
        "encryptionAlgorithm": "AEAD_AES_256_CBC_HMAC_SHA256",
        "wrappedDataEncryptionKey": wrapped,
        "keyWrapMetadata": {
            "type": "AZURE_KEY_VAULT",
            "name": "kek",
            "value": "https://vault.example/keys/kek/1",
            "algorithm": "RSA-OAEP",
        },
    })
}

impl Server {
    async fn create_key(&self, body: Value) -> Answer {
        self.send(
            "POST",
            "/dbs/db/clientencryptionkeys",
            ("clientencryptionkeys", "dbs/db"),
            Some(body),
            &[],
        )
        .await
    }

    async fn read_key(&self, id: &str) -> Answer {
        self.send(
            "GET",
            &format!("/dbs/db/clientencryptionkeys/{id}"),
            (
                "clientencryptionkeys",
                &format!("dbs/db/clientencryptionkeys/{id}"),
            ),
            None,
            &[],
        )
        .await
    }
}

fn included(path: &str, key: &str, encryption_type: &str) -> Value {
    json!({
        "path": path,
        "clientEncryptionKeyId": key,
        "encryptionType": encryption_type,
        "encryptionAlgorithm": "AEAD_AES_256_CBC_HMAC_SHA256",
    })
}

#[tokio::test]
async fn keys_are_created_read_rewrapped_and_listed() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let created = server.create_key(key_body("key1", "AAECAw==")).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["wrappedDataEncryptionKey"], json!("AAECAw=="));
    assert_eq!(created.body["keyWrapMetadata"]["name"], json!("kek"));
    let rid = created.body["_rid"].as_str().expect("rid").to_string();
    assert_eq!(server.read_key("key1").await.body, created.body);
    let database = server
        .send("GET", "/dbs/db", ("dbs", "dbs/db"), None, &[])
        .await;
    let database_rid = database.body["_rid"].as_str().expect("rid").to_string();
    assert_eq!(
        created.body["_self"],
        json!(format!("dbs/{database_rid}/clientencryptionkeys/{rid}/"))
    );
    assert_eq!(
        created.header("etag"),
        created.body["_etag"].as_str().expect("etag")
    );
    // A read under If-None-Match of the current ETag is 304 (the JavaScript SDK's sign that a
    // key whose key-encryption key was revoked must be rewrapped); another ETag reads the key.
    let signed_key = ("clientencryptionkeys", "dbs/db/clientencryptionkeys/key1");
    let current = created.header("etag").to_string();
    let unchanged = server
        .send(
            "GET",
            "/dbs/db/clientencryptionkeys/key1",
            signed_key,
            None,
            &[("if-none-match", &current)],
        )
        .await;
    assert_eq!(unchanged.status, StatusCode::NOT_MODIFIED);
    assert_eq!(unchanged.header("etag"), current);
    assert!(unchanged.bytes.is_empty());
    let changed = server
        .send(
            "GET",
            "/dbs/db/clientencryptionkeys/key1",
            signed_key,
            None,
            &[("if-none-match", "\"other\"")],
        )
        .await;
    assert_eq!(changed.body, created.body);
    let again = server.create_key(key_body("key1", "BBBB")).await;
    check_error(&again, StatusCode::CONFLICT, "Conflict", "already exists");
    let missing = server.read_key("nothing").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);

    // A rewrap is a replace under the ETag the client read.
    // A catalog ETag is the resource's number and the write's millisecond.
    server.clock.advance_ms(1);
    let path = "/dbs/db/clientencryptionkeys/key1";
    let signed = ("clientencryptionkeys", "dbs/db/clientencryptionkeys/key1");
    let etag = created.body["_etag"].as_str().expect("etag").to_string();
    let rewrapped = server
        .send(
            "PUT",
            path,
            signed,
            Some(key_body("key1", "BAUGBw==")),
            &[("if-match", &etag)],
        )
        .await;
    assert_eq!(rewrapped.status, StatusCode::OK, "{}", rewrapped.body);
    assert_eq!(rewrapped.body["_rid"], json!(rid));
    assert_eq!(
        server.read_key("key1").await.body["wrappedDataEncryptionKey"],
        json!("BAUGBw==")
    );
    let stale = server
        .send(
            "PUT",
            path,
            signed,
            Some(key_body("key1", "CC==")),
            &[("if-match", &etag)],
        )
        .await;
    assert_eq!(stale.status, StatusCode::PRECONDITION_FAILED);
    let renamed = server
        .send("PUT", path, signed, Some(key_body("key2", "CC==")), &[])
        .await;
    assert_eq!(renamed.status, StatusCode::BAD_REQUEST);

    // No SDK deletes a key: the verb is not served.
    let deleted = server.send("DELETE", path, signed, None, &[]).await;
    assert_eq!(deleted.status, StatusCode::METHOD_NOT_ALLOWED);

    server.create_key(key_body("key2", "AA==")).await;
    let feed = server
        .send(
            "GET",
            "/dbs/db/clientencryptionkeys",
            ("clientencryptionkeys", "dbs/db"),
            None,
            &[],
        )
        .await;
    assert_eq!(feed.status, StatusCode::OK);
    assert_eq!(feed.body["_count"], json!(2));
    let ids: Vec<&Value> = feed.body["ClientEncryptionKeys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|key| &key["id"])
        .collect();
    assert_eq!(ids, [&json!("key1"), &json!("key2")]);
    let query = server
        .send(
            "POST",
            "/dbs/db/clientencryptionkeys",
            ("clientencryptionkeys", "dbs/db"),
            Some(json!({"query": "SELECT * FROM root r WHERE r.id = @id", "parameters": [{"name": "@id", "value": "key2"}]})),
            &[("x-ms-documentdb-isquery", "true"), ("content-type", "application/query+json")],
        )
        .await;
    assert_eq!(query.status, StatusCode::OK, "{}", query.body);
    assert_eq!(query.body["ClientEncryptionKeys"][0]["id"], json!("key2"));

    // A key addressed by its rid, as a client builds the path from `_self`.
    let by_rid = format!("dbs/{database_rid}/clientencryptionkeys/{rid}");
    let read = server
        .send(
            "GET",
            &format!("/{by_rid}"),
            ("clientencryptionkeys", &by_rid),
            None,
            &[],
        )
        .await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    assert_eq!(read.body["id"], json!("key1"));
}

#[tokio::test]
async fn keys_go_with_their_database() {
    let server = Server::new();
    server.setup(partitioned()).await;
    server.create_key(key_body("key1", "AA==")).await;
    let dropped = server
        .send("DELETE", "/dbs/db", ("dbs", "dbs/db"), None, &[])
        .await;
    assert_eq!(dropped.status, StatusCode::NO_CONTENT);
    server.setup(partitioned()).await;
    assert_eq!(server.read_key("key1").await.status, StatusCode::NOT_FOUND);
    assert_eq!(
        server.create_key(key_body("key1", "AA==")).await.status,
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn a_policy_is_checked_stored_and_fixed() {
    let server = Server::new();
    server.setup(partitioned()).await;
    server.create_key(key_body("key1", "AA==")).await;
    let policy = json!({
        "includedPaths": [included("/pk", "key1", "Deterministic"), included("/secret", "key1", "Randomized")],
        "policyFormatVersion": 2,
    });
    let body = json!({"id": "enc", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}, "clientEncryptionPolicy": policy});
    let created = server.create_container(body.clone(), &[]).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["clientEncryptionPolicy"], policy);
    let read = server
        .send(
            "GET",
            "/dbs/db/colls/enc",
            ("colls", "dbs/db/colls/enc"),
            None,
            &[],
        )
        .await;
    assert_eq!(read.body["clientEncryptionPolicy"], policy);

    // A replace that sends the policy back unchanged succeeds; one that drops it does not.
    let mut replaced = read.body.clone();
    replaced["defaultTtl"] = json!(60);
    let path = ("colls", "dbs/db/colls/enc");
    let kept = server
        .send(
            "PUT",
            "/dbs/db/colls/enc",
            path,
            Some(replaced.clone()),
            &[],
        )
        .await;
    assert_eq!(kept.status, StatusCode::OK, "{}", kept.body);
    replaced
        .as_object_mut()
        .expect("object")
        .remove("clientEncryptionPolicy");
    let dropped = server
        .send("PUT", "/dbs/db/colls/enc", path, Some(replaced), &[])
        .await;
    check_error(
        &dropped,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "'clientEncryptionPolicy' cannot be changed as part of collection replace operation.",
    );

    // Every key the policy names must exist in the database.
    let unknown = json!({"id": "other", "partitionKey": {"paths": ["/pk"]}, "clientEncryptionPolicy": {
        "includedPaths": [included("/secret", "unknownKey", "Randomized")], "policyFormatVersion": 1}});
    check_error(
        &server.create_container(unknown, &[]).await,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "ClientEncryptionKey with id '[unknownKey]' does not exist.",
    );
    // The partition key may be encrypted only deterministically, from version 2 on.
    let randomized = json!({"id": "other", "partitionKey": {"paths": ["/pk"]}, "clientEncryptionPolicy": {
        "includedPaths": [included("/pk", "key1", "Randomized")], "policyFormatVersion": 2}});
    check_error(
        &server.create_container(randomized, &[]).await,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Path: /pk which is part of the partition key has to be encrypted with Deterministic type Encryption.",
    );
    let nested = json!({"id": "other", "partitionKey": {"paths": ["/pk"]}, "clientEncryptionPolicy": {
        "includedPaths": [included("/a/b", "key1", "Randomized")], "policyFormatVersion": 2}});
    check_error(
        &server.create_container(nested, &[]).await,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Invalid path '/a/b'.",
    );
}
