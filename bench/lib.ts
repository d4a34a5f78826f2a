/** Bench helpers: medians, rounds interleaved side by side, JSON results. */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const RESULTS_DIR = join(dirname(fileURLToPath(import.meta.url)), "results");

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

/** Runs `fn` repeatedly for about `ms`; returns operations per second. */
export function rateSync(fn: () => void, ms: number): number {
  let n = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < ms) {
    for (let i = 0; i < 50; i++) fn();
    n += 50;
    t = performance.now();
  }
  return (n * 1000) / (t - t0);
}

export function writeResult(name: string, data: unknown): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${name}.json`);
  writeFileSync(file, JSON.stringify({ at: new Date().toISOString(), node: process.version, ...(data as object) }, null, 2) + "\n");
  return file;
}

export function fmt(n: number): string {
  return n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(2);
}

/** CPU time (ms) of this process's main thread so far (user + system; Linux only, else NaN). */
export function mainThreadCpuMs(): number {
  return procCpuMs(`self/task/${process.pid}`) ?? Number.NaN;
}

/**
 * Fields of /proc/<pid>/stat after the command (state is [0], ppid [1], utime [11], stime [12],
 * cutime [13], cstime [14]); null when gone or not on Linux. `pid` may be a path below /proc
 * (`self/task/<tid>`).
 */
function procStat(pid: number | string): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // "pid (comm) state ppid ...": comm may hold spaces, so split after the last ')'.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/** CPU milliseconds (user + system) a process has used so far; null when gone or not on Linux. */
export function procCpuMs(pid: number | string): number | null {
  const f = procStat(pid);
  return f === null ? null : (Number(f[11]) + Number(f[12])) * 10; // clock ticks of 10 ms (USER_HZ 100)
}

/** The command name of a process (/proc/<pid>/comm); null when gone or not on Linux. */
function procComm(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return null;
  }
}

/** Clock ticks (USER_HZ 100) of the server `pid` and its children: see {@link serverCpuMs}. */
function serverTicks(pid: number): number {
  const own = procStat(pid);
  if (own === null) return Number.NaN;
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const p of readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    const f = procStat(p);
    if (f !== null && Number(f[1]) === pid) ticks += Number(f[11]) + Number(f[12]);
  }
  // A child reaped during the scan is counted nowhere: its time moved to the postmaster's
  // cutime/cstime after they were read. Read them again; if they moved, the caller scans again.
  const again = procStat(pid);
  if (again !== null && (again[13] !== own[13] || again[14] !== own[14])) return Number.NaN;
  return ticks;
}

/**
 * CPU time (ms, user + system) a database server has used so far: its postmaster `pid`, the
 * children it waited for (autovacuum workers and backends that exited: cutime, cstime) and the
 * children still running (backends, walwriter, checkpointer, autovacuum). Linux only, and only for
 * a server on this machine: NaN otherwise. Compare two readings of the same server.
 */
export function serverCpuMs(pid: number): number {
  for (let i = 0; i < 5; i++) {
    const ticks = serverTicks(pid);
    if (!Number.isNaN(ticks)) return ticks * 10; // 100 ticks a second
    if (procStat(pid) === null) break;
  }
  return Number.NaN;
}

/**
 * The postmaster of the server a client is connected to: the parent of its backend, when both are
 * `postgres` processes on this machine (null otherwise: a remote server, or one in a container
 * whose pids this machine's /proc does not show).
 */
export async function postmasterPid(client: { query(sql: string): Promise<{ rows: Array<{ pid: number }> }> }): Promise<number | null> {
  const backend = (await client.query("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
  const f = procStat(backend);
  if (f === null || procComm(backend) !== "postgres") return null;
  const parent = Number(f[1]);
  return procComm(parent) === "postgres" ? parent : null;
}

/**
 * A gauge of the machine's speed, independent of the workload: milliseconds of a fixed piece of
 * work (SHA-256 of 1 KiB, 2,000 times; about 3 ms on this machine), the best of three tries.
 */
export function calibrationMs(): number {
  const data = Buffer.alloc(1024, 7);
  let best = Number.POSITIVE_INFINITY;
  for (let t = 0; t < 3; t++) {
    const t0 = performance.now();
    for (let i = 0; i < 2000; i++) createHash("sha256").update(data).digest();
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}
