//! On a shared PostgreSQL store, every statement an operation on one logical partition sends
//! names one bucket (`partitions/buckets.rs`): point reads, creates, upserts, replaces,
//! patches, deletes and atomic batches, with and without a time to live, and each of their
//! commits writes rows of that one bucket only. That is the property
//! a distributed PostgreSQL needs to route each of them to the one node that holds the
//! partition. Runs like `shared_store.rs`, on its stores (hash-partitioned by bucket).

use crate::common::{pk, resolved};
use crate::shared_store::{database_url, pair_counting};
use lethedb_engine::{parse_batch, BatchMode, QueryRequest, WriteMode};
use serde_json::json;

#[cfg_attr(
    not(lethedb_test_postgres),
    ignore = "needs LETHEDB_TEST_POSTGRES: scripts/test postgres runs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_on_one_partition_send_only_statements_of_one_bucket() {
    let url = database_url();
    let (_a, b, store) = pair_counting(&url).await;
    let container = resolved(&b, "c");
    // The first write of a container reads what a warm instance has cached since.
    b.write_item(
        &container,
        WriteMode::Create,
        pk("p"),
        json!({"id": "warm", "pk": "p"}),
        None,
    )
    .await
    .expect("warm up");
    let before = store.bucket_statements();
    for (id, body) in [
        ("x", json!({"id": "x", "pk": "p", "n": 1})),
        ("t", json!({"id": "t", "pk": "p", "ttl": 600})),
    ] {
        b.write_item(&container, WriteMode::Create, pk("p"), body.clone(), None)
            .await
            .expect("create");
        b.read_item_with_lsn(&container, pk("p"), id)
            .await
            .expect("read");
        b.write_item(&container, WriteMode::Upsert, pk("p"), body.clone(), None)
            .await
            .expect("upsert");
        b.write_item(
            &container,
            WriteMode::Replace(id.to_string()),
            pk("p"),
            body,
            None,
        )
        .await
        .expect("replace");
    }
    let patch = json!({"operations": [{"op": "incr", "path": "/n", "value": 2}]});
    b.patch_item(&container, pk("p"), "x", patch, None)
        .await
        .expect("patch");
    let operations = parse_batch(&json!([
        {"operationType": "Create", "resourceBody": {"id": "y", "pk": "p"}},
        {"operationType": "Read", "id": "x"},
        {"operationType": "Delete", "id": "t"}
    ]))
    .expect("parse");
    let (_, succeeded, _) = b
        .execute_batch(&container, pk("p"), operations, BatchMode::Atomic)
        .await
        .expect("batch");
    assert!(succeeded);
    b.delete_item(&container, pk("p"), "x", None)
        .await
        .expect("delete");
    let (one, several, across) = store.bucket_statements();
    assert!(
        one - before.0 >= 20,
        "statements counted: {}",
        one - before.0
    );
    assert_eq!(several - before.1, 0, "statements across buckets");
    assert_eq!(across - before.2, 0, "commits across buckets");
    // And the count is live: a cross-partition query scans every bucket.
    let request = QueryRequest {
        text: "SELECT * FROM c".into(),
        enable_cross_partition: true,
        ..QueryRequest::default()
    };
    b.query_items(&container, &request).await.expect("query");
    assert!(
        store.bucket_statements().1 > several,
        "a cross-partition scan spans buckets"
    );
}
