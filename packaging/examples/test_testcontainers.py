# pip install testcontainers azure-cosmos pytest; the image lethedb (scripts/release).
import pytest
from azure.cosmos import CosmosClient, PartitionKey
from testcontainers.core.container import DockerContainer
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="


@pytest.fixture(scope="session")
def cosmos():
    container = (
        DockerContainer("lethedb")
        .with_command("serve --in-memory")
        .with_exposed_ports(8081)  # a random host port
        .waiting_for(LogMessageWaitStrategy('^{"ready":true'))
    )
    with container:
        host, port = container.get_container_host_ip(), container.get_exposed_port(8081)
        yield CosmosClient(f"http://{host}:{port}/", KEY)  # no other option needed


def test_through_a_random_host_port(cosmos):
    orders = cosmos.create_database("shop").create_container("orders", PartitionKey("/customer"))
    orders.upsert_item({"id": "o1", "customer": "ada", "total": 42})
    query = "SELECT VALUE c.total FROM c WHERE c.customer = 'ada'"
    assert list(orders.query_items(query, enable_cross_partition_query=True)) == [42]
