#!/usr/bin/env python3
"""BM25 ranking figures: the items of `full-text-probe.py` (ITEMS items whose `text` is eight
words of a skewed 50,000-word vocabulary, in a container with a full-text index on `/text` and,
unless --indexed-only, in one without), then, one request at a time, the median time of a point
read against that of `SELECT TOP 10 c.id FROM c ORDER BY RANK FullTextScore(c.text, @rare,
@common)` across partitions through the azure-cosmos Python SDK, which runs the hybrid pipeline
as against the service: the query plan, the global statistics query and the component query
of every range. The terms are one document's rarest and commonest words. Issue 27's target is
the query within 20 point reads at 100,000 items.

With --phases, each figure also has the median time of each kind of request the SDK sent
per query (the query plan, the global statistics query, the component query, other), timed
around the SDK's own HTTP send.

Usage: bench/full-text-rank-probe.py BINARY [ITEMS] [SAMPLES] [--indexed-only] [--phases]
(defaults 100,000 items, 20 samples; run it with a Python that has `requests` and the
azure-cosmos SDK importable, e.g. the SDK suite's venv `target/sdk-suite-venv/bin/python` with
PYTHONPATH=SDIST_DIR). Prints one JSON object.
"""

from __future__ import annotations

import importlib.util
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

from azure.cosmos import CosmosClient
from azure.cosmos import _synchronized_request

# Seconds per kind of request of the query being timed (--phases).
PHASES: dict[str, float] = {}


def _kind(request, request_data) -> str:
    """The kind of one request the SDK sends for a ranked query."""
    if request.headers.get("x-ms-cosmos-is-query-plan-request"):
        return "plan"
    text = json.dumps(request_data) if request_data is not None else ""
    if "documentCount" in text:
        return "statistics"
    if "_FullTextScore" in text:
        return "component"
    return "other"


def _timed(send):
    def timed(client, request_params, global_endpoint_manager, connection_policy, pipeline_client,
              request, request_data, **kwargs):
        started = time.perf_counter()
        try:
            return send(client, request_params, global_endpoint_manager, connection_policy,
                        pipeline_client, request, request_data, **kwargs)
        finally:
            kind = _kind(request, request_data)
            PHASES[kind] = PHASES.get(kind, 0.0) + time.perf_counter() - started
    return timed

_sibling = importlib.util.spec_from_file_location(
    "full_text_probe", pathlib.Path(__file__).resolve().parent / "full-text-probe.py")
probe = importlib.util.module_from_spec(_sibling)
_sibling.loader.exec_module(probe)
QUERY = "SELECT TOP 10 c.id FROM c ORDER BY RANK FullTextScore(c.text, @rare, @common)"


def ranked(container, rare: str, common: str) -> tuple[float, int]:
    """One ranked query through the SDK's pipeline: seconds and rows."""
    parameters = [{"name": "@rare", "value": rare}, {"name": "@common", "value": common}]
    started = time.perf_counter()
    rows = list(container.query_items(QUERY, parameters=parameters, enable_cross_partition_query=True))
    return time.perf_counter() - started, len(rows)


def figures(raw, client, container_id: str, items: int, samples: int) -> dict:
    container = client.get_database_client("bench").get_container_client(container_id)
    rng = random.Random(7)
    reads, searches, phases = [], [], []
    for _ in range(samples):
        n = rng.randrange(items)
        started = time.perf_counter()
        answer = raw.read_item(f"dbs/bench/colls/{container_id}", f"i{n}", f"p{n % 1000}")
        reads.append(time.perf_counter() - started)
        assert answer.status_code == 200, answer.text
        words = probe.word_numbers(n)
        PHASES.clear()
        seconds, rows = ranked(container, f"w{max(words)}", f"w{min(words)}")
        assert rows == 10, rows
        searches.append(seconds)
        phases.append(dict(PHASES))
    read_ms = statistics.median(reads) * 1000
    search_ms = statistics.median(searches) * 1000
    report = {"point_read_ms_median": round(read_ms, 2), "bm25_top10_ms_median": round(search_ms, 2),
              "bm25_top10_over_point_read": round(search_ms / read_ms, 2)}
    kinds = sorted({kind for sample in phases for kind in sample})
    if "--phases" in sys.argv:
        report["phase_ms_median"] = {
            kind: round(statistics.median(sample.get(kind, 0.0) for sample in phases) * 1000, 2)
            for kind in kinds}
    return report


def main() -> None:
    arguments = [argument for argument in sys.argv[1:] if not argument.startswith("--")]
    with_plain = "--indexed-only" not in sys.argv
    binary = arguments[0]
    items = int(arguments[1]) if len(arguments) > 1 else 100_000
    samples = int(arguments[2]) if len(arguments) > 2 else 20
    if "--phases" in sys.argv:
        _synchronized_request.SynchronizedRequest = _timed(_synchronized_request.SynchronizedRequest)
    work = pathlib.Path(tempfile.mkdtemp())
    probe.seed(work, with_plain)
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
            probe.load(ready["endpoint"], container, items)
        report = {"items": items, "samples": samples, "loaded_secs": round(time.perf_counter() - started, 1)}
        raw = probe.RawClient(ready["endpoint"], probe.KEY, timeout_secs=600)
        client = CosmosClient(ready["endpoint"], probe.KEY, connection_timeout=600)
        for container in containers:
            report[container] = figures(raw, client, container, items, samples)
        print(json.dumps(report))
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
