"""Executing server-side JavaScript through the Python SDK (azure-cosmos 4.17.1): stored procedures
(bulk import with the continuation pattern, including an import cut short near the time budget and
resumed; bulk delete by query; a counter guarded by `_etag`; logging; errors with a number and
`abort`; a loop without end; an allocation without end; a write to another partition; response
bodies and arguments; the `__` API), pre- and post-triggers on item writes, and UDFs in SELECT,
WHERE and ORDER BY.

Statuses as the service gives them (research C.2-C.6): 200 with the body's JSON; a throw or
`abort` is 400 with the Error's number as substatus; the time budget is 408; a missing procedure
is 404; a write to another partition key is 400. ORDER BY over a UDF is a LetheDB extension (the
service refuses any ORDER BY item that is not a document path) and is tested as such."""

from __future__ import annotations

import time
import urllib.parse

import pytest
from azure.cosmos import exceptions
from azure.cosmos.documents import TriggerOperation, TriggerType

BULK_IMPORT = """function bulkImport(docs) {
    var collection = getContext().getCollection();
    var count = 0;
    if (!docs || docs.length === 0) { getContext().getResponse().setBody(0); return; }
    tryCreate(docs[count], callback);
    function tryCreate(doc, cb) {
        var accepted = collection.createDocument(collection.getSelfLink(), doc, cb);
        if (!accepted) getContext().getResponse().setBody(count);
    }
    function callback(err) {
        if (err) throw err;
        count++;
        if (count >= docs.length) getContext().getResponse().setBody(count);
        else tryCreate(docs[count], callback);
    }
}"""

BULK_DELETE = """function bulkDelete(query) {
    var collection = getContext().getCollection();
    var response = getContext().getResponse();
    var body = { deleted: 0, continuation: true };
    tryQueryAndDelete();
    function tryQueryAndDelete(continuation) {
        var accepted = collection.queryDocuments(collection.getSelfLink(), query, { continuation: continuation },
            function (err, docs, options) {
                if (err) throw err;
                if (docs.length > 0) tryDelete(docs);
                else if (options.continuation) tryQueryAndDelete(options.continuation);
                else { body.continuation = false; response.setBody(body); }
            });
        if (!accepted) response.setBody(body);
    }
    function tryDelete(docs) {
        if (docs.length > 0) {
            var accepted = collection.deleteDocument(docs[0]._self, {}, function (err) {
                if (err) throw err;
                body.deleted++;
                docs.shift();
                tryDelete(docs);
            });
            if (!accepted) response.setBody(body);
        } else {
            tryQueryAndDelete();
        }
    }
}"""

# BULK_IMPORT with a cost per document, so that the time budget runs out part way: once
# createDocument returns false the script reports its progress and the client calls again.
SLOW_IMPORT = """function slowImport(docs, costMs) {
    var collection = getContext().getCollection();
    var count = 0;
    tryCreate();
    function tryCreate() {
        if (count >= docs.length) { getContext().getResponse().setBody(count); return; }
        var accepted = collection.createDocument(collection.getSelfLink(), docs[count], function (err) {
            if (err) throw err;
            var until = Date.now() + costMs;
            while (Date.now() < until) {}
            count++;
            tryCreate();
        });
        if (!accepted) getContext().getResponse().setBody(count);
    }
}"""

INCREMENT = """function increment(id) {
    var collection = getContext().getCollection();
    collection.readDocument(collection.getAltLink() + '/docs/' + id, {}, function (err, doc) {
        if (err) throw err;
        doc.count = (doc.count || 0) + 1;
        collection.replaceDocument(doc._self, doc, { etag: doc._etag }, function (err, saved) {
            if (err) throw err;
            getContext().getResponse().setBody(saved.count);
        });
    });
}"""


def ids_in(container, pk):
    return sorted(i["id"] for i in container.query_items("SELECT c.id FROM c", partition_key=pk))


def execute(container, sproc, pk, params=None, **kwargs):
    return container.scripts.execute_stored_procedure(sproc=sproc, partition_key=pk, params=params, **kwargs)


def last_headers(container):
    return container.scripts.client_connection.last_response_headers


def test_a_bulk_import_returns_its_progress_and_is_called_again_for_the_rest(container):
    container.scripts.create_stored_procedure({"id": "bulkImport", "body": BULK_IMPORT})
    docs = [{"id": f"d{i:04d}", "pk": "p", "n": i} for i in range(2000)]
    remaining = docs
    calls = 0
    while remaining:
        done = execute(container, "bulkImport", "p", [remaining])
        assert done > 0
        remaining = remaining[done:]
        calls += 1
    assert calls >= 1
    assert ids_in(container, "p") == [d["id"] for d in docs]
    assert list(container.query_items("SELECT VALUE COUNT(1) FROM c", partition_key="p")) == [2000]
    assert sorted(container.query_items("SELECT VALUE c.n FROM c WHERE c.n >= 1995",
                                        enable_cross_partition_query=True)) == [1995, 1996, 1997, 1998, 1999]
    stored = container.read_item("d1234", partition_key="p")
    assert stored["n"] == 1234 and stored["_etag"] and stored["_ts"]


def test_an_import_cut_short_by_the_time_budget_returns_its_progress_and_resumes(container):
    """createDocument returns false near the 5 s budget; what was done before commits (200, not
    408), and the next call does the rest."""
    container.scripts.create_stored_procedure({"id": "slowImport", "body": SLOW_IMPORT})
    docs = [{"id": f"s{i:04d}", "pk": "p"} for i in range(1000)]
    remaining = docs
    progress = []
    while remaining:
        started = time.monotonic()
        done = execute(container, "slowImport", "p", [remaining, 5])
        assert time.monotonic() - started < 5.5
        assert 0 < done <= len(remaining)
        progress.append(done)
        remaining = remaining[done:]
    assert len(progress) >= 2 and progress[0] < len(docs), progress
    assert ids_in(container, "p") == [d["id"] for d in docs]


def test_a_bulk_delete_by_query_deletes_every_match(container):
    for i in range(150):
        container.create_item({"id": f"x{i}", "pk": "p", "kind": "old" if i % 3 else "keep"})
    container.scripts.create_stored_procedure({"id": "bulkDelete", "body": BULK_DELETE})
    deleted = 0
    while True:
        result = execute(container, "bulkDelete", "p", ["SELECT * FROM c WHERE c.kind = 'old'"])
        assert set(result) == {"deleted", "continuation"}
        deleted += result["deleted"]
        if not result["continuation"]:
            break
    assert deleted == 100
    remaining = list(container.query_items("SELECT VALUE c.kind FROM c", partition_key="p"))
    assert remaining == ["keep"] * 50


def test_a_counter_incremented_ten_times_counts_ten(container):
    container.create_item({"id": "counter", "pk": "p", "count": 0})
    container.scripts.create_stored_procedure({"id": "increment", "body": INCREMENT})
    for expected in range(1, 11):
        assert execute(container, "increment", "p", ["counter"]) == expected
    assert container.read_item("counter", partition_key="p")["count"] == 10
    # The etag option is honoured: a replace with an outdated one gets 412 in its callback.
    stale = """function (id, etag) {
        var c = getContext().getCollection();
        c.readDocument(c.getAltLink() + '/docs/' + id, {}, function (err, doc) {
            if (err) throw err;
            doc.count = -1;
            c.replaceDocument(doc._self, doc, { etag: etag }, function (err) {
                getContext().getResponse().setBody(err ? err.number : 'replaced');
            });
        });
    }"""
    container.scripts.create_stored_procedure({"id": "stale", "body": stale})
    first_etag = container.create_item({"id": "other", "pk": "p", "count": 0})["_etag"]
    container.upsert_item({"id": "other", "pk": "p", "count": 1})
    assert execute(container, "stale", "p", ["other", first_etag]) == 412
    assert container.read_item("other", partition_key="p")["count"] == 1


def test_console_log_comes_back_url_encoded_only_when_asked(container):
    body = "function () { console.log('The value of %s is %s.', 'x', 1); getContext().getResponse().setBody('ok'); }"
    container.scripts.create_stored_procedure({"id": "logs", "body": body})
    assert execute(container, "logs", "p", enable_script_logging=True) == "ok"
    log = last_headers(container)["x-ms-documentdb-script-log-results"]
    assert log == urllib.parse.quote("The value of x is 1.")
    assert execute(container, "logs", "p") == "ok"
    assert "x-ms-documentdb-script-log-results" not in last_headers(container)
    assert execute(container, "logs", "p", enable_script_logging=False) == "ok"
    assert "x-ms-documentdb-script-log-results" not in last_headers(container)


def test_console_log_follows_the_wrapper_sprintf(container):
    """The service's console.log formats with the wrapper's sprintf, which replaces `%s` with the
    next argument and `%%` with `%` (regex /%((%)|s)/g)."""
    body = "function () { console.log('100%% of %s', 'x'); }"
    container.scripts.create_stored_procedure({"id": "percent", "body": body})
    assert execute(container, "percent", "p", enable_script_logging=True) == ""
    assert last_headers(container)["x-ms-documentdb-script-log-results"] == urllib.parse.quote("100% of x")


def test_the_delete_callback_gets_the_response_options_second(container):
    """The wrapper's deleteDocument calls back `callback(undefined, response.options)`: a delete has
    no resource, so the options come second (the bulk-delete samples name it responseOptions)."""
    container.create_item({"id": "d", "pk": "p"})
    body = """function () {
        var c = getContext().getCollection();
        c.deleteDocument(c.getAltLink() + '/docs/d', {}, function (err, responseOptions) {
            if (err) throw err;
            getContext().getResponse().setBody(responseOptions !== null && typeof responseOptions === 'object');
        });
    }"""
    container.scripts.create_stored_procedure({"id": "remove", "body": body})
    assert execute(container, "remove", "p") is True
    assert ids_in(container, "p") == []


def test_an_error_with_a_number_is_a_400_with_that_substatus_and_rolls_back(container):
    body = """function () {
        var c = getContext().getCollection();
        c.createDocument(c.getSelfLink(), {id: 'before', pk: 'p'}, function (err) {
            if (err) throw err;
            throw new Error(409, 'custom');
        });
    }"""
    container.scripts.create_stored_procedure({"id": "throws", "body": body})
    with pytest.raises(exceptions.CosmosHttpResponseError) as raised:
        execute(container, "throws", "p")
    assert raised.value.status_code == 400
    assert raised.value.sub_status == 409
    assert "custom" in str(raised.value)
    assert ids_in(container, "p") == []
    with pytest.raises(exceptions.CosmosResourceNotFoundError):
        container.read_item("before", partition_key="p")


def test_abort_and_a_plain_throw_are_400_and_roll_back(container):
    aborts = """function () {
        var c = getContext().getCollection();
        c.createDocument(c.getSelfLink(), {id: 'before', pk: 'p'}, function (err) {
            if (err) throw err;
            getContext().abort(new Error(412, 'stopped'));
        });
    }"""
    plain = """function () {
        var c = getContext().getCollection();
        c.createDocument(c.getSelfLink(), {id: 'before', pk: 'p'}, function (err) {
            if (err) throw err;
            throw new Error('plain');
        });
    }"""
    container.scripts.create_stored_procedure({"id": "aborts", "body": aborts})
    container.scripts.create_stored_procedure({"id": "plain", "body": plain})
    with pytest.raises(exceptions.CosmosHttpResponseError) as raised:
        execute(container, "aborts", "p")
    assert raised.value.status_code == 400
    assert raised.value.sub_status == 412
    assert "stopped" in str(raised.value)
    with pytest.raises(exceptions.CosmosHttpResponseError) as raised:
        execute(container, "plain", "p")
    assert raised.value.status_code == 400
    assert not raised.value.sub_status
    assert "Encountered exception while executing function" in str(raised.value)
    assert "plain" in str(raised.value)
    assert ids_in(container, "p") == []


def test_a_loop_without_end_is_a_408_and_the_server_keeps_serving(container):
    body = """function () {
        var c = getContext().getCollection();
        c.createDocument(c.getSelfLink(), {id: 'before', pk: 'p'}, function () { while (true) {} });
    }"""
    container.scripts.create_stored_procedure({"id": "spin", "body": body})
    container.scripts.create_stored_procedure({"id": "quick", "body": "function () { getContext().getResponse().setBody(1); }"})
    started = time.monotonic()
    with pytest.raises(exceptions.CosmosHttpResponseError) as raised:
        execute(container, "spin", "p")
    assert raised.value.status_code == 408
    assert time.monotonic() - started < 30
    assert ids_in(container, "p") == []
    started = time.monotonic()
    assert execute(container, "quick", "p") == 1
    assert time.monotonic() - started < 2


def test_allocating_without_end_is_a_clear_error_and_the_server_keeps_serving(container):
    body = "function () { var hog = []; while (true) hog.push('x'.repeat(4096) + hog.length); }"
    container.scripts.create_stored_procedure({"id": "hog", "body": body})
    container.scripts.create_stored_procedure({"id": "quick", "body": "function () { getContext().getResponse().setBody(1); }"})
    started = time.monotonic()
    with pytest.raises(exceptions.CosmosHttpResponseError) as raised:
        execute(container, "hog", "p")
    assert time.monotonic() - started < 30
    assert 400 <= raised.value.status_code < 500 and raised.value.status_code != 408
    assert "memory" in str(raised.value)
    assert execute(container, "quick", "p") == 1
    container.create_item({"id": "after", "pk": "p"})
    assert ids_in(container, "p") == ["after"]


def test_a_write_to_another_partition_key_is_refused_and_nothing_is_written(container):
    body = """function () {
        var c = getContext().getCollection();
        c.createDocument(c.getSelfLink(), {id: 'mine', pk: 'p'}, function (err) {
            if (err) throw err;
            c.createDocument(c.getSelfLink(), {id: 'theirs', pk: 'q'}, function () {});
        });
    }"""
    container.scripts.create_stored_procedure({"id": "elsewhere", "body": body})
    with pytest.raises(exceptions.CosmosHttpResponseError) as raised:
        execute(container, "elsewhere", "p")
    assert raised.value.status_code == 400
    assert ids_in(container, "p") == [] and ids_in(container, "q") == []


def test_a_script_sees_only_its_partition_and_needs_a_partition_key(container):
    container.create_item({"id": "theirs", "pk": "q"})
    body = """function () {
        var c = getContext().getCollection();
        c.readDocument(c.getAltLink() + '/docs/theirs', {}, function (err) {
            getContext().getResponse().setBody(err ? err.number : 'visible');
        });
    }"""
    container.scripts.create_stored_procedure({"id": "peek", "body": body})
    assert execute(container, "peek", "p") == 404
    assert execute(container, "peek", "q") == "visible"
    # Without a partition key (partition_key=None sends no header) a partitioned container refuses.
    with pytest.raises(exceptions.CosmosHttpResponseError) as raised:
        execute(container, "peek", None)
    assert raised.value.status_code == 400


def test_a_link_outside_the_collection_throws_at_the_call(container):
    """The service's wrapper (DocDbWrapperScript.js, validateCollectionLink) throws
    Error(400, 'Function is not allowed to operate on resources outside current collection...')
    from the call itself; the operation is never queued and its callback never runs."""
    body = """function () {
        var c = getContext().getCollection();
        var outcome = ['returned'];
        try {
            c.createDocument('dbs/elsewhere/colls/other', {id: 'x', pk: 'p'}, function (err) {
                outcome.push('callback');
            });
        } catch (err) {
            outcome = ['threw', err.number, err.message];
        }
        getContext().getResponse().setBody(outcome);
    }"""
    container.scripts.create_stored_procedure({"id": "outside", "body": body})
    outcome = execute(container, "outside", "p")
    assert outcome[:2] == ["threw", 400], outcome
    assert "outside current collection" in outcome[2]
    assert ids_in(container, "p") == []


def test_response_bodies_arguments_and_a_missing_procedure(container):
    scripts = container.scripts
    scripts.create_stored_procedure({"id": "set", "body": "function () { getContext().getResponse().setBody(999); }"})
    scripts.create_stored_procedure({
        "id": "append",
        "body": "function () { for (var i = 0; i < 10; i++) getContext().getResponse().appendValue('Body', i); }",
    })
    scripts.create_stored_procedure({"id": "nothing", "body": "function () {}"})
    scripts.create_stored_procedure({
        "id": "args",
        "body": "function (a, b) { getContext().getResponse().setBody([a, b.x, arguments.length]); }",
    })
    assert execute(container, "set", "p") == 999
    assert execute(container, "append", "p") == "0123456789"
    assert execute(container, "nothing", "p") == ""
    assert execute(container, "args", "p", [1, {"x": 2}]) == [1, 2, 2]
    # A dict is not a list: the SDK wraps it as the one argument.
    scripts.create_stored_procedure({
        "id": "prefix", "body": "function (input) { getContext().getResponse().setBody('a' + input.temp); }",
    })
    assert execute(container, "prefix", "p", {"temp": "so"}) == "aso"
    with pytest.raises(exceptions.CosmosResourceNotFoundError):
        execute(container, "missing", "p")


def test_the_chain_api_filters_and_maps_the_partition(container):
    for i in range(10):
        container.create_item({"id": f"c{i}", "pk": "p", "n": i})
    container.create_item({"id": "other", "pk": "q", "n": 100})
    body = """function () {
        __.chain().filter(function (d) { return d.n % 2 === 0; }).map(function (d) { return d.n * 10; })
            .value(function (err, values) {
                if (err) throw err;
                __.filter(function (d) { return d.n > 7; }, function (err, big) {
                    if (err) throw err;
                    getContext().getResponse().setBody({even: values, big: big.map(function (d) { return d.id; })});
                });
            });
    }"""
    container.scripts.create_stored_procedure({"id": "chain", "body": body})
    assert execute(container, "chain", "p") == {"even": [0, 20, 40, 60, 80], "big": ["c8", "c9"]}


def test_a_pre_trigger_stamps_and_a_post_trigger_that_throws_rolls_the_write_back(container):
    scripts = container.scripts
    scripts.create_trigger({
        "id": "stamp",
        "body": "function () { var r = getContext().getRequest(); var d = r.getBody(); d.stamped = r.getOperationType(); r.setBody(d); }",
        "triggerType": TriggerType.Pre,
        "triggerOperation": TriggerOperation.All,
    })
    scripts.create_trigger({
        "id": "guard",
        "body": "function () { if (getContext().getResponse().getBody().bad) throw new Error('refused by the post-trigger'); }",
        "triggerType": TriggerType.Post,
        "triggerOperation": TriggerOperation.Create,
    })
    scripts.create_trigger({
        "id": "onDelete",
        "body": "function () {}",
        "triggerType": TriggerType.Pre,
        "triggerOperation": TriggerOperation.Delete,
    })
    created = container.create_item({"id": "a", "pk": "p"}, pre_trigger_include="stamp", post_trigger_include="guard")
    assert created["stamped"] == "Create"
    assert container.read_item("a", partition_key="p")["stamped"] == "Create"
    with pytest.raises(exceptions.CosmosHttpResponseError) as raised:
        container.create_item({"id": "b", "pk": "p", "bad": True}, post_trigger_include="guard")
    assert raised.value.status_code == 400
    assert "refused by the post-trigger" in str(raised.value)
    with pytest.raises(exceptions.CosmosHttpResponseError) as raised:
        container.create_item({"id": "c", "pk": "p"}, pre_trigger_include="onDelete")
    assert 400 <= raised.value.status_code < 500
    assert ids_in(container, "p") == ["a"]
    # Unnamed triggers do not run.
    assert "stamped" not in container.create_item({"id": "d", "pk": "p"})


def test_a_post_trigger_may_replace_the_response_body(container):
    """The wrapper's Response.setBody: "In post-triggers, the response body is already set with the
    requested resource and will be overwritten with this call." """
    container.scripts.create_trigger({
        "id": "audit",
        "body": "function () { var r = getContext().getResponse(); var b = r.getBody(); b.audited = true; r.setBody(b); }",
        "triggerType": TriggerType.Post,
        "triggerOperation": TriggerOperation.All,
    })
    created = container.create_item({"id": "a", "pk": "p"}, post_trigger_include="audit")
    assert created["id"] == "a" and created["audited"] is True
    upserted = container.upsert_item({"id": "a", "pk": "p", "v": 2}, post_trigger_include="audit")
    assert upserted["v"] == 2 and upserted["audited"] is True


def test_udfs_in_select_where_and_order_by(container):
    for i, income in enumerate([500, 20000, 8000, 1200]):
        container.create_item({"id": f"t{i}", "pk": "p", "income": income})
    scripts = container.scripts
    scripts.create_user_defined_function({"id": "tax", "body": "function tax(income) { return income > 1000 ? income * 0.1 : 0; }"})
    scripts.create_user_defined_function({"id": "negate", "body": "function (n) { return -n; }"})
    scripts.create_user_defined_function({"id": "fails", "body": "function () { throw new Error('no input'); }"})
    taxes = list(container.query_items("SELECT c.id, udf.tax(c.income) AS tax FROM c", partition_key="p"))
    assert sorted((t["id"], t["tax"]) for t in taxes) == [("t0", 0), ("t1", 2000), ("t2", 800), ("t3", 120)]
    high = list(container.query_items("SELECT VALUE c.id FROM c WHERE udf.tax(c.income) > 500", partition_key="p"))
    assert sorted(high) == ["t1", "t2"]
    ordered = list(container.query_items("SELECT VALUE c.id FROM c ORDER BY udf.negate(c.income)", partition_key="p"))
    assert ordered == ["t1", "t2", "t3", "t0"]
    with pytest.raises(exceptions.CosmosHttpResponseError) as raised:
        list(container.query_items("SELECT VALUE udf.missing(c.income) FROM c", partition_key="p"))
    assert raised.value.status_code == 400
    with pytest.raises(exceptions.CosmosHttpResponseError) as raised:
        list(container.query_items("SELECT VALUE udf.fails(c.income) FROM c", partition_key="p"))
    assert raised.value.status_code == 400
    assert "no input" in str(raised.value)
