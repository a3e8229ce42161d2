// The npm package as a user gets it: the packed tarball (LETHEDB_NPM_TARBALL, from
// scripts/release) installed with @azure/cosmos into a temporary folder, its `lethedb` command,
// startLethe() and the README's example (packaging/examples/lethe.test.js) run there.
"use strict";

const { test, before, after } = require("node:test");
const assert = require("node:assert");
const { execFileSync, spawnSync } = require("node:child_process");
const fs = require("node:fs");
const net = require("node:net");
const os = require("node:os");
const path = require("node:path");
const { createRequire } = require("node:module");

const repository = path.resolve(__dirname, "../..");
// The SDK version the end-to-end suite pins, so both test the same client.
const cosmosVersion = JSON.parse(fs.readFileSync(path.join(repository, "tests/e2e/js/package-lock.json"), "utf8"))
  .packages["node_modules/@azure/cosmos"].version;

let folder;
let lethedb;
let cosmos;

before(() => {
  const tarball = process.env.LETHEDB_NPM_TARBALL;
  assert.ok(tarball && fs.existsSync(tarball), `LETHEDB_NPM_TARBALL must name the packed package (got ${tarball})`);
  folder = fs.mkdtempSync(path.join(os.tmpdir(), "lethedb-npm-"));
  fs.writeFileSync(path.join(folder, "package.json"), JSON.stringify({ private: true }));
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", path.resolve(tarball),
    `@azure/cosmos@${cosmosVersion}`], { cwd: folder, stdio: "inherit" });
  const requireThere = createRequire(path.join(folder, "package.json"));
  lethedb = requireThere("lethedb");
  cosmos = requireThere("@azure/cosmos");
});

after(() => {
  if (folder) fs.rmSync(folder, { recursive: true, force: true });
});

function refused(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.on("connect", () => { socket.destroy(); resolve(false); });
    socket.on("error", () => resolve(true));
  });
}

test("the package installs the lethedb command", () => {
  const version = execFileSync(path.join(folder, "node_modules/.bin/lethedb"), ["--version"], { encoding: "utf8" });
  const { version: packaged } = JSON.parse(fs.readFileSync(path.join(folder, "node_modules/lethedb/package.json"), "utf8"));
  assert.equal(version.trim(), `lethedb ${packaged}`);
});

test("startLethe serves the SDK in memory on a free port and stop ends it cleanly", async () => {
  const lethe = await lethedb.startLethe();
  assert.match(lethe.endpoint, /^http:\/\/127\.0\.0\.1:\d+\/$/);
  assert.equal(lethe.key, lethedb.EMULATOR_KEY);
  const status = await (await fetch(`${lethe.endpoint}status`)).json();
  assert.equal(status.store, "memory");
  const client = new cosmos.CosmosClient({ endpoint: lethe.endpoint, key: lethe.key });
  const { database } = await client.databases.create({ id: "npm" });
  const { resources } = await client.databases.readAll().fetchAll();
  assert.deepEqual(resources.map((found) => found.id), [database.id]);
  assert.equal(await lethe.stop(), 0);
  assert.ok(await refused(lethe.port), "the port still answers after stop()");
});

test("a store flag replaces the in-memory store, and a custom key is used", async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "lethedb-npm-data-"));
  const key = Buffer.alloc(64, 7).toString("base64");
  const lethe = await lethedb.startLethe({ args: ["--data-dir", dataDir], key });
  try {
    assert.equal(lethe.key, key);
    const status = await (await fetch(`${lethe.endpoint}status`)).json();
    assert.equal(status.store, "redb");
    const client = new cosmos.CosmosClient({ endpoint: lethe.endpoint, key });
    await client.databases.create({ id: "durable" });
  } finally {
    await lethe.stop();
  }
  assert.ok(fs.existsSync(path.join(dataDir, "lethedb.redb")));
  fs.rmSync(dataDir, { recursive: true, force: true });
});

test("a server that cannot start rejects with its output", async () => {
  await assert.rejects(lethedb.startLethe({ args: ["--no-such-flag"] }), /exited with 2[\s\S]*--no-such-flag/);
});

test("the README's example runs with node --test", () => {
  fs.copyFileSync(path.join(repository, "packaging/examples/lethe.test.js"), path.join(folder, "lethe.test.js"));
  // Without NODE_TEST_CONTEXT the inner run reports on its own output, not to this runner.
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const run = spawnSync(process.execPath, ["--test", "--test-reporter=tap", "lethe.test.js"],
    { cwd: folder, encoding: "utf8", env });
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.match(run.stdout, /# pass 1\b/);
});
