// Authorization: a client with the wrong master key is refused with 401.

import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { makeClient, statusOf, uniqueId, useServer } from "./lib/fixtures.js";

const context = useServer();
// Valid base64 of the right length, but not the server's key.
const WRONG_KEY = Buffer.from(Array.from({ length: 64 }, (_, n) => n)).toString("base64");

test("a wrong key is 401", async () => {
  const client = makeClient(context.server, { key: WRONG_KEY });
  try {
    assert.equal(await statusOf(() => client.databases.create({ id: uniqueId("db") })), 401);
    assert.equal(await statusOf(() => client.databases.readAll().fetchAll()), 401);
  } finally {
    client.dispose();
  }
  // Nothing was created by the refused client.
  const { resources } = await context.client.databases.readAll().fetchAll();
  assert.deepEqual(resources, []);
});

test("an unsigned request is 401 with a Cosmos error body", async () => {
  const { statusCode, body } = await new Promise((resolve, reject) => {
    http.get(`${context.server.endpoint}dbs`, (response) => {
      let text = "";
      response.on("data", (chunk) => (text += chunk));
      response.on("end", () => resolve({ statusCode: response.statusCode, body: text }));
    }).on("error", reject);
  });
  assert.equal(statusCode, 401);
  const error = JSON.parse(body);
  assert.equal(error.code, "Unauthorized");
  assert.ok(error.message);
});
