/**
 * CPU profile of boundary.execute on the memory store with a no-op connector (bench/boundary.ts's
 * rig), minting excluded: `node --import tsx scripts/prof-boundary.ts [out.cpuprofile]`, then
 * `node scripts/prof-top.cjs out.cpuprofile 40` (or `node scripts/prof-buckets.cjs out.cpuprofile` for
 * the phases of docs/performance.md). Prints executions per second of the profiled run.
 * `WRIT_PROF_SYNC=1` runs the signature check on the JavaScript thread (the crypto port without
 * `verifyEd25519Async`), so that its share and everything else's show on one thread;
 * `WRIT_PROF_INTERVAL_US` sets the sampling interval (default V8's).
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { boundaryRig } from "../bench/boundary.js";
import { memoryStore, nodeCryptoPort } from "../src/index.js";

const out = process.argv[2] ?? "boundary.cpuprofile";
const sync = process.env.WRIT_PROF_SYNC === "1";
const rig = await boundaryRig(memoryStore(), 1, sync ? { crypto: { ...nodeCryptoPort(), verifyEd25519Async: undefined } } : {});
await rig.run(3000, 8);
const session = new Session();
session.connect();
await session.post("Profiler.enable");
if (process.env.WRIT_PROF_INTERVAL_US) await session.post("Profiler.setSamplingInterval", { interval: Number(process.env.WRIT_PROF_INTERVAL_US) });
// The rig mints (signs) each batch before timing it: the profiler starts after minting.
const n = Number(process.env.WRIT_PROF_N ?? 20000);
const pending = rig.run(n, 8, async () => {
  await session.post("Profiler.start");
});
const rate = await pending;
const { profile } = await session.post("Profiler.stop");
writeFileSync(out, JSON.stringify(profile));
console.log(`${Math.round(rate)}/s -> ${out}`);
