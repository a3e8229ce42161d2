// The database account: its locations come from `--advertise-url` (default: the bound address),
// never from the Host header, and the SDK sends every later request there.

import { test } from "node:test";
import assert from "node:assert/strict";
import { CosmosClient } from "@azure/cosmos";
import { Server } from "./lib/server.js";
import { uniqueId, useServer } from "./lib/fixtures.js";

const context = useServer({ extraArgs: ["--advertise-url", "http://localhost:{port}"] });

function endpoints(account) {
  return [...account.writableLocations, ...account.readableLocations].map((l) => l.databaseAccountEndpoint);
}

test("the account advertises --advertise-url and the SDK routes requests there", async () => {
  const want = `http://localhost:${context.server.port}/`;
  const { resource } = await context.client.getDatabaseAccount();
  assert.deepEqual(endpoints(resource), [want, want]);
  const { database } = await context.client.databases.create({ id: uniqueId("db") });
  const { container } = await database.containers.create({ id: "c", partitionKey: "/pk" });
  await container.items.create({ id: "a", pk: "p" });
  assert.equal((await container.item("a", "p").read()).resource.id, "a");
  await database.delete();
});

test("by default the account names the bound address, whatever host the client used", async () => {
  const server = await new Server().start();
  const client = new CosmosClient({ endpoint: `http://localhost:${server.port}/`, key: server.key });
  try {
    const { resource } = await client.getDatabaseAccount();
    assert.deepEqual(endpoints(resource), [server.endpoint, server.endpoint]);
  } finally {
    client.dispose();
    await server.stop();
    server.removeData();
  }
});
