/**
 * CPU profile of one process running a host and its worker on PostgreSQL (bench/host.ts's action,
 * policy and connector; 16 in flight, worker concurrency 8, one scope), the submits included:
 * `node --import tsx bench/prof-host-pg.ts [out.cpuprofile]`, then
 * `node scripts/prof-top.cjs out.cpuprofile 40`. Prints invocations per second of the profiled run.
 * Proportions of a profile move much less with the machine's load than rates do.
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { generateSigningKey } from "../src/index.js";
import { postgresStore } from "../src/stores/postgres/index.js";
import { freshDatabase } from "../tests/helpers/pg.js";
import { benchActionHost } from "./host.js";

const out = process.argv[2] ?? "host-pg.cpuprofile";
const seconds = Number(process.env.WRIT_PROF_SECS ?? 15);
const db = await freshDatabase();
const store = postgresStore({ url: db.url });
await store.migrate();
let done = 0;
const waiters = new Map<string, () => void>();
// An invocation may succeed before its submit's answer is read: remembered here.
const early = new Set<string>();
const host = benchActionHost(store, generateSigningKey({ kid: "prof" }), {
  succeeded(id) {
    done++;
    const w = waiters.get(id);
    if (w !== undefined) w();
    else early.add(id);
  },
  ended(id, why) {
    throw new Error(`${id} ended: ${why}`);
  },
});
const scope = { tenantId: "bench", spaceId: "s" };
await host.authorities.create(scope, { authorityRef: "a1", principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "ops" }, actions: ["bench.noop"] });
const worker = host.worker({ concurrency: 8 });
worker.start();
await store.listening?.();
let n = 0;
let stop = false;
async function loop(): Promise<void> {
  while (!stop) {
    const i = n++;
    const r = await host.submit({ ...scope, action: "bench.noop", actionVersion: "1", params: { n: i }, actor: { type: "agent", id: "bot" }, authorityRef: "a1", idempotencyKey: `k${i}` });
    const id = r.invocation.invocationId;
    if (early.delete(id)) continue;
    await new Promise<void>((res) => waiters.set(id, res));
    waiters.delete(id);
  }
}
const warm = Array.from({ length: 16 }, () => loop());
await new Promise((r) => setTimeout(r, 3000));
const session = new Session();
session.connect();
await session.post("Profiler.enable");
await session.post("Profiler.start");
const d0 = done;
const t0 = performance.now();
await new Promise((r) => setTimeout(r, seconds * 1000));
const rate = ((done - d0) * 1000) / (performance.now() - t0);
const { profile } = await session.post("Profiler.stop");
stop = true;
await Promise.all(warm);
await worker.stop();
await store.close();
await db.drop();
writeFileSync(out, JSON.stringify(profile));
console.log(`${Math.round(rate)}/s -> ${out}`);
