/**
 * CPU profile of one process running a host and its worker on PostgreSQL (bench/host.ts's action,
 * policy and connector; 16 in flight, worker concurrency 8, one scope), the submits included:
 * `node --import tsx bench/prof-host-pg.ts [out.cpuprofile]`, then
 * `node scripts/prof-top.cjs out.cpuprofile 40`. Prints invocations per second of the profiled run.
 * Proportions of a profile move much less with the machine's load than rates do.
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { postgresStore } from "../src/stores/postgres/index.js";
import { freshDatabase } from "../tests/helpers/pg.js";
import { startHostLoop } from "./prof-loop.js";

const out = process.argv[2] ?? "host-pg.cpuprofile";
const seconds = Number(process.env.WRIT_PROF_SECS ?? 15);
const db = await freshDatabase();
const store = postgresStore({ url: db.url });
await store.migrate();
const loop = await startHostLoop(store);
await new Promise((r) => setTimeout(r, 3000));
const session = new Session();
session.connect();
await session.post("Profiler.enable");
await session.post("Profiler.start");
const d0 = loop.done();
const t0 = performance.now();
await new Promise((r) => setTimeout(r, seconds * 1000));
const rate = ((loop.done() - d0) * 1000) / (performance.now() - t0);
const { profile } = await session.post("Profiler.stop");
await loop.stop();
await store.close();
await db.drop();
writeFileSync(out, JSON.stringify(profile));
console.log(`${Math.round(rate)}/s -> ${out}`);
