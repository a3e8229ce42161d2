// Shared setup for the JavaScript end-to-end suites: one server per test file, clients, and a
// fresh database per test so that tests never see each other's data.

import { after, before } from "node:test";
import { randomUUID } from "node:crypto";
import https from "node:https";
import { CosmosClient } from "@azure/cosmos";
import { Server } from "./server.js";

export function uniqueId(prefix) {
  return `${prefix}-${randomUUID().slice(0, 12)}`;
}

// A client with a short request timeout, so a server that hangs fails a test instead of the run.
export function makeClient(server, { key = server.key, ...options } = {}) {
  return new CosmosClient({
    endpoint: server.endpoint,
    key,
    connectionPolicy: { requestTimeout: 30_000 },
    ...(server.tls ? { agent: new https.Agent({ rejectUnauthorized: false }) } : {}),
    ...options,
  });
}

// Starts a server before the file's tests and stops it after them, failures included. The
// returned object's `server` and `client` are set once the `before` hook has run. `setUp(context)`
// runs in the same hook, after the start: top-level `before` hooks are not ordered in Node 20.
export function useServer(options = {}, setUp = async () => {}) {
  const context = { server: undefined, client: undefined };
  before(async () => {
    context.server = await new Server(options).start();
    context.client = makeClient(context.server);
    await setUp(context);
  });
  after(async () => {
    context.client?.dispose?.();
    const result = await context.server?.stop();
    context.server?.removeData();
    return result;
  });
  return context;
}

// Creates a uniquely named database, runs `body(database)`, and deletes the database after.
export async function withDatabase(client, body) {
  const { database } = await client.databases.create({ id: uniqueId("db") });
  try {
    return await body(database);
  } finally {
    await database.delete().catch((error) => {
      if (error.code !== 404) throw error;
    });
  }
}

// Runs `action` and returns the status code of the ErrorResponse it throws; fails if it succeeds.
export async function statusOf(action) {
  try {
    await action();
  } catch (error) {
    if (typeof error.code === "number") return error.code;
    throw error;
  }
  throw new Error("expected the call to fail, but it succeeded");
}

export async function createContainer(database, id, options = {}) {
  const { container } = await database.containers.create({ id, partitionKey: { paths: ["/pk"] }, ...options });
  return container;
}

export { Server };
