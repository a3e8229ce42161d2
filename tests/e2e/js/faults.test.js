// Fault rules (/_lethedb/faults) driving the JavaScript SDK's retry policies: throttling with a
// retry delay is retried for as long as the rule lasts, a lasting 503 on a write reaches the
// caller, and a rule named for one partition key leaves the others alone.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createContainer, statusOf, uniqueId, useServer } from "./lib/fixtures.js";

let container;
const context = useServer({}, async ({ client }) => {
  const { database } = await client.databases.create({ id: uniqueId("db") });
  container = await createContainer(database, "c");
});

// One request to the fault rules, signed with the master key as resource type `_lethedb`.
async function faults(method, rule) {
  const date = new Date().toUTCString();
  const text = `${method.toLowerCase()}\n_lethedb\n_lethedb/faults\n${date.toLowerCase()}\n\n`;
  const signature = createHmac("sha256", Buffer.from(context.server.key, "base64")).update(text).digest("base64");
  const response = await fetch(new URL("/_lethedb/faults", context.server.endpoint), {
    method,
    headers: {
      "x-ms-date": date,
      "x-ms-version": "2018-12-31",
      authorization: encodeURIComponent(`type=master&ver=1.0&sig=${signature}`),
      "content-type": "application/json",
    },
    body: rule === undefined ? undefined : JSON.stringify(rule),
  });
  return { status: response.status, body: response.status === 204 ? null : await response.json() };
}

test("throttling is retried until the rule is spent", async () => {
  const added = await faults("POST", { operation: "Create", status: 429, substatus: 3200, retryAfterMs: 5, count: 3 });
  assert.equal(added.status, 201);
  const { resource } = await container.items.create({ id: "a", pk: "p" });
  assert.equal(resource.id, "a");
  assert.deepEqual((await faults("GET")).body, { rules: [] });
});

test("a lasting failure reaches the caller, and a rule named for a key spares the others", async () => {
  await faults("POST", { operation: "Upsert", partitionKey: "hot", status: 503, message: "planned" });
  assert.equal(await statusOf(() => container.items.upsert({ id: "b", pk: "hot" })), 503);
  const { resource } = await container.items.upsert({ id: "c", pk: "cold" });
  assert.equal(resource.id, "c");
  assert.equal((await faults("DELETE")).status, 204);
  assert.equal((await container.items.upsert({ id: "b", pk: "hot" })).resource.id, "b");
});
