"""The full-text index through the Python SDK: FullTextContains, FullTextContainsAll and
FullTextContainsAny with literal and parameter terms answer alike on a container whose
fullTextIndexes serve them and on one without them, in English and French paths; the index
metrics name the full-text index where it serves the filter."""

import base64
import json
import random

from azure.cosmos import PartitionKey

from conftest import unique_id

FULL_TEXT_POLICY = {"defaultLanguage": "en-US", "fullTextPaths": [
    {"path": "/text", "language": "en-US"}, {"path": "/fr", "language": "fr-FR"}]}
ENGLISH = ["the", "running", "runs", "runner", "shoes", "shoe", "helmet", "helmets", "red", "blue",
           "mountain", "mountains", "bike", "biking", "trail", "trails"]
FRENCH = ["chanter", "chantons", "chanson", "chansons", "maison", "maisons", "rouge", "rouges",
          "vélo", "vélos", "montagne", "montagnes"]


def _index_report(container):
    """The index utilization report of the container's last query: the SDK decodes the
    header (base64 JSON) into a dict; a string is decoded here."""
    raw = container.client_connection.last_response_headers["x-ms-cosmos-index-utilization"]
    if isinstance(raw, dict):
        return raw
    return json.loads(base64.b64decode(raw).decode("utf-8"))


def _text(rng, words):
    """Two to seven words, the first of the list likelier, case and punctuation varied."""
    out = []
    for _ in range(rng.randint(2, 7)):
        word = words[min(rng.randrange(len(words)), rng.randrange(len(words)))]
        out.append(rng.choice([word, word.upper(), word + ","]))
    return " ".join(out)


def _documents(count):
    """From a fixed seed so that a failure replays; one document alone holds "zebra", and
    some hold a number where a text is looked for."""
    rng = random.Random(27)
    documents = []
    for n in range(count):
        document = {"id": f"t{n}", "pk": f"p{n % 7}", "text": _text(rng, ENGLISH), "fr": _text(rng, FRENCH)}
        if n % 17 == 3:
            document["text"] = 3
        if n == 5:
            document["text"] = "A zebra on the TRAIL"
        documents.append(document)
    return documents


def _queries():
    rng = random.Random(28)
    queries = [("SELECT VALUE c.id FROM c WHERE FullTextContains(c.text, 'Zebras')", [])]
    for _ in range(40):
        path, words = rng.choice([("text", ENGLISH), ("fr", FRENCH)])
        terms = [rng.choice(words + ["zebras", "..."]) for _ in range(3)]
        parameters = [{"name": f"@t{i}", "value": term} for i, term in enumerate(terms)]
        queries.append((f"SELECT VALUE c.id FROM c WHERE FullTextContains(c.{path}, @t0)", parameters))
        queries.append((f"SELECT VALUE c.id FROM c WHERE FullTextContainsAll(c.{path}, @t0, @t1)", parameters))
        queries.append((f"SELECT VALUE c.id FROM c WHERE FullTextContainsAny(c.{path}, @t0, @t1, @t2)",
                        parameters))
        queries.append((f"SELECT VALUE c.id FROM c WHERE FullTextContains(c.{path}, '{terms[0]}') "
                        "OR c.pk = 'p1'", []))
    return queries


def test_a_full_text_index_answers_as_a_container_without_one(database):
    indexed = database.create_container(
        unique_id("text-indexed"), partition_key=PartitionKey(path="/pk"), offer_throughput=12000,
        full_text_policy=FULL_TEXT_POLICY,
        indexing_policy={"fullTextIndexes": [{"path": "/text"}, {"path": "/fr"}]})
    plain = database.create_container(
        unique_id("text-plain"), partition_key=PartitionKey(path="/pk"), offer_throughput=12000,
        full_text_policy=FULL_TEXT_POLICY)
    for document in _documents(150):
        indexed.create_item(document)
        plain.create_item(document)
    found = 0
    queries = _queries()
    for text, parameters in queries:
        with_index = sorted(indexed.query_items(text, parameters=parameters, enable_cross_partition_query=True))
        without = sorted(plain.query_items(text, parameters=parameters, enable_cross_partition_query=True))
        assert with_index == without, (text, parameters)
        found += len(with_index)
    # The comparison ran on real answers, not on empty ones.
    assert found > 10 * len(queries)

    zebra = "SELECT VALUE c.id FROM c WHERE FullTextContains(c.text, 'Zebras')"
    assert list(indexed.query_items(zebra, partition_key="p5", populate_index_metrics=True)) == ["t5"]
    specs = [entry["IndexSpec"] for entry in _index_report(indexed)["UtilizedSingleIndexes"]]
    assert specs == ["/text"]
    assert list(plain.query_items(zebra, partition_key="p5", populate_index_metrics=True)) == ["t5"]
    specs = [entry["IndexSpec"] for entry in _index_report(plain)["UtilizedSingleIndexes"]]
    assert "/text" not in specs


def test_adding_a_full_text_index_to_a_container_keeps_its_answers(database):
    """A replace that adds the full-text indexes rebuilds the index in the background; the
    answers after the replace (the rebuild done or still running) are those before it."""
    container = database.create_container(
        unique_id("text-added"), partition_key=PartitionKey(path="/pk"), offer_throughput=12000,
        full_text_policy=FULL_TEXT_POLICY)
    for document in _documents(60):
        container.create_item(document)
    queries = _queries()[:20]

    def answers():
        return [sorted(container.query_items(text, parameters=parameters, enable_cross_partition_query=True))
                for text, parameters in queries]

    before = answers()
    database.replace_container(container, partition_key=PartitionKey(path="/pk"),
                               full_text_policy=FULL_TEXT_POLICY,
                               indexing_policy={"fullTextIndexes": [{"path": "/text"}, {"path": "/fr"}]})
    assert answers() == before
    assert sum(len(ids) for ids in before) > len(queries)
