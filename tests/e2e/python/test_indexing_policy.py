"""The indexing policy shapes queries through the Python SDK as it does on the service
(docs/indexing.md): an ORDER BY over several keys without a composite index, and one on an
excluded path, are the service's 400 (substatus 0) whether the SDK runs its cross-partition
pipeline or one partition; a composite serves its directions and their inverse; items where the
sort value is undefined are left out under the default policy and kept under an explicit path;
an aggregate over an ORDER BY counts what the ORDER BY returns; ties come back in `_rid` order;
a filtered ORDER BY is served by a composite after its equality prefix, and a COUNT of an
indexed filter loads no document."""

from __future__ import annotations

import pytest
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import CosmosHttpResponseError

from conftest import unique_id

NO_COMPOSITE = "The order by query does not have a corresponding composite index that it can be served from."
EXCLUDED = "The index path corresponding to the specified order-by item is excluded."
# Five partition key ranges, so that a query across partitions runs the SDK's own pipeline.
FIVE_RANGES = 50000
ITEMS = [{"id": f"i{n}", "pk": f"p{n % 3}", "a": n % 2, "b": n, "secret": n} for n in range(9)]


def make(database, policy=None, throughput=FIVE_RANGES, items=ITEMS):
    container = database.create_container(unique_id("coll"), partition_key=PartitionKey(path="/pk"),
                                          offer_throughput=throughput, indexing_policy=policy)
    for item in items:
        container.create_item(item)
    return container


def refusal(action):
    with pytest.raises(CosmosHttpResponseError) as raised:
        action()
    return raised.value


def test_several_keys_without_a_composite_are_refused_across_partitions_and_in_one(database):
    container = make(database)
    text = "SELECT * FROM c ORDER BY c.a, c.b"
    across = refusal(lambda: list(container.query_items(text, enable_cross_partition_query=True)))
    assert across.status_code == 400
    assert across.sub_status == 0
    assert NO_COMPOSITE in str(across)
    one = refusal(lambda: list(container.query_items(text, partition_key="p0")))
    assert one.status_code == 400
    assert NO_COMPOSITE in str(one)
    # id and _ts need one too.
    system = refusal(lambda: list(container.query_items("SELECT * FROM c ORDER BY c.id, c._ts", partition_key="p0")))
    assert NO_COMPOSITE in str(system)


def test_a_composite_serves_its_directions_and_their_inverse(database):
    policy = {"compositeIndexes": [[{"path": "/a", "order": "ascending"}, {"path": "/b", "order": "descending"}]]}
    container = make(database, policy)
    expected = [item["b"] for item in sorted(ITEMS, key=lambda item: (item["a"], -item["b"]))]
    served = container.query_items("SELECT VALUE c.b FROM c ORDER BY c.a, c.b DESC",
                                   enable_cross_partition_query=True, max_item_count=2)
    assert list(served) == expected
    inverse = container.query_items("SELECT VALUE c.b FROM c ORDER BY c.a DESC, c.b",
                                    enable_cross_partition_query=True)
    assert list(inverse) == list(reversed(expected))
    wrong = refusal(lambda: list(container.query_items("SELECT * FROM c ORDER BY c.a, c.b",
                                                       enable_cross_partition_query=True)))
    assert NO_COMPOSITE in str(wrong)


def test_an_order_by_on_an_excluded_path_is_refused_and_a_filter_on_it_scans(database):
    policy = {"includedPaths": [{"path": "/*"}], "excludedPaths": [{"path": "/secret/?"}]}
    container = make(database, policy)
    for scope in ({"enable_cross_partition_query": True}, {"partition_key": "p1"}):
        refused = refusal(lambda: list(container.query_items("SELECT * FROM c ORDER BY c.secret", **scope)))
        assert refused.status_code == 400
        assert EXCLUDED in str(refused)
    filtered = container.query_items("SELECT VALUE c.id FROM c WHERE c.secret = 4", enable_cross_partition_query=True)
    assert list(filtered) == ["i4"]


UNEVEN = [{"id": "u1", "pk": "p"}, {"id": "u2", "pk": "p"},
          {"id": "d1", "pk": "p", "x": 2}, {"id": "d2", "pk": "p", "x": 1}]


def test_undefined_sort_values_are_left_out_by_default_and_kept_when_included(database):
    default = make(database, items=UNEVEN)
    assert list(default.query_items("SELECT VALUE c.id FROM c ORDER BY c.x", enable_cross_partition_query=True)) \
        == ["d2", "d1"]
    assert list(default.query_items("SELECT VALUE c.id FROM c ORDER BY c.x DESC", partition_key="p")) == ["d1", "d2"]
    # An aggregate over the ORDER BY counts what it returns (2 on the service, where a scan says 4).
    assert list(default.query_items("SELECT VALUE COUNT(1) FROM c ORDER BY c.x", partition_key="p")) == [2]
    explicit = make(database, {"includedPaths": [{"path": "/*"}, {"path": "/x/?"}]}, items=UNEVEN)
    ascending = explicit.query_items("SELECT VALUE c.id FROM c ORDER BY c.x", partition_key="p", max_item_count=1)
    assert list(ascending) == ["u1", "u2", "d2", "d1"]
    descending = explicit.query_items("SELECT VALUE c.id FROM c ORDER BY c.x DESC", partition_key="p")
    assert list(descending) == ["d1", "d2", "u2", "u1"]


def test_ties_come_back_in_rid_order_in_the_first_key_direction(database):
    # Created c, a, b: `_rid` order c, a, b while the ids sort a, b, c.
    tied = [{"id": name, "pk": "p", "x": 1} for name in ("c", "a", "b")]
    container = make(database, throughput=400, items=tied)
    for size in (1, 2, 10):
        ascending = container.query_items("SELECT VALUE c.id FROM c ORDER BY c.x", partition_key="p",
                                          max_item_count=size)
        assert [row for page in ascending.by_page() for row in page] == ["c", "a", "b"], size
        descending = container.query_items("SELECT VALUE c.id FROM c ORDER BY c.x DESC", partition_key="p",
                                           max_item_count=size)
        assert [row for page in descending.by_page() for row in page] == ["b", "a", "c"], size


def test_a_policy_is_checked_when_a_container_is_created(database):
    refused = refusal(lambda: database.create_container(
        unique_id("coll"), partition_key=PartitionKey(path="/pk"),
        indexing_policy={"includedPaths": [{"path": "/expiration"}]}))
    assert refused.status_code == 400
    assert "The indexing path '/expiration' could not be accepted, failed near position '11'." in str(refused)
    missing_root = refusal(lambda: database.create_container(
        unique_id("coll"), partition_key=PartitionKey(path="/pk"),
        indexing_policy={"includedPaths": [{"path": "/name/?"}]}))
    assert "The special mandatory indexing path" in str(missing_root)
    # The Python SDK's own tests create the legacy root `/` and query it with ORDER BY.
    legacy = make(database, {"includedPaths": [{"path": "/", "indexes": [{"kind": "Range", "dataType": "Number"}]}]},
                  throughput=400)
    assert list(legacy.query_items("SELECT VALUE c.b FROM c ORDER BY c.b", partition_key="p0")) == [0, 3, 6]


FILTERED = [{"id": f"f{n}", "pk": f"p{n % 2}", "cat": f"k{n % 3}", "v": (n * 7) % 11} for n in range(24)]
FILTERED += [{"id": "nov", "pk": "p0", "cat": "k0"}]
METRICS = "x-ms-documentdb-query-metrics"


def test_a_filtered_order_by_is_served_by_a_composite_after_its_equality_prefix(database):
    policy = {"compositeIndexes": [[{"path": "/cat"}, {"path": "/v", "order": "descending"}]]}
    container = make(database, policy, items=FILTERED)
    chosen = [item for item in FILTERED if item["cat"] == "k0" and "v" in item]

    def expected(items, descending):
        # Ties come back in _rid (creation) order in the first key's direction.
        ranked = sorted(enumerate(items), key=lambda pair: (pair[1]["v"], pair[0]), reverse=descending)
        return [item["id"] for _, item in ranked]

    parameters = [{"name": "@cat", "value": "k0"}]
    # One key after the equality: the item without `v` is left out under the default policy.
    for text, descending in (("SELECT VALUE c.id FROM c WHERE c.cat = @cat ORDER BY c.v", False),
                             ("SELECT VALUE c.id FROM c WHERE c.cat = @cat ORDER BY c.v DESC", True)):
        in_p0 = container.query_items(text, parameters=parameters, partition_key="p0", max_item_count=2)
        assert list(in_p0) == expected([item for item in chosen if item["pk"] == "p0"], descending)
        across = container.query_items(text, parameters=parameters, enable_cross_partition_query=True,
                                       max_item_count=3)
        assert list(across) == expected(chosen, descending)
    # The equality path and the next, as the service documents a composite serving a filter.
    both = container.query_items("SELECT VALUE c.id FROM c WHERE c.cat = @cat ORDER BY c.cat, c.v DESC",
                                 parameters=parameters, enable_cross_partition_query=True, max_item_count=2)
    # A composite ORDER BY keeps the item without `v` (undefined, last in descending order); ties
    # would follow `cat`, ascending.
    ranked = sorted(enumerate(chosen), key=lambda pair: (-pair[1]["v"], pair[0]))
    assert list(both) == [item["id"] for _, item in ranked] + ["nov"]


def test_a_count_of_an_indexed_filter_is_answered_from_the_index(database):
    container = make(database, items=FILTERED)
    text = "SELECT VALUE COUNT(1) FROM c WHERE c.cat = 'k1'"
    in_p1 = list(container.query_items(text, partition_key="p1", populate_query_metrics=True))
    assert in_p1 == [sum(1 for item in FILTERED if item["cat"] == "k1" and item["pk"] == "p1")]
    metrics = container.client_connection.last_response_headers[METRICS]
    assert "retrievedDocumentCount=0;" in metrics
    across = list(container.query_items(text, enable_cross_partition_query=True))
    assert across == [sum(1 for item in FILTERED if item["cat"] == "k1")]
    highest = list(container.query_items("SELECT VALUE MAX(c.v) FROM c WHERE c.cat = 'k2'",
                                         enable_cross_partition_query=True))
    assert highest == [max(item["v"] for item in FILTERED if item["cat"] == "k2")]
    # A filter the index cannot serve exactly loads the documents.
    scanned = list(container.query_items("SELECT VALUE COUNT(1) FROM c WHERE LOWER(c.cat) = 'k1'",
                                         partition_key="p1", populate_query_metrics=True))
    assert scanned == in_p1
    metrics = container.client_connection.last_response_headers[METRICS]
    assert "retrievedDocumentCount=0;" not in metrics
