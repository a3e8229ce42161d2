// Time to live, as docs/ttl.md describes it.
//
// The expiring items are written once, in `before`, and every test waits on the same clock, so
// the file sleeps about six seconds in all instead of a few seconds per test.

import { test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { createContainer, statusOf, uniqueId, useServer, withDatabase } from "./lib/fixtures.js";

const context = useServer({}, writeTheItems);
const SHORT_TTL_SECS = 2;
const RESET_TTL_SECS = 3;
// How long after an item's expiry instant a test waits before it expects the item gone.
const MARGIN_MS = 600;
const TTL_MAX = 2147483647;

const containers = {};
// When each write was acknowledged (performance.now()): the latest the server can have stamped it.
const acked = new Map();
let database;

async function write(name, body, { upsert = false } = {}) {
  const items = containers[name].items;
  const response = upsert ? await items.upsert(body) : await items.create(body);
  acked.set(`${name}/${body.id}`, performance.now());
  return response;
}

async function sleepUntilExpired(name, id, ttlSecs) {
  const remaining = acked.get(`${name}/${id}`) + ttlSecs * 1000 + MARGIN_MS - performance.now();
  if (remaining > 0) await sleep(remaining);
}

const read = (name, id, pk = "p") => containers[name].item(id, pk).read();

async function assertAbsent(name, id) {
  const { statusCode } = await read(name, id);
  assert.equal(statusCode, 404, `${name}/${id} should be gone`);
}

async function writeTheItems() {
  ({ database } = await context.client.databases.create({ id: uniqueId("ttl") }));
  const definitions = {
    default: SHORT_TTL_SECS, // items expire after SHORT_TTL_SECS unless they say otherwise
    on: -1, // TTL on, nothing expires by default
    off: undefined, // TTL off: an item's ttl is an ordinary property
    reset: RESET_TTL_SECS,
    query: SHORT_TTL_SECS,
    switch: SHORT_TTL_SECS,
  };
  // Containers first, so that the items below are all written within a few milliseconds.
  for (const [name, defaultTtl] of Object.entries(definitions)) {
    containers[name] = await createContainer(database, name, defaultTtl === undefined ? {} : { defaultTtl });
  }
  for (const id of ["plain", "replace-me", "delete-me", "recreate-me", "upsert-me"]) {
    await write("default", { id, pk: "p", generation: 1 });
  }
  await write("default", { id: "forever", pk: "p", ttl: -1 });
  await write("default", { id: "long", pk: "p", ttl: 600 });
  await write("on", { id: "plain", pk: "p" });
  await write("on", { id: "short", pk: "p", ttl: SHORT_TTL_SECS });
  await write("off", { id: "short", pk: "p", ttl: 1 });
  await write("off", { id: "zero", pk: "p", ttl: 0 });
  await write("off", { id: "text", pk: "p", ttl: "5" });
  await write("reset", { id: "touched", pk: "p", v: 1 });
  await write("reset", { id: "untouched", pk: "p", v: 1 });
  await write("reset", { id: "patched", pk: "p", v: 1 });
  for (let n = 0; n < 6; n += 1) {
    await write("query", { id: `q${n}`, pk: `p${n % 2}`, n, ...(n < 2 ? { ttl: -1 } : {}) });
  }
  await write("switch", { id: "old", pk: "p" });
  await write("switch", { id: "keeper", pk: "p", ttl: -1 });
}

// Runs first: everything is visible before its time is up.
test("items are visible before they expire", async () => {
  for (const id of ["plain", "forever", "long"]) assert.equal((await read("default", id)).statusCode, 200, id);
  assert.equal((await read("on", "short")).resource.ttl, SHORT_TTL_SECS);
  const { resources } = await containers.query.items.query("SELECT VALUE COUNT(1) FROM c").fetchAll();
  assert.deepEqual(resources, [6]);
});

test("a write restarts the countdown", async () => {
  await sleepUntilExpired("reset", "touched", RESET_TTL_SECS - 1.5 - MARGIN_MS / 1000);
  await write("reset", { id: "touched", pk: "p", v: 2 }, { upsert: true });
  await containers.reset.item("patched", "p").patch([{ op: "set", path: "/v", value: 2 }]);
  acked.set("reset/patched", performance.now());

  await sleepUntilExpired("reset", "untouched", RESET_TTL_SECS);
  await assertAbsent("reset", "untouched");
  assert.equal((await read("reset", "touched")).resource.v, 2);
  assert.equal((await read("reset", "patched")).resource.v, 2);

  await sleepUntilExpired("reset", "touched", RESET_TTL_SECS);
  await sleepUntilExpired("reset", "patched", RESET_TTL_SECS);
  await assertAbsent("reset", "touched");
  await assertAbsent("reset", "patched");
});

test("the container default expires items", async () => {
  await sleepUntilExpired("default", "plain", SHORT_TTL_SECS);
  await assertAbsent("default", "plain");
});

test("an item's ttl overrides the container default", async () => {
  await sleepUntilExpired("on", "short", SHORT_TTL_SECS);
  assert.equal((await read("default", "forever")).resource.ttl, -1);
  assert.equal((await read("default", "long")).resource.ttl, 600);
  await assertAbsent("on", "short");
  assert.equal((await read("on", "plain")).statusCode, 200);
});

test("an item's ttl is ignored while the container's TTL is off", async () => {
  await sleepUntilExpired("off", "short", 1);
  assert.equal((await read("off", "short")).resource.ttl, 1);
  assert.equal((await read("off", "zero")).resource.ttl, 0);
  assert.equal((await read("off", "text")).resource.ttl, "5");
  assert.equal((await containers.off.read()).resource.defaultTtl, undefined);
});

test("an expired item is 404 for replace, delete, patch and If-Match", async () => {
  await sleepUntilExpired("default", "replace-me", SHORT_TTL_SECS);
  const item = (id) => containers.default.item(id, "p");
  assert.equal(await statusOf(() => item("replace-me").replace({ id: "replace-me", pk: "p", generation: 2 })), 404);
  assert.equal(await statusOf(() => item("delete-me").delete()), 404);
  assert.equal(await statusOf(() => item("replace-me").patch([{ op: "set", path: "/generation", value: 2 }])), 404);
  const ifMatch = { accessCondition: { type: "IfMatch", condition: '"whatever"' } };
  assert.equal(await statusOf(() => item("plain").replace({ id: "plain", pk: "p" }, ifMatch)), 404);
  await assertAbsent("default", "replace-me");
});

test("an expired id can be created (201) and upserted (201) again", async () => {
  await sleepUntilExpired("default", "recreate-me", SHORT_TTL_SECS);
  const created = await containers.default.items.create({ id: "recreate-me", pk: "p", generation: 2, ttl: -1 });
  assert.equal(created.statusCode, 201);
  const upserted = await containers.default.items.upsert({ id: "upsert-me", pk: "p", generation: 2, ttl: -1 });
  assert.equal(upserted.statusCode, 201);
  assert.equal((await read("default", "recreate-me")).resource.generation, 2);
  assert.equal((await read("default", "upsert-me")).resource.generation, 2);
});

test("queries and the read feed skip expired items", async () => {
  for (let n = 2; n < 6; n += 1) await sleepUntilExpired("query", `q${n}`, SHORT_TTL_SECS);
  const items = containers.query.items;
  const ids = async (iterator) => (await iterator.fetchAll()).resources.map((row) => row.id ?? row).sort();
  assert.deepEqual(await ids(items.query("SELECT * FROM c")), ["q0", "q1"]);
  assert.deepEqual((await items.query("SELECT VALUE COUNT(1) FROM c").fetchAll()).resources, [2]);
  assert.deepEqual((await items.query("SELECT VALUE COUNT(1) FROM c", { partitionKey: "p0" }).fetchAll()).resources, [1]);
  const { resources: ordered } = await items.query("SELECT VALUE c.id FROM c WHERE c.n >= 0 ORDER BY c.n DESC").fetchAll();
  assert.deepEqual(ordered, ["q1", "q0"]);
  assert.deepEqual(await ids(items.readAll()), ["q0", "q1"]);
});

test("turning TTL off does not bring expired items back", async () => {
  await sleepUntilExpired("switch", "old", SHORT_TTL_SECS);
  await assertAbsent("switch", "old");
  const { resource: definition } = await containers.switch.read();
  delete definition.defaultTtl;
  const replaced = await containers.switch.replace(definition);
  assert.equal(replaced.resource.defaultTtl, undefined);
  await assertAbsent("switch", "old");
  const { resources } = await containers.switch.items.readAll().fetchAll();
  assert.deepEqual(resources.map((item) => item.id), ["keeper"]);

  // With TTL off an item's own ttl means nothing.
  await write("switch", { id: "fresh", pk: "p", ttl: 1 });
  await sleepUntilExpired("switch", "fresh", 1);
  assert.equal((await read("switch", "fresh")).resource.ttl, 1);
  await assertAbsent("switch", "old");
});

for (const defaultTtl of [0, -2, "5", 1.5, TTL_MAX + 1]) {
  test(`defaultTtl ${JSON.stringify(defaultTtl)} is 400 on create and replace`, () =>
    withDatabase(context.client, async (db) => {
      const status = await statusOf(() => createContainer(db, "bad", { defaultTtl }));
      assert.equal(status, 400);
      assert.deepEqual((await db.containers.readAll().fetchAll()).resources, []);

      const container = await createContainer(db, "good", { defaultTtl: 60 });
      const { resource: definition } = await container.read();
      assert.equal(await statusOf(() => container.replace({ ...definition, defaultTtl })), 400);
      assert.equal((await container.read()).resource.defaultTtl, 60);
    }));
}

test("the 400 for an invalid defaultTtl carries the service's message", () =>
  withDatabase(context.client, async (db) => {
    try {
      await createContainer(db, "bad", { defaultTtl: 0 });
      assert.fail("created a container with defaultTtl 0");
    } catch (error) {
      assert.equal(error.code, 400);
      assert.match(error.message, /The input defaultTtl '0' is invalid/);
    }
  }));

test("boundary ttl values are accepted", () =>
  withDatabase(context.client, async (db) => {
    const container = await createContainer(db, "max", { defaultTtl: TTL_MAX });
    assert.equal((await container.read()).resource.defaultTtl, TTL_MAX);
    for (const ttl of [TTL_MAX, 1, -1]) {
      assert.equal((await container.items.create({ id: `t${ttl}`, pk: "p", ttl })).statusCode, 201);
    }
  }));

for (const ttl of [0, null, -5, 1.5, "5", TTL_MAX + 1]) {
  test(`item ttl ${JSON.stringify(ttl)} is 400 in a container with TTL on`, () =>
    withDatabase(context.client, async (db) => {
      const container = await createContainer(db, "on", { defaultTtl: -1 });
      assert.equal(await statusOf(() => container.items.create({ id: "bad", pk: "p", ttl })), 400);
      assert.equal((await container.item("bad", "p").read()).statusCode, 404);
      await container.items.create({ id: "good", pk: "p" });
      assert.equal(await statusOf(() => container.items.upsert({ id: "good", pk: "p", ttl })), 400);
      assert.equal(await statusOf(() => container.item("good", "p").replace({ id: "good", pk: "p", ttl })), 400);
      assert.equal((await container.item("good", "p").read()).resource.ttl, undefined);
    }));
}

test("TTL cannot be combined with indexing mode none", () =>
  withDatabase(context.client, async (db) => {
    const indexingPolicy = { indexingMode: "none", automatic: false };
    assert.equal(await statusOf(() => createContainer(db, "unindexed", { defaultTtl: 10, indexingPolicy })), 400);
    const container = await createContainer(db, "unindexed", { indexingPolicy });
    const { resource: definition } = await container.read();
    assert.equal(await statusOf(() => container.replace({ ...definition, defaultTtl: 10 })), 400);
  }));
