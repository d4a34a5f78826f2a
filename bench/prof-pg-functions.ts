/**
 * Server time per invocation of the host loop on PostgreSQL, by statement and by function:
 * `node --import tsx bench/prof-pg-functions.ts` (WRIT_PROF_SECS, default 15). A private instance
 * (PostgreSQL's defaults, autovacuum on) with pg_stat_statements (`track = all`, so the statements
 * inside the store's functions count) and `track_functions = all`; one host, one worker
 * (concurrency 8), 16 in flight, bench/host.ts's one-step no-op action. Prints the invocations per
 * second, then per statement its server milliseconds and calls per invocation (T: top level) and
 * buffer hits per invocation, then per function its own and total milliseconds per invocation.
 * The tracking costs server time itself: compare figures of this script with each other, not with
 * the benches'. Proportions move much less with the machine's load than rates do.
 */
import pg from "pg";
import { postgresStore } from "../src/stores/postgres/index.js";
import { startPgInstance } from "../tests/helpers/pg-instance.js";
import { startHostLoop } from "./prof-loop.js";

const inst = await startPgInstance({ conf: ["shared_preload_libraries = 'pg_stat_statements'", "pg_stat_statements.track = all", "track_functions = all"] });
await inst.createDatabase("st");
const url = inst.url("st");
const store = postgresStore({ url });
await store.migrate();
const c = new pg.Client({ connectionString: url });
await c.connect();
await c.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
const loop = await startHostLoop(store);
await new Promise((r) => setTimeout(r, 3000));
await c.query("SELECT pg_stat_statements_reset()");
await c.query("SELECT pg_stat_reset()");
const d0 = loop.done();
const t0 = performance.now();
await new Promise((r) => setTimeout(r, Number(process.env.WRIT_PROF_SECS ?? 15) * 1000));
const k = loop.done() - d0;
console.log(`${Math.round((k * 1000) / (performance.now() - t0))}/s, ${k} invocations`);
const top = await c.query(`SELECT calls, round(total_exec_time::numeric,1) AS ms, round((total_exec_time/${k})::numeric,3) AS ms_per_inv, round((calls::numeric/${k}),2) AS per_inv, shared_blks_hit/${k} AS hit_per_inv, toplevel, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS q FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 40`);
for (const r of top.rows) console.log(`${r.toplevel ? "T" : " "} ${String(r.ms_per_inv).padStart(7)} ms/inv ${String(r.per_inv).padStart(6)}x hit/inv=${r.hit_per_inv} ${r.q}`);
const f = await c.query(`SELECT funcname, calls, round((self_time/${k})::numeric,3) AS self_per_inv, round((total_time/${k})::numeric,3) AS total_per_inv FROM pg_stat_user_functions ORDER BY total_time DESC LIMIT 15`);
for (const r of f.rows) console.log(`F ${r.funcname} calls=${r.calls} self/inv=${r.self_per_inv} total/inv=${r.total_per_inv}`);
await loop.stop();
await store.close();
await c.end();
await inst.stop();
