"""Test data: `--seed` creates databases, containers with their properties and items at start,
and `POST /_lethedb/reset` deletes everything and applies the seed again."""

import json

import pytest
from azure.cosmos.exceptions import CosmosResourceNotFoundError

from conftest import make_client
from signed_http import RawClient

SEED = {"databases": [{"id": "shop", "containers": [{
    "id": "orders", "partitionKey": {"paths": ["/customer"], "kind": "Hash", "version": 2},
    "defaultTtl": -1, "uniqueKeyPolicy": {"uniqueKeys": [{"paths": ["/number"]}]},
    "indexingPolicy": {"excludedPaths": [{"path": "/notes/*"}]},
    "items": [{"id": "o1", "customer": "ada", "number": 1}, {"id": "o2", "customer": "bob", "number": 2}],
    "itemsFile": "more-orders.ndjson",
}]}]}
MORE = [{"id": f"o{n}", "customer": "cy", "number": n} for n in (3, 4, 5)]


@pytest.fixture
def seeded(tmp_path, start_server):
    folder = tmp_path / "seed"
    folder.mkdir()
    (folder / "1-shop.json").write_text(json.dumps(SEED))
    (folder / "more-orders.ndjson").write_text("\n".join(json.dumps(item) for item in MORE) + "\n")
    (folder / "2-audit.json").write_text(json.dumps({"databases": [{"id": "audit", "containers": [
        {"id": "events", "partitionKey": {"paths": ["/day"], "kind": "Hash"}}]}]}))
    return start_server(extra_args=["--seed", str(folder)])


def numbers(container):
    return sorted(row for row in container.query_items("SELECT VALUE c.number FROM c", enable_cross_partition_query=True))


def test_the_seed_is_there_when_the_server_is_ready_and_a_reset_restores_it(seeded):
    client = make_client(seeded)
    orders = client.get_database_client("shop").get_container_client("orders")
    assert numbers(orders) == [1, 2, 3, 4, 5]
    properties = orders.read()
    assert properties["defaultTtl"] == -1
    assert properties["uniqueKeyPolicy"] == {"uniqueKeys": [{"paths": ["/number"]}]}
    assert {"path": "/notes/*"} in properties["indexingPolicy"]["excludedPaths"]
    assert sorted(db["id"] for db in client.list_databases()) == ["audit", "shop"]

    orders.delete_item("o1", partition_key="ada")
    orders.upsert_item({"id": "o2", "customer": "bob", "number": 20})
    client.create_database("scratch")
    reset = RawClient(seeded.endpoint, seeded.key).request("POST", "/_lethedb/reset")
    assert reset.status_code == 200, reset.text
    assert reset.json() == {"deletedDatabases": 3, "seeded": {"databases": 2, "containers": 2, "items": 5}}
    assert numbers(orders) == [1, 2, 3, 4, 5]
    with pytest.raises(CosmosResourceNotFoundError):
        client.get_database_client("scratch").read()


def test_a_reset_without_a_seed_empties_the_account_and_needs_the_master_key(start_server):
    server = start_server()
    client = make_client(server)
    client.create_database_if_not_exists("to-be-reset")
    raw = RawClient(server.endpoint, server.key)
    assert raw.request("GET", "/_lethedb/reset").status_code == 405
    answer = raw.request("POST", "/_lethedb/reset")
    assert answer.status_code == 200, answer.text
    assert answer.json()["seeded"] == {"databases": 0, "containers": 0, "items": 0}
    assert list(client.list_databases()) == []


def test_a_bad_seed_stops_the_server_from_starting(tmp_path, start_server):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"databases": [{"id": "x", "containers": [{"id": "c", "partitionKey": {"paths": ["/a"]}, "defaultTtl": -5}]}]}))
    with pytest.raises(RuntimeError):
        start_server(extra_args=["--seed", str(bad)])
