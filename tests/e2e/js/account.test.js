// The database account: its locations come from `--advertise-url` (default: the bound address),
// never from the Host header unless `--advertise-url auto` opts in, and the SDK sends every later
// request there. The unauthenticated health probes answer beside it.

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

test("with --advertise-url auto the account names the host and port the client used", async () => {
  const server = await new Server({ extraArgs: ["--advertise-url", "auto"] }).start();
  const reached = `http://localhost:${server.port}/`;
  const client = new CosmosClient({ endpoint: reached, key: server.key });
  try {
    const { resource } = await client.getDatabaseAccount();
    assert.deepEqual(endpoints(resource), [reached, reached]);
    const { database } = await client.databases.create({ id: uniqueId("db") });
    const { container } = await database.containers.create({ id: "c", partitionKey: "/pk" });
    await container.items.upsert({ id: "a", pk: "p" });
    assert.equal((await container.item("a", "p").read()).resource.id, "a");
  } finally {
    client.dispose();
    await server.stop();
    server.removeData();
  }
});

test("the health probes answer without a signature", async () => {
  const alive = await fetch(`${context.server.endpoint}alive`);
  assert.equal(alive.status, 200);
  assert.deepEqual(await alive.json(), { status: "alive" });
  const ready = await fetch(`${context.server.endpoint}ready`);
  assert.equal(ready.status, 200);
  assert.deepEqual(await ready.json(), { status: "ready" });
  const status = await (await fetch(`${context.server.endpoint}status`)).json();
  assert.equal(status.ready, true);
  assert.equal(status.store, "redb");
  assert.ok(!JSON.stringify(status).includes(context.server.key));
});

