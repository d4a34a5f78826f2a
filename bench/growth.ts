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
 * Rates are also given per minute (the mean of six windows): the issue's goals read per minute.
 *
 * Beside each window's rate, three gauges. The machine's speed: the time of a fixed piece of
 * hashing at the window's end (bench/lib.ts calibrationMs), whatever the loop does. And CPU time
 * per invocation settled in the window, of the bench process (the host and its worker) and of the
 * database server (its postmaster, backends, autovacuum workers and other children, exited ones
 * included; Linux and a server on this machine only; on a shared server, other databases' work
 * counts too). A dip that comes with a slower calibration was the machine; one where the server's
 * CPU per invocation rises at an unchanged calibration paid for history or vacuum (the bench
 * process's rises somewhat too when batches get smaller). The machines these run on are shared
 * VMs whose speed moves by up to 2x within minutes, so a per-minute goal needs that distinction.
 *
 * The first window includes the host's warm-up (JIT, prepared statements, first plans), which
 * flatters later windows; the result also gives the minimum over the median of all windows.
 * Written to bench/results/growth.json.
 */
import { randomBytes } from "node:crypto";
import { loadavg } from "node:os";
import { timeOrderedId } from "../src/core/ids.js";
import { postgresStore } from "../src/stores/postgres/index.js";
import { freshDatabase, pgServerOrNull } from "../tests/helpers/pg.js";
import { startPgInstance } from "../tests/helpers/pg-instance.js";
import { closedLoop, SCOPE, WINDOW_S } from "./closed-loop.js";
import { calibrationMs, median, postmasterPid, serverCpuMs } from "./lib.js";

export interface GrowthRun {
  server: string;
  autovacuum: string;
  seconds: number;
  /** Invocations settled per second, per window. */
  rates: number[];
  /** Per window, CPU ms of the bench process (host and worker) per invocation settled in it (it rises too when batches get smaller). */
  benchCpuMsPerInvocation: number[];
  /** Per window, CPU ms of the database server (all its processes) per invocation settled in it; NaN when not measurable here. */
  serverCpuMsPerInvocation: number[];
  /** At each window's end, ms of a fixed piece of hashing (bench/lib.ts calibrationMs): the machine's speed, whatever the loop does. */
  calibrationMs: number[];
  invocations: number;
  lastOverFirst: number;
  minOverFirst: number;
  minOverMedian: number;
  /** Dead and live rows of the two largest tables at the end (pg_stat_user_tables). */
  tables: Record<string, { live: number; dead: number }>;
}

async function runLoop(url: string, server: string, seconds: number): Promise<GrowthRun> {
  const pg = await import("pg");
  const c = new pg.default.Client({ connectionString: url });
  await c.connect();
  try {
    const postmaster = await postmasterPid(c);
    const store = postgresStore({ url }, { max: 12, applicationName: "writ-bench-growth" });
    await store.migrate();
    let rates: number[];
    let done: number;
    const benchCpu: number[] = [];
    const serverCpu: number[] = [];
    const calibration: number[] = [];
    const cpuNow = (): { bench: number; server: number } => {
      const u = process.cpuUsage();
      return { bench: (u.user + u.system) / 1000, server: postmaster === null ? Number.NaN : serverCpuMs(postmaster) };
    };
    let last = { settled: 0, ...cpuNow() };
    const onWindow = (settled: number): void => {
      const now = { settled, ...cpuNow() };
      const n = settled - last.settled;
      benchCpu.push(n > 0 ? (now.bench - last.bench) / n : Number.NaN);
      serverCpu.push(n > 0 ? (now.server - last.server) / n : Number.NaN);
      calibration.push(calibrationMs());
      // The calibration's own few milliseconds belong to no window.
      last = { settled, ...cpuNow() };
    };
    try {
      ({ rates, invocations: done } = await closedLoop(store, { label: server, seconds, pollMs: 1000, onWindow }));
    } finally {
      await store.close();
    }
    const av = (await c.query<{ autovacuum: string }>("SHOW autovacuum")).rows[0]!.autovacuum;
    const t = await c.query<{ relname: string; live: string; dead: string }>(
      "SELECT relname, n_live_tup AS live, n_dead_tup AS dead FROM pg_stat_user_tables WHERE relname IN ('writ_invocations', 'writ_journal')",
    );
    const first = rates[0]!;
    return {
      server,
      autovacuum: av,
      seconds,
      rates,
      benchCpuMsPerInvocation: benchCpu,
      serverCpuMsPerInvocation: serverCpu,
      calibrationMs: calibration,
      invocations: done,
      lastOverFirst: rates.at(-1)! / first,
      minOverFirst: Math.min(...rates) / first,
      minOverMedian: Math.min(...rates) / median(rates),
      tables: Object.fromEntries(t.rows.map((r) => [r.relname, { live: Number(r.live), dead: Number(r.dead) }])),
    };
  } finally {
    await c.end();
  }
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

/** How the preload names its rows: as the store does now (ids that follow time), or purely random (the store before them). */
const PRELOAD_IDS = process.env.WRIT_BENCH_GROWTH_IDS === "random" ? "random" : "time";

/** An id of the preload, made `ago` ms before now, in the store's format (or a random one, WRIT_BENCH_GROWTH_IDS=random). */
function oldId(prefix: string, at: number): string {
  const r = randomBytes(16);
  return PRELOAD_IDS === "random" ? prefix + r.toString("base64url") : timeOrderedId(prefix, at, r);
}

/**
 * `n` ended invocations in the bench's scope, copied from real ones: the loop runs 10 seconds
 * first, so that every table holds the rows a real invocation leaves (invocation, attempt, step,
 * idempotency record, consumed decision, journal entries and their chain links); the preload copies
 * one of them `n` times, in chunks, with new ids made as the store makes them, dated over the 30
 * days before now (so they sort before the live ones when ids follow time). Invocations and attempts
 * are written as the store writes them (inserted, then updated), so their dead versions are there
 * until the final VACUUM ANALYZE. The copies' journal links carry placeholder hashes after the
 * sample's own chain (the hot path reads only the head).
 */
export async function preload(url: string, n: number): Promise<void> {
  const store = postgresStore({ url }, { max: 12, applicationName: "writ-bench-growth-sample" });
  try {
    await closedLoop(store, { label: "preload sample", seconds: 10, pollMs: 1000, keyPrefix: "sample-" });
  } finally {
    await store.close();
  }
  const pg = await import("pg");
  const c = new pg.default.Client({ connectionString: url });
  await c.connect();
  try {
    const [T, S] = [SCOPE.tenantId, SCOPE.spaceId];
    const scoped = `tenant_id = '${T}' AND space_id = '${S}'`;
    // One settled invocation of the sample, and every row it left.
    const inv = (await c.query<{ invocation_id: string }>(`SELECT invocation_id FROM writ_invocations WHERE ${scoped} AND status = 'succeeded' ORDER BY created_at LIMIT 1`)).rows[0]!.invocation_id;
    const invKey = (await c.query<{ action: string; idempotency_key: string }>(`SELECT action, idempotency_key FROM writ_invocations WHERE ${scoped} AND invocation_id = $1`, [inv])).rows[0]!;
    const att = (await c.query<{ attempt_id: string; doc: unknown }>(`SELECT attempt_id, doc FROM writ_attempts WHERE ${scoped} AND invocation_id = $1`, [inv])).rows[0]!;
    const dec = (await c.query<{ decision_id: string }>(`SELECT decision_id FROM writ_consumed_decisions WHERE ${scoped} AND attempt_id = $1`, [att.attempt_id])).rows[0]!.decision_id;
    const entries = (await c.query<{ id: string; type: string; doc: unknown }>(
      `SELECT id, type, doc FROM writ_journal WHERE ${scoped} AND (strpos(id, $1) > 0 OR strpos(id, $2) > 0 OR strpos(id, $3) > 0) ORDER BY pos`,
      [inv, att.attempt_id, dec],
    )).rows;
    if (entries.length === 0) throw new Error("growth preload: the sample invocation left no journal entries");
    console.log(`  preload: copies of ${inv} (${entries.length} journal entries: ${entries.map((e) => e.type).join(", ")})`);
    let seq = Number((await c.query<{ s: string }>(`SELECT coalesce(max(seq), 0) AS s FROM writ_journal_chain WHERE ${scoped}`)).rows[0]!.s);
    let attemptSeq = Number((await c.query<{ s: string }>(`SELECT coalesce(max(last_seq), 0) AS s FROM writ_attempt_seqs WHERE ${scoped}`)).rows[0]!.s);
    const start = Date.now() - 30 * 86_400_000;
    const span = 30 * 86_400_000 - 3_600_000;
    const chunk = 50_000;
    for (let from = 0; from < n; from += chunk) {
      const k = Math.min(chunk, n - from);
      const invs: string[] = [];
      const atts: string[] = [];
      const decs: string[] = [];
      const keys: string[] = [];
      const ats: number[] = [];
      for (let i = 0; i < k; i++) {
        const at = Math.floor(start + ((from + i) / n) * span);
        ats.push(at);
        invs.push(oldId("inv_", at));
        atts.push(oldId("att_", at));
        decs.push(oldId("dec_", at));
        keys.push(`old-${from + i}`);
      }
      const rows = `FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) WITH ORDINALITY AS g(inv, att, dec, key, at, n)`;
      const args = [invs, atts, decs, keys, ats];
      const mine = `${scoped} AND invocation_id = ANY($1::text[])`;
      await c.query(`INSERT INTO writ_invocations (tenant_id, space_id, invocation_id, action, idempotency_key, status, run_at, attempt_count, created_at, updated_at, doc, rev)
                     SELECT '${T}', '${S}', g.inv, i.action, g.key, 'queued', g.at, 0, g.at, g.at, i.doc, 1 ${rows}
                       CROSS JOIN (SELECT action, doc FROM writ_invocations WHERE ${scoped} AND invocation_id = $6) i`, [...args, inv]);
      await c.query(`UPDATE writ_invocations SET status = 'running', lease_owner = 'w', lease_token = 't' || invocation_id, lease_expires_at = run_at + 30000, attempt_count = 1, rev = 2 WHERE ${mine}`, [invs]);
      await c.query(`UPDATE writ_invocations SET status = 'succeeded', lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, rev = 3 WHERE ${mine}`, [invs]);
      await c.query(`INSERT INTO writ_attempts (tenant_id, space_id, attempt_id, seq, invocation_id, state, doc)
                     SELECT '${T}', '${S}', g.att, ${attemptSeq} + g.n, g.inv, 'EXECUTING', $6::json ${rows}`, [...args, JSON.stringify(att.doc)]);
      await c.query(`UPDATE writ_attempts SET state = 'SUCCEEDED' WHERE ${scoped} AND attempt_id = ANY($1::text[])`, [atts]);
      attemptSeq += k;
      await c.query(`INSERT INTO writ_steps (tenant_id, space_id, invocation_id, step_index, status, attempt_id, connector, external_ref, doc)
                     SELECT '${T}', '${S}', g.inv, s.step_index, s.status, g.att, s.connector, s.external_ref, s.doc ${rows}
                       CROSS JOIN (SELECT * FROM writ_steps WHERE ${scoped} AND invocation_id = $6) s`, [...args, inv]);
      await c.query(`INSERT INTO writ_idempotency (tenant_id, space_id, action, idempotency_key, state, doc)
                     SELECT '${T}', '${S}', d.action, g.key, d.state, d.doc ${rows}
                       CROSS JOIN (SELECT * FROM writ_idempotency WHERE ${scoped} AND action = $6 AND idempotency_key = $7) d`, [...args, invKey.action, invKey.idempotency_key]);
      await c.query(`INSERT INTO writ_consumed_decisions (tenant_id, space_id, decision_id, attempt_id, consumed_at, doc)
                     SELECT '${T}', '${S}', g.dec, g.att, g.at, d.doc ${rows}
                       CROSS JOIN (SELECT * FROM writ_consumed_decisions WHERE ${scoped} AND attempt_id = $6) d`, [...args, att.attempt_id]);
      // The journal: each of the sample's entries again, named after the copy's ids; the insert
      // trigger queues them unsealed, so they are linked into the chain and taken off the queue.
      for (const e of entries) {
        const idExpr = `replace(replace(replace($6::text, $7::text, g.inv), $8::text, g.att), $11::text, g.dec)`;
        await c.query(`INSERT INTO writ_journal (tenant_id, space_id, id, type, at, doc) SELECT '${T}', '${S}', ${idExpr}, $9, g.at, $10::json ${rows} ORDER BY g.n`, [
          ...args, e.id, inv, att.attempt_id, e.type, JSON.stringify(e.doc), dec,
        ]);
      }
      // The copies' entries (dated at or before the preload's newest moment, unlike the sample's
      // own) leave the queue and become links after the chain's head, in one statement.
      const moved = await c.query(`WITH moved AS (
                       DELETE FROM writ_journal_pending WHERE ${scoped} AND at <= ${start + span} RETURNING tenant_id, space_id, pos, id)
                     INSERT INTO writ_journal_chain (tenant_id, space_id, seq, id, prev_hash, hash)
                     SELECT tenant_id, space_id, ${seq} + row_number() OVER (ORDER BY pos), id, 'h', 'h' FROM moved`);
      seq += moved.rowCount ?? 0;
    }
    await c.query(`UPDATE writ_attempt_seqs SET last_seq = ${attemptSeq} WHERE ${scoped}`);
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

/** Per-minute CPU per invocation: each full minute's windows weighted by the invocations they settled (rates x window). */
export function perMinuteCpu(rates: readonly number[], cpuPerInvocation: readonly number[]): number[] {
  const per = 60 / WINDOW_S;
  const out: number[] = [];
  for (let i = 0; i + per <= rates.length; i += per) {
    let cpu = 0;
    let n = 0;
    for (let j = i; j < i + per; j++) {
      if (rates[j]! === 0) continue; // nothing settled: no CPU per invocation (NaN)
      cpu += cpuPerInvocation[j]! * rates[j]!;
      n += rates[j]!;
    }
    out.push(n > 0 ? cpu / n : Number.NaN);
  }
  return out;
}

export async function benchGrowth(seconds = Number(process.env.WRIT_BENCH_GROWTH_SECS ?? 300), preloaded = Number(process.env.WRIT_BENCH_GROWTH_PRELOAD ?? 1_000_000)): Promise<GrowthResult> {
  const runs: GrowthRun[] = [];
  // WRIT_BENCH_GROWTH_TEST_SERVER=0 skips the test server's run (comparisons of the private instance's runs only).
  const server = process.env.WRIT_BENCH_GROWTH_TEST_SERVER === "0" ? null : await pgServerOrNull();
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
      const t0 = Date.now();
      console.log(`  preloading ${preloaded} ended invocations (ids: ${PRELOAD_IDS}) ...`);
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
