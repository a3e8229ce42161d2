"""Fault rules (/_lethedb/faults) driving the Python SDK's own retry policies: throttling with a
retry delay, a split's 410/1002, a retry-with 449, a dropped connection, added latency, and a
failure that outlasts the retries.

Rules live in the memory of the process that took them, so these tests use one process of their
own (the session's shared server may be two instances behind a proxy)."""

import time

import pytest
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import CosmosHttpResponseError

from conftest import make_client, unique_id
from signed_http import RawClient

FAULTS = "/_lethedb/faults"


@pytest.fixture(scope="module")
def server(start_server):
    return start_server()


@pytest.fixture
def container(server):
    database = make_client(server).create_database_if_not_exists("faults")
    return database.create_container(unique_id("coll"), partition_key=PartitionKey(path="/pk"))


@pytest.fixture
def faults(server):
    raw = RawClient(server.endpoint, server.key)
    yield lambda rule: raw.request("POST", FAULTS, body=rule)
    raw.request("DELETE", FAULTS)


def rules_left(server):
    return RawClient(server.endpoint, server.key).request("GET", FAULTS).json()["rules"]


def test_the_sdk_retries_throttling_for_as_long_as_the_rule_lasts(server, container, faults):
    added = faults({"operation": "Create", "resource": container.container_link.strip("/"),
                    "status": 429, "substatus": 3200, "retryAfterMs": 5, "count": 3})
    assert added.status_code == 201, added.text
    container.create_item({"id": "a", "pk": "p"})
    # Three throttled attempts, then the one that created the item.
    assert rules_left(server) == []
    assert container.read_item("a", partition_key="p")["id"] == "a"


@pytest.mark.parametrize("rule", [
    {"operation": "Read", "status": 408, "count": 1},
    {"operation": "Read", "status": 503, "count": 1},
    {"operation": "Read", "resetConnection": True, "count": 1},
])
def test_the_sdk_retries_a_read_after_one_failure(server, container, faults, rule):
    container.create_item({"id": "a", "pk": "p"})
    assert faults(rule).status_code == 201
    assert container.read_item("a", partition_key="p")["id"] == "a"
    assert rules_left(server) == []


def test_a_query_resumes_after_a_split_and_a_point_read_reports_it(server, container, faults):
    container.create_item({"id": "a", "pk": "p"})
    faults({"operation": "Query", "status": 410, "substatus": 1002, "count": 1})
    # The query pipeline refreshes its routing map and asks again.
    assert [row["id"] for row in container.query_items("SELECT * FROM c", enable_cross_partition_query=True)] == ["a"]
    assert rules_left(server) == []
    # The SDK does not retry a point operation on 410/1002 or 449: the caller sees them.
    for status, substatus in ((410, 1002), (449, 0)):
        faults({"operation": "Read", "status": status, "substatus": substatus, "count": 1})
        with pytest.raises(CosmosHttpResponseError) as error:
            container.read_item("a", partition_key="p")
        assert (error.value.status_code, error.value.sub_status) == (status, substatus)


def test_latency_and_a_lasting_failure(server, container, faults):
    container.create_item({"id": "a", "pk": "p"})
    faults({"operation": "Read", "partitionKey": "p", "delayMs": 300, "count": 1})
    started = time.monotonic()
    container.read_item("a", partition_key="p")
    assert time.monotonic() - started >= 0.3
    faults({"operation": "Read", "status": 500, "message": "planned"})
    with pytest.raises(CosmosHttpResponseError) as error:
        container.read_item("a", partition_key="p")
    assert error.value.status_code == 500
    assert "planned" in error.value.message
