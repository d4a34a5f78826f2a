/**
 * Rate as history grows (`npm run bench -- growth`): one host with one worker (concurrency 8) on
 * PostgreSQL, one scope, a closed loop of 16 invocations in flight (each completion submits the
 * next), a one-step no-op action under a real allow policy, run without pause for
 * WRIT_BENCH_GROWTH_SECS seconds (default 300), the rate reported per WINDOW_S-second window.
 *
 * Two servers, one after the other (never at once: they would share the two cores):
 * - the test server (tests/helpers/pg.ts: 127.0.0.1:5432 here, whose autovacuum is off, as in many
 *   CI images): goal, no window below half of the first;
 * - a private instance with PostgreSQL's defaults (autovacuum on), started from the machine's
 *   binaries (tests/helpers/pg-instance.ts): goal, every window >= 0.8 of the first.
 *
 * - the same private instance again, on a fresh database preloaded with WRIT_BENCH_GROWTH_PRELOAD
 *   (default 1,000,000; 0 skips the run) ended invocations in the loop's own scope (each with its
 *   attempt, step and sealed journal entry, written the way the store writes them: inserted
 *   queued, claimed, settled), then vacuumed: goal, its median rate >= 0.9 of the empty database's.
 *
 * Rates are also given per minute (the mean of six windows): the goals read per minute.
 *
 * The first window includes the host's warm-up (JIT, prepared statements, first plans), which
 * flatters later windows; the result also gives the minimum over the median of all windows.
 * Written to bench/results/growth.json.
 */
import { loadavg } from "node:os";
import { postgresStore } from "../src/stores/postgres/index.js";
import { freshDatabase, pgServerOrNull } from "../tests/helpers/pg.js";
import { startPgInstance } from "../tests/helpers/pg-instance.js";
import { ACTION, closedLoop, SCOPE, WINDOW_S } from "./closed-loop.js";
import { median } from "./lib.js";

export interface GrowthRun {
  server: string;
  autovacuum: string;
  seconds: number;
  /** Invocations settled per second, per window. */
  rates: number[];
  invocations: number;
  lastOverFirst: number;
  minOverFirst: number;
  minOverMedian: number;
  /** Dead and live rows of the two largest tables at the end (pg_stat_user_tables). */
  tables: Record<string, { live: number; dead: number }>;
}

async function runLoop(url: string, server: string, seconds: number): Promise<GrowthRun> {
  const store = postgresStore({ url }, { max: 12, applicationName: "writ-bench-growth" });
  await store.migrate();
  let rates: number[];
  let done: number;
  try {
    ({ rates, invocations: done } = await closedLoop(store, { label: server, seconds, pollMs: 1000 }));
  } finally {
    await store.close();
  }
  const pg = await import("pg");
  const c = new pg.default.Client({ connectionString: url });
  await c.connect();
  const av = (await c.query<{ autovacuum: string }>("SHOW autovacuum")).rows[0]!.autovacuum;
  const t = await c.query<{ relname: string; live: string; dead: string }>(
    "SELECT relname, n_live_tup AS live, n_dead_tup AS dead FROM pg_stat_user_tables WHERE relname IN ('writ_invocations', 'writ_journal')",
  );
  await c.end();
  const first = rates[0]!;
  return {
    server,
    autovacuum: av,
    seconds,
    rates,
    invocations: done,
    lastOverFirst: rates.at(-1)! / first,
    minOverFirst: Math.min(...rates) / first,
    minOverMedian: Math.min(...rates) / median(rates),
    tables: Object.fromEntries(t.rows.map((r) => [r.relname, { live: Number(r.live), dead: Number(r.dead) }])),
  };
}

export interface GrowthResult {
  loadavg: number[];
  runs: GrowthRun[];
  /** Ended invocations preloaded for the last run (0: no such run). */
  preloaded: number;
  /** Seconds the preload (and its VACUUM ANALYZE) took. */
  preloadSeconds: number;
  /** Median rate on the preloaded database over the median rate on the empty one (same instance). */
  preloadedOverEmpty: number | null;
  goals: { testServerMinOverFirst: number; defaultsMinOverFirst: number; preloadedOverEmpty: number };
}

/** `n` ended invocations in the bench's scope, written in chunks the way the store writes them. */
async function preload(url: string, n: number): Promise<void> {
  const pg = await import("pg");
  const c = new pg.default.Client({ connectionString: url });
  await c.connect();
  try {
    const [T, S] = [SCOPE.tenantId, SCOPE.spaceId];
    const chunk = 100_000;
    for (let from = 1; from <= n; from += chunk) {
      const to = Math.min(n, from + chunk - 1);
      const range = `FROM generate_series(${from}, ${to}) AS g`;
      const mine = `tenant_id = '${T}' AND space_id = '${S}' AND invocation_id LIKE 'old_%'`;
      await c.query(`INSERT INTO writ_invocations (tenant_id, space_id, invocation_id, action, idempotency_key, status, run_at, attempt_count, created_at, updated_at, doc)
                     SELECT '${T}', '${S}', 'old_' || g, '${ACTION.id}', 'old-' || g, 'queued', g, 0, g, g, json_build_object('invocationId', 'old_' || g) ${range}`);
      await c.query(`UPDATE writ_invocations SET status = 'running', lease_owner = 'w', lease_token = 't' || invocation_id, lease_expires_at = run_at + 30000, attempt_count = 1 WHERE ${mine} AND status = 'queued'`);
      await c.query(`UPDATE writ_invocations SET status = 'succeeded', lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL WHERE ${mine} AND status = 'running'`);
      await c.query(`INSERT INTO writ_attempts (tenant_id, space_id, attempt_id, seq, invocation_id, state, doc) SELECT '${T}', '${S}', 'att_old_' || g, g, 'old_' || g, 'EXECUTING', '{}' ${range}`);
      await c.query(`UPDATE writ_attempts SET state = 'SUCCEEDED' WHERE tenant_id = '${T}' AND space_id = '${S}' AND state = 'EXECUTING'`);
      await c.query(`INSERT INTO writ_steps (tenant_id, space_id, invocation_id, step_index, status, attempt_id, doc) SELECT '${T}', '${S}', 'old_' || g, 0, 'succeeded', 'att_old_' || g, '{}' ${range}`);
      await c.query(`INSERT INTO writ_journal (tenant_id, space_id, id, type, at, doc) SELECT '${T}', '${S}', 'old.' || g, 'invocation.succeeded', g, '{}' ${range}`);
      await c.query(`UPDATE writ_journal SET seq = ${from} + (pos - (SELECT min(pos) FROM writ_journal WHERE seq IS NULL AND tenant_id = '${T}')), hash = 'h' WHERE tenant_id = '${T}' AND space_id = '${S}' AND seq IS NULL`);
    }
    await c.query(`INSERT INTO writ_attempt_seqs (tenant_id, space_id, last_seq) VALUES ('${T}', '${S}', ${n}) ON CONFLICT (tenant_id, space_id) DO UPDATE SET last_seq = ${n}`);
    await c.query("VACUUM ANALYZE");
  } finally {
    await c.end();
  }
}

/** Per-minute rates: the mean of each full minute's windows. */
export function perMinute(rates: readonly number[]): number[] {
  const per = 60 / WINDOW_S;
  const out: number[] = [];
  for (let i = 0; i + per <= rates.length; i += per) out.push(rates.slice(i, i + per).reduce((a, b) => a + b, 0) / per);
  return out;
}

export async function benchGrowth(seconds = Number(process.env.WRIT_BENCH_GROWTH_SECS ?? 300), preloaded = Number(process.env.WRIT_BENCH_GROWTH_PRELOAD ?? 1_000_000)): Promise<GrowthResult> {
  const runs: GrowthRun[] = [];
  const server = await pgServerOrNull();
  if (server !== null) {
    const db = await freshDatabase();
    try {
      runs.push(await runLoop(db.url, `test server (${server.source})`, seconds));
    } finally {
      await db.drop();
    }
  }
  const inst = await startPgInstance();
  let preloadSeconds = 0;
  let preloadedOverEmpty: number | null = null;
  try {
    await inst.createDatabase("growth");
    const empty = await runLoop(inst.url("growth"), "private instance, PostgreSQL defaults", seconds);
    runs.push(empty);
    if (preloaded > 0) {
      await inst.createDatabase("growth_preloaded");
      const url = inst.url("growth_preloaded");
      const store = postgresStore({ url }, { max: 2 });
      await store.migrate();
      await store.close();
      const t0 = Date.now();
      console.log(`  preloading ${preloaded} ended invocations ...`);
      await preload(url, preloaded);
      preloadSeconds = (Date.now() - t0) / 1000;
      const full = await runLoop(url, `private instance, PostgreSQL defaults, ${preloaded} ended invocations preloaded`, seconds);
      runs.push(full);
      preloadedOverEmpty = median(full.rates) / median(empty.rates);
    }
  } finally {
    await inst.close();
  }
  return { loadavg: loadavg(), runs, preloaded, preloadSeconds, preloadedOverEmpty, goals: { testServerMinOverFirst: 0.5, defaultsMinOverFirst: 0.8, preloadedOverEmpty: 0.9 } };
}
