"""The history check is live: a planted bug (reads answered from a stale cache) must fail it.

Only in the PostgreSQL run (`scripts/test postgres`). The workload of the fault tests
(history_workload.py) runs through both instances, but each client's GETs of an item pass a
cache that, every third time, answers the first copy of the item it saw instead of asking the
server: a read served from a stale cache after the item was overwritten. The checker
(histories.py) must report a key and the operations it could not place.
"""

from __future__ import annotations

import threading
import time

import pytest
from azure.cosmos import PartitionKey

from conftest import make_client
from histories import Recorder
from history_workload import run_recorded
from postgres_cluster import postgres_mode, start_pair
from signed_http import RawClient

pytestmark = pytest.mark.skipif(
    not postgres_mode(), reason="scale-out runs only against PostgreSQL: scripts/test postgres")

DATABASE, CONTAINER = "histories", "items"
COLLECTION = f"dbs/{DATABASE}/colls/{CONTAINER}"


class StaleCache(RawClient):
    """A RawClient whose item GETs keep the first answer per path and give it back every third time."""

    def __init__(self, endpoint: str, key: str):
        super().__init__(endpoint, key, 10)
        self.lock = threading.Lock()
        self.first: dict = {}
        self.gets = 0

    def request(self, verb, path, **kwargs):
        if verb.upper() != "GET":
            return super().request(verb, path, **kwargs)
        with self.lock:
            self.gets += 1
            cached = self.first.get(path) if self.gets % 3 == 0 else None
        if cached is not None:
            return cached
        response = super().request(verb, path, **kwargs)
        if response.status_code == 200:
            with self.lock:
                self.first.setdefault(path, response)
        return response


def test_a_read_served_from_a_stale_cache_fails_the_history_check(postgres, tmp_path):
    a, b = start_pair(postgres, tmp_path, database_url=postgres.fresh_database("stale"))
    try:
        make_client(a).create_database(DATABASE).create_container(CONTAINER, partition_key=PartitionKey(path="/pk"))
        recorder = Recorder()
        stop, threads = run_recorded(recorder, [StaleCache(a.endpoint, a.key), StaleCache(b.endpoint, b.key)],
                                     COLLECTION, ["shared-0", "shared-1"])
        time.sleep(3)
        stop.set()
        for thread in threads:
            thread.join(30)
        verdict = recorder.verdict()
        assert not verdict.ok, f"{len(recorder.ops)} operations passed the check through a stale cache"
        assert verdict.key in ("shared-0", "shared-1") and verdict.operations
        assert verdict.key in verdict.explain() and "read(" in verdict.explain()
        print(verdict.explain())
    finally:
        a.stop()
        b.stop()
