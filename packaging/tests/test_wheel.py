"""The installed `lethedb` wheel: its command, its launcher and its pytest fixtures, as a user of
`pip install lethedb` gets them (scripts/packages installs the wheel that scripts/release built
into the venv this runs in)."""

import json
import re
import subprocess
import sys
import sysconfig
import urllib.request
from pathlib import Path

import pytest

import lethedb


def status(server: lethedb.Server) -> dict:
    with urllib.request.urlopen(f"{server.endpoint}status", timeout=10) as response:
        return json.load(response)


def test_the_wheel_installs_the_command_beside_the_interpreter():
    binary = lethedb.binary_path()
    assert binary.parent == Path(sysconfig.get_path("scripts"))
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True).stdout
    from importlib.metadata import version as installed_version

    assert version.strip() == f"lethedb {installed_version('lethedb')}"


def test_start_serves_in_memory_on_a_free_port_and_stop_ends_it_cleanly():
    with lethedb.start() as server:
        assert server.endpoint.startswith("http://127.0.0.1:")
        assert server.key == lethedb.EMULATOR_KEY
        assert server.ready["store"] == "memory"
        assert status(server)["ready"] is True
    assert server.process.returncode == 0


def test_a_data_dir_in_the_servers_own_folder_keeps_a_durable_store():
    server = lethedb.start("--data-dir", "{tmp}/data")
    folder = Path(server._folder.name)
    try:
        assert server.ready["store"] == "redb"
        assert (folder / "data" / "lethedb.redb").is_file()
    finally:
        server.stop()
    assert not folder.exists(), "the server's temporary folder outlived it"


def test_a_custom_key_signs_the_clients_requests():
    key = "A" * 86 + "=="
    with lethedb.start(key=key) as server:
        assert server.key == key
        assert "keyFingerprint" in server.ready
        client = server.client()
        client.create_database("keyed")
        assert [database["id"] for database in client.list_databases()] == ["keyed"]


def test_a_server_that_cannot_start_raises_with_its_output():
    with pytest.raises(RuntimeError, match="(?s)did not become ready.*--no-such-flag"):
        lethedb.start("--no-such-flag")


# The fixtures, in a pytest run of their own (pytester), as a user's suite would use them.
FIXTURE_SUITE = """
import json, urllib.request

ports = []

def status(server):
    with urllib.request.urlopen(server.endpoint + "status", timeout=10) as response:
        return json.load(response)

def test_first(lethedb_server, lethedb_session_server):
    ports.append((lethedb_server.port, lethedb_session_server.port))
    assert status(lethedb_server)["store"] == STORE

def test_second(lethedb_server, lethedb_session_server, lethedb_client):
    ports.append((lethedb_server.port, lethedb_session_server.port))
    assert list(lethedb_client.list_databases()) == []

def test_each_test_had_its_own_server_and_the_session_one():
    (first, session_first), (second, session_second) = ports
    assert first != second and session_first == session_second
"""


def test_the_fixtures_start_a_server_per_test_and_one_per_session(pytester):
    pytester.makepyfile(test_user=FIXTURE_SUITE.replace("STORE", '"memory"'))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_the_ini_option_adds_flags_to_the_fixtures_servers(pytester):
    pytester.makeini("[pytest]\nlethedb_args = --data-dir {tmp}/data --no-rate-limit\n")
    pytester.makepyfile(test_user=FIXTURE_SUITE.replace("STORE", '"redb"'))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_the_servers_are_stopped_when_the_run_ends(pytester):
    pytester.makepyfile(test_user="""
def test_record(lethedb_server, lethedb_session_server):
    print("PIDS", lethedb_server.process.pid, lethedb_session_server.process.pid)
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=1)
    pids = re.search(r"PIDS (\d+) (\d+)", result.stdout.str()).groups()
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists(), f"lethedb {pid} still runs after the pytest run"


def test_the_client_fixture_skips_without_azure_cosmos(pytester):
    pytester.makeconftest("import sys\nsys.modules['azure.cosmos'] = None\n")
    pytester.makepyfile(test_user="def test_client(lethedb_client):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)


def test_the_plugin_is_registered_by_the_wheels_entry_point():
    from importlib.metadata import entry_points

    registered = [entry.value for entry in entry_points(group="pytest11") if entry.name == "lethedb"]
    assert registered == ["lethedb.pytest_plugin"], sys.path
