//! Indexing-policy changes over HTTP: the container read reports the rebuild's progress in
//! `x-ms-documentdb-collection-index-transformation-progress`, `/_lethedb/index-check` answers
//! the stored entries against the items (to master-key signatures only), and item writes are
//! charged by the terms the policy indexes.

use super::*;

const CHECK_PATH: &str = "/_lethedb/index-check/dbs/db/colls/c";
const CONTAINER: (&str, &str) = ("colls", "dbs/db/colls/c");

async fn index_check(server: &Server) -> Answer {
    server.send("GET", CHECK_PATH, CONTAINER, None, &[]).await
}

async fn progress(server: &Server) -> String {
    let read = server
        .send("GET", "/dbs/db/colls/c", CONTAINER, None, &[])
        .await;
    assert_eq!(read.status, StatusCode::OK);
    read.header("x-ms-documentdb-collection-index-transformation-progress")
        .to_string()
}

fn charge(answer: &Answer) -> f64 {
    answer
        .header("x-ms-request-charge")
        .parse()
        .expect("charge")
}

#[tokio::test]
async fn a_policy_change_reports_its_progress_and_the_check_its_outcome() {
    let mut engine = None;
    let server = Server::with(|state| engine = Some(state.engine.clone()));
    let engine = engine.expect("engine");
    server.setup(partitioned()).await;
    let mut charges = Vec::new();
    for id in ["a", "b", "c"] {
        let created = server
            .create_item(json!({"id": id, "pk": "p", "n": 1, "o": {"k": "v"}}))
            .await;
        charges.push(charge(&created));
    }
    let check = index_check(&server).await;
    assert_eq!(check.status, StatusCode::OK, "{}", check.body);
    assert_eq!(check.body["consistent"], json!(true));
    assert_eq!(
        (check.body["missing"].clone(), check.body["stale"].clone()),
        (json!(0), json!(0))
    );
    assert_eq!(check.body["progress"], json!(100));
    let stored = check.body["stored"].as_u64().expect("stored");
    assert!(stored > 0);
    assert_eq!(progress(&server).await, "100");
    let replaced = server
        .send(
            "PUT",
            "/dbs/db/colls/c",
            CONTAINER,
            Some(json!({"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2},
                        "indexingPolicy": {"includedPaths": [], "excludedPaths": [{"path": "/*"}]}})),
            &[],
        )
        .await;
    assert_eq!(replaced.status, StatusCode::OK, "{}", replaced.body);
    assert_eq!(
        progress(&server).await,
        "0",
        "the rebuild runs in the background"
    );
    let during = index_check(&server).await;
    assert_eq!(during.body["rebuilding"], json!(true));
    assert_eq!(during.body["consistent"], json!(false));
    assert_eq!(
        engine.build_indexes_once(100).await.expect("build"),
        (3, false)
    );
    assert_eq!(progress(&server).await, "100");
    let after = index_check(&server).await;
    assert_eq!(after.body["consistent"], json!(true), "{}", after.body);
    assert!(after.body["stored"].as_u64().expect("stored") < stored);
    // The same document costs less to write once fewer of its paths are indexed.
    let created = server
        .create_item(json!({"id": "d", "pk": "p", "n": 1, "o": {"k": "v"}}))
        .await;
    assert!(
        charge(&created) < charges[0],
        "{} against {}",
        charge(&created),
        charges[0]
    );
}

#[tokio::test]
async fn the_index_check_answers_master_key_signatures_only() {
    let server = Server::new();
    server.setup(partitioned()).await;
    let unsigned = server
        .raw(
            Request::get(CHECK_PATH)
                .body(Body::empty())
                .expect("request"),
        )
        .await;
    assert_eq!(unsigned.status, StatusCode::UNAUTHORIZED);
    let wrong_link = server
        .send(
            "GET",
            CHECK_PATH,
            ("colls", "dbs/db/colls/other"),
            None,
            &[],
        )
        .await;
    assert_eq!(wrong_link.status, StatusCode::UNAUTHORIZED);
    let absent = server
        .send(
            "GET",
            "/_lethedb/index-check/dbs/db/colls/nope",
            ("colls", "dbs/db/colls/nope"),
            None,
            &[],
        )
        .await;
    assert_eq!(absent.status, StatusCode::NOT_FOUND);
    let database_only = server
        .send(
            "GET",
            "/_lethedb/index-check/dbs/db",
            ("dbs", "dbs/db"),
            None,
            &[],
        )
        .await;
    assert_eq!(database_only.status, StatusCode::NOT_FOUND);
}
