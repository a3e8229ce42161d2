"""Transactional batch, patch and partition deletes through the official Python SDK."""

from __future__ import annotations

import pytest
from azure.cosmos.exceptions import CosmosBatchOperationError, CosmosHttpResponseError


def test_patch_operations(container):
    container.create_item({"id": "a", "pk": "p", "n": 1, "tags": ["x"], "old": True})
    patched = container.patch_item("a", partition_key="p", patch_operations=[
        {"op": "incr", "path": "/n", "value": 2},
        {"op": "add", "path": "/tags/-", "value": "y"},
        {"op": "set", "path": "/name", "value": "ada"},
        {"op": "remove", "path": "/old"},
    ])
    assert (patched["n"], patched["tags"], patched["name"], "old" in patched) == (3, ["x", "y"], "ada", False)
    with pytest.raises(CosmosHttpResponseError) as failed:
        container.patch_item("a", partition_key="p", patch_operations=[{"op": "set", "path": "/n", "value": 0}],
                             filter_predicate="FROM c WHERE c.n > 100")
    assert failed.value.status_code == 412
    with pytest.raises(CosmosHttpResponseError) as missing:
        container.patch_item("nope", partition_key="p", patch_operations=[{"op": "set", "path": "/n", "value": 0}])
    assert missing.value.status_code == 404


def test_transactional_batch_commits_everything(container):
    container.create_item({"id": "existing", "pk": "p", "n": 1})
    results = container.execute_item_batch([
        ("create", ({"id": "a", "pk": "p"},)),
        ("upsert", ({"id": "b", "pk": "p"},)),
        ("read", ("existing",)),
        ("replace", ("existing", {"id": "existing", "pk": "p", "n": 2})),
        ("delete", ("a",)),
    ], partition_key="p")
    assert [r["statusCode"] for r in results] == [201, 201, 200, 200, 204]
    ids = sorted(item["id"] for item in container.read_all_items())
    assert ids == ["b", "existing"]


def test_a_failing_batch_changes_nothing(container):
    container.create_item({"id": "existing", "pk": "p", "n": 1})
    with pytest.raises(CosmosBatchOperationError) as failed:
        container.execute_item_batch([
            ("create", ({"id": "a", "pk": "p"},)),
            ("replace", ("existing", {"id": "existing", "pk": "p", "n": 2})),
            ("create", ({"id": "existing", "pk": "p"},)),
        ], partition_key="p")
    assert failed.value.error_index == 2
    assert [r["statusCode"] for r in failed.value.operation_responses] == [424, 424, 409]
    assert [item["id"] for item in container.read_all_items()] == ["existing"]
    assert container.read_item("existing", partition_key="p")["n"] == 1


def test_delete_all_items_by_partition_key(container):
    for i in range(5):
        container.create_item({"id": f"p{i}", "pk": "gone"})
    container.create_item({"id": "keep", "pk": "kept"})
    container.delete_all_items_by_partition_key("gone")
    assert [item["id"] for item in container.read_all_items()] == ["keep"]


def test_batch_size_limits_use_the_service_messages(container):
    with pytest.raises(CosmosHttpResponseError) as error:
        container.execute_item_batch(batch_operations=[], partition_key="p")
    assert error.value.status_code == 400
    assert "Batch request has no operations." in error.value.message
    too_many = [("create", ({"id": f"i{n}", "pk": "p"},)) for n in range(101)]
    with pytest.raises(CosmosHttpResponseError) as error:
        container.execute_item_batch(batch_operations=too_many, partition_key="p")
    assert error.value.status_code == 400
    assert "Batch request has more operations than what is supported." in error.value.message


def test_a_batch_takes_the_next_lsn(container):
    for item_id in ("read", "replace", "delete"):
        container.upsert_item({"id": item_id, "pk": "p"})
    before = container.read_item("delete", partition_key="p").get_response_headers()["lsn"]
    results = container.execute_item_batch(
        [("create", ({"id": "new", "pk": "p"},)),
         ("replace", ("replace", {"id": "replace", "pk": "p", "v": 1})),
         ("read", ("read",)),
         ("delete", ("delete",))],
        partition_key="p")
    assert int(results.get_response_headers()["lsn"]) == int(before) + 1
