//! The request head: what `RequestHead::parse` reads from the headers (first value of each),
//! and on the wire that a value is refused only by the operations that read it, while values
//! the service ignores (priority, an unknown consistency level) never fail a request; a
//! throughput bucket outside 1 to 5 fails item operations, as on the service.

use super::*;
use crate::head::{ConsistencyLevel, PriorityLevel, RequestHead};
use axum::http::{HeaderName, HeaderValue};
use lethedb_engine::{ChangeFeedMode, PartitionKeyValue};

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            HeaderName::from_bytes(name.as_bytes()).expect("name"),
            HeaderValue::from_str(value).expect("value"),
        );
    }
    map
}

#[test]
fn the_head_holds_each_header_parsed() {
    let map = headers(&[
        ("x-ms-documentdb-partitionkey", r#"["a", 1]"#),
        ("x-ms-documentdb-partitionkey", r#"["second"]"#),
        ("If-Match", "\"e1\""),
        ("if-none-match", "\"e2\""),
        ("x-ms-consistency-level", "session"),
        ("x-ms-session-token", "0:1#5"),
        ("x-ms-continuation", "token"),
        ("x-ms-max-item-count", "7"),
        ("x-ms-documentdb-responsecontinuationtokenlimitinkb", "1"),
        ("x-ms-documentdb-partitionkeyrangeid", "rid,3"),
        ("x-ms-start-epk", "aa"),
        ("x-ms-end-epk", "ff"),
        ("x-ms-documentdb-query-enablecrosspartition", "True"),
        ("prefer", "return=minimal"),
        ("x-ms-cosmos-priority-level", "Low"),
        ("x-ms-cosmos-throughput-bucket", "3"),
        ("a-im", "Full-Fidelity Feed"),
        ("content-type", "application/query+json"),
    ]);
    let head = RequestHead::parse(&map);
    let key = PartitionKeyValue::parse_json_text(r#"["a", 1]"#).expect("key");
    assert_eq!(
        head.partition_key().expect("key"),
        Some(&key),
        "the first value"
    );
    assert_eq!(head.if_match, Some("\"e1\""));
    assert_eq!(head.if_none_match, Some("\"e2\""));
    assert_eq!(head.consistency, Some(ConsistencyLevel::Session));
    assert_eq!(head.session_token, Some("0:1#5"));
    assert_eq!(head.continuation, Some("token"));
    assert_eq!(head.page_items_max().expect("count"), Some(7));
    assert_eq!(head.continuation_limit_kb().expect("limit"), Some(1));
    assert_eq!(head.range_id, Some("3"));
    assert_eq!(head.effective_range, Some(("AA".into(), "FF".into())));
    assert!(head.enable_cross_partition && head.prefers_minimal && head.is_query);
    assert!(!head.is_upsert && !head.is_batch && !head.is_query_plan);
    assert_eq!(head.priority, Some(PriorityLevel::Low));
    assert_eq!(head.throughput_bucket().expect("bucket"), Some(3));
    assert_eq!(
        head.change_feed,
        Some(ChangeFeedMode::AllVersionsAndDeletes)
    );

    let none = HeaderMap::new();
    let empty = RequestHead::parse(&none);
    assert_eq!(empty.partition_key().expect("none"), None);
    assert_eq!(empty.page_items_max().expect("none"), None);
    assert_eq!(
        (
            empty.priority,
            empty.throughput_bucket().expect("none"),
            empty.consistency
        ),
        (None, None, None)
    );
    assert_eq!(empty.change_feed, None);
}

#[test]
fn a_value_that_cannot_be_parsed_is_kept_as_its_400_or_ignored() {
    let map = headers(&[
        ("x-ms-documentdb-partitionkey", r#""a""#),
        ("x-ms-max-item-count", "many"),
        ("x-ms-documentdb-responsecontinuationtokenlimitinkb", "-1"),
        ("x-ms-consistency-level", "Linearizable"),
        ("x-ms-cosmos-priority-level", "Urgent"),
        ("x-ms-cosmos-throughput-bucket", "third"),
        ("x-ms-continuation", ""),
        ("x-ms-max-item-count", "5"),
    ]);
    let head = RequestHead::parse(&map);
    let refusal = |result: Result<(), crate::ApiError>| {
        let error = result.expect_err("refused");
        (error.status().as_u16(), error.message)
    };
    assert_eq!(
        refusal(head.partition_key().map(|_| ())),
        (
            400,
            r#"Partition key "a" is invalid: it must be a JSON array of values."#.into()
        )
    );
    assert_eq!(
        refusal(head.page_items_max().map(|_| ())),
        (
            400,
            "Invalid value 'many' for header x-ms-max-item-count.".into()
        )
    );
    assert_eq!(refusal(head.continuation_limit_kb().map(|_| ())).0, 400);
    assert_eq!(refusal(head.throughput_bucket().map(|_| ())).0, 400);
    assert_eq!((head.consistency, head.priority), (None, None));
    assert_eq!(head.continuation, None);
}

#[tokio::test]
async fn values_the_service_ignores_never_fail_a_request() {
    let server = Server::new();
    server.setup(partitioned()).await;
    server.create_item(json!({"id": "a", "pk": "p"})).await;
    let ignored = [
        ("x-ms-cosmos-priority-level", "Urgent"),
        ("x-ms-consistency-level", "Linearizable"),
        ("x-ms-documentdb-partitionkey", r#"["p"]"#),
    ];
    let read = server
        .send(
            "GET",
            "/dbs/db/colls/c/docs/a",
            ("docs", "dbs/db/colls/c/docs/a"),
            None,
            &ignored,
        )
        .await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    // A page size no feed can use fails feeds only.
    let bad_count = [
        ("x-ms-max-item-count", "many"),
        ("x-ms-documentdb-partitionkey", r#"["p"]"#),
    ];
    let read = server
        .send(
            "GET",
            "/dbs/db/colls/c/docs/a",
            ("docs", "dbs/db/colls/c/docs/a"),
            None,
            &bad_count,
        )
        .await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    let feed = server
        .send(
            "GET",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            None,
            &bad_count,
        )
        .await;
    check_error(
        &feed,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "x-ms-max-item-count",
    );
    // A partition key outside the grammar fails the operations that read it only.
    let container = server
        .send(
            "GET",
            "/dbs/db/colls/c",
            ("colls", "dbs/db/colls/c"),
            None,
            &[("x-ms-documentdb-partitionkey", "p")],
        )
        .await;
    assert_eq!(container.status, StatusCode::OK, "{}", container.body);
}
