"""The change feed through the Python SDK, unmodified: latest-version mode from every start,
scoped by partition key and feed range, paged; all-versions-and-deletes mode with its shapes;
TTL deletes readable at the expiry instant (a cache kept in sync drops each expired item
within a second); a split while a reader holds a continuation; the async client."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta, timezone

import pytest
from azure.cosmos import PartitionKey
from azure.cosmos.aio import CosmosClient as AsyncCosmosClient
from azure.cosmos.exceptions import CosmosHttpResponseError

from conftest import unique_id

AVAD = "AllVersionsAndDeletes"


def ids(items):
    return sorted(item["id"] for item in items)


def make(database, throughput=400, **kwargs):
    return database.create_container(
        unique_id("cf"), PartitionKey(path="/pk"), offer_throughput=throughput, **kwargs
    )


def test_latest_version_from_each_start(database):
    container = make(database, 18000)
    for i in range(6):
        container.upsert_item({"id": f"i{i}", "pk": f"p{i % 3}", "v": 1})
    container.upsert_item({"id": "i0", "pk": "p0", "v": 2})
    container.delete_item("i1", partition_key="p1")
    everything = list(container.query_items_change_feed(start_time="Beginning"))
    assert ids(everything) == ["i0", "i2", "i3", "i4", "i5"]
    assert [d["v"] for d in everything if d["id"] == "i0"] == [2]
    assert all(isinstance(d["_lsn"], int) for d in everything)
    # Now, then a continuation: only what came after.
    assert list(container.query_items_change_feed(start_time="Now")) == []
    token = container.client_connection.last_response_headers["etag"]
    container.upsert_item({"id": "late", "pk": "p2"})
    assert ids(container.query_items_change_feed(continuation=token)) == ["late"]
    # A point in time.
    time.sleep(1.1)
    since = datetime.now(timezone.utc) - timedelta(milliseconds=50)
    time.sleep(0.1)
    container.upsert_item({"id": "after", "pk": "p0"})
    assert ids(container.query_items_change_feed(start_time=since)) == ["after"]
    # One logical partition, and one feed range.
    assert ids(container.query_items_change_feed(start_time="Beginning", partition_key="p0")) == [
        "after", "i0", "i3"]
    seen = []
    for feed_range in container.read_feed_ranges():
        seen += [d["id"] for d in container.query_items_change_feed(start_time="Beginning", feed_range=feed_range)]
    assert sorted(seen) == ["after", "i0", "i2", "i3", "i4", "i5", "late"]


def test_paging_and_the_legacy_range_path(database):
    container = make(database)
    for i in range(25):
        container.upsert_item({"id": f"i{i:02}", "pk": "p"})
    pages = container.query_items_change_feed(start_time="Beginning", max_item_count=10).by_page()
    sizes = [len(list(page)) for page in pages]
    assert sizes[:3] == [10, 10, 5]
    legacy = list(container.query_items_change_feed(partition_key_range_id="0", is_start_from_beginning=True))
    assert len(legacy) == 25
    # The cursor names a position in each of the range's shards: "<first shard>:<lsn>.<lsn>...".
    first, lsns = container.client_connection.last_response_headers["etag"].strip('"').split(":")
    assert first == "0" and all(lsn.isdigit() for lsn in lsns.split("."))


def test_all_versions_and_deletes_shapes(database):
    container = make(database)
    assert list(container.query_items_change_feed(mode=AVAD)) == []
    token = container.client_connection.last_response_headers["etag"]
    container.create_item({"id": "a", "pk": "p", "v": 1})
    container.upsert_item({"id": "a", "pk": "p", "v": 2})
    container.delete_item("a", partition_key="p")
    entries = list(container.query_items_change_feed(mode=AVAD, continuation=token))
    assert [e["metadata"]["operationType"] for e in entries] == ["create", "replace", "delete"]
    assert entries[1]["current"]["v"] == 2
    assert entries[1]["metadata"]["previousImageLSN"] == entries[0]["metadata"]["lsn"]
    delete = entries[2]
    assert delete["current"] == {} and "previous" not in delete
    assert delete["metadata"]["id"] == "a"
    assert delete["metadata"]["timeToLiveExpired"] is False
    assert delete["metadata"]["partitionKey"] == {"pk": "p"}


def test_a_cache_kept_in_sync_drops_expired_items_within_a_second(database):
    container = make(database, default_ttl=-1)
    list(container.query_items_change_feed(mode=AVAD))
    token = container.client_connection.last_response_headers["etag"]
    cache = {}
    written = {}
    for i in range(5):
        container.upsert_item({"id": f"t{i}", "pk": "p", "ttl": 1 + i % 2})
        written[f"t{i}"] = time.time() + 1 + i % 2
    container.upsert_item({"id": "forever", "pk": "p"})
    dropped = {}
    deadline = time.time() + 6
    while time.time() < deadline and len(dropped) < 5:
        for entry in container.query_items_change_feed(mode=AVAD, continuation=token):
            meta = entry["metadata"]
            if meta["operationType"] == "delete":
                cache.pop(meta["id"], None)
                assert meta["timeToLiveExpired"] is True
                dropped[meta["id"]] = time.time()
            else:
                cache[entry["current"]["id"]] = entry["current"]
        token = container.client_connection.last_response_headers["etag"]
        time.sleep(0.05)
    assert sorted(dropped) == [f"t{i}" for i in range(5)]
    assert list(cache) == ["forever"]
    for item_id, at in dropped.items():
        # Expiry counts from the server's write time, which is before our clock reading.
        assert at - written[item_id] < 1.0, (item_id, at - written[item_id])
    # A latest-version reader never sees them again.
    assert ids(container.query_items_change_feed(start_time="Beginning")) == ["forever"]


def test_a_split_while_a_reader_holds_a_continuation(database):
    container = make(database, 10000)
    for i in range(10):
        container.upsert_item({"id": f"a{i}", "pk": f"p{i}"})
    assert len(list(container.query_items_change_feed(start_time="Beginning"))) == 10
    token = container.client_connection.last_response_headers["etag"]
    container.replace_throughput(40000)
    for i in range(10):
        container.upsert_item({"id": f"b{i}", "pk": f"p{i}"})
    assert ids(container.query_items_change_feed(continuation=token)) == sorted(f"b{i}" for i in range(10))


def test_the_async_client(server, database):
    container = make(database)
    for i in range(3):
        container.upsert_item({"id": f"i{i}", "pk": "p"})

    async def run():
        async with AsyncCosmosClient(server.endpoint, credential=server.key) as client:
            handle = client.get_database_client(database.id).get_container_client(container.id)
            return [d["id"] async for d in handle.query_items_change_feed(start_time="Beginning")]

    assert sorted(asyncio.run(run())) == ["i0", "i1", "i2"]


def test_a_feed_read_on_a_retired_range_is_gone_with_1002(database):
    container = make(database, 10000)
    container.replace_throughput(20000)
    with pytest.raises(CosmosHttpResponseError) as raised:
        container.client_connection.QueryFeed(
            f"dbs/{database.id}/colls/{container.id}/docs", container.id, None, {}, "0"
        )
    assert raised.value.status_code == 410
    assert raised.value.sub_status == 1002
