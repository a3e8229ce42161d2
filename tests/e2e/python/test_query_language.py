"""The query language through the official Python SDK: the clauses apps generate, answered by
the server as the service answers them, across partitions and across pages."""

from __future__ import annotations

import pytest
from azure.cosmos import PartitionKey

from conftest import unique_id

PEOPLE = [
    {"id": "1", "pk": "a", "name": "Ada", "city": "London", "age": 36, "tags": ["math", "code"]},
    {"id": "2", "pk": "a", "name": "Alan", "city": "London", "age": 41, "tags": ["code"]},
    {"id": "3", "pk": "b", "name": "Grace", "city": "New York", "age": 85, "tags": ["navy", "code"]},
    {"id": "4", "pk": "b", "name": "Edsger", "city": "Austin", "age": 72, "tags": []},
    {"id": "5", "pk": "c", "name": "Barbara", "city": "New York", "age": 60, "tags": ["code"]},
    {"id": "6", "pk": "c", "name": "Donald", "city": "Stanford", "age": 84},
]


@pytest.fixture
def people(database):
    # ORDER BY c.city ASC, c.age DESC needs a composite index, as on the service (docs/indexing.md).
    policy = {"compositeIndexes": [[{"path": "/city", "order": "ascending"}, {"path": "/age", "order": "descending"}]]}
    container = database.create_container(unique_id("coll"), partition_key=PartitionKey(path="/pk"),
                                          indexing_policy=policy)
    for person in PEOPLE:
        container.create_item(person)
    return container


def query(container, text, **kwargs):
    kwargs.setdefault("enable_cross_partition_query", True)
    return list(container.query_items(text, **kwargs))


def test_order_by_several_fields(people):
    rows = query(people, "SELECT c.name FROM c ORDER BY c.city ASC, c.age DESC")
    assert [r["name"] for r in rows] == ["Edsger", "Alan", "Ada", "Grace", "Barbara", "Donald"]


def test_offset_limit(people):
    rows = query(people, "SELECT VALUE c.name FROM c ORDER BY c.age OFFSET 1 LIMIT 3")
    assert rows == ["Alan", "Barbara", "Edsger"]


def test_top(people):
    assert query(people, "SELECT TOP 2 VALUE c.age FROM c ORDER BY c.age DESC") == [85, 84]


def test_distinct(people):
    assert sorted(query(people, "SELECT DISTINCT VALUE c.city FROM c")) == ["Austin", "London", "New York", "Stanford"]


def test_group_by_with_aggregates(people):
    # Across partitions the service's plan needs GroupBy, which the Python SDK does not declare:
    # refused, as the service refuses it. Within one partition the server answers it whole.
    from azure.cosmos.exceptions import CosmosHttpResponseError
    text = "SELECT c.city, COUNT(1) AS people, MAX(c.age) AS oldest FROM c GROUP BY c.city"
    with pytest.raises(CosmosHttpResponseError) as refused:
        query(people, text)
    assert refused.value.status_code == 400
    assert "Query contained GroupBy, which the calling client does not support." in str(refused.value)
    rows = query(people, text, partition_key="b")
    assert sorted((r["city"], r["people"], r["oldest"]) for r in rows) == [("Austin", 1, 72), ("New York", 1, 85)]


def test_aggregates_with_and_without_value(people):
    from azure.cosmos.exceptions import CosmosHttpResponseError
    assert query(people, "SELECT VALUE COUNT(1) FROM c") == [6]
    assert query(people, "SELECT VALUE SUM(c.age) FROM c") == [378]
    assert query(people, "SELECT VALUE AVG(c.age) FROM c WHERE c.city = 'London'") == [38.5]
    # Non-VALUE aggregates across partitions need NonValueAggregate, which this SDK does not declare.
    text = "SELECT MIN(c.age) AS youngest, MAX(c.age) AS oldest FROM c"
    with pytest.raises(CosmosHttpResponseError) as refused:
        query(people, text)
    assert "NonValueAggregate" in str(refused.value)
    assert query(people, text, partition_key="a") == [{"youngest": 36, "oldest": 41}]
    assert query(people, "SELECT VALUE COUNT(1) FROM c", partition_key="b") == [2]


def test_join_and_functions(people):
    rows = query(people, "SELECT c.name, t AS tag FROM c JOIN t IN c.tags WHERE t = @tag", parameters=[{"name": "@tag", "value": "code"}])
    assert sorted(r["name"] for r in rows) == ["Ada", "Alan", "Barbara", "Grace"]
    rows = query(people, "SELECT VALUE UPPER(c.name) FROM c WHERE STARTSWITH(c.name, 'a', true) AND ARRAY_CONTAINS(c.tags, 'math')")
    assert rows == ["ADA"]
    assert query(people, "SELECT VALUE c.id FROM c WHERE NOT IS_DEFINED(c.tags)") == ["6"]


def test_paging_an_order_by_across_partitions(people):
    # Across partitions the SDK merges the ranges itself; its continuation token is a range's
    # (read ahead), so resuming is checked within one partition, which the server pages.
    pages = [list(page) for page in people.query_items(
        "SELECT c.id, c.age FROM c ORDER BY c.age", enable_cross_partition_query=True, max_item_count=4).by_page()]
    assert all(len(page) <= 4 for page in pages)
    assert [r["age"] for page in pages for r in page] == sorted(p["age"] for p in PEOPLE)
    pages = people.query_items("SELECT c.id, c.age FROM c ORDER BY c.age DESC", partition_key="a",
                               max_item_count=1).by_page()
    first = list(next(pages))
    token = pages.continuation_token
    assert token
    rest = people.query_items("SELECT c.id, c.age FROM c ORDER BY c.age DESC", partition_key="a",
                              max_item_count=1).by_page(token)
    assert [r["age"] for r in first + [row for page in rest for row in page]] == [41, 36]


def test_unsupported_and_invalid_queries_are_400(people):
    from azure.cosmos.exceptions import CosmosHttpResponseError
    for text in ["SELECT * FROM c WHERE", "SELECT * FROM c WHERE udf.f(c.a)", "SELECT NOSUCHFUNCTION(c.a) FROM c"]:
        with pytest.raises(CosmosHttpResponseError) as failed:
            query(people, text)
        assert failed.value.status_code == 400, text


def test_count_if_make_list_and_make_set(people):
    """COUNTIF across partitions, added up by the SDK; MAKELIST and MAKESET in one partition.
    Across partitions the Python SDK cannot merge lists (it does not declare ListAndSetAggregate),
    so the service refuses them there, naming the feature."""
    from azure.cosmos.exceptions import CosmosHttpResponseError
    assert query(people, "SELECT VALUE COUNTIF(c.age > 50) FROM c") == [4]
    assert query(people, "SELECT VALUE COUNTIF(c.city = 'Paris') FROM c") == [0]
    names = query(people, "SELECT VALUE MakeList(c.name) FROM c", partition_key="a")
    assert len(names) == 1 and sorted(names[0]) == ["Ada", "Alan"]
    assert query(people, "SELECT VALUE MAKESET(c.city) FROM c", partition_key="a") == [["London"]]
    with pytest.raises(CosmosHttpResponseError) as refused:
        query(people, "SELECT VALUE MakeList(c.name) FROM c")
    assert refused.value.status_code == 400
    assert "ListAndSetAggregate" in str(refused.value)
