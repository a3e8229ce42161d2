// Vector search through the JavaScript SDK's own pipeline (non-streaming ORDER BY): scores
// against a reference computed here, the closest first by the policy's or the query's
// distance function, across two ranges, with TOP, OFFSET/LIMIT and DISTINCT.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createContainer, uniqueId, useServer } from "./lib/fixtures.js";

const items = Array.from({ length: 40 }, (_, n) => ({
  id: `i${n}`,
  pk: `p${n % 5}`,
  vector1: [Math.sin(n + 1), Math.cos(3 * n + 1), Math.sin(7 * n + 2)],
}));
const probe = [0.3, -0.2, 0.9];
let container;

useServer({}, async (context) => {
  const { database } = await context.client.databases.create({ id: uniqueId("db") });
  container = await createContainer(database, "vectors", {
    throughput: 12000,
    vectorEmbeddingPolicy: {
      vectorEmbeddings: [{ path: "/vector1", dataType: "float32", dimensions: 3, distanceFunction: "euclidean" }],
    },
    indexingPolicy: { vectorIndexes: [{ path: "/vector1", type: "flat" }] },
  });
  for (const item of items) await container.items.create(item);
});

function score(fn, a, b) {
  const dot = a.reduce((sum, x, i) => sum + x * b[i], 0);
  if (fn === "dotproduct") return dot;
  if (fn === "euclidean") return Math.sqrt(a.reduce((sum, x, i) => sum + (x - b[i]) ** 2, 0));
  const norm = (v) => Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));
  return dot / (norm(a) * norm(b));
}

const closest = (fn, count) =>
  [...items]
    .sort((a, b) => (score(fn, a.vector1, probe) - score(fn, b.vector1, probe)) * (fn === "euclidean" ? 1 : -1))
    .slice(0, count)
    .map((item) => item.id);

const run = async (query) => (await container.items.query({ query, parameters: [{ name: "@v", value: probe }] }).fetchAll()).resources;

test("TOP n by the container's distance function, across two ranges", async () => {
  const { resources: ranges } = await container.readPartitionKeyRanges().fetchAll();
  assert.equal(ranges.length, 2);
  const rows = await run("SELECT TOP 6 c.id, VectorDistance(c.vector1, @v) AS score FROM c ORDER BY VectorDistance(c.vector1, @v)");
  assert.deepEqual(rows.map((row) => row.id), closest("euclidean", 6));
  for (const row of rows) {
    const item = items.find((candidate) => candidate.id === row.id);
    assert.ok(Math.abs(row.score - score("euclidean", item.vector1, probe)) < 1e-9);
  }
});

test("OFFSET/LIMIT and DISTINCT with the query's own distance function", async () => {
  for (const fn of ["cosine", "dotproduct"]) {
    const call = `VectorDistance(c.vector1, @v, false, {distanceFunction: '${fn}'})`;
    const limited = await run(`SELECT c.id FROM c ORDER BY ${call} OFFSET 0 LIMIT 5`);
    assert.deepEqual(limited.map((row) => row.id), closest(fn, 5), fn);
    const distinct = await run(`SELECT DISTINCT TOP 4 c.id FROM c ORDER BY ${call}`);
    assert.deepEqual(distinct.map((row) => row.id), closest(fn, 4), fn);
  }
});
