"""The query crate's golden cases (crates/lethedb-query/tests/golden) run through the Python SDK's
own query pipeline, on containers with one and with five partition key ranges, at several page
sizes.

Each case must give its expected rows (in order when the query orders them, as a multiset
otherwise: the service does not order rows of different ranges), or its expected error; or be
refused the way the service's query plan refuses a query that needs a feature this SDK does not
declare (the Python SDK does not run GROUP BY, DISTINCT VALUE aggregates and the like across
partitions). Cases that read the clock are left to the Rust suite, whose clock is fixed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import CosmosHttpResponseError

from conftest import unique_id

GOLDEN = Path(__file__).resolve().parents[3] / "crates" / "lethedb-query" / "tests" / "golden"
PAGE_SIZES = (1, 3, 100)
LAYOUTS = {"one-range": 400, "five-ranges": 50000}
# What the service's plan names when it refuses a query this SDK cannot run across partitions:
# every feature the Python SDK leaves out of x-ms-cosmos-supported-query-features.
UNDECLARED_FEATURES = {"NonValueAggregate", "GroupBy", "DCount", "MultipleAggregates", "ListAndSetAggregate"}
REFUSAL = "Query contains 1 or more unsupported features"
# What the SDK answers, before sending anything, to ORDER BY VectorDistance without TOP or LIMIT.
VECTOR_WITHOUT_LIMIT = "Executing a vector search query without TOP or LIMIT"
# The service's plan also refuses an aggregate inside a larger expression across partitions.
COMPOSITION = "Compositions of aggregates and other expressions are not allowed."
# The indexing policy of each dataset's containers, so that the cases run as the query crate's
# runner runs them, without an index: every ORDER BY path is included explicitly, which keeps the
# items where it is undefined, and each ORDER BY over several paths has its composite index
# (without them the service, and LetheDB, leave those items out or refuse: docs/indexing.md).
POLICIES = {
    "people": {
        "includedPaths": [{"path": "/*"}] + [{"path": f"/{path}/?"} for path in ("name", "age", "city", "pk", "address/zip")],
        "compositeIndexes": [
            [{"path": "/city", "order": "ascending"}, {"path": "/name", "order": "descending"}],
            [{"path": "/active", "order": "ascending"}, {"path": "/id", "order": "ascending"}],
        ],
    },
    "mixed": {"includedPaths": [{"path": "/*"}, {"path": "/v/?"}]},
    "families": {"includedPaths": [{"path": "/*"}, {"path": "/address/state/?"}]},
}


def pipeline_gives(case, layout, rows, expected):
    """Answers the SDK's own pipeline gives, as it does against the service, where a whole-query
    answer would differ; each is the SDK's behaviour, not the server's:
    - a VALUE aggregate with nothing to aggregate is `[None]` (the aggregator's empty result);
    - across several ranges, an undefined partial (SUM over a string) is skipped, not poisoning;
    - TOP or OFFSET/LIMIT without ORDER BY take rows in range order, not scan order;
    - the merge of DISTINCT VALUE streams drops a null at a range's head (its peek keeps `None`)."""
    query = case["query"].upper()
    if expected == [] and rows == [None] and "SELECT VALUE" in query:
        return True
    several = layout != "one-range"
    if several and expected == [] and len(rows) == 1 and re.search(r"VALUE (SUM|AVG)\(", query):
        return True
    if re.search(r"\b(TOP|OFFSET)\b", query) and "ORDER BY" not in query:
        return len(rows) == len(expected)
    if "DISTINCT" in query and "ORDER BY" not in query and None in expected:
        # The SDK's document producer takes a `null` it peeked for "nothing peeked": it skips
        # that value, and when a range holds only `null` its stream ends the whole query early.
        wanted = canonical(expected)
        return all(row in wanted for row in canonical(rows))
    return False


def outside_parentheses(text):
    """The query without what its parentheses hold (subqueries, calls), so that an ORDER BY in
    a subquery does not make the whole query's rows ordered."""
    while True:
        inner = re.sub(r"\([^()]*\)", "", text)
        if inner == text:
            return text
        text = inner


def parse_cases():
    cases = []
    for path in sorted(GOLDEN.glob("*.cases")):
        dataset = None
        current = None
        key = None
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            match = re.match(r"^(dataset|query|params|expect|unordered|error):\s?(.*)$", line)
            if match:
                key, value = match.group(1), match.group(2)
                if key == "dataset":
                    dataset = value.strip()
                    continue
                if key == "query":
                    current = {"location": f"{path.name}:{number}", "dataset": dataset}
                    cases.append(current)
                current[key] = value
            elif current is not None and key is not None:
                current[key] += "\n" + line
    return [case for case in cases if "GetCurrent" not in case["query"]]


CASES = parse_cases()


@pytest.fixture(scope="module")
def containers(client):
    """Every dataset loaded into a container per layout, partitioned on /id, with its policy."""
    database = client.create_database(unique_id("golden"))
    loaded = {}
    datasets = {path.stem: json.loads(path.read_text()) for path in (GOLDEN / "datasets").glob("*.json")}
    datasets["empty"] = []  # queries without FROM
    for name, documents in sorted(datasets.items()):
        for layout, throughput in LAYOUTS.items():
            container = database.create_container(unique_id(name), PartitionKey(path="/id"), offer_throughput=throughput,
                                                  indexing_policy=POLICIES.get(name))
            for document in documents:
                container.create_item(document)
            loaded[(name, layout)] = container
    yield loaded
    client.delete_database(database.id)


def canonical(rows):
    return sorted(json.dumps(strip_system(row), sort_keys=True) for row in rows)



SYSTEM_PROPERTIES = {"_rid", "_self", "_etag", "_attachments", "_ts"}


def strip_system(value):
    """The value without the system properties the server adds to stored documents (at any
    depth: `SELECT c AS doc` nests them); the datasets have none of their own."""
    if isinstance(value, dict):
        return {k: strip_system(v) for k, v in value.items() if k not in SYSTEM_PROPERTIES}
    if isinstance(value, list):
        return [strip_system(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # Numbers compare by value to 10 significant digits, as the Rust golden runner does.
        return f"{float(value):.9e}"
    return value


def run(container, case, page_size):
    parameters = [{"name": k, "value": v} for k, v in json.loads(case.get("params") or "{}").items()]
    pages = container.query_items(
        query=case["query"], parameters=parameters, enable_cross_partition_query=True, max_item_count=page_size
    ).by_page()
    rows = []
    for page in pages:
        page = list(page)
        assert len(page) <= page_size, f"a page of {len(page)} rows for max_item_count {page_size}"
        rows += page
    return rows


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", CASES, ids=[case["location"] for case in CASES])
def test_golden_case_through_the_sdk(containers, case, layout):
    container = containers[(case["dataset"], layout)]
    ordered = re.search(r"\bORDER\s+BY\b", outside_parentheses(case["query"]), re.IGNORECASE) is not None
    for page_size in PAGE_SIZES:
        try:
            rows = run(container, case, page_size)
        except ValueError as error:
            if VECTOR_WITHOUT_LIMIT in str(error):
                # The SDK refuses a vector search without TOP or LIMIT itself, whatever the server.
                assert "TOP" not in case["query"] and "LIMIT" not in case["query"], error
                return
            # The SDK's ORDER BY merge compares only values of one type across ranges.
            assert layout != "one-range" and "Expected" in str(error), error
            return
        except CosmosHttpResponseError as error:
            message = str(error)
            if COMPOSITION in message:
                return
            if REFUSAL in message:
                named = set(re.findall(r"[A-Z][A-Za-z]+", message.split("Query contained", 1)[-1]))
                assert named & UNDECLARED_FEATURES, message
                return
            assert "error" in case, f"{case['location']} failed: {message}"
            assert error.status_code == 400, message
            assert case["error"].strip() in message, message
            continue
        assert "error" not in case, f"{case['location']} should fail with {case['error']!r}, gave {rows}"
        if "expect" in case or "unordered" in case:
            expected = json.loads(case.get("expect") or case["unordered"])
            if pipeline_gives(case, layout, rows, expected):
                continue
        if "expect" in case:
            expected = json.loads(case["expect"])
            if ordered:
                assert strip_system(rows) == strip_system(expected), (page_size, rows)
            else:
                assert canonical(rows) == canonical(expected), (page_size, rows)
        else:
            assert canonical(rows) == canonical(json.loads(case["unordered"])), (page_size, rows)
