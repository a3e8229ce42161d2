"""Indexing-policy changes on a live container, through the official SDK.

A replace of the indexing policy answers at once and the index is rebuilt in the background:
`x-ms-documentdb-collection-index-transformation-progress` on a container read (the SDK reads it
when asked to populate quota information) climbs to 100, queries answer the same rows before,
during and after, `indexingMode: none` drops the index and `consistent` brings it back (LetheDB's
`/_lethedb/index-check` says the stored index then equals one rebuilt from the items), and writes
are charged by the index terms the policy gives them (see docs/indexing.md).
"""

from __future__ import annotations

import time

from azure.cosmos import PartitionKey

from signed_http import RawClient

PROGRESS = "x-ms-documentdb-collection-index-transformation-progress"
CHARGE = "x-ms-request-charge"
REBUILD_SECS = 60
POLL_SECS = 0.05

EXCLUDE_ALL = {"indexingMode": "consistent", "automatic": True,
               "includedPaths": [], "excludedPaths": [{"path": "/*"}]}
NARROW = {"indexingMode": "consistent", "automatic": True,
          "includedPaths": [{"path": "/n/?"}], "excludedPaths": [{"path": "/*"}],
          "compositeIndexes": [[{"path": "/n", "order": "ascending"},
                                {"path": "/name", "order": "descending"}]]}


def document(index: int) -> dict:
    return {"id": f"i{index:04d}", "pk": f"p{index % 7}", "n": index, "name": f"name-{index % 13}",
            "tags": ["a", index % 5], "nested": {"k": index % 3}}


def progress(container) -> int:
    container.read(populate_quota_info=True)
    return int(container.client_connection.last_response_headers[PROGRESS])


def small_ids(container) -> list[str]:
    """A filtered query whose answer never depends on the index (sorted here: an ORDER BY on a
    path the policy excludes is refused, as on the service)."""
    return sorted(container.query_items("SELECT VALUE c.id FROM c WHERE c.n < 40",
                                        enable_cross_partition_query=True))


def wait_for_rebuild(container, expected_ids: list[str]) -> list[int]:
    """Polls the progress until 100, querying between polls; returns the progress seen."""
    seen = []
    deadline = time.monotonic() + REBUILD_SECS
    while True:
        seen.append(progress(container))
        assert 0 <= seen[-1] <= 100, seen
        assert small_ids(container) == expected_ids, "queries stay correct during the rebuild"
        if seen[-1] == 100:
            return seen
        assert time.monotonic() < deadline, f"the rebuild did not end within {REBUILD_SECS} s: {seen}"
        time.sleep(POLL_SECS)


def index_check(server, database, container) -> dict:
    path = f"dbs/{database.id}/colls/{container.id}"
    response = RawClient(server.endpoint, server.key).request(
        "GET", f"_lethedb/index-check/{path}", signed_as=path)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_policy_change_reports_progress_until_done_while_queries_stay_correct(server, database):
    container = database.create_container("transformed", partition_key=PartitionKey(path="/pk"))
    for index in range(400):
        container.create_item(document(index))
    expected = [f"i{index:04d}" for index in range(40)]
    assert progress(container) == 100, "no rebuild runs before a change"
    assert small_ids(container) == expected
    replaced = database.replace_container(container, partition_key=PartitionKey(path="/pk"),
                                          indexing_policy=NARROW)
    assert replaced.read()["indexingPolicy"]["compositeIndexes"] == NARROW["compositeIndexes"]
    seen = wait_for_rebuild(container, expected)
    assert seen == sorted(seen), f"progress never goes back: {seen}"
    # Writes during and after the rebuild are in place, and the index is exact once it is done.
    container.upsert_item(document(5) | {"n": 1000})
    assert small_ids(container) == [i for i in expected if i != "i0005"]
    check = index_check(server, database, container)
    assert check["consistent"] and not check["rebuilding"] and check["progress"] == 100, check


def test_none_drops_the_index_and_consistent_brings_it_back(server, database):
    container = database.create_container("switched", partition_key=PartitionKey(path="/pk"))
    for index in range(100):
        container.create_item(document(index))
    full = index_check(server, database, container)
    assert full["consistent"] and full["stored"] > 0, full
    expected = [f"i{index:04d}" for index in range(40)]
    database.replace_container(container, partition_key=PartitionKey(path="/pk"),
                               indexing_policy={"indexingMode": "none", "automatic": False})
    wait_for_rebuild(container, expected)
    dropped = index_check(server, database, container)
    assert dropped["consistent"] and dropped["stored"] == 0, dropped
    # Point reads and queries by id still work without an index.
    assert container.read_item("i0003", partition_key="p3")["n"] == 3
    by_id = list(container.query_items("SELECT VALUE c.n FROM c WHERE c.id = 'i0003'",
                                       partition_key="p3"))
    assert by_id == [3]
    database.replace_container(container, partition_key=PartitionKey(path="/pk"),
                               indexing_policy={"indexingMode": "consistent"})
    wait_for_rebuild(container, expected)
    rebuilt = index_check(server, database, container)
    assert rebuilt["consistent"] and rebuilt["stored"] == full["stored"], (rebuilt, full)


def charge_of(container) -> float:
    return float(container.client_connection.last_response_headers[CHARGE])


def test_writes_are_charged_by_the_terms_the_policy_indexes(database):
    indexed = database.create_container("indexed", partition_key=PartitionKey(path="/pk"))
    bare = database.create_container("bare", partition_key=PartitionKey(path="/pk"),
                                     indexing_policy=EXCLUDE_ALL)
    wide = {"id": "w", "pk": "p"} | {f"f{field}": field for field in range(40)}
    indexed.create_item(wide)
    indexed_create = charge_of(indexed)
    bare.create_item(wide)
    bare_create = charge_of(bare)
    # 40 more properties indexed, at 0.2 RU each.
    assert abs((indexed_create - bare_create) - 8.0) < 0.5, (indexed_create, bare_create)
    # A replace deletes and inserts: about twice a create's size part, plus the changed terms.
    bare.replace_item("w", wide | {"f0": -1})
    bare_replace = charge_of(bare)
    assert 1.6 * bare_create < bare_replace < 2.4 * bare_create, (bare_create, bare_replace)
    # A patch costs the replace it amounts to and 0.4 RU per operation.
    bare.patch_item("w", partition_key="p", patch_operations=[
        {"op": "set", "path": "/f1", "value": -1}, {"op": "set", "path": "/f2", "value": -1}])
    assert abs(charge_of(bare) - (bare_replace + 0.8)) < 0.5, (charge_of(bare), bare_replace)
