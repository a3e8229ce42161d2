"""Database lifecycle through azure-cosmos: create, read, list, query, create-if-not-exists, delete."""

import pytest
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import CosmosResourceExistsError, CosmosResourceNotFoundError

from conftest import unique_id


def test_create_then_read_returns_system_properties(client):
    database_id = unique_id("db")
    created = client.create_database(database_id)
    try:
        properties = created.read()
        assert properties["id"] == database_id
        for name in ("_rid", "_self", "_etag", "_ts"):
            assert properties.get(name), f"missing {name} in {properties}"
        assert client.get_database_client(database_id).read()["_rid"] == properties["_rid"]
    finally:
        client.delete_database(database_id)


def test_create_duplicate_is_409(client, database):
    with pytest.raises(CosmosResourceExistsError) as error:
        client.create_database(database.id)
    assert error.value.status_code == 409


def test_list_and_query_find_the_database(client):
    ids = [unique_id("db") for _ in range(3)]
    for database_id in ids:
        client.create_database(database_id)
    try:
        listed = {properties["id"] for properties in client.list_databases()}
        assert set(ids) <= listed

        queried = list(client.query_databases(
            query="SELECT * FROM root r WHERE r.id = @id",
            parameters=[{"name": "@id", "value": ids[1]}],
        ))
        assert [properties["id"] for properties in queried] == [ids[1]]
    finally:
        for database_id in ids:
            client.delete_database(database_id)


def test_create_if_not_exists_twice_returns_the_same_database(client):
    database_id = unique_id("db")
    try:
        first = client.create_database_if_not_exists(database_id).read()
        second = client.create_database_if_not_exists(database_id).read()
        assert first["id"] == second["id"] == database_id
        assert first["_rid"] == second["_rid"]
    finally:
        client.delete_database(database_id)


def test_delete_removes_database_and_its_containers(client):
    database_id = unique_id("db")
    database = client.create_database(database_id)
    container = database.create_container("inner", partition_key=PartitionKey(path="/pk"))
    container.create_item({"id": "a", "pk": "p"})

    client.delete_database(database_id)

    with pytest.raises(CosmosResourceNotFoundError) as error:
        client.get_database_client(database_id).read()
    assert error.value.status_code == 404
    with pytest.raises(CosmosResourceNotFoundError):
        client.get_database_client(database_id).get_container_client("inner").read()
    assert database_id not in {properties["id"] for properties in client.list_databases()}

    # A database re-created under the same id starts empty: nothing beneath survived the delete.
    reborn = client.create_database(database_id)
    try:
        assert list(reborn.list_containers()) == []
        with pytest.raises(CosmosResourceNotFoundError):
            reborn.get_container_client("inner").read_item("a", partition_key="p")
    finally:
        client.delete_database(database_id)


def test_delete_missing_database_is_404(client):
    with pytest.raises(CosmosResourceNotFoundError) as error:
        client.delete_database(unique_id("missing"))
    assert error.value.status_code == 404
