// Throughput buckets through the JavaScript SDK's own `throughputBucket` option: a bucket set on
// a container (through /_lethedb/throughput-buckets, as the service's control plane would)
// throttles the requests naming it with 429/3212, others still get in, and an id outside 1 to 5
// is a 400.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createContainer, makeClient, statusOf, uniqueId, useServer } from "./lib/fixtures.js";

let database;
const context = useServer({}, async ({ client }) => {
  ({ database } = await client.databases.create({ id: uniqueId("db") }));
});

// Sets a container's buckets, signed with the master key as a request on the container.
async function setBuckets(container, buckets) {
  const link = `dbs/${database.id}/colls/${container.id}`;
  const date = new Date().toUTCString();
  const text = `put\ncolls\n${link}\n${date.toLowerCase()}\n\n`;
  const signature = createHmac("sha256", Buffer.from(context.server.key, "base64")).update(text).digest("base64");
  const response = await fetch(new URL(`/_lethedb/throughput-buckets/${link}`, context.server.endpoint), {
    method: "PUT",
    headers: {
      "x-ms-date": date,
      "x-ms-version": "2018-12-31",
      authorization: encodeURIComponent(`type=master&ver=1.0&sig=${signature}`),
      "content-type": "application/json",
    },
    body: JSON.stringify({ throughputBuckets: buckets }),
  });
  return { status: response.status, body: await response.json() };
}

// The same container through a client that reports 429s instead of retrying them.
function withoutRetries(container, options = {}) {
  const client = makeClient(context.server, {
    connectionPolicy: { requestTimeout: 30_000, retryOptions: { maxRetryAttemptCount: 0 } },
    ...options,
  });
  return { client, container: client.database(database.id).container(container.id) };
}

test("a spent bucket answers 429 with substatus 3212 while requests outside it get in", async () => {
  const created = await createContainer(database, uniqueId("b"), { throughput: 400 });
  const set = await setBuckets(created, [{ id: 2, maxThroughputPercentage: 1 }]);
  assert.equal(set.status, 200);
  assert.deepEqual(set.body, { throughputBuckets: [{ id: 2, maxThroughputPercentage: 1 }] });
  const { client, container } = withoutRetries(created);
  let throttled;
  for (let i = 0; i < 30 && !throttled; i++) {
    try {
      await container.items.create({ id: `b${i}`, pk: "p" }, { throughputBucket: 2 });
    } catch (error) {
      throttled = error;
    }
  }
  assert.ok(throttled, "a bucket of 4 RU/s took 30 writes of ~5 RU");
  assert.equal(throttled.code, 429);
  assert.equal(throttled.substatus, 3212);
  const { resource } = await container.items.create({ id: "free", pk: "p" });
  assert.equal(resource.id, "free");
  client.dispose?.();
});

test("a client-level bucket outside one to five is a 400", async () => {
  const created = await createContainer(database, uniqueId("bad"));
  const { client, container } = withoutRetries(created, { throughputBucket: 9 });
  assert.equal(await statusOf(() => container.items.create({ id: "x", pk: "p" })), 400);
  client.dispose?.();
});
