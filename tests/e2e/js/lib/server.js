// Starts and stops a real `lethedb` process for the end-to-end suites.
//
// This module finds the binary, picks a free loopback port, waits until the server answers
// HTTP, and stops it gracefully (SIGTERM) or abruptly (SIGKILL). It knows nothing of the Cosmos
// SDK: tests build their clients from `server.endpoint` and `server.key` (see fixtures.js).

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");

// The Cosmos DB emulator's well-known key, which lethedb also uses by default.
export const EMULATOR_KEY =
  "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

// A debug build on a busy two-core CI machine can take a while to open its store.
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
const START_ATTEMPTS_MAX = 3;

// Every live process, killed on exit so that a crashed test file never leaves a server behind.
const live = new Set();
process.on("exit", () => {
  for (const server of live) server.process.kill("SIGKILL");
});
// Without a listener a SIGTERM (say, from `timeout` in scripts/test) ends Node without "exit".
for (const signal of ["SIGTERM", "SIGINT"]) process.once(signal, () => process.exit(130));

export function binaryPath() {
  const binary = process.env.LETHEDB_BIN || path.join(repoRoot, "target", "debug", "lethedb");
  if (!existsSync(binary)) {
    throw new Error(
      `lethedb binary not found at ${binary}; build it with ` +
        "`cargo build -p lethedb-server --bin lethedb` or set LETHEDB_BIN",
    );
  }
  return binary;
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

// Resolves with the HTTP status of GET /, or rejects if nothing answers.
function probe(endpoint, tls) {
  return new Promise((resolve, reject) => {
    const get = tls ? https.get : http.get;
    const request = get(endpoint, { rejectUnauthorized: false, timeout: 2000 }, (response) => {
      response.resume();
      resolve(response.statusCode);
    });
    request.once("timeout", () => request.destroy(new Error("timeout")));
    request.once("error", reject);
  });
}

// The server process ended before it became ready.
class ServerExited extends Error {}

export class Server {
  // `extraArgs` are more `serve` flags; "{port}" in one stands for the port picked.
  constructor({ dataDir, tls = false, key = EMULATOR_KEY, extraArgs = [] } = {}) {
    this.extraArgs = extraArgs;
    // A temporary directory this object made, and so may remove; never a caller's directory.
    this.ownedDir = dataDir ? undefined : mkdtempSync(path.join(os.tmpdir(), "lethedb-e2e-"));
    this.dataDir = dataDir ?? path.join(this.ownedDir, "data");
    this.tls = tls;
    this.key = key;
    this.port = undefined;
    this.process = undefined;
    this.exited = undefined; // a promise of { code, signal }
    this.logPath = `${this.dataDir}.log`;
  }

  get endpoint() {
    return `${this.tls ? "https" : "http"}://127.0.0.1:${this.port}/`;
  }

  async start() {
    let lastError;
    for (let attempt = 0; attempt < START_ATTEMPTS_MAX; attempt += 1) {
      this.port = await freePort();
      this.#spawn();
      try {
        await this.#waitReady();
        return this;
      } catch (error) {
        await this.kill();
        // An early exit most likely means another process took the port between freePort() and
        // bind(), which is worth another try; a server that runs but never answers is not.
        if (!(error instanceof ServerExited)) throw error;
        lastError = error;
      }
    }
    throw new Error(`lethedb did not start after ${START_ATTEMPTS_MAX} attempts: ${lastError?.message}`);
  }

  #spawn() {
    const args = ["serve", "--bind", `127.0.0.1:${this.port}`, "--data-dir", this.dataDir, "--key", this.key];
    if (this.tls) args.push("--tls");
    // Every query page the index serves runs again as a scan and is compared (the shadow mode):
    // a difference fails the request, and so the test that sent it.
    args.push("--query-verify");
    args.push(...this.extraArgs.map((arg) => arg.replaceAll("{port}", String(this.port))));
    // The child sees no LETHEDB_* variables, so only the flags above count.
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("LETHEDB_")));
    const log = openSync(this.logPath, "a");
    const child = spawn(binaryPath(), args, { stdio: ["ignore", log, log], env: { RUST_BACKTRACE: "1", ...env } });
    closeSync(log);
    this.process = child;
    this.exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
    live.add(this);
    this.exited.then(() => live.delete(this));
  }

  async #waitReady() {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (this.process.exitCode !== null || this.process.signalCode !== null) {
        throw new ServerExited(`lethedb exited (${this.process.exitCode ?? this.process.signalCode}):\n${this.logTail()}`);
      }
      try {
        await probe(this.endpoint, this.tls); // Any HTTP answer, 401 included, means it is serving.
        return;
      } catch {
        await sleep(50);
      }
    }
    throw new Error(`lethedb not ready after ${READY_TIMEOUT_MS} ms:\n${this.logTail()}`);
  }

  // SIGTERM, then SIGKILL if it has not exited in time. Resolves with { code, signal }.
  async stop() {
    if (!this.process) return undefined;
    if (this.process.exitCode === null && this.process.signalCode === null) {
      this.process.kill("SIGTERM");
      const timer = setTimeout(() => this.process.kill("SIGKILL"), STOP_TIMEOUT_MS);
      const result = await this.exited;
      clearTimeout(timer);
      return result;
    }
    return this.exited;
  }

  // SIGKILL: the process gets no chance to flush or clean up.
  async kill() {
    if (!this.process) return undefined;
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill("SIGKILL");
    return this.exited;
  }

  logTail(lines = 40) {
    try {
      return readFileSync(this.logPath, "utf8").split("\n").slice(-lines).join("\n");
    } catch {
      return "(no log)";
    }
  }

  // Removes the temporary directory made for this server, if it made one.
  removeData() {
    if (this.ownedDir) rmSync(this.ownedDir, { recursive: true, force: true });
  }
}
