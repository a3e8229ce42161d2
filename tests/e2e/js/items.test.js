// Item CRUD, optimistic concurrency, system properties and the paged read feed.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createContainer, statusOf, useServer, withDatabase } from "./lib/fixtures.js";

const context = useServer();
const SYSTEM_PROPERTIES = ["_rid", "_self", "_etag", "_ts", "_attachments"];

function userFields(item) {
  return Object.fromEntries(Object.entries(item).filter(([name]) => !name.startsWith("_")));
}

// Runs `body(container)` against a fresh container partitioned on /pk.
function withContainer(body) {
  return withDatabase(context.client, async (database) => body(await createContainer(database, "items")));
}

test("create then read round-trips the body", () =>
  withContainer(async (container) => {
    const body = {
      id: "a", pk: "p", n: 1, f: 2.5, ok: true, none: null,
      list: [1, "two", { three: 3 }], nested: { deep: { deeper: "x" } }, text: "žluťoučký 🐎",
    };
    const created = await container.items.create(body);
    assert.equal(created.statusCode, 201);
    assert.deepEqual(userFields(created.resource), body);
    const read = await container.item("a", "p").read();
    assert.equal(read.statusCode, 200);
    assert.deepEqual(userFields(read.resource), body);
  }));

test("system properties are present and match the headers", () =>
  withContainer(async (container) => {
    const { resource, headers, etag, requestCharge } = await container.items.create({ id: "sys", pk: "p" });
    for (const name of SYSTEM_PROPERTIES) assert.ok(name in resource, `missing ${name}`);
    assert.ok(resource._self.startsWith("dbs/") && resource._self.endsWith("/"), resource._self);
    assert.equal(resource._attachments, "attachments/");
    assert.ok(Number.isInteger(resource._ts));
    assert.equal(etag, resource._etag);
    assert.equal(headers.etag, resource._etag);
    assert.ok(requestCharge > 0, `request charge ${requestCharge}`);

    const read = await container.item("sys", "p").read();
    for (const name of SYSTEM_PROPERTIES) assert.deepEqual(read.resource[name], resource[name], name);
  }));

test("a client-sent _ts and _etag are ignored", () =>
  withContainer(async (container) => {
    const before = Math.floor(Date.now() / 1000);
    const { resource } = await container.items.create({ id: "ts", pk: "p", _ts: 1, _etag: '"forged"' });
    assert.ok(resource._ts >= before - 5 && resource._ts <= Date.now() / 1000 + 5, `_ts ${resource._ts}`);
    assert.notEqual(resource._etag, '"forged"');
  }));

test("duplicate create is 409, and the same id in another partition is fine", () =>
  withContainer(async (container) => {
    await container.items.create({ id: "dup", pk: "p", v: 1 });
    assert.equal(await statusOf(() => container.items.create({ id: "dup", pk: "p", v: 2 })), 409);
    assert.equal((await container.item("dup", "p").read()).resource.v, 1);
    assert.equal((await container.items.create({ id: "dup", pk: "q", v: 3 })).statusCode, 201);
  }));

test("reading a missing item is 404", () =>
  withContainer(async (container) => {
    const { statusCode, resource } = await container.item("nope", "p").read();
    assert.equal(statusCode, 404);
    assert.equal(resource, undefined);
  }));

test("replace changes the body and the etag", () =>
  withContainer(async (container) => {
    const created = await container.items.create({ id: "r", pk: "p", v: 1 });
    const replaced = await container.item("r", "p").replace({ id: "r", pk: "p", v: 2 });
    assert.equal(replaced.statusCode, 200);
    assert.equal(replaced.resource.v, 2);
    assert.notEqual(replaced.etag, created.etag);
    assert.equal(replaced.resource._rid, created.resource._rid);
    assert.deepEqual(userFields((await container.item("r", "p").read()).resource), { id: "r", pk: "p", v: 2 });
    assert.equal(await statusOf(() => container.item("ghost", "p").replace({ id: "ghost", pk: "p" })), 404);
  }));

test("upsert creates (201) then replaces (200)", () =>
  withContainer(async (container) => {
    const created = await container.items.upsert({ id: "u", pk: "p", v: 1 });
    assert.equal(created.statusCode, 201);
    const replaced = await container.items.upsert({ id: "u", pk: "p", v: 2, extra: true });
    assert.equal(replaced.statusCode, 200);
    assert.notEqual(replaced.etag, created.etag);
    assert.deepEqual(userFields((await container.item("u", "p").read()).resource), { id: "u", pk: "p", v: 2, extra: true });
  }));

test("delete answers 204, then the item is 404", () =>
  withContainer(async (container) => {
    await container.items.create({ id: "d", pk: "p" });
    assert.equal((await container.item("d", "p").delete()).statusCode, 204);
    assert.equal((await container.item("d", "p").read()).statusCode, 404);
    assert.equal(await statusOf(() => container.item("d", "p").delete()), 404);
  }));

test("If-Match: a stale etag is 412 on replace and delete, the current one succeeds", () =>
  withContainer(async (container) => {
    const stale = (await container.items.create({ id: "c", pk: "p", v: 1 })).etag;
    const current = (await container.item("c", "p").replace({ id: "c", pk: "p", v: 2 })).etag;
    const ifMatch = (condition) => ({ accessCondition: { type: "IfMatch", condition } });

    assert.equal(await statusOf(() => container.item("c", "p").replace({ id: "c", pk: "p", v: 3 }, ifMatch(stale))), 412);
    assert.equal(await statusOf(() => container.item("c", "p").delete(ifMatch(stale))), 412);
    assert.equal((await container.item("c", "p").read()).resource.v, 2);

    const newer = await container.item("c", "p").replace({ id: "c", pk: "p", v: 3 }, ifMatch(current));
    assert.equal(newer.statusCode, 200);
    assert.equal((await container.item("c", "p").delete(ifMatch(newer.etag))).statusCode, 204);
    assert.equal((await container.item("c", "p").read()).statusCode, 404);
  }));

test("readAll pages through 25 items 7 at a time, each item once", () =>
  withContainer(async (container) => {
    const ids = Array.from({ length: 25 }, (_, n) => `item-${String(n).padStart(2, "0")}`);
    for (const [n, id] of ids.entries()) await container.items.create({ id, pk: `p${n % 3}` });

    const iterator = container.items.readAll({ maxItemCount: 7 });
    const pages = [];
    while (iterator.hasMoreResults()) {
      pages.push((await iterator.fetchNext()).resources);
    }
    assert.deepEqual(pages.map((page) => page.length), [7, 7, 7, 4]);
    assert.deepEqual(pages.flat().map((item) => item.id).sort(), ids);

    const pagesViaAsyncIterator = [];
    for await (const page of container.items.readAll({ maxItemCount: 7 }).getAsyncIterator()) {
      pagesViaAsyncIterator.push(page.resources.length);
    }
    assert.deepEqual(pagesViaAsyncIterator, [7, 7, 7, 4]);
  }));

test("patch applies operations and changes the etag", () =>
  withContainer(async (container) => {
    const created = await container.items.create({ id: "pa", pk: "p", n: 1, tags: ["a"], gone: true });
    const patched = await container.item("pa", "p").patch([
      { op: "set", path: "/name", value: "x" },
      { op: "incr", path: "/n", value: 5 },
      { op: "add", path: "/tags/-", value: "b" },
      { op: "remove", path: "/gone" },
    ]);
    assert.equal(patched.statusCode, 200);
    assert.deepEqual(userFields(patched.resource), { id: "pa", pk: "p", n: 6, tags: ["a", "b"], name: "x" });
    assert.notEqual(patched.etag, created.etag);
    assert.deepEqual(userFields((await container.item("pa", "p").read()).resource), userFields(patched.resource));
    assert.equal(await statusOf(() => container.item("missing", "p").patch([{ op: "set", path: "/n", value: 1 }])), 404);
  }));

test("concurrent replaces with one etag have exactly one winner", () =>
  withContainer(async (container) => {
    const { etag } = await container.items.create({ id: "race", pk: "p", winner: null });
    const ifMatch = { accessCondition: { type: "IfMatch", condition: etag } };
    const outcomes = await Promise.all(
      Array.from({ length: 16 }, (_, contender) =>
        container
          .item("race", "p")
          .replace({ id: "race", pk: "p", winner: contender }, ifMatch)
          .then(() => contender)
          .catch((error) => {
            if (error.code !== 412) throw error;
            return null;
          }),
      ),
    );
    const winners = outcomes.filter((outcome) => outcome !== null);
    assert.equal(winners.length, 1, JSON.stringify(outcomes));
    assert.equal((await container.item("race", "p").read()).resource.winner, winners[0]);
  }));

test("an item over 2 MiB is 413", () =>
  withContainer(async (container) => {
    const blob = "x".repeat(2 * 1024 * 1024 + 1);
    assert.equal(await statusOf(() => container.items.create({ id: "big", pk: "p", blob })), 413);
    assert.equal((await container.item("big", "p").read()).statusCode, 404);
    assert.equal((await container.items.create({ id: "large", pk: "p", blob: "x".repeat(1024 * 1024) })).statusCode, 201);
  }));

// Ids the service accepts although they need escaping in a URL path ('/', '\\' and '#' it refuses;
// '?' it refuses in other resources' ids, not in an item's, as the SDK's own tests show).
const AWKWARD_IDS = ["question?mark", "with space", "ünïcødé-日本", "plus+sign", "percent%", "quote'd\"double", "colon:semi;comma,",
  "amp&eq=", "tilde~star*", "@at$dollar", "(paren)[bracket]{brace}", "emoji🐎", "..."];

test("ids that need escaping round-trip through create, read, replace, query and delete", () =>
  withContainer(async (container) => {
    for (const id of AWKWARD_IDS) {
      assert.equal((await container.items.create({ id, pk: "p", v: 1 })).statusCode, 201, id);
      assert.equal((await container.item(id, "p").read()).resource?.id, id, id);
      assert.equal((await container.item(id, "p").replace({ id, pk: "p", v: 2 })).resource.v, 2, id);
      const { resources } = await container.items
        .query({ query: "SELECT VALUE c.id FROM c WHERE c.id = @id", parameters: [{ name: "@id", value: id }] }, { partitionKey: "p" })
        .fetchAll();
      assert.deepEqual(resources, [id]);
      assert.equal((await container.item(id, "p").delete()).statusCode, 204, id);
      assert.equal((await container.item(id, "p").read()).statusCode, 404, id);
    }
  }));

// The service's routing gateway checks a path's signature over the id decoded again with
// trailing whitespace dropped, so such ids are created and queried but refused 401 by path.
test("ids the gateway reads differently are created but refused 401 on point operations", () =>
  withContainer(async (container) => {
    for (const id of ["percent%20", "encoded%E9%B1%80", "trailing space "]) {
      assert.equal((await container.items.create({ id, pk: "p", v: 1 })).statusCode, 201, id);
      assert.equal(await statusOf(() => container.item(id, "p").read()), 401, id);
      assert.equal(await statusOf(() => container.item(id, "p").replace({ id, pk: "p", v: 2 })), 401, id);
      assert.equal(await statusOf(() => container.item(id, "p").delete()), 401, id);
      const { resources } = await container.items
        .query({ query: "SELECT VALUE c.id FROM c WHERE c.id = @id", parameters: [{ name: "@id", value: id }] }, { partitionKey: "p" })
        .fetchAll();
      assert.deepEqual(resources, [id]);
    }
  }));

test("the id length limit is 255", () =>
  withContainer(async (container) => {
    const longest = "i".repeat(255);
    assert.equal((await container.items.create({ id: longest, pk: "p" })).statusCode, 201);
    assert.equal((await container.item(longest, "p").read()).resource.id, longest);
    assert.equal(await statusOf(() => container.items.create({ id: "i".repeat(256), pk: "p" })), 400);
  }));

test("a replace whose body has another id renames the item; onto an existing id is 409", () =>
  withContainer(async (container) => {
    const { resource: created } = await container.items.create({ id: "old", pk: "p" });
    const { resource: renamed, statusCode } = await container.item("old", "p").replace({ id: "new", pk: "p", v: 2 });
    assert.equal(statusCode, 200);
    assert.equal(renamed.id, "new");
    assert.equal(renamed._rid, created._rid);
    assert.equal((await container.item("old", "p").read()).statusCode, 404);
    assert.equal((await container.item("new", "p").read()).resource.v, 2);
    await container.items.create({ id: "taken", pk: "p" });
    assert.equal(await statusOf(() => container.item("new", "p").replace({ id: "taken", pk: "p" })), 409);
  }));

test("a batch replace whose body has another id renames the item", () =>
  withContainer(async (container) => {
    await container.items.create({ id: "old", pk: "p" });
    const response = await container.items.batch(
      [{ operationType: "Replace", id: "old", resourceBody: { id: "new", pk: "p" } }],
      "p",
    );
    assert.equal(response.result[0].statusCode, 200);
    const { resources } = await container.items.query("SELECT VALUE c.id FROM c").fetchAll();
    assert.deepEqual(resources, ["new"]);
  }));

// The SDK's bulk with `continueOnError: false` sends `x-ms-cosmos-batch-continue-on-error: false`:
// after the first failed operation the service attempts none of the rest and answers each 424,
// as the SDK's own bulk test expects; by default every operation runs.
test("bulk with continueOnError false answers 424 for the operations after a failure", () =>
  withContainer(async (container) => {
    const operations = (suffix) => [
      { operationType: "Create", resourceBody: { id: `first${suffix}`, pk: "p" } },
      { operationType: "Create", resourceBody: { id: `bad${suffix}`, pk: "p", ttl: -10 } },
      { operationType: "Create", resourceBody: { id: `after${suffix}`, pk: "p" } },
    ];
    const stopped = await container.items.bulk(operations("-stop"), { continueOnError: false });
    assert.deepEqual(stopped.map((result) => result.statusCode), [201, 400, 424]);
    const continued = await container.items.bulk(operations("-go"));
    assert.deepEqual(continued.map((result) => result.statusCode), [201, 400, 201]);
    const { resources } = await container.items.query("SELECT VALUE c.id FROM c").fetchAll();
    assert.deepEqual(resources.sort(), ["after-go", "first-go", "first-stop"]);
  }));

test("an upsert with If-Match creates a missing item and checks an existing one", () =>
  withContainer(async (container) => {
    const ifMatch = (condition) => ({ accessCondition: { type: "IfMatch", condition } });
    const created = await container.items.upsert({ id: "u", pk: "p" }, ifMatch('"00000000-0000-0000-0000-000000000000"'));
    assert.equal(created.statusCode, 201);
    assert.equal(await statusOf(() => container.items.upsert({ id: "u", pk: "p", v: 2 }, ifMatch('"stale"'))), 412);
    const replaced = await container.items.upsert({ id: "u", pk: "p", v: 3 }, ifMatch(created.resource._etag));
    assert.equal(replaced.statusCode, 200);
  }));
