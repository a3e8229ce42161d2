// Database lifecycle through @azure/cosmos: create, read, list, query, createIfNotExists, delete.

import { test } from "node:test";
import assert from "node:assert/strict";
import { statusOf, uniqueId, useServer, withDatabase } from "./lib/fixtures.js";

const context = useServer();

test("create then read returns the system properties", async () => {
  const id = uniqueId("db");
  const created = await context.client.databases.create({ id });
  try {
    assert.equal(created.statusCode, 201);
    assert.equal(created.resource.id, id);
    const { resource, statusCode } = await context.client.database(id).read();
    assert.equal(statusCode, 200);
    for (const name of ["_rid", "_self", "_etag", "_ts"]) assert.ok(resource[name], `missing ${name}`);
    assert.equal(resource._rid, created.resource._rid);
  } finally {
    await context.client.database(id).delete();
  }
});

test("creating a duplicate database is 409", async () => {
  await withDatabase(context.client, async (database) => {
    assert.equal(await statusOf(() => context.client.databases.create({ id: database.id })), 409);
  });
});

test("readAll and query find the databases", async () => {
  const ids = [uniqueId("db"), uniqueId("db"), uniqueId("db")];
  for (const id of ids) await context.client.databases.create({ id });
  try {
    const { resources: listed } = await context.client.databases.readAll().fetchAll();
    for (const id of ids) assert.ok(listed.some((database) => database.id === id), `${id} not listed`);
    const { resources: queried } = await context.client.databases
      .query({ query: "SELECT * FROM root r WHERE r.id = @id", parameters: [{ name: "@id", value: ids[1] }] })
      .fetchAll();
    assert.deepEqual(queried.map((database) => database.id), [ids[1]]);
  } finally {
    for (const id of ids) await context.client.database(id).delete();
  }
});

test("createIfNotExists twice answers 201 then 200 with the same database", async () => {
  const id = uniqueId("db");
  try {
    const first = await context.client.databases.createIfNotExists({ id });
    const second = await context.client.databases.createIfNotExists({ id });
    assert.equal(first.statusCode, 201);
    assert.equal(second.statusCode, 200);
    assert.equal(second.resource._rid, first.resource._rid);
  } finally {
    await context.client.database(id).delete();
  }
});

test("delete removes the database and the containers beneath it", async () => {
  const id = uniqueId("db");
  const { database } = await context.client.databases.create({ id });
  const { container } = await database.containers.create({ id: "inner", partitionKey: { paths: ["/pk"] } });
  await container.items.create({ id: "a", pk: "p" });

  const deleted = await database.delete();
  assert.equal(deleted.statusCode, 204);

  assert.equal(await statusOf(() => context.client.database(id).read()), 404);
  assert.equal(await statusOf(() => context.client.database(id).container("inner").read()), 404);
  const { resources } = await context.client.databases.readAll().fetchAll();
  assert.ok(!resources.some((properties) => properties.id === id));

  // Re-created under the same id, the database starts empty.
  const { database: reborn } = await context.client.databases.create({ id });
  try {
    const { resources: containers } = await reborn.containers.readAll().fetchAll();
    assert.deepEqual(containers, []);
  } finally {
    await reborn.delete();
  }
});

test("deleting a missing database is 404", async () => {
  assert.equal(await statusOf(() => context.client.database(uniqueId("missing")).delete()), 404);
});
