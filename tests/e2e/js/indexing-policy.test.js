// The indexing policy shapes queries through the JavaScript SDK as it does on the service
// (docs/indexing.md): an ORDER BY over several keys without a composite index is the service's 400
// across partitions (the SDK's own pipeline) and in one partition, and served with one; items where
// the sort value is undefined are left out under the default policy and kept under an explicit path.

import { test } from "node:test";
import assert from "node:assert/strict";
import { uniqueId, useServer } from "./lib/fixtures.js";

const NO_COMPOSITE = "The order by query does not have a corresponding composite index that it can be served from.";
const ITEMS = Array.from({ length: 9 }, (_, n) => ({ id: `i${n}`, pk: `p${n % 3}`, a: n % 2, b: n }));
const UNEVEN = [
  { id: "u1", pk: "p" },
  { id: "u2", pk: "p" },
  { id: "d1", pk: "p", x: 2 },
  { id: "d2", pk: "p", x: 1 },
];
let database;

const context = useServer({}, async ({ client }) => {
  ({ database } = await client.databases.create({ id: uniqueId("indexing") }));
});

// A container with `indexingPolicy` (the default when undefined) on five ranges, holding `items`.
async function make(indexingPolicy, items) {
  const { container } = await database.containers.create(
    { id: uniqueId("c"), partitionKey: { paths: ["/pk"] }, ...(indexingPolicy ? { indexingPolicy } : {}) },
    { offerThroughput: 30000 });
  for (const item of items) await container.items.create(item);
  return container;
}

const all = async (container, query, options = {}) => (await container.items.query(query, options).fetchAll()).resources;

async function refusal(action) {
  try {
    await action();
  } catch (error) {
    return error;
  }
  assert.fail("the query ran");
}

test("several ORDER BY keys need a composite index, across partitions and in one", async () => {
  assert.ok(context.server);
  const plain = await make(undefined, ITEMS);
  const text = "SELECT * FROM c ORDER BY c.a, c.b";
  for (const options of [{}, { partitionKey: "p0" }]) {
    const error = await refusal(() => all(plain, text, options));
    assert.equal(error.code, 400, JSON.stringify(options));
    assert.match(error.message, new RegExp(NO_COMPOSITE.replace(/\./g, "\\.")));
  }
  const indexed = await make({ compositeIndexes: [[{ path: "/a", order: "ascending" }, { path: "/b", order: "descending" }]] }, ITEMS);
  const expected = [...ITEMS].sort((x, y) => x.a - y.a || y.b - x.b).map((item) => item.b);
  assert.deepEqual(await all(indexed, "SELECT VALUE c.b FROM c ORDER BY c.a, c.b DESC", { maxItemCount: 2 }), expected);
  assert.deepEqual(await all(indexed, "SELECT VALUE c.b FROM c ORDER BY c.a DESC, c.b"), [...expected].reverse());
});

test("undefined sort values are left out by default and kept under an explicit path", async () => {
  const plain = await make(undefined, UNEVEN);
  assert.deepEqual(await all(plain, "SELECT VALUE c.id FROM c ORDER BY c.x"), ["d2", "d1"]);
  assert.deepEqual(await all(plain, "SELECT VALUE c.id FROM c ORDER BY c.x DESC", { partitionKey: "p" }), ["d1", "d2"]);
  const explicit = await make({ includedPaths: [{ path: "/*" }, { path: "/x/?" }] }, UNEVEN);
  assert.deepEqual(await all(explicit, "SELECT VALUE c.id FROM c ORDER BY c.x", { partitionKey: "p", maxItemCount: 1 }),
    ["u1", "u2", "d2", "d1"]);
  assert.deepEqual(await all(explicit, "SELECT VALUE c.id FROM c ORDER BY c.x DESC", { partitionKey: "p" }),
    ["d1", "d2", "u2", "u1"]);
});
