// Physical partitions through the JavaScript SDK: containers whose throughput gives them several
// partition key ranges, feed ranges, hierarchical prefix queries, per-range session tokens, and a
// split (a throughput increase) while a query is being paged.

import { test } from "node:test";
import assert from "node:assert/strict";
import { uniqueId, useServer, withDatabase } from "./lib/fixtures.js";

const context = useServer();
const ITEMS = 60;

async function fill(container, count = ITEMS) {
  for (let i = 0; i < count; i += 1) {
    await container.items.upsert({ id: `i${i}`, pk: `p${i}`, v: i % 7, n: i });
  }
}

const ids = (count, keep = () => true) =>
  Array.from({ length: count }, (_, i) => i)
    .filter(keep)
    .map((i) => `i${i}`)
    .sort();

async function create(database, throughput, partitionKey = { paths: ["/pk"] }) {
  const { container } = await database.containers.create({ id: uniqueId("c"), partitionKey, throughput });
  return container;
}

test("a container starts with the service's range count: one up to 10,000 RU/s, then one per 6,000", async () => {
  await withDatabase(context.client, async (database) => {
    assert.equal((await (await create(database, 10000)).getFeedRanges()).length, 1);
    assert.equal((await (await create(database, 25100)).getFeedRanges()).length, 5);
    assert.equal((await (await create(database, 30000)).getFeedRanges()).length, 5);
    const { container: auto } = await database.containers.create({
      id: uniqueId("c"),
      partitionKey: { paths: ["/pk"] },
      maxThroughput: 20000,
    });
    assert.equal((await auto.getFeedRanges()).length, 2);
  });
});

test("cross-partition queries page over every range", async () => {
  await withDatabase(context.client, async (database) => {
    const container = await create(database, 30000);
    await fill(container);
    for (const maxItemCount of [1, 7, 100]) {
      const iterator = container.items.query("SELECT c.id FROM c WHERE c.v > 2", { maxItemCount });
      const seen = [];
      while (iterator.hasMoreResults()) {
        const page = await iterator.fetchNext();
        assert.ok(page.resources.length <= maxItemCount);
        seen.push(...page.resources.map((row) => row.id));
      }
      assert.deepEqual(seen.sort(), ids(ITEMS, (i) => i % 7 > 2), `page size ${maxItemCount}`);
    }
  });
});

test("session tokens name the range that owns the item", async () => {
  await withDatabase(context.client, async (database) => {
    const container = await create(database, 18000);
    const used = new Set();
    for (let i = 0; i < 20; i += 1) {
      const { headers } = await container.items.create({ id: `i${i}`, pk: `p${i}` });
      const range = headers["x-ms-documentdb-partitionkeyrangeid"];
      assert.ok(headers["x-ms-session-token"].startsWith(`${range}:-1#`), headers["x-ms-session-token"]);
      used.add(range);
      const { resource } = await container.item(`i${i}`, `p${i}`).read();
      assert.equal(resource.id, `i${i}`);
    }
    assert.ok(used.size > 1, [...used].join());
  });
});

test("hierarchical prefix queries span ranges", async () => {
  await withDatabase(context.client, async (database) => {
    const container = await create(database, 40000, { paths: ["/tenant", "/user"], kind: "MultiHash", version: 2 });
    for (let i = 0; i < 40; i += 1) {
      await container.items.upsert({ id: `i${i}`, tenant: `t${i % 4}`, user: `u${i}` });
    }
    const { resources } = await container.items.query("SELECT * FROM c", { partitionKey: ["t1"] }).fetchAll();
    assert.deepEqual(resources.map((row) => row.id).sort(), ids(40, (i) => i % 4 === 1));
    const { resources: one } = await container.items.query("SELECT * FROM c", { partitionKey: ["t2", "u6"] }).fetchAll();
    assert.deepEqual(one.map((row) => row.id), ["i6"]);
  });
});

test("a split while paging loses and repeats nothing", async () => {
  await withDatabase(context.client, async (database) => {
    const container = await create(database, 12000);
    await fill(container);
    const iterator = container.items.query("SELECT * FROM c", { maxItemCount: 7 });
    const first = await iterator.fetchNext();
    assert.equal(first.resources.length, 7);
    const { resource: offer } = await container.readOffer();
    offer.content.offerThroughput = 50000;
    await context.client.offer(offer.id).replace(offer);
    assert.equal((await container.getFeedRanges()).length, 5);
    const seen = first.resources.map((row) => row.id);
    while (iterator.hasMoreResults()) {
      seen.push(...(await iterator.fetchNext()).resources.map((row) => row.id));
    }
    assert.deepEqual(seen.sort(), ids(ITEMS));
  });
});
