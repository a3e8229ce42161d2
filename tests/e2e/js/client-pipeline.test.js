// Queries across partitions through the SDK's own pipeline (the query plan, the rewritten query
// per partition key range, the client-side merge) on containers with one range (400 RU/s) and
// five (50,000 RU/s), at page sizes 1, 3 and 100.

import { test } from "node:test";
import assert from "node:assert/strict";
import { uniqueId, useServer } from "./lib/fixtures.js";

const MIXED = [null, false, 2, "2", [2], { a: 2, b: 1 }, { b: 1, a: 2 }, "x", 3.5];
const ITEMS = Array.from({ length: 30 }, (_, n) => ({
  id: `i${String(n).padStart(2, "0")}`, pk: `p${n % 7}`, n, g: "abc"[n % 3], m: MIXED[n % MIXED.length],
}));
const containers = {};
const context = useServer({}, async ({ client }) => {
  const { database } = await client.databases.create({ id: uniqueId("pipeline") });
  for (const throughput of [400, 50000]) {
    // ORDER BY c.g ASC, c.n DESC needs a composite index, as on the service (docs/indexing.md).
    const indexingPolicy = { compositeIndexes: [[{ path: "/g", order: "ascending" }, { path: "/n", order: "descending" }]] };
    const { container } = await database.containers.create(
      { id: uniqueId("c"), partitionKey: { paths: ["/pk"] }, indexingPolicy }, { offerThroughput: throughput });
    for (const item of ITEMS) await container.items.create(item);
    containers[throughput] = container;
  }
});

async function pages(container, query, size) {
  const iterator = container.items.query(query, { maxItemCount: size });
  const rows = [];
  while (iterator.hasMoreResults()) {
    // Aggregating stages answer intermediate fetches with no resources.
    const resources = (await iterator.fetchNext()).resources ?? [];
    assert.ok(resources.length <= size, `a page of ${resources.length} for ${size}`);
    rows.push(...resources);
  }
  return rows;
}

const canonical = (rows) => rows.map((row) => JSON.stringify(row, Object.keys(row ?? {}).sort())).sort();
const ns = ITEMS.map((item) => item.n);

for (const throughput of [400, 50000]) {
  for (const size of [1, 3, 100]) {
    test(`ORDER BY, aggregates, GROUP BY, DISTINCT, TOP, OFFSET LIMIT at ${throughput} RU/s, pages of ${size}`, async () => {
      assert.ok(context.server);
      const c = containers[throughput];
      assert.deepEqual((await pages(c, "SELECT c.n FROM c ORDER BY c.n DESC", size)).map((r) => r.n), [...ns].reverse());
      const two = await pages(c, "SELECT c.g, c.n FROM c ORDER BY c.g ASC, c.n DESC", size);
      const expectedTwo = ITEMS.map((i) => [i.g, i.n]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : b[1] - a[1]));
      assert.deepEqual(two.map((r) => [r.g, r.n]), expectedTwo);
      assert.deepEqual(await pages(c, "SELECT VALUE COUNT(1) FROM c", size), [30]);
      assert.deepEqual(await pages(c, "SELECT VALUE SUM(c.n) FROM c", size), [435]);
      assert.deepEqual(await pages(c, "SELECT VALUE MIN(c.n) FROM c", size), [0]);
      assert.deepEqual(await pages(c, "SELECT VALUE MAX(c.n) FROM c", size), [29]);
      assert.deepEqual(await pages(c, "SELECT VALUE AVG(c.n) FROM c", size), [14.5]);
      assert.deepEqual(await pages(c, "SELECT VALUE COUNT(1) FROM c WHERE false", size), [0]);
      // The JavaScript SDK's aggregators leave out an aggregate over nothing.
      assert.deepEqual(await pages(c, "SELECT VALUE MAX(c.n) FROM c WHERE false", size), []);
      assert.deepEqual(await pages(c, "SELECT VALUE COUNT(1) FROM c ORDER BY c.n", size), [30]);
      // Non-VALUE aggregates and GROUP BY: this SDK declares them, so its pipeline runs them.
      assert.deepEqual(await pages(c, "SELECT COUNT(1) AS n, MAX(c.n) AS hi FROM c", size), [{ n: 30, hi: 29 }]);
      const groups = await pages(c, "SELECT c.g, COUNT(1) AS n, MIN(c.n) AS lo FROM c GROUP BY c.g", size);
      assert.deepEqual(canonical(groups), canonical([{ g: "a", n: 10, lo: 0 }, { g: "b", n: 10, lo: 1 }, { g: "c", n: 10, lo: 2 }]));
      assert.deepEqual(await pages(c, "SELECT DISTINCT VALUE c.g FROM c ORDER BY c.g", size), ["a", "b", "c"]);
      // Mixed types, and objects with their members in another order. The SDK's DISTINCT stage
      // leaves out falsy values (null, false), so they are filtered out here.
      const mixed = await pages(c, "SELECT DISTINCT VALUE c.m FROM c WHERE NOT IS_NULL(c.m) AND NOT IS_BOOL(c.m)", size);
      assert.deepEqual(canonical(mixed), canonical([2, "2", [2], { a: 2, b: 1 }, "x", 3.5]));
      assert.deepEqual(await pages(c, "SELECT TOP 4 VALUE c.n FROM c ORDER BY c.n DESC", size), [29, 28, 27, 26]);
      assert.equal((await pages(c, "SELECT TOP 5 * FROM c", size)).length, 5);
      assert.deepEqual(await pages(c, "SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 5 LIMIT 7", size), [5, 6, 7, 8, 9, 10, 11]);
      assert.equal((await pages(c, "SELECT VALUE c.n FROM c OFFSET 2 LIMIT 5", size)).length, 5);
    });
  }
}
