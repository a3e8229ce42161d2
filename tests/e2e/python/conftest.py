"""Fixtures shared by the Python end-to-end suites.

One `lethedb` process serves the whole session over a fresh temporary data directory; tests that
need their own process (TLS, durability, shutdown) start one with `start_server`. Each test gets
its own database, so tests never see each other's data.

With LETHEDB_E2E_BACKEND=postgres (set by `scripts/test postgres`, with LETHEDB_TEST_POSTGRES),
the shared server is instead two instances on one fresh PostgreSQL database behind a
round-robin proxy (postgres_cluster.py): every test that uses `server` then runs against two
processes whose requests alternate. `start_server` still starts single processes on their own
data directories.

With LETHEDB_E2E_LAUNCHER=wheel (set by `scripts/test` when its packages stage built the wheel,
which it installs into the venv), the shared server is the `lethedb` wheel's own pytest fixture
(`lethedb_session_server`), on the wheel's binary, with the flags that `-o lethedb_args=...`
gives: the suite then also tests the fixture that users of the wheel get.
"""

from __future__ import annotations

import os
import uuid

import pytest
from azure.cosmos import CosmosClient, PartitionKey
from azure.cosmos.exceptions import CosmosResourceNotFoundError

from lethedb_server import Server
from postgres_cluster import Cluster, Postgres, postgres_mode


def wheel_mode() -> bool:
    return os.environ.get("LETHEDB_E2E_LAUNCHER") == "wheel"


def unique_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def make_client(server: Server, **kwargs) -> CosmosClient:
    """A client with short timeouts, so a server that hangs fails a test instead of the run."""
    kwargs.setdefault("credential", server.key)
    kwargs.setdefault("connection_timeout", 10)
    kwargs.setdefault("read_timeout", 30)
    if getattr(server, "tls", False):
        kwargs.setdefault("connection_verify", False)
    return CosmosClient(server.endpoint, **kwargs)


@pytest.fixture(scope="session")
def start_server(tmp_path_factory):
    """Starts extra servers on demand and stops every one of them at the end of the session."""
    started: list[Server] = []

    def start(data_dir=None, **kwargs) -> Server:
        data_dir = data_dir or tmp_path_factory.mktemp("lethedb") / "data"
        server = Server(data_dir, **kwargs).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


@pytest.fixture(scope="session")
def postgres():
    """The test PostgreSQL server: only in the PostgreSQL run, where it must be there."""
    if not postgres_mode():
        pytest.skip("needs the PostgreSQL run: scripts/test postgres (LETHEDB_E2E_BACKEND=postgres)")
    found = Postgres.from_environment()
    if found is None:
        pytest.fail("LETHEDB_E2E_BACKEND=postgres needs LETHEDB_TEST_POSTGRES (scripts/test postgres sets it)")
    return found


@pytest.fixture(scope="session")
def server(tmp_path_factory, request):
    if wheel_mode() and not postgres_mode():
        # Started and stopped by the wheel's plugin, which pytest loaded from its entry point.
        yield request.getfixturevalue("lethedb_session_server")
        return
    if postgres_mode():
        postgres = request.getfixturevalue("postgres")
        server = Cluster(tmp_path_factory.mktemp("cluster"), postgres.fresh_database("suite")).start()
    else:
        server = Server(tmp_path_factory.mktemp("lethedb") / "data").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def client(server):
    return make_client(server)


@pytest.fixture
def database(client):
    database = client.create_database(unique_id("db"))
    yield database
    try:
        client.delete_database(database.id)
    except CosmosResourceNotFoundError:
        pass  # The test deleted it itself.


@pytest.fixture
def container(database):
    """A container partitioned on /pk, with TTL off."""
    return database.create_container(unique_id("coll"), partition_key=PartitionKey(path="/pk"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Attach the shared server's last log lines to every failing test's report."""
    outcome = yield
    report = outcome.get_result()
    server = item.funcargs.get("server") if hasattr(item, "funcargs") else None
    if report.failed and server is not None and hasattr(server, "log_tail"):
        report.sections.append(("lethedb log (tail)", server.log_tail()))
