#!/usr/bin/env python3
"""Change-feed figures for a running LetheDB, measured through the official Python SDK:

1. latest-version read throughput (items/s) of a reader following a writer that runs at the
   same time;
2. idle polls: 304 answers per second, and their median latency, on a container nobody writes;
3. the delay from each item's expiry instant to its TTL delete being readable in the
   all-versions feed (p50/p99), over ITEMS items with ttl 1-3 s.

Usage: bench/change-feed-probe.py ENDPOINT [ITEMS]   (run it with tests/e2e/python/.venv/bin/python;
the server should run with --no-rate-limit). Prints one JSON object.
"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
import uuid

from azure.cosmos import CosmosClient, PartitionKey

KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="


def etag(container):
    return container.client_connection.last_response_headers["etag"]


def follow_throughput(database, seconds=5.0):
    container = database.create_container(f"f-{uuid.uuid4().hex[:8]}", PartitionKey(path="/pk"))
    stop = threading.Event()

    def writer():
        client = CosmosClient(sys.argv[1], KEY)
        handle = client.get_database_client(database.id).get_container_client(container.id)
        i = 0
        while not stop.is_set():
            handle.upsert_item({"id": f"w{i}", "pk": f"p{i % 50}", "payload": "x" * 200})
            i += 1

    list(container.query_items_change_feed(start_time="Now"))
    token = etag(container)
    thread = threading.Thread(target=writer)
    thread.start()
    read = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        read += len(list(container.query_items_change_feed(continuation=token, max_item_count=1000)))
        token = etag(container)
    stop.set()
    thread.join()
    return read / (time.perf_counter() - started)


def idle_polls(database, seconds=3.0):
    container = database.create_container(f"i-{uuid.uuid4().hex[:8]}", PartitionKey(path="/pk"))
    list(container.query_items_change_feed(start_time="Now"))
    token = etag(container)
    latencies = []
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        begin = time.perf_counter()
        assert list(container.query_items_change_feed(continuation=token)) == []
        latencies.append(time.perf_counter() - begin)
    return len(latencies) / seconds, statistics.median(latencies) * 1000


def ttl_event_delay(database, items):
    container = database.create_container(
        f"t-{uuid.uuid4().hex[:8]}", PartitionKey(path="/pk"), default_ttl=-1
    )
    list(container.query_items_change_feed(mode="AllVersionsAndDeletes"))
    token = etag(container)
    expiry = {}
    for i in range(items):
        ttl = 1 + i % 3
        item = container.upsert_item({"id": f"t{i}", "pk": f"p{i % 20}", "ttl": ttl})
        # The server's write instant is within this round trip; `_ts` is whole seconds, so
        # take the local clock just after the answer (an upper bound: delays are not flattered).
        expiry[item["id"]] = time.time() + ttl
    delays = []
    deadline = time.time() + 10
    while len(delays) < items and time.time() < deadline:
        for entry in container.query_items_change_feed(mode="AllVersionsAndDeletes", continuation=token):
            meta = entry["metadata"]
            if meta.get("timeToLiveExpired"):
                delays.append(max(0.0, time.time() - expiry[meta["id"]]))
        token = etag(container)
        time.sleep(0.01)
    delays.sort()
    return {
        "events": len(delays),
        "p50_ms": round(delays[len(delays) // 2] * 1000, 1),
        "p99_ms": round(delays[int(len(delays) * 0.99) - 1] * 1000, 1),
    }


def main():
    endpoint = sys.argv[1]
    items = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    client = CosmosClient(endpoint, KEY)
    database = client.create_database(f"cf-probe-{uuid.uuid4().hex[:8]}")
    try:
        follow = follow_throughput(database)
        polls_per_sec, poll_ms = idle_polls(database)
        delay = ttl_event_delay(database, items)
    finally:
        client.delete_database(database.id)
    print(json.dumps({
        "latest_version_follow_items_per_sec": round(follow),
        "idle_polls_per_sec": round(polls_per_sec),
        "idle_poll_median_ms": round(poll_ms, 2),
        "ttl_event_delay": delay,
    }))


if __name__ == "__main__":
    main()
