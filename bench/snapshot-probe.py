#!/usr/bin/env python3
"""Snapshot figures on the durable store: the time to save and to restore a named snapshot of
ITEMS items (~1 KiB each, created over HTTP by 32 threads first), each the median of five, beside the
physical reference of copying the store's file once (what a snapshot without copy-on-write
would at least cost). Between restores, 200 items are overwritten so each restore has work.

Usage: bench/snapshot-probe.py BINARY [ITEMS]   (run it with tests/e2e/python/.venv/bin/python;
default 100,000 items). Prints one JSON object.
"""

from __future__ import annotations

import concurrent.futures
import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests/e2e/python"))
from signed_http import RawClient  # noqa: E402

KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
SNAPSHOTS = "/_lethedb/snapshots"


def seed(folder: pathlib.Path) -> None:
    (folder / "seed.json").write_text(json.dumps({"databases": [{"id": "bench", "containers": [
        {"id": "c", "partitionKey": {"paths": ["/pk"], "kind": "Hash", "version": 2}}]}]}))


def load(endpoint: str, items: int, threads: int = 32) -> None:
    """Creates the items concurrently, so that they share durable commits."""
    def worker(first: int) -> None:
        raw = RawClient(endpoint, KEY)
        for n in range(first, items, threads):
            answer = raw.create_item("dbs/bench/colls/c", {"id": f"i{n}", "pk": f"p{n % 1000}", "n": n,
                                                          "payload": "x" * 900}, f"p{n % 1000}")
            assert answer.status_code == 201, answer.text
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(worker, range(threads)))


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    binary, items = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    work = pathlib.Path(tempfile.mkdtemp())
    seed(work)
    server = subprocess.Popen([binary, "serve", "--bind", "127.0.0.1:0", "--no-rate-limit", "--data-dir",
                               str(work / "data"), "--seed", str(work / "seed.json")],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        # The log may share stdout; the ready line is the one JSON object.
        line = server.stdout.readline()
        while line and not line.startswith("{"):
            line = server.stdout.readline()
        if not line:
            raise SystemExit("the server stopped before it was ready")
        ready = json.loads(line)
        # Keep reading the log, so that a full pipe never stalls the server.
        threading.Thread(target=server.stdout.read, daemon=True).start()
        seeded_secs = timed(lambda: load(ready["endpoint"], items))
        raw = RawClient(ready["endpoint"], KEY, timeout_secs=600)

        def call(verb: str, path: str) -> None:
            answer = raw.request(verb, SNAPSHOTS + path, signed_as=SNAPSHOTS)
            assert answer.status_code in (200, 201), answer.text

        def overwrite() -> None:
            for n in range(200):
                raw.create_item("dbs/bench/colls/c", {"id": f"new{n}", "pk": f"p{n}"}, f"p{n}")

        saves = [timed(lambda: call("POST", "/start")) for _ in range(5)]
        restores = []
        for _ in range(5):
            overwrite()
            restores.append(timed(lambda: call("POST", "/start/restore")))
        store = work / "data"
        size = sum(path.stat().st_size for path in store.rglob("*") if path.is_file())
        copy = timed(lambda: shutil.copytree(store, work / "copy"))
        print(json.dumps({
            "items": items, "loaded_secs": round(seeded_secs, 1), "store_bytes": size,
            "save_ms_median": round(statistics.median(saves) * 1000, 1),
            "restore_ms_median": round(statistics.median(restores) * 1000, 1),
            "copy_store_ms": round(copy * 1000, 1),
            "restore_over_copy": round(statistics.median(restores) / copy, 3),
        }))
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
