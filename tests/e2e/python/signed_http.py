"""Raw Cosmos REST requests signed with the master key, through `requests`.

For tests that must see every answer as the server sent it, without the SDK's retries (which
turn a quick 503 into a slow success) or its caches: one request is one HTTP exchange, and its
duration is the server's.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import hmac
import json
import urllib.parse
from typing import Any, Optional

import requests
import requests.adapters

API_VERSION = "2018-12-31"


def authorization(key: str, verb: str, resource_type: str, resource_link: str, date: str) -> str:
    """The master-key `authorization` header for one request."""
    text = f"{verb.lower()}\n{resource_type}\n{resource_link}\n{date.lower()}\n\n"
    signature = base64.b64encode(hmac.new(base64.b64decode(key), text.encode(), hashlib.sha256).digest()).decode()
    return urllib.parse.quote(f"type=master&ver=1.0&sig={signature}", safe="")


def resource_of(path: str) -> tuple[str, str]:
    """(resource type, resource link) of a path such as `dbs/d/colls/c/docs` or `.../docs/x`."""
    segments = [s for s in path.strip("/").split("/") if s]
    if len(segments) % 2:  # a feed: the type is the last segment, the link its parent
        return segments[-1], "/".join(segments[:-1])
    return segments[-2], "/".join(segments)


class RawClient:
    """Signed requests to one endpoint over a keep-alive session."""

    def __init__(self, endpoint: str, key: str, timeout_secs: float = 30.0):
        self.endpoint = endpoint.rstrip("/")
        self.key = key
        self.timeout_secs = timeout_secs
        self.session = requests.Session()
        # Room for as many keep-alive connections as a test runs threads at once.
        self.session.mount("http://", requests.adapters.HTTPAdapter(pool_maxsize=64))

    def request(self, verb: str, path: str, *, body: Any = None, partition_key: Any = None,
                headers: Optional[dict] = None, signed_as: Optional[str] = None) -> requests.Response:
        """One request; `signed_as` is the Cosmos path the signature names when it is not
        `path` itself (LetheDB's own endpoints under /_lethedb)."""
        resource_type, resource_link = resource_of(signed_as or path)
        date = email.utils.formatdate(usegmt=True)
        sent = {"x-ms-date": date, "x-ms-version": API_VERSION,
                "authorization": authorization(self.key, verb, resource_type, resource_link, date)}
        if partition_key is not None:
            sent["x-ms-documentdb-partitionkey"] = json.dumps([partition_key])
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["content-type"] = "application/json"
        sent.update(headers or {})
        return self.session.request(verb.upper(), f"{self.endpoint}/{path.strip('/')}", data=data,
                                    headers=sent, timeout=self.timeout_secs)

    def create_item(self, collection_path: str, body: dict, partition_key: Any) -> requests.Response:
        return self.request("POST", f"{collection_path}/docs", body=body, partition_key=partition_key)

    def read_item(self, collection_path: str, item_id: str, partition_key: Any) -> requests.Response:
        return self.request("GET", f"{collection_path}/docs/{item_id}", partition_key=partition_key)

    def batch(self, collection_path: str, operations: list[dict], partition_key: Any) -> requests.Response:
        """A transactional batch (all or nothing) in one logical partition."""
        return self.request("POST", f"{collection_path}/docs", body=operations, partition_key=partition_key,
                            headers={"x-ms-cosmos-is-batch-request": "True",
                                     "x-ms-cosmos-batch-atomic": "True",
                                     "x-ms-cosmos-batch-continue-on-error": "False",
                                     "content-type": "application/json"})
