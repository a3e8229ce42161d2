"""Request units, provisioned throughput, 429s and /metrics through the official Python SDK."""

from __future__ import annotations

import threading
import urllib.request

from azure.cosmos import PartitionKey, ThroughputProperties

from conftest import unique_id


def test_every_response_carries_a_request_charge(container):
    container.create_item({"id": "a", "pk": "p", "payload": "x" * 900})
    charge = float(container.client_connection.last_response_headers["x-ms-request-charge"])
    assert 5.0 <= charge <= 6.5, "about 5-6 RU for a 1 KiB write"
    container.read_item("a", partition_key="p")
    charge = float(container.client_connection.last_response_headers["x-ms-request-charge"])
    assert charge == 1.0, "1 RU for a 1 KiB point read"


def test_a_400_ru_container_under_a_write_burst_throttles_and_the_sdk_retries_to_success(database):
    container = database.create_container(unique_id("burst"), PartitionKey(path="/pk"), offer_throughput=400)
    assert container.get_throughput().offer_throughput == 400
    errors = []
    created = []

    def writer(worker: int) -> None:
        try:
            for i in range(60):
                container.create_item({"id": f"w{worker}-{i}", "pk": f"p{worker}"})
                created.append(1)
        except Exception as error:  # noqa: BLE001 - any failure fails the test below
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(created) == 240, "every write succeeded after the SDK's own retries"
    count = list(container.query_items("SELECT VALUE COUNT(1) FROM c", enable_cross_partition_query=True))
    assert count == [240]
    # 240 writes of ~5.7 RU cannot fit one second of 400 RU: the server must have said 429.
    metrics = urllib.request.urlopen(container.client_connection.url_connection + "metrics", timeout=10).read().decode()
    throttled = [line for line in metrics.splitlines()
                 if line.startswith("lethedb_throttled_requests_total") and f'container="{container.id}"' in line]
    assert throttled and float(throttled[0].split()[-1]) > 0


def test_replace_throughput_changes_the_budget(database):
    container = database.create_container(unique_id("repl"), PartitionKey(path="/pk"), offer_throughput=400)
    container.replace_throughput(1000)
    assert container.get_throughput().offer_throughput == 1000


def test_autoscale_settings_round_trip(database):
    container = database.create_container(
        unique_id("auto"), PartitionKey(path="/pk"), offer_throughput=ThroughputProperties(auto_scale_max_throughput=4000))
    properties = container.get_throughput()
    assert properties.auto_scale_max_throughput == 4000


def test_invalid_throughput_is_a_400(database):
    from azure.cosmos.exceptions import CosmosHttpResponseError
    try:
        database.create_container(unique_id("bad"), PartitionKey(path="/pk"), offer_throughput=450)
    except CosmosHttpResponseError as error:
        assert error.status_code == 400
    else:
        raise AssertionError("450 RU/s is not a multiple of 100")


def test_metrics_are_scraped_and_parse(server, database, container):
    container.upsert_item({"id": "m", "pk": "p"})
    text = urllib.request.urlopen(server.endpoint + "metrics", timeout=10).read().decode()
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_and_labels, value = line.rsplit(" ", 1)
        samples[name_and_labels] = float(value)
    assert any(name.startswith('lethedb_requests_total{operation="Upsert"') for name in samples)
    assert samples[f'lethedb_items{{database="{database.id}",container="{container.id}"}}'] == 1
    assert any(name.startswith("lethedb_commit_duration_seconds_count") for name in samples)


def _throttled(endpoint: str, container_id: str) -> float:
    text = urllib.request.urlopen(endpoint + "metrics", timeout=10).read().decode()
    values = [float(line.split()[-1]) for line in text.splitlines()
              if line.startswith("lethedb_throttled_requests_total") and f'container="{container_id}"' in line]
    return sum(values)


def _burst(container, writes: int = 150) -> None:
    for i in range(writes):
        container.create_item({"id": f"b{i}", "pk": "p"})


def test_no_rate_limit_reports_charges_but_never_throttles(start_server):
    from conftest import make_client
    server = start_server(extra_args=["--no-rate-limit"])
    database = make_client(server).create_database(unique_id("db"))
    container = database.create_container(unique_id("c"), PartitionKey(path="/pk"), offer_throughput=400)
    _burst(container)
    assert float(container.client_connection.last_response_headers["x-ms-request-charge"]) > 1
    assert _throttled(server.endpoint, container.id) == 0


def test_a_server_wide_default_throughput_limits_containers_without_their_own(start_server):
    from conftest import make_client
    server = start_server(extra_args=["--default-throughput", "400"])
    database = make_client(server).create_database(unique_id("db"))
    container = database.create_container(unique_id("c"), PartitionKey(path="/pk"))
    _burst(container)
    assert _throttled(server.endpoint, container.id) > 0
    assert list(container.query_items("SELECT VALUE COUNT(1) FROM c", partition_key="p")) == [150]


def test_metrics_on_their_own_port(start_server):
    from urllib.error import HTTPError

    from lethedb_server import free_port
    port = free_port()
    server = start_server(extra_args=["--metrics-bind", f"127.0.0.1:{port}"])
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    assert "lethedb_writer_queue_depth" in text
    try:
        urllib.request.urlopen(server.endpoint + "metrics", timeout=10)
    except HTTPError as error:
        assert error.code == 401, "the main port no longer serves /metrics unauthenticated"
    else:
        raise AssertionError("/metrics should not be on the main port")


def test_autoscale_keeps_its_increment_percent(database):
    container = database.create_container(
        unique_id("auto"), PartitionKey(path="/pk"),
        offer_throughput=ThroughputProperties(auto_scale_max_throughput=4000, auto_scale_increment_percent=20))
    properties = container.get_throughput()
    assert properties.auto_scale_max_throughput == 4000
    assert properties.auto_scale_increment_percent == 20
    container.replace_throughput(
        ThroughputProperties(auto_scale_max_throughput=5000, auto_scale_increment_percent=5))
    replaced = container.get_throughput()
    assert replaced.auto_scale_max_throughput == 5000
    assert replaced.auto_scale_increment_percent == 5


def test_invalid_throughput_messages_are_the_services(database):
    from azure.cosmos.exceptions import CosmosHttpResponseError
    cases = [
        (450, "between 400 and 1000000 inclusive in increments of 100."),
        (300, "between 400 and 1000000 inclusive in increments of 100."),
        (ThroughputProperties(auto_scale_max_throughput=1500),
         "between 1000 and 1000000 inclusive in increments of 1000."),
    ]
    for offer, message in cases:
        try:
            database.create_container(unique_id("bad"), PartitionKey(path="/pk"), offer_throughput=offer)
        except CosmosHttpResponseError as error:
            assert error.status_code == 400
            assert f"The offer should have valid throughput values {message}" in error.message
        else:
            raise AssertionError(f"{offer} was accepted")
