"""Unique keys through the Python SDK (azure-cosmos 4.17.1), as docs/indexing.md describes them:
the policy validated and returned at creation and fixed afterwards (403 on a replace that
changes it), and a value unique per logical partition on every write path: create, upsert,
replace, patch, a transactional batch (which fails whole), a stored procedure; a missing value
counts as null; a value is free again once its holder is deleted or expired.

A violation is the service's 409 with an id conflict's body (CosmosResourceExistsError)."""

from __future__ import annotations

import time

import pytest
from azure.cosmos import PartitionKey, exceptions
from azure.cosmos.exceptions import CosmosBatchOperationError, CosmosHttpResponseError, CosmosResourceExistsError

from conftest import unique_id
from signed_http import RawClient

EMAIL_KEY = {"uniqueKeys": [{"paths": ["/email"]}]}
TTL_SECS = 2
MARGIN_SECS = 0.5


@pytest.fixture
def users(database):
    """A container partitioned on /pk whose /email is unique."""
    return database.create_container(unique_id("users"), partition_key=PartitionKey(path="/pk"),
                                      unique_key_policy=EMAIL_KEY)


def ids(container):
    return sorted(item["id"] for item in container.read_all_items())


def test_the_policy_comes_back_and_an_empty_one_is_the_default(database, users):
    assert users.read()["uniqueKeyPolicy"] == EMAIL_KEY
    plain = database.create_container(unique_id("plain"), partition_key=PartitionKey(path="/pk"))
    assert plain.read()["uniqueKeyPolicy"] == {"uniqueKeys": []}


@pytest.mark.parametrize("policy", [
    {"uniqueKeys": [{"paths": ["/name/*"]}]},
    {"uniqueKeys": [{"paths": ["name"]}]},
    {"uniqueKeys": [{"paths": ["/tags/[]"]}]},
    {"uniqueKeys": [{"paths": ["/id"]}]},
    {"uniqueKeys": [{"paths": [f"/p{i}" for i in range(17)]}]},
    {"uniqueKeys": [{"paths": [f"/k{i}"]} for i in range(11)]},
])
def test_an_invalid_policy_is_a_400(database, policy):
    with pytest.raises(CosmosHttpResponseError) as refused:
        database.create_container(unique_id("bad"), partition_key=PartitionKey(path="/pk"),
                                  unique_key_policy=policy)
    assert refused.value.status_code == 400


def test_the_documented_limits_are_accepted(database):
    most = {"uniqueKeys": [{"paths": [f"/k{i}"]} for i in range(9)] +
            [{"paths": [f"/p{i}" for i in range(16)]}]}
    container = database.create_container(unique_id("most"), partition_key=PartitionKey(path="/pk"),
                                           unique_key_policy=most)
    assert container.read()["uniqueKeyPolicy"] == most


def test_a_replace_cannot_change_the_policy(server, database, users):
    raw = RawClient(server.endpoint, server.key)
    path = f"dbs/{database.id}/colls/{users.id}"
    definition = {"id": users.id, "partitionKey": {"paths": ["/pk"], "kind": "Hash"}, "defaultTtl": 60}
    for changed in [None, {"uniqueKeys": []}, {"uniqueKeys": [{"paths": ["/name"]}]}]:
        body = dict(definition)
        if changed is not None:
            body["uniqueKeyPolicy"] = changed
        answer = raw.request("PUT", path, body=body)
        assert answer.status_code == 403, answer.text
        assert answer.json()["code"] == "Forbidden"
        assert "The unique index cannot be modified." in answer.json()["message"]
    answer = raw.request("PUT", path, body={**definition, "uniqueKeyPolicy": EMAIL_KEY})
    assert answer.status_code == 200, answer.text
    assert users.read()["defaultTtl"] == 60


def test_a_value_is_unique_within_its_logical_partition(users):
    users.create_item({"id": "a", "pk": "p", "email": "x"})
    with pytest.raises(CosmosResourceExistsError) as refused:
        users.create_item({"id": "b", "pk": "p", "email": "x"})
    assert refused.value.status_code == 409
    users.create_item({"id": "b", "pk": "q", "email": "x"})
    users.create_item({"id": "c", "pk": "p", "email": "X"})
    assert ids(users) == ["a", "b", "c"]


def test_missing_values_count_as_null(users):
    users.create_item({"id": "a", "pk": "p"})
    for body in [{"id": "b", "pk": "p"}, {"id": "c", "pk": "p", "email": None}]:
        with pytest.raises(CosmosResourceExistsError):
            users.create_item(body)
    assert ids(users) == ["a"]


def test_upsert_replace_and_patch_are_refused_and_change_nothing(users):
    users.create_item({"id": "a", "pk": "p", "email": "x"})
    users.create_item({"id": "b", "pk": "p", "email": "y"})
    with pytest.raises(CosmosResourceExistsError):
        users.upsert_item({"id": "b", "pk": "p", "email": "x"})
    with pytest.raises(CosmosResourceExistsError):
        users.upsert_item({"id": "n", "pk": "p", "email": "x"})
    with pytest.raises(CosmosResourceExistsError):
        users.replace_item("b", {"id": "b", "pk": "p", "email": "x"})
    with pytest.raises(CosmosResourceExistsError):
        users.patch_item("b", partition_key="p", patch_operations=[{"op": "set", "path": "/email", "value": "x"}])
    assert users.read_item("b", partition_key="p")["email"] == "y"
    assert ids(users) == ["a", "b"]
    # An item may keep its own value; the value it leaves is free at once.
    users.upsert_item({"id": "a", "pk": "p", "email": "x", "n": 1})
    users.replace_item("a", {"id": "a", "pk": "p", "email": "z"})
    users.patch_item("b", partition_key="p", patch_operations=[{"op": "set", "path": "/email", "value": "x"}])
    assert users.read_item("b", partition_key="p")["email"] == "x"


def test_a_value_is_free_once_its_holder_is_deleted(users):
    users.create_item({"id": "a", "pk": "p", "email": "x"})
    users.delete_item("a", partition_key="p")
    users.create_item({"id": "b", "pk": "p", "email": "x"})
    assert ids(users) == ["b"]


def test_a_batch_that_breaks_a_unique_key_fails_whole(users):
    users.create_item({"id": "held", "pk": "p", "email": "h"})
    with pytest.raises(CosmosBatchOperationError) as failed:
        users.execute_item_batch([
            ("create", ({"id": "a", "pk": "p", "email": "x"},)),
            ("create", ({"id": "b", "pk": "p", "email": "x"},)),
        ], partition_key="p")
    assert failed.value.error_index == 1
    assert [r["statusCode"] for r in failed.value.operation_responses] == [424, 409]
    with pytest.raises(CosmosBatchOperationError) as failed:
        users.execute_item_batch([
            ("create", ({"id": "a", "pk": "p", "email": "y"},)),
            ("upsert", ({"id": "b", "pk": "p", "email": "h"},)),
        ], partition_key="p")
    assert [r["statusCode"] for r in failed.value.operation_responses] == [424, 409]
    assert ids(users) == ["held"]


CREATE_ALL = """function (bodies, rethrow) {
    var c = getContext().getCollection();
    var numbers = [];
    next(0);
    function next(i) {
        if (i === bodies.length) { getContext().getResponse().setBody(numbers); return; }
        var accepted = c.createDocument(c.getSelfLink(), bodies[i], function (err) {
            if (err && rethrow) throw err;
            numbers.push(err ? err.number : 0);
            next(i + 1);
        });
        if (!accepted) throw new Error('not accepted');
    }
}"""


def test_a_stored_procedure_meets_the_same_rule(users):
    users.create_item({"id": "held", "pk": "p", "email": "h"})
    users.scripts.create_stored_procedure({"id": "createAll", "body": CREATE_ALL})
    bodies = [{"id": "a", "pk": "p", "email": "h"}, {"id": "b", "pk": "p", "email": "x"},
              {"id": "c", "pk": "p", "email": "x"}]
    numbers = users.scripts.execute_stored_procedure(sproc="createAll", partition_key="p", params=[bodies, False])
    assert numbers == [409, 0, 409]
    assert ids(users) == ["b", "held"]
    bodies = [{"id": "d", "pk": "p", "email": "d"}, {"id": "e", "pk": "p", "email": "x"}]
    with pytest.raises(exceptions.CosmosHttpResponseError) as raised:
        users.scripts.execute_stored_procedure(sproc="createAll", partition_key="p", params=[bodies, True])
    assert raised.value.status_code == 400
    assert raised.value.sub_status == 409
    assert ids(users) == ["b", "held"]


def test_a_value_is_free_once_its_holder_expires(database):
    container = database.create_container(unique_id("expiring"), partition_key=PartitionKey(path="/pk"),
                                          unique_key_policy=EMAIL_KEY, default_ttl=TTL_SECS)
    container.create_item({"id": "a", "pk": "p", "email": "x"})
    acked = time.monotonic()
    with pytest.raises(CosmosResourceExistsError):
        container.create_item({"id": "b", "pk": "p", "email": "x", "ttl": -1})
    # The holder was stamped before the acknowledgement, so it has expired by then + ttl.
    time.sleep(max(0.0, acked + TTL_SECS + MARGIN_SECS - time.monotonic()))
    container.create_item({"id": "b", "pk": "p", "email": "x", "ttl": -1})
    assert ids(container) == ["b"]
    with pytest.raises(CosmosResourceExistsError):
        container.create_item({"id": "c", "pk": "p", "email": "x"})
