// A few queries through the SDK: parameters, partition scope, COUNT, ORDER BY and paging. The
// query language itself is tested in Rust; these exercise the SDK's query pipeline (query plans,
// cross-partition fan-out, continuation tokens) against the server.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createContainer, statusOf, uniqueId, useServer } from "./lib/fixtures.js";

const GROUPS = ["red", "green", "blue"];
let container;

// 30 items over 3 partitions: n = 0..29, colour cycles through GROUPS, pk = "p0".."p2".
useServer({}, async (context) => {
  const { database } = await context.client.databases.create({ id: uniqueId("db") });
  container = await createContainer(database, "filled");
  for (let n = 0; n < 30; n += 1) {
    await container.items.create({ id: `i${String(n).padStart(2, "0")}`, pk: `p${n % 3}`, n, colour: GROUPS[n % 3], even: n % 2 === 0 });
  }
});

const sorted = (numbers) => [...numbers].sort((a, b) => a - b);
const range = (from, to, step = 1) => Array.from({ length: Math.ceil((to - from) / step) }, (_, i) => from + i * step);

test("parameterised filter across partitions", async () => {
  const { resources } = await container.items
    .query({
      query: "SELECT * FROM c WHERE c.even = @even AND c.n < @below",
      parameters: [{ name: "@even", value: true }, { name: "@below", value: 10 }],
    })
    .fetchAll();
  assert.deepEqual(sorted(resources.map((row) => row.n)), [0, 2, 4, 6, 8]);
  assert.ok(resources.every((row) => "_rid" in row));
});

test("parameterised filter in one partition", async () => {
  const query = { query: "SELECT VALUE c.n FROM c WHERE c.colour = @colour", parameters: [{ name: "@colour", value: "red" }] };
  const { resources } = await container.items.query(query, { partitionKey: "p0" }).fetchAll();
  assert.deepEqual(sorted(resources), range(0, 30, 3));
  const { resources: none } = await container.items.query(query, { partitionKey: "p1" }).fetchAll();
  assert.deepEqual(none, []);
});

test("SELECT VALUE COUNT(1)", async () => {
  assert.deepEqual((await container.items.query("SELECT VALUE COUNT(1) FROM c").fetchAll()).resources, [30]);
  assert.deepEqual((await container.items.query("SELECT VALUE COUNT(1) FROM c", { partitionKey: "p2" }).fetchAll()).resources, [10]);
  assert.deepEqual((await container.items.query("SELECT VALUE COUNT(1) FROM c WHERE c.n >= 25").fetchAll()).resources, [5]);
});

test("MakeList, MakeSet and CountIf across three ranges, merged by the SDK's pipeline", async () => {
  const { database } = await container.database.client.databases.createIfNotExists({ id: uniqueId("db") });
  // 30,000 RU/s lays the container out over three ranges, so each range answers a partial.
  const spread = await createContainer(database, "spread", { throughput: 18000 });
  const { resources: ranges } = await spread.readPartitionKeyRanges().fetchAll();
  assert.equal(ranges.length, 3);
  for (let n = 0; n < 30; n += 1) {
    await spread.items.create({ id: `i${n}`, pk: `p${n}`, n, colour: GROUPS[n % 3], even: n % 2 === 0 });
  }
  const values = async (query) => (await spread.items.query(query).fetchAll()).resources;
  const [list] = await values("SELECT VALUE MakeList(c.n) FROM c");
  assert.deepEqual(sorted(list), range(0, 30));
  const [set] = await values("SELECT VALUE MAKESET(c.colour) FROM c");
  assert.deepEqual([...set].sort(), [...GROUPS].sort());
  assert.deepEqual(await values("SELECT VALUE COUNTIF(c.even AND c.n < 10) FROM c"), [5]);
  const groups = await values("SELECT c.colour, COUNTIF(c.even) AS evens, MAKESET(c.even) AS kinds FROM c GROUP BY c.colour");
  assert.equal(groups.length, 3);
  for (const group of groups) {
    assert.equal(group.evens, 5, group.colour);
    assert.deepEqual([...group.kinds].sort(), [false, true], group.colour);
  }
});

test("ORDER BY ascending, descending and in one partition", async () => {
  const { resources: ascending } = await container.items.query("SELECT c.n FROM c WHERE c.n < 12 ORDER BY c.n").fetchAll();
  assert.deepEqual(ascending.map((row) => row.n), range(0, 12));
  const { resources: descending } = await container.items.query("SELECT VALUE c.n FROM c ORDER BY c.n DESC").fetchAll();
  assert.deepEqual(descending, range(0, 30).reverse());
  const { resources: scoped } = await container.items.query("SELECT VALUE c.id FROM c ORDER BY c.id DESC", { partitionKey: "p1" }).fetchAll();
  assert.deepEqual(scoped, range(1, 30, 3).reverse().map((n) => `i${String(n).padStart(2, "0")}`));
});

test("paging in one partition resumes from a continuation token", async () => {
  const query = "SELECT * FROM c ORDER BY c.n";
  const first = await container.items.query(query, { partitionKey: "p0", maxItemCount: 4 }).fetchNext();
  assert.deepEqual(first.resources.map((row) => row.n), [0, 3, 6, 9]);
  assert.ok(first.continuationToken, "a continuation token after the first page");
  assert.equal(first.hasMoreResults, true);

  const resumed = container.items.query(query, { partitionKey: "p0", maxItemCount: 4, continuationToken: first.continuationToken });
  const rest = [];
  while (resumed.hasMoreResults()) {
    const page = await resumed.fetchNext();
    assert.ok(page.resources.length <= 4);
    rest.push(...page.resources.map((row) => row.n));
  }
  assert.deepEqual(rest, [12, 15, 18, 21, 24, 27]);
});

test("paging across partitions visits every item once", async () => {
  const query = { query: "SELECT * FROM c WHERE c.n >= @from", parameters: [{ name: "@from", value: 5 }] };
  const iterator = container.items.query(query, { maxItemCount: 6 });
  const seen = [];
  while (iterator.hasMoreResults()) {
    const page = await iterator.fetchNext();
    assert.ok(page.resources.length <= 6, `page of ${page.resources.length}`);
    seen.push(...page.resources.map((row) => row.n));
  }
  assert.deepEqual(sorted(seen), range(5, 30));

  const first = await container.items.query(query, { maxItemCount: 6 }).fetchNext();
  assert.ok(first.continuationToken, "a continuation token after the first page");
  const resumed = container.items.query(query, { maxItemCount: 6, continuationToken: first.continuationToken });
  const rest = [];
  while (resumed.hasMoreResults()) rest.push(...(await resumed.fetchNext()).resources.map((row) => row.n));
  assert.deepEqual(sorted([...first.resources.map((row) => row.n), ...rest]), range(5, 30));
});

test("ORDER BY across partitions pages in order and resumes from a continuation token", async () => {
  const query = "SELECT c.id, c.n FROM c WHERE c.n >= 3 ORDER BY c.n DESC";
  const iterator = container.items.query(query, { maxItemCount: 5 });
  const seen = [];
  while (iterator.hasMoreResults()) {
    const page = await iterator.fetchNext();
    assert.ok(page.resources.length <= 5, `page of ${page.resources.length}`);
    seen.push(...page.resources.map((row) => row.n));
  }
  assert.deepEqual(seen, range(3, 30).reverse());

  // Across partitions the SDK merges the ranges itself and gives no token outside its
  // query-control mode; resuming is checked within one partition, which the server pages.
  const scoped = { maxItemCount: 2, partitionKey: "p0" };
  const whole = (await container.items.query(query, { partitionKey: "p0" }).fetchAll()).resources;
  const first = await container.items.query(query, scoped).fetchNext();
  assert.ok(first.continuationToken, "a continuation token after the first page");
  const resumed = container.items.query(query, { ...scoped, continuationToken: first.continuationToken });
  const rest = [];
  while (resumed.hasMoreResults()) rest.push(...(await resumed.fetchNext()).resources.map((row) => row.n));
  assert.deepEqual([...first.resources.map((row) => row.n), ...rest], whole.map((row) => row.n));
});

test("a syntax error is 400", async () => {
  assert.equal(await statusOf(() => container.items.query("SELEKT * FROM c").fetchAll()), 400);
});

// In its query-control mode the SDK hands out a token of its own for a query across ranges and,
// resuming an ORDER BY query from it, sends each range's token with the plan's range query whose
// filter placeholder now holds a comparison with the last values it returned
// (`c.n <= 17` instead of `true`). The server honours its token under that text, and the pages
// add up to the whole result, in order, once each.
test("ORDER BY resumes from the SDK's query-control token with its rewritten filter", async () => {
  const queries = [
    "SELECT * FROM c ORDER BY c.n",
    "SELECT c.id, c.n FROM c WHERE c.n >= 3 ORDER BY c.n DESC",
    "SELECT VALUE c.n FROM c WHERE true ORDER BY c.n",
    // An OFFSET smaller than a page: a first page that OFFSET empties gets no token from the
    // SDK, which then ends the query.
    "SELECT c.n FROM c ORDER BY c.n OFFSET 3 LIMIT 19",
    "SELECT TOP 13 c.n FROM c WHERE c.even OR c.n > 20 ORDER BY c.n DESC",
  ];
  for (const query of queries) {
    const whole = (await container.items.query(query).fetchAll()).resources;
    assert.ok(whole.length > 10, query);
    let continuationToken;
    let done = false;
    const rows = [];
    for (let pages = 0; pages < 100 && !done; pages += 1) {
      // A new iterator for every page, as a client that keeps only the token between requests.
      const page = await container.items
        .query(query, { maxItemCount: 4, enableQueryControl: true, continuationToken })
        .fetchNext();
      assert.ok(page.resources.length <= 4, `${query}: page of ${page.resources.length}`);
      rows.push(...page.resources);
      continuationToken = page.continuationToken;
      // The SDK may hand out a token after the last page of an OFFSET/LIMIT query; it says
      // whether more results follow.
      done = !continuationToken || !page.hasMoreResults;
    }
    assert.ok(done, `${query}: too many pages`);
    assert.deepEqual(rows, whole, query);
  }
});
