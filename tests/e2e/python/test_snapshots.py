"""Named snapshots through the official Python SDK: save the data a test starts from, change it
every way a test might (items, a new container, a dropped database, TTL), restore, and the SDK
sees exactly the saved state again, twice; snapshots saved after the one restored are gone."""

import subprocess

import pytest
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import CosmosResourceNotFoundError

from conftest import make_client, unique_id
from lethedb_server import binary_path
from signed_http import RawClient

SNAPSHOTS = "/_lethedb/snapshots"

@pytest.fixture(scope="module")
def server(start_server):
    # A server of its own: a restore returns the whole store, every test's data with it.
    return start_server()

@pytest.fixture
def raw(server):
    client = RawClient(server.endpoint, server.key)

    def call(verb, path=""):
        return client.request(verb, SNAPSHOTS + path, signed_as=SNAPSHOTS)
    return call

def state(client):
    """Every database, container and item the SDK sees, by id."""
    seen = {}
    for database in client.list_databases():
        proxy = client.get_database_client(database["id"])
        for container in proxy.list_containers():
            items = proxy.get_container_client(container["id"]).read_all_items()
            seen[(database["id"], container["id"])] = sorted((item["id"], item.get("n")) for item in items)
    return seen

def test_a_restore_brings_back_exactly_the_saved_state(server, raw):
    client = make_client(server)
    database = client.create_database(unique_id("snap"))
    container = database.create_container("c", PartitionKey(path="/pk"), default_ttl=-1)
    for n in range(300):
        container.create_item({"id": f"i{n}", "pk": f"p{n % 7}", "n": n})
    saved = state(client)
    answer = raw("POST", "/start")
    assert answer.status_code == 201, answer.text

    container.upsert_item({"id": "i1", "pk": "p1", "n": -1})
    container.delete_item("i2", partition_key="p2")
    container.create_item({"id": "short", "pk": "p0", "ttl": 1})
    database.create_container("extra", PartitionKey(path="/pk"))
    client.create_database(unique_id("other"))
    assert state(client) != saved
    answer = raw("POST", "/later")
    assert answer.status_code == 201, answer.text

    for _ in range(2):
        answer = raw("POST", "/start/restore")
        assert answer.status_code == 200, answer.text
        assert state(client) == saved
        container.create_item({"id": "after", "pk": "p0"})
    assert raw("GET").json() == {"snapshots": ["start"]}, "the later snapshot went with the state"
    # Ids and numbering carry on from the restored state without collisions.
    created = container.create_item({"id": "fresh", "pk": "p3", "n": 1})
    assert container.read_item("fresh", partition_key="p3")["_rid"] == created["_rid"]
    assert raw("DELETE", "/start").status_code == 204
    assert raw("POST", "/start/restore").status_code == 404

def test_a_restored_container_that_was_deleted_is_back(server, raw):
    client = make_client(server)
    database = client.create_database(unique_id("gone"))
    container = database.create_container("c", PartitionKey(path="/pk"))
    container.create_item({"id": "a", "pk": "p"})
    assert raw("POST", "/before-drop").status_code == 201
    client.delete_database(database.id)
    with pytest.raises(CosmosResourceNotFoundError):
        container.read_item("a", partition_key="p")
    assert raw("POST", "/before-drop/restore").status_code == 200
    # The same client, whose caches saw the database go, reads the item again.
    assert container.read_item("a", partition_key="p")["id"] == "a"
    assert raw("DELETE", "/before-drop").status_code == 204

def test_bad_names_and_other_keys_are_refused(server, raw):
    assert raw("POST", "/bad%20name").status_code == 400
    assert raw("PUT", "/x").status_code == 405
    other = RawClient(server.endpoint, "a2V5" * 11)
    assert other.request("GET", SNAPSHOTS, signed_as=SNAPSHOTS).status_code == 401


def test_the_command_line_saves_and_restores_a_stopped_store(tmp_path, start_server):
    data_dir = tmp_path / "data"

    def snapshot(*args):
        finished = subprocess.run([str(binary_path()), "snapshot", "--data-dir", str(data_dir), *args],
                                  capture_output=True, text=True, timeout=60)
        return finished.returncode, finished.stdout.split()

    server = start_server(data_dir)
    container = make_client(server).create_database("cli").create_container("c", PartitionKey(path="/pk"))
    container.create_item({"id": "kept", "pk": "p"})
    server.stop()
    assert snapshot("save", "before") == (0, [])
    assert snapshot("list") == (0, ["before"])

    server = start_server(data_dir)
    container = make_client(server).get_database_client("cli").get_container_client("c")
    container.create_item({"id": "dropped", "pk": "p"})
    server.stop()
    assert snapshot("restore", "before")[0] == 0
    assert snapshot("restore", "missing")[0] != 0

    server = start_server(data_dir)
    container = make_client(server).get_database_client("cli").get_container_client("c")
    assert sorted(item["id"] for item in container.read_all_items()) == ["kept"]
    server.stop()


def test_a_restore_forgets_the_vectors_searched_since(server, raw):
    client = make_client(server)
    database = client.create_database(unique_id("vectors"))
    policy = {"vectorEmbeddings": [{"path": "/v", "dataType": "float32", "dimensions": 2,
                                    "distanceFunction": "euclidean"}]}
    container = database.create_container("c", PartitionKey(path="/pk"), vector_embedding_policy=policy,
                                          indexing_policy={"vectorIndexes": [{"path": "/v", "type": "flat"}]})
    container.create_item({"id": "far", "pk": "p", "v": [10.0, 10.0]})
    query = "SELECT TOP 1 c.id FROM c ORDER BY VectorDistance(c.v, [0.0, 0.0])"

    def nearest():
        return [row["id"] for row in container.query_items(query, enable_cross_partition_query=True)]
    assert nearest() == ["far"]
    assert raw("POST", "/vectors").status_code == 201
    container.create_item({"id": "near", "pk": "p", "v": [0.1, 0.1]})
    assert nearest() == ["near"], "the search saw the new item"
    assert raw("POST", "/vectors/restore").status_code == 200
    assert nearest() == ["far"], "the restored store has no such item, and neither has the search"
    # The write after the restore takes the log position "near" had: the search must see it.
    container.create_item({"id": "mid", "pk": "p", "v": [1.0, 1.0]})
    assert nearest() == ["mid"]
    assert raw("DELETE", "/vectors").status_code == 204
