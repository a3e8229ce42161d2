"""Faults under load with LetheDB processes on one PostgreSQL database (`serve --postgres`).

Only in the PostgreSQL run (`scripts/test postgres`). Requests are sent as raw signed HTTP
(signed_http.py), one HTTP exchange each, without the SDK's retries: what is recorded is what
the server answered and how long it took. A write answered 2xx is acknowledged and must be
found afterwards; one answered otherwise, or not at all, is in doubt and may be found whole or
not at all, never in part.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Optional

import pytest
import requests
from azure.cosmos import PartitionKey

from conftest import make_client, unique_id
from histories import Recorder, session_violations
from history_workload import run_recorded
from postgres_cluster import Cluster, postgres_mode, start_instance, start_pair, wait_until
from signed_http import RawClient

pytestmark = pytest.mark.skipif(
    not postgres_mode(), reason="scale-out runs only against PostgreSQL: scripts/test postgres")

DATABASE, CONTAINER = "faults", "items"
COLLECTION = f"dbs/{DATABASE}/colls/{CONTAINER}"
WRITERS = 4
BATCH_SIZE = 4
ACKED_BEFORE_KILL = 300
# With PostgreSQL down, an answer (a 503) comes within the connect timeout, 3 s
# (docs/scale-out.md), with room for a busy machine: never a hang.
ANSWER_SECS_MAX = 5.0
# After PostgreSQL is back, each instance must serve again within this long, by itself.
RECOVERY_SECS_MAX = 10.0
GAP_SECS = 3.0


def setup_container(server) -> None:
    make_client(server).create_database(DATABASE).create_container(CONTAINER, partition_key=PartitionKey(path="/pk"))


def assert_history_checks(recorder: Recorder) -> None:
    """The recorded history is linearizable per key, and each client reads its own writes."""
    verdict = recorder.verdict()
    assert verdict.ok, verdict.explain()
    assert not session_violations(recorder.ops, verdict.order)
    print(f"history: {len(recorder.ops)} operations, linearizable")


@dataclass
class Written:
    """What one writer thread sent through the instance, and what became of it."""
    acked_items: dict = field(default_factory=dict)      # id -> v
    acked_batches: list = field(default_factory=list)    # partition keys
    doubtful_items: dict = field(default_factory=dict)   # id -> v
    doubtful_batches: list = field(default_factory=list)
    counter_acked: Optional[int] = None
    counter_doubtful: list = field(default_factory=list)
    refused: list = field(default_factory=list)
    last_acked_at: float = 0.0


def writer_loop(client: RawClient, number: int, written: Written, stop: threading.Event) -> None:
    """Creates single items, 4-item batches and upserts of one counter item, in turn, until the
    instance stops answering or `stop` is set."""
    for n in range(1_000_000):
        if stop.is_set():
            return
        kind = n % 3
        try:
            if kind == 0:
                item_id = f"w{number}-s{n}"
                response = client.create_item(COLLECTION, {"id": item_id, "pk": f"w{number}", "v": n}, f"w{number}")
            elif kind == 1:
                pk = f"w{number}-b{n}"
                operations = [{"operationType": "Create", "resourceBody": {"id": f"{pk}-{k}", "pk": pk}}
                              for k in range(BATCH_SIZE)]
                response = client.batch(COLLECTION, operations, pk)
            else:
                response = client.request("POST", f"{COLLECTION}/docs", partition_key=f"w{number}",
                                          body={"id": f"w{number}-counter", "pk": f"w{number}", "v": n},
                                          headers={"x-ms-documentdb-is-upsert": "True"})
            status = response.status_code
        except requests.RequestException:
            status = None
        acked = status is not None and 200 <= status < 300
        if acked:
            written.last_acked_at = time.monotonic()
        if acked and kind == 1 and [r["statusCode"] for r in response.json()] != [201] * BATCH_SIZE:
            written.refused.append((n, status, response.text[:200]))  # a batch must commit whole
        elif status is not None and 400 <= status < 500:
            written.refused.append((n, status, response.text[:200]))
        elif kind == 0:
            (written.acked_items if acked else written.doubtful_items)[item_id] = n
        elif kind == 1:
            (written.acked_batches if acked else written.doubtful_batches).append(pk)
        elif acked:
            written.counter_acked, written.counter_doubtful = n, []
        else:
            written.counter_doubtful.append(n)
        if status is None:
            return  # the instance is gone


def test_an_instance_killed_mid_write_loses_nothing_acknowledged(postgres, tmp_path):
    """Writers stream creates, batches and upserts through A and through B; A is SIGKILLed
    mid-stream. B's writers go on being served without a pause (the killed process left no
    lock behind). Through B: every acknowledged write is there, every batch is whole or
    absent, nothing unknown exists, and the writes that were in flight on A can be made again
    at once. A new instance serves it all."""
    url = postgres.fresh_database("kill")
    a, b = start_pair(postgres, tmp_path, database_url=url)
    try:
        setup_container(b)
        stop = threading.Event()
        # Writers 0..WRITERS-1 go through A, the last two through B.
        written = [Written() for _ in range(WRITERS + 2)]
        targets = [a] * WRITERS + [b, b]
        threads = [threading.Thread(target=writer_loop, args=(RawClient(s.endpoint, s.key, 10), n, written[n], stop))
                   for n, s in enumerate(targets)]
        for thread in threads:
            thread.start()
        # Beside them, clients reading and writing a few shared keys through both, recorded.
        recorder = Recorder()
        stop_recorded, recorded = run_recorded(recorder, [RawClient(a.endpoint, a.key, 10), RawClient(b.endpoint, b.key, 10)],
                                               COLLECTION, [f"shared-{n}" for n in range(3)])

        def acked() -> int:
            return sum(len(w.acked_items) + len(w.acked_batches) for w in written)

        assert wait_until(lambda: acked() >= ACKED_BEFORE_KILL, 60, 0.01), f"only {acked()} acknowledged"
        a.kill()
        killed_at, acked_at_kill = time.monotonic(), acked()
        time.sleep(1.5)
        stop.set()
        stop_recorded.set()
        for thread in threads + recorded:
            thread.join(30)
        assert_history_checks(recorder)
        for w in written[WRITERS:]:
            assert not (w.doubtful_items or w.doubtful_batches or w.counter_doubtful), "B failed a write"
            assert w.last_acked_at > killed_at + 1.0, "B's writers were served after the kill"
        assert not any(w.refused for w in written), [w.refused for w in written]
        doubtful = sum(len(w.doubtful_items) + len(w.doubtful_batches) + len(w.counter_doubtful) for w in written)
        print(f"{acked_at_kill} writes acknowledged before SIGKILL ({acked()} in all), {doubtful} in doubt")

        container = make_client(b).get_database_client(DATABASE).get_container_client(CONTAINER)
        found = {item["id"]: item for item in container.read_all_items()}
        known = set()
        for number, w in enumerate(written):
            for item_id, v in w.acked_items.items():
                assert found.get(item_id, {}).get("v") == v, f"acknowledged {item_id} lost"
            for item_id, v in w.doubtful_items.items():
                assert item_id not in found or found[item_id]["v"] == v
            for pk in w.acked_batches + w.doubtful_batches:
                present = [f"{pk}-{k}" in found for k in range(BATCH_SIZE)]
                assert all(present) or (not any(present) and pk in w.doubtful_batches), (pk, present)
            counter = found.get(f"w{number}-counter")
            if w.counter_acked is not None:
                assert counter is not None and counter["v"] in [w.counter_acked] + w.counter_doubtful
            known |= set(w.acked_items) | set(w.doubtful_items) | {f"w{number}-counter"}
            known |= {f"{pk}-{k}" for pk in w.acked_batches + w.doubtful_batches for k in range(BATCH_SIZE)}
        known |= {op.key for op in recorder.ops}
        assert set(found) <= known, sorted(set(found) - known)[:5]

        raw_b = RawClient(b.endpoint, b.key, 10)
        for number, w in enumerate(written):
            for item_id in list(w.doubtful_items) + [f"w{number}-counter"]:
                response = raw_b.request("POST", f"{COLLECTION}/docs", partition_key=f"w{number}",
                                         body={"id": item_id, "pk": f"w{number}", "v": -1},
                                         headers={"x-ms-documentdb-is-upsert": "True"})
                assert response.status_code in (200, 201), response.text
            for pk in w.doubtful_batches:
                response = raw_b.batch(COLLECTION, [{"operationType": "Upsert", "resourceBody": {"id": f"{pk}-0", "pk": pk}}], pk)
                assert response.status_code == 200, response.text

        again = start_instance(tmp_path / "again", url)
        try:
            reread = make_client(again).get_database_client(DATABASE).get_container_client(CONTAINER)
            assert len(list(reread.read_all_items())) >= len(found)
        finally:
            again.stop()
    finally:
        a.kill()
        b.stop()


@dataclass
class Answer:
    instance: str
    kind: str
    item_id: str
    sent: float
    done: float
    status: Optional[int]
    code: Optional[str]
    error: Optional[str] = None


def load_loop(name: str, client: RawClient, answers: list, stop: threading.Event) -> None:
    """Alternately creates a new item and reads the anchor item, recording every answer."""
    prefix = unique_id(name)
    for n in range(1_000_000):
        if stop.is_set():
            return
        item_id = f"{prefix}-{n}"
        sent = time.monotonic()
        status = code = error = None
        try:
            if n % 2 == 0:
                response = client.create_item(COLLECTION, {"id": item_id, "pk": "load"}, "load")
            else:
                response = client.read_item(COLLECTION, "anchor", "load")
            status = response.status_code
            if status >= 400:
                try:
                    code = response.json().get("code")
                except ValueError:
                    code = f"not JSON: {response.text[:100]}"
        except requests.RequestException as failure:
            error = repr(failure)
        answers.append(Answer(name, "create" if n % 2 == 0 else "read", item_id, sent, time.monotonic(),
                              status, code, error))
        if status is not None and status >= 500:
            time.sleep(0.02)  # a client backs off a little after a 503


@pytest.fixture(scope="module")
def loaded_pair(postgres, tmp_path_factory):
    a, b = start_pair(postgres, tmp_path_factory.mktemp("outage"))
    setup_container(a)
    make_client(a).get_database_client(DATABASE).get_container_client(CONTAINER).create_item(
        {"id": "anchor", "pk": "load"})
    yield a, b
    a.stop()
    b.stop()


@pytest.mark.parametrize("outage", ["restart", "stop-gap-start"])
def test_postgres_restarted_under_load_gives_quick_503s_and_instances_reconnect(postgres, loaded_pair, server,
                                                                                 outage):
    """PostgreSQL is restarted (`pg_ctl restart -m fast`), or stopped for 3 s and started,
    while both instances serve a stream of writes and reads. Every request is answered (no
    hang, no cut connection) within 5 s, with a success or a Cosmos-shaped 503
    (`ServiceUnavailable`), never a 500; every request answered while PostgreSQL was down is
    a 503; each instance serves again within 10 s of PostgreSQL's return without a restart;
    every acknowledged create is there afterwards. The session's proxied instances recover too."""
    a, b = loaded_pair
    answers: list[Answer] = []
    stop = threading.Event()
    threads = [threading.Thread(target=load_loop, args=(name, RawClient(s.endpoint, s.key, 60), answers, stop))
               for name, s in (("A", a), ("B", b), ("A", a), ("B", b))]
    for thread in threads:
        thread.start()
    try:
        time.sleep(1.0)
        down_at = time.monotonic()
        if outage == "restart":
            postgres.ctl("restart", "-m", "fast")
            started_at = down_at
        else:
            postgres.ctl("stop", "-m", "fast")
            down_at = time.monotonic()
            time.sleep(GAP_SECS)
            started_at = time.monotonic()
            postgres.ctl("start")
        up_at = time.monotonic()

        def recovered(name: str) -> Optional[float]:
            done = [r.done for r in list(answers) if r.instance == name and r.sent >= up_at and r.status in (200, 201)]
            return min(done) if done else None

        wait_until(lambda: recovered("A") and recovered("B"), RECOVERY_SECS_MAX + 5, 0.05)
        time.sleep(0.5)
    finally:
        stop.set()
        for thread in threads:
            thread.join(120)

    errors = [r for r in answers if r.error]
    assert errors == [], errors[:3]
    slow = sorted((r for r in answers if r.done - r.sent > ANSWER_SECS_MAX), key=lambda r: r.sent)
    assert slow == [], slow[:3]
    assert {r.status for r in answers} <= {200, 201, 503}, {r.status for r in answers}
    assert {r.code for r in answers if r.status == 503} <= {"ServiceUnavailable"}
    during = [r for r in answers if down_at < r.sent and r.done < started_at]
    assert all(r.status == 503 for r in during), [r for r in during if r.status != 503][:3]
    unavailable = [r.done - r.sent for r in answers if r.status == 503]
    print(f"{outage}: {len(answers)} requests, {len(unavailable)} answered 503 "
          f"(slowest {max(unavailable, default=0):.2f} s), {len(during)} sent and answered while down")
    if outage == "stop-gap-start":
        assert during, "requests were answered while PostgreSQL was down"
    for name in ("A", "B"):
        back = recovered(name)
        assert back is not None and back - up_at <= RECOVERY_SECS_MAX, (name, back and back - up_at)
        print(f"{outage}: instance {name} served again {back - up_at:.2f} s after PostgreSQL was back")

    container = make_client(b).get_database_client(DATABASE).get_container_client(CONTAINER)
    stored = {item["id"] for item in container.read_all_items()}
    acked = {r.item_id for r in answers if r.kind == "create" and r.status == 201}
    assert acked <= stored, sorted(acked - stored)[:5]

    if isinstance(server, Cluster):
        client = make_client(server)

        def serves() -> bool:
            try:
                list(client.list_databases())
                return True
            except Exception:  # noqa: BLE001 - still reconnecting
                return False

        assert wait_until(serves, RECOVERY_SECS_MAX, 0.2), server.log_tail()


FREEZE_SECS = 12.0  # longer than LetheDB's 10 s wait for PostgreSQL
STUCK_TRANSACTIONS_SQL = (
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'lethedb' "
    "AND state LIKE 'idle in transaction%' AND now() - state_change > interval '3 seconds'")


def distinct_problems(server, lines: int = 2000) -> list[str]:
    """The distinct warnings and errors of an instance's log, without times and activity ids."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", server.log_tail(lines))
    found = set()
    for line in text.splitlines():
        if " ERROR " in line or " WARN " in line:
            found.add(re.sub(r"activity_id=\S+ ", "", line.split(" ", 1)[-1].strip())[:220])
    return sorted(found)


def burst(server, count: int) -> list:
    """`count` requests at once to one instance (writes and reads); the failed ones."""
    client = RawClient(server.endpoint, server.key, 30)
    failures: list = []
    lock = threading.Lock()

    def one(n: int) -> None:
        try:
            if n % 2:
                response = client.create_item(COLLECTION, {"id": unique_id("burst"), "pk": "p"}, "p")
            else:
                response = client.request("GET", f"{COLLECTION}/docs", partition_key="p")
            ok = response.status_code in (200, 201)
            detail = response.text[:160]
        except requests.RequestException as error:
            ok, detail = False, repr(error)
        if not ok:
            with lock:
                failures.append(detail)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return failures


def test_an_instance_frozen_holding_the_write_lock_stalls_writes_only_while_frozen(postgres, tmp_path):
    """A is frozen (SIGSTOP) at a moment it holds the store's write lock (as pg_locks shows)
    and stays frozen for 12 s, longer than LetheDB waits for PostgreSQL: a paused process or a
    partitioned one. B's write meanwhile is answered (a 503, not a hang). Once A resumes, both
    instances serve bursts of concurrent requests without a failure, and no connection of
    either is left inside a transaction: a request that gave up waiting must not leave its
    pooled connection in a transaction, where it would hold (or later take) the write lock or
    fail every request that picks it up afterwards."""
    url = postgres.fresh_database("freeze")
    a, b = start_pair(postgres, tmp_path, database_url=url)
    try:
        setup_container(a)
        stop = threading.Event()
        written = [Written() for _ in range(2)]
        writers = [threading.Thread(target=writer_loop, args=(RawClient(a.endpoint, a.key, 60), n, written[n], stop))
                   for n in range(2)]
        for thread in writers:
            thread.start()
        recorder = Recorder()
        stop_recorded, recorded = run_recorded(recorder, [RawClient(a.endpoint, a.key, 10), RawClient(b.endpoint, b.key, 10)],
                                               COLLECTION, [f"shared-{n}" for n in range(3)])
        time.sleep(0.5)
        for _ in range(500):
            a.process.send_signal(signal.SIGSTOP)
            if postgres.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted", url) != "0":
                break
            a.process.send_signal(signal.SIGCONT)
            time.sleep(0.01)
        else:
            pytest.fail("A was never caught holding the write lock")
        frozen_at = time.monotonic()
        raw_b = RawClient(b.endpoint, b.key, 60)
        sent = time.monotonic()
        response = raw_b.create_item(COLLECTION, {"id": "during", "pk": "p"}, "p")
        assert response.status_code in (201, 503) and time.monotonic() - sent < 30, response.text
        time.sleep(max(0.0, frozen_at + FREEZE_SECS - time.monotonic()))
        a.process.send_signal(signal.SIGCONT)
        stop.set()
        stop_recorded.set()
        for thread in writers + recorded:
            thread.join(60)
        assert_history_checks(recorder)

        def writes_again() -> bool:
            return all(RawClient(s.endpoint, s.key, 30).create_item(
                COLLECTION, {"id": unique_id("again"), "pk": "p"}, "p").status_code == 201 for s in (a, b))

        assert wait_until(writes_again, RECOVERY_SECS_MAX, 0.2), "writes did not come back after A resumed"
        for name, server in (("A", a), ("B", b), ("A", a), ("B", b)):
            failures = burst(server, 48)
            assert failures == [], (f"{len(failures)} of 48 requests to {name} failed", failures[:2],
                                    distinct_problems(server))
        assert wait_until(lambda: postgres.psql(STUCK_TRANSACTIONS_SQL, url) == "0", 10, 0.5), \
            postgres.psql("SELECT state, now() - xact_start, left(query, 90) FROM pg_stat_activity WHERE "
                          "datname = current_database() AND application_name = 'lethedb' AND state <> 'idle'", url)
    finally:
        if a.process and a.process.poll() is None:
            a.process.send_signal(signal.SIGCONT)
        a.kill()
        b.stop()


# LetheDB answers within this long when PostgreSQL stops answering mid-operation (its 10 s wait,
# docs/scale-out.md), with room for a busy machine.
HUNG_ANSWER_SECS_MAX = 12.0


def test_postgres_that_stops_answering_gives_503s_and_instances_recover(postgres, tmp_path):
    """Another session locks every LetheDB table (as a stuck migration would), so PostgreSQL
    accepts connections but answers nothing. More requests than the machine has cores, writes
    and reads, reach each instance at once: each is answered 503 `ServiceUnavailable` within
    LetheDB's 10 s wait (docs/scale-out.md), never later, and meanwhile a request that needs
    no store (an unsigned one, answered 401) is answered at once: waiting on PostgreSQL must not
    hold up the rest of the server. Once the lock is gone, both serve bursts of concurrent
    requests without a failure and leave no connection inside a transaction."""
    url = postgres.fresh_database("hung")
    a, b = start_pair(postgres, tmp_path, database_url=url)
    holder = None
    try:
        setup_container(a)
        make_client(a).get_database_client(DATABASE).get_container_client(CONTAINER).create_item(
            {"id": "anchor", "pk": "load"})
        tables = postgres.psql("SELECT string_agg(format('%I.%I', schemaname, tablename), ', ') "
                               "FROM pg_tables WHERE schemaname = 'lethedb'", url)
        holder = subprocess.Popen([str(postgres.bin_dir / "psql"), url, "-X", "-q", "-c",
                                   f"BEGIN; LOCK TABLE {tables} IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60);"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        held = "SELECT count(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock' AND granted " \
               "AND relation = 'lethedb.items'::regclass"
        assert wait_until(lambda: postgres.psql(held, url) == "1", 10, 0.05), "the tables were not locked"

        answers: list = []
        probes: list = []

        def request(name, server, kind):
            client = RawClient(server.endpoint, server.key, 60)
            sent = time.monotonic()
            if kind == "write":
                response = client.create_item(COLLECTION, {"id": unique_id(name), "pk": "load"}, "load")
            else:
                response = client.read_item(COLLECTION, "anchor", "load")
            code = response.json().get("code") if response.status_code >= 400 else None
            answers.append((name, kind, response.status_code, code, round(time.monotonic() - sent, 2)))

        per_instance = 2 * (os.cpu_count() or 2) + 2
        threads = [threading.Thread(target=request, args=(name, server, "write" if n % 3 == 0 else "read"))
                   for name, server in (("A", a), ("B", b)) for n in range(per_instance)]
        for thread in threads:
            thread.start()
        time.sleep(1.0)
        for name, server in (("A", a), ("B", b)):
            sent = time.monotonic()
            status = requests.get(server.endpoint, timeout=60).status_code
            probes.append((name, status, round(time.monotonic() - sent, 2)))
        for thread in threads:
            thread.join(120)
        assert len(answers) == len(threads)
        assert all(status == 503 and code == "ServiceUnavailable" for _, _, status, code, _ in answers), answers
        slow = sorted(secs for *_, secs in answers if secs > HUNG_ANSWER_SECS_MAX)
        assert not slow and all(secs <= 2 for *_, secs in probes), \
            (f"{len(slow)} of {len(answers)} answers later than {HUNG_ANSWER_SECS_MAX} s: {slow}",
             f"unsigned probes (name, status, seconds): {probes}", distinct_problems(a))
        # The holder's server process sleeps on even when psql goes: end it from the server side.
        postgres.psql(f"SELECT pg_terminate_backend(pid) FROM pg_locks WHERE {held.split(' WHERE ', 1)[1]}", url)
        holder.wait(30)

        def serves_again() -> bool:
            return all(RawClient(s.endpoint, s.key, 30).read_item(COLLECTION, "anchor", "load").status_code == 200
                       for s in (a, b))

        assert wait_until(serves_again, RECOVERY_SECS_MAX, 0.2), "the instances did not serve again"
        for name, server in (("A", a), ("B", b)):
            failures = burst(server, 48)
            assert failures == [], (f"{len(failures)} of 48 requests to {name} failed", failures[:2],
                                    distinct_problems(server))
        assert wait_until(lambda: postgres.psql(STUCK_TRANSACTIONS_SQL, url) == "0", 10, 0.5)
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
            holder.wait()
        a.kill()
        b.stop()
