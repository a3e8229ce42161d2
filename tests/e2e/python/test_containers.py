"""Container lifecycle: create, create-if-not-exists, read, list, query, replace, delete."""

import pytest
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import (
    CosmosHttpResponseError,
    CosmosResourceExistsError,
    CosmosResourceNotFoundError,
)

from conftest import unique_id


def test_create_then_read_reports_partition_key_and_indexing_policy(database):
    container = database.create_container("orders", partition_key=PartitionKey(path="/pk"))
    properties = container.read()
    assert properties["id"] == "orders"
    assert properties["partitionKey"]["paths"] == ["/pk"]
    assert properties["partitionKey"]["kind"] == "Hash"
    assert properties["indexingPolicy"]["indexingMode"].lower() == "consistent"
    for name in ("_rid", "_self", "_etag", "_ts"):
        assert properties.get(name), f"missing {name} in {properties}"
    assert "defaultTtl" not in properties


def test_create_duplicate_is_409(database):
    database.create_container("twice", partition_key=PartitionKey(path="/pk"))
    with pytest.raises(CosmosResourceExistsError) as error:
        database.create_container("twice", partition_key=PartitionKey(path="/pk"))
    assert error.value.status_code == 409


def test_create_if_not_exists_returns_the_existing_container(database):
    first = database.create_container_if_not_exists("maybe", partition_key=PartitionKey(path="/pk"))
    first.create_item({"id": "kept", "pk": "p"})
    second = database.create_container_if_not_exists("maybe", partition_key=PartitionKey(path="/pk"))
    assert second.read()["_rid"] == first.read()["_rid"]
    assert second.read_item("kept", partition_key="p")["id"] == "kept"


def test_list_and_query_containers(database):
    for name in ("alpha", "beta", "gamma"):
        database.create_container(name, partition_key=PartitionKey(path="/pk"))
    assert sorted(properties["id"] for properties in database.list_containers()) == ["alpha", "beta", "gamma"]
    queried = list(database.query_containers(
        query="SELECT * FROM root r WHERE r.id = @id",
        parameters=[{"name": "@id", "value": "beta"}],
    ))
    assert [properties["id"] for properties in queried] == ["beta"]


def test_replace_changes_indexing_policy(database):
    container = database.create_container("indexed", partition_key=PartitionKey(path="/pk"))
    container.create_item({"id": "a", "pk": "p", "big": {"blob": "x"}})
    policy = {
        "indexingMode": "consistent",
        "automatic": True,
        "includedPaths": [{"path": "/*"}],
        "excludedPaths": [{"path": "/big/*"}],
    }
    replaced = database.replace_container(container, partition_key=PartitionKey(path="/pk"),
                                          indexing_policy=policy)
    excluded = {entry["path"] for entry in replaced.read()["indexingPolicy"]["excludedPaths"]}
    assert "/big/*" in excluded
    # Replacing the definition keeps the data.
    assert replaced.read_item("a", partition_key="p")["big"] == {"blob": "x"}


def test_replace_with_a_different_partition_key_is_400(database):
    container = database.create_container("fixed", partition_key=PartitionKey(path="/pk"))
    with pytest.raises(CosmosHttpResponseError) as error:
        database.replace_container(container, partition_key=PartitionKey(path="/other"))
    assert error.value.status_code == 400
    assert container.read()["partitionKey"]["paths"] == ["/pk"]


def test_delete_removes_container_and_items(database):
    container = database.create_container("doomed", partition_key=PartitionKey(path="/pk"))
    container.create_item({"id": "a", "pk": "p"})
    database.delete_container("doomed")
    with pytest.raises(CosmosResourceNotFoundError) as error:
        container.read()
    assert error.value.status_code == 404
    assert "doomed" not in {properties["id"] for properties in database.list_containers()}

    again = database.create_container("doomed", partition_key=PartitionKey(path="/pk"))
    assert list(again.read_all_items()) == []


def test_delete_missing_container_is_404(database):
    with pytest.raises(CosmosResourceNotFoundError) as error:
        database.delete_container(unique_id("missing"))
    assert error.value.status_code == 404


def test_computed_properties_are_queried_by_name_and_checked(database):
    computed = [{"name": "cp_lower", "query": "SELECT VALUE LOWER(c.name) FROM c"},
                {"name": "cp_total", "query": "SELECT VALUE c.price * c.count FROM c"}]
    container = database.create_container(unique_id("coll"), partition_key=PartitionKey(path="/pk"),
                                          computed_properties=computed)
    assert container.read()["computedProperties"] == computed
    container.create_item({"id": "1", "pk": "p", "name": "Bob", "price": 2, "count": 3})
    container.create_item({"id": "2", "pk": "p", "name": "al", "price": 10, "count": 1})
    rows = list(container.query_items(
        "SELECT c.id, c.cp_lower FROM c WHERE c.cp_total > 5 ORDER BY c.cp_lower",
        enable_cross_partition_query=True))
    assert rows == [{"id": "2", "cp_lower": "al"}, {"id": "1", "cp_lower": "bob"}]
    everything = list(container.query_items("SELECT * FROM c", partition_key="p"))
    assert all("cp_lower" not in row for row in everything)
    with pytest.raises(CosmosHttpResponseError) as error:
        database.create_container(unique_id("coll"), partition_key=PartitionKey(path="/pk"),
                                  computed_properties=[{"name": "_ts", "query": "SELECT VALUE 1 FROM c"}])
    assert error.value.status_code == 400
