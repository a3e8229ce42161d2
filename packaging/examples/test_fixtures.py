# pip install lethedb azure-cosmos pytest: the fixtures come with the wheel.
from azure.cosmos import PartitionKey


def test_orders(lethedb_client):  # a fresh in-memory server for this test, and a client
    orders = lethedb_client.create_database("shop").create_container("orders", PartitionKey("/customer"))
    orders.upsert_item({"id": "o1", "customer": "ada", "total": 42})
    assert orders.read_item("o1", partition_key="ada")["total"] == 42


def test_each_test_starts_empty(lethedb_client):
    assert list(lethedb_client.list_databases()) == []


def test_one_server_for_the_session(lethedb_session_server):
    # endpoint and key, for any client: http://127.0.0.1:PORT/ and the emulator's key
    assert lethedb_session_server.endpoint.startswith("http://127.0.0.1:")
    assert lethedb_session_server.key.endswith("==")
