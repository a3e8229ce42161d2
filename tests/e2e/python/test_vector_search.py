"""Vector search through the Python SDK's own pipeline: `VectorDistance` scores against a
reference computed here, ORDER BY the closest first by the container's distance function or
the query's, across several ranges (the SDK merges every range's TOP rows), paging, the
refusals, and expired items left out."""

import math
import random
import time

import pytest
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import CosmosHttpResponseError

from conftest import unique_id

DIMENSIONS = 16
FUNCTIONS = ("cosine", "dotproduct", "euclidean")


def score(function, a, b):
    dot = sum(x * y for x, y in zip(a, b))
    if function == "dotproduct":
        return dot
    if function == "euclidean":
        return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def closest(function, items, query, count):
    ranked = sorted(items, key=lambda item: score(function, item["embedding"], query),
                    reverse=function != "euclidean")
    return [item["id"] for item in ranked[:count]]


@pytest.fixture(scope="module")
def vectors(client):
    generator = random.Random(26)
    items = [{"id": f"i{n}", "pk": f"p{n % 7}", "embedding": [generator.uniform(-1, 1) for _ in range(DIMENSIONS)]}
             for n in range(60)]
    database = client.create_database(unique_id("vectors"))
    containers = {}
    for function in FUNCTIONS:
        policy = {"vectorEmbeddings": [{"path": "/embedding", "dataType": "float32", "dimensions": DIMENSIONS,
                                        "distanceFunction": function}]}
        container = database.create_container(
            unique_id(function), partition_key=PartitionKey(path="/pk"), offer_throughput=12000,
            vector_embedding_policy=policy,
            indexing_policy={"vectorIndexes": [{"path": "/embedding", "type": "flat"}],
                             "excludedPaths": [{"path": "/embedding/*"}]})
        for item in items:
            container.create_item(item)
        containers[function] = container
    yield containers, items, [generator.uniform(-1, 1) for _ in range(DIMENSIONS)]
    client.delete_database(database.id)


def search(container, text, **options):
    return list(container.query_items(text, enable_cross_partition_query=True, **options))


@pytest.mark.parametrize("function", FUNCTIONS)
def test_the_containers_function_orders_the_closest_first_across_ranges(vectors, function):
    containers, items, query = vectors
    assert len(list(containers[function].read_feed_ranges())) == 2
    for count in (1, 5, 10):
        rows = search(containers[function],
                      f"SELECT TOP {count} c.id, VectorDistance(c.embedding, @v) AS s FROM c "
                      "ORDER BY VectorDistance(c.embedding, @v)", parameters=[{"name": "@v", "value": query}])
        assert [row["id"] for row in rows] == closest(function, items, query, count)
        by_id = {item["id"]: item for item in items}
        for row in rows:
            assert row["s"] == pytest.approx(score(function, by_id[row["id"]]["embedding"], query), rel=1e-9)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_the_querys_function_overrides_the_containers(vectors, function):
    containers, items, query = vectors
    other = containers["cosine" if function != "cosine" else "euclidean"]
    text = (f"SELECT TOP 7 c.id FROM c ORDER BY VectorDistance(c.embedding, @v, false, "
            f"{{'distanceFunction': '{function}'}})")
    rows = search(other, text, parameters=[{"name": "@v", "value": query}])
    assert [row["id"] for row in rows] == closest(function, items, query, 7)


def test_a_filter_and_a_partition_key_narrow_the_search(vectors):
    containers, items, query = vectors
    rows = list(containers["cosine"].query_items(
        "SELECT TOP 3 c.id FROM c WHERE c.id != 'i0' ORDER BY VectorDistance(c.embedding, @v)",
        parameters=[{"name": "@v", "value": query}], partition_key="p3"))
    wanted = [item for item in items if item["pk"] == "p3" and item["id"] != "i0"]
    assert [row["id"] for row in rows] == closest("cosine", wanted, query, 3)


def test_pages_of_a_vector_search(vectors):
    containers, items, query = vectors
    pages = list(containers["cosine"].query_items(
        "SELECT TOP 8 c.id FROM c ORDER BY VectorDistance(c.embedding, @v)",
        parameters=[{"name": "@v", "value": query}], enable_cross_partition_query=True, max_item_count=3).by_page())
    pages = [list(page) for page in pages]
    assert [len(page) for page in pages] == [3, 3, 2]
    assert [row["id"] for page in pages for row in page] == closest("cosine", items, query, 8)


def test_refusals(vectors):
    containers, _, query = vectors
    with pytest.raises(CosmosHttpResponseError) as error:
        search(containers["cosine"], "SELECT TOP 3 c.id FROM c ORDER BY VectorDistance(c.embedding, @v) DESC",
               parameters=[{"name": "@v", "value": query}])
    assert error.value.status_code == 400
    assert "Specifying a sorting order (ASC or DESC) with VectorDistance function is not supported." in error.value.message
    with pytest.raises(ValueError, match="without TOP or LIMIT"):
        search(containers["cosine"], "SELECT c.id FROM c ORDER BY VectorDistance(c.embedding, @v)",
               parameters=[{"name": "@v", "value": query}])


def test_an_expired_item_is_never_a_result(database):
    policy = {"vectorEmbeddings": [{"path": "/e", "dataType": "float32", "dimensions": 2, "distanceFunction": "cosine"}]}
    container = database.create_container(unique_id("ttl"), partition_key=PartitionKey(path="/pk"), default_ttl=-1,
                                          vector_embedding_policy=policy)
    container.create_item({"id": "fleeting", "pk": "a", "e": [1, 0], "ttl": 1})
    container.create_item({"id": "lasting", "pk": "a", "e": [0.5, 0.5]})
    text = "SELECT TOP 2 VALUE c.id FROM c ORDER BY VectorDistance(c.e, [1, 0])"
    assert search(container, text) == ["fleeting", "lasting"]
    time.sleep(1.2)
    assert search(container, text) == ["lasting"]
