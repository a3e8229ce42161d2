"""Time to live across LetheDB processes on one PostgreSQL database (`serve --postgres`).

Only in the PostgreSQL run (`scripts/test postgres`). Instance A's clock runs 30 s ahead and
B's 30 s behind (`--clock-offset-ms`), far more than any TTL here: an instance that judged expiry
by its own clock would hide an item at once (A) or show it for half a minute too long (B). The
store's clock (PostgreSQL's, which is this machine's, the clock the test reads) decides alone,
so the bounds below come from the test's own clock readings around each request and cannot
flake on a slow machine: a read answered before `write sent + ttl` must show the item, a read
sent after `write acknowledged + ttl` must not.
"""

from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import dataclass

import pytest
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import CosmosResourceNotFoundError

from conftest import make_client, unique_id
from crash_cycles import master_key_headers
from postgres_cluster import postgres_mode, start_instance, start_pair, wait_until
from signed_http import RawClient

pytestmark = pytest.mark.skipif(
    not postgres_mode(), reason="scale-out runs only against PostgreSQL: scripts/test postgres")

SKEW_MS = 30_000
# A millisecond for the store's rounding of the write instant, a few for float time.
SLACK_SECS = 0.005
# How long after the last expiry the sweepers get to delete everything.
SWEEP_DEADLINE_SECS = 30


@pytest.fixture(scope="module")
def pair(postgres, tmp_path_factory):
    a, b = start_pair(postgres, tmp_path_factory.mktemp("ttl"), offsets_ms=(SKEW_MS, -SKEW_MS))
    yield a, b
    a.stop()
    b.stop()


@pytest.fixture
def dbs(pair):
    a, b = pair
    ca, cb = make_client(a), make_client(b)
    database_id = unique_id("ttl")
    ca.create_database(database_id)
    yield ca.get_database_client(database_id), cb.get_database_client(database_id)
    ca.delete_database(database_id)


def containers(dbs, **kwargs):
    db_a, db_b = dbs
    container_id = unique_id("c")
    db_a.create_container(container_id, partition_key=PartitionKey(path="/pk"), **kwargs)
    return db_a.get_container_client(container_id), db_b.get_container_client(container_id)


def visible(container, item_id, pk="p") -> bool:
    try:
        container.read_item(item_id, partition_key=pk)
        return True
    except CosmosResourceNotFoundError:
        return False


@dataclass
class Read:
    instance: str
    item: str
    sent: float
    answered: float
    visible: bool


def test_an_item_expires_at_one_instant_on_instances_with_skewed_clocks(dbs):
    """Items with ttl=2, one written through each instance, read alternately on A and B until
    well past expiry: each read answered before `sent + 2 s` shows the item, each read sent after
    `acknowledged + 2 s` does not, and once any read has found an item expired no read sent
    later (on either instance) shows it again."""
    on_a, on_b = containers(dbs, default_ttl=-1)
    written = {}
    for writer, item_id in ((on_a, "via-a"), (on_b, "via-b")):
        sent = time.time()
        writer.create_item({"id": item_id, "pk": "p", "ttl": 2})
        written[item_id] = (sent, time.time())
    reads: list[Read] = []
    stop_at = max(acked for _, acked in written.values()) + 3.0
    while time.time() < stop_at:
        for name, container in (("A", on_a), ("B", on_b)):
            for item_id in written:
                sent = time.time()
                seen = visible(container, item_id)
                reads.append(Read(name, item_id, sent, time.time(), seen))
        time.sleep(0.005)

    for item_id, (write_sent, write_acked) in written.items():
        mine = [r for r in reads if r.item == item_id]
        early = [r for r in mine if r.answered < write_sent + 2 - SLACK_SECS]
        late = [r for r in mine if r.sent > write_acked + 2 + SLACK_SECS]
        assert all(r.visible for r in early), [r for r in early if not r.visible][:3]
        assert not any(r.visible for r in late), [r for r in late if r.visible][:3]
        gone = [r.answered for r in mine if not r.visible]
        assert gone, f"{item_id} never expired"
        first_gone = min(gone)
        after = [r for r in mine if r.sent > first_gone]
        assert not any(r.visible for r in after), (first_gone, [r for r in after if r.visible][:3])
        for name in ("A", "B"):
            assert {r.visible for r in mine if r.instance == name} == {True, False}, (item_id, name)


def test_a_shorter_default_ttl_set_on_one_instance_expires_items_at_once_on_the_other(dbs):
    """B has served an item of a container whose defaultTtl is an hour; A sets it to 1 s; the
    item, older than that, is gone on B at once: point read, query and read feed."""
    db_a, _ = dbs
    on_a, on_b = containers(dbs, default_ttl=3600)
    on_a.create_item({"id": "x", "pk": "p"})
    acked = time.time()
    time.sleep(max(0.0, acked + 1.2 - time.time()))
    assert visible(on_b, "x")
    db_a.replace_container(on_a, partition_key=PartitionKey(path="/pk"), default_ttl=1)
    assert on_b.read()["defaultTtl"] == 1
    assert not visible(on_b, "x")
    assert list(on_b.query_items("SELECT * FROM c", partition_key="p")) == []
    assert list(on_b.read_all_items()) == []


def test_a_longer_default_ttl_set_on_one_instance_keeps_items_on_the_other(dbs):
    """An item of a container whose defaultTtl is 4 s: before it expires A turns the default
    to -1 (never); B still serves it after the 4 s are up."""
    db_a, _ = dbs
    on_a, on_b = containers(dbs, default_ttl=4)
    on_b.create_item({"id": "x", "pk": "p"})
    acked = time.time()
    assert visible(on_b, "x")
    db_a.replace_container(on_a, partition_key=PartitionKey(path="/pk"), default_ttl=-1)
    assert time.time() < acked + 4, "the replace came in time"
    time.sleep(max(0.0, acked + 4.6 - time.time()))
    assert visible(on_b, "x")
    assert [item["id"] for item in on_b.read_all_items()] == ["x"]


def test_ttl_turned_on_by_one_instance_makes_the_other_honour_item_ttls(dbs):
    """With TTL off an item's `ttl` is an ordinary property; once A turns TTL on, B hides the
    item whose `ttl` has run out and keeps the one whose has not."""
    db_a, _ = dbs
    on_a, on_b = containers(dbs)
    on_a.create_item({"id": "short", "pk": "p", "ttl": 1})
    on_a.create_item({"id": "long", "pk": "p", "ttl": 3600})
    acked = time.time()
    time.sleep(max(0.0, acked + 1.2 - time.time()))
    assert visible(on_b, "short") and visible(on_b, "long")
    db_a.replace_container(on_a, partition_key=PartitionKey(path="/pk"), default_ttl=-1)
    assert not visible(on_b, "short")
    assert visible(on_b, "long")


def sweep_entry(server, database_id: str, container_id: str) -> dict:
    """The instance's own sweeper figures for one container (zeros if it has none yet)."""
    request = urllib.request.Request(f"{server.endpoint}_lethedb/stats", headers=master_key_headers(server.key))
    with urllib.request.urlopen(request, timeout=10) as response:
        stats = json.load(response)
    for entry in stats["containers"]:
        if entry["database"] == database_id and entry["container"] == container_id:
            return entry
    return {"ttlDeletedTotal": 0, "ttlBacklogItems": 0}


def expired_unswept(server, database_id: str, container_id: str) -> int:
    """The store's count of expired items not yet deleted, as `/_lethedb/ttl` reports it (it
    is signed as a read of the container)."""
    path = f"dbs/{database_id}/colls/{container_id}"
    response = RawClient(server.endpoint, server.key).request("GET", f"_lethedb/ttl/{path}", signed_as=path)
    assert response.status_code == 200, response.text
    return response.json()["expiredUnswept"]


def test_both_sweepers_delete_every_expired_item_once_and_no_live_one(pair, dbs):
    """150 items expire while both instances run their sweepers: all are physically deleted
    (the store's count of expired items left is 0 on both), the two sweepers together deleted
    exactly 150 (none twice), and the 50 long-lived items are all still there."""
    a, b = pair
    on_a, on_b = containers(dbs, default_ttl=-1)
    for n in range(150):
        (on_a if n % 2 else on_b).create_item({"id": f"short{n}", "pk": f"p{n % 5}", "ttl": 1})
    for n in range(50):
        (on_b if n % 2 else on_a).create_item({"id": f"live{n}", "pk": f"p{n % 5}", "ttl": 3600})
    database_id, container_id = dbs[0].id, on_a.id

    def drained():
        return all(expired_unswept(s, database_id, container_id) == 0 for s in (a, b)) and \
            sum(sweep_entry(s, database_id, container_id)["ttlDeletedTotal"] for s in (a, b)) >= 150

    time.sleep(1.2)
    assert wait_until(drained, SWEEP_DEADLINE_SECS, 0.2), "the sweepers did not drain the backlog"
    deleted = [sweep_entry(s, database_id, container_id)["ttlDeletedTotal"] for s in (a, b)]
    assert sum(deleted) == 150, f"deletions by A and B: {deleted}"
    remaining = sorted(item["id"] for item in on_b.read_all_items())
    assert remaining == sorted(f"live{n}" for n in range(50))


def test_a_rewrite_racing_expiry_on_the_other_instance_is_never_swept(pair, dbs):
    """Items with ttl=2 written through A are upserted through B with ttl=3600 around their
    expiry instant (from 150 ms before to 150 ms after) while both sweepers run: every one is
    there afterwards with its rewritten body, whichever way each race went."""
    a, b = pair
    on_a, on_b = containers(dbs, default_ttl=-1)
    count = 60
    created = {}
    for n in range(count):
        sent = time.time()
        on_a.create_item({"id": f"i{n}", "pk": "p", "v": 1, "ttl": 2})
        created[n] = (sent, time.time())
    before = after = 0
    for n in sorted(created, key=lambda n: created[n][1] + (n % 7 - 3) * 0.05):
        sent, acked = created[n]
        time.sleep(max(0.0, acked + 2 + (n % 7 - 3) * 0.05 - time.time()))
        rewrite_sent = time.time()
        on_b.upsert_item({"id": f"i{n}", "pk": "p", "v": 2, "ttl": 3600})
        before += time.time() < sent + 2
        after += rewrite_sent > acked + 2
    assert before and after, "some rewrites came before the expiry instant, some after"
    database_id, container_id = dbs[0].id, on_a.id
    assert wait_until(lambda: all(expired_unswept(s, database_id, container_id) == 0 for s in (a, b)),
                      SWEEP_DEADLINE_SECS, 0.2)
    items = {item["id"]: item["v"] for item in on_a.read_all_items()}
    assert items == {f"i{n}": 2 for n in range(count)}


def test_each_instance_sweeps_what_the_other_wrote(postgres, tmp_path):
    """An instance alone deletes the expired items another instance wrote: items written
    through one instance that stops before they expire are all deleted by the next one,
    twice over (so each sweeper runs on its own, not only beside another)."""
    url = postgres.fresh_database("sweep")
    current = start_instance(tmp_path / "instance0", url)
    make_client(current).create_database("sweep").create_container(
        "c", partition_key=PartitionKey(path="/pk"), default_ttl=3)
    for round_number in range(2):
        container = make_client(current).get_database_client("sweep").get_container_client("c")
        first_write = time.time()
        for n in range(40):
            container.create_item({"id": f"r{round_number}-{n}", "pk": "p"})
        current.stop()
        assert time.time() < first_write + 3, "the writer stopped before anything expired"
        current = start_instance(tmp_path / f"instance{round_number + 1}", url)
        assert wait_until(lambda: sweep_entry(current, "sweep", "c")["ttlDeletedTotal"] == 40,
                          SWEEP_DEADLINE_SECS, 0.2), sweep_entry(current, "sweep", "c")
        assert expired_unswept(current, "sweep", "c") == 0
    current.stop()
