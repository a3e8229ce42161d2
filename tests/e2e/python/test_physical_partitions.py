"""Physical partitions through the Python SDK: containers whose throughput gives them several
partition key ranges, feed ranges, hierarchical prefix queries, per-range session tokens, and a
split (a throughput increase) while a query is being paged."""

from __future__ import annotations

import asyncio

from azure.cosmos import PartitionKey
from azure.cosmos.aio import CosmosClient as AsyncCosmosClient

from conftest import unique_id

ITEMS = 60


def fill(container, count=ITEMS):
    for i in range(count):
        container.upsert_item({"id": f"i{i}", "pk": f"p{i}", "v": i % 7, "n": i})


def test_throughput_gives_the_services_range_count_at_creation(database):
    # Up to 10,000 RU/s one partition; more manual throughput, one per 6,000 (30,000 make 5, as
    # the SDK's own tests count); autoscale, one per 10,000 of its maximum.
    small = database.create_container(unique_id("c"), PartitionKey(path="/pk"), offer_throughput=10000)
    large = database.create_container(unique_id("c"), PartitionKey(path="/pk"), offer_throughput=30000)
    auto = database.create_container(
        unique_id("c"), PartitionKey(path="/pk"), offer_throughput=_autoscale(30000)
    )
    assert len(list(small.read_feed_ranges())) == 1
    assert len(list(large.read_feed_ranges())) == 5
    assert len(list(auto.read_feed_ranges())) == 3


def _autoscale(max_ru):
    from azure.cosmos import ThroughputProperties

    return ThroughputProperties(auto_scale_max_throughput=max_ru)


def test_feed_ranges_split_the_items_between_them(database):
    container = database.create_container(unique_id("c"), PartitionKey(path="/pk"), offer_throughput=30000)
    fill(container)
    seen = []
    per_range = []
    for feed_range in container.read_feed_ranges():
        ids = [d["id"] for d in container.query_items("SELECT * FROM c", feed_range=feed_range)]
        per_range.append(len(ids))
        seen += ids
    assert sorted(seen) == sorted(f"i{i}" for i in range(ITEMS))
    assert sum(1 for n in per_range if n > 0) > 1, per_range
    # An item's feed range (from its partition key) is the range that serves it.
    for i in range(0, ITEMS, 9):
        item_range = container.feed_range_from_partition_key(f"p{i}")
        owners = [
            fr for fr in container.read_feed_ranges() if container.is_feed_range_subset(fr, item_range)
        ]
        assert len(owners) == 1
        ids = [d["id"] for d in container.query_items("SELECT * FROM c", feed_range=owners[0])]
        assert f"i{i}" in ids


def test_cross_partition_queries_page_over_every_range(database):
    one = database.create_container(unique_id("c"), PartitionKey(path="/pk"), offer_throughput=400)
    five = database.create_container(unique_id("c"), PartitionKey(path="/pk"), offer_throughput=30000)
    fill(one)
    fill(five)
    for query in ["SELECT * FROM c", "SELECT c.id FROM c WHERE c.v > 2", "SELECT VALUE c.n FROM c WHERE c.n < 20"]:
        for page_size in (1, 7, 100):
            expected = list(one.query_items(query, enable_cross_partition_query=True, max_item_count=page_size))
            got = list(five.query_items(query, enable_cross_partition_query=True, max_item_count=page_size))
            assert _canonical(got) == _canonical(expected), (query, page_size)


def _canonical(rows):
    """Rows without system properties (each container numbers its items itself), sorted."""

    def strip(row):
        return {k: v for k, v in row.items() if not k.startswith("_")} if isinstance(row, dict) else row

    return sorted((strip(row) for row in rows), key=str)


def test_session_tokens_name_the_range_that_owns_the_item(database):
    container = database.create_container(unique_id("c"), PartitionKey(path="/pk"), offer_throughput=18000)
    ranges = {fr["Range"]["min"]: fr for fr in container.read_feed_ranges()}
    used = set()
    for i in range(20):
        container.create_item({"id": f"i{i}", "pk": f"p{i}"})
        headers = container.client_connection.last_response_headers
        range_id = headers["x-ms-documentdb-partitionkeyrangeid"]
        assert headers["x-ms-session-token"].startswith(f"{range_id}:-1#")
        used.add(range_id)
        # Session reads see the write, whichever range served it.
        assert container.read_item(f"i{i}", partition_key=f"p{i}")["id"] == f"i{i}"
    assert len(used) > 1
    assert len(ranges) == 3


def test_hierarchical_prefix_queries_span_ranges(database):
    container = database.create_container(
        unique_id("h"), PartitionKey(path=["/tenant", "/user"], kind="MultiHash"), offer_throughput=24000
    )
    for i in range(40):
        container.upsert_item({"id": f"i{i}", "tenant": f"t{i % 4}", "user": f"u{i}"})
    got = sorted(d["id"] for d in container.query_items("SELECT * FROM c", partition_key=["t1"]))
    assert got == sorted(f"i{i}" for i in range(40) if i % 4 == 1)
    full = list(container.query_items("SELECT * FROM c", partition_key=["t2", "u6"]))
    assert [d["id"] for d in full] == ["i6"]


def test_a_split_while_paging_loses_and_repeats_nothing(database):
    container = database.create_container(unique_id("c"), PartitionKey(path="/pk"), offer_throughput=12000)
    fill(container)
    pages = container.query_items("SELECT * FROM c", enable_cross_partition_query=True, max_item_count=7).by_page()
    first = list(next(pages))
    assert len(first) == 7
    container.replace_throughput(50000)
    assert len(list(container.read_feed_ranges())) == 5
    rest = [d for page in pages for d in page]
    ids = [d["id"] for d in first + rest]
    assert sorted(ids) == sorted(f"i{i}" for i in range(ITEMS))


def test_the_async_client_fans_out_over_ranges(server, database):
    container = database.create_container(unique_id("c"), PartitionKey(path="/pk"), offer_throughput=30000)
    fill(container)

    async def run():
        async with AsyncCosmosClient(server.endpoint, credential=server.key) as client:
            async_container = client.get_database_client(database.id).get_container_client(container.id)
            ranges = [fr async for fr in async_container.read_feed_ranges()]
            items = [d async for d in async_container.query_items("SELECT c.id FROM c WHERE c.v = 3")]
            return len(ranges), sorted(d["id"] for d in items)

    count, ids = asyncio.run(run())
    assert count == 5
    assert ids == sorted(f"i{i}" for i in range(ITEMS) if i % 7 == 3)
