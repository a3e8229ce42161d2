// The Explorer's load time and memory with a large container, in Debian's headless Chromium.
//
// Usage (from tests/e2e/js, whose node_modules hold @azure/cosmos and playwright-core):
//   node ../../../bench/explorer-probe.mjs http://127.0.0.1:8081 [ITEMS]
// against a running server (`lethedb serve --no-rate-limit`). It fills a container with ITEMS
// items (100,000 by default) through a bulk-import stored procedure, then measures, over five
// loads each: the page's load (navigation to the database tree shown), opening the container
// (its first page of items shown), and the page's JavaScript heap after opening it. Prints JSON.

import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.cwd(), "package.json"));
const { CosmosClient } = require("@azure/cosmos");
const { chromium } = require("playwright-core");

const endpoint = process.argv[2] ?? "http://127.0.0.1:8081";
const items = Number(process.argv[3] ?? 100_000);
const key = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";
const chrome = process.env.LETHEDB_CHROME ?? "/usr/bin/chromium-headless-shell";
const FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

function bulkImport(pk, start, count) {
  const c = getContext().getCollection();
  let done = 0;
  next();
  function next() {
    if (done >= count) { getContext().getResponse().setBody(done); return; }
    const accepted = c.createDocument(c.getSelfLink(),
      { id: "i" + String(start + done).padStart(7, "0"), pk, n: start + done, ttl: 86400 + start + done },
      (err) => { if (err) throw err; done++; next(); });
    if (!accepted) getContext().getResponse().setBody(done);
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const client = new CosmosClient({ endpoint, key });
const { database } = await client.databases.createIfNotExists({ id: "probe" });
const { container } = await database.containers.createIfNotExists({
  id: `big${items}`, partitionKey: { paths: ["/pk"] }, defaultTtl: -1,
});
const { resources: [count] } = await container.items.query("SELECT VALUE COUNT(1) FROM c").fetchAll();
if (count < items) {
  await container.scripts.storedProcedures.create({ id: "bulkImport", body: bulkImport }).catch((error) => {
    if (error.code !== 409) throw error;
  });
  const partitions = 10;
  const per = Math.ceil(items / partitions);
  for (let p = 0; p < partitions; p++) {
    let done = 0;
    while (done < per) {
      const { resource } = await container.scripts.storedProcedure("bulkImport")
        .execute(`p${p}`, [`p${p}`, p * per + done, per - done]);
      done += resource;
    }
  }
}

const browser = await chromium.launch({ executablePath: chrome, args: FLAGS });
const loads = [];
const opens = [];
const heaps = [];
for (let round = 0; round < 5; round++) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const started = Date.now();
  await page.goto(`${endpoint}/_explorer/`);
  await page.locator('[data-testid="tree"]').waitFor();
  await page.locator(`[data-testid="database-probe"]`).waitFor();
  loads.push(Date.now() - started);
  const opening = Date.now();
  await page.locator(`[data-testid="database-probe"]`).click();
  await page.locator(`[data-testid="container-probe-${container.id}"]`).click();
  await page.locator('[data-testid^="item-"]').first().waitFor();
  opens.push(Date.now() - opening);
  const cdp = await context.newCDPSession(page);
  await cdp.send("HeapProfiler.collectGarbage");
  await cdp.send("Performance.enable");
  const { metrics } = await cdp.send("Performance.getMetrics");
  const heap = metrics.find((metric) => metric.name === "JSHeapUsedSize");
  heaps.push(heap ? heap.value / (1 << 20) : NaN);
  await context.close();
}
await browser.close();
console.log(JSON.stringify({
  items,
  page_load_ms_median: median(loads),
  page_load_ms: loads,
  open_container_ms_median: median(opens),
  js_heap_mib_median: Number(median(heaps).toFixed(1)),
}, null, 2));
