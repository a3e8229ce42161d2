"""Test data: `--seed` creates databases, containers with their properties and items at start,
`POST /_lethedb/reset` deletes everything and applies the seed again, and `lethedb export`
writes a stopped store as a seed folder that imports the same data."""

import json
import subprocess

import pytest
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import CosmosResourceNotFoundError

from conftest import make_client
from lethedb_server import binary_path, store_args
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


def test_an_export_is_a_seed_that_imports_the_same_data(tmp_path, start_server):
    data_dir = tmp_path / "source" / "data"
    source = start_server(data_dir)
    client = make_client(source)
    shop = client.create_database("shop ü")
    orders = shop.create_container("orders/eu".replace("/", "-"), partition_key=PartitionKey(path="/customer"),
                                   default_ttl=-1, unique_key_policy={"uniqueKeys": [{"paths": ["/number"]}]})
    written = [{"id": f"o{n}", "customer": f"c{n % 3}", "number": n, "note": "line\nbreak é"} for n in range(25)]
    for item in written:
        orders.create_item(item)
    shop.create_container("empty", partition_key=PartitionKey(path="/k"))
    source.stop()

    out = tmp_path / "export"
    finished = subprocess.run([str(binary_path()), "export", *store_args(), "--data-dir", str(data_dir), "--out", str(out)],
                              capture_output=True, text=True, timeout=60)
    assert finished.returncode == 0, finished.stderr
    assert json.loads(finished.stdout) == {"databases": 1, "containers": 2, "items": 25}

    imported = make_client(start_server(extra_args=["--seed", str(out)]))
    copy = imported.get_database_client("shop ü").get_container_client("orders-eu")
    rows = list(copy.query_items("SELECT c.id, c.customer, c.number, c.note FROM c", enable_cross_partition_query=True))
    assert sorted(rows, key=lambda row: row["number"]) == written
    properties = copy.read()
    assert properties["defaultTtl"] == -1
    assert properties["uniqueKeyPolicy"] == {"uniqueKeys": [{"paths": ["/number"]}]}
    assert properties["partitionKey"]["paths"] == ["/customer"]
    assert [c["id"] for c in imported.get_database_client("shop ü").list_containers()].count("empty") == 1


def test_an_import_keeps_each_items_ts_and_the_instant_its_ttl_ends(tmp_path, start_server):
    import time

    data_dir = tmp_path / "source" / "data"
    source = start_server(data_dir)
    container = make_client(source).create_database("timed").create_container(
        "c", partition_key=PartitionKey(path="/pk"), default_ttl=-1)
    lasting = container.create_item({"id": "lasting", "pk": "p", "ttl": 3600})
    short = container.create_item({"id": "short", "pk": "p", "ttl": 3})
    plain = container.create_item({"id": "plain", "pk": "p"})
    source.stop()
    out = tmp_path / "export"
    finished = subprocess.run([str(binary_path()), "export", *store_args(), "--data-dir", str(data_dir), "--out", str(out)],
                              capture_output=True, text=True, timeout=60)
    assert finished.returncode == 0, finished.stderr
    # Past the short item's end: the import must not bring it back.
    time.sleep(max(0.0, short["_ts"] + 3 + 1.1 - time.time()))
    target = tmp_path / "target" / "data"
    finished = subprocess.run([str(binary_path()), "import", *store_args(), "--data-dir", str(target), "--from", str(out)],
                              capture_output=True, text=True, timeout=60)
    assert finished.returncode == 0, finished.stderr
    assert json.loads(finished.stdout) == {"databases": 1, "containers": 1, "items": 2}
    imported = make_client(start_server(target))
    copy = imported.get_database_client("timed").get_container_client("c")
    rows = {item["id"]: item for item in copy.read_all_items()}
    assert sorted(rows) == ["lasting", "plain"], "the expired item stays expired"
    assert rows["lasting"]["_ts"] == lasting["_ts"] and rows["plain"]["_ts"] == plain["_ts"]
    assert "_lastModifiedMs" not in rows["lasting"], "the export's instant is not part of the item"
    assert rows["lasting"]["ttl"] == 3600
