/**
 * Spawning and killing the crash-test child (fixtures/boundary-child.ts), and reading its reports.
 * Every child started here is tracked until its process has closed; `killAllChildren()` (call it
 * in `afterEach`) SIGKILLs and reaps any still running, so no test leaks a process.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Report } from "./workload.js";

const CHILD = fileURLToPath(new URL("./fixtures/boundary-child.ts", import.meta.url));

/** A signed journal checkpoint the child reported writing. */
export interface ReportedCheckpoint {
  tenantId: string;
  spaceId: string;
  seq: number;
  headHash: string;
}

export interface ChildEnv {
  WRIT_CRASH_STORE: "sqlite" | "postgres";
  WRIT_CRASH_TARGET: string;
  WRIT_CRASH_RUN: string;
  WRIT_CRASH_SEED: string;
  WRIT_CRASH_CONCURRENCY: string;
  WRIT_CRASH_KEY: string;
  WRIT_CRASH_REVISIT: string;
}

export interface ChildRun {
  /** Executions the child reported committed, in the order it wrote them. */
  readonly reports: Report[];
  readonly checkpoints: ReportedCheckpoint[];
  /** Resolves once `n` executions are reported; rejects if the child dies first or `timeoutMs` passes. */
  waitForReports(n: number, timeoutMs: number): Promise<void>;
  /** SIGKILLs the child (if still alive) and resolves once it is reaped and its output fully read. */
  kill(): Promise<void>;
  /** What the child wrote to stderr (for failure messages). */
  stderr(): string;
}

const live = new Map<ChildProcess, Promise<void>>();

/** SIGKILLs every child still running and waits until each is reaped. */
export async function killAllChildren(): Promise<void> {
  for (const child of live.keys()) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await Promise.all(live.values());
}

/** Number of crash-test children not yet reaped (0 after `killAllChildren`). */
export function liveChildren(): number {
  return live.size;
}

export function spawnChild(env: ChildEnv): ChildRun {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const reports: Report[] = [];
  const checkpoints: ReportedCheckpoint[] = [];
  let err = "";
  let partial = "";
  let waiter: { n: number; resolve: () => void } | undefined;
  let exitNote: string | undefined;
  const wake = (): void => {
    if (waiter && reports.length >= waiter.n) waiter.resolve();
  };
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    const lines = (partial + chunk).split("\n");
    // The last piece is a line still being written (or ""): a line counts only once complete.
    partial = lines.pop() ?? "";
    for (const line of lines) {
      if (line === "") continue;
      const msg = JSON.parse(line) as Report | { checkpoint: ReportedCheckpoint };
      if ("checkpoint" in msg) checkpoints.push(msg.checkpoint);
      else reports.push(msg);
    }
    wake();
  });
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => void (err += chunk));
  const closed = new Promise<void>((resolve) => {
    child.on("close", (code, signal) => {
      exitNote = `child exited (code ${String(code)}, signal ${String(signal)})`;
      live.delete(child);
      resolve();
    });
    child.on("error", (e) => {
      err += `spawn error: ${e.message}\n`;
    });
  });
  live.set(child, closed);

  return {
    reports,
    checkpoints,
    stderr: () => err,
    waitForReports(n, timeoutMs) {
      return new Promise<void>((resolve, reject) => {
        let settled = false;
        const finish = (why?: string): void => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          waiter = undefined;
          if (why === undefined) resolve();
          else reject(new Error(`${why}; child stderr:\n${err.slice(-4000)}`));
        };
        const timer = setTimeout(() => finish(`only ${reports.length} of ${n} executions reported after ${timeoutMs} ms`), timeoutMs);
        waiter = { n, resolve: () => finish() };
        closed.then(() => finish(`${exitNote ?? "child exited"} after ${reports.length} of ${n} reports`), () => undefined);
        wake();
      });
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await closed;
    },
  };
}
