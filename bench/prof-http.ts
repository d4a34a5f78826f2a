/**
 * CPU profile of the main thread while bench/http.ts's admission-only load runs (worker stopped):
 * `node --import tsx bench/prof-http.ts http|host [out.cpuprofile]`, then
 * `node scripts/prof-top.cjs out.cpuprofile 40`. `http` drives the submit route with autocannon
 * (its own thread, as in the bench), `host` calls `host.submit` in process with as many callers.
 * Prints the rate and the group commit's logical transactions per physical COMMIT of the profiled
 * window. Proportions of a profile move much less with the machine's load than rates do.
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import type { GroupCommitStats } from "../src/stores/sqlite/sqlite-group-commit.js";
import { openHttpBench } from "./http.js";
import { mainThreadCpuMs } from "./lib.js";

const mode = process.argv[2];
if (mode !== "http" && mode !== "host") {
  console.error("usage: prof-http.ts http|host [out.cpuprofile]");
  process.exit(2);
}
const out = process.argv[3] ?? `${mode}.cpuprofile`;
const seconds = Number(process.env.WRIT_PROF_SECS ?? 8);
const rig = await openHttpBench();
const drive = (s: number) => (mode === "http" ? rig.submit(s) : rig.hostSubmit(s));
const stats = (): GroupCommitStats | undefined => (rig.runtime.store as { stats?: () => GroupCommitStats }).stats?.();
await drive(2);
const profiling = process.env.WRIT_PROF_OFF !== "1";
const session = new Session();
if (profiling) {
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.start");
}
const s0 = stats();
const c0 = mainThreadCpuMs();
const run = await drive(seconds);
const cpu = mainThreadCpuMs() - c0;
const s1 = stats();
if (profiling) {
  const { profile } = await session.post("Profiler.stop");
  writeFileSync(out, JSON.stringify(profile));
}
await rig.close();
const perCommit = s0 && s1 ? ((s1.logicalCommits - s0.logicalCommits) / Math.max(1, s1.commits - s0.commits)).toFixed(1) : "?";
const cpuPerReq = ((cpu * 1000) / run.requests).toFixed(0);
console.log(`${mode}: ${Math.round(run.perSec)}/s, p50 ${run.p50Ms.toFixed(1)} ms, ${run.non2xx} non-2xx, ${run.errors} errors, ${perCommit} logical transactions per COMMIT, main thread ${cpuPerReq} us CPU per request (${((cpu / (seconds * 1000)) * 100).toFixed(0)}% busy)${profiling ? ` -> ${out}` : ""}`);
