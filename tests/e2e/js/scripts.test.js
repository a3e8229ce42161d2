// Executing server-side JavaScript through the JavaScript SDK (@azure/cosmos 4.10.1): stored
// procedures (bulk import with the continuation pattern, including an import cut short near the time
// budget and resumed; bulk delete by query; a counter guarded by `_etag`; logging; errors with a
// number and `abort`; a loop without end; an allocation without end; a write to another partition;
// response bodies and arguments; the `__` API), pre- and post-triggers on item writes, and UDFs in
// SELECT, WHERE and ORDER BY.
//
// Statuses as the service gives them: 200 with the body's JSON; a throw or `abort` is 400 with the
// Error's number as substatus; the time budget is 408; a missing procedure is 404; a write to
// another partition key is 400. ORDER BY over a UDF is a LetheDB extension (the service refuses any
// ORDER BY item that is not a document path) and is tested as such.

import { test } from "node:test";
import assert from "node:assert/strict";
import { TriggerOperation, TriggerType } from "@azure/cosmos";
import { createContainer, statusOf, useServer, withDatabase } from "./lib/fixtures.js";

const context = useServer();

async function withContainer(body) {
  await withDatabase(context.client, async (database) => body(await createContainer(database, "c")));
}

async function idsIn(container, pk) {
  const { resources } = await container.items
    .query("SELECT VALUE c.id FROM c", { partitionKey: pk })
    .fetchAll();
  return resources.sort();
}

async function failure(action) {
  try {
    await action();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail, but it succeeded");
}

// The SDK sends a function's source text as the body.
function bulkImport(docs) {
  const collection = getContext().getCollection();
  let count = 0;
  next();
  function next() {
    if (count >= docs.length) {
      getContext().getResponse().setBody(count);
      return;
    }
    const accepted = collection.createDocument(collection.getSelfLink(), docs[count], (err) => {
      if (err) throw err;
      count++;
      next();
    });
    if (!accepted) getContext().getResponse().setBody(count);
  }
}

// bulkImport with a cost per document, so that the time budget runs out part way: once
// createDocument returns false the script reports its progress and the client calls again.
function slowImport(docs, costMs) {
  const collection = getContext().getCollection();
  let count = 0;
  next();
  function next() {
    if (count >= docs.length) {
      getContext().getResponse().setBody(count);
      return;
    }
    const accepted = collection.createDocument(collection.getSelfLink(), docs[count], (err) => {
      if (err) throw err;
      const until = Date.now() + costMs;
      while (Date.now() < until) {}
      count++;
      next();
    });
    if (!accepted) getContext().getResponse().setBody(count);
  }
}

function bulkDelete(query) {
  const collection = getContext().getCollection();
  const body = { deleted: 0, continuation: true };
  queryAndDelete();
  function queryAndDelete(continuation) {
    collection.queryDocuments(collection.getSelfLink(), query, { continuation }, (err, docs, options) => {
      if (err) throw err;
      if (docs.length > 0) remove(docs);
      else if (options.continuation) queryAndDelete(options.continuation);
      else {
        body.continuation = false;
        getContext().getResponse().setBody(body);
      }
    });
  }
  function remove(docs) {
    if (docs.length === 0) return queryAndDelete();
    collection.deleteDocument(docs[0]._self, {}, (err) => {
      if (err) throw err;
      body.deleted++;
      docs.shift();
      remove(docs);
    });
  }
}

test("a bulk import returns its progress and is called again for the rest", async () => {
  await withContainer(async (container) => {
    await container.scripts.storedProcedures.create({ id: "bulkImport", body: bulkImport });
    const docs = Array.from({ length: 2000 }, (_, i) => ({ id: `d${String(i).padStart(4, "0")}`, pk: "p", n: i }));
    let remaining = docs;
    while (remaining.length > 0) {
      const { resource: done } = await container.scripts.storedProcedure("bulkImport").execute("p", [remaining]);
      assert.ok(done > 0);
      remaining = remaining.slice(done);
    }
    assert.deepEqual(await idsIn(container, "p"), docs.map((d) => d.id));
    const { resources: count } = await container.items.query("SELECT VALUE COUNT(1) FROM c", { partitionKey: "p" }).fetchAll();
    assert.deepEqual(count, [2000]);
    const { resources: last } = await container.items.query("SELECT VALUE c.n FROM c WHERE c.n >= 1995").fetchAll();
    assert.deepEqual(last.sort(), [1995, 1996, 1997, 1998, 1999]);
    const { resource: stored } = await container.item("d1234", "p").read();
    assert.equal(stored.n, 1234);
    assert.ok(stored._etag && stored._ts);
  });
});

test("an import cut short by the time budget returns its progress, commits it, and resumes", async () => {
  await withContainer(async (container) => {
    await container.scripts.storedProcedures.create({ id: "slowImport", body: slowImport });
    const docs = Array.from({ length: 1000 }, (_, i) => ({ id: `s${String(i).padStart(4, "0")}`, pk: "p" }));
    let remaining = docs;
    const progress = [];
    while (remaining.length > 0) {
      const started = Date.now();
      const { statusCode, resource: done } = await container.scripts
        .storedProcedure("slowImport")
        .execute("p", [remaining, 5]);
      assert.equal(statusCode, 200);
      assert.ok(Date.now() - started < 5500);
      assert.ok(done > 0 && done <= remaining.length, String(done));
      progress.push(done);
      remaining = remaining.slice(done);
    }
    assert.ok(progress.length >= 2 && progress[0] < docs.length, String(progress));
    assert.deepEqual(await idsIn(container, "p"), docs.map((d) => d.id));
  });
});

test("a bulk delete by query deletes every match", async () => {
  await withContainer(async (container) => {
    for (let i = 0; i < 150; i++) {
      await container.items.create({ id: `x${i}`, pk: "p", kind: i % 3 ? "old" : "keep" });
    }
    await container.scripts.storedProcedures.create({ id: "bulkDelete", body: bulkDelete });
    let deleted = 0;
    for (;;) {
      const { resource } = await container.scripts
        .storedProcedure("bulkDelete")
        .execute("p", ["SELECT * FROM c WHERE c.kind = 'old'"]);
      assert.deepEqual(Object.keys(resource).sort(), ["continuation", "deleted"]);
      deleted += resource.deleted;
      if (!resource.continuation) break;
    }
    assert.equal(deleted, 100);
    const { resources: kinds } = await container.items.query("SELECT VALUE c.kind FROM c", { partitionKey: "p" }).fetchAll();
    assert.deepEqual(kinds, Array(50).fill("keep"));
  });
});

test("a counter incremented ten times counts ten", async () => {
  await withContainer(async (container) => {
    await container.items.create({ id: "counter", pk: "p", count: 0 });
    await container.scripts.storedProcedures.create({
      id: "increment",
      body: `function (id) {
        var c = getContext().getCollection();
        c.readDocument(c.getAltLink() + '/docs/' + id, {}, function (err, doc) {
          if (err) throw err;
          doc.count += 1;
          c.replaceDocument(doc._self, doc, { etag: doc._etag }, function (err, saved) {
            if (err) throw err;
            getContext().getResponse().setBody(saved.count);
          });
        });
      }`,
    });
    for (let expected = 1; expected <= 10; expected++) {
      const { resource } = await container.scripts.storedProcedure("increment").execute("p", ["counter"]);
      assert.equal(resource, expected);
    }
    const { resource } = await container.item("counter", "p").read();
    assert.equal(resource.count, 10);
    // The etag option is honoured: a replace with an outdated one gets 412 in its callback.
    await container.scripts.storedProcedures.create({
      id: "stale",
      body: `function (id, etag) {
        var c = getContext().getCollection();
        c.readDocument(c.getAltLink() + '/docs/' + id, {}, function (err, doc) {
          if (err) throw err;
          doc.count = -1;
          c.replaceDocument(doc._self, doc, { etag: etag }, function (err) {
            getContext().getResponse().setBody(err ? err.number : 'replaced');
          });
        });
      }`,
    });
    const { resource: first } = await container.items.create({ id: "other", pk: "p", count: 0 });
    await container.items.upsert({ id: "other", pk: "p", count: 1 });
    const { resource: status } = await container.scripts.storedProcedure("stale").execute("p", ["other", first._etag]);
    assert.equal(status, 412);
    assert.equal((await container.item("other", "p").read()).resource.count, 1);
  });
});

test("console.log comes back URL-encoded only when logging is on", async () => {
  await withContainer(async (container) => {
    await container.scripts.storedProcedures.create({
      id: "logs",
      body: "function () { console.log('The value of %s is %s.', 'x', 1); }",
    });
    const sproc = container.scripts.storedProcedure("logs");
    const logged = await sproc.execute("p", [], { enableScriptLogging: true });
    assert.equal(
      logged.headers["x-ms-documentdb-script-log-results"],
      encodeURIComponent("The value of x is 1."),
    );
    assert.equal(logged.resource, "");
    const quiet = await sproc.execute("p", []);
    assert.equal(quiet.headers["x-ms-documentdb-script-log-results"], undefined);
    const off = await sproc.execute("p", [], { enableScriptLogging: false });
    assert.equal(off.headers["x-ms-documentdb-script-log-results"], undefined);
  });
});

test("console.log follows the wrapper's sprintf: %s is the next argument, %% is %", async () => {
  await withContainer(async (container) => {
    await container.scripts.storedProcedures.create({ id: "percent", body: "function () { console.log('100%% of %s', 'x'); }" });
    const logged = await container.scripts.storedProcedure("percent").execute("p", [], { enableScriptLogging: true });
    assert.equal(logged.headers["x-ms-documentdb-script-log-results"], encodeURIComponent("100% of x"));
  });
});

test("the deleteDocument callback gets the response options second (a delete has no resource)", async () => {
  // The wrapper calls back `callback(undefined, response.options)`.
  await withContainer(async (container) => {
    await container.items.create({ id: "d", pk: "p" });
    await container.scripts.storedProcedures.create({
      id: "remove",
      body: `function () {
        var c = getContext().getCollection();
        c.deleteDocument(c.getAltLink() + '/docs/d', {}, function (err, responseOptions) {
          if (err) throw err;
          getContext().getResponse().setBody(responseOptions !== null && typeof responseOptions === 'object');
        });
      }`,
    });
    assert.equal((await container.scripts.storedProcedure("remove").execute("p", [])).resource, true);
    assert.deepEqual(await idsIn(container, "p"), []);
  });
});

test("an Error with a number is a 400 with that substatus, and nothing stays", async () => {
  await withContainer(async (container) => {
    await container.scripts.storedProcedures.create({
      id: "throws",
      body: `function () {
        var c = getContext().getCollection();
        c.createDocument(c.getSelfLink(), { id: 'before', pk: 'p' }, function (err) {
          if (err) throw err;
          throw new Error(409, 'custom');
        });
      }`,
    });
    const error = await failure(() => container.scripts.storedProcedure("throws").execute("p", []));
    assert.equal(error.code, 400);
    assert.equal(error.substatus, 409);
    assert.match(error.message, /custom/);
    assert.deepEqual(await idsIn(container, "p"), []);
    // (Item.read answers a missing item with a 404 response rather than an error.)
    assert.equal((await container.item("before", "p").read()).statusCode, 404);
  });
});

test("abort and a plain throw are 400s, and roll back", async () => {
  await withContainer(async (container) => {
    const writeThen = (then) => `function () {
      var c = getContext().getCollection();
      c.createDocument(c.getSelfLink(), { id: 'before', pk: 'p' }, function (err) {
        if (err) throw err;
        ${then}
      });
    }`;
    await container.scripts.storedProcedures.create({ id: "aborts", body: writeThen("getContext().abort(new Error(412, 'stopped'));") });
    await container.scripts.storedProcedures.create({ id: "plain", body: writeThen("throw new Error('plain');") });
    const aborted = await failure(() => container.scripts.storedProcedure("aborts").execute("p", []));
    assert.equal(aborted.code, 400);
    assert.equal(aborted.substatus, 412);
    assert.match(aborted.message, /stopped/);
    const thrown = await failure(() => container.scripts.storedProcedure("plain").execute("p", []));
    assert.equal(thrown.code, 400);
    assert.ok(!thrown.substatus, String(thrown.substatus));
    assert.match(thrown.message, /Encountered exception while executing function/);
    assert.match(thrown.message, /plain/);
    assert.deepEqual(await idsIn(container, "p"), []);
  });
});

test("a loop without end is a 408, rolled back, and the server keeps serving", async () => {
  await withContainer(async (container) => {
    await container.scripts.storedProcedures.create({
      id: "spin",
      body: `function () {
        var c = getContext().getCollection();
        c.createDocument(c.getSelfLink(), { id: 'before', pk: 'p' }, function () { while (true) {} });
      }`,
    });
    await container.scripts.storedProcedures.create({
      id: "quick",
      body: "function () { getContext().getResponse().setBody(1); }",
    });
    let started = Date.now();
    assert.equal(await statusOf(() => container.scripts.storedProcedure("spin").execute("p", [])), 408);
    assert.ok(Date.now() - started < 30_000);
    assert.deepEqual(await idsIn(container, "p"), []);
    started = Date.now();
    const { resource } = await container.scripts.storedProcedure("quick").execute("p", []);
    assert.equal(resource, 1);
    assert.ok(Date.now() - started < 2000);
  });
});

test("allocating without end is a clear 4xx and the server keeps serving", async () => {
  await withContainer(async (container) => {
    await container.scripts.storedProcedures.create({
      id: "hog",
      body: "function () { var hog = []; while (true) hog.push('x'.repeat(4096) + hog.length); }",
    });
    await container.scripts.storedProcedures.create({
      id: "quick",
      body: "function () { getContext().getResponse().setBody(1); }",
    });
    const started = Date.now();
    const error = await failure(() => container.scripts.storedProcedure("hog").execute("p", []));
    assert.ok(Date.now() - started < 30_000);
    assert.ok(error.code >= 400 && error.code < 500 && error.code !== 408, String(error.code));
    assert.match(error.message, /memory/);
    assert.equal((await container.scripts.storedProcedure("quick").execute("p", [])).resource, 1);
    await container.items.create({ id: "after", pk: "p" });
    assert.deepEqual(await idsIn(container, "p"), ["after"]);
  });
});

test("a write to another partition key is refused and nothing is written", async () => {
  await withContainer(async (container) => {
    await container.scripts.storedProcedures.create({
      id: "elsewhere",
      body: `function () {
        var c = getContext().getCollection();
        c.createDocument(c.getSelfLink(), { id: 'mine', pk: 'p' }, function (err) {
          if (err) throw err;
          c.createDocument(c.getSelfLink(), { id: 'theirs', pk: 'q' }, function () {});
        });
      }`,
    });
    assert.equal(await statusOf(() => container.scripts.storedProcedure("elsewhere").execute("p", [])), 400);
    assert.deepEqual(await idsIn(container, "p"), []);
    assert.deepEqual(await idsIn(container, "q"), []);
  });
});

test("a script sees only the partition it runs in: a key of 1, null, or none (undefined)", async () => {
  await withDatabase(context.client, async (database) => {
    const { container } = await database.containers.create({ id: "k", partitionKey: { paths: ["/key"] } });
    await container.items.create({ id: "null", key: null });
    await container.items.create({ id: "none" });
    await container.items.create({ id: "one", key: 1 });
    await container.scripts.storedProcedures.create({
      id: "ids",
      body: function () {
        const c = getContext().getCollection();
        c.queryDocuments(c.getSelfLink(), "SELECT r.id FROM r", {}, (err, docs) => {
          if (err) throw err;
          getContext().getResponse().setBody(docs.map((d) => d.id));
        });
      },
    });
    const sproc = container.scripts.storedProcedure("ids");
    assert.deepEqual((await sproc.execute(1, [])).resource, ["one"]);
    assert.deepEqual((await sproc.execute(null, [])).resource, ["null"]);
    // No key: the SDK reads the container's definition and sends the "none" key, [{}].
    assert.deepEqual((await sproc.execute(undefined, [])).resource, ["none"]);
  });
});

test("a link outside the collection throws at the call, and the callback never runs", async () => {
  // The service's wrapper (DocDbWrapperScript.js, validateCollectionLink) throws
  // Error(400, "Function is not allowed to operate on resources outside current collection...")
  // from the call itself: the operation is never queued.
  await withContainer(async (container) => {
    await container.scripts.storedProcedures.create({
      id: "outside",
      body: `function () {
        var c = getContext().getCollection();
        var outcome = ['returned'];
        try {
          c.createDocument('dbs/elsewhere/colls/other', { id: 'x', pk: 'p' }, function (err) {
            outcome.push('callback');
          });
        } catch (err) {
          outcome = ['threw', err.number, err.message];
        }
        getContext().getResponse().setBody(outcome);
      }`,
    });
    const { resource: outcome } = await container.scripts.storedProcedure("outside").execute("p", []);
    assert.deepEqual(outcome.slice(0, 2), ["threw", 400], JSON.stringify(outcome));
    assert.match(outcome[2], /outside current collection/);
    assert.deepEqual(await idsIn(container, "p"), []);
  });
});

test("response bodies, spread arguments and a missing procedure", async () => {
  await withContainer(async (container) => {
    const sprocs = container.scripts.storedProcedures;
    await sprocs.create({ id: "set", body: "function () { getContext().getResponse().setBody(999); }" });
    await sprocs.create({
      id: "append",
      body: "function () { for (var i = 0; i < 10; i++) getContext().getResponse().appendValue('Body', i); }",
    });
    await sprocs.create({ id: "nothing", body: "function () {}" });
    await sprocs.create({
      id: "args",
      body: "function (a, b) { getContext().getResponse().setBody([a, b.x, arguments.length]); }",
    });
    assert.equal((await container.scripts.storedProcedure("set").execute("p")).resource, 999);
    assert.equal((await container.scripts.storedProcedure("append").execute("p")).resource, "0123456789");
    const { statusCode, resource: empty } = await container.scripts.storedProcedure("nothing").execute("p", []);
    assert.equal(statusCode, 200);
    assert.equal(empty, "");
    assert.deepEqual((await container.scripts.storedProcedure("args").execute("p", [1, { x: 2 }])).resource, [1, 2, 2]);
    assert.equal(await statusOf(() => container.scripts.storedProcedure("missing").execute("p", [])), 404);
  });
});

test("the __ API: filter, and chain().filter().map().value(), over the partition only", async () => {
  await withContainer(async (container) => {
    for (let i = 0; i < 10; i++) await container.items.create({ id: `c${i}`, pk: "p", n: i });
    await container.items.create({ id: "other", pk: "q", n: 100 });
    await container.scripts.storedProcedures.create({
      id: "chain",
      body: `function () {
        __.chain().filter(function (d) { return d.n % 2 === 0; }).map(function (d) { return d.n * 10; })
          .value(function (err, values) {
            if (err) throw err;
            __.filter(function (d) { return d.n > 7; }, function (err, big) {
              if (err) throw err;
              getContext().getResponse().setBody({ even: values, big: big.map(function (d) { return d.id; }) });
            });
          });
      }`,
    });
    const { resource } = await container.scripts.storedProcedure("chain").execute("p", []);
    assert.deepEqual(resource, { even: [0, 20, 40, 60, 80], big: ["c8", "c9"] });
  });
});

test("pre-triggers stamp, a throwing post-trigger rolls the write back, a mismatched trigger is refused", async () => {
  await withContainer(async (container) => {
    const triggers = container.scripts.triggers;
    await triggers.create({
      id: "stamp",
      body: "function () { var r = getContext().getRequest(); var d = r.getBody(); d.stamped = r.getOperationType(); r.setBody(d); }",
      triggerType: TriggerType.Pre,
      triggerOperation: TriggerOperation.All,
    });
    await triggers.create({
      id: "guard",
      body: "function () { if (getContext().getResponse().getBody().bad) throw new Error('refused by the post-trigger'); }",
      triggerType: TriggerType.Post,
      triggerOperation: TriggerOperation.All,
    });
    await triggers.create({
      id: "onDelete",
      body: "function () {}",
      triggerType: TriggerType.Pre,
      triggerOperation: TriggerOperation.Delete,
    });
    const { resource: created } = await container.items.create(
      { id: "a", pk: "p" },
      { preTriggerInclude: ["stamp"], postTriggerInclude: ["guard"] },
    );
    assert.equal(created.stamped, "Create");
    assert.equal((await container.item("a", "p").read()).resource.stamped, "Create");
    const error = await failure(() =>
      container.items.create({ id: "b", pk: "p", bad: true }, { postTriggerInclude: ["guard"] }),
    );
    assert.equal(error.code, 400);
    assert.match(error.message, /refused by the post-trigger/);
    const mismatched = await statusOf(() => container.items.create({ id: "c", pk: "p" }, { preTriggerInclude: ["onDelete"] }));
    assert.ok(mismatched >= 400 && mismatched < 500, String(mismatched));
    const { resource: upserted } = await container.items.upsert(
      { id: "a", pk: "p", again: true },
      { preTriggerInclude: ["stamp"] },
    );
    assert.equal(upserted.stamped, "Upsert");
    assert.deepEqual(await idsIn(container, "p"), ["a"]);
    // Unnamed triggers do not run.
    const { resource: plain } = await container.items.create({ id: "d", pk: "p" });
    assert.equal(plain.stamped, undefined);
  });
});

test("a post-trigger may replace the response body", async () => {
  // The wrapper's Response.setBody: "In post-triggers, the response body is already set with the
  // requested resource and will be overwritten with this call."
  await withContainer(async (container) => {
    await container.scripts.triggers.create({
      id: "audit",
      body: "function () { var r = getContext().getResponse(); var b = r.getBody(); b.audited = true; r.setBody(b); }",
      triggerType: TriggerType.Post,
      triggerOperation: TriggerOperation.All,
    });
    const { resource: created } = await container.items.create({ id: "a", pk: "p" }, { postTriggerInclude: "audit" });
    assert.equal(created.id, "a");
    assert.equal(created.audited, true);
    const { resource: replaced } = await container.item("a", "p").replace({ id: "a", pk: "p", v: 2 }, { postTriggerInclude: "audit" });
    assert.equal(replaced.v, 2);
    assert.equal(replaced.audited, true);
  });
});

test("UDFs in SELECT, WHERE and ORDER BY; a missing or throwing one is a 400", async () => {
  await withContainer(async (container) => {
    for (const [i, income] of [500, 20000, 8000, 1200].entries()) {
      await container.items.create({ id: `t${i}`, pk: "p", income });
    }
    const udfs = container.scripts.userDefinedFunctions;
    await udfs.create({ id: "tax", body: "function tax(income) { return income > 1000 ? income * 0.1 : 0; }" });
    await udfs.create({ id: "negate", body: "function (n) { return -n; }" });
    await udfs.create({ id: "fails", body: "function () { throw new Error('no input'); }" });
    const query = async (text) =>
      (await container.items.query(text, { partitionKey: "p" }).fetchAll()).resources;
    const taxes = await query("SELECT c.id, udf.tax(c.income) AS tax FROM c");
    assert.deepEqual(
      taxes.map((t) => [t.id, t.tax]).sort(),
      [["t0", 0], ["t1", 2000], ["t2", 800], ["t3", 120]],
    );
    assert.deepEqual((await query("SELECT VALUE c.id FROM c WHERE udf.tax(c.income) > 500")).sort(), ["t1", "t2"]);
    assert.deepEqual(await query("SELECT VALUE c.id FROM c ORDER BY udf.negate(c.income)"), ["t1", "t2", "t3", "t0"]);
    assert.equal(await statusOf(() => query("SELECT VALUE udf.missing(c.income) FROM c")), 400);
    const error = await failure(() => query("SELECT VALUE udf.fails(c.income) FROM c"));
    assert.equal(error.code, 400);
    assert.match(error.message, /no input/);
  });
});
