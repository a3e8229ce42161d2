"""Partition keys: every JSON type of value, absent values, nested paths and hierarchical keys."""

import pytest
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import CosmosResourceNotFoundError
from azure.cosmos.partition_key import NonePartitionKeyValue, NullPartitionKeyValue


# (label, item fields, the partition key argument that addresses the item)
VALUES = [
    ("string", {"pk": "s"}, "s"),
    ("integer", {"pk": 42}, 42),
    ("float", {"pk": 4.5}, 4.5),
    ("true", {"pk": True}, True),
    ("false", {"pk": False}, False),
    ("null", {"pk": None}, None),  # The SDK sends [null].
    ("absent", {}, NonePartitionKeyValue),  # The SDK sends [{}].
]


def test_same_id_in_each_kind_of_partition_is_a_distinct_item(container):
    for label, fields, _ in VALUES:
        container.create_item({"id": "same", "label": label, **fields})

    for label, fields, key in VALUES:
        item = container.read_item("same", partition_key=key)
        assert item["label"] == label
        assert {name: item[name] for name in fields} == fields
        if not fields:
            assert "pk" not in item

    everything = list(container.query_items("SELECT c.label FROM c", enable_cross_partition_query=True))
    assert sorted(row["label"] for row in everything) == sorted(label for label, _, _ in VALUES)


@pytest.mark.parametrize("label,fields,key", VALUES, ids=[label for label, _, _ in VALUES])
def test_partition_scoped_query_and_delete_by_value(container, label, fields, key):
    container.create_item({"id": "one", "label": label, **fields})
    container.create_item({"id": "other", "pk": "elsewhere"})

    # For queries the SDK reads partition_key=None as "no partition key": null needs its sentinel.
    query_key = NullPartitionKeyValue if key is None else key
    rows = list(container.query_items("SELECT * FROM c", partition_key=query_key))
    assert [row["id"] for row in rows] == ["one"]

    container.delete_item("one", partition_key=key)
    with pytest.raises(CosmosResourceNotFoundError):
        container.read_item("one", partition_key=key)
    assert container.read_item("other", partition_key="elsewhere")["id"] == "other"


def test_wrong_partition_key_does_not_find_the_item(container):
    container.create_item({"id": "a", "pk": "1"})
    with pytest.raises(CosmosResourceNotFoundError):
        container.read_item("a", partition_key=1)  # The number 1 is not the string "1".
    with pytest.raises(CosmosResourceNotFoundError):
        container.read_item("a", partition_key=NonePartitionKeyValue)


def test_nested_partition_key_path(database):
    container = database.create_container("nested", partition_key=PartitionKey(path="/a/b"))
    assert container.read()["partitionKey"]["paths"] == ["/a/b"]
    container.create_item({"id": "x", "a": {"b": "deep"}})
    container.create_item({"id": "x", "a": {"c": "no b here"}})

    assert container.read_item("x", partition_key="deep")["a"] == {"b": "deep"}
    assert container.read_item("x", partition_key=NonePartitionKeyValue)["a"] == {"c": "no b here"}
    rows = list(container.query_items("SELECT * FROM c", partition_key="deep"))
    assert [row["a"] for row in rows] == [{"b": "deep"}]


@pytest.fixture
def hierarchical(database):
    return database.create_container(
        "tenants", partition_key=PartitionKey(path=["/tenant", "/user"], kind="MultiHash"))


def test_hierarchical_container_definition(hierarchical):
    key = hierarchical.read()["partitionKey"]
    assert key["paths"] == ["/tenant", "/user"]
    assert key["kind"] == "MultiHash"
    assert key["version"] == 2


def test_hierarchical_items_are_addressed_by_the_full_key(hierarchical):
    hierarchical.create_item({"id": "doc", "tenant": "t1", "user": "u1", "n": 1})
    hierarchical.create_item({"id": "doc", "tenant": "t1", "user": "u2", "n": 2})
    hierarchical.create_item({"id": "doc", "tenant": "t2", "user": "u1", "n": 3})

    assert hierarchical.read_item("doc", partition_key=["t1", "u2"])["n"] == 2
    assert hierarchical.read_item("doc", partition_key=["t2", "u1"])["n"] == 3
    with pytest.raises(CosmosResourceNotFoundError):
        hierarchical.read_item("doc", partition_key=["t2", "u2"])

    replaced = hierarchical.replace_item("doc", {"id": "doc", "tenant": "t1", "user": "u1", "n": 10})
    assert replaced["n"] == 10
    hierarchical.delete_item("doc", partition_key=["t2", "u1"])

    rows = list(hierarchical.query_items("SELECT c.n FROM c", partition_key=["t1", "u1"]))
    assert rows == [{"n": 10}]
    all_rows = list(hierarchical.query_items("SELECT VALUE c.n FROM c", enable_cross_partition_query=True))
    assert sorted(all_rows) == [2, 10]


def test_hierarchical_prefix_query(hierarchical):
    for tenant, user in [("t1", "u1"), ("t1", "u2"), ("t2", "u1")]:
        hierarchical.create_item({"id": f"{tenant}-{user}", "tenant": tenant, "user": user})
    rows = list(hierarchical.query_items("SELECT VALUE c.id FROM c", partition_key=["t1"]))
    assert sorted(rows) == ["t1-u1", "t1-u2"]
