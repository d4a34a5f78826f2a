/**
 * Where the one-process PostgreSQL host loop waits: `npx tsx bench/prof-lane.ts`
 * (WRIT_PROF_SECS, default 10). bench/prof-loop.ts's loop (one host, one worker of concurrency 8,
 * 16 in flight, one scope) on a fresh database of the test server, after 3 s of warm-up. Prints:
 * - the rate, and CPU time per invocation of this process (all its threads, and its main thread's
 *   busy time by the event loop's utilization) and of the database server (every process of it,
 *   bench/lib.ts serverCpuMs), with the cores they add up to: a loop that uses less than the
 *   machine's cores waits on something other than the CPU;
 * - what the loop's backends did, from `pg_stat_activity` sampled as fast as one connection can
 *   (each sample a round trip): per backend, the share of samples in each state, wait event and
 *   statement (shares below 1% left out). `WRIT_PROF_SAMPLE=0` skips the sampling, which costs
 *   CPU of its own (compare rates with it off).
 */
import { availableParallelism } from "node:os";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { postgresStore } from "../src/stores/postgres/index.js";
import { freshDatabase } from "../tests/helpers/pg.js";
import { postmasterPid, serverCpuMs } from "./lib.js";
import { startHostLoop } from "./prof-loop.js";

const seconds = Number(process.env.WRIT_PROF_SECS ?? 10);
const sample = process.env.WRIT_PROF_SAMPLE !== "0";
const db = await freshDatabase();
const mon = new pg.Client({ connectionString: db.url });
await mon.connect();
try {
  const postmaster = await postmasterPid(mon);
  const store = postgresStore({ url: db.url });
  await store.migrate();
  const loop = await startHostLoop(store);
  await new Promise((r) => setTimeout(r, 3000));
  const d0 = loop.done();
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const e0 = performance.eventLoopUtilization();
  const s0 = postmaster === null ? Number.NaN : serverCpuMs(postmaster);
  const states = new Map<string, number>();
  let samples = 0;
  const end = t0 + seconds * 1000;
  if (sample) {
    while (performance.now() < end) {
      const r = await mon.query<{ pid: number; state: string; wait: string; q: string }>(
        `SELECT pid, state, coalesce(wait_event_type || ':' || wait_event, '') AS wait, CASE WHEN state = 'active' THEN left(query, 40) ELSE '' END AS q
           FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      );
      samples++;
      for (const x of r.rows) {
        const k = `${x.pid} ${x.state} ${x.wait} ${x.q}`;
        states.set(k, (states.get(k) ?? 0) + 1);
      }
    }
  } else {
    await new Promise((r) => setTimeout(r, seconds * 1000));
  }
  const n = loop.done() - d0;
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  const e = performance.eventLoopUtilization(e0);
  const server = postmaster === null ? Number.NaN : serverCpuMs(postmaster) - s0;
  const node = (c.user + c.system) / 1000;
  console.log(
    `${((n * 1000) / wall).toFixed(0)}/s over ${seconds} s: this process ${(node / n).toFixed(3)} ms CPU per invocation (main thread busy ${(e.active / n).toFixed(3)} ms), ` +
      `server ${(server / n).toFixed(3)} ms; together ${((node + server) / wall).toFixed(2)} of ${availableParallelism()} cores${sample ? " (the sampling included)" : ""}`,
  );
  if (sample) {
    console.log(`pg_stat_activity, ${samples} samples (pid, state, wait event, statement):`);
    for (const [k, v] of [...states].sort()) if (v / samples >= 0.01) console.log(`  ${((100 * v) / samples).toFixed(1).padStart(5)}% ${k}`);
  }
  await loop.stop();
  await store.close();
} finally {
  await mon.end();
  await db.drop();
}
