// Container lifecycle, partition keys of every JSON type, nested and hierarchical partition keys.

import { test } from "node:test";
import assert from "node:assert/strict";
import { PartitionKeyBuilder, PartitionKeyKind } from "@azure/cosmos";
import { createContainer, statusOf, uniqueId, useServer, withDatabase } from "./lib/fixtures.js";

const context = useServer();
const ABSENT = new PartitionKeyBuilder().addNoneValue().build(); // The SDK sends [{}].

test("create then read reports the partition key and indexing policy", async () => {
  await withDatabase(context.client, async (database) => {
    const created = await database.containers.create({ id: "orders", partitionKey: { paths: ["/pk"] } });
    assert.equal(created.statusCode, 201);
    const { resource, statusCode } = await created.container.read();
    assert.equal(statusCode, 200);
    assert.deepEqual(resource.partitionKey.paths, ["/pk"]);
    assert.equal(resource.partitionKey.kind, "Hash"); // JS sends no kind; the service fills it in.
    assert.equal(resource.indexingPolicy.indexingMode.toLowerCase(), "consistent");
    for (const name of ["_rid", "_self", "_etag", "_ts"]) assert.ok(resource[name], `missing ${name}`);
    assert.equal(resource.defaultTtl, undefined);
  });
});

test("duplicate create is 409; createIfNotExists returns the existing container", async () => {
  await withDatabase(context.client, async (database) => {
    const first = await createContainer(database, "twice");
    await first.items.create({ id: "kept", pk: "p" });
    assert.equal(await statusOf(() => createContainer(database, "twice")), 409);
    const again = await database.containers.createIfNotExists({ id: "twice", partitionKey: { paths: ["/pk"] } });
    assert.equal(again.statusCode, 200);
    const { resource } = await again.container.item("kept", "p").read();
    assert.equal(resource.id, "kept");
  });
});

test("readAll and query list the containers", async () => {
  await withDatabase(context.client, async (database) => {
    for (const id of ["alpha", "beta", "gamma"]) await createContainer(database, id);
    const { resources } = await database.containers.readAll().fetchAll();
    assert.deepEqual(resources.map((properties) => properties.id).sort(), ["alpha", "beta", "gamma"]);
    const { resources: queried } = await database.containers
      .query({ query: "SELECT * FROM root r WHERE r.id = @id", parameters: [{ name: "@id", value: "beta" }] })
      .fetchAll();
    assert.deepEqual(queried.map((properties) => properties.id), ["beta"]);
  });
});

test("replace changes the indexing policy and keeps the items", async () => {
  await withDatabase(context.client, async (database) => {
    const container = await createContainer(database, "indexed");
    await container.items.create({ id: "a", pk: "p", big: { blob: "x" } });
    const { resource: definition } = await container.read();
    definition.indexingPolicy = {
      indexingMode: "consistent",
      automatic: true,
      includedPaths: [{ path: "/*" }],
      excludedPaths: [{ path: "/big/*" }],
    };
    const replaced = await container.replace(definition);
    assert.equal(replaced.statusCode, 200);
    assert.ok(replaced.resource.indexingPolicy.excludedPaths.some((entry) => entry.path === "/big/*"));
    const { resource } = await container.read();
    assert.ok(resource.indexingPolicy.excludedPaths.some((entry) => entry.path === "/big/*"));
    assert.deepEqual((await container.item("a", "p").read()).resource.big, { blob: "x" });
  });
});

test("replace with a different partition key is 400", async () => {
  await withDatabase(context.client, async (database) => {
    const container = await createContainer(database, "fixed");
    const { resource: definition } = await container.read();
    definition.partitionKey = { paths: ["/other"], kind: "Hash" };
    assert.equal(await statusOf(() => container.replace(definition)), 400);
    assert.deepEqual((await container.read()).resource.partitionKey.paths, ["/pk"]);
  });
});

test("delete removes the container and its items", async () => {
  await withDatabase(context.client, async (database) => {
    const container = await createContainer(database, "doomed");
    await container.items.create({ id: "a", pk: "p" });
    assert.equal((await container.delete()).statusCode, 204);
    assert.equal(await statusOf(() => container.read()), 404);
    assert.equal(await statusOf(() => container.delete()), 404);
    const again = await createContainer(database, "doomed");
    assert.deepEqual((await again.items.readAll().fetchAll()).resources, []);
  });
});

// [label, item fields, the partition key value that addresses the item]
const VALUES = [
  ["string", { pk: "s" }, "s"],
  ["integer", { pk: 42 }, 42],
  ["float", { pk: 4.5 }, 4.5],
  ["true", { pk: true }, true],
  ["false", { pk: false }, false],
  ["null", { pk: null }, null],
  ["absent", {}, ABSENT],
];

test("the same id in each kind of partition is a distinct item", async () => {
  await withDatabase(context.client, async (database) => {
    const container = await createContainer(database, "kinds");
    for (const [label, fields] of VALUES) {
      const { statusCode } = await container.items.create({ id: "same", label, ...fields });
      assert.equal(statusCode, 201, label);
    }
    for (const [label, fields, key] of VALUES) {
      const { resource, statusCode } = await container.item("same", key).read();
      assert.equal(statusCode, 200, label);
      assert.equal(resource.label, label);
      if ("pk" in fields) assert.equal(resource.pk, fields.pk);
      else assert.ok(!("pk" in resource));

      const { resources } = await container.items.query("SELECT VALUE c.label FROM c", { partitionKey: key }).fetchAll();
      assert.deepEqual(resources, [label], `query scoped to ${label}`);
    }
    for (const [label, , key] of VALUES) {
      assert.equal((await container.item("same", key).delete()).statusCode, 204, label);
      assert.equal((await container.item("same", key).read()).statusCode, 404, label);
    }
  });
});

test("a partition key of the wrong type does not find the item", async () => {
  await withDatabase(context.client, async (database) => {
    const container = await createContainer(database, "types");
    await container.items.create({ id: "a", pk: "1" });
    assert.equal((await container.item("a", 1).read()).statusCode, 404);
    assert.equal((await container.item("a", ABSENT).read()).statusCode, 404);
    assert.equal((await container.item("a", "1").read()).statusCode, 200);
  });
});

test("nested partition key path /a/b", async () => {
  await withDatabase(context.client, async (database) => {
    const { container } = await database.containers.create({ id: "nested", partitionKey: { paths: ["/a/b"] } });
    await container.items.create({ id: "x", a: { b: "deep" } });
    await container.items.create({ id: "x", a: { c: "no b here" } });
    assert.deepEqual((await container.item("x", "deep").read()).resource.a, { b: "deep" });
    assert.deepEqual((await container.item("x", ABSENT).read()).resource.a, { c: "no b here" });
  });
});

test("hierarchical partition keys address items by the full key", async () => {
  await withDatabase(context.client, async (database) => {
    const { container, resource } = await database.containers.create({
      id: "tenants",
      partitionKey: { paths: ["/tenant", "/user"], version: 2, kind: PartitionKeyKind.MultiHash },
    });
    assert.deepEqual(resource.partitionKey.paths, ["/tenant", "/user"]);
    assert.equal(resource.partitionKey.kind, "MultiHash");

    await container.items.create({ id: "doc", tenant: "t1", user: "u1", n: 1 });
    await container.items.create({ id: "doc", tenant: "t1", user: "u2", n: 2 });
    await container.items.create({ id: "doc", tenant: "t2", user: "u1", n: 3 });

    assert.equal((await container.item("doc", ["t1", "u2"]).read()).resource.n, 2);
    assert.equal((await container.item("doc", ["t2", "u1"]).read()).resource.n, 3);
    assert.equal((await container.item("doc", ["t2", "u2"]).read()).statusCode, 404);

    const replaced = await container.item("doc", ["t1", "u1"]).replace({ id: "doc", tenant: "t1", user: "u1", n: 10 });
    assert.equal(replaced.resource.n, 10);
    await container.item("doc", ["t2", "u1"]).delete();

    const { resources: scoped } = await container.items
      .query("SELECT VALUE c.n FROM c", { partitionKey: ["t1", "u1"] })
      .fetchAll();
    assert.deepEqual(scoped, [10]);
    const { resources: all } = await container.items.query("SELECT VALUE c.n FROM c").fetchAll();
    assert.deepEqual(all.sort((a, b) => a - b), [2, 10]);
    const { resources: prefix } = await container.items
      .query("SELECT VALUE c.n FROM c", { partitionKey: ["t1"] })
      .fetchAll();
    assert.deepEqual(prefix.sort((a, b) => a - b), [2, 10]);
  });
});

test("computed properties are kept, checked, and queried by name but not by SELECT *", async () => {
  await withDatabase(context.client, async (database) => {
    const computedProperties = [
      { name: "cp_lower", query: "SELECT VALUE LOWER(c.name) FROM c" },
      { name: "cp_total", query: "SELECT VALUE c.price * c.count FROM c" },
    ];
    const { container, resource } = await database.containers.create({
      id: "computed",
      partitionKey: "/pk",
      computedProperties,
    });
    assert.deepEqual(resource.computedProperties, computedProperties);
    await container.items.create({ id: "1", pk: "p", name: "Bob", price: 2, count: 3 });
    await container.items.create({ id: "2", pk: "p", name: "al", price: 10, count: 1 });
    const { resources } = await container.items
      .query("SELECT c.id, c.cp_lower FROM c WHERE c.cp_total > 5 ORDER BY c.cp_lower")
      .fetchAll();
    assert.deepEqual(resources, [{ id: "2", cp_lower: "al" }, { id: "1", cp_lower: "bob" }]);
    const { resources: all } = await container.items.query("SELECT * FROM c").fetchAll();
    assert.ok(all.every((row) => !("cp_lower" in row)));
    const refused = await statusOf(() =>
      database.containers.create({
        id: "bad",
        partitionKey: "/pk",
        computedProperties: [{ name: "cp", query: "SELECT VALUE c.a FROM c WHERE c.a = 1" }],
      }),
    );
    assert.equal(refused, 400);
  });
});
