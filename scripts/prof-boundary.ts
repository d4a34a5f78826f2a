/**
 * CPU profile of boundary.execute on the memory store with a no-op connector (bench/boundary.ts's
 * rig), minting excluded: `node --import tsx scripts/prof-boundary.ts [out.cpuprofile]`, then
 * `node scripts/prof-top.cjs out.cpuprofile 40`. Prints executions per second of the profiled run.
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { boundaryRig } from "../bench/boundary.js";
import { memoryStore } from "../src/index.js";

const out = process.argv[2] ?? "boundary.cpuprofile";
const rig = await boundaryRig(memoryStore());
await rig.run(3000, 8);
const session = new Session();
session.connect();
await session.post("Profiler.enable");
// The rig mints (signs) each batch before timing it: the profiler starts after minting.
const n = Number(process.env.WRIT_PROF_N ?? 20000);
const pending = rig.run(n, 8, async () => {
  await session.post("Profiler.start");
});
const rate = await pending;
const { profile } = await session.post("Profiler.stop");
writeFileSync(out, JSON.stringify(profile));
console.log(`${Math.round(rate)}/s -> ${out}`);
