//! The wire answer to a failing disk, over a fault-injecting store: a failed put fails its own
//! request (503) and nothing else; a failed commit (a failed fsync) poisons the store, so no
//! write is acknowledged after it (503 with the reason, until a restart) while reads of what was
//! acknowledged keep working.

use super::{Server, StatusCode};
use lethedb_storage::{FailingStore, FaultPlan, MemoryStore};
use serde_json::json;
use std::sync::Arc;

fn server(plan: FaultPlan) -> Server {
    Server::on_store(
        Arc::new(FailingStore::new(MemoryStore::new(), plan)),
        |_| {},
    )
}

/// Creates items until one is refused; returns the ids acknowledged and the refusal.
async fn fill(server: &Server) -> (Vec<String>, super::Answer) {
    let mut acknowledged = Vec::new();
    for i in 0..200 {
        let id = format!("i{i}");
        let answer = server.create_item(json!({"id": id, "pk": "p"})).await;
        if answer.status != StatusCode::CREATED {
            return (acknowledged, answer);
        }
        acknowledged.push(id);
    }
    panic!("no write failed");
}

#[tokio::test]
async fn after_a_failed_commit_nothing_more_is_acknowledged_and_reads_keep_working() {
    // The catalog's two commits (database, container) succeed; an item's commit fails.
    let server = server(FaultPlan {
        fail_commit: Some(8),
        ..FaultPlan::default()
    });
    server
        .setup(json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}))
        .await;
    let (acknowledged, refused) = fill(&server).await;
    assert!(!acknowledged.is_empty());
    assert_eq!(
        refused.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        refused.body
    );
    assert_eq!(refused.body["code"], "ServiceUnavailable");
    for _ in 0..3 {
        let again = server.create_item(json!({"id": "later", "pk": "p"})).await;
        assert_eq!(again.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            again.body["message"]
                .as_str()
                .unwrap_or_default()
                .contains("restart"),
            "{}",
            again.body
        );
    }
    for id in &acknowledged {
        assert_eq!(
            server.read_item(id, "p").await.status,
            StatusCode::OK,
            "{id}"
        );
    }
    assert_eq!(
        server.read_item("later", "p").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_failed_put_fails_only_its_own_request() {
    let server = server(FaultPlan {
        fail_put: Some(40),
        ..FaultPlan::default()
    });
    server
        .setup(json!({"id": "c", "partitionKey": {"paths": ["/pk"]}}))
        .await;
    let (acknowledged, refused) = fill(&server).await;
    assert_eq!(
        refused.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        refused.body
    );
    // The store is not poisoned: the next write is acknowledged and everything before is there.
    let after = server.create_item(json!({"id": "after", "pk": "p"})).await;
    assert_eq!(after.status, StatusCode::CREATED, "{}", after.body);
    for id in acknowledged.iter().chain(["after".to_string()].iter()) {
        assert_eq!(
            server.read_item(id, "p").await.status,
            StatusCode::OK,
            "{id}"
        );
    }
}
