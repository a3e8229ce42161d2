// Headless Chromium for the Explorer's browser tests: Debian's browser (never a downloaded one)
// driven by playwright-core, one browser per test file and a fresh context per test, every page
// error and console error collected so a test can fail on them, and screenshots written to the
// git-ignored target/explorer-screenshots/ for a person to look at.

import { after, before } from "node:test";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
export const screenshotDir = path.join(repoRoot, "target", "explorer-screenshots");

// The flags a root process on a closed network needs (the browser otherwise tries, and fails,
// to reach Google's hosts at every start).
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export function browserPath() {
  const candidates = [
    process.env.LETHEDB_CHROME,
    "/usr/bin/chromium-headless-shell",
    "/usr/bin/chromium",
  ].filter(Boolean);
  const found = candidates.find((candidate) => existsSync(candidate));
  if (!found) {
    throw new Error(
      "no Chromium found: install Debian's `chromium-headless-shell` (apt-get install -y " +
        "chromium-headless-shell) or set LETHEDB_CHROME to a Chromium binary",
    );
  }
  return found;
}

// Launches the browser before the file's tests and closes it after them.
export function useBrowser() {
  const context = { browser: undefined };
  before(async () => {
    context.browser = await chromium.launch({ executablePath: browserPath(), args: FLAGS });
  });
  after(async () => {
    await context.browser?.close();
  });
  return context;
}

// A new page in a fresh context (own storage), with its errors collected: `page.errors` lists
// every uncaught page error and console error, so a test can assert there were none.
export async function openPage(browser, { width = 1280, height = 800 } = {}) {
  const browserContext = await browser.newContext({ viewport: { width, height } });
  const page = await browserContext.newPage();
  page.errors = [];
  page.on("pageerror", (error) => page.errors.push(`pageerror: ${error}`));
  page.on("console", (message) => {
    if (message.type() === "error") page.errors.push(`console: ${message.text()}`);
  });
  page.close = ((close) => async () => {
    await close.call(page);
    await browserContext.close();
  })(page.close);
  return page;
}

// Saves a screenshot of the page's viewport as target/explorer-screenshots/<name>.png.
export async function screenshot(page, name) {
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: path.join(screenshotDir, `${name}.png`) });
}

// The element with a `data-testid`.
export function byTestId(page, id) {
  return page.locator(`[data-testid="${id}"]`);
}
