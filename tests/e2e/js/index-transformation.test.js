// An indexing-policy change on a live container through the JavaScript SDK (docs/indexing.md):
// the replace answers at once, the index is rebuilt in the background, the progress header on a
// container read (populateQuotaInfo) climbs to 100, queries answer the same rows throughout, and
// the composite index the new policy adds serves its ORDER BY once the rebuild is done.

import { test } from "node:test";
import assert from "node:assert/strict";
import { uniqueId, useServer } from "./lib/fixtures.js";

const PROGRESS = "x-ms-documentdb-collection-index-transformation-progress";
const ITEMS = Array.from({ length: 300 }, (_, n) => ({ id: `i${String(n).padStart(4, "0")}`, pk: `p${n % 7}`, n, name: `name-${n % 13}` }));
const NARROW = {
  indexingMode: "consistent",
  automatic: true,
  includedPaths: [{ path: "/n/?" }],
  excludedPaths: [{ path: "/*" }],
  compositeIndexes: [[{ path: "/n", order: "ascending" }, { path: "/name", order: "descending" }]],
};
let database;

const context = useServer({}, async ({ client }) => {
  ({ database } = await client.databases.create({ id: uniqueId("transform") }));
});

const progress = async (container) => Number((await container.read({ populateQuotaInfo: true })).headers[PROGRESS]);

const smallIds = async (container) =>
  (await container.items.query("SELECT VALUE c.id FROM c WHERE c.n < 30").fetchAll()).resources.sort();

test("a policy change reports progress until done while queries stay correct", async () => {
  assert.ok(context.server);
  const { container } = await database.containers.create({ id: uniqueId("c"), partitionKey: { paths: ["/pk"] } });
  for (const item of ITEMS) await container.items.create(item);
  const expected = ITEMS.filter((item) => item.n < 30).map((item) => item.id).sort();
  assert.equal(await progress(container), 100, "no rebuild runs before a change");
  await container.replace({ id: container.id, partitionKey: { paths: ["/pk"] }, indexingPolicy: NARROW });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const seen = await progress(container);
    assert.ok(seen >= 0 && seen <= 100, String(seen));
    assert.deepEqual(await smallIds(container), expected, "queries stay correct during the rebuild");
    if (seen === 100) break;
    assert.ok(Date.now() < deadline, "the rebuild ended within a minute");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const { resource } = await container.read();
  assert.deepEqual(resource.indexingPolicy.compositeIndexes, NARROW.compositeIndexes);
  const ordered = (await container.items.query("SELECT VALUE c.n FROM c ORDER BY c.n, c.name DESC").fetchAll()).resources;
  assert.deepEqual(ordered, ITEMS.map((item) => item.n));
});
