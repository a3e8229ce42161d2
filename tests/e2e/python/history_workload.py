"""A recorded workload for the scale-out fault tests: client threads doing reads, upserts and
If-Match replaces on a few keys through raw signed HTTP (signed_http.py), each operation logged
in a histories.Recorder for the linearizability check. It does not retry: an answer in doubt
(a 5xx, a 408, no answer) is recorded as such, and the checker lets it take effect or not."""

from __future__ import annotations

import random
import threading
from typing import Any, Optional

import requests

from histories import ABSENT, Recorder
from signed_http import RawClient

REFUSALS = (404, 409, 412)


def outcome(response: Optional[requests.Response]) -> tuple[Optional[bool], Optional[str], Any]:
    """(ok, etag, value): True for a 2xx, False for a refusal, None for anything in doubt."""
    if response is None:
        return None, None, None
    if 200 <= response.status_code < 300:
        try:
            value = response.json().get("v")
        except ValueError:
            value = None
        return True, response.headers.get("etag"), value
    if response.status_code in REFUSALS:
        return False, None, None
    return None, None, None


def send(client: RawClient, verb: str, path: str, pk: str, **kwargs) -> Optional[requests.Response]:
    try:
        return client.request(verb, path, partition_key=pk, **kwargs)
    except requests.RequestException:
        return None


def one_operation(recorder: Recorder, name: str, client: RawClient, collection: str, key: str,
                  value: str, rng: random.Random, etags: dict) -> None:
    """One read, upsert or If-Match replace of `key`, recorded from invocation to answer."""
    choice = rng.random()
    if choice < 0.4:
        op = recorder.begin(name, key, "read")
        response = send(client, "GET", f"{collection}/docs/{key}", key)
        if response is not None and response.status_code == 404:
            recorder.end(op, True, value=ABSENT)
            return
        ok, etag, read = outcome(response)
        recorder.end(op, True if ok else None, etag, read)
        if ok:
            etags[key] = etag
        return
    body = {"id": key, "pk": key, "v": value}
    if choice < 0.7 or key not in etags:
        op = recorder.begin(name, key, "upsert", value)
        response = send(client, "POST", f"{collection}/docs", key, body=body,
                        headers={"x-ms-documentdb-is-upsert": "True"})
    else:
        op = recorder.begin(name, key, "replace_if_match", value, if_match=etags[key])
        response = send(client, "PUT", f"{collection}/docs/{key}", key, body=body,
                        headers={"If-Match": etags[key]})
    ok, etag, _ = outcome(response)
    if op.kind == "upsert" and ok is False:
        ok = None  # an upsert is never refused by the model; a 404/409 here is taken as in doubt
    recorder.end(op, ok, etag)
    if ok:
        etags[key] = etag


def recorded_loop(recorder: Recorder, name: str, clients: list, collection: str, keys: list,
                  stop: threading.Event, seed: int, doubt_pause: float = 0.0) -> None:
    """Until `stop`, operations on `keys`, alternating between the instances in `clients`;
    every written value is unique (name and sequence number), as the checker needs. After an
    answer in doubt with no other instance left it waits `doubt_pause` seconds, as an SDK backs
    off a 503, so an outage of the store leaves few operations in doubt."""
    rng = random.Random(seed)
    etags: dict = {}
    number = 0
    while not stop.is_set():
        number += 1
        client = clients[number % len(clients)]
        before = len(recorder.ops)
        one_operation(recorder, name, client, collection, rng.choice(keys), f"{name}-{number}", rng, etags)
        # A client leaves an instance that gave no answer (killed, frozen), as an SDK's
        # failover would: the operations in doubt stay few, so the search stays small.
        if recorder.ops[before].ok is None:
            if len(clients) > 1:
                clients = [other for other in clients if other is not client]
            elif doubt_pause:
                stop.wait(doubt_pause)


def run_recorded(recorder: Recorder, clients: list, collection: str, keys: list, threads: int = 4,
                 doubt_pause: float = 0.0):
    """Starts `threads` recorded loops; answers (stop event, threads) for the caller to join."""
    stop = threading.Event()
    started = [threading.Thread(target=recorded_loop, daemon=True,
                                args=(recorder, f"client{n}", clients, collection, keys, stop, n,
                                      doubt_pause))
               for n in range(threads)]
    for thread in started:
        thread.start()
    return stop, started
