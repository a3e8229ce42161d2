"""Throughput buckets through the official Python SDK's own `throughput_bucket` option: a bucket
set on a container (through /_lethedb/throughput-buckets, as the service's control plane would)
throttles the requests that name it with 429/3212, a request naming no bucket still gets in, and
an id outside 1 to 5 is a 400."""

from __future__ import annotations

import pytest
from azure.cosmos import PartitionKey, documents
from azure.cosmos.exceptions import CosmosHttpResponseError

from conftest import make_client, unique_id
from signed_http import RawClient


def no_throttle_retries(server):
    """A client that reports a 429 instead of retrying it, so the test sees the substatus."""
    policy = documents.ConnectionPolicy()
    policy.RetryOptions = documents.RetryOptions(max_retry_attempt_count=0)
    return make_client(server, connection_policy=policy)


@pytest.fixture
def bucketed(server, database):
    """A 400 RU/s container whose bucket 1 may spend 1% of it (4 RU/s)."""
    container = database.create_container(unique_id("buckets"), PartitionKey(path="/pk"), offer_throughput=400)
    path = f"dbs/{database.id}/colls/{container.id}"
    answer = RawClient(server.endpoint, server.key).request(
        "PUT", f"/_lethedb/throughput-buckets/{path}", signed_as=path,
        body={"throughputBuckets": [{"id": 1, "maxThroughputPercentage": 1}]})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"throughputBuckets": [{"id": 1, "maxThroughputPercentage": 1}]}
    return no_throttle_retries(server).get_database_client(database.id).get_container_client(container.id)


def test_a_spent_bucket_answers_429_with_substatus_3212(bucketed):
    throttled = None
    for i in range(30):
        try:
            bucketed.create_item({"id": f"b{i}", "pk": "p"}, throughput_bucket=1)
        except CosmosHttpResponseError as error:
            throttled = error
            break
    assert throttled is not None, "a bucket of 4 RU/s took 30 writes of ~5 RU"
    assert throttled.status_code == 429
    assert throttled.sub_status == 3212
    # Outside the bucket the container's whole budget is there.
    bucketed.create_item({"id": "free", "pk": "p"})
    assert bucketed.read_item("free", partition_key="p")["id"] == "free"


def test_a_bucket_the_container_lacks_draws_on_the_container(bucketed):
    for i in range(5):
        bucketed.create_item({"id": f"u{i}", "pk": "p"}, throughput_bucket=3)


def test_a_client_level_bucket_outside_one_to_five_is_a_400(server, database, container):
    client = make_client(server, throughput_bucket=6)
    proxy = client.get_database_client(database.id).get_container_client(container.id)
    with pytest.raises(CosmosHttpResponseError) as refused:
        proxy.create_item({"id": "x", "pk": "p"})
    assert refused.value.status_code == 400
    assert "x-ms-cosmos-throughput-bucket" in refused.value.message
