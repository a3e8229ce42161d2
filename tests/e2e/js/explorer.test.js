// The Explorer at /_explorer in Debian's headless Chromium: it loads without a console error,
// shows the connection details only with the emulator key and asks for a custom key (which no
// unauthenticated answer ever carries), creates databases and containers, adds, edits (an ETag
// conflict from a concurrent SDK write shown, not overwritten) and deletes items, runs and pages
// a query, uploads a file of items, and shows time to live: a countdown that reaches zero and
// the item gone without a reload, and the sweeper's chart. Screenshots of each main view go to
// target/explorer-screenshots/.

import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync, mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { makeClient, uniqueId, useServer } from "./lib/fixtures.js";
import { Server } from "./lib/server.js";
import { byTestId, openPage, screenshot, useBrowser } from "./lib/browser.js";

const context = useServer();
const browserContext = useBrowser();

async function explorer() {
  const page = await openPage(browserContext.browser);
  await page.goto(`${context.server.endpoint}_explorer/`);
  await byTestId(page, "tree").waitFor();
  return page;
}

async function openContainer(page, databaseId, containerId) {
  await byTestId(page, `database-${databaseId}`).click();
  await byTestId(page, `container-${databaseId}-${containerId}`).click();
  // The list itself has no height while the container is empty.
  await byTestId(page, "items").waitFor({ state: "attached" });
  await byTestId(page, "new-item").waitFor();
}

async function withContainer(options, body) {
  const client = context.client;
  const { database } = await client.databases.create({ id: uniqueId("db") });
  try {
    const { container } = await database.containers.create({
      id: uniqueId("c"),
      partitionKey: { paths: ["/pk"] },
      ...options,
    });
    return await body(database, container);
  } finally {
    await database.delete().catch(() => {});
  }
}

test("the page loads fast, without a console error, and shows the emulator's connection details", async () => {
  for (const route of ["/_explorer/", "/_explorer/index.html"]) {
    const response = await fetch(`${context.server.endpoint}${route.slice(1)}`);
    assert.equal(response.status, 200, route);
    assert.match(response.headers.get("content-type"), /text\/html/);
  }
  const page = await openPage(browserContext.browser);
  const started = Date.now();
  await page.goto(`${context.server.endpoint}_explorer/`);
  await byTestId(page, "landing").waitFor();
  const loadedMs = Date.now() - started;
  await byTestId(page, "key").waitFor();
  assert.match(await byTestId(page, "endpoint").innerText(), /127\.0\.0\.1/);
  assert.match(await byTestId(page, "connection-string").innerText(), /AccountKey=/);
  assert.equal((await byTestId(page, "key").innerText()).trim(), context.server.key);
  await screenshot(page, "01-landing");
  assert.deepEqual(page.errors, []);
  console.log(`explorer landing loaded in ${loadedMs} ms`);
  await page.close();
});

test("with a custom key the page asks for it and no unauthenticated answer carries it", async () => {
  const key = Buffer.from(`custom-key-${uniqueId("k")}`.padEnd(64, "x")).toString("base64");
  const server = await new Server({ key }).start();
  try {
    for (const route of ["/_explorer/", "/_explorer/index.html", "/_lethedb/stats", "/metrics", "/"]) {
      const body = await (await fetch(`${server.endpoint}${route.slice(1)}`)).text();
      assert.ok(!body.includes(key), `${route} carries the key`);
    }
    const page = await openPage(browserContext.browser);
    const seen = [];
    page.on("response", async (response) => {
      const text = await response.text().catch(() => "");
      if (text.includes(key)) seen.push(response.url());
    });
    await page.goto(`${server.endpoint}_explorer/`);
    await byTestId(page, "key-input").waitFor();
    assert.equal(await byTestId(page, "key").count(), 0);
    await screenshot(page, "02-custom-key");
    await byTestId(page, "key-input").fill(key);
    await byTestId(page, "key-submit").click();
    await byTestId(page, "tree").waitFor();
    assert.deepEqual(seen, [], "the server sent the key back");
    assert.deepEqual(page.errors.filter((e) => !e.includes("401")), []);
    await page.close();
  } finally {
    await server.stop();
    server.removeData();
  }
});

test("databases and containers are created and deleted from the tree", async () => {
  const page = await explorer();
  const databaseId = uniqueId("ui");
  await byTestId(page, "new-database").click();
  await byTestId(page, "database-id").fill(databaseId);
  await byTestId(page, "create").click();
  await byTestId(page, `database-${databaseId}`).waitFor();
  await byTestId(page, `database-${databaseId}`).click();
  await byTestId(page, "new-container").click();
  await byTestId(page, "container-id").fill("orders");
  await byTestId(page, "partition-key").fill("/customer");
  await byTestId(page, "default-ttl").fill("3600");
  await byTestId(page, "create").click();
  await byTestId(page, `container-${databaseId}-orders`).waitFor();
  await screenshot(page, "03-tree");
  const { resource } = await context.client.database(databaseId).container("orders").read();
  assert.deepEqual(resource.partitionKey.paths, ["/customer"]);
  assert.equal(resource.defaultTtl, 3600);
  await byTestId(page, `container-${databaseId}-orders`).click();
  await byTestId(page, "delete-container").click();
  await byTestId(page, "confirm").click();
  await byTestId(page, `container-${databaseId}-orders`).waitFor({ state: "detached" });
  await byTestId(page, `database-${databaseId}`).click();
  await byTestId(page, "delete-database").click();
  await byTestId(page, "confirm").click();
  await byTestId(page, `database-${databaseId}`).waitFor({ state: "detached" });
  assert.equal((await context.client.database(databaseId).read().catch((e) => e)).code, 404);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("items are added, edited, deleted, and a concurrent change shows as a conflict", async () => {
  await withContainer({}, async (database, container) => {
    const page = await explorer();
    await openContainer(page, database.id, container.id);
    await byTestId(page, "new-item").click();
    await byTestId(page, "editor").fill(JSON.stringify({ id: "a", pk: "p", n: 1 }));
    await byTestId(page, "save").click();
    await byTestId(page, "item-a").waitFor();
    assert.equal((await container.item("a", "p").read()).resource.n, 1);

    await byTestId(page, "item-a").click();
    const edited = JSON.parse(await byTestId(page, "editor").inputValue());
    edited.n = 2;
    await byTestId(page, "editor").fill(JSON.stringify(edited));
    await page.keyboard.press("Control+s");
    await assertEventually(async () => (await container.item("a", "p").read()).resource.n === 2);
    await screenshot(page, "04-item-editor");

    // Someone else writes the item while it is open: saving must not overwrite that.
    await byTestId(page, "item-a").click();
    const opened = JSON.parse(await byTestId(page, "editor").inputValue());
    await container.item("a", "p").replace({ id: "a", pk: "p", n: 99 });
    opened.n = 3;
    await byTestId(page, "editor").fill(JSON.stringify(opened));
    await byTestId(page, "save").click();
    await byTestId(page, "conflict").waitFor();
    await screenshot(page, "05-conflict");
    assert.equal((await container.item("a", "p").read()).resource.n, 99);

    // After the conflict the view is reloaded to get the item as it now is, then deleted.
    await page.reload();
    await byTestId(page, "tree").waitFor();
    await openContainer(page, database.id, container.id);
    await byTestId(page, "item-a").click();
    await byTestId(page, "delete-item").click();
    await byTestId(page, "item-a").waitFor({ state: "detached" });
    assert.equal((await container.item("a", "p").read()).statusCode, 404);
    assert.deepEqual(page.errors.filter((e) => !e.includes("412")), []);
    await page.close();
  });
});

async function assertEventually(check, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) assert.fail("the condition never held");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test("a query runs, pages, reports its charge, and shows the server's error message", async () => {
  await withContainer({}, async (database, container) => {
    for (let i = 0; i < 120; i++) {
      await container.items.create({ id: `q${String(i).padStart(3, "0")}`, pk: "p", n: i });
    }
    const page = await explorer();
    await openContainer(page, database.id, container.id);
    await byTestId(page, "tab-query").click();
    await byTestId(page, "query-editor").fill("SELECT c.id, c.n FROM c WHERE c.n >= 10");
    await page.keyboard.press("Control+Enter");
    await byTestId(page, "query-results").waitFor();
    await assertEventually(async () => /RU|charge/i.test(await byTestId(page, "query-stats").innerText()));
    await screenshot(page, "06-query");
    const firstStats = await byTestId(page, "query-stats").innerText();
    assert.match(firstStats, /\d/);

    await byTestId(page, "next-page").click();
    await assertEventually(async () => (await byTestId(page, "query-stats").innerText()) !== firstStats);
    // A selective filter: the plan line names the index that served it and what it loaded.
    await byTestId(page, "query-editor").fill("SELECT c.id FROM c WHERE c.n = 7");
    await byTestId(page, "run-query").click();
    const plan = byTestId(page, "query-plan");
    await assertEventually(async () => (await plan.getAttribute("data-loaded")) === "1");
    assert.match(await plan.innerText(), /Index \/n\/\? · 1 documents loaded for 1 returned/);
    assert.equal(await plan.getAttribute("data-indexes"), "/n/?");
    await byTestId(page, "query-editor").fill("SELECT c.id FROM c WHERE");
    await byTestId(page, "run-query").click();
    await byTestId(page, "query-error").waitFor();
    assert.match(await byTestId(page, "query-error").innerText(), /[Ss]yntax/);
    await page.close();
  });
});

test("the search tab finds the closest vectors with their scores, and words in a text", async () => {
  const options = {
    vectorEmbeddingPolicy: {
      vectorEmbeddings: [{ path: "/embedding", dataType: "float32", dimensions: 2, distanceFunction: "euclidean" }],
    },
    fullTextPolicy: { defaultLanguage: "en-US", fullTextPaths: [{ path: "/text", language: "en-US" }] },
  };
  await withContainer(options, async (database, container) => {
    const items = [
      { id: "far", pk: "p", embedding: [10, 10], text: "A red bicycle" },
      { id: "near", pk: "q", embedding: [1, 1.5], text: "Two running helmets" },
      { id: "nearest", pk: "r", embedding: [1, 1], text: "A helmet for cycling" },
    ];
    for (const item of items) await container.items.create(item);
    const page = await explorer();
    await openContainer(page, database.id, container.id);
    await byTestId(page, "tab-search").click();
    await byTestId(page, "search-input").fill("[1, 1]");
    await byTestId(page, "search-top").fill("2");
    await byTestId(page, "run-search").click();
    const results = byTestId(page, "search-result");
    await assertEventually(async () => (await results.count()) === 2);
    assert.deepEqual(await results.evaluateAll((rows) => rows.map((row) => [row.dataset.id, row.dataset.score])),
      [["nearest", "0.000000"], ["near", "0.500000"]]);
    assert.match(await byTestId(page, "search-query").innerText(), /ORDER BY VectorDistance\(c\["embedding"\]/);
    await screenshot(page, "07-search");
    await byTestId(page, "search-target").selectOption({ label: "Full text /text" });
    await byTestId(page, "search-input").fill("helmets");
    await byTestId(page, "search-top").fill("10");
    await byTestId(page, "run-search").click();
    await assertEventually(async () => (await results.evaluateAll((rows) => rows.map((row) => row.dataset.id)).then((ids) => ids.sort().join())) === "near,nearest");
    await page.close();
  });
});

test("a file of items uploads with a progress bar", async () => {
  await withContainer({}, async (database, container) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "lethedb-upload-"));
    const file = path.join(dir, "items.json");
    writeFileSync(file, JSON.stringify(Array.from({ length: 40 }, (_, i) => ({ id: `u${i}`, pk: "p" }))));
    const page = await explorer();
    await openContainer(page, database.id, container.id);
    await byTestId(page, "upload").setInputFiles(file);
    await byTestId(page, "upload-progress").waitFor();
    await assertEventually(async () => {
      const { resources } = await container.items.query("SELECT VALUE COUNT(1) FROM c").fetchAll();
      return resources[0] === 40;
    }, 15000);
    await screenshot(page, "07-upload");
    assert.deepEqual(page.errors, []);
    await page.close();
  });
});

test("time to live: a countdown reaches zero and the item leaves the view without a reload", async () => {
  await withContainer({ defaultTtl: 3600 }, async (database, container) => {
    await container.items.create({ id: "short", pk: "p", ttl: 3 });
    await container.items.create({ id: "long", pk: "p" });
    const page = await explorer();
    await openContainer(page, database.id, container.id);
    await byTestId(page, "countdown-short").waitFor();
    await byTestId(page, "histogram").waitFor();
    await byTestId(page, "clock-skew").waitFor();
    await screenshot(page, "08-ttl-countdown");
    await byTestId(page, "item-short").waitFor({ state: "detached", timeout: 10_000 });
    assert.equal(await byTestId(page, "item-long").count(), 1);
    await byTestId(page, "sweeper-chart").waitFor();
    await screenshot(page, "09-after-expiry");
    assert.deepEqual(page.errors, []);
    await page.close();
  });
});

test("the sweeper chart shows a backlog of expired items draining", async () => {
  // A sweeper held to 100 deletions/s, and 2,500 items that expire together: a backlog that
  // takes about 25 s to drain, long enough to watch on a busy machine.
  const server = await new Server({ extraArgs: ["--sweep-max-per-sec", "100"] }).start();
  try {
    const client = makeClient(server);
    const { database } = await client.databases.create({ id: uniqueId("db") });
    const { container } = await database.containers.create({
      id: "sweep",
      partitionKey: { paths: ["/pk"] },
      defaultTtl: 2,
    });
    await container.scripts.storedProcedures.create({
      id: "fill",
      body: `function (count) {
        var c = getContext().getCollection(), done = 0;
        (function next() {
          if (done === count) return getContext().getResponse().setBody(done);
          c.createDocument(c.getSelfLink(), { id: 'e' + done, pk: 'p' }, function (err) {
            if (err) throw err; done++; next();
          });
        })();
      }`,
    });
    assert.equal((await container.scripts.storedProcedure("fill").execute("p", [2500])).resource, 2500);
    const page = await openPage(browserContext.browser);
    await page.goto(`${server.endpoint}_explorer/`);
    await byTestId(page, "tree").waitFor();
    await byTestId(page, `database-${database.id}`).click();
    await byTestId(page, `container-${database.id}-sweep`).click();
    const chart = byTestId(page, "sweeper-chart");
    // 0 until the chart has its first sample.
    const backlog = async () => Number((await chart.getAttribute("data-backlog")) ?? "0") || 0;
    let peak = 0;
    await assertEventually(async () => {
      peak = Math.max(peak, await backlog());
      return peak > 100;
    }, 20_000);
    await screenshot(page, "10-sweeper-backlog");
    await assertEventually(
      async () => (await chart.getAttribute("data-backlog")) === "0",
      60_000,
    );
    assert.ok(Number(await chart.getAttribute("data-samples")) > 2);
    await screenshot(page, "11-sweeper-drained");
    assert.deepEqual(page.errors, []);
    await page.close();
  } finally {
    await server.stop();
    server.removeData();
  }
});

test("a narrow window still shows the tree and the items", async () => {
  const page = await openPage(browserContext.browser, { width: 480, height: 800 });
  await page.goto(`${context.server.endpoint}_explorer/`);
  await byTestId(page, "tree").waitFor();
  await screenshot(page, "12-narrow");
  assert.deepEqual(page.errors, []);
  await page.close();
});
