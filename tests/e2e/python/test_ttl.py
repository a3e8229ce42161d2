"""Time to live, as docs/ttl.md describes it.

The expiring items are written once, by the `world` fixture, and every test waits on the same
clock, so the whole module sleeps about six seconds instead of a few seconds per test.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pytest
from azure.core import MatchConditions
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import CosmosHttpResponseError, CosmosResourceNotFoundError

from conftest import unique_id

SHORT_TTL_SECS = 2
RESET_TTL_SECS = 3
# How long after an item's expiry instant a test waits before it expects the item gone; it
# covers only the time between the client's clock and the server's acknowledgement.
MARGIN_SECS = 0.6
TTL_MAX = 2147483647


@dataclass
class World:
    database: object
    containers: dict = field(default_factory=dict)
    # When each write was acknowledged, on time.monotonic(): the latest the server can have
    # stamped it, so `acked + ttl` is the latest it can expire.
    acked: dict = field(default_factory=dict)

    def write(self, container_name: str, body: dict, upsert: bool = False) -> dict:
        container = self.containers[container_name]
        written = container.upsert_item(body) if upsert else container.create_item(body)
        self.acked[(container_name, body["id"])] = time.monotonic()
        return written

    def sleep_until_expired(self, container_name: str, item_id: str, ttl_secs: float) -> None:
        remaining = self.acked[(container_name, item_id)] + ttl_secs + MARGIN_SECS - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)


def read(container, item_id, pk="p"):
    return container.read_item(item_id, partition_key=pk)


def assert_absent(container, item_id, pk="p"):
    with pytest.raises(CosmosResourceNotFoundError) as error:
        container.read_item(item_id, partition_key=pk)
    assert error.value.status_code == 404


@pytest.fixture(scope="module")
def world(client):
    database = client.create_database(unique_id("ttl"))
    world = World(database)
    definitions = {
        "default": SHORT_TTL_SECS,   # items expire after SHORT_TTL_SECS unless they say otherwise
        "on": -1,                    # TTL on, nothing expires by default
        "off": None,                 # TTL off, the item's ttl is an ordinary property
        "reset": RESET_TTL_SECS,
        "query": SHORT_TTL_SECS,
        "switch": SHORT_TTL_SECS,
    }
    # Containers first, so that the items below are all written within a few milliseconds.
    for name, default_ttl in definitions.items():
        world.containers[name] = database.create_container(
            name, partition_key=PartitionKey(path="/pk"), default_ttl=default_ttl)

    for item_id in ("plain", "replace-me", "delete-me", "recreate-me", "upsert-me"):
        world.write("default", {"id": item_id, "pk": "p", "generation": 1})
    world.write("default", {"id": "forever", "pk": "p", "ttl": -1})
    world.write("default", {"id": "long", "pk": "p", "ttl": 600})
    world.write("on", {"id": "plain", "pk": "p"})
    world.write("on", {"id": "short", "pk": "p", "ttl": SHORT_TTL_SECS})
    world.write("off", {"id": "short", "pk": "p", "ttl": 1})
    world.write("off", {"id": "zero", "pk": "p", "ttl": 0})
    world.write("off", {"id": "text", "pk": "p", "ttl": "5"})
    world.write("reset", {"id": "touched", "pk": "p", "v": 1})
    world.write("reset", {"id": "untouched", "pk": "p", "v": 1})
    world.write("reset", {"id": "patched", "pk": "p", "v": 1})
    for n in range(6):
        body = {"id": f"q{n}", "pk": f"p{n % 2}", "n": n}
        if n < 2:
            body["ttl"] = -1
        world.write("query", body)
    world.write("switch", {"id": "old", "pk": "p"})
    world.write("switch", {"id": "keeper", "pk": "p", "ttl": -1})
    yield world
    client.delete_database(database.id)


# Runs first: everything is visible before its time is up.
def test_items_are_visible_before_they_expire(world):
    containers = world.containers
    for item_id in ("plain", "forever", "long"):
        assert read(containers["default"], item_id)["id"] == item_id
    assert read(containers["on"], "short")["ttl"] == SHORT_TTL_SECS
    assert list(containers["query"].query_items("SELECT VALUE COUNT(1) FROM c",
                                                enable_cross_partition_query=True)) == [6]


def test_a_write_restarts_the_countdown(world):
    reset = world.containers["reset"]
    # Rewrite "touched" a little before it would expire.
    world.sleep_until_expired("reset", "touched", RESET_TTL_SECS - 1.5 - MARGIN_SECS)
    world.write("reset", {"id": "touched", "pk": "p", "v": 2}, upsert=True)
    reset.patch_item("patched", partition_key="p", patch_operations=[{"op": "set", "path": "/v", "value": 2}])
    world.acked[("reset", "patched")] = time.monotonic()

    world.sleep_until_expired("reset", "untouched", RESET_TTL_SECS)
    assert_absent(reset, "untouched")
    assert read(reset, "touched")["v"] == 2
    assert read(reset, "patched")["v"] == 2

    world.sleep_until_expired("reset", "touched", RESET_TTL_SECS)
    world.sleep_until_expired("reset", "patched", RESET_TTL_SECS)
    assert_absent(reset, "touched")
    assert_absent(reset, "patched")


def test_container_default_ttl_expires_items(world):
    world.sleep_until_expired("default", "plain", SHORT_TTL_SECS)
    assert_absent(world.containers["default"], "plain")


def test_item_ttl_overrides_the_container_default(world):
    world.sleep_until_expired("on", "short", SHORT_TTL_SECS)
    default, on = world.containers["default"], world.containers["on"]
    assert read(default, "forever")["ttl"] == -1
    assert read(default, "long")["ttl"] == 600
    assert_absent(on, "short")
    assert read(on, "plain")["id"] == "plain"


def test_item_ttl_is_ignored_while_container_ttl_is_off(world):
    world.sleep_until_expired("off", "short", 1)
    off = world.containers["off"]
    assert read(off, "short")["ttl"] == 1
    assert read(off, "zero")["ttl"] == 0
    assert read(off, "text")["ttl"] == "5"
    assert "defaultTtl" not in off.read()


def test_expired_item_is_absent_for_every_operation(world):
    default = world.containers["default"]
    world.sleep_until_expired("default", "replace-me", SHORT_TTL_SECS)
    with pytest.raises(CosmosResourceNotFoundError):
        default.replace_item("replace-me", {"id": "replace-me", "pk": "p", "generation": 2})
    with pytest.raises(CosmosResourceNotFoundError):
        default.delete_item("delete-me", partition_key="p")
    with pytest.raises(CosmosResourceNotFoundError):
        default.patch_item("replace-me", partition_key="p",
                           patch_operations=[{"op": "set", "path": "/generation", "value": 2}])
    assert_absent(default, "replace-me")


def test_expired_item_with_if_match_is_404_not_412(world):
    default = world.containers["default"]
    world.sleep_until_expired("default", "plain", SHORT_TTL_SECS)
    with pytest.raises(CosmosResourceNotFoundError):
        default.replace_item("plain", {"id": "plain", "pk": "p"}, etag='"whatever"',
                             match_condition=MatchConditions.IfNotModified)


def test_an_expired_id_can_be_created_and_upserted_again(world):
    default = world.containers["default"]
    world.sleep_until_expired("default", "recreate-me", SHORT_TTL_SECS)
    created = default.create_item({"id": "recreate-me", "pk": "p", "generation": 2, "ttl": -1})
    assert created["generation"] == 2
    upserted = default.upsert_item({"id": "upsert-me", "pk": "p", "generation": 2, "ttl": -1})
    assert upserted["generation"] == 2
    assert read(default, "recreate-me")["generation"] == 2
    assert read(default, "upsert-me")["generation"] == 2


def test_queries_and_read_feed_skip_expired_items(world):
    query = world.containers["query"]
    for n in range(2, 6):
        world.sleep_until_expired("query", f"q{n}", SHORT_TTL_SECS)
    rows = list(query.query_items("SELECT * FROM c", enable_cross_partition_query=True))
    assert sorted(row["id"] for row in rows) == ["q0", "q1"]
    assert list(query.query_items("SELECT VALUE COUNT(1) FROM c", enable_cross_partition_query=True)) == [2]
    assert list(query.query_items("SELECT VALUE COUNT(1) FROM c", partition_key="p0")) == [1]
    assert list(query.query_items("SELECT VALUE c.id FROM c WHERE c.n >= 0 ORDER BY c.n DESC",
                                  enable_cross_partition_query=True)) == ["q1", "q0"]
    assert sorted(item["id"] for item in query.read_all_items()) == ["q0", "q1"]


def test_expired_items_leave_the_storage_usage(world):
    query = world.containers["query"]
    for n in range(2, 6):
        world.sleep_until_expired("query", f"q{n}", SHORT_TTL_SECS)
    query.read(populate_quota_info=True)
    usage = query.client_connection.last_response_headers["x-ms-resource-usage"]
    fields = dict(part.split("=", 1) for part in usage.split(";") if "=" in part)
    assert fields["documentsCount"] == "2", usage


def test_turning_ttl_off_does_not_bring_expired_items_back(world):
    switch = world.containers["switch"]
    world.sleep_until_expired("switch", "old", SHORT_TTL_SECS)
    assert_absent(switch, "old")

    switched = world.database.replace_container(switch, partition_key=PartitionKey(path="/pk"))
    assert "defaultTtl" not in switched.read()
    assert_absent(switched, "old")
    assert [item["id"] for item in switched.read_all_items()] == ["keeper"]

    # With TTL off an item's own ttl means nothing.
    world.write("switch", {"id": "fresh", "pk": "p", "ttl": 1})
    world.sleep_until_expired("switch", "fresh", 1)
    assert read(switched, "fresh")["ttl"] == 1
    assert_absent(switched, "old")


@pytest.mark.parametrize("default_ttl", [0, -2, "5", 1.5, TTL_MAX + 1])
def test_invalid_default_ttl_is_400(database, default_ttl):
    with pytest.raises(CosmosHttpResponseError) as error:
        database.create_container(unique_id("bad"), partition_key=PartitionKey(path="/pk"),
                                  default_ttl=default_ttl)
    assert error.value.status_code == 400
    assert "defaultTtl" in str(error.value) and "invalid" in str(error.value)
    if default_ttl == 0:
        assert "The input defaultTtl '0' is invalid" in str(error.value)
    assert list(database.list_containers()) == []


@pytest.mark.parametrize("default_ttl", [0, -2, "5"])
def test_invalid_default_ttl_on_replace_is_400_and_keeps_the_old_setting(database, default_ttl):
    container = database.create_container("ttl", partition_key=PartitionKey(path="/pk"), default_ttl=60)
    with pytest.raises(CosmosHttpResponseError) as error:
        database.replace_container(container, partition_key=PartitionKey(path="/pk"), default_ttl=default_ttl)
    assert error.value.status_code == 400
    assert container.read()["defaultTtl"] == 60


def test_boundary_ttl_values_are_accepted(database):
    container = database.create_container("max", partition_key=PartitionKey(path="/pk"), default_ttl=TTL_MAX)
    assert container.read()["defaultTtl"] == TTL_MAX
    container.create_item({"id": "max", "pk": "p", "ttl": TTL_MAX})
    container.create_item({"id": "one", "pk": "p", "ttl": 1})
    container.create_item({"id": "never", "pk": "p", "ttl": -1})
    assert read(container, "max")["ttl"] == TTL_MAX


@pytest.mark.parametrize("ttl", [0, None, -5, 1.5, "5", TTL_MAX + 1], ids=repr)
def test_invalid_item_ttl_in_a_ttl_container_is_400(database, ttl):
    container = database.create_container("on", partition_key=PartitionKey(path="/pk"), default_ttl=-1)
    with pytest.raises(CosmosHttpResponseError) as error:
        container.create_item({"id": "bad", "pk": "p", "ttl": ttl})
    assert error.value.status_code == 400
    assert "ttl" in str(error.value) and "invalid" in str(error.value)
    assert_absent(container, "bad")

    container.create_item({"id": "good", "pk": "p"})
    with pytest.raises(CosmosHttpResponseError) as error:
        container.upsert_item({"id": "good", "pk": "p", "ttl": ttl})
    assert error.value.status_code == 400
    assert "ttl" not in read(container, "good")


def test_ttl_cannot_be_combined_with_indexing_mode_none(database):
    with pytest.raises(CosmosHttpResponseError) as error:
        database.create_container("unindexed", partition_key=PartitionKey(path="/pk"), default_ttl=10,
                                  indexing_policy={"indexingMode": "none", "automatic": False})
    assert error.value.status_code == 400
    container = database.create_container("unindexed", partition_key=PartitionKey(path="/pk"),
                                          indexing_policy={"indexingMode": "none", "automatic": False})
    with pytest.raises(CosmosHttpResponseError) as error:
        database.replace_container(container, partition_key=PartitionKey(path="/pk"), default_ttl=10,
                                   indexing_policy={"indexingMode": "none", "automatic": False})
    assert error.value.status_code == 400
