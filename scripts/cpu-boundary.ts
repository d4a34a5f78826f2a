/**
 * CPU cost per boundary execution, for a shared machine where the throughput bench is noisy:
 * `node --import tsx scripts/cpu-boundary.ts [rounds]`. Runs bench/boundary.ts's rig (memory store,
 * no-op connector, 8 in flight) twice, interleaved in rounds: with the Node crypto port (check 3 on
 * the threadpool) and with the same port without `verifyEd25519Async` (check 3 on the JavaScript
 * thread). Per execution, medians over the rounds, in microseconds:
 * - `main`: CPU time of the JavaScript thread (Linux: /proc/self/task/<pid>/stat; 10 ms ticks);
 * - `all`: CPU time of the whole process (every thread: the threadpool's verifies, GC helpers);
 * - `wall`: elapsed time (the only figure that moves with the machine's load).
 * Raw Ed25519 verify costs are measured the same way. Time spent waiting for a core counts in
 * neither CPU figure. With a core free for the threadpool, throughput is bounded by the JavaScript
 * thread's work: `raw sync verify / main` is what the bench's ratio would be on an idle machine
 * with two cores (an estimate, printed as such).
 */
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { boundaryRig, rawAsyncVerifyRate, rawVerifyRate, type BoundaryRig } from "../bench/boundary.js";
import { median } from "../bench/lib.js";
import { memoryStore, nodeCryptoPort } from "../src/index.js";

interface Cost {
  main: number;
  all: number;
  wall: number;
}

const TICK_US = 10_000; // USER_HZ = 100 on Linux

function mainThreadUs(): number | null {
  try {
    const f = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8");
    const rest = f.slice(f.lastIndexOf(")") + 2).split(" ");
    return (Number(rest[11]) + Number(rest[12])) * TICK_US; // utime, stime (fields 14 and 15)
  } catch {
    return null;
  }
}

async function measure(run: () => Promise<number>): Promise<Cost> {
  const m0 = mainThreadUs();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const count = await run();
  const wall = ((performance.now() - t0) * 1000) / count;
  const c = process.cpuUsage(c0);
  const m1 = mainThreadUs();
  return { main: m0 === null || m1 === null ? NaN : (m1 - m0) / count, all: (c.user + c.system) / count, wall };
}

/** How many ran: a rate per second over about the given time, times the time it took. */
async function counted(rate: () => Promise<number> | number): Promise<number> {
  const t0 = performance.now();
  const r = await rate();
  return (r * (performance.now() - t0)) / 1000;
}

const rounds = Number(process.argv[2] ?? 5);
const N = 5000;
const asyncPort = nodeCryptoPort();
const syncPort = { ...nodeCryptoPort(), verifyEd25519Async: undefined };
const rigs: Array<[string, BoundaryRig]> = [
  ["boundary, async verify", await boundaryRig(memoryStore(), 1, { crypto: asyncPort })],
  ["boundary, sync verify", await boundaryRig(memoryStore(), 1, { crypto: syncPort })],
];
for (const [, rig] of rigs) await rig.run(2000, 8);
const tokens = rigs[0]![1].verifyFixture(1000);
const rows = new Map<string, Cost[]>();
const add = (k: string, c: Cost): void => void rows.set(k, [...(rows.get(k) ?? []), c]);
for (let i = 0; i < rounds; i++) {
  add("raw verify, sync", await measure(() => counted(() => rawVerifyRate(500, tokens))));
  add("raw verify, async x8", await measure(() => counted(() => rawAsyncVerifyRate(500, 8, tokens))));
  for (const [name, rig] of rigs) {
    add(name, await measure(async () => {
      await rig.run(N, 8);
      return N;
    }));
  }
}
for (const [, rig] of rigs) await rig.close();
const med = (k: string, f: (c: Cost) => number): number => median(rows.get(k)!.map(f));
console.log(`per operation, medians of ${rounds} interleaved rounds (us); load average ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`);
for (const k of rows.keys()) console.log(`  ${k.padEnd(24)} main ${med(k, (c) => c.main).toFixed(1).padStart(7)}  all ${med(k, (c) => c.all).toFixed(1).padStart(7)}  wall ${med(k, (c) => c.wall).toFixed(1).padStart(7)}`);
const verify = med("raw verify, sync", (c) => c.all);
for (const [name] of rigs) {
  console.log(`  ${name}: raw sync verify CPU / boundary CPU = ${(verify / med(name, (c) => c.all)).toFixed(3)}; / main-thread CPU = ${(verify / med(name, (c) => c.main)).toFixed(3)} (the estimate for an idle 2-core machine)`);
}
