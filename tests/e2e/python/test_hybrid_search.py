"""Full-text scoring and hybrid search through the Python SDK's own hybrid pipeline:
`ORDER BY RANK FullTextScore(...)` and `ORDER BY RANK RRF(...)` on a container of one range and
one of two (the SDK runs the plan's global statistics query on every range, fills the
component queries' placeholders and fuses the ranks itself), against BM25 and reciprocal rank
fusion computed here by their plain formulas; weights, parameters, filters, TOP and
OFFSET/LIMIT, a partition key (answered by the server in one request), the refusals, and
expired items never returned.

Ties are allowed to come in any order: each check compares the scores of the rows returned
with the best scores of the reference, in order."""

import math
import random
import time

import pytest
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import CosmosHttpResponseError

from conftest import unique_id

K1 = 1.2
B = 0.75
RRF_K = 60
WORDS = ["fox", "dog", "cat", "bird", "fish", "tree", "moon", "star", "rain", "sun"]


def words(text):
    return text.lower().split()


def bm25(scope, item, terms):
    """BM25 of `item` with the statistics of every item in `scope`."""
    count = len(scope)
    average = sum(len(words(other["text"])) for other in scope) / count
    own = words(item["text"])
    score = 0.0
    for term in terms:
        containing = sum(1 for other in scope if term in words(other["text"]))
        frequency = own.count(term)
        if frequency == 0:
            continue
        rarity = math.log(1 + (count - containing + 0.5) / (containing + 0.5))
        score += rarity * frequency * (K1 + 1) / (frequency + K1 * (1 - B + B * len(own) / average))
    return score


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def dense_ranks(scores, larger_first):
    distinct = sorted(set(scores), reverse=larger_first)
    return [distinct.index(score) + 1 for score in scores]


def rrf(candidates, components, weights=None):
    """Each candidate's fused score: `components` are (scores, larger_first) over the candidates;
    a negative weight ranks its component the other way round with the weight's size."""
    weights = weights or [1] * len(components)
    fused = [0.0] * len(candidates)
    for (scores, larger_first), weight in zip(components, weights):
        for index, rank in enumerate(dense_ranks(scores, larger_first if weight >= 0 else not larger_first)):
            fused[index] += abs(weight) / (RRF_K + rank)
    return dict(zip((item["id"] for item in candidates), fused))


def assert_best(rows, reference, skip=0, take=None):
    """The rows' reference scores are the best ones, in order, after `skip`."""
    best = sorted(reference.values(), reverse=True)
    best = best[skip:] if take is None else best[skip:skip + take]
    assert [reference[row["id"]] for row in rows] == pytest.approx(best, rel=1e-9, abs=1e-12)


def make_items():
    generator = random.Random(27)
    items = []
    for n in range(40):
        text = " ".join(generator.choice(WORDS) for _ in range(generator.randint(3, 12)))
        vector = [generator.uniform(-1, 1) for _ in range(3)]
        items.append({"id": f"i{n}", "pk": f"p{n % 4}", "text": text, "v": vector})
    return items


@pytest.fixture(scope="module", params=[400, 12000], ids=["one-range", "two-ranges"])
def searchable(client, request):
    items = make_items()
    database = client.create_database(unique_id("hybrid"))
    container = database.create_container(
        unique_id("texts"), partition_key=PartitionKey(path="/pk"), offer_throughput=request.param,
        full_text_policy={"defaultLanguage": "en-US", "fullTextPaths": [{"path": "/text", "language": "en-US"}]},
        indexing_policy={"fullTextIndexes": [{"path": "/text"}]},
        vector_embedding_policy={"vectorEmbeddings": [{"path": "/v", "dataType": "float32", "dimensions": 3,
                                                       "distanceFunction": "cosine"}]})
    for item in items:
        container.create_item(item)
    assert len(list(container.read_feed_ranges())) == (1 if request.param == 400 else 2)
    yield container, items
    client.delete_database(database.id)


def search(container, text, parameters=None, **options):
    return list(container.query_items(text, parameters=parameters, enable_cross_partition_query=True, **options))


def test_full_text_score_ranks_by_bm25_over_the_whole_container(searchable):
    container, items = searchable
    reference = {item["id"]: bm25(items, item, ["fox"]) for item in items}
    rows = search(container, "SELECT TOP 7 c.id FROM c ORDER BY RANK FullTextScore(c.text, 'fox')")
    assert len(rows) == 7
    assert_best(rows, reference, take=7)
    # Several terms, as separate arguments or as one array (the older form).
    reference = {item["id"]: bm25(items, item, ["fox", "moon"]) for item in items}
    for text in ("SELECT TOP 5 c.id FROM c ORDER BY RANK FullTextScore(c.text, 'fox', 'moon')",
                 "SELECT TOP 5 c.id FROM c ORDER BY RANK FullTextScore(c.text, ['fox', 'moon'])"):
        assert_best(search(container, text), reference, take=5)


def test_a_filter_narrows_the_rows_but_not_the_statistics(searchable):
    container, items = searchable
    wanted = [item for item in items if "fox" in words(item["text"]) or "dog" in words(item["text"])]
    reference = {item["id"]: bm25(items, item, ["dog"]) for item in wanted}
    rows = search(container, "SELECT c.id, c.text FROM c WHERE FullTextContains(c.text, 'fox') OR "
                             "FullTextContains(c.text, 'dog') ORDER BY RANK FullTextScore(c.text, 'dog') "
                             "OFFSET 2 LIMIT 6")
    assert len(rows) == 6
    assert_best(rows, reference, skip=2, take=6)


def rrf_reference(items, candidates, weights=None):
    return rrf(candidates, [([bm25(items, item, ["fox"]) for item in candidates], True),
                            ([cosine(item["v"], [1, 0, 0]) for item in candidates], True)], weights)


def test_rrf_fuses_full_text_and_vector_ranks(searchable):
    container, items = searchable
    rows = search(container, "SELECT TOP 10 c.id FROM c ORDER BY RANK "
                             "RRF(FullTextScore(c.text, 'fox'), VectorDistance(c.v, [1, 0, 0]))")
    assert_best(rows, rrf_reference(items, items), take=10)


def test_rrf_with_weights_and_parameters(searchable):
    container, items = searchable
    plain = search(container, "SELECT TOP 10 c.id FROM c ORDER BY RANK "
                              "RRF(FullTextScore(c.text, 'fox'), VectorDistance(c.v, [1, 0, 0]), [1, 1])")
    assert_best(plain, rrf_reference(items, items), take=10)
    weighted = search(container, "SELECT TOP 10 c.id FROM c ORDER BY RANK "
                                 "RRF(FullTextScore(c.text, 'fox'), VectorDistance(c.v, [1, 0, 0]), [2, -0.5])")
    assert_best(weighted, rrf_reference(items, items, [2, -0.5]), take=10)
    assert [row["id"] for row in weighted] != [row["id"] for row in plain]
    bound = search(container, "SELECT c.id FROM c ORDER BY RANK "
                              "RRF(FullTextScore(c.text, @term), VectorDistance(c.v, @vector), @weights) "
                              "OFFSET 3 LIMIT 5",
                   parameters=[{"name": "@term", "value": "fox"}, {"name": "@vector", "value": [1, 0, 0]},
                               {"name": "@weights", "value": [2, -0.5]}])
    assert_best(bound, rrf_reference(items, items, [2, -0.5]), skip=3, take=5)


def test_rrf_of_two_full_text_scores_with_a_filter(searchable):
    container, items = searchable
    wanted = [item for item in items if "tree" not in words(item["text"])]
    reference = rrf(wanted, [([bm25(items, item, ["fox"]) for item in wanted], True),
                             ([bm25(items, item, ["rain"]) for item in wanted], True)])
    rows = search(container, "SELECT TOP 8 c.id FROM c WHERE NOT FullTextContains(c.text, 'tree') ORDER BY RANK "
                             "RRF(FullTextScore(c.text, 'fox'), FullTextScore(c.text, 'rain'))")
    assert_best(rows, reference, take=8)


def test_a_partition_key_ranks_within_it_in_one_request(searchable):
    container, items = searchable
    mine = [item for item in items if item["pk"] == "p1"]
    calls = []
    rows = list(container.query_items(
        "SELECT TOP 4 c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), VectorDistance(c.v, [1, 0, 0]))",
        partition_key="p1", response_hook=lambda headers, body: calls.append(1)))
    assert len(calls) == 1
    assert_best(rows, rrf_reference(mine, mine), take=4)


def test_refusals(searchable):
    container, _ = searchable
    refused = [
        ("SELECT TOP 5 c.id, FullTextScore(c.text, 'fox') AS s FROM c ORDER BY RANK FullTextScore(c.text, 'fox')",
         "The FullTextScore function is only allowed in the ORDER BY RANK clause."),
        ("SELECT TOP 5 c.id FROM c ORDER BY RANK FullTextScore(c.text, 'fox') DESC",
         "Specifying a sort order (ASC or DESC) in the ORDER BY RANK clause is not allowed."),
        ("SELECT TOP 5 c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), "
         "FullTextScore(c.text, 'dog'), [1])", "weights"),
    ]
    for text, message in refused:
        with pytest.raises(CosmosHttpResponseError) as error:
            search(container, text)
        assert error.value.status_code == 400
        assert message in error.value.message
    with pytest.raises(ValueError, match="without TOP or LIMIT"):
        search(container, "SELECT c.id FROM c ORDER BY RANK FullTextScore(c.text, 'fox')")


def test_an_expired_item_is_never_a_result(database):
    container = database.create_container(unique_id("ttl"), partition_key=PartitionKey(path="/pk"),
                                          default_ttl=-1, offer_throughput=12000)
    container.create_item({"id": "fleeting", "pk": "a", "text": "fox fox fox", "v": [1, 0], "ttl": 1})
    container.create_item({"id": "lasting", "pk": "b", "text": "a fox in the tree", "v": [0, 1]})
    container.create_item({"id": "other", "pk": "c", "text": "no such animal", "v": [-1, 0]})
    text = "SELECT TOP 3 VALUE c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), VectorDistance(c.v, [1, 0]))"
    assert search(container, text) == ["fleeting", "lasting", "other"]
    time.sleep(1.2)
    assert search(container, text) == ["lasting", "other"]
    assert search(container, "SELECT TOP 3 VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, 'fox')") == [
        "lasting", "other"]
