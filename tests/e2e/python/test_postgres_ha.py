"""High availability: two LetheDB instances on a Patroni cluster whose primary dies under load.

Only in `scripts/test postgres-ha`, which starts the cluster (scripts/lib/patroni.sh: one etcd,
two Patroni nodes over PostgreSQL in synchronous mode) and names it in LETHEDB_TEST_HA_POSTGRES
(a URL listing both nodes, with target_session_attrs=read-write) and LETHEDB_TEST_HA_CLUSTER
(a JSON file describing the nodes). Writers use the Python SDK, as an application would, and
record every call: what it sent, what it was answered, when, and every HTTP status the SDK saw
on the way (its own retries included). A write answered 2xx is acknowledged and must be found
afterwards exactly as acknowledged (body, `_etag`, `_ts`); one answered otherwise is in doubt
and may be found whole or not at all.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest
from azure.core.exceptions import AzureError
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import CosmosHttpResponseError

from conftest import make_client
from histories import Recorder, session_violations
from history_workload import run_recorded
from postgres_cluster import start_instance, wait_until
from signed_http import RawClient

HA_URL = os.environ.get("LETHEDB_TEST_HA_POSTGRES")
CLUSTER_FILE = os.environ.get("LETHEDB_TEST_HA_CLUSTER")

pytestmark = pytest.mark.skipif(
    not (HA_URL and CLUSTER_FILE), reason="needs the Patroni cluster: scripts/test postgres-ha")

DATABASE, CONTAINER = "ha", "items"
COLLECTION = f"dbs/{DATABASE}/colls/{CONTAINER}"
# Keys that recorded clients read, upsert and replace with If-Match through both instances; the
# history is checked for linearizability (histories.py).
SHARED_KEYS = [f"shared-{n}" for n in range(3)]
WRITERS_PER_INSTANCE = 2
PARTITIONS_PER_WRITER = 4
# Load is running on both instances, through every writer, before the kill.
ACKED_BEFORE_KILL = 150
# Patroni (primary_start_timeout 0, loop_wait 1) promotes the standby within a few seconds.
PROMOTION_SECS_MAX = 30.0
# Within this long of the promotion every writer has ACKED_AFTER_FAILOVER writes acknowledged,
# and no writer's failover (see failover_gaps) lasts longer.
FAILOVER_SECS_MAX = 30.0
# Writes each writer gets acknowledged after the failover before the load stops.
ACKED_AFTER_FAILOVER = 20
# No call, the SDK's own retry of a 503 included, takes longer: an instance answers a 503
# within the connect timeout (3 s per host) or the operation timeout (10 s), never hangs.
ANSWER_SECS_MAX = 15.0


@dataclass
class Node:
    name: str
    pg_port: int
    rest: str
    data_dir: Path

    def answers_200(self, path: str) -> bool:
        """Whether Patroni's REST API answers 200 to `path` (/primary, /sync, /replica)."""
        try:
            with urllib.request.urlopen(f"{self.rest}{path}", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def postmaster_pid(self) -> int:
        return int((self.data_dir / "postmaster.pid").read_text().splitlines()[0])


def cluster_nodes() -> list[Node]:
    described = json.loads(Path(CLUSTER_FILE).read_text())["nodes"]
    return [Node(n["name"], n["pg_port"], n["rest"], Path(n["data_dir"])) for n in described]


@dataclass
class Ack:
    """An acknowledged write: what was sent, and the `_etag` and `_ts` it was answered with."""
    item_id: str
    pk: str
    v: int
    etag: str
    ts: int
    at: float


@dataclass
class Writer:
    """One client thread's record of its calls through one instance."""
    name: str
    instance: str
    acks: list = field(default_factory=list)              # Ack, in the order answered
    doubtful: dict = field(default_factory=dict)          # id -> the set of `v` not acknowledged
    answers: list = field(default_factory=list)           # (sent, done, status or error, upsert)
    http_statuses: list = field(default_factory=list)     # every response the SDK received

    def latest_acks(self) -> dict:
        """Each item's last acknowledged write."""
        return {ack.item_id: ack for ack in self.acks}

    def successes_after(self, instant: float) -> int:
        return sum(1 for ack in self.acks if ack.at > instant)


def write_loop(writer: Writer, endpoint_server, stop: threading.Event) -> None:
    """Creates new items over a few partitions and, every third write, upserts the writer's
    counter item with a higher `v`, until `stop` is set. Nothing is retried here: a failed
    write stays in doubt and the loop goes on with the next."""
    client = make_client(endpoint_server, read_timeout=int(ANSWER_SECS_MAX),
                         raw_response_hook=lambda response: writer.http_statuses.append(
                             response.http_response.status_code))
    container = client.get_database_client(DATABASE).get_container_client(CONTAINER)
    for n in range(1_000_000):
        if stop.is_set():
            return
        upsert = n % 3 == 2
        item_id = f"{writer.name}-counter" if upsert else f"{writer.name}-{n}"
        body = {"id": item_id, "pk": f"{writer.name}-p{n % PARTITIONS_PER_WRITER}", "v": n}
        if upsert:
            body["pk"] = f"{writer.name}-counters"
        sent = time.monotonic()
        try:
            answered = container.upsert_item(body) if upsert else container.create_item(body)
            outcome = 200
        except CosmosHttpResponseError as error:
            answered, outcome = None, error.status_code
        except AzureError as error:  # no HTTP answer at all
            answered, outcome = None, f"{type(error).__name__}: {error}"[:200]
        done = time.monotonic()
        writer.answers.append((sent, done, outcome, upsert))
        if answered is not None:
            writer.acks.append(Ack(item_id, body["pk"], n, answered["_etag"], answered["_ts"], done))
        else:
            writer.doubtful.setdefault(item_id, set()).add(n)
            time.sleep(0.05)  # a client backs off a little after a failure


def kill_the_primary(nodes: list[Node]) -> tuple[Node, Node, float]:
    """SIGKILLs the postmaster of the node Patroni has as primary; returns it, the standby and
    the instant of the kill."""
    primary = next(node for node in nodes if node.answers_200("/primary"))
    standby = next(node for node in nodes if node is not primary)
    assert standby.answers_200("/sync"), f"{standby.name} is not the synchronous standby"
    os.kill(primary.postmaster_pid(), signal.SIGKILL)
    return primary, standby, time.monotonic()


def failover_gaps(writers: list[Writer], killed_at: float, promoted_at: float) -> dict:
    """Per writer, the failover as it saw it: its longest time without a success across the
    kill and the promotion, from one acknowledged write (at or before the promotion) to its
    next (after the kill). A write in flight at the kill may still be acknowledged a moment
    later (its commit had reached the standby), so the last success before the outage can
    come just after the kill."""
    gaps = {}
    for writer in writers:
        times = sorted(ack.at for ack in writer.acks)
        assert times[0] <= killed_at < promoted_at < times[-1], f"{writer.name}: no success on both sides"
        gaps[writer.name] = max(later - earlier for earlier, later in zip(times, times[1:])
                                if earlier <= promoted_at and later > killed_at)
    return gaps


def check_answers(writers: list[Writer]) -> None:
    """Every call ended in a success or a 503 (a create also in a 409: the SDK's retry of a
    503 may find the first attempt's item), within ANSWER_SECS_MAX; every HTTP answer the
    SDK saw was below 500 or a 503."""
    for writer in writers:
        unexpected = [(round(done - sent, 2), outcome) for sent, done, outcome, upsert in writer.answers
                      if outcome not in (200, 503) and not (outcome == 409 and not upsert)]
        assert not unexpected, f"{writer.name}: {unexpected[:5]}"
        slow = [round(done - sent, 2) for sent, done, _, _ in writer.answers if done - sent > ANSWER_SECS_MAX]
        assert not slow, f"{writer.name}: calls took {slow[:5]} s"
        server_errors = [status for status in writer.http_statuses if status >= 500 and status != 503]
        assert not server_errors, f"{writer.name}: HTTP {server_errors[:5]}"


def check_timestamps(writers: list[Writer], killed_at: float) -> None:
    """`_ts` never goes backwards: not along one writer's acknowledged writes, and not from
    any write acknowledged before the kill to any acknowledged after it."""
    for writer in writers:
        stamps = [ack.ts for ack in writer.acks]
        assert stamps == sorted(stamps), f"{writer.name}: _ts went back"
    before = max(ack.ts for writer in writers for ack in writer.acks if ack.at <= killed_at)
    after = min(ack.ts for writer in writers for ack in writer.acks if ack.at > killed_at)
    assert after >= before, f"_ts {after} after the failover, {before} before it"


def check_contents(container, writers: list[Writer]) -> None:
    """Every acknowledged write is there as acknowledged; a write in doubt is there whole or
    not at all; nothing else is there (but the recorded clients' shared keys)."""
    found = {item["id"]: item for item in container.query_items(
        "SELECT * FROM c", enable_cross_partition_query=True)}
    known = set(SHARED_KEYS)
    for writer in writers:
        latest = writer.latest_acks()
        for item_id, ack in latest.items():
            item = found.get(item_id)
            assert item is not None, f"acknowledged {item_id} (v {ack.v}) lost"
            doubtful_later = {v for v in writer.doubtful.get(item_id, ()) if v > ack.v}
            if item["v"] != ack.v:
                assert item["v"] in doubtful_later, f"{item_id}: v {item['v']}, acknowledged {ack.v}"
            else:
                assert (item["_etag"], item["_ts"], item["pk"]) == (ack.etag, ack.ts, ack.pk), item_id
        for item_id, attempts in writer.doubtful.items():
            if item_id in found and item_id not in latest:
                assert found[item_id]["v"] in attempts, f"{item_id}: v {found[item_id]['v']}"
        known |= set(latest) | set(writer.doubtful)
    assert set(found) <= known, sorted(set(found) - known)[:5]


def start_load(instances: dict, stop: threading.Event) -> tuple[list[Writer], list[threading.Thread]]:
    writers, threads = [], []
    for instance_name, instance in instances.items():
        for number in range(WRITERS_PER_INSTANCE):
            writer = Writer(f"{instance_name}{number}", instance_name)
            writers.append(writer)
            threads.append(threading.Thread(target=write_loop, args=(writer, instance, stop), daemon=True))
    for thread in threads:
        thread.start()
    return writers, threads


def test_the_primary_killed_under_load_fails_over_with_nothing_acknowledged_lost(tmp_path):
    """Writers create and upsert through both instances; the primary's postmaster is
    SIGKILLed; Patroni promotes the synchronous standby. Every call is a success or a 503 in
    bounded time, never a 500; both instances serve again by themselves, through the URL's
    other host; nothing acknowledged is lost or changed; `_ts` never goes back. Prints the
    failover time each writer saw (last success before the outage to first success after)."""
    nodes = cluster_nodes()
    instances = {"A": start_instance(tmp_path / "a", HA_URL), "B": start_instance(tmp_path / "b", HA_URL)}
    pids = {name: server.process.pid for name, server in instances.items()}
    stop = threading.Event()
    try:
        make_client(instances["A"]).create_database(DATABASE).create_container(
            CONTAINER, partition_key=PartitionKey(path="/pk"))
        writers, threads = start_load(instances, stop)
        recorder = Recorder()
        raw = [RawClient(server.endpoint, server.key, 10) for server in instances.values()]
        stop_recorded, recorded = run_recorded(recorder, raw, COLLECTION, SHARED_KEYS, doubt_pause=0.25)

        def acked() -> int:
            return sum(len(writer.acks) for writer in writers)

        assert wait_until(lambda: acked() >= ACKED_BEFORE_KILL and all(w.acks for w in writers), 60, 0.01), \
            f"only {acked()} writes acknowledged before the kill"
        acked_at_kill = acked()
        primary, standby, killed_at = kill_the_primary(nodes)
        assert wait_until(lambda: standby.answers_200("/primary"), PROMOTION_SECS_MAX, 0.05), \
            f"{standby.name} not promoted in {PROMOTION_SECS_MAX} s"
        promoted_at = time.monotonic()
        served_again = wait_until(lambda: all(w.successes_after(promoted_at) >= ACKED_AFTER_FAILOVER
                                              for w in writers), FAILOVER_SECS_MAX, 0.05)
        stop.set()
        stop_recorded.set()
        for thread in threads + recorded:
            thread.join(ANSWER_SECS_MAX * 2)
        assert served_again, {w.name: w.successes_after(promoted_at) for w in writers}
        assert not any(thread.is_alive() for thread in threads + recorded), "a writer hangs"
        verdict = recorder.verdict()
        assert verdict.ok, verdict.explain()
        assert not session_violations(recorder.ops, verdict.order)
        in_doubt = sum(1 for op in recorder.ops if op.ok is None)
        print(f"\nhistory: {len(recorder.ops)} operations ({in_doubt} in doubt), linearizable")

        gaps = failover_gaps(writers, killed_at, promoted_at)
        doubtful = sum(len(attempts) for w in writers for attempts in w.doubtful.values())
        print(f"\n{primary.name}'s postmaster SIGKILLed after {acked_at_kill} acknowledged writes;"
              f" {standby.name} promoted {promoted_at - killed_at:.2f} s later")
        print("failover seen by each writer (last success before the outage to first after): "
              + ", ".join(f"{name} {gap:.2f} s" for name, gap in gaps.items())
              + f"; median {statistics.median(gaps.values()):.2f} s, max {max(gaps.values()):.2f} s")
        print(f"{acked()} writes acknowledged in all, {doubtful} in doubt")
        assert max(gaps.values()) <= FAILOVER_SECS_MAX, gaps

        check_answers(writers)
        check_timestamps(writers, killed_at)
        for name, server in instances.items():
            assert server.process.poll() is None and server.process.pid == pids[name], f"{name} was restarted"
            container = make_client(server).get_database_client(DATABASE).get_container_client(CONTAINER)
            check_contents(container, writers)
    except BaseException:
        for name, server in instances.items():
            print(f"--- instance {name} (log tail) ---\n{server.log_tail()}")
        raise
    finally:
        stop.set()
        for server in instances.values():
            server.stop()
