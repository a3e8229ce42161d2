"""LetheDB over PostgreSQL for the end-to-end suites: the test PostgreSQL server, and clusters of
`lethedb` instances sharing one of its databases.

`scripts/test postgres` starts a throwaway PostgreSQL (scripts/lib/postgres.sh) and describes it
in the environment: LETHEDB_TEST_POSTGRES (a connection URL), LETHEDB_TEST_PG_CTL (pg_ctl for
that server, so a test can stop, start or restart it) and LETHEDB_TEST_PG_BIN (createdb, psql).
With LETHEDB_E2E_BACKEND=postgres as well, the session's shared server is a `Cluster`: two
instances on a fresh database behind the round-robin proxy (round_robin.py), so consecutive
requests of one client alternate between the instances.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
import json
from pathlib import Path
from typing import Optional

from lethedb_server import EMULATOR_KEY, Server

BACKEND = os.environ.get("LETHEDB_E2E_BACKEND", "redb")
PROXY_SCRIPT = Path(__file__).resolve().with_name("round_robin.py")
PG_CTL_TIMEOUT_SECS = 90


def postgres_mode() -> bool:
    """True when the suite runs against LetheDB over PostgreSQL (LETHEDB_E2E_BACKEND=postgres)."""
    return BACKEND == "postgres"


class Postgres:
    """The test PostgreSQL server that scripts/lib/postgres.sh started."""

    def __init__(self, url: str, pg_ctl: Optional[str], bin_dir: Optional[str]):
        self.url = url
        self.pg_ctl = pg_ctl
        self.bin_dir = Path(bin_dir) if bin_dir else None

    @classmethod
    def from_environment(cls) -> Optional["Postgres"]:
        url = os.environ.get("LETHEDB_TEST_POSTGRES")
        if not url:
            return None
        return cls(url, os.environ.get("LETHEDB_TEST_PG_CTL"), os.environ.get("LETHEDB_TEST_PG_BIN"))

    def database_url(self, name: str) -> str:
        parts = urllib.parse.urlsplit(self.url)
        return urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))

    def fresh_database(self, prefix: str = "lethedb") -> str:
        """Creates an empty database (from template0) and returns its URL."""
        name = f"{prefix}_{uuid.uuid4().hex[:10]}"
        self.psql(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.database_url(name)

    def psql(self, sql: str, url: Optional[str] = None) -> str:
        """Runs one SQL command with psql and returns its unaligned output."""
        program = str(self.bin_dir / "psql") if self.bin_dir else "psql"
        done = subprocess.run([program, url or self.url, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                               "-c", sql], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"psql failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout.strip()

    def ctl(self, *args: str) -> None:
        """Runs pg_ctl on the test server (`restart -m fast`, `stop -m fast`, `start`)."""
        if not self.pg_ctl:
            raise RuntimeError("LETHEDB_TEST_PG_CTL is not set: run the suite through `scripts/test postgres`")
        done = subprocess.run([self.pg_ctl, *args], capture_output=True, text=True, timeout=PG_CTL_TIMEOUT_SECS)
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")


def start_instance(data_dir: Path, database_url: str, *, advertise: str = "http://127.0.0.1:{port}/",
                   clock_offset_ms: int = 0, extra_args: Optional[list[str]] = None) -> Server:
    """One `lethedb serve --postgres` process; it advertises its own address unless told otherwise."""
    args = ["--postgres", database_url, "--advertise-url", advertise]
    if clock_offset_ms:
        args += ["--clock-offset-ms", str(clock_offset_ms)]
    return Server(data_dir, extra_args=args + list(extra_args or [])).start()


def start_pair(postgres: Postgres, base_dir: Path, offsets_ms: tuple[int, int] = (0, 0),
               database_url: Optional[str] = None) -> tuple[Server, Server]:
    """Instances A and B on one database (a fresh one unless given), each advertising its own
    address, with their clocks moved by `offsets_ms`."""
    url = database_url or postgres.fresh_database("pair")
    a = start_instance(Path(base_dir) / "a", url, clock_offset_ms=offsets_ms[0])
    try:
        b = start_instance(Path(base_dir) / "b", url, clock_offset_ms=offsets_ms[1])
    except BaseException:
        a.kill()
        raise
    return a, b


class Proxy:
    """round_robin.py as a child process, serving on a socket bound here (so its port is known
    before the instances that advertise it start)."""

    def __init__(self, log_path: Path):
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(128)
        self.port = self.socket.getsockname()[1]
        self.log_path = log_path
        self.process: Optional[subprocess.Popen] = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, backends: list[str]) -> "Proxy":
        args = [sys.executable, str(PROXY_SCRIPT), "--fd", str(self.socket.fileno())]
        for backend in backends:
            args += ["--backend", backend]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            pass_fds=[self.socket.fileno()])
        # The socket already listens, so connections queue until the proxy accepts them.
        self.counts()
        return self

    def counts(self) -> list[int]:
        """How many requests the proxy has sent to each backend, in backend order."""
        with urllib.request.urlopen(f"{self.endpoint}_round_robin/counts", timeout=10) as response:
            return json.load(response)["requests"]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.socket.close()


class Cluster:
    """Several instances on one PostgreSQL database behind the round-robin proxy.

    It has the interface the suites use of `Server`: `endpoint` (the proxy), `key`, `tls`,
    `log_tail()`, `stop()`, `kill()`; `instances` are the `Server`s themselves.
    """

    tls = False

    def __init__(self, base_dir: Path, database_url: str, *, instances: int = 2, key: str = EMULATOR_KEY):
        self.base_dir = Path(base_dir)
        self.database_url = database_url
        self.key = key
        self.count = instances
        self.instances: list[Server] = []
        self.proxy: Optional[Proxy] = None

    @property
    def endpoint(self) -> str:
        return self.proxy.endpoint

    @property
    def port(self) -> int:
        return self.proxy.port

    def start(self) -> "Cluster":
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.proxy = Proxy(self.base_dir / "proxy.log")
        try:
            for number in range(self.count):
                # Configured as a deployment of this many instances would be: each admits its
                # share of every container's throughput.
                self.instances.append(start_instance(
                    self.base_dir / f"instance{number}", self.database_url, advertise=self.proxy.endpoint,
                    extra_args=["--throughput-instances", str(self.count)]))
            self.proxy.start([f"127.0.0.1:{instance.port}" for instance in self.instances])
        except BaseException:
            self.kill()
            raise
        return self

    def stop(self) -> None:
        if self.proxy:
            self.proxy.stop()
        for instance in self.instances:
            instance.stop()

    def kill(self) -> None:
        if self.proxy:
            self.proxy.stop()
        for instance in self.instances:
            instance.kill()

    def log_tail(self, lines: int = 40) -> str:
        parts = [f"--- instance {n} (port {s.port}) ---\n{s.log_tail(lines)}" for n, s in enumerate(self.instances)]
        if self.proxy:
            try:
                parts.append(f"--- proxy ---\n{''.join(self.proxy.log_path.read_text().splitlines(True)[-10:])}")
            except FileNotFoundError:
                pass
        return "\n".join(parts)


def wait_until(predicate, timeout_secs: float, interval_secs: float = 0.05):
    """Calls `predicate` until it returns something true; returns that, or None at the deadline."""
    deadline = time.monotonic() + timeout_secs
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval_secs)
