//! Throughput buckets over HTTP: set through `/_lethedb/throughput-buckets`, a request naming a
//! bucket is throttled (429, substatus 3212) once the bucket's share of the second is spent
//! while the container still admits others, a bucket the container lacks draws on the
//! container alone, and an id outside 1 to 5 is a 400.

use super::*;

const BUCKETS: &str = "/_lethedb/throughput-buckets/dbs/db/colls/c";

async fn container_of_400_ru(server: &Server) {
    server
        .send("POST", "/dbs", ("dbs", ""), Some(json!({"id": "db"})), &[])
        .await;
    let created = server
        .send(
            "POST",
            "/dbs/db/colls",
            ("colls", "dbs/db"),
            Some(partitioned()),
            &[("x-ms-offer-throughput", "400")],
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
}

async fn create(server: &Server, id: String, bucket: Option<&str>) -> Answer {
    let mut headers = vec![("x-ms-documentdb-partitionkey", r#"["p"]"#)];
    if let Some(bucket) = bucket {
        headers.push(("x-ms-cosmos-throughput-bucket", bucket));
    }
    server
        .send(
            "POST",
            "/dbs/db/colls/c/docs",
            ("docs", "dbs/db/colls/c"),
            Some(json!({"id": id, "pk": "p"})),
            &headers,
        )
        .await
}

#[tokio::test]
async fn buckets_are_set_read_and_validated() {
    let server = Server::new();
    container_of_400_ru(&server).await;
    let signed = ("colls", "dbs/db/colls/c");
    let none = server.send("GET", BUCKETS, signed, None, &[]).await;
    assert_eq!(none.body, json!({"throughputBuckets": []}));
    let set = json!({"throughputBuckets": [{"id": 2, "maxThroughputPercentage": 25}]});
    let answer = server
        .send("PUT", BUCKETS, signed, Some(set.clone()), &[])
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(
        server.send("GET", BUCKETS, signed, None, &[]).await.body,
        set
    );
    let bad = json!({"throughputBuckets": [{"id": 6, "maxThroughputPercentage": 25}]});
    let refused = server.send("PUT", BUCKETS, signed, Some(bad), &[]).await;
    check_error(
        &refused,
        StatusCode::BAD_REQUEST,
        "BadRequest",
        "from 1 to 5",
    );
    let missing = "/_lethedb/throughput-buckets/dbs/db/colls/nope";
    let signed_missing = ("colls", "dbs/db/colls/nope");
    let answer = server.send("GET", missing, signed_missing, None, &[]).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND, "{}", answer.body);
}

#[tokio::test]
async fn a_spent_bucket_is_throttled_with_3212_while_the_container_admits_others() {
    let server = Server::new();
    container_of_400_ru(&server).await;
    let set = json!({"throughputBuckets": [{"id": 1, "maxThroughputPercentage": 25}]});
    let answer = server
        .send("PUT", BUCKETS, ("colls", "dbs/db/colls/c"), Some(set), &[])
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    // The clock stands still: every write below falls in one second of the 400 RU budget.
    let mut in_bucket = 0;
    let throttled = loop {
        let answer = create(&server, format!("b{in_bucket}"), Some("1")).await;
        if answer.status != StatusCode::CREATED {
            break answer;
        }
        in_bucket += 1;
        assert!(in_bucket < 100, "the bucket was never throttled");
    };
    assert_eq!(
        throttled.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        throttled.body
    );
    assert_eq!(throttled.header("x-ms-substatus"), "3212");
    assert!(!throttled.header("x-ms-retry-after-ms").is_empty());
    // A request naming no bucket, or one the container does not define, still gets in.
    assert_eq!(
        create(&server, "free".into(), None).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        create(&server, "undefined".into(), Some("4")).await.status,
        StatusCode::CREATED
    );
    let mut outside = 2;
    while create(&server, format!("o{outside}"), None).await.status == StatusCode::CREATED {
        outside += 1;
        assert!(outside < 400, "the container was never throttled");
    }
    // A quarter of the budget for the bucket, the whole of it for everyone.
    assert!(
        in_bucket * 2 < outside + in_bucket,
        "{in_bucket} in the bucket, {outside} outside"
    );
}

#[tokio::test]
async fn a_bucket_outside_one_to_five_is_refused() {
    let server = Server::new();
    container_of_400_ru(&server).await;
    for bad in ["0", "6", "one"] {
        let answer = create(&server, format!("x{bad}"), Some(bad)).await;
        check_error(
            &answer,
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "x-ms-cosmos-throughput-bucket",
        );
    }
    assert_eq!(
        create(&server, "ok".into(), Some("5")).await.status,
        StatusCode::CREATED
    );
}
