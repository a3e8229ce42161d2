"""pytest fixtures for LetheDB, registered by the wheel's `pytest11` entry point.

- `lethedb_session_server`: one server for the whole test session;
- `lethedb_server`: a fresh server for each test that asks for it;
- `lethedb_session_client`, `lethedb_client`: an azure-cosmos `CosmosClient` for each of them
  (the test is skipped when azure-cosmos is not installed).

A server object has `endpoint` and `key` (and `port`, `connection_string`, `log_tail()`). Each
server listens on a free loopback port, read from its ready line, keeps its data in memory, and
is stopped when its scope ends. The ini option `lethedb_args` adds `lethedb serve` flags to
every server (`{tmp}` stands for a temporary folder of that server: `--data-dir {tmp}/data`
keeps a durable store there).
"""

from __future__ import annotations

from typing import Iterator

import pytest

import lethedb


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "lethedb_args",
        type="args",
        default=[],
        help="flags added to `lethedb serve` for the LetheDB fixtures' servers",
    )


def _start(config: pytest.Config) -> lethedb.Server:
    return lethedb.start(*config.getini("lethedb_args"))


def _client(server: lethedb.Server):
    pytest.importorskip("azure.cosmos", reason="the LetheDB client fixtures need azure-cosmos")
    return server.client()


@pytest.fixture(scope="session")
def lethedb_session_server(pytestconfig: pytest.Config) -> Iterator[lethedb.Server]:
    """A LetheDB server shared by every test of the session."""
    server = _start(pytestconfig)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def lethedb_server(pytestconfig: pytest.Config) -> Iterator[lethedb.Server]:
    """A fresh LetheDB server of this test alone."""
    server = _start(pytestconfig)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def lethedb_session_client(lethedb_session_server: lethedb.Server):
    """An azure-cosmos client for the session's server."""
    return _client(lethedb_session_server)


@pytest.fixture
def lethedb_client(lethedb_server: lethedb.Server):
    """An azure-cosmos client for this test's own server."""
    return _client(lethedb_server)
