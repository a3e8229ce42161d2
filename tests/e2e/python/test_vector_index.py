"""Approximate vector search through the Python SDK's own pipeline: a container with a
`diskANN` (and one with a `quantizedFlat`) vector index answers `TOP 10 ORDER BY
VectorDistance(...)` from its graph across two ranges, with recall at 10 of at least 0.9
against the exact answer computed here; `bruteForce` gives the exact answer; a deleted item
is never returned."""

import math
import random

import pytest
from azure.cosmos import PartitionKey

from conftest import unique_id

DIMENSIONS = 16
ITEMS = 400
QUERIES = 10


def distance(a, b):
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


def clustered(generator, centres):
    centre = generator.choice(centres)
    return [x + generator.gauss(0, 0.15) for x in centre]


def exact(items, query, count):
    ranked = sorted(items, key=lambda item: distance(item["embedding"], query))
    return [item["id"] for item in ranked[:count]]


@pytest.fixture(scope="module", params=["diskANN", "quantizedFlat"])
def indexed(client, request):
    generator = random.Random(27)
    centres = [[generator.uniform(-1, 1) for _ in range(DIMENSIONS)] for _ in range(12)]
    items = [{"id": f"i{n}", "pk": f"p{n % 9}", "embedding": clustered(generator, centres)}
             for n in range(ITEMS)]
    queries = [clustered(generator, centres) for _ in range(QUERIES)]
    database = client.create_database(unique_id("vector-index"))
    policy = {"vectorEmbeddings": [{"path": "/embedding", "dataType": "float32", "dimensions": DIMENSIONS,
                                    "distanceFunction": "euclidean"}]}
    container = database.create_container(
        unique_id(request.param), partition_key=PartitionKey(path="/pk"), offer_throughput=12000,
        vector_embedding_policy=policy,
        indexing_policy={"vectorIndexes": [{"path": "/embedding", "type": request.param}],
                         "excludedPaths": [{"path": "/embedding/*"}]})
    for item in items:
        container.create_item(item)
    yield container, items, queries
    client.delete_database(database.id)


def search(container, query, brute_force=False):
    text = ("SELECT TOP 10 c.id FROM c ORDER BY VectorDistance(c.embedding, @v, "
            + ("true" if brute_force else "false") + ")")
    rows = container.query_items(text, parameters=[{"name": "@v", "value": query}],
                                 enable_cross_partition_query=True)
    return [row["id"] for row in rows]


def test_the_graph_recalls_the_exact_ten(indexed):
    container, items, queries = indexed
    assert len(list(container.read_feed_ranges())) == 2
    found = 0
    for query in queries:
        rows = search(container, query)
        assert len(rows) == 10
        found += len(set(rows) & set(exact(items, query, 10)))
    assert found / (10 * len(queries)) >= 0.9


def test_brute_force_is_exact(indexed):
    container, items, queries = indexed
    for query in queries[:3]:
        assert search(container, query, brute_force=True) == exact(items, query, 10)


def test_a_deleted_item_is_never_returned(indexed):
    container, items, queries = indexed
    query = queries[0]
    nearest = search(container, query)[0]
    gone = next(item for item in items if item["id"] == nearest)
    container.delete_item(gone["id"], partition_key=gone["pk"])
    items.remove(gone)
    assert nearest not in search(container, query)
    assert nearest not in search(container, query, brute_force=True)
