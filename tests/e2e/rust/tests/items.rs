//! Items through the Rust SDK: its bodies go out in the Cosmos binary JSON encoding.

use azure_data_cosmos::models::ContainerProperties;
use lethedb_rust_sdk_e2e::Server;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Order {
    id: String,
    pk: String,
    total: f64,
    count: i64,
    tags: Vec<String>,
}

#[tokio::test]
async fn items_round_trip_through_binary_bodies() {
    let server = Server::start();
    let client = server.client().await;
    let database = server.database(&client).await;
    database
        .create_container(ContainerProperties::new("orders", "/pk".into()), None)
        .await
        .expect("container");
    let container = database.container_client("orders", None).await.expect("client");
    let order = Order {
        id: "o1".into(),
        pk: "p".into(),
        total: 12.5,
        count: -3,
        tags: vec!["a".into(), "é😀".into()],
    };
    container
        .create_item("p", "o1", &order, None)
        .await
        .expect("create");
    let read: Order = container
        .read_item("p", "o1", None)
        .await
        .expect("read")
        .into_model()
        .expect("model");
    assert_eq!(read, order);
}
