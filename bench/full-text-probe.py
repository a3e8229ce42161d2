#!/usr/bin/env python3
"""Full-text index figures: ITEMS items (created over HTTP by 32 threads) whose `text` is eight
words drawn from a vocabulary of 50,000 with a Zipf-like skew, in a container with a full-text
index on `/text` and, unless --indexed-only, in one without; then, one request at a time, the
median time of a point read against that of `FullTextContains(c.text, @term)` across
partitions for a term that is one document's rarest word (a selective search), each the
median of SAMPLES, with the documents each query loaded (its query metrics). Issue 27's target
is the indexed query within 5 point reads at 100,000 items.

Usage: bench/full-text-probe.py BINARY [ITEMS] [SAMPLES] [--indexed-only]   (run it with
tests/e2e/python/.venv/bin/python; defaults 100,000 items, 200 samples). Prints one JSON object.
"""

from __future__ import annotations

import concurrent.futures
import json
import pathlib
import random
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
VOCABULARY = 50_000
FULL_TEXT_POLICY = {"defaultLanguage": "en-US", "fullTextPaths": [{"path": "/text", "language": "en-US"}]}


def seed(folder: pathlib.Path, with_plain: bool) -> None:
    partition_key = {"paths": ["/pk"], "kind": "Hash", "version": 2}
    containers = [{"id": "indexed", "partitionKey": partition_key, "fullTextPolicy": FULL_TEXT_POLICY,
                   "indexingPolicy": {"fullTextIndexes": [{"path": "/text"}]}}]
    if with_plain:
        containers.append({"id": "plain", "partitionKey": partition_key, "fullTextPolicy": FULL_TEXT_POLICY})
    (folder / "seed.json").write_text(json.dumps({"databases": [{"id": "bench", "containers": containers}]}))


def word_numbers(n: int) -> list[int]:
    """The eight word numbers of item `n`: small numbers are common, large ones rare."""
    rng = random.Random(n)
    return [int(VOCABULARY ** rng.random()) for _ in range(8)]


def document(n: int) -> dict:
    text = " ".join(f"w{number}" for number in word_numbers(n))
    return {"id": f"i{n}", "pk": f"p{n % 1000}", "n": n, "text": text}


def load(endpoint: str, container: str, items: int, threads: int = 32) -> None:
    """Creates the items concurrently, so that they share durable commits."""
    def worker(first: int) -> None:
        raw = RawClient(endpoint, KEY)
        for n in range(first, items, threads):
            body = document(n)
            answer = raw.create_item(f"dbs/bench/colls/{container}", body, body["pk"])
            assert answer.status_code == 201, answer.text
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(worker, range(threads)))


def query(raw: RawClient, container: str, term: str) -> tuple[float, int, int]:
    """One cross-partition query followed to its last page: seconds, rows, documents loaded."""
    headers = {"x-ms-documentdb-isquery": "True", "content-type": "application/query+json",
               "x-ms-documentdb-query-enablecrosspartition": "True",
               "x-ms-documentdb-populatequerymetrics": "True", "x-ms-max-item-count": "1000"}
    body = {"query": "SELECT VALUE c.id FROM c WHERE FullTextContains(c.text, @term)",
            "parameters": [{"name": "@term", "value": term}]}
    rows, loaded, started = 0, 0, time.perf_counter()
    while True:
        answer = raw.request("POST", f"dbs/bench/colls/{container}/docs", body=body, headers=headers)
        assert answer.status_code == 200, answer.text
        rows += len(answer.json()["Documents"])
        metrics = dict(part.split("=", 1) for part in
                       answer.headers.get("x-ms-documentdb-query-metrics", "").split(";") if "=" in part)
        loaded += int(float(metrics.get("retrievedDocumentCount", 0)))
        token = answer.headers.get("x-ms-continuation")
        if not token:
            return time.perf_counter() - started, rows, loaded
        headers["x-ms-continuation"] = token


def figures(raw: RawClient, container: str, items: int, samples: int) -> dict:
    rng = random.Random(7)
    reads, searches, loaded, found = [], [], [], 0
    for _ in range(samples):
        n = rng.randrange(items)
        started = time.perf_counter()
        answer = raw.read_item(f"dbs/bench/colls/{container}", f"i{n}", f"p{n % 1000}")
        reads.append(time.perf_counter() - started)
        assert answer.status_code == 200, answer.text
        seconds, rows, documents = query(raw, container, f"w{max(word_numbers(n))}")
        assert rows >= 1
        searches.append(seconds)
        loaded.append(documents)
        found += rows
    read_ms = statistics.median(reads) * 1000
    search_ms = statistics.median(searches) * 1000
    return {"point_read_ms_median": round(read_ms, 2), "full_text_ms_median": round(search_ms, 2),
            "full_text_over_point_read": round(search_ms / read_ms, 2),
            "rows_per_query_mean": round(found / samples, 1),
            "documents_loaded_median": statistics.median(loaded)}


def main() -> None:
    arguments = [argument for argument in sys.argv[1:] if not argument.startswith("--")]
    with_plain = "--indexed-only" not in sys.argv
    binary = arguments[0]
    items = int(arguments[1]) if len(arguments) > 1 else 100_000
    samples = int(arguments[2]) if len(arguments) > 2 else 200
    work = pathlib.Path(tempfile.mkdtemp())
    seed(work, with_plain)
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
        containers = ["indexed", "plain"] if with_plain else ["indexed"]
        started = time.perf_counter()
        for container in containers:
            load(ready["endpoint"], container, items)
        report = {"items": items, "samples": samples, "loaded_secs": round(time.perf_counter() - started, 1)}
        raw = RawClient(ready["endpoint"], KEY, timeout_secs=600)
        for container in containers:
            # The unindexed container scans every item per query: fewer samples suffice.
            count = samples if container == "indexed" else max(5, samples // 20)
            report[container] = figures(raw, container, items, count)
        print(json.dumps(report))
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
