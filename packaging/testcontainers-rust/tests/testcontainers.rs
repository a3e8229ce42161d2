//! The README's Rust Testcontainers recipe, run by scripts/packages: the image on a random host
//! port, and the Rust SDK through it with no extra option (the image advertises the host and
//! port each client used).

use azure_core::credentials::Secret;
use azure_data_cosmos::{
    models::ContainerProperties, AccountReference, CosmosClient, RoutingStrategy,
};
use testcontainers::core::{IntoContainerPort, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{GenericImage, ImageExt};

const KEY: &str =
    "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

#[tokio::test]
async fn the_sdk_works_through_a_random_host_port() -> Result<(), Box<dyn std::error::Error>> {
    let lethedb = GenericImage::new("lethedb", "latest")
        .with_exposed_port(8081.tcp())
        .with_wait_for(WaitFor::message_on_stdout(r#"{"ready":true"#))
        .with_cmd(["serve", "--in-memory"])
        .start()
        .await?;
    let port = lethedb.get_host_port_ipv4(8081.tcp()).await?;
    // The engine is on this machine: its mapped ports are on loopback (`get_host()` names the
    // bridge's gateway instead when the tests themselves run in a container).
    let endpoint = format!("http://127.0.0.1:{port}/");
    let account =
        AccountReference::with_authentication_key(endpoint.parse()?, Secret::from(KEY.to_string()));
    let client = CosmosClient::builder()
        .build(account, RoutingStrategy::ProximityTo("West US".into()))
        .await?;
    client.create_database("shop", None).await?;
    let shop = client.database_client("shop");
    shop.create_container(ContainerProperties::new("orders", "/customer".into()), None)
        .await?;
    let orders = shop.container_client("orders", None).await?;
    let order = serde_json::json!({"id": "o1", "customer": "ada", "total": 42});
    orders.upsert_item("ada", "o1", &order, None).await?;
    let read: serde_json::Value = orders.read_item("ada", "o1", None).await?.into_model()?;
    assert_eq!(read["total"], 42);
    Ok(())
}
