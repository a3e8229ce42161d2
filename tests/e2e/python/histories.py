"""A linearizability checker for recorded histories of item operations, and a session check.

What it does: given operations recorded from several clients (invocation time, return time,
outcome), it searches per key for a linearization (Wing and Gong's search with Lowe's
memoisation of (linearized set, register state)) against a register model: read, upsert,
create, replace, conditional replace (If-Match on an ETag, success or 412) and delete. An
operation whose outcome is unknown (a timeout, a 503 on commit) has return time infinity and
may or may not have taken effect. What it does not do: partitions, queries, batches or any
operation spanning keys; each key is checked on its own, which is sound for a register per key.

The model compares values, not ETags: each write must carry a value no other write carries, so
an ETag names exactly one value (the one its write, or a read answering it, reported). A
conditional replace holds when the key's value is the value of the ETag it names.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional

ABSENT = None
INFINITY = math.inf
WRITES = ("upsert", "create", "replace", "replace_if_match")


@dataclass
class Op:
    """One operation as a client saw it: `ok` None means the outcome is unknown."""
    client: str
    key: str
    kind: str                      # read, upsert, create, replace, replace_if_match, delete
    invoked: float
    returned: float = INFINITY
    value: Any = None              # written value, or value read (ABSENT for a 404)
    ok: Optional[bool] = None      # True: took effect / found; False: refused (404/409/412)
    etag: Optional[str] = None     # ETag answered (write or read)
    if_match: Optional[str] = None
    index: int = -1

    def describe(self) -> str:
        end = "∞" if self.returned == INFINITY else f"{self.returned:.4f}"
        outcome = {None: "unknown", True: "ok", False: "refused"}[self.ok]
        extra = f" if-match={self.if_match}" if self.if_match else ""
        return f"#{self.index} {self.client} {self.kind}({self.value!r}{extra}) -> {outcome} [{self.invoked:.4f}, {end}]"


@dataclass
class Verdict:
    ok: bool
    key: Optional[str] = None
    operations: list = field(default_factory=list)
    order: dict = field(default_factory=dict)   # key -> linearized ops

    def explain(self) -> str:
        if self.ok:
            return "linearizable"
        lines = [f"key {self.key!r}: no linearization; the operations that could not be placed:"]
        return "\n".join(lines + ["  " + op.describe() for op in self.operations])


def step(op: Op, state: Any, etag_values: dict) -> tuple[bool, Any]:
    """Whether `op` with its recorded outcome fits register `state`, and the state after it."""
    if op.kind == "read":
        return (op.value == state), state
    if op.kind == "upsert":
        return op.ok is not False, op.value
    if op.kind == "create":
        if op.ok is False:
            return state is not ABSENT, state
        return state is ABSENT, op.value
    if op.kind == "replace":
        if op.ok is False:
            return state is ABSENT, state
        return state is not ABSENT, op.value
    if op.kind == "replace_if_match":
        holds = state is not ABSENT and etag_values.get(op.if_match, object()) == state
        if op.ok is False:
            return not holds, state
        return holds, op.value
    if op.kind == "delete":
        if op.ok is False:
            return state is ABSENT, state
        return state is not ABSENT, ABSENT
    raise ValueError(f"unknown operation {op.kind}")


def etag_values_of(ops: list) -> dict:
    values = {}
    for op in ops:
        if op.etag is not None and op.ok and (op.kind == "read" or op.kind in WRITES):
            values[op.etag] = op.value
    return values


def check_key(ops: list, initial: Any = ABSENT) -> tuple[bool, list, list]:
    """Searches one key's history; answers (linearizable, order, the ops unplaced at the deepest point)."""
    ops = sorted(ops, key=lambda op: op.invoked)
    etag_values = etag_values_of(ops)
    known = [i for i, op in enumerate(ops) if op.ok is not None]
    needed = 0
    for i in known:
        needed |= 1 << i
    seen: set = set()
    deepest = {"done": -1, "unplaced": []}
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(ops) + 1000))

    def search(done: int, state: Any, order: list) -> Optional[list]:
        if done & needed == needed:
            return order
        if (done, repr(state)) in seen:
            return None
        seen.add((done, repr(state)))
        pending = [i for i in range(len(ops)) if not done >> i & 1]
        horizon = min(ops[i].returned for i in pending)
        placed = bin(done).count("1")
        if placed > deepest["done"]:
            deepest["done"], deepest["unplaced"] = placed, [ops[i] for i in pending if ops[i].ok is not None]
        for i in pending:
            if ops[i].invoked > horizon:
                break
            fits, after = step(ops[i], state, etag_values)
            if fits:
                found = search(done | 1 << i, after, order + [ops[i]])
                if found is not None:
                    return found
        return None

    order = search(0, initial, [])
    return order is not None, order or [], deepest["unplaced"]


def check(ops: list, initial: Optional[dict] = None) -> Verdict:
    """Checks every key of a history; the first key without a linearization fails it."""
    by_key: dict = {}
    for index, op in enumerate(ops):
        if op.index < 0:
            op.index = index
        by_key.setdefault(op.key, []).append(op)
    orders = {}
    for key in sorted(by_key):
        ok, order, unplaced = check_key(by_key[key], (initial or {}).get(key, ABSENT))
        if not ok:
            return Verdict(False, key, unplaced)
        orders[key] = order
    return Verdict(True, order=orders)


def session_violations(ops: list, orders: dict) -> list:
    """Per client and key, in the client's own order: a read never answers a value older (in the
    linearized write order) than the client's last acknowledged write or read of that key."""
    rank = {}
    for key, order in orders.items():
        position = 0
        for op in order:
            if op.kind in WRITES or op.kind == "delete":
                position += 1
                rank[(key, op.index)] = position
                if op.kind != "delete":
                    rank[(key, "value", repr(op.value))] = position
    problems, last = [], {}
    for op in sorted(ops, key=lambda op: op.invoked):
        if not op.ok:
            continue
        here = rank.get((op.key, op.index)) if op.kind != "read" else rank.get((op.key, "value", repr(op.value)), 0)
        if here is None:
            continue
        previous = last.get((op.client, op.key), 0)
        if op.kind == "read" and here < previous:
            problems.append(f"{op.client} read an older version of {op.key!r}: {op.describe()}")
        last[(op.client, op.key)] = max(previous, here)
    return problems


class Recorder:
    """Thread-safe log of operations; `begin` at invocation, `end` at return (or never)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ops: list = []

    def begin(self, client: str, key: str, kind: str, value: Any = None, if_match: Optional[str] = None) -> Op:
        op = Op(client, key, kind, time.monotonic(), value=value, if_match=if_match)
        with self.lock:
            op.index = len(self.ops)
            self.ops.append(op)
        return op

    def end(self, op: Op, ok: Optional[bool], etag: Optional[str] = None, value: Any = None) -> None:
        """Records the outcome; `ok` None leaves the operation in doubt (return time infinity)."""
        with self.lock:
            op.ok = ok
            op.etag = etag
            if op.kind == "read":
                op.value = value
            if ok is not None:
                op.returned = time.monotonic()

    def verdict(self) -> Verdict:
        with self.lock:
            ops = list(self.ops)
        return check(ops)
