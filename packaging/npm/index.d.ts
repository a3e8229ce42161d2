// Types of startLethe(), the helper of the lethedb package (index.js).
import type { ChildProcess } from "node:child_process";

export interface LetheOptions {
  /** More `lethedb serve` flags; without a store flag the server keeps everything in memory. */
  args?: string[];
  /** The master key, when not the emulator's well-known one. */
  key?: string;
  /** How long to wait for the ready line (default 30000). */
  timeoutMs?: number;
  /** Another lethedb binary than the one this package carries. */
  binary?: string;
}

export interface Lethe {
  endpoint: string;
  key: string;
  port: number;
  process: ChildProcess;
  logTail(): string;
  /** SIGTERM, SIGKILL after 10 s; resolves to the exit code. */
  stop(): Promise<number | null>;
}

export function startLethe(options?: LetheOptions): Promise<Lethe>;
export const binaryPath: string;
export const EMULATOR_KEY: string;
