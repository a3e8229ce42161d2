// Unique keys through @azure/cosmos, as docs/indexing.md describes them: the policy returned and
// fixed for the container's life (403 on a replace that changes it), a value unique per logical
// partition on create, upsert, replace, patch, a transactional batch (which fails whole, 207 with
// 424 and 409) and a stored procedure; a missing value counts as null; a value is free again once
// its holder is deleted or expired.

import { test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { createContainer, statusOf, uniqueId, useServer, withDatabase } from "./lib/fixtures.js";

const context = useServer();
const EMAIL_KEY = { uniqueKeys: [{ paths: ["/email"] }] };
const TTL_SECS = 2;
const MARGIN_MS = 500;

// Runs `body(container)` against a fresh container partitioned on /pk whose /email is unique.
function withUsers(body, options = {}) {
  return withDatabase(context.client, async (database) =>
    body(await createContainer(database, uniqueId("users"), { uniqueKeyPolicy: EMAIL_KEY, ...options }), database));
}

async function ids(container) {
  const { resources } = await container.items.query("SELECT VALUE c.id FROM c").fetchAll();
  return resources.sort();
}

test("the policy comes back, an empty one is the default, and an invalid one is a 400", () =>
  withUsers(async (users, database) => {
    assert.deepEqual((await users.read()).resource.uniqueKeyPolicy, EMAIL_KEY);
    const plain = await createContainer(database, uniqueId("plain"));
    assert.deepEqual((await plain.read()).resource.uniqueKeyPolicy, { uniqueKeys: [] });
    for (const paths of [["/name/*"], ["name"], ["/id"]]) {
      const status = await statusOf(() => createContainer(database, uniqueId("bad"), { uniqueKeyPolicy: { uniqueKeys: [{ paths }] } }));
      assert.equal(status, 400, String(paths));
    }
  }));

test("a replace cannot change the policy, and one that keeps it goes through", () =>
  withUsers(async (users) => {
    const { resource: definition } = await users.read();
    for (const changed of [{ uniqueKeys: [] }, { uniqueKeys: [{ paths: ["/name"] }] }]) {
      assert.equal(await statusOf(() => users.replace({ ...definition, uniqueKeyPolicy: changed })), 403);
    }
    const replaced = await users.replace({ ...definition, defaultTtl: 60 });
    assert.equal(replaced.statusCode, 200);
    assert.deepEqual(replaced.resource.uniqueKeyPolicy, EMAIL_KEY);
  }));

test("a value is unique within its logical partition, and a missing one counts as null", () =>
  withUsers(async (users) => {
    await users.items.create({ id: "a", pk: "p", email: "x" });
    assert.equal(await statusOf(() => users.items.create({ id: "b", pk: "p", email: "x" })), 409);
    await users.items.create({ id: "b", pk: "q", email: "x" });
    await users.items.create({ id: "c", pk: "p" });
    assert.equal(await statusOf(() => users.items.create({ id: "d", pk: "p" })), 409);
    assert.equal(await statusOf(() => users.items.create({ id: "d", pk: "p", email: null })), 409);
    assert.deepEqual(await ids(users), ["a", "b", "c"]);
  }));

test("upsert, replace and patch are refused, and a value left behind is free at once", () =>
  withUsers(async (users) => {
    await users.items.create({ id: "a", pk: "p", email: "x" });
    await users.items.create({ id: "b", pk: "p", email: "y" });
    const setEmail = (email) => [{ op: "set", path: "/email", value: email }];
    assert.equal(await statusOf(() => users.items.upsert({ id: "b", pk: "p", email: "x" })), 409);
    assert.equal(await statusOf(() => users.item("b", "p").replace({ id: "b", pk: "p", email: "x" })), 409);
    assert.equal(await statusOf(() => users.item("b", "p").patch(setEmail("x"))), 409);
    assert.equal((await users.item("b", "p").read()).resource.email, "y");
    await users.item("a", "p").replace({ id: "a", pk: "p", email: "z" });
    await users.item("b", "p").patch(setEmail("x"));
    await users.item("a", "p").delete();
    await users.items.create({ id: "c", pk: "p", email: "z" });
    assert.deepEqual(await ids(users), ["b", "c"]);
  }));

test("a batch that breaks a unique key fails whole", () =>
  withUsers(async (users) => {
    await users.items.create({ id: "held", pk: "p", email: "h" });
    const response = await users.items.batch(
      [
        { operationType: "Create", resourceBody: { id: "a", pk: "p", email: "x" } },
        { operationType: "Upsert", resourceBody: { id: "b", pk: "p", email: "h" } },
      ],
      "p",
    );
    assert.deepEqual(response.result.map((entry) => entry.statusCode), [424, 409]);
    assert.deepEqual(await ids(users), ["held"]);
  }));

// Creates each body in order; answers each creation's `err.number` (0 when it succeeded).
function createAll(bodies) {
  const c = getContext().getCollection();
  const numbers = [];
  next(0);
  function next(i) {
    if (i === bodies.length) { getContext().getResponse().setBody(numbers); return; }
    const accepted = c.createDocument(c.getSelfLink(), bodies[i], (err) => {
      numbers.push(err ? err.number : 0);
      next(i + 1);
    });
    if (!accepted) throw new Error("not accepted");
  }
}

test("a stored procedure meets the same rule", () =>
  withUsers(async (users) => {
    await users.items.create({ id: "held", pk: "p", email: "h" });
    await users.scripts.storedProcedures.create({ id: "createAll", body: createAll });
    const bodies = [
      { id: "a", pk: "p", email: "h" },
      { id: "b", pk: "p", email: "x" },
      { id: "c", pk: "p", email: "x" },
    ];
    const { resource } = await users.scripts.storedProcedure("createAll").execute("p", [bodies]);
    assert.deepEqual(resource, [409, 0, 409]);
    assert.deepEqual(await ids(users), ["b", "held"]);
  }));

test("a value is free once its holder expires", () =>
  withUsers(async (users) => {
    await users.items.create({ id: "a", pk: "p", email: "x" });
    const acked = Date.now();
    assert.equal(await statusOf(() => users.items.create({ id: "b", pk: "p", email: "x", ttl: -1 })), 409);
    // The holder was stamped before the acknowledgement, so it has expired by then + ttl.
    const remaining = acked + TTL_SECS * 1000 + MARGIN_MS - Date.now();
    if (remaining > 0) await sleep(remaining);
    await users.items.create({ id: "b", pk: "p", email: "x", ttl: -1 });
    assert.deepEqual(await ids(users), ["b"]);
  }, { defaultTtl: TTL_SECS }));
