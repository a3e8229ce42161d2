// HTTPS: the server started with --tls serves a self-signed certificate; the SDK connects with
// verification off through its `agent` option (the documented way to use the emulator's cert).

import { test } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";
import { createContainer, useServer, withDatabase } from "./lib/fixtures.js";

const context = useServer({ tls: true });

test("create and read over HTTPS", async () => {
  assert.ok(context.server.endpoint.startsWith("https://"));
  await withDatabase(context.client, async (database) => {
    const container = await createContainer(database, "secure");
    assert.equal((await container.items.create({ id: "a", pk: "p", secret: 42 })).statusCode, 201);
    const { resource, statusCode } = await container.item("a", "p").read();
    assert.equal(statusCode, 200);
    assert.equal(resource.secret, 42);
  });
});

test("a verifying client refuses the self-signed certificate, and the PEM is downloadable", async () => {
  const get = (options) =>
    new Promise((resolve, reject) => {
      https
        .get(`${context.server.endpoint}_explorer/emulator.pem`, options, (response) => {
          const certificate = response.socket.getPeerCertificate();
          let text = "";
          response.on("data", (chunk) => (text += chunk));
          response.on("end", () => resolve({ statusCode: response.statusCode, text, certificate }));
        })
        .on("error", reject);
    });
  await assert.rejects(get({ agent: false }), (error) => /cert|self.signed/i.test(`${error.code} ${error.message}`));

  const { statusCode, text, certificate } = await get({ agent: false, rejectUnauthorized: false });
  assert.equal(statusCode, 200);
  assert.ok(text.startsWith("-----BEGIN CERTIFICATE-----"), text.slice(0, 60));
  const served = certificate.raw.toString("base64");
  const downloaded = text.split("-----")[2].replace(/\s+/g, "");
  assert.equal(downloaded, served);
});
