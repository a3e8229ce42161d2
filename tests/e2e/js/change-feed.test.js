// The change feed through the JavaScript SDK, unmodified: getChangeFeedIterator from every
// ChangeFeedStartFrom, scoped by partition key and feed range, in both modes; 304 ending the
// hasMoreResults loop; the server's refusal of an all-versions read from the beginning; TTL
// deletes in the all-versions feed.

import { test } from "node:test";
import assert from "node:assert/strict";
import { ChangeFeedMode, ChangeFeedStartFrom, StatusCodes } from "@azure/cosmos";
import { uniqueId, useServer, withDatabase } from "./lib/fixtures.js";

const context = useServer();

async function create(database, extra = {}) {
  const { container } = await database.containers.create({ id: uniqueId("cf"), partitionKey: { paths: ["/pk"] }, ...extra });
  return container;
}

// Reads pages until the 304 that says nothing is new; returns every entry.
async function drain(iterator) {
  const all = [];
  while (iterator.hasMoreResults) {
    const page = await iterator.readNext();
    if (page.statusCode === StatusCodes.NotModified) break;
    all.push(...page.result);
  }
  return all;
}

const ids = (items) => items.map((item) => item.id).sort();

test("latest version from the beginning, now, a time, a partition key and feed ranges", async () => {
  await withDatabase(context.client, async (database) => {
    const container = await create(database, { throughput: 18000 });
    for (let i = 0; i < 6; i += 1) await container.items.upsert({ id: `i${i}`, pk: `p${i % 3}`, v: 1 });
    await container.items.upsert({ id: "i0", pk: "p0", v: 2 });
    await container.item("i1", "p1").delete();
    const all = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }));
    assert.deepEqual(ids(all), ["i0", "i2", "i3", "i4", "i5"]);
    assert.equal(all.find((d) => d.id === "i0").v, 2);
    assert.ok(all.every((d) => Number.isInteger(d._lsn)));

    const now = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Now() });
    assert.equal((await now.readNext()).statusCode, StatusCodes.NotModified);
    await container.items.upsert({ id: "late", pk: "p2" });
    assert.deepEqual(ids((await now.readNext()).result), ["late"]);

    const byKey = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning("p0") }));
    assert.deepEqual(ids(byKey), ["i0", "i3"]);

    const seen = [];
    for (const range of await container.getFeedRanges()) {
      seen.push(...(await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(range) }))));
    }
    assert.deepEqual(ids(seen), ["i0", "i2", "i3", "i4", "i5", "late"]);

    await new Promise((resolve) => setTimeout(resolve, 1100));
    const since = new Date(Date.now() - 50);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await container.items.upsert({ id: "after", pk: "p1" });
    const fromTime = await drain(container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Time(since) }));
    assert.deepEqual(ids(fromTime), ["after"]);
  });
});

test("a continuation taken by one iterator works in a later one", async () => {
  await withDatabase(context.client, async (database) => {
    const container = await create(database);
    await container.items.upsert({ id: "a", pk: "p" });
    const first = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() });
    const page = await first.readNext();
    assert.deepEqual(ids(page.result), ["a"]);
    await container.items.upsert({ id: "b", pk: "p" });
    const later = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(page.continuationToken) });
    assert.deepEqual(ids(await drain(later)), ["b"]);
  });
});

test("all versions and deletes, with TTL deletes, and the refusal from the beginning", async () => {
  await withDatabase(context.client, async (database) => {
    const container = await create(database, { defaultTtl: -1 });
    const iterator = container.items.getChangeFeedIterator({
      changeFeedStartFrom: ChangeFeedStartFrom.Now(),
      changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
    });
    assert.equal((await iterator.readNext()).statusCode, StatusCodes.NotModified);
    await container.items.create({ id: "a", pk: "p" });
    await container.items.upsert({ id: "a", pk: "p", v: 2 });
    await container.item("a", "p").delete();
    await container.items.create({ id: "short", pk: "p", ttl: 1 });
    const entries = [];
    const deadline = Date.now() + 4000;
    while (Date.now() < deadline && !entries.some((e) => e.metadata.timeToLiveExpired)) {
      const page = await iterator.readNext();
      if (page.result) entries.push(...page.result);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.deepEqual(
      entries.map((e) => e.metadata.operationType),
      ["create", "replace", "delete", "create", "delete"],
    );
    const expired = entries[4];
    assert.equal(expired.metadata.timeToLiveExpired, true);
    assert.equal(expired.metadata.id, "short");
    assert.equal(entries[2].metadata.timeToLiveExpired, false);

    const fromStart = container.items.getChangeFeedIterator({
      changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
      changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
    });
    await assert.rejects(fromStart.readNext(), (error) => {
      assert.equal(error.code, 400);
      assert.match(error.message, /You must read the change feed from within the retention period\./);
      return true;
    });
  });
});

test("getAsyncIterator follows the feed", async () => {
  await withDatabase(context.client, async (database) => {
    const container = await create(database);
    for (let i = 0; i < 3; i += 1) await container.items.upsert({ id: `i${i}`, pk: "p" });
    const seen = [];
    for await (const page of container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }).getAsyncIterator()) {
      if (page.statusCode === StatusCodes.NotModified) break;
      seen.push(...page.result);
    }
    assert.deepEqual(ids(seen), ["i0", "i1", "i2"]);
  });
});
