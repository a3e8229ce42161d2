//! The Rust example of the README, kept here so that `cargo test` compiles it: if the SDK's API
//! moves, this fails to build and the README is corrected with it.

use azure_core::credentials::Secret;
use azure_data_cosmos::{
    models::ContainerProperties, AccountReference, CosmosClient, RoutingStrategy,
};

const KEY: &str =
    "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let account = AccountReference::with_authentication_key(
        "http://127.0.0.1:8081/".parse()?,
        Secret::from(KEY.to_string()),
    );
    let client = CosmosClient::builder()
        .build(account, RoutingStrategy::ProximityTo("West US".into()))
        .await?;
    client.create_database("shop", None).await?;
    let db = client.database_client("shop");
    db.create_container(
        ContainerProperties::new("orders", "/customer".into()).with_default_ttl(3600u32),
        None,
    )
    .await?;
    let orders = db.container_client("orders", None).await?;
    let order = serde_json::json!({"id": "o1", "customer": "ada", "total": 42});
    orders.upsert_item("ada", "o1", &order, None).await?;
    let read: serde_json::Value = orders.read_item("ada", "o1", None).await?.into_model()?;
    println!("{read}");
    Ok(())
}
