// npm install lethedb @azure/cosmos; node --test
const { test, before, after } = require("node:test");
const assert = require("node:assert");
const { CosmosClient } = require("@azure/cosmos");
const { startLethe } = require("lethedb");

let lethe;
before(async () => {
  lethe = await startLethe(); // a free port, in memory: { endpoint, key, port, stop() }
});
after(() => lethe.stop());

test("orders", async () => {
  const client = new CosmosClient({ endpoint: lethe.endpoint, key: lethe.key });
  const { database } = await client.databases.createIfNotExists({ id: "shop" });
  const { container } = await database.containers.createIfNotExists({
    id: "orders",
    partitionKey: { paths: ["/customer"] },
  });
  await container.items.upsert({ id: "o1", customer: "ada", total: 42 });
  const { resource } = await container.item("o1", "ada").read();
  assert.equal(resource.total, 42);
});
