"""The image that scripts/release built (lethedb:latest, and its `docker save | gzip` file in
LETHEDB_PACKAGES_DIR): its size, its defaults (every interface, a /data volume, a non-root user,
the client's own host and port advertised), and the time from `docker run` to the first
successful SDK call. Skipped, with the reason, when LETHEDB_DOCKER is not 1 (scripts/packages
sets it when a Docker engine runs)."""

import os
import socket
import statistics
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from azure.cosmos import CosmosClient, PartitionKey

import lethedb

pytestmark = pytest.mark.skipif(os.environ.get("LETHEDB_DOCKER") != "1",
                                reason=os.environ.get("LETHEDB_DOCKER_SKIP_REASON", "no Docker engine"))

IMAGE = "lethedb:latest"
# The target for the compressed image.
IMAGE_LIMIT_BYTES = 20_000_000
# The target is 300 ms; the test fails only well past it, since a two-core CI machine running
# other builds can be slow for reasons that are not the image's. The figure is printed.
START_TARGET_MS = 300
START_LIMIT_MS = 3000
START_RUNS = 5
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True).stdout.strip()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Container:
    """`docker run` in the foreground with its output read until the ready line."""

    def __init__(self, *args: str, publish: str = "127.0.0.1::8081", volume: str = ""):
        self.name = f"lethedb-test-{uuid.uuid4().hex[:12]}"
        command = ["docker", "run", "--rm", "--name", self.name, "-p", publish]
        if volume:
            command += ["-v", f"{volume}:/data"]
        self.process = subprocess.Popen(command + [IMAGE, *args], stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
        self.output = []
        for line in self.process.stdout:
            self.output.append(line)
            if line.startswith('{"ready":true'):
                break
        else:
            raise AssertionError(f"the container ended before its ready line:\n{''.join(self.output)}")
        self.endpoint = f"http://{docker('port', self.name, '8081/tcp').splitlines()[0]}/"

    def stop(self) -> None:
        subprocess.run(["docker", "stop", "--time", "10", self.name], capture_output=True)
        self.process.wait(30)


def test_the_compressed_image_is_small():
    saved = Path(os.environ["LETHEDB_PACKAGES_DIR"]).glob("lethedb-image-*.tar.gz")
    size = next(saved).stat().st_size
    print(f"\nimage: {size / 1e6:.1f} MB compressed (docker save | gzip; target <= 20 MB)")
    assert size <= IMAGE_LIMIT_BYTES


def test_docker_run_to_the_first_sdk_call(capsys):
    """Time from starting `docker run` to a database created with azure-cosmos: the harness
    reads the container's ready line (as Testcontainers does), then calls the SDK."""
    timings_ms = []
    for _ in range(START_RUNS):
        port = free_port()
        name = f"lethedb-start-{uuid.uuid4().hex[:12]}"
        started = time.perf_counter()
        process = subprocess.Popen(["docker", "run", "--rm", "--name", name, "-p", f"127.0.0.1:{port}:8081",
                                    IMAGE, "serve", "--in-memory"], stdout=subprocess.PIPE, text=True)
        try:
            assert any(line.startswith('{"ready":true') for line in process.stdout)
            CosmosClient(f"http://127.0.0.1:{port}/", lethedb.EMULATOR_KEY).create_database("first")
            timings_ms.append((time.perf_counter() - started) * 1000)
        finally:
            subprocess.run(["docker", "rm", "-f", "-v", name], capture_output=True)
            process.wait(30)
    median = statistics.median(timings_ms)
    with capsys.disabled():
        print(f"\nimage: docker run to the first SDK call: median {median:.0f} ms over {START_RUNS} runs "
              f"(min {min(timings_ms):.0f}, max {max(timings_ms):.0f}; target <= {START_TARGET_MS} ms)")
    assert median <= START_LIMIT_MS


def test_a_random_host_port_is_advertised_to_the_sdk():
    container = Container("serve", "--in-memory")
    try:
        client = CosmosClient(container.endpoint, lethedb.EMULATOR_KEY)
        account = client.get_database_account()
        assert [location["databaseAccountEndpoint"] for location in account.WritableLocations] == [container.endpoint]
        orders = client.create_database("shop").create_container("orders", PartitionKey("/customer"))
        orders.upsert_item({"id": "o1", "customer": "ada"})
        assert list(orders.query_items("SELECT VALUE c.id FROM c", enable_cross_partition_query=True)) == ["o1"]
    finally:
        container.stop()


def test_the_default_command_keeps_data_in_the_volume_as_a_non_root_user():
    volume = f"lethedb-test-{uuid.uuid4().hex[:12]}"
    try:
        first = Container(volume=volume)
        assert '"store":"redb"' in first.output[-1]
        assert docker("inspect", "--format", "{{.Config.User}}", first.name) == "65532:65532"
        CosmosClient(first.endpoint, lethedb.EMULATOR_KEY).create_database("kept")
        first.stop()
        second = Container(volume=volume)
        try:
            names = [database["id"] for database in CosmosClient(second.endpoint, lethedb.EMULATOR_KEY).list_databases()]
            assert names == ["kept"]
        finally:
            second.stop()
    finally:
        subprocess.run(["docker", "volume", "rm", "-f", volume], capture_output=True)


def test_the_readme_image_example_runs():
    run = subprocess.run(["bash", "-eu", str(EXAMPLES / "image.sh")], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert '{"status":"ready"}' in run.stdout
