"""Crash cycles: start `lethedb serve` on one data directory, load it from several clients,
SIGKILL it mid-load, restart it on the same directory and check that nothing acknowledged was
lost, N times over.

Each cycle: the clients (threads driving the official Python SDK with its retries off) create,
upsert, replace with If-Match, patch and delete items, run transactional batches (some of them
meant to fail whole), and another client replaces the container's `defaultTtl`; a share of the
items carry a short `ttl` and expire while the run goes on. After a random 0.5–3 s the server is
killed with SIGKILL while requests are in flight. It is restarted on the same directory and
checked:

(a) it starts and answers, without any repair;
(b) every item is in its last acknowledged state (same body and `_etag`), or, if a write on it
    was cut by the kill (in doubt), in the state that write asked for; a deleted item stays
    deleted unless such a write recreated it;
(c) an in-doubt batch is applied whole or not at all (its operations name distinct items);
(d) point reads, the read feed and a cross-partition `SELECT *` show the same items, each in the
    state the model allows, and nothing the model does not know;
(e) an item whose expiry instant (`_ts + ttl`, to the second the client can know) has passed is
    invisible on all three paths, and the sweeper resumes: `GET /_lethedb/stats` reports the
    container's backlog of expired items drained to zero after the restart;
(f) the container's `defaultTtl` is the last acknowledged value or the in-doubt one;
(g) the container's index (its indexing policy changes now and then during the load, so the
    kill often cuts a rebuild) equals one rebuilt from its items: `GET /_lethedb/index-check`
    reports no missing and no stale entry once the rebuild the restart resumed has ended.

What the clients know is kept in a model: per item, the state of its last acknowledged write
(a write is acknowledged when the client got its 2xx). A write whose request failed without an
answer from the server (a cut connection, a 5xx) is in doubt: after the restart the item may be
in its old or its new state, and the read that tells which one resolves it. A write the server
refused (4xx) changed nothing, and the model says so too, so a refused batch that left a trace
is caught as well.

Run `scripts/crash-cycles --cycles 100`; `test_crash_cycles.py` runs 10 cycles in the Python
suite. The module knows nothing of the server's internals: only its HTTP API,
`GET /_lethedb/stats` and `GET /_lethedb/index-check`.
"""

from __future__ import annotations

import argparse
import base64
import collections
import email.utils
import hashlib
import hmac
import json
import logging
import random
import shutil
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from azure.cosmos import CosmosClient, PartitionKey
from azure.cosmos.exceptions import CosmosBatchOperationError, CosmosHttpResponseError, CosmosResourceNotFoundError
from azure.core import MatchConditions
from azure.core.exceptions import ServiceRequestError

from lethedb_server import Server

DATABASE_ID = "crash"
CONTAINER_ID = "items"
SERVER_ARGS = ["--no-rate-limit"]

WORKERS = 4
PARTITIONS_PER_WORKER = 3
# Ids are reused (created, deleted, expired, created again), so the set a verification reads back
# stays bounded however many cycles run.
IDS_PER_PARTITION = 12
LOAD_SECS_MIN, LOAD_SECS_MAX = 0.5, 3.0
DOWNTIME_SECS = (0.0, 1.0)
# Short enough to expire during a run or across a restart.
ITEM_TTLS_SECS = (1, 2, 3, 5, 8)
ITEM_TTL_SHARE = 0.3
# Every value keeps TTL on (so an item's own ttl always counts) and is longer than any run, so
# only the items' own ttl expires anything and the model stays exact; what is checked for the
# setting itself is that its last acknowledged value survives.
CONTAINER_TTLS_SECS = (-1, 86_400, 172_800, 604_800)
CONTAINER_TTL_PAUSE_SECS = (0.1, 0.6)
# The indexing policies the container's replaces choose among (None: the default), so that a
# kill often cuts a rebuild of the index; the index is checked after every restart.
INDEXING_POLICIES = (
    None,
    {"indexingMode": "consistent", "includedPaths": [{"path": "/v/?"}, {"path": "/n/?"}],
     "excludedPaths": [{"path": "/*"}],
     "compositeIndexes": [[{"path": "/n", "order": "ascending"}, {"path": "/v", "order": "descending"}]]},
    {"indexingMode": "consistent", "includedPaths": [{"path": "/*"}],
     "excludedPaths": [{"path": "/payload/?"}]},
)
BATCH_OPERATIONS = (2, 5)
# A share of batches gets one operation that must fail (a create of an item that is there), so
# the whole batch must be refused and leave nothing behind.
FAILING_BATCH_SHARE = 0.15
# Bodies of up to ~2.6 KB, so that on the redb store they span one to three pieces of 1,000 bytes.
PAYLOAD_CHARS_MAX = 2500
# The client's and the server's clocks are one clock; this covers the moment a request takes
# to go between them and the rounding of `_ts` to seconds is handled on its own.
CLOCK_MARGIN_MS = 150
# An item the client will touch must stay visible at least this long, so that a replace, patch or
# delete meant to succeed does not race its expiry (if it does, the server's 404 is fine anyway).
VISIBLE_AHEAD_MS = 1_500
REQUEST_TIMEOUT_SECS = 10
WORKER_JOIN_SECS = 30
SWEEP_DRAIN_SECS = 20
INDEX_REBUILD_SECS = 30
STATS_POLL_SECS = 0.1

VISIBLE, INVISIBLE, EITHER = "visible", "invisible", "either"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Violation(Exception):
    """A broken guarantee: the message says which item, what was expected and what was found."""


# --- the model -------------------------------------------------------------------------------


@dataclass(frozen=True)
class State:
    """What one item is, as far as the clients can know.

    `body` is the item's own properties (None: absent); `etag` is known once the server answered
    with it; the last-modified instant lies in [modified_lo_ms, modified_hi_ms] (the server
    shows it only to the second, as `_ts`, and an in-doubt write only brackets it).
    """

    body: Optional[dict]
    etag: Optional[str] = None
    modified_lo_ms: int = 0
    modified_hi_ms: int = 0

    @staticmethod
    def from_document(document: dict, lo_ms: int = 0, hi_ms: Optional[int] = None) -> "State":
        ts_ms = int(document["_ts"]) * 1000
        lo = max(ts_ms, lo_ms)
        hi = ts_ms + 999 if hi_ms is None else min(ts_ms + 999, hi_ms)
        if hi < lo:  # The request's own instants only narrow what `_ts` says; never contradict it.
            lo, hi = ts_ms, ts_ms + 999
        return State(user_properties(document), document.get("_etag"), lo, hi)

    def expiry_ms(self) -> Optional[tuple[int, int]]:
        ttl = None if self.body is None else self.body.get("ttl")
        if ttl is None or ttl < 0:
            return None
        return self.modified_lo_ms + ttl * 1000, self.modified_hi_ms + ttl * 1000

    def visibility(self, start_ms: int, end_ms: int) -> str:
        """Whether the item must be visible, must not be, or may be either, over an interval."""
        if self.body is None:
            return INVISIBLE
        expiry = self.expiry_ms()
        if expiry is None:
            return VISIBLE
        earliest, latest = expiry
        if start_ms >= latest + CLOCK_MARGIN_MS:
            return INVISIBLE
        if end_ms + CLOCK_MARGIN_MS < earliest:
            return VISIBLE
        return EITHER

    def expired_by(self, at_ms: int) -> bool:
        return self.body is not None and self.visibility(at_ms, at_ms) == INVISIBLE

    def expired_before(self, at_ms: int) -> "State":
        """This state, knowing that it had expired by `at_ms` (a read did not find it then)."""
        hi = min(self.modified_hi_ms, at_ms - self.body["ttl"] * 1000)
        return State(self.body, self.etag, min(self.modified_lo_ms, hi), hi)

    def admits(self, document: Optional[dict], start_ms: int, end_ms: int) -> bool:
        """Whether `document` (None: not found) is what this state allows over the interval."""
        visibility = self.visibility(start_ms, end_ms)
        if document is None:
            return visibility != VISIBLE
        if visibility == INVISIBLE or user_properties(document) != self.body:
            return False
        return self.etag is None or document.get("_etag") == self.etag

    def describe(self) -> str:
        if self.body is None:
            return "absent"
        text = f"v={self.body.get('v')} n={self.body.get('n')}"
        if self.etag:
            text += f" etag={self.etag}"
        if self.body.get("ttl") is not None:
            earliest, latest = self.expiry_ms()
            text += f" ttl={self.body['ttl']}s expires in [{earliest}, {latest}] ms"
        return text


ABSENT = State(None)


def user_properties(document: dict) -> dict:
    return {name: value for name, value in document.items() if not name.startswith("_")}


def describe_document(document: Optional[dict]) -> str:
    if document is None:
        return "not found"
    return (f"v={document.get('v')} n={document.get('n')} etag={document.get('_etag')} "
            f"_ts={document.get('_ts')} ttl={document.get('ttl')}")


Key = tuple[str, str]  # (partition key, id)


@dataclass
class InDoubt:
    """A write the kill (or a 5xx) left without an answer: each item it names and the state it
    asked for, with the last-modified instant bracketed by when it was sent and when it failed."""

    kind: str
    targets: dict[Key, State]
    error: str
    cause: str = "cut"


@dataclass
class Figures:
    cycles: int = 0
    acknowledged: collections.Counter = field(default_factory=collections.Counter)
    refused: collections.Counter = field(default_factory=collections.Counter)
    writes_verified: int = 0
    items_checked: int = 0
    in_doubt: collections.Counter = field(default_factory=collections.Counter)
    batches: collections.Counter = field(default_factory=collections.Counter)
    expired_checked: int = 0
    expiring_skipped: int = 0
    swept_after_restart: int = 0
    cycles_swept: int = 0
    container_ttl_checks: int = 0
    index_checks: int = 0
    index_entries_checked: int = 0
    restart_ms_max: int = 0
    seconds: float = 0.0

    def summary(self, seed: int) -> str:
        writes = sum(count for kind, count in self.acknowledged.items() if kind != "container ttl")
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(self.acknowledged.items())
                          if kind != "container ttl")
        doubt = sum(count for kind, count in self.in_doubt.items() if kind.startswith("writes"))
        resolved = ", ".join(f"{kind} {count}" for kind, count in sorted(self.in_doubt.items())
                             if not kind.startswith("writes"))
        refused = sum(self.refused.values())
        batches = self.batches
        return "\n".join([
            f"crash cycles: {self.cycles} cycles, seed {seed}",
            f"  cycles run             {self.cycles} (SIGKILL mid-load, restart on the same directory; "
            f"slowest restart {self.restart_ms_max} ms)",
            f"  writes acknowledged    {writes} ({kinds}); {refused} refused with a 4xx and checked unapplied",
            f"  writes verified        {self.writes_verified} acknowledged writes, through {self.items_checked} "
            "item states read back after the restarts on point read, read feed and query",
            f"  in-doubt writes        {doubt} resolved after the restart: {resolved or 'none'} (cut: the "
            "request was in flight at the kill; unsent: the server was already gone; either: both states "
            "read alike, e.g. a delete of an item that had expired)",
            f"  batches checked        {sum(batches.values())} (acknowledged {batches['acknowledged']}, "
            f"refused whole {batches['refused']}, in doubt: applied whole {batches['in doubt, applied']}, "
            f"not at all {batches['in doubt, not applied']}, either {batches['in doubt, either']})",
            f"  expired items checked  {self.expired_checked} invisible on all three paths "
            f"({self.expiring_skipped} expiring during a check were left out of it); the sweeper "
            f"drained its backlog after every restart, deleting {self.swept_after_restart} "
            f"({self.cycles_swept} cycles had expired items to delete)",
            f"  container TTL          {self.acknowledged['container ttl']} changes acknowledged, "
            f"{self.container_ttl_checks} checks after restarts",
            f"  index                  {self.index_checks} checks after restarts found the stored index "
            f"equal to one rebuilt from the items ({self.index_entries_checked} entries in all)",
            f"  time taken             {self.seconds:.1f} s",
        ])


class Model:
    """Every item's last acknowledged (or resolved) state, the container's TTL, and each item's
    recent history, for messages that say how an item got where it is."""

    def __init__(self) -> None:
        self.items: dict[Key, State] = {}
        self.history: dict[Key, collections.deque] = collections.defaultdict(
            lambda: collections.deque(maxlen=8))
        self.container_ttl: Optional[int] = None

    def state(self, key: Key) -> State:
        return self.items.get(key, ABSENT)

    def note(self, key: Key, text: str) -> None:
        self.history[key].append(text)

    def explain(self, key: Key) -> str:
        return "; ".join(self.history[key]) or "never written"


# --- the load --------------------------------------------------------------------------------


def is_definite_refusal(error: Exception) -> bool:
    """A 4xx answer means the server applied nothing; anything else (no answer, 408, 5xx) leaves
    the write in doubt."""
    status = getattr(error, "status_code", None)
    return isinstance(error, (CosmosHttpResponseError, CosmosBatchOperationError)) and \
        status is not None and 400 <= status < 500 and status != 408


class Worker(threading.Thread):
    """One client: writes the items of its own partitions until told to stop or a request goes
    unanswered (then that write is in doubt and the worker stops for this cycle)."""

    def __init__(self, number: int, container, model: Model, rng: random.Random, cycle: int):
        super().__init__(daemon=True, name=f"crash-worker-{number}")
        self.number, self.container, self.model, self.rng, self.cycle = number, container, model, rng, cycle
        self.partitions = [f"w{number}-p{index}" for index in range(PARTITIONS_PER_WORKER)]
        self.stop = threading.Event()
        self.acknowledged: collections.Counter = collections.Counter()
        self.refused: collections.Counter = collections.Counter()
        self.batches: collections.Counter = collections.Counter()
        self.in_doubt: Optional[InDoubt] = None
        self.crash: Optional[BaseException] = None

    def keys(self, partition: str) -> list[Key]:
        return [(partition, f"{partition}-i{index}") for index in range(IDS_PER_PARTITION)]

    def body(self, key: Key, n: int) -> dict:
        body = {"id": key[1], "pk": key[0], "v": f"c{self.cycle}-{self.rng.getrandbits(48):x}", "n": n,
                "payload": "x" * self.rng.randint(0, PAYLOAD_CHARS_MAX)}
        if self.rng.random() < ITEM_TTL_SHARE:
            body["ttl"] = self.rng.choice(ITEM_TTLS_SECS)
        return body

    def run(self) -> None:
        try:
            while not self.stop.is_set() and self.step():
                pass
        except BaseException as error:  # noqa: BLE001 - reported by the cycle, not lost in a thread
            self.crash = error

    def step(self) -> bool:
        """One write; False when it went unanswered."""
        partition = self.rng.choice(self.partitions)
        at = now_ms()
        keys = self.keys(partition)
        visible = [key for key in keys if self.model.state(key).visibility(at, at + VISIBLE_AHEAD_MS) == VISIBLE]
        absent = [key for key in keys if self.model.state(key).visibility(at, at) == INVISIBLE]
        roll = self.rng.random()
        if roll < 0.2:
            return self.batch(partition, keys, visible, absent)
        if roll < 0.35 and absent:
            key = self.rng.choice(absent)
            return self.single("create", {key: self.body(key, 0)},
                               lambda body: self.container.create_item(body))
        if roll < 0.5 and visible:
            key = self.rng.choice(visible)
            old = self.model.state(key)
            return self.single("replace", {key: self.body(key, old.body["n"] + 1)},
                               lambda body: self.container.replace_item(
                                   body["id"], body, etag=old.etag, match_condition=MatchConditions.IfNotModified))
        if roll < 0.65 and visible:
            key = self.rng.choice(visible)
            old = self.model.state(key)
            version = f"c{self.cycle}-{self.rng.getrandbits(48):x}"
            wanted = dict(old.body, n=old.body["n"] + 1, v=version)
            operations = [{"op": "incr", "path": "/n", "value": 1}, {"op": "set", "path": "/v", "value": version}]
            conditional = self.rng.random() < 0.5
            return self.single("patch", {key: wanted}, lambda _body: self.container.patch_item(
                key[1], partition_key=key[0], patch_operations=operations,
                **({"etag": old.etag, "match_condition": MatchConditions.IfNotModified} if conditional else {})))
        if roll < 0.75 and visible:
            key = self.rng.choice(visible)
            return self.single("delete", {key: None},
                               lambda _body: self.container.delete_item(key[1], partition_key=key[0]))
        key = self.rng.choice(keys)
        old = self.model.state(key)
        return self.single("upsert", {key: self.body(key, (old.body or {}).get("n", -1) + 1)},
                           lambda body: self.container.upsert_item(body))

    def single(self, kind: str, wanted: dict[Key, Optional[dict]], send) -> bool:
        ((key, body),) = wanted.items()
        sent = now_ms()
        try:
            document = send(body)
        except Exception as error:  # noqa: BLE001 - sorted into refused or in doubt just below
            return self.failed(kind, wanted, sent, error)
        self.model.items[key] = ABSENT if body is None else State.from_document(document, sent, now_ms())
        self.model.note(key, f"cycle {self.cycle}: {kind} acknowledged ({self.model.items[key].describe()})")
        self.acknowledged[kind] += 1
        return True

    def batch(self, partition: str, keys: list[Key], visible: list[Key], absent: list[Key]) -> bool:
        count = self.rng.randint(*BATCH_OPERATIONS)
        chosen = self.rng.sample(keys, count)
        others = [key for key in visible if key not in chosen]
        must_fail = bool(others) and self.rng.random() < FAILING_BATCH_SHARE
        operations, wanted = [], {}
        for key in chosen:
            old = self.model.state(key)
            if key in absent:
                kind = self.rng.choice(["create", "upsert"])
            elif key in visible:
                kind = self.rng.choice(["replace", "upsert", "patch", "delete"])
            else:
                kind = "upsert"
            if kind == "delete":
                operations.append(("delete", (key[1],)))
                wanted[key] = None
            elif kind == "patch":
                version = f"c{self.cycle}-{self.rng.getrandbits(48):x}"
                operations.append(("patch", (key[1], [{"op": "incr", "path": "/n", "value": 1},
                                                      {"op": "set", "path": "/v", "value": version}])))
                wanted[key] = dict(old.body, n=old.body["n"] + 1, v=version)
            else:
                body = self.body(key, (old.body or {}).get("n", -1) + 1)
                if kind == "replace":
                    operations.append(("replace", (key[1], body), {"if_match_etag": old.etag}))
                else:
                    operations.append((kind, (body,)))
                wanted[key] = body
        if must_fail:
            # A create of an item that is there: 409, so every operation before it is undone.
            operations.append(("create", ({"id": self.rng.choice(others)[1], "pk": partition, "n": 0},)))
        sent = now_ms()
        try:
            results = self.container.execute_item_batch(batch_operations=operations, partition_key=partition)
        except Exception as error:  # noqa: BLE001 - sorted into refused or in doubt just below
            if is_definite_refusal(error):
                self.batches["refused"] += 1
            # A batch that cannot succeed can only have been not applied, even if it is in doubt.
            unchanged = {key: self.model.state(key) for key in wanted} if must_fail else None
            return self.failed("batch", wanted, sent, error, unchanged)
        received = now_ms()
        if must_fail:
            raise Violation(f"cycle {self.cycle}: a batch ending in a create of an existing item was "
                            f"acknowledged: {operations}")
        for (key, body), result in zip(wanted.items(), results):
            if body is None:
                self.model.items[key] = ABSENT
            else:
                document = dict(result["resourceBody"])
                self.model.items[key] = State.from_document(document, sent, received)
            self.model.note(key, f"cycle {self.cycle}: batch op acknowledged ({self.model.items[key].describe()})")
        self.acknowledged["batch op"] += len(wanted)
        self.batches["acknowledged"] += 1
        return True

    def failed(self, kind: str, wanted: dict[Key, Optional[dict]], sent: int, error: Exception,
               targets: Optional[dict[Key, State]] = None) -> bool:
        if is_definite_refusal(error):
            self.refused[kind] += 1
            return True
        failed_at = now_ms()
        if targets is None:
            targets = {key: ABSENT if body is None else State(body, None, sent - CLOCK_MARGIN_MS, failed_at)
                       for key, body in wanted.items()}
        for key, target in targets.items():
            self.model.note(key, f"cycle {self.cycle}: {kind} in doubt (would be {target.describe()})")
        # The SDK raises ServiceRequestError when it could not send the request at all (the
        # server was already gone): in doubt all the same, but it tells the figures apart.
        cause = "unsent" if isinstance(error, ServiceRequestError) else "cut"
        self.in_doubt = InDoubt(kind, targets, f"{type(error).__name__}: {str(error)[:200]}", cause)
        return False


class ContainerTtlChanger(threading.Thread):
    """Replaces the container's `defaultTtl` now and then; keeps the last acknowledged value and
    the one in doubt, if the kill cut its request."""

    def __init__(self, database, model: Model, rng: random.Random):
        super().__init__(daemon=True, name="crash-container-ttl")
        self.database, self.model, self.rng = database, model, rng
        self.stop = threading.Event()
        self.acknowledged = 0
        self.in_doubt: Optional[int] = None
        self.crash: Optional[BaseException] = None

    def run(self) -> None:
        try:
            while not self.stop.wait(self.rng.uniform(*CONTAINER_TTL_PAUSE_SECS)):
                wanted = self.rng.choice([ttl for ttl in CONTAINER_TTLS_SECS if ttl != self.model.container_ttl])
                policy = self.rng.choice(INDEXING_POLICIES)
                try:
                    self.database.replace_container(CONTAINER_ID, partition_key=PartitionKey(path="/pk"),
                                                    default_ttl=wanted, indexing_policy=policy)
                except Exception as error:  # noqa: BLE001 - refused or in doubt
                    if is_definite_refusal(error):
                        raise
                    self.in_doubt = wanted
                    return
                self.model.container_ttl = wanted
                self.acknowledged += 1
        except BaseException as error:  # noqa: BLE001 - reported by the cycle
            self.crash = error


# --- one run ---------------------------------------------------------------------------------


def load_client(server: Server) -> CosmosClient:
    """A client that gives up at once when the server disappears: a retried write could be
    applied twice or hide which attempt was acknowledged."""
    return CosmosClient(server.endpoint, server.key, connection_timeout=2, read_timeout=REQUEST_TIMEOUT_SECS,
                        retry_total=0, retry_connect=0, retry_read=0)


def check_client(server: Server) -> CosmosClient:
    return CosmosClient(server.endpoint, server.key, connection_timeout=5, read_timeout=30)


def master_key_headers(key: str, resource_type: str = "_lethedb", link: str = "_lethedb/stats") -> dict[str, str]:
    """The master-key signature of a GET: `GET /_lethedb/stats` asks for resource type
    `_lethedb`, link `_lethedb/stats`; the index check for those of a container read (see
    docs/compatibility.md)."""
    date = email.utils.formatdate(usegmt=True)
    text = f"get\n{resource_type}\n{link}\n{date.lower()}\n\n"
    signature = base64.b64encode(hmac.new(base64.b64decode(key), text.encode(), hashlib.sha256).digest()).decode()
    return {"x-ms-date": date, "x-ms-version": "2018-12-31",
            "authorization": urllib.parse.quote(f"type=master&ver=1.0&sig={signature}", safe="")}


def stats_entry(server: Server) -> Optional[dict]:
    request = urllib.request.Request(f"{server.endpoint}_lethedb/stats", headers=master_key_headers(server.key))
    with urllib.request.urlopen(request, timeout=10) as response:
        stats = json.load(response)
    if stats.get("poisoned"):
        raise Violation(f"the store is poisoned after the restart: {stats['poisoned']}")
    for entry in stats.get("containers", []):
        if entry.get("database") == DATABASE_ID and entry.get("container") == CONTAINER_ID:
            return entry
    return None


@dataclass
class Options:
    cycles: int = 10
    seed: Optional[int] = None
    data_dir: Optional[Path] = None
    load_secs: tuple[float, float] = (LOAD_SECS_MIN, LOAD_SECS_MAX)
    log: bool = True
    # Further `serve` flags (e.g. `--redo-checkpoint-mb=1`): the server gets no LETHEDB_*
    # variable from the environment, so flags are the only way to vary its settings.
    serve_args: tuple[str, ...] = ()


class CrashCycles:
    def __init__(self, options: Options):
        self.options = options
        self.seed = options.seed if options.seed is not None else random.randrange(2**32)
        self.rng = random.Random(self.seed)
        self.model = Model()
        self.figures = Figures()
        self.server: Optional[Server] = None

    def say(self, text: str) -> None:
        if self.options.log:
            print(text, flush=True)

    def run(self) -> Figures:
        started = time.monotonic()
        self.server = Server(self.options.data_dir, extra_args=SERVER_ARGS + list(self.options.serve_args)).start()
        try:
            database = check_client(self.server).create_database_if_not_exists(DATABASE_ID)
            database.create_container_if_not_exists(CONTAINER_ID, partition_key=PartitionKey(path="/pk"),
                                                    default_ttl=CONTAINER_TTLS_SECS[0])
            self.model.container_ttl = CONTAINER_TTLS_SECS[0]
            for cycle in range(1, self.options.cycles + 1):
                self.cycle(cycle)
                self.figures.cycles = cycle
        finally:
            self.figures.seconds = time.monotonic() - started
            self.server.kill()
        return self.figures

    def cycle(self, cycle: int) -> None:
        client = load_client(self.server)
        database = client.get_database_client(DATABASE_ID)
        container = database.get_container_client(CONTAINER_ID)
        workers = [Worker(number, container, self.model, random.Random(self.rng.getrandbits(64)), cycle)
                   for number in range(WORKERS)]
        changer = ContainerTtlChanger(database, self.model, random.Random(self.rng.getrandbits(64)))
        threads = [*workers, changer]
        for thread in threads:
            thread.start()
        load_secs = self.rng.uniform(*self.options.load_secs)
        time.sleep(load_secs)
        self.server.kill()
        for thread in threads:
            thread.stop.set()
        for thread in threads:
            thread.join(WORKER_JOIN_SECS)
            if thread.is_alive():
                raise Violation(f"cycle {cycle}: client {thread.name} still waiting {WORKER_JOIN_SECS} s after the kill")
            if thread.crash is not None:
                raise Violation(f"cycle {cycle}: client {thread.name} failed: {thread.crash!r}") from thread.crash
        acknowledged = sum(sum(worker.acknowledged.values()) for worker in workers)
        for worker in workers:
            self.figures.acknowledged.update(worker.acknowledged)
            self.figures.refused.update(worker.refused)
            self.figures.batches.update(worker.batches)
        self.figures.acknowledged["container ttl"] += changer.acknowledged

        # Items expire while the server is down; the sweeper must find them after the restart.
        time.sleep(self.rng.uniform(*DOWNTIME_SECS))
        restart_started = time.monotonic()
        try:
            self.server = Server(self.options.data_dir, extra_args=SERVER_ARGS + list(self.options.serve_args)).start()
        except Exception as error:
            raise Violation(f"cycle {cycle}: the server did not start again on its data directory: {error}") from error
        restart_ms = int((time.monotonic() - restart_started) * 1000)
        self.figures.restart_ms_max = max(self.figures.restart_ms_max, restart_ms)

        in_doubt = [worker.in_doubt for worker in workers if worker.in_doubt is not None]
        checker = check_client(self.server)
        container = checker.get_database_client(DATABASE_ID).get_container_client(CONTAINER_ID)
        self.check_container_ttl(cycle, container, changer.in_doubt)
        checked = self.check_items(cycle, container, in_doubt)
        swept = self.check_sweeper(cycle)
        self.check_index(cycle)
        self.figures.writes_verified += acknowledged
        self.say(f"cycle {cycle}: killed after {load_secs:.2f} s; {acknowledged} writes acknowledged, "
                 f"{len(in_doubt)} in doubt; restarted in {restart_ms} ms; {checked} items checked, "
                 f"{swept} swept after the restart")

    def check_container_ttl(self, cycle: int, container, in_doubt: Optional[int]) -> None:
        found = container.read().get("defaultTtl")
        allowed = [self.model.container_ttl] + ([in_doubt] if in_doubt is not None else [])
        if found not in allowed:
            raise Violation(f"cycle {cycle}: the container's defaultTtl is {found!r} after the restart; the last "
                            f"acknowledged value is {self.model.container_ttl!r}, the one in doubt {in_doubt!r}")
        if in_doubt is not None:
            self.figures.in_doubt["applied (container ttl)" if found == in_doubt else "not applied (container ttl)"] += 1
            self.figures.in_doubt["writes (container ttl)"] += 1
        self.model.container_ttl = found
        self.figures.container_ttl_checks += 1

    def check_items(self, cycle: int, container, in_doubt: list[InDoubt]) -> int:
        keys = sorted(set(self.model.items) | {key for doubt in in_doubt for key in doubt.targets})
        # Point reads first: they resolve the writes in doubt.
        point: dict[Key, Optional[dict]] = {}
        read_at: dict[Key, tuple[int, int]] = {}
        for key in keys:
            start = now_ms()
            try:
                point[key] = container.read_item(key[1], partition_key=key[0])
            except CosmosResourceNotFoundError:
                point[key] = None
            read_at[key] = (start, now_ms())
        for doubt in in_doubt:
            self.resolve(cycle, doubt, point, read_at)
        for key in keys:
            if any(key in doubt.targets for doubt in in_doubt):
                continue
            state = self.model.state(key)
            if not state.admits(point[key], *read_at[key]):
                raise Violation(
                    f"cycle {cycle}: item {key} lost its acknowledged state: expected {state.describe()}, "
                    f"a point read found {describe_document(point[key])}; history: {self.model.explain(key)}")
        states_before = {key: self.model.state(key) for key in keys}
        doubtful = {key: target for doubt in in_doubt for key, target in doubt.targets.items()}
        for key in keys:
            document = point[key]
            if document is not None:
                known = states_before[key] if states_before[key].etag == document.get("_etag") else None
                # The acknowledging client bracketed the write's instant more tightly than `_ts` does.
                self.model.items[key] = known or State.from_document(document)
                continue
            # Not found: absent, or expired. An expired item is kept with what the read proved
            # (its expiry had passed by then), so every later check still expects it invisible.
            self.model.items[key] = ABSENT
            for candidate in (states_before[key], doubtful.get(key, ABSENT)):
                if candidate.expiry_ms() is not None and candidate.admits(None, *read_at[key]):
                    self.model.items[key] = candidate.expired_before(read_at[key][1])
                    break

        start = now_ms()
        feed = self.listing(cycle, "read feed", container.read_all_items(max_item_count=50))
        feed_window = (start, now_ms())
        start = now_ms()
        query = self.listing(cycle, "query", container.query_items(
            "SELECT * FROM c", enable_cross_partition_query=True, max_item_count=50))
        query_window = (start, now_ms())
        window = (min(read_at.values())[0] if read_at else start, now_ms())
        for path, found, (path_start, path_end) in (("read feed", feed, feed_window), ("query", query, query_window)):
            for key, document in found.items():
                if key not in self.model.items:
                    raise Violation(f"cycle {cycle}: the {path} shows {key} ({describe_document(document)}), "
                                    "an item no client ever wrote")
            for key in keys:
                state = self.model.state(key)
                if not state.admits(found.get(key), path_start, path_end):
                    raise Violation(
                        f"cycle {cycle}: the {path} disagrees with the point read on {key}: point read "
                        f"{describe_document(point[key])}, {path} {describe_document(found.get(key))}; "
                        f"expected {state.describe()}; history: {self.model.explain(key)}")
        # The three paths agree on every item not expiring while they ran.
        steady = [key for key in keys if self.model.state(key).visibility(*window) != EITHER]
        self.figures.expiring_skipped += len(keys) - len(steady)
        for key in steady:
            seen = (point[key] is not None, key in feed, key in query)
            if len(set(seen)) != 1:
                raise Violation(f"cycle {cycle}: paths disagree on {key}: point read {seen[0]}, read feed "
                                f"{seen[1]}, query {seen[2]}; history: {self.model.explain(key)}")
            if self.model.state(key).expired_by(window[0]):
                self.figures.expired_checked += 1
        self.figures.items_checked += len(keys)
        return len(keys)

    def listing(self, cycle: int, path: str, pages) -> dict[Key, dict]:
        found: dict[Key, dict] = {}
        for document in pages:
            key = (document["pk"], document["id"])
            if key in found:
                raise Violation(f"cycle {cycle}: the {path} returns {key} twice")
            found[key] = document
        return found

    def resolve(self, cycle: int, doubt: InDoubt, point: dict, read_at: dict) -> None:
        """Decides whether an in-doubt write was applied: all of its items in the new state, or
        all in the old one; anything else is a lost write or a half-applied batch."""
        fits_new = {key: target.admits(point[key], *read_at[key]) for key, target in doubt.targets.items()}
        fits_old = {key: self.model.state(key).admits(point[key], *read_at[key]) for key in doubt.targets}
        applied, unapplied = all(fits_new.values()), all(fits_old.values())
        if not applied and not unapplied:
            lines = [f"{key}: found {describe_document(point[key])}, before {self.model.state(key).describe()}, "
                     f"asked {target.describe()} (fits before: {fits_old[key]}, fits asked: {fits_new[key]})"
                     for key, target in doubt.targets.items()]
            what = "half-applied batch" if doubt.kind == "batch" else "an item in neither its old nor its new state"
            raise Violation(f"cycle {cycle}: {what} after an in-doubt {doubt.kind} ({doubt.error}):\n  "
                            + "\n  ".join(lines))
        # A batch meant to fail asks for its items' old states: it can only have been not applied.
        cannot_apply = all(target == self.model.state(key) for key, target in doubt.targets.items())
        outcome = "not applied" if cannot_apply else "either" if applied and unapplied \
            else "applied" if applied else "not applied"
        self.figures.in_doubt[f"writes ({doubt.kind})"] += 1
        self.figures.in_doubt[f"{outcome} ({doubt.cause})"] += 1
        if doubt.kind == "batch":
            self.figures.batches[f"in doubt, {outcome}"] += 1
        for key in doubt.targets:
            self.model.note(key, f"cycle {cycle}: in-doubt {doubt.kind} resolved as {outcome}")

    def check_index(self, cycle: int) -> None:
        """The stored index equals one rebuilt from the items, once the rebuild a policy change
        started (and the kill may have cut) has ended after the restart."""
        link = f"dbs/{DATABASE_ID}/colls/{CONTAINER_ID}"
        deadline = time.monotonic() + INDEX_REBUILD_SECS
        while True:
            request = urllib.request.Request(f"{self.server.endpoint}_lethedb/index-check/{link}",
                                             headers=master_key_headers(self.server.key, "colls", link))
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_SECS * 3) as response:
                check = json.load(response)
            if not check.get("rebuilding"):
                break
            if time.monotonic() > deadline:
                raise Violation(f"cycle {cycle}: the index rebuild did not end within {INDEX_REBUILD_SECS} s "
                                f"of the restart: {check}")
            time.sleep(STATS_POLL_SECS)
        if not check.get("consistent"):
            raise Violation(f"cycle {cycle}: the index differs from one rebuilt from the items after the "
                            f"restart: {check}")
        self.figures.index_checks += 1
        self.figures.index_entries_checked += int(check.get("stored", 0))

    def check_sweeper(self, cycle: int) -> int:
        """The sweeper runs again after the restart: it reports the container with no expired item
        left (a full count on its first pass, then one per pass), within a deadline."""
        deadline = time.monotonic() + SWEEP_DRAIN_SECS
        entry = None
        while time.monotonic() < deadline:
            entry = stats_entry(self.server)
            if entry is not None and entry.get("ttlBacklogItems") == 0 and entry.get("oldestExpiredAgeMs") == 0:
                swept = int(entry.get("ttlDeletedTotal", 0))
                self.figures.swept_after_restart += swept
                self.figures.cycles_swept += swept > 0
                return swept
            time.sleep(STATS_POLL_SECS)
        raise Violation(f"cycle {cycle}: the sweeper did not drain the expired items within {SWEEP_DRAIN_SECS} s "
                        f"of the restart: {entry}")


def run(options: Options) -> tuple[Figures, int, Optional[str]]:
    """Runs the cycles; returns the figures, the seed and the violation, if one was found."""
    keep = options.data_dir is not None
    if options.data_dir is None:
        options.data_dir = Path(tempfile.mkdtemp(prefix="lethedb-crash-")) / "data"
    runner = CrashCycles(options)
    violation = None
    try:
        runner.run()
    except Violation as error:
        violation = f"{error}\n(data directory kept at {options.data_dir}, server log at " \
                    f"{options.data_dir.parent / (options.data_dir.name + '.log')})"
        keep = True
    finally:
        if not keep:
            shutil.rmtree(options.data_dir.parent, ignore_errors=True)
    if violation is None and runner.figures.cycles and not runner.figures.swept_after_restart \
            and runner.figures.cycles >= 10:
        violation = "the sweeper deleted nothing after any restart, though items expired in every cycle"
    return runner.figures, runner.seed, violation


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=100, help="kill-and-restart cycles (default 100)")
    parser.add_argument("--seed", type=int, help="the random seed (printed; timing still varies)")
    parser.add_argument("--data-dir", type=Path, help="the data directory (default: a fresh temporary one)")
    parser.add_argument("--quiet", action="store_true", help="print only the figures")
    parser.add_argument("--serve-arg", action="append", default=[], metavar="FLAG",
                        help="one more `serve` flag, e.g. --serve-arg=--redo-checkpoint-mb=1 (repeatable)")
    args = parser.parse_args(argv)
    # The SDK warns each time it marks the killed endpoint unavailable: expected here, every cycle.
    logging.getLogger("azure").setLevel(logging.ERROR)
    options = Options(cycles=args.cycles, seed=args.seed, data_dir=args.data_dir, log=not args.quiet,
                      serve_args=tuple(args.serve_arg))
    figures, seed, violation = run(options)
    print(figures.summary(seed))
    if violation:
        print(f"VIOLATION: {violation}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
