"""Queries across partitions through the SDK's own pipeline (the query plan, the rewritten query
per partition key range, the client-side merge), sync and async, on containers with one range
(400 RU/s) and five (50,000 RU/s), at page sizes 1, 3 and 100."""

from __future__ import annotations

import asyncio
import json

import pytest
from azure.cosmos import PartitionKey
from azure.cosmos.aio import CosmosClient as AsyncClient
from azure.cosmos.exceptions import CosmosHttpResponseError

from conftest import unique_id

MIXED = [None, False, 2, "2", [2], {"a": 2, "b": 1}, {"b": 1, "a": 2}, "x", 3.5]
ITEMS = [{"id": f"i{n:02}", "pk": f"p{n % 7}", "n": n, "g": "abc"[n % 3], "m": MIXED[n % len(MIXED)]}
         for n in range(30)]
PAGE_SIZES = (1, 3, 100)


@pytest.fixture(scope="module", params=[400, 50000], ids=["one-range", "five-ranges"])
def filled(request, client):
    database = client.create_database(unique_id("pipeline"))
    # ORDER BY c.g ASC, c.n DESC needs a composite index, as on the service (docs/indexing.md).
    policy = {"compositeIndexes": [[{"path": "/g", "order": "ascending"}, {"path": "/n", "order": "descending"}]]}
    container = database.create_container(unique_id("c"), PartitionKey(path="/pk"), offer_throughput=request.param,
                                          indexing_policy=policy)
    for item in ITEMS:
        container.create_item(item)
    yield container
    client.delete_database(database.id)


def pages(container, text, size, **kwargs):
    rows = []
    for page in container.query_items(text, enable_cross_partition_query=True, max_item_count=size, **kwargs).by_page():
        page = list(page)
        assert len(page) <= size
        rows += page
    return rows


def canonical(rows):
    return sorted(json.dumps(row, sort_keys=True) for row in rows)


@pytest.mark.parametrize("size", PAGE_SIZES)
def test_order_by_one_and_several_keys(filled, size):
    assert [r["n"] for r in pages(filled, "SELECT c.n FROM c ORDER BY c.n DESC", size)] == list(range(29, -1, -1))
    rows = pages(filled, "SELECT c.g, c.n FROM c ORDER BY c.g ASC, c.n DESC", size)
    assert [(r["g"], r["n"]) for r in rows] == sorted(((i["g"], i["n"]) for i in ITEMS), key=lambda t: (t[0], -t[1]))
    # The same as the partitions' own answers, merged.
    per_partition = [n for pk in {i["pk"] for i in ITEMS}
                     for n in filled.query_items("SELECT VALUE c.n FROM c ORDER BY c.n", partition_key=pk)]
    assert pages(filled, "SELECT VALUE c.n FROM c ORDER BY c.n", size) == sorted(per_partition)


@pytest.mark.parametrize("size", PAGE_SIZES)
def test_value_aggregates_and_over_no_rows(filled, size):
    ns = [i["n"] for i in ITEMS]
    assert pages(filled, "SELECT VALUE COUNT(1) FROM c", size) == [30]
    assert pages(filled, "SELECT VALUE SUM(c.n) FROM c", size) == [sum(ns)]
    assert pages(filled, "SELECT VALUE MIN(c.n) FROM c", size) == [0]
    assert pages(filled, "SELECT VALUE MAX(c.n) FROM c", size) == [29]
    assert pages(filled, "SELECT VALUE AVG(c.n) FROM c", size) == [sum(ns) / len(ns)]
    assert pages(filled, "SELECT VALUE COUNT(1) FROM c WHERE false", size) == [0]
    assert pages(filled, "SELECT VALUE SUM(c.n) FROM c WHERE false", size) == [0]
    # The Python SDK's aggregator yields None when nothing was aggregated.
    assert pages(filled, "SELECT VALUE MAX(c.n) FROM c WHERE false", size) == [None]
    assert pages(filled, "SELECT VALUE AVG(c.n) FROM c WHERE false", size) == [None]
    # With ORDER BY, which changes nothing for one row.
    assert pages(filled, "SELECT VALUE COUNT(1) FROM c ORDER BY c.n", size) == [30]


def test_non_value_aggregates_and_group_by_are_refused_for_this_sdk(filled):
    for text, feature in [("SELECT COUNT(1) AS n FROM c", "NonValueAggregate"),
                          ("SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g", "GroupBy")]:
        with pytest.raises(CosmosHttpResponseError) as refused:
            pages(filled, text, 100)
        assert refused.value.status_code == 400
        assert f"Query contained {feature}, which the calling client does not support." in str(refused.value)
    # With a partition key the server answers them.
    assert list(filled.query_items("SELECT COUNT(1) AS n FROM c", partition_key="p0")) == [{"n": 5}]


@pytest.mark.parametrize("size", PAGE_SIZES)
def test_distinct_top_and_offset_limit(filled, size):
    assert pages(filled, "SELECT DISTINCT VALUE c.g FROM c ORDER BY c.g", size) == ["a", "b", "c"]
    rows = pages(filled, "SELECT DISTINCT VALUE c.g FROM c", size)
    assert sorted(rows) == ["a", "b", "c"]
    # Mixed types and objects with their members in another order (the SDK's merge drops a
    # null at a range's head, so null is left out here).
    rows = pages(filled, "SELECT DISTINCT VALUE c.m FROM c WHERE NOT IS_NULL(c.m)", size)
    expected = [False, 2, "2", [2], {"a": 2, "b": 1}, "x", 3.5]
    assert canonical(rows) == canonical(expected)
    assert pages(filled, "SELECT TOP 4 VALUE c.n FROM c ORDER BY c.n DESC", size) == [29, 28, 27, 26]
    assert len(pages(filled, "SELECT TOP 5 * FROM c", size)) == 5
    assert pages(filled, "SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 5 LIMIT 7", size) == list(range(5, 12))
    rows = pages(filled, "SELECT VALUE c.n FROM c OFFSET 2 LIMIT 5", size)
    assert len(rows) == 5 and set(rows) <= set(range(30))


def test_the_async_client_runs_the_same_pipeline(filled, server):
    async def run():
        async with AsyncClient(server.endpoint, credential=server.key) as client:
            database_id = filled.container_link.split("/")[1]
            container = client.get_database_client(database_id).get_container_client(filled.id)
            ordered = [r["n"] async for r in container.query_items("SELECT c.n FROM c ORDER BY c.n", max_item_count=3)]
            count = [r async for r in container.query_items("SELECT VALUE COUNT(1) FROM c")]
            top = [r async for r in container.query_items("SELECT TOP 2 VALUE c.n FROM c ORDER BY c.n DESC")]
            return ordered, count, top

    ordered, count, top = asyncio.run(run())
    assert ordered == list(range(30))
    assert count == [30]
    assert top == [29, 28]
