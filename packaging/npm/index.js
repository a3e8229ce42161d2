// startLethe(): runs the lethedb binary that this package carries on a free loopback port and
// resolves once the server printed its ready line, with the endpoint and key an @azure/cosmos
// client needs and stop() to end it. It knows nothing of any Cosmos SDK.
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");
const readline = require("node:readline");

/** The Cosmos DB emulator's well-known key, which the server uses unless given another. */
const EMULATOR_KEY =
  "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";
/** The binary installed with this package. */
const binaryPath = path.join(__dirname, "bin", "lethedb");
// The flags that choose a store: without one, a server keeps everything in memory.
const STORE_FLAGS = ["--in-memory", "--data-dir", "--postgres"];
// Log lines kept for logTail(), for a failing test's report.
const LOG_LINES_KEPT = 200;
const live = new Set();

// A test runner that exits without calling stop() must not leave servers behind.
process.on("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

function serveArguments(args) {
  const command = ["serve", "--bind", "127.0.0.1:0"];
  if (!args.some((arg) => STORE_FLAGS.includes(arg.split("=", 1)[0]))) command.push("--in-memory");
  return command.concat(args);
}

function readyLine(line) {
  if (!line.startsWith("{")) return null;
  try {
    const parsed = JSON.parse(line);
    return parsed && parsed.ready === true ? parsed : null;
  } catch {
    return null;
  }
}

/**
 * Starts `lethedb serve` on a free loopback port, in memory unless `args` name a store.
 * @param {{args?: string[], key?: string, timeoutMs?: number, binary?: string}} [options]
 * @returns {Promise<{endpoint: string, key: string, port: number, process: import("node:child_process").ChildProcess, logTail: () => string, stop: () => Promise<number|null>}>}
 */
function startLethe({ args = [], key, timeoutMs = 30000, binary = binaryPath } = {}) {
  // Only the flags count: LETHEDB_* variables of the caller's shell are left out.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("LETHEDB_")));
  if (key !== undefined) env.LETHEDB_KEY = key;
  const child = spawn(binary, serveArguments(args), { env, stdio: ["ignore", "pipe", "pipe"] });
  live.add(child);
  const log = [];
  const keep = (line) => {
    log.push(line);
    if (log.length > LOG_LINES_KEPT) log.shift();
  };
  readline.createInterface({ input: child.stderr }).on("line", keep);
  const exited = new Promise((resolve) => child.on("exit", (code) => { live.delete(child); resolve(code); }));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10000);
      await exited;
      clearTimeout(timer);
    }
    return child.exitCode;
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(`lethedb was not ready after ${timeoutMs} ms`), timeoutMs);
    function fail(reason) {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`${reason}:\n${log.join("\n")}`));
    }
    child.on("error", (error) => fail(`lethedb could not start (${error.message})`));
    // "close" comes after the output's last line, which then is in the message.
    child.on("close", (code) => fail(`lethedb exited with ${code} before it was ready`));
    // The output keeps being read after the ready line, so the server never blocks on a full pipe.
    readline.createInterface({ input: child.stdout }).on("line", (line) => {
      keep(line);
      const ready = readyLine(line);
      if (!ready) return;
      clearTimeout(timer);
      const endpoint = ready.endpoint;
      resolve({
        endpoint,
        key: key ?? ready.key ?? EMULATOR_KEY,
        port: Number(new URL(endpoint).port),
        process: child,
        logTail: () => log.join("\n"),
        stop,
      });
    });
  });
}

module.exports = { startLethe, binaryPath, EMULATOR_KEY };
