"""LetheDB, a Cosmos DB for NoSQL compatible server, packaged with its binary.

`start()` runs the `lethedb` binary that this wheel installed on a free loopback port and
returns once the server printed its ready line, with the endpoint and key a Cosmos SDK client
needs; `Server.stop()` (or leaving the `with` block) stops it. The pytest plugin
(`lethedb.pytest_plugin`, loaded by pytest on its own) builds its fixtures on this.

This module knows nothing of any Cosmos SDK: `Server.client()` imports azure-cosmos only when
called.
"""

from __future__ import annotations

import collections
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path
from typing import Any, Optional

__all__ = ["EMULATOR_KEY", "Server", "binary_path", "start"]

# The Cosmos DB emulator's well-known key, which the server uses unless given another.
EMULATOR_KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

# The binary starts in milliseconds; this bounds a machine that is very busy or a store that
# takes long to open, not the usual case.
READY_TIMEOUT_SECS = 30.0
STOP_TIMEOUT_SECS = 10.0
# Log lines kept for `Server.log_tail()`, for a failing test's report.
LOG_LINES_KEPT = 200
# The flags that choose a store: without one, a server keeps everything in memory.
STORE_FLAGS = ("--in-memory", "--data-dir", "--postgres")


def binary_path() -> Path:
    """The `lethedb` binary installed with this package (in the environment's scripts folder)."""
    name = "lethedb.exe" if sys.platform == "win32" else "lethedb"
    candidates = [Path(sysconfig.get_path("scripts")) / name]
    user_scheme = f"{os.name}_user"
    if user_scheme in sysconfig.get_scheme_names():
        candidates.append(Path(sysconfig.get_path("scripts", user_scheme)) / name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    found = shutil.which(name)
    if found:
        return Path(found)
    raise FileNotFoundError(f"the lethedb binary is not installed beside this package (looked in {candidates})")


class Server:
    """One running `lethedb serve` process: its `endpoint`, `key` and ready line (`ready`)."""

    def __init__(self, process: subprocess.Popen, ready: dict[str, Any], key: str,
                 log: "collections.deque[str]", folder: Optional[tempfile.TemporaryDirectory]):
        self.process = process
        self.ready = ready
        self.endpoint: str = ready["endpoint"]
        self.key = key
        self._log = log
        self._folder = folder

    @property
    def port(self) -> int:
        return int(self.endpoint.rstrip("/").rsplit(":", 1)[1])

    @property
    def connection_string(self) -> str:
        return f"AccountEndpoint={self.endpoint};AccountKey={self.key};"

    def client(self, **options: Any):
        """An azure-cosmos `CosmosClient` for this server (azure-cosmos must be installed)."""
        from azure.cosmos import CosmosClient

        return CosmosClient(self.endpoint, credential=self.key, **options)

    def log_tail(self) -> str:
        """The server's last log lines."""
        return "".join(self._log)

    def stop(self) -> Optional[int]:
        """SIGTERM, then SIGKILL if it has not exited in time; removes its temporary folder."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT_SECS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None
        return self.process.returncode

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()


def start(*args: str, key: Optional[str] = None, binary: Optional[Path] = None,
          ready_timeout_secs: float = READY_TIMEOUT_SECS) -> Server:
    """Starts `lethedb serve ARGS` on a free loopback port and waits for its ready line.

    Without a store flag the server keeps everything in memory. `{tmp}` in an argument stands
    for a fresh temporary folder of this server, removed when it stops
    (`start("--data-dir", "{tmp}/data")`). `key` is the master key, when not the emulator's.
    """
    folder = tempfile.TemporaryDirectory(prefix="lethedb-") if any("{tmp}" in arg for arg in args) else None
    command = [str(binary or binary_path()), "serve", "--bind", "127.0.0.1:0"]
    if not any(arg.split("=", 1)[0] in STORE_FLAGS for arg in args):
        command.append("--in-memory")
    command += [arg.replace("{tmp}", folder.name) if folder else arg for arg in args]
    # Only the flags above count: LETHEDB_* variables of the caller's shell are left out.
    environment = {name: value for name, value in os.environ.items() if not name.startswith("LETHEDB_")}
    if key is not None:
        environment["LETHEDB_KEY"] = key
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=environment, text=True, bufsize=1)
    log: "collections.deque[str]" = collections.deque(maxlen=LOG_LINES_KEPT)
    ready = _wait_for_ready_line(process, log, ready_timeout_secs)
    if ready is None:
        process.kill()
        process.wait()
        if folder is not None:
            folder.cleanup()
        raise RuntimeError(f"lethedb did not become ready ({shlex.join(command)}):\n{''.join(log)}")
    return Server(process, ready, key or ready.get("key", EMULATOR_KEY), log, folder)


def _wait_for_ready_line(process: subprocess.Popen, log: "collections.deque[str]",
                         timeout_secs: float) -> Optional[dict[str, Any]]:
    """Reads the output on a thread of its own (which keeps draining it afterwards, so the
    server never blocks on a full pipe) until the ready line, the process's end or the timeout."""
    found: list[dict[str, Any]] = []
    event = threading.Event()

    def read() -> None:
        for line in process.stdout:
            log.append(line)
            if not found and line.startswith("{"):
                parsed = _parse_ready(line)
                if parsed is not None:
                    found.append(parsed)
                    event.set()
        event.set()

    threading.Thread(target=read, name="lethedb-output", daemon=True).start()
    event.wait(timeout_secs)
    return found[0] if found else None


def _parse_ready(line: str) -> Optional[dict[str, Any]]:
    try:
        parsed = json.loads(line)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) and parsed.get("ready") is True else None

