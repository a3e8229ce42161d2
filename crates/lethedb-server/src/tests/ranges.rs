//! Physical partitions over HTTP: the partition key ranges a container's throughput gives it,
//! requests served per range, per-range session tokens, and splits that retire range ids.

use super::{check_error, Answer, Server};
use axum::http::StatusCode;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// A database `db` with the hash v2 container `c` at `throughput` RU/s.
async fn setup(server: &Server, throughput: u32) {
    let created = server
        .send("POST", "/dbs", ("dbs", ""), Some(json!({"id": "db"})), &[])
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let created = server
        .create_container(
            super::partitioned(),
            &[("x-ms-offer-throughput", &throughput.to_string())],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
}

async fn ranges(server: &Server) -> Answer {
    server
        .send(
            "GET",
            "/dbs/db/colls/c/pkranges",
            ("pkranges", "dbs/db/colls/c"),
            None,
            &[],
        )
        .await
}

fn range_ids(answer: &Answer) -> Vec<String> {
    answer.body["PartitionKeyRanges"]
        .as_array()
        .expect("ranges")
        .iter()
        .map(|range| range["id"].as_str().expect("id").to_string())
        .collect()
}

/// The ids a query returns on one range, following continuations.
async fn ids_on_range(server: &Server, range: &str, page: usize) -> Vec<String> {
    let mut ids = Vec::new();
    let mut continuation: Option<String> = None;
    loop {
        let page_size = page.to_string();
        let mut headers = vec![
            ("x-ms-documentdb-partitionkeyrangeid", range),
            ("x-ms-max-item-count", page_size.as_str()),
        ];
        if let Some(token) = &continuation {
            headers.push(("x-ms-continuation", token.as_str()));
        }
        let answer = server.query("SELECT c.id FROM c", &headers).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        assert!(answer
            .header("x-ms-session-token")
            .starts_with(&format!("{range}:-1#")));
        for document in answer.body["Documents"].as_array().expect("documents") {
            ids.push(document["id"].as_str().expect("id").to_string());
        }
        match answer.headers.get("x-ms-continuation") {
            Some(token) => continuation = Some(token.to_str().expect("token").to_string()),
            None => return ids,
        }
    }
}

#[tokio::test]
async fn throughput_lays_out_ranges_that_partition_the_items() {
    let server = Server::new();
    // 30,000 RU/s make five ranges of 6,000, as the service creates them.
    setup(&server, 30_000).await;
    let listed = ranges(&server).await;
    assert_eq!(range_ids(&listed), ["0", "1", "2", "3", "4"]);
    let list = listed.body["PartitionKeyRanges"]
        .as_array()
        .expect("ranges");
    assert_eq!(list[0]["minInclusive"], json!(""));
    assert_eq!(list[4]["maxExclusive"], json!("FF"));
    for pair in list.windows(2) {
        assert_eq!(pair[0]["maxExclusive"], pair[1]["minInclusive"]);
    }
    // Each item is served by the range its create named, and only by it.
    let mut owner = std::collections::BTreeMap::new();
    for i in 0..40 {
        let created = server
            .create_item(json!({"id": format!("i{i}"), "pk": format!("p{i}")}))
            .await;
        assert_eq!(created.status, StatusCode::CREATED);
        let range = created
            .header("x-ms-documentdb-partitionkeyrangeid")
            .to_string();
        assert!(created
            .header("x-ms-session-token")
            .starts_with(&format!("{range}:-1#")));
        // A point read answers with the same range and the range's latest LSN.
        let read = server.read_item(&format!("i{i}"), &format!("p{i}")).await;
        assert_eq!(read.header("x-ms-documentdb-partitionkeyrangeid"), range);
        owner.insert(format!("i{i}"), range);
    }
    let used: BTreeSet<&String> = owner.values().collect();
    assert!(used.len() > 1, "40 keys all hashed to one range: {owner:?}");
    let mut seen = BTreeSet::new();
    for range in range_ids(&listed) {
        for id in ids_on_range(&server, &range, 3).await {
            assert_eq!(owner[&id], range, "{id} served by the wrong range");
            assert!(seen.insert(id), "served twice");
        }
        // The read feed of one range serves the same items.
        let feed = server
            .send(
                "GET",
                "/dbs/db/colls/c/docs",
                ("docs", "dbs/db/colls/c"),
                None,
                &[("x-ms-documentdb-partitionkeyrangeid", &range)],
            )
            .await;
        for document in feed.body["Documents"].as_array().expect("documents") {
            assert_eq!(owner[document["id"].as_str().expect("id")], range);
        }
    }
    assert_eq!(seen.len(), 40);
    // Several ranges: a query that needs them all must say so.
    let refused = server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"query": "SELECT * FROM c"})),
            &[
                ("content-type", "application/query+json"),
                ("x-ms-documentdb-isquery", "True"),
            ],
        )
        .await;
    check_error(
        &refused,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Cross partition query is required",
    );
    // A whole-container answer carries every range's session token; as the service's gateway
    // pages it, each page holds one range's items, and the pages hold them all.
    let mut continuation = String::new();
    let mut pages = 0;
    let mut served = BTreeSet::new();
    loop {
        let headers = [("x-ms-continuation", continuation.as_str())];
        let all = server
            .query(
                "SELECT VALUE c.id FROM c",
                &headers[..usize::from(pages > 0)],
            )
            .await;
        assert_eq!(all.header("x-ms-session-token").split(',').count(), 5);
        let ids = all.body["Documents"].as_array().expect("documents");
        let page_range = ids.first().map(|id| &owner[id.as_str().expect("id")]);
        for id in ids {
            let id = id.as_str().expect("id");
            assert_eq!(
                Some(&owner[id]),
                page_range,
                "a page holds one range's items"
            );
            assert!(served.insert(id.to_string()), "served twice");
        }
        pages += 1;
        continuation = all.header("x-ms-continuation").to_string();
        if continuation.is_empty() {
            break;
        }
    }
    assert_eq!((served.len(), pages), (40, 5));
}

#[tokio::test]
async fn one_range_refuses_a_query_without_the_cross_partition_header_unless_it_names_a_key() {
    let server = Server::new();
    setup(&server, 400).await;
    server.create_item(json!({"id": "a", "pk": "p"})).await;
    async fn ask_without_consent(server: &Server, text: &str) -> Answer {
        let headers = [
            ("content-type", "application/query+json"),
            ("x-ms-documentdb-isquery", "True"),
        ];
        let body = json!({ "query": text });
        server
            .send(
                "POST",
                "/dbs/db/colls/c/docs",
                ("docs", "dbs/db/colls/c"),
                Some(body),
                &headers,
            )
            .await
    }
    let ask = |text| ask_without_consent(&server, text);
    check_error(
        &ask("SELECT c.id FROM c").await,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "Cross partition query is required but disabled",
    );
    let pinned = ask("SELECT c.id FROM c WHERE c.pk = 'p'").await;
    assert_eq!(pinned.body["Documents"], json!([{"id": "a"}]));
}

async fn replace_throughput(server: &Server, throughput: u32) {
    let offers = server
        .send("GET", "/offers", ("offers", ""), None, &[])
        .await;
    let mut offer: Value = offers.body["Offers"][0].clone();
    let id = offer["id"].as_str().expect("id").to_string();
    offer["content"]["offerThroughput"] = json!(throughput);
    let answer = server
        .send(
            "PUT",
            &format!("/offers/{id}"),
            ("offers", &id.to_ascii_lowercase()),
            Some(offer),
            &[],
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
}

#[tokio::test]
async fn raising_throughput_splits_ranges_and_retires_the_parent() {
    let server = Server::new();
    setup(&server, 10_000).await;
    for i in 0..30 {
        server
            .create_item(json!({"id": format!("i{i}"), "pk": format!("p{i}")}))
            .await;
    }
    let before = ranges(&server).await;
    assert_eq!(range_ids(&before), ["0"]);
    // A page of range 0 taken before the split...
    let first = server
        .query(
            "SELECT c.id FROM c",
            &[
                ("x-ms-documentdb-partitionkeyrangeid", "0"),
                ("x-ms-max-item-count", "7"),
            ],
        )
        .await;
    let token = first.header("x-ms-continuation").to_string();
    let mut seen: BTreeSet<String> = first.body["Documents"]
        .as_array()
        .expect("documents")
        .iter()
        .map(|d| d["id"].as_str().expect("id").to_string())
        .collect();
    assert_eq!(seen.len(), 7);

    replace_throughput(&server, 20_000).await;
    let after = ranges(&server).await;
    assert_eq!(range_ids(&after), ["1", "2"]);
    assert_eq!(after.body["PartitionKeyRanges"][0]["parents"], json!(["0"]));
    assert_ne!(before.header("etag"), after.header("etag"));
    // The ETag the client polled with no longer matches: it gets the new ranges.
    let polled = server
        .send(
            "GET",
            "/dbs/db/colls/c/pkranges",
            ("pkranges", "dbs/db/colls/c"),
            None,
            &[("if-none-match", before.header("etag"))],
        )
        .await;
    assert_eq!(polled.status, StatusCode::OK);
    // The old range id is gone, with the status and substatus that make SDKs refresh.
    let gone = server
        .query(
            "SELECT c.id FROM c",
            &[("x-ms-documentdb-partitionkeyrangeid", "0")],
        )
        .await;
    check_error(&gone, StatusCode::GONE, "Gone", "partition key range");
    assert_eq!(gone.header("x-ms-substatus"), "1002");
    // ...continues on each child with the parent's token: no item twice, none lost.
    for child in ["1", "2"] {
        let mut continuation = Some(token.clone());
        while let Some(current) = continuation.take() {
            let page = server
                .query(
                    "SELECT c.id FROM c",
                    &[
                        ("x-ms-documentdb-partitionkeyrangeid", child),
                        ("x-ms-max-item-count", "5"),
                        ("x-ms-continuation", &current),
                    ],
                )
                .await;
            assert_eq!(page.status, StatusCode::OK, "{}", page.body);
            for document in page.body["Documents"].as_array().expect("documents") {
                let id = document["id"].as_str().expect("id").to_string();
                assert!(seen.insert(id), "served twice");
            }
            continuation = page
                .headers
                .get("x-ms-continuation")
                .map(|value| value.to_str().expect("token").to_string());
        }
    }
    assert_eq!(seen.len(), 30);
    // Lowering throughput never merges ranges.
    replace_throughput(&server, 400).await;
    assert_eq!(range_ids(&ranges(&server).await), ["1", "2"]);
}

#[tokio::test]
async fn container_reads_report_statistics_per_range_when_asked() {
    let server = Server::new();
    setup(&server, 18_000).await;
    for i in 0..24 {
        server
            .create_item(json!({"id": format!("i{i}"), "pk": format!("p{}", i % 8)}))
            .await;
    }
    let path = ("colls", "dbs/db/colls/c");
    let plain = server.send("GET", "/dbs/db/colls/c", path, None, &[]).await;
    assert!(plain.body.get("statistics").is_none());
    let read = server
        .send(
            "GET",
            "/dbs/db/colls/c",
            path,
            None,
            &[("x-ms-documentdb-populatepartitionstatistics", "true")],
        )
        .await;
    let statistics = read.body["statistics"].as_array().expect("statistics");
    let ids: Vec<&str> = statistics
        .iter()
        .map(|s| s["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["0", "1", "2"]);
    let count = |field: &str| {
        statistics
            .iter()
            .map(|s| s[field].as_u64().expect(field))
            .sum::<u64>()
    };
    assert_eq!(count("documentCount"), 24);
    assert_eq!(count("sampledDistinctPartitionKeyCount"), 8);
    assert!(count("sizeInKB") > 0);
}

#[tokio::test]
async fn a_transactional_batch_answers_for_the_range_of_its_partition() {
    let server = Server::new();
    setup(&server, 50_000).await;
    for key in ["k1", "k2", "k3", "k4", "k5", "k6"] {
        let single = server.create_item(json!({"id": "single", "pk": key})).await;
        let range = single
            .header("x-ms-documentdb-partitionkeyrangeid")
            .to_string();
        let pk = json!([key]).to_string();
        let batch = server
            .send(
                "POST",
                "/dbs/db/colls/c/docs",
                ("docs", "dbs/db/colls/c"),
                Some(json!([{"operationType": "Create", "resourceBody": {"id": "b", "pk": key}}])),
                &[
                    ("x-ms-cosmos-is-batch-request", "True"),
                    ("x-ms-cosmos-batch-atomic", "True"),
                    ("x-ms-documentdb-partitionkey", &pk),
                ],
            )
            .await;
        assert_eq!(batch.status, StatusCode::OK, "{}", batch.body);
        assert_eq!(batch.header("x-ms-documentdb-partitionkeyrangeid"), range);
        assert!(batch
            .header("x-ms-session-token")
            .starts_with(&format!("{range}:-1#")));
    }
}

#[tokio::test]
async fn a_container_reply_names_its_database_as_owner() {
    // The JavaScript SDK keeps a reply's session token only when its owner rid is a
    // container's; a container's own create or read is owned by the database, as the service
    // says, so the SDK's token for the container stays the one its item writes gave.
    let server = Server::new();
    setup(&server, 25_100).await;
    let database = server
        .send("GET", "/dbs/db", ("dbs", "dbs/db"), None, &[])
        .await;
    let database_rid = database.body["_rid"].as_str().expect("rid").to_string();
    let read = server
        .send(
            "GET",
            "/dbs/db/colls/c",
            ("colls", "dbs/db/colls/c"),
            None,
            &[],
        )
        .await;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(read.header("x-ms-content-path"), database_rid);
    assert_eq!(read.header("x-ms-alt-content-path"), "dbs/db");
    let created = server
        .create_container(
            json!({"id": "d", "partitionKey": {"paths": ["/pk"], "kind": "Hash"}}),
            &[],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    assert_eq!(created.header("x-ms-content-path"), database_rid);
    assert_eq!(created.header("x-ms-alt-content-path"), "dbs/db");
    // An item's reply is still owned by its container.
    let item = server.create_item(json!({"id": "a", "pk": "p"})).await;
    assert_eq!(
        item.header("x-ms-content-path"),
        read.body["_rid"].as_str().expect("rid")
    );
    assert_eq!(item.header("x-ms-alt-content-path"), "dbs/db/colls/c");
}

/// The LSN of a session token (`range:-1#LSN`).
fn token_lsn(answer: &Answer) -> u64 {
    let token = answer.header("x-ms-session-token");
    token
        .rsplit_once('#')
        .and_then(|(_, lsn)| lsn.parse().ok())
        .unwrap_or_else(|| panic!("a session token: {token}"))
}

#[tokio::test]
async fn every_write_in_a_range_raises_its_session_token_whichever_shard_it_lands_in() {
    // Keys of one range land in different shards; the service's range LSN rises with each
    // write all the same, and a read answers the range's latest. (A shard that a range bound
    // cuts counts for both of its ranges, so a range's LSN may also rise by a neighbour's.)
    let server = Server::new();
    setup(&server, 20_000).await;
    let mut latest: std::collections::BTreeMap<String, (u64, String)> = Default::default();
    for number in 0..24 {
        let key = format!("key-{number}");
        let created = server.create_item(json!({"id": "x", "pk": key})).await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
        let range = created
            .header("x-ms-documentdb-partitionkeyrangeid")
            .to_string();
        let lsn = token_lsn(&created);
        assert!(created
            .header("x-ms-session-token")
            .starts_with(&format!("{range}:-1#")));
        let (before, _) = latest
            .insert(range.clone(), (lsn, key.clone()))
            .unwrap_or_default();
        assert!(
            lsn > before,
            "range {range}, key {key}: {lsn} after {before}"
        );
        assert_eq!(created.header("lsn"), lsn.to_string());
        // A read of the item answers the range's latest.
        let read = server.read_item("x", &key).await;
        assert_eq!(
            read.header("x-ms-session-token"),
            format!("{range}:-1#{lsn}")
        );
    }
    assert!(latest.len() > 1, "the keys fell in one range: {latest:?}");
    // A query of one range answers what a point read in it answers.
    for (range, (_, key)) in &latest {
        let read = server.read_item("x", key).await;
        let page = server
            .query(
                "SELECT * FROM c",
                &[("x-ms-documentdb-partitionkeyrangeid", range.as_str())],
            )
            .await;
        assert_eq!(
            page.header("x-ms-session-token"),
            read.header("x-ms-session-token")
        );
    }
}

/// The pages of `SELECT * FROM c` at `max_item_count`, sent without a range as the JavaScript
/// SDK's default path sends it: each page's item count and whether it had a continuation.
async fn page_sizes(server: &Server, max_item_count: &str) -> Vec<(usize, bool)> {
    let mut pages = Vec::new();
    let mut continuation: Option<String> = None;
    for _ in 0..20 {
        let mut headers = vec![("x-ms-max-item-count", max_item_count)];
        if let Some(token) = continuation.as_deref() {
            headers.push(("x-ms-continuation", token));
        }
        let answer = server.query("SELECT * FROM c", &headers).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        let items = answer.body["Documents"]
            .as_array()
            .expect("documents")
            .len();
        let token = answer.header("x-ms-continuation").to_string();
        pages.push((items, !token.is_empty()));
        if token.is_empty() {
            return pages;
        }
        continuation = Some(token);
    }
    panic!("too many pages: {pages:?}");
}

/// A page that fills exactly where the results end hands out a token, and the page after it
/// is empty, as the service's backend (which reads no further than a full page) answers: the
/// JavaScript SDK's hierarchical-key `readAll` test counts that third page. A last page with
/// room left has no token.
#[tokio::test]
async fn a_page_that_fills_exactly_at_the_end_is_followed_by_an_empty_last_page() {
    let server = Server::new();
    setup(&server, 400).await;
    for id in ["a", "b", "c", "d"] {
        let created = server.create_item(json!({"id": id, "pk": id})).await;
        assert_eq!(created.status, StatusCode::CREATED);
    }
    assert_eq!(
        page_sizes(&server, "2").await,
        [(2, true), (2, true), (0, false)]
    );
    assert_eq!(page_sizes(&server, "3").await, [(3, true), (1, false)]);
    assert_eq!(page_sizes(&server, "5").await, [(4, false)]);
}
