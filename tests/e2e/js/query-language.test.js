// The query language through the official JavaScript SDK: the clauses apps generate, answered by
// the server as the service answers them, across partitions and across pages.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createContainer, statusOf, uniqueId, useServer } from "./lib/fixtures.js";

const PEOPLE = [
  { id: "1", pk: "a", name: "Ada", city: "London", age: 36, tags: ["math", "code"] },
  { id: "2", pk: "a", name: "Alan", city: "London", age: 41, tags: ["code"] },
  { id: "3", pk: "b", name: "Grace", city: "New York", age: 85, tags: ["navy", "code"] },
  { id: "4", pk: "b", name: "Edsger", city: "Austin", age: 72, tags: [] },
  { id: "5", pk: "c", name: "Barbara", city: "New York", age: 60, tags: ["code"] },
  { id: "6", pk: "c", name: "Donald", city: "Stanford", age: 84 },
];
let container;

useServer({}, async (context) => {
  const { database } = await context.client.databases.create({ id: uniqueId("db") });
  // ORDER BY c.city ASC, c.age DESC needs a composite index, as on the service (docs/indexing.md).
  container = await createContainer(database, "people", {
    indexingPolicy: { compositeIndexes: [[{ path: "/city", order: "ascending" }, { path: "/age", order: "descending" }]] },
  });
  for (const person of PEOPLE) {
    await container.items.create(person);
  }
});

const all = async (query, options = {}) => (await container.items.query(query, options).fetchAll()).resources;

test("ORDER BY several fields", async () => {
  const rows = await all("SELECT c.name FROM c ORDER BY c.city ASC, c.age DESC");
  assert.deepEqual(rows.map((r) => r.name), ["Edsger", "Alan", "Ada", "Grace", "Barbara", "Donald"]);
});

test("OFFSET LIMIT and TOP", async () => {
  assert.deepEqual(await all("SELECT VALUE c.name FROM c ORDER BY c.age OFFSET 1 LIMIT 3"), ["Alan", "Barbara", "Edsger"]);
  assert.deepEqual(await all("SELECT TOP 2 VALUE c.age FROM c ORDER BY c.age DESC"), [85, 84]);
});

test("DISTINCT", async () => {
  assert.deepEqual((await all("SELECT DISTINCT VALUE c.city FROM c")).sort(), ["Austin", "London", "New York", "Stanford"]);
});

test("GROUP BY with aggregates", async () => {
  const rows = await all("SELECT c.city, COUNT(1) AS people, MAX(c.age) AS oldest FROM c GROUP BY c.city");
  const summary = rows.map((r) => [r.city, r.people, r.oldest]).sort();
  assert.deepEqual(summary, [["Austin", 1, 72], ["London", 2, 41], ["New York", 2, 85], ["Stanford", 1, 84]]);
});

test("aggregates with VALUE, with aliases, and in one partition", async () => {
  assert.deepEqual(await all("SELECT VALUE COUNT(1) FROM c"), [6]);
  assert.deepEqual(await all("SELECT VALUE SUM(c.age) FROM c"), [378]);
  assert.deepEqual(await all("SELECT MIN(c.age) AS youngest, MAX(c.age) AS oldest FROM c"), [{ youngest: 36, oldest: 85 }]);
  assert.deepEqual(await all("SELECT VALUE COUNT(1) FROM c", { partitionKey: "b" }), [2]);
});

test("JOIN, parameters and built-in functions", async () => {
  const rows = await all({ query: "SELECT c.name, t AS tag FROM c JOIN t IN c.tags WHERE t = @tag", parameters: [{ name: "@tag", value: "code" }] });
  assert.deepEqual(rows.map((r) => r.name).sort(), ["Ada", "Alan", "Barbara", "Grace"]);
  assert.deepEqual(await all("SELECT VALUE UPPER(c.name) FROM c WHERE STARTSWITH(c.name, 'a', true) AND ARRAY_CONTAINS(c.tags, 'math')"), ["ADA"]);
});

test("paging an ORDER BY across partitions with continuation tokens", async () => {
  // Across partitions the SDK's pipeline pages the merge (no token outside query-control mode).
  const query = "SELECT c.id, c.age FROM c ORDER BY c.age";
  const iterator = container.items.query(query, { maxItemCount: 4 });
  const seen = [];
  while (iterator.hasMoreResults()) {
    const page = await iterator.fetchNext();
    assert.ok(page.resources.length <= 4);
    seen.push(...page.resources);
  }
  assert.deepEqual(seen.map((r) => r.age), PEOPLE.map((p) => p.age).sort((a, b) => a - b));
  // Within one partition the server pages it and resumes from its token.
  const first = await container.items.query(query, { maxItemCount: 1, partitionKey: "a" }).fetchNext();
  assert.ok(first.continuationToken);
  const resumed = container.items.query(query, { maxItemCount: 1, partitionKey: "a", continuationToken: first.continuationToken });
  const rest = [];
  while (resumed.hasMoreResults()) rest.push(...(await resumed.fetchNext()).resources);
  const inA = PEOPLE.filter((p) => p.pk === "a").map((p) => p.age).sort((a, b) => a - b);
  assert.deepEqual([...first.resources, ...rest].map((r) => r.age), inA);
});

test("invalid and unsupported queries are 400", async () => {
  for (const query of ["SELECT * FROM c WHERE", "SELECT * FROM c WHERE udf.f(c.a)"]) {
    assert.equal(await statusOf(() => all(query)), 400, query);
  }
});
