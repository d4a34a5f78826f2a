/**
 * CPU cost per boundary execution, for a shared machine where the throughput bench is noisy:
 * `node --import tsx scripts/cpu-boundary.ts [rounds]`. Runs bench/boundary.ts's rig (memory store,
 * no-op connector, 8 in flight) and reports per execution, as medians over the rounds:
 * - `cpu`: process CPU time (user + system, every thread: the threadpool's verifies included);
 * - `loop`: event-loop active time (`performance.eventLoopUtilization`), the main thread's share;
 * next to the same two figures for a raw synchronous and a raw asynchronous Ed25519 verify.
 * Time the process waits for a core counts in neither `cpu` figure, so these move much less
 * with the load than the rates do.
 */
import { performance } from "node:perf_hooks";
import { boundaryRig, rawAsyncVerifyRate, rawVerifyRate } from "../bench/boundary.js";
import { median } from "../bench/lib.js";
import { memoryStore } from "../src/index.js";

interface Cost {
  cpu: number;
  loop: number;
}

async function measure(n: () => Promise<number>): Promise<Cost> {
  const c0 = process.cpuUsage();
  const e0 = performance.eventLoopUtilization();
  const count = await n();
  const c = process.cpuUsage(c0);
  const e = performance.eventLoopUtilization(e0);
  return { cpu: (c.user + c.system) / count, loop: (e.active * 1000) / count };
}

const rounds = Number(process.argv[2] ?? 5);
const N = 5000;
const rig = await boundaryRig(memoryStore());
await rig.run(2000, 8);
const rows: { boundary: Cost; sync: Cost; async: Cost }[] = [];
for (let i = 0; i < rounds; i++) {
  // rate * seconds = how many ran (the rates are per second over about the given time).
  const sync = await measure(async () => {
    const t0 = performance.now();
    const r = rawVerifyRate(500);
    return (r * (performance.now() - t0)) / 1000;
  });
  const asyncV = await measure(async () => {
    const t0 = performance.now();
    const r = await rawAsyncVerifyRate(500, 8);
    return (r * (performance.now() - t0)) / 1000;
  });
  const boundary = await measure(async () => {
    await rig.run(N, 8);
    return N;
  });
  rows.push({ boundary, sync, async: asyncV });
}
await rig.close();
const m = (f: (r: (typeof rows)[number]) => number): string => median(rows.map(f)).toFixed(1);
console.log(`per execution, medians of ${rounds} rounds (us): boundary cpu ${m((r) => r.boundary.cpu)}, loop ${m((r) => r.boundary.loop)}`);
console.log(`raw verify (us): sync cpu ${m((r) => r.sync.cpu)}, loop ${m((r) => r.sync.loop)} | async x8 cpu ${m((r) => r.async.cpu)}, loop ${m((r) => r.async.loop)}`);
console.log(`boundary cpu / sync verify cpu: ${(median(rows.map((r) => r.sync.cpu / r.boundary.cpu))).toFixed(3)} (a CPU-time analogue of the bench's ratio)`);
