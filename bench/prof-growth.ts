/**
 * What the server does in each window of the growth bench's loop (`npm run bench -- growth`):
 * `node --import tsx bench/prof-growth.ts` (WRIT_PROF_SECS, default 180; WRIT_PROF_PRELOAD ended
 * invocations preloaded first the way the growth bench preloads them, default 0).
 *
 * A private instance with PostgreSQL's defaults plus pg_stat_statements (`track = all`, so the
 * statements inside the store's functions count) runs the loop (one host, one worker of
 * concurrency 8, 16 in flight, one scope). For each 10-s window it prints the rate; checkpoints
 * begun; WAL and full-page images per invocation (`pg_stat_wal`); which vacuums and checkpoints it
 * saw in progress (sampled every 0.5 s); and the statements whose server time per invocation was
 * largest in that window, with their buffers per call. A statement whose time per call grows from
 * window to window is what makes the rate fall as work accumulates. Tracking costs server time:
 * compare windows of one run with each other, not with the bench's rates.
 */
import pg from "pg";
import { postgresStore } from "../src/stores/postgres/index.js";
import { startPgInstance } from "../tests/helpers/pg-instance.js";
import { closedLoop } from "./closed-loop.js";
import { preload } from "./growth.js";

const seconds = Number(process.env.WRIT_PROF_SECS ?? 180);
const preloaded = Number(process.env.WRIT_PROF_PRELOAD ?? 0);
const TOP = 4;

const inst = await startPgInstance({ conf: ["shared_preload_libraries = 'pg_stat_statements'", "pg_stat_statements.track = all"] });
try {
  await inst.createDatabase("prof");
  const url = inst.url("prof");
  const store0 = postgresStore({ url }, { max: 2 });
  await store0.migrate();
  await store0.close();
  if (preloaded > 0) {
    console.log(`preloading ${preloaded} ended invocations ...`);
    await preload(url, preloaded);
  }
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  const sampler = new pg.Client({ connectionString: url });
  await sampler.connect();
  const seen = new Map<string, number>();
  let sampling = true;
  const sample = async (): Promise<void> => {
    while (sampling) {
      const r = await sampler.query<{ what: string }>(
        `SELECT coalesce(p.relid::regclass::text, '?') || ' ' || p.phase AS what FROM pg_stat_progress_vacuum p
          UNION ALL SELECT 'checkpoint' FROM pg_stat_activity WHERE backend_type = 'checkpointer' AND wait_event IS DISTINCT FROM 'CheckpointerMain'`,
      );
      for (const x of r.rows) seen.set(x.what, (seen.get(x.what) ?? 0) + 1);
      await new Promise((res) => setTimeout(res, 500));
    }
  };
  const sampled = sample().catch(() => undefined);
  type Snap = { ck: number; wal: number; fpi: number; stmts: Map<string, { ms: number; calls: number; blks: number }> };
  const snap = async (): Promise<Snap> => {
    const g = (await c.query<{ ck: string; wal: string; fpi: string }>("SELECT (checkpoints_timed + checkpoints_req)::text AS ck, (SELECT wal_bytes::text FROM pg_stat_wal) AS wal, (SELECT wal_fpi::text FROM pg_stat_wal) AS fpi FROM pg_stat_bgwriter")).rows[0]!;
    const rows = (await c.query<{ q: string; ms: number; calls: string; blks: string }>("SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS q, total_exec_time AS ms, calls::text, (shared_blks_hit + shared_blks_read)::text AS blks FROM pg_stat_statements")).rows;
    const stmts = new Map<string, { ms: number; calls: number; blks: number }>();
    for (const r of rows) {
      const o = stmts.get(r.q) ?? { ms: 0, calls: 0, blks: 0 };
      stmts.set(r.q, { ms: o.ms + Number(r.ms), calls: o.calls + Number(r.calls), blks: o.blks + Number(r.blks) });
    }
    return { ck: Number(g.ck), wal: Number(g.wal), fpi: Number(g.fpi), stmts };
  };
  const store = postgresStore({ url }, { max: 12, applicationName: "writ-prof-growth" });
  let prev = await snap();
  let prevDone = 0;
  let chain = Promise.resolve();
  try {
    await closedLoop(store, {
      label: "loop",
      seconds,
      onWindow: (done) => {
        chain = chain.then(async () => {
          const s = await snap();
          const n = Math.max(1, done - prevDone);
          prevDone = done;
          const top = [...s.stmts.entries()]
            .map(([q, v]) => {
              const p = prev.stmts.get(q) ?? { ms: 0, calls: 0, blks: 0 };
              const calls = v.calls - p.calls;
              return { q, ms: v.ms - p.ms, calls, blks: calls > 0 ? (v.blks - p.blks) / calls : 0 };
            })
            .sort((a, b) => b.ms - a.ms)
            .slice(0, TOP);
          const bg = [...seen.entries()].map(([k, v]) => `${k} x${v}`).join(", ");
          seen.clear();
          console.log(
            `  ${(n / 10).toFixed(0)}/s | checkpoints +${s.ck - prev.ck} | WAL ${Math.round((s.wal - prev.wal) / n)} B, FPI ${((s.fpi - prev.fpi) / n).toFixed(2)} per invocation${bg ? ` | ${bg}` : ""}`,
          );
          for (const t of top) console.log(`      ${(t.ms / n).toFixed(3)} ms/inv ${(t.calls / n).toFixed(2)} calls/inv ${t.blks.toFixed(0)} buffers/call  ${t.q}`);
          prev = s;
        });
      },
    });
  } finally {
    await chain;
    sampling = false;
    await sampled;
    await store.close();
    await sampler.end();
    await c.end();
  }
} finally {
  await inst.close();
}
