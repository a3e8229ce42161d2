"""Starts and stops a real `lethedb` process for the end-to-end suites.

This module knows how to find the binary, pick a free loopback port, wait until the server
answers HTTP, and stop it gracefully (SIGTERM) or abruptly (SIGKILL). It knows nothing of the
Cosmos SDK: the tests build their own clients from `Server.endpoint` and `Server.key`.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Optional

REPO_ROOT = Path(__file__).resolve().parents[3]

# The Cosmos DB emulator's well-known key, which lethedb also uses by default.
EMULATOR_KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

# A debug build on a busy two-core CI machine can take a while to open its store.
READY_TIMEOUT_SECS = 30.0
STOP_TIMEOUT_SECS = 10.0
START_ATTEMPTS_MAX = 3

# Every process started here, so that an interpreter exit never leaves a server running even if
# a fixture's teardown did not run (for example after a KeyboardInterrupt).
_LIVE: "set[Server]" = set()


def store_args() -> list[str]:
    """`--store` as LETHEDB_E2E_STORE names it (`fjall`: the opt-in store), for `serve` and for
    the commands that open a data directory themselves (`export`, `import`); none by default."""
    store = os.environ.get("LETHEDB_E2E_STORE")
    return ["--store", store] if store else []


def binary_path() -> Path:
    """The binary under test: $LETHEDB_BIN, or the workspace's debug build."""
    configured = os.environ.get("LETHEDB_BIN")
    path = Path(configured) if configured else REPO_ROOT / "target" / "debug" / "lethedb"
    if not path.is_file():
        raise FileNotFoundError(
            f"lethedb binary not found at {path}; build it with "
            "`cargo build -p lethedb-server --bin lethedb` or set LETHEDB_BIN"
        )
    return path


def free_port() -> int:
    """A port that was free a moment ago; `Server.start` retries if another process wins it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerExited(RuntimeError):
    """The server process ended before it became ready."""


class Server:
    """One `lethedb serve` process on a fresh loopback port over `data_dir`.

    The same `data_dir` can be handed to a second `Server` after the first has stopped, which is
    how the durability test restarts the database.
    """

    def __init__(self, data_dir: Path, *, tls: bool = False, key: str = EMULATOR_KEY,
                 extra_args: Optional[list[str]] = None):
        self.data_dir = Path(data_dir)
        self.tls = tls
        self.key = key
        self.extra_args = list(extra_args or [])
        self.port: Optional[int] = None
        self.process: Optional[subprocess.Popen] = None
        self._log_file = None
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}.log"

    @property
    def endpoint(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.port}/"

    def start(self) -> "Server":
        self.data_dir.mkdir(parents=True, exist_ok=True)
        last_error: Optional[Exception] = None
        for _ in range(START_ATTEMPTS_MAX):
            self.port = free_port()
            self._spawn()
            try:
                self._wait_ready()
                return self
            except ServerExited as error:
                # Most likely another process took the port between free_port() and bind().
                last_error = error
                self._reap()
        raise RuntimeError(f"lethedb did not start after {START_ATTEMPTS_MAX} attempts") from last_error

    def _spawn(self) -> None:
        args = [str(binary_path()), "serve", "--bind", f"127.0.0.1:{self.port}",
                "--data-dir", str(self.data_dir), "--key", self.key]
        if self.tls:
            args.append("--tls")
        # LETHEDB_E2E_STORE=fjall runs the suite on the opt-in fjall store (docs/storage.md);
        # the default is the server's own (redb).
        args += store_args()
        # Every query page that the index serves is run again as a scan and compared (issue 26's
        # shadow mode): a difference fails the request, and so the test that sent it.
        args.append("--query-verify")
        # "{port}" in an extra argument stands for the port picked for this attempt.
        args += [arg.replace("{port}", str(self.port)) for arg in self.extra_args]
        self._log_file = open(self.log_path, "ab")
        self._log_file.write(f"\n=== {' '.join(args)}\n".encode())
        self._log_file.flush()
        # The process gets an environment without LETHEDB_* so that only the flags above count.
        env = {name: value for name, value in os.environ.items() if not name.startswith("LETHEDB_")}
        env.setdefault("RUST_BACKTRACE", "1")
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._log_file,
                                        stderr=subprocess.STDOUT, env=env)
        _LIVE.add(self)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_SECS
        context = ssl._create_unverified_context() if self.tls else None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerExited(f"lethedb exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                urllib.request.urlopen(self.endpoint, timeout=2, context=context).close()
                return
            except urllib.error.HTTPError:
                return  # Any HTTP answer (401 without a signature) means it is serving.
            except (urllib.error.URLError, ConnectionError, TimeoutError, ssl.SSLError, OSError):
                time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"lethedb not ready after {READY_TIMEOUT_SECS}s:\n{self.log_tail()}")

    def stop(self) -> Optional[int]:
        """SIGTERM, then SIGKILL if it has not exited in time. Returns the exit code."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT_SECS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self._reap()

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to flush or clean up."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._reap()

    def _reap(self) -> Optional[int]:
        code = self.process.returncode if self.process else None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        _LIVE.discard(self)
        return code

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


@atexit.register
def _kill_leftovers() -> None:
    for server in list(_LIVE):
        server.kill()


def _interrupt_on_sigterm(_signal_number, _frame) -> None:
    raise KeyboardInterrupt


# A SIGTERM (say, from `timeout` in scripts/test) normally ends Python without running fixture
# teardowns or atexit handlers; as a KeyboardInterrupt pytest stops the session and runs both.
if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
    signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
