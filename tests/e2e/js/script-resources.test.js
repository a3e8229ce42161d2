// Stored procedures, triggers and user-defined functions as resources through the JavaScript SDK
// (@azure/cosmos 4.10.1): create (a function body is sent as its source text), read, replace,
// delete, read all and query each kind; a trigger's type and operation echoed as sent; a body
// that does not compile stored as sent (as the service does: the SDK's own trigger test stores a
// method's source) and refused with 400 naming the syntax error when a stored procedure runs.

import { test } from "node:test";
import assert from "node:assert/strict";
import { TriggerOperation, TriggerType } from "@azure/cosmos";
import { createContainer, statusOf, useServer, withDatabase } from "./lib/fixtures.js";

const context = useServer();

const BROKEN_BODY = "function () {\n  var a = 1;\n  a = +;\n}";

async function withContainer(body) {
  await withDatabase(context.client, async (database) => body(await createContainer(database, "c")));
}

test("stored procedures: create from a function, read, replace, query, delete", async () => {
  await withContainer(async (container) => {
    const sprocs = container.scripts.storedProcedures;
    const { resource: created, statusCode } = await sprocs.create({
      id: "sp1",
      body: function () {
        const x = 20;
        console.log(x);
      },
    });
    assert.equal(statusCode, 201);
    // The SDK sends the function's source text, which is what is stored.
    assert.match(created.body, /^function \(\) \{[\s\S]*const x = 20;[\s\S]*\}$/);
    for (const name of ["_rid", "_self", "_etag", "_ts"]) assert.ok(name in created, name);
    assert.ok(created._self.endsWith(`/sprocs/${created._rid}/`), created._self);
    assert.equal(await statusOf(() => sprocs.create({ id: "sp1", body: "function () {}" })), 409);

    const { resource: read } = await container.scripts.storedProcedure("sp1").read();
    assert.equal(read._rid, created._rid);
    const { resource: replaced } = await container.scripts
      .storedProcedure("sp1")
      .replace({ id: "sp1", body: "function () { return 2; }" });
    assert.equal(replaced.body, "function () { return 2; }");
    assert.equal(replaced._rid, created._rid);
    assert.equal(
      await statusOf(() => container.scripts.storedProcedure("nope").replace({ id: "nope", body: "function () {}" })),
      404,
    );

    await sprocs.create({ id: "sp2", body: () => 1 });
    const { resources: all } = await sprocs.readAll().fetchAll();
    assert.deepEqual(all.map((s) => s.id).sort(), ["sp1", "sp2"]);
    const { resources: found } = await sprocs
      .query({ query: "SELECT * FROM root r WHERE r.id = @id", parameters: [{ name: "@id", value: "sp2" }] })
      .fetchAll();
    assert.deepEqual(found.map((s) => s.id), ["sp2"]);

    const { statusCode: deleted } = await container.scripts.storedProcedure("sp1").delete();
    assert.equal(deleted, 204);
    assert.equal(await statusOf(() => container.scripts.storedProcedure("sp1").read()), 404);
    assert.equal(await statusOf(() => container.scripts.storedProcedure("sp1").delete()), 404);
  });
});

test("triggers: type and operation echoed as sent, replace, query, delete", async () => {
  await withContainer(async (container) => {
    const triggers = container.scripts.triggers;
    const body = {
      id: "t1",
      body: function () {
        const item = getContext().getRequest().getBody(); // eslint-disable-line no-undef
        return item;
      },
      triggerType: TriggerType.Pre,
      triggerOperation: TriggerOperation.All,
    };
    const { resource: created } = await triggers.create(body);
    assert.equal(created.triggerType, "pre");
    assert.equal(created.triggerOperation, "all");
    assert.equal(await statusOf(() => triggers.create({ ...body, body: "function () {}" })), 409);

    const { resource: replaced } = await container.scripts.trigger("t1").replace({
      id: "t1",
      body: "function () {}",
      triggerType: TriggerType.Post,
      triggerOperation: TriggerOperation.Replace,
    });
    assert.equal(replaced.triggerType, "post");
    assert.equal(replaced.triggerOperation, "replace");
    assert.equal(replaced._rid, created._rid);
    const { resources: found } = await triggers
      .query("SELECT * FROM root r WHERE r.triggerOperation = 'replace'")
      .fetchAll();
    assert.deepEqual(found.map((t) => t.id), ["t1"]);

    assert.equal(
      await statusOf(() =>
        triggers.create({ id: "t2", body: "function () {}", triggerType: "during", triggerOperation: "all" }),
      ),
      400,
    );
    assert.equal(await statusOf(() => triggers.create({ id: "t2", body: "function () {}" })), 400);

    await container.scripts.trigger("t1").delete();
    assert.deepEqual((await triggers.readAll().fetchAll()).resources, []);
  });
});

test("user-defined functions: create, read, replace, query, delete", async () => {
  await withContainer(async (container) => {
    const udfs = container.scripts.userDefinedFunctions;
    const { resource: created } = await udfs.create({
      id: "double",
      body: function (x) {
        return x * 2;
      },
    });
    assert.match(created.body, /return x \* 2;/);
    assert.equal(await statusOf(() => udfs.create({ id: "double", body: "function (x) { return x; }" })), 409);
    const { resource: read } = await container.scripts.userDefinedFunction("double").read();
    assert.equal(read._rid, created._rid);
    const { resource: replaced } = await container.scripts
      .userDefinedFunction("double")
      .replace({ id: "double", body: "function (x) { return x + x; }" });
    assert.equal(replaced.body, "function (x) { return x + x; }");
    const { resources: found } = await udfs.query("SELECT VALUE r.id FROM root r").fetchAll();
    assert.deepEqual(found, ["double"]);
    await container.scripts.userDefinedFunction("double").delete();
    assert.equal(await statusOf(() => container.scripts.userDefinedFunction("double").read()), 404);
  });
});

test("a body that does not compile is stored as sent and fails when it runs", async () => {
  await withContainer(async (container) => {
    // What the SDK's own trigger test stores: a method's source, outside its object.
    const method = "serverScript() { var x = 10; }";
    const created = [
      await container.scripts.storedProcedures.create({ id: "bad", body: BROKEN_BODY }),
      await container.scripts.triggers.create({
        id: "bad",
        body: method,
        triggerType: TriggerType.Post,
        triggerOperation: TriggerOperation.Create,
      }),
      await container.scripts.userDefinedFunctions.create({ id: "bad", body: BROKEN_BODY }),
    ];
    assert.deepEqual(
      created.map(({ resource }) => resource.body),
      [BROKEN_BODY, method, BROKEN_BODY],
    );
    try {
      await container.scripts.storedProcedure("bad").execute("p");
      assert.fail("a broken body ran");
    } catch (error) {
      assert.equal(error.code, 400, String(error));
      assert.match(error.message, /SyntaxError/);
    }
    await container.scripts.storedProcedures.create({ id: "good", body: "function () {}" });
    await container.scripts.storedProcedure("good").replace({ id: "good", body: BROKEN_BODY });
    assert.equal((await container.scripts.storedProcedure("good").read()).resource.body, BROKEN_BODY);
    assert.equal(
      await statusOf(() => container.scripts.storedProcedure("good").replace({ id: "renamed", body: "function () {}" })),
      400,
    );
    const { resource } = await container.scripts.storedProcedure("good").read();
    assert.equal(resource.body, BROKEN_BODY);
  });
});
