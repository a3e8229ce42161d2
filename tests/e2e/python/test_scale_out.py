"""Several LetheDB processes on one PostgreSQL database behave as one server (`serve --postgres`).

Only in the PostgreSQL run (`scripts/test postgres`). Each test talks to two instances, A and B,
directly (each advertises its own address, no proxy between), and proves that what one
acknowledged the other serves at once: items, continuations and session tokens; that two
instances racing on one item never both win; and that a container created, changed or deleted
on one is seen so by the other. The instances' clocks are skewed on purpose, A 30 s ahead and
B 30 s behind: nothing here may depend on them, since the store's clock decides.
Time to live and the sweepers are in test_scale_out_ttl.py, crashes and outages in
test_scale_out_faults.py.
"""

from __future__ import annotations

import threading
import time

import pytest
from azure.core import MatchConditions
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import (CosmosBatchOperationError, CosmosHttpResponseError,
                                     CosmosResourceNotFoundError)

from conftest import make_client, unique_id
from postgres_cluster import Cluster, postgres_mode, start_instance, start_pair

pytestmark = pytest.mark.skipif(
    not postgres_mode(), reason="scale-out runs only against PostgreSQL: scripts/test postgres")

RACE_ROUNDS = 12
RACERS = 6


class Pair:
    """Instances A and B on one database, with a client of its own for each."""

    def __init__(self, a, b):
        self.a, self.b = a, b
        self.ca, self.cb = make_client(a), make_client(b)


@pytest.fixture(scope="module")
def pair(postgres, tmp_path_factory):
    a, b = start_pair(postgres, tmp_path_factory.mktemp("scale"), offsets_ms=(30_000, -30_000))
    yield Pair(a, b)
    a.stop()
    b.stop()


@pytest.fixture
def dbs(pair):
    """One database for the test, as seen through A and through B."""
    database_id = unique_id("db")
    pair.ca.create_database(database_id)
    yield pair.ca.get_database_client(database_id), pair.cb.get_database_client(database_id)
    try:
        pair.ca.delete_database(database_id)
    except CosmosResourceNotFoundError:
        pass


def containers(dbs, **kwargs):
    """A container created through A, as (A's client, B's client)."""
    db_a, db_b = dbs
    container_id = unique_id("c")
    db_a.create_container(container_id, partition_key=PartitionKey(path="/pk"), **kwargs)
    return db_a.get_container_client(container_id), db_b.get_container_client(container_id)


def race(calls) -> list:
    """Runs the calls at the same moment, one thread each; "ok" or the HTTP status of each."""
    barrier = threading.Barrier(len(calls))
    outcomes: list = [None] * len(calls)

    def run(index, call):
        barrier.wait()
        try:
            call()
            outcomes[index] = "ok"
        except (CosmosHttpResponseError, CosmosBatchOperationError) as error:
            outcomes[index] = error.status_code
        except Exception as error:  # noqa: BLE001 - reported in the assertion
            outcomes[index] = repr(error)

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return outcomes


def session_lsn(token: str) -> int:
    """The LSN of a session token such as `0:-1#42` (the highest, if it names several ranges)."""
    return max(int(part.rsplit("#", 1)[1]) for part in token.split(","))


def test_the_suite_server_alternates_requests_between_two_instances(server):
    """In this run the whole suite's shared server is two instances behind the round-robin
    proxy, and consecutive requests really do go to both."""
    assert isinstance(server, Cluster) and len(server.instances) == 2
    client = make_client(server)
    database = client.create_database(unique_id("rr"))
    for _ in range(4):
        database.read()
    client.delete_database(database.id)
    counts = server.proxy.counts()
    assert min(counts) > 0, counts
    assert max(counts) - min(counts) <= 1, f"strict alternation: {counts}"


def test_a_write_on_one_instance_is_read_on_the_other_at_once(dbs):
    """Point read, query and read feed on B right after each acknowledged write on A, and the
    other way round: no cache, replica or clock may hold back what the store acknowledged."""
    on_a, on_b = containers(dbs)
    for n in range(15):
        item_id = f"i{n}"
        on_a.create_item({"id": item_id, "pk": "p", "v": 1})
        assert on_b.read_item(item_id, partition_key="p")["v"] == 1
        query = "SELECT VALUE c.v FROM c WHERE c.id = @id"
        assert list(on_b.query_items(query, parameters=[{"name": "@id", "value": item_id}],
                                     partition_key="p")) == [1]
        on_b.replace_item(item_id, {"id": item_id, "pk": "p", "v": 2})
        assert on_a.read_item(item_id, partition_key="p")["v"] == 2
    assert sorted(item["id"] for item in on_b.read_all_items()) == sorted(f"i{n}" for n in range(15))
    on_a.delete_item("i0", partition_key="p")
    with pytest.raises(CosmosResourceNotFoundError):
        on_b.read_item("i0", partition_key="p")
    assert len(list(on_b.read_all_items())) == 14


def test_item_timestamps_come_from_the_store_clock_not_the_instance_clock(dbs):
    """`_ts` is stamped with the store's clock: an item written through A (30 s ahead) or B
    (30 s behind) carries the time of the write, so that `_ts + ttl` is its expiry on both."""
    on_a, on_b = containers(dbs)
    for writer, name in ((on_a, "a"), (on_b, "b")):
        before = time.time()
        written = writer.create_item({"id": name, "pk": "p"})
        after = time.time()
        assert int(before) <= written["_ts"] <= after, (name, before, written["_ts"], after)


def test_query_and_read_feed_continuations_work_on_the_other_instance(dbs):
    """A query's and a read feed's continuation token from A, handed to B, go on where A
    stopped: every item exactly once, in order."""
    on_a, on_b = containers(dbs)
    for n in range(10):
        on_a.create_item({"id": f"i{n}", "pk": "p", "n": n})
    query = "SELECT VALUE c.n FROM c ORDER BY c.n"
    pages_a = on_a.query_items(query, partition_key="p", max_item_count=3).by_page()
    first = list(next(pages_a))
    token = pages_a.continuation_token
    assert first == [0, 1, 2] and token
    rest = [n for page in on_b.query_items(query, partition_key="p", max_item_count=3)
            .by_page(continuation_token=token) for n in page]
    assert first + rest == list(range(10))

    feed_a = on_a.read_all_items(max_item_count=4).by_page()
    first = [item["id"] for item in next(feed_a)]
    token = feed_a.continuation_token
    rest = [item["id"] for page in on_b.read_all_items(max_item_count=4).by_page(continuation_token=token)
            for item in page]
    assert sorted(first + rest) == sorted(f"i{n}" for n in range(10))
    assert len(first + rest) == 10


def test_a_change_feed_continuation_from_one_instance_is_used_on_the_other(dbs):
    """The change feed read to its end on A, continued on B, shows exactly what was written
    after (through either instance), and B's continuation continues on A again."""
    on_a, on_b = containers(dbs)
    on_a.create_item({"id": "old", "pk": "p"})
    assert [d["id"] for d in on_a.query_items_change_feed(start_time="Beginning")] == ["old"]
    token = on_a.client_connection.last_response_headers["etag"]
    on_b.create_item({"id": "new-b", "pk": "p"})
    on_a.create_item({"id": "new-a", "pk": "p"})
    assert [d["id"] for d in on_b.query_items_change_feed(continuation=token)] == ["new-b", "new-a"]
    token = on_b.client_connection.last_response_headers["etag"]
    assert list(on_a.query_items_change_feed(continuation=token)) == []
    on_b.upsert_item({"id": "old", "pk": "p", "v": 2})
    assert [d["id"] for d in on_a.query_items_change_feed(continuation=token)] == ["old"]


def test_a_session_token_from_one_instance_is_honoured_by_the_other(dbs):
    """A write's session token from A, sent with a read to B, reads that write; B's own token
    after it is at least A's (one sequence of LSNs for the whole store)."""
    on_a, on_b = containers(dbs)
    for n in range(5):
        on_a.upsert_item({"id": "s", "pk": "p", "v": n})
        token = on_a.client_connection.last_response_headers["x-ms-session-token"]
        assert on_b.read_item("s", partition_key="p", session_token=token)["v"] == n
        seen = on_b.client_connection.last_response_headers["x-ms-session-token"]
        assert session_lsn(seen) >= session_lsn(token)
        assert list(on_b.query_items("SELECT VALUE c.v FROM c", partition_key="p", session_token=token)) == [n]


def test_concurrent_creates_of_one_id_on_both_instances_exactly_one_wins(dbs, pair):
    """Racers on A and B create the same id at the same moment: exactly one 201, every other
    one a 409, and the item holds the winner's body."""
    on_a, on_b = containers(dbs)
    for round_number in range(RACE_ROUNDS):
        item_id = f"r{round_number}"
        calls = [(lambda c=(on_a if i % 2 == 0 else on_b), i=i:
                  c.create_item({"id": item_id, "pk": "p", "racer": i})) for i in range(RACERS)]
        outcomes = race(calls)
        assert sorted(outcomes, key=str) == sorted(["ok"] + [409] * (RACERS - 1), key=str), outcomes
        winner = outcomes.index("ok")
        assert on_b.read_item(item_id, partition_key="p")["racer"] == winner


def test_concurrent_replaces_with_one_etag_exactly_one_wins(dbs):
    """Racers on A and B replace one item with the same If-Match ETag: exactly one 200, every
    other one a 412, and the item holds the winner's body."""
    on_a, on_b = containers(dbs)
    on_a.create_item({"id": "x", "pk": "p", "racer": None})
    for _ in range(RACE_ROUNDS):
        etag = on_b.read_item("x", partition_key="p")["_etag"]
        calls = [(lambda c=(on_a if i % 2 == 0 else on_b), i=i:
                  c.replace_item("x", {"id": "x", "pk": "p", "racer": i}, etag=etag,
                                 match_condition=MatchConditions.IfNotModified)) for i in range(RACERS)]
        outcomes = race(calls)
        assert sorted(outcomes, key=str) == sorted(["ok"] + [412] * (RACERS - 1), key=str), outcomes
        assert on_a.read_item("x", partition_key="p")["racer"] == outcomes.index("ok")


def test_concurrent_patch_increments_on_both_instances_all_count(dbs):
    """Patch increments from both instances at once: none is lost, and each returned a
    different value (each one read the result of the one before)."""
    on_a, on_b = containers(dbs)
    on_a.create_item({"id": "n", "pk": "p", "n": 0})
    workers, each = 4, 20
    seen: list[int] = []
    lock = threading.Lock()

    def increment(container):
        for _ in range(each):
            patched = container.patch_item("n", partition_key="p",
                                           patch_operations=[{"op": "incr", "path": "/n", "value": 1}])
            with lock:
                seen.append(patched["n"])

    outcomes = race([lambda c=(on_a if i % 2 == 0 else on_b): increment(c) for i in range(workers)])
    assert outcomes == ["ok"] * workers
    assert on_b.read_item("n", partition_key="p")["n"] == workers * each
    assert sorted(seen) == list(range(1, workers * each + 1))


def test_a_batch_on_one_instance_is_never_partly_visible_on_the_other(dbs):
    """While A rewrites a partition's items in transactional batches, one generation per
    batch, every query and read feed on B sees all of them at one generation; a batch that
    fails on A leaves nothing on B."""
    on_a, on_b = containers(dbs)
    size = 6
    on_a.execute_item_batch([("create", ({"id": f"i{n}", "pk": "p", "g": 0},)) for n in range(size)],
                            partition_key="p")
    done = threading.Event()
    errors: list = []

    def rewrite():
        try:
            for generation in range(1, 200):
                if done.is_set():
                    return
                on_a.execute_item_batch([("upsert", ({"id": f"i{n}", "pk": "p", "g": generation},))
                                         for n in range(size)], partition_key="p")
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    writer = threading.Thread(target=rewrite)
    writer.start()
    generations_seen = set()
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and writer.is_alive():
            rows = list(on_b.query_items("SELECT c.id, c.g FROM c", partition_key="p"))
            feed = list(on_b.read_all_items())
            for snapshot in (rows, feed):
                generations = {row["g"] for row in snapshot}
                assert len(snapshot) == size and len(generations) == 1, snapshot
                generations_seen |= generations
    finally:
        done.set()
        writer.join(60)
    assert errors == []
    assert len(generations_seen) > 2, "the reads on B overlapped the batches on A"

    with pytest.raises(CosmosBatchOperationError):
        on_a.execute_item_batch([("create", ({"id": "new", "pk": "p"},)),
                                 ("replace", ("i0", {"id": "i0", "pk": "p", "g": -1})),
                                 ("create", ({"id": "i1", "pk": "p"},))], partition_key="p")
    assert on_b.read_item("i0", partition_key="p")["g"] != -1
    with pytest.raises(CosmosResourceNotFoundError):
        on_b.read_item("new", partition_key="p")


def test_concurrent_conditional_batches_on_both_instances_one_wins_whole(dbs):
    """Batches from A and B replace the same two items, each operation conditional on the
    ETags read before: exactly one batch commits, wholly; every other one fails wholly (both
    items hold the winner's body, never a mix)."""
    on_a, on_b = containers(dbs)
    for item_id in ("x", "y"):
        on_a.create_item({"id": item_id, "pk": "p", "racer": None})
    for _ in range(RACE_ROUNDS):
        etags = {item_id: on_b.read_item(item_id, partition_key="p")["_etag"] for item_id in ("x", "y")}

        def batch(container, racer):
            return container.execute_item_batch(
                [("replace", (item_id, {"id": item_id, "pk": "p", "racer": racer}), {"if_match_etag": etags[item_id]})
                 for item_id in ("x", "y")], partition_key="p")

        outcomes = race([lambda c=(on_a if i % 2 == 0 else on_b), i=i: batch(c, i) for i in range(RACERS)])
        assert outcomes.count("ok") == 1, outcomes
        assert all(o == "ok" or o == 412 for o in outcomes), outcomes
        winner = outcomes.index("ok")
        assert [on_a.read_item(i, partition_key="p")["racer"] for i in ("x", "y")] == [winner, winner]


def test_concurrent_creates_of_one_database_and_container_exactly_one_wins(pair):
    """Catalog ids are unique across instances too: racing creates of one database id, then
    of one container id, get one 201 and 409s."""
    database_id = unique_id("race")
    outcomes = race([lambda c=(pair.ca if i % 2 == 0 else pair.cb): c.create_database(database_id)
                     for i in range(RACERS)])
    assert sorted(outcomes, key=str) == sorted(["ok"] + [409] * (RACERS - 1), key=str), outcomes
    dbs = pair.ca.get_database_client(database_id), pair.cb.get_database_client(database_id)
    try:
        outcomes = race([lambda d=dbs[i % 2]: d.create_container("c", partition_key=PartitionKey(path="/pk"))
                         for i in range(RACERS)])
        assert sorted(outcomes, key=str) == sorted(["ok"] + [409] * (RACERS - 1), key=str), outcomes
    finally:
        pair.ca.delete_database(database_id)


def test_a_container_created_on_one_instance_is_used_at_once_on_the_other(pair, dbs):
    """B looks a container up and finds nothing; A creates it; B writes into it at once. The
    same for a database created on B and used on A."""
    db_a, db_b = dbs
    for n in range(5):
        container_id = f"c{n}"
        with pytest.raises(CosmosResourceNotFoundError):
            db_b.get_container_client(container_id).read()
        db_a.create_container(container_id, partition_key=PartitionKey(path="/pk"))
        db_b.get_container_client(container_id).create_item({"id": "x", "pk": "p"})
        assert db_a.get_container_client(container_id).read_item("x", partition_key="p")["id"] == "x"
    database_id = unique_id("db")
    pair.cb.create_database(database_id)
    try:
        pair.ca.get_database_client(database_id).create_container("c", partition_key=PartitionKey(path="/pk"))
        assert pair.cb.get_database_client(database_id).get_container_client("c").read()["id"] == "c"
    finally:
        pair.cb.delete_database(database_id)


def test_container_settings_replaced_on_one_instance_apply_at_once_on_the_other(dbs):
    """An indexing policy, computed properties and a throughput replaced on A are what B
    reports at once, and B's next query runs with the new computed property."""
    db_a, _ = dbs
    on_a, on_b = containers(dbs, offer_throughput=400)
    on_b.create_item({"id": "w", "pk": "p", "name": "Ada"})
    assert on_b.read()["indexingPolicy"]["includedPaths"] == [{"path": "/*"}]
    assert list(on_b.query_items("SELECT VALUE c.lower FROM c", partition_key="p")) == []
    policy = {"indexingMode": "consistent", "automatic": True,
              "includedPaths": [{"path": "/name/?"}], "excludedPaths": [{"path": "/*"}]}
    db_a.replace_container(on_a, partition_key=PartitionKey(path="/pk"), indexing_policy=policy,
                           computed_properties=[{"name": "lower", "query": "SELECT VALUE LOWER(c.name) FROM c"}])
    assert on_b.read()["indexingPolicy"]["includedPaths"] == [{"path": "/name/?"}]
    assert list(on_b.query_items("SELECT VALUE c.lower FROM c", partition_key="p")) == ["ada"]

    assert on_b.get_throughput().offer_throughput == 400
    on_a.replace_throughput(1000)
    assert on_b.get_throughput().offer_throughput == 1000


def test_a_container_deleted_on_one_instance_is_gone_on_the_other(pair, dbs):
    """After B has used a container, A deletes it: B answers 404 to reads, writes and
    queries at once. Recreated on A with another partition key path, B writes into the new one."""
    db_a, db_b = dbs
    on_a, on_b = containers(dbs)
    on_b.create_item({"id": "x", "pk": "p"})
    assert on_b.read_item("x", partition_key="p")["id"] == "x"
    db_a.delete_container(on_a.id)
    with pytest.raises(CosmosResourceNotFoundError):
        on_b.read_item("x", partition_key="p")
    with pytest.raises(CosmosResourceNotFoundError):
        on_b.create_item({"id": "y", "pk": "p"})
    with pytest.raises(CosmosResourceNotFoundError):
        list(on_b.query_items("SELECT * FROM c", partition_key="p"))

    db_a.create_container(on_a.id, partition_key=PartitionKey(path="/other"))
    fresh_b = db_b.get_container_client(on_a.id)
    assert fresh_b.read()["partitionKey"]["paths"] == ["/other"]
    fresh_b.create_item({"id": "z", "other": "o"})
    fresh_a = db_a.get_container_client(on_a.id)
    assert [item["id"] for item in fresh_a.read_all_items()] == ["z"]

    pair.ca.delete_database(db_a.id)
    with pytest.raises(CosmosResourceNotFoundError):
        fresh_b.read()
    with pytest.raises(CosmosResourceNotFoundError):
        db_b.read()


def test_two_instances_started_at_once_on_an_empty_database_both_serve(postgres, tmp_path):
    """Two processes that find an empty database at the same moment both create the schema
    (or find it created), start, and serve one store."""
    url = postgres.fresh_database("together")
    started: dict = {}

    def start(name, offset):
        try:
            started[name] = start_instance(tmp_path / name, url, clock_offset_ms=offset)
        except Exception as error:  # noqa: BLE001 - reported below
            started[name] = error

    threads = [threading.Thread(target=start, args=(name, 0)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    try:
        assert all(not isinstance(s, Exception) for s in started.values()), started
        ca, cb = make_client(started["a"]), make_client(started["b"])
        ca.create_database("together").create_container("c", partition_key=PartitionKey(path="/pk")) \
            .create_item({"id": "x", "pk": "p"})
        assert cb.get_database_client("together").get_container_client("c").read_item("x", "p")["id"] == "x"
    finally:
        for server in started.values():
            if not isinstance(server, Exception):
                server.stop()
