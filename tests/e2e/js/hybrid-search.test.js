// Full-text scoring and hybrid search through the JavaScript SDK's own hybrid pipeline
// (global statistics on every range, component queries with the placeholders filled, ranks
// fused by the SDK) on a container of one range and one of two, against BM25 and reciprocal
// rank fusion computed here: FullTextScore, RRF with and without weights, parameters, a
// filter, TOP and OFFSET/LIMIT, a partition key, a refusal, and expired items.
//
// Ties may come in any order: each check compares the returned rows' reference scores with
// the best reference scores, in order.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createContainer, uniqueId, useServer } from "./lib/fixtures.js";

const K1 = 1.2;
const B = 0.75;
const WORDS = ["fox", "dog", "cat", "bird", "fish", "tree", "moon", "star", "rain", "sun"];

// A small deterministic generator, so every run has the same texts and vectors.
let seed = 31;
const next = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const items = Array.from({ length: 36 }, (_, n) => ({
  id: `i${n}`,
  pk: `p${n % 3}`,
  text: Array.from({ length: 3 + Math.floor(next() * 9) }, () => WORDS[Math.floor(next() * WORDS.length)]).join(" "),
  v: [next() * 2 - 1, next() * 2 - 1, next() * 2 - 1],
}));
const containers = {};

useServer({}, async (context) => {
  const { database } = await context.client.databases.create({ id: uniqueId("db") });
  for (const [name, throughput] of [["one", 400], ["two", 12000]]) {
    const container = await createContainer(database, `texts-${name}`, {
      throughput,
      fullTextPolicy: { defaultLanguage: "en-US", fullTextPaths: [{ path: "/text", language: "en-US" }] },
      indexingPolicy: { fullTextIndexes: [{ path: "/text" }] },
      vectorEmbeddingPolicy: {
        vectorEmbeddings: [{ path: "/v", dataType: "float32", dimensions: 3, distanceFunction: "cosine" }],
      },
    });
    for (const item of items) await container.items.create(item);
    containers[name] = container;
  }
  containers.ttl = await createContainer(database, "ttl", { throughput: 12000, defaultTtl: -1 });
});

const words = (text) => text.toLowerCase().split(/\s+/).filter(Boolean);

function bm25(scope, item, terms) {
  const average = scope.reduce((sum, other) => sum + words(other.text).length, 0) / scope.length;
  const own = words(item.text);
  let score = 0;
  for (const term of terms) {
    const containing = scope.filter((other) => words(other.text).includes(term)).length;
    const frequency = own.filter((word) => word === term).length;
    if (frequency === 0) continue;
    const rarity = Math.log(1 + (scope.length - containing + 0.5) / (containing + 0.5));
    score += (rarity * frequency * (K1 + 1)) / (frequency + K1 * (1 - B + (B * own.length) / average));
  }
  return score;
}

const cosine = (a, b) => {
  const dot = a.reduce((sum, x, i) => sum + x * b[i], 0);
  const norm = (v) => Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));
  return dot / (norm(a) * norm(b));
};

function denseRanks(scores, largerFirst) {
  const distinct = [...new Set(scores)].sort((a, b) => (largerFirst ? b - a : a - b));
  return scores.map((score) => distinct.indexOf(score) + 1);
}

// Each candidate's fused score; a negative weight ranks its component the other way round.
function rrf(candidates, components, weights = components.map(() => 1)) {
  const fused = candidates.map(() => 0);
  components.forEach(([scores, largerFirst], component) => {
    const weight = weights[component];
    denseRanks(scores, weight >= 0 ? largerFirst : !largerFirst).forEach((rank, index) => {
      fused[index] += Math.abs(weight) / (60 + rank);
    });
  });
  return new Map(candidates.map((item, index) => [item.id, fused[index]]));
}

function assertBest(rows, reference, skip, take) {
  const best = [...reference.values()].sort((a, b) => b - a).slice(skip, skip + take);
  const got = rows.map((row) => reference.get(row.id));
  assert.equal(got.length, best.length);
  got.forEach((score, index) => assert.ok(Math.abs(score - best[index]) < 1e-9, `${index}: ${got} vs ${best}`));
}

const run = async (container, query, parameters = [], options = {}) =>
  (await container.items.query({ query, parameters }, options).fetchAll()).resources;

const foxAndVector = (scope, candidates, weights) =>
  rrf(
    candidates,
    [
      [candidates.map((item) => bm25(scope, item, ["fox"])), true],
      [candidates.map((item) => cosine(item.v, [1, 0, 0])), true],
    ],
    weights,
  );

for (const name of ["one", "two"]) {
  test(`${name} range(s): FullTextScore ranks by BM25 over the container, with a filter and OFFSET/LIMIT`, async () => {
    const container = containers[name];
    const { resources: ranges } = await container.readPartitionKeyRanges().fetchAll();
    assert.equal(ranges.length, name === "one" ? 1 : 2);
    const reference = new Map(items.map((item) => [item.id, bm25(items, item, ["fox", "moon"])]));
    const rows = await run(container, "SELECT TOP 6 c.id FROM c ORDER BY RANK FullTextScore(c.text, 'fox', 'moon')");
    assertBest(rows, reference, 0, 6);
    const wanted = items.filter((item) => !words(item.text).includes("tree"));
    const filtered = new Map(wanted.map((item) => [item.id, bm25(items, item, ["dog"])]));
    const page = await run(
      container,
      "SELECT c.id FROM c WHERE NOT FullTextContains(c.text, 'tree') ORDER BY RANK FullTextScore(c.text, 'dog') OFFSET 2 LIMIT 5",
    );
    assertBest(page, filtered, 2, 5);
  });

  test(`${name} range(s): RRF of a full-text and a vector score, with weights and parameters`, async () => {
    const container = containers[name];
    const plain = await run(
      container,
      "SELECT TOP 10 c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), VectorDistance(c.v, [1, 0, 0]))",
    );
    assertBest(plain, foxAndVector(items, items), 0, 10);
    const weighted = await run(
      container,
      "SELECT c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, @term), VectorDistance(c.v, @vector), @weights) OFFSET 1 LIMIT 8",
      [
        { name: "@term", value: "fox" },
        { name: "@vector", value: [1, 0, 0] },
        { name: "@weights", value: [2, -0.5] },
      ],
    );
    assertBest(weighted, foxAndVector(items, items, [2, -0.5]), 1, 8);
  });
}

test("a partition key ranks within its items", async () => {
  const mine = items.filter((item) => item.pk === "p2");
  const rows = await run(
    containers.two,
    "SELECT TOP 4 c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), VectorDistance(c.v, [1, 0, 0]))",
    [],
    { partitionKey: "p2" },
  );
  assertBest(rows, foxAndVector(mine, mine), 0, 4);
});

test("FullTextScore outside ORDER BY RANK is the service's 400", async () => {
  await assert.rejects(
    run(containers.two, "SELECT TOP 3 c.id, FullTextScore(c.text, 'fox') AS s FROM c ORDER BY RANK FullTextScore(c.text, 'fox')"),
    (error) =>
      error.code === 400 && error.message.includes("The FullTextScore function is only allowed in the ORDER BY RANK clause."),
  );
});

test("an expired item is never a result", async () => {
  const container = containers.ttl;
  await container.items.create({ id: "fleeting", pk: "a", text: "fox fox fox", v: [1, 0], ttl: 1 });
  await container.items.create({ id: "lasting", pk: "b", text: "a fox in the tree", v: [0, 1] });
  await container.items.create({ id: "other", pk: "c", text: "no such animal", v: [-1, 0] });
  const query = "SELECT TOP 3 c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), VectorDistance(c.v, [1, 0]))";
  assert.deepEqual((await run(container, query)).map((row) => row.id), ["fleeting", "lasting", "other"]);
  await new Promise((resolve) => setTimeout(resolve, 1200));
  assert.deepEqual((await run(container, query)).map((row) => row.id), ["lasting", "other"]);
});
