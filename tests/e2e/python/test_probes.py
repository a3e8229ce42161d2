"""A harness's view of the server: started on port 0, it prints one JSON ready line naming its
endpoint (and the emulator's public key), the SDK connects with exactly those, the unauthenticated
probes answer, and with `--advertise-url auto` an SDK that reaches it through a mapped port (a
one-backend proxy standing in for a container's random host port) is told to stay on that port."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from azure.cosmos import CosmosClient, PartitionKey

from lethedb_server import EMULATOR_KEY, binary_path

HERE = Path(__file__).resolve().parent
START_WAIT_SECS = 30


def read_line(process: subprocess.Popen, accept) -> dict | str:
    """The first stdout line `accept` takes (it returns the parsed value, or None)."""
    deadline = time.monotonic() + START_WAIT_SECS
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"the process ended (exit {process.poll()}) before the line")
        found = accept(line.strip())
        if found is not None:
            return found
    raise AssertionError("no such line in time")


def ready_line(text: str):
    if not text.startswith("{"):
        return None
    line = json.loads(text)
    return line if line.get("ready") is True else None


@pytest.fixture
def spawn():
    started: list[subprocess.Popen] = []

    def start(args: list[str]) -> subprocess.Popen:
        process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()
        process.wait(10)


def get_json(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def test_port_zero_ready_line_is_all_an_sdk_needs(spawn):
    server = spawn([str(binary_path()), "serve", "--in-memory", "--bind", "127.0.0.1:0"])
    line = read_line(server, ready_line)
    endpoint, key = line["endpoint"], line["key"]
    assert endpoint.startswith("http://127.0.0.1:") and not endpoint.endswith(":0/")
    client = CosmosClient(endpoint, key)
    container = client.create_database("probes").create_container("c", PartitionKey(path="/pk"))
    container.create_item({"id": "a", "pk": "p"})
    assert container.read_item("a", partition_key="p")["id"] == "a"
    assert get_json(endpoint + "alive") == (200, {"status": "alive"})
    assert get_json(endpoint + "ready") == (200, {"status": "ready"})
    status, body = get_json(endpoint + "status")
    assert status == 200 and body["ready"] is True and body["store"] == "memory"


def start_behind_proxy(spawn, extra: list[str]) -> tuple[str, str]:
    """A server on port 0 with `extra` flags, and a one-backend proxy in front of it: the
    server's endpoint and the proxy's."""
    server = spawn([str(binary_path()), "serve", "--in-memory", "--bind", "127.0.0.1:0", *extra])
    direct = read_line(server, ready_line)["endpoint"]
    backend = direct.removeprefix("http://").rstrip("/")
    proxy = spawn([sys.executable, str(HERE / "round_robin.py"), "--listen", "127.0.0.1:0",
                   "--backend", backend])
    address = read_line(proxy, lambda text: text.removeprefix("listening on ")
                        if text.startswith("listening on ") else None)
    return direct, f"http://{address}/"


def advertised(client: CosmosClient) -> str:
    account = client.get_database_account()
    return account.WritableLocations[0]["databaseAccountEndpoint"]


def test_advertise_auto_keeps_the_sdk_on_the_mapped_port(spawn):
    direct, mapped = start_behind_proxy(spawn, ["--advertise-url", "auto"])
    assert mapped != direct
    client = CosmosClient(mapped, EMULATOR_KEY)
    assert advertised(client) == mapped
    container = client.create_database("auto").create_container("c", PartitionKey(path="/pk"))
    container.upsert_item({"id": "a", "pk": "p"})
    assert [item["id"] for item in container.query_items("SELECT * FROM c", partition_key="p")] == ["a"]


def test_without_auto_the_account_names_the_bound_address(spawn):
    direct, mapped = start_behind_proxy(spawn, [])
    client = CosmosClient(mapped, EMULATOR_KEY)
    assert advertised(client) == direct
