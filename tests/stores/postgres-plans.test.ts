/**
 * The hot statements' plans on a database holding a long history (docs/stores.md, "Hot statements
 * and history"). 100,000 ended invocations (each written queued, then claimed, then settled, so
 * their dead row versions and index entries are there as in real use), their attempts, steps and
 * a sealed journal (each entry written unsealed, then sealed), beside a little live work; then
 * 10x less history in a second database for comparison.
 *
 * Invariants checked, for the claim, the next-run read, the heartbeat, the attempt and steps
 * look-ups and the journal head read:
 * - the store's statistics keeper (postgres-stats.ts) finds the stale hot tables and analyzes them,
 *   and where autovacuum does not run it vacuums those whose dead rows passed 10%,
 *   and then finds nothing left to do;
 * - no sequential or bitmap scan of a Writ table in any of those statements' plans;
 * - the buffers each statement touches do not follow the history: with 10x the history (after a
 *   vacuum, as autovacuum would have run) they grow by at most a quarter plus a few pages (one more
 *   B-tree level per index descent);
 * - without any vacuum, the claim still uses its two partial indexes in order (a plain scan marks
 *   the dead entries it passes); its buffers are printed.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLAIM, HEARTBEAT, NEXT_RUN_AT } from "../../src/stores/postgres/postgres-claims.js";
import { GET_ATTEMPT, GET_STEPS } from "../../src/stores/postgres/postgres-execution.js";
import { ConnectionExec, type Statement } from "../../src/stores/postgres/postgres-exec.js";
import { HEAD, LIST_UNSEALED } from "../../src/stores/postgres/postgres-journal.js";
import { analyzeStale } from "../../src/stores/postgres/postgres-stats.js";
import { migratePostgres } from "../../src/stores/postgres/postgres-migrate.js";
import { freshDatabase, pgServerOrNull, type FreshDatabase } from "../helpers/pg.js";

const server = await pgServerOrNull();
const HISTORY = 100_000;
const T = "plans";
const S = "s";

interface Plan {
  nodes: Array<{ type: string; relation?: string; index?: string }>;
  buffers: number;
}

function walk(node: Record<string, unknown>, out: Plan["nodes"]): void {
  const rel = node["Relation Name"] as string | undefined;
  const idx = node["Index Name"] as string | undefined;
  out.push({ type: node["Node Type"] as string, ...(rel ? { relation: rel } : {}), ...(idx ? { index: idx } : {}) });
  for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(child, out);
}

/** EXPLAIN (ANALYZE, BUFFERS) of one store statement, in a transaction rolled back afterwards. */
async function explain(c: pg.Client, stmt: Statement, values: unknown[]): Promise<Plan> {
  await c.query("BEGIN");
  try {
    const r = await c.query<{ "QUERY PLAN": Array<{ Plan: Record<string, unknown> }> }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${stmt.text}`, values);
    const top = r.rows[0]!["QUERY PLAN"][0]!.Plan;
    const nodes: Plan["nodes"] = [];
    walk(top, nodes);
    return { nodes, buffers: Number(top["Shared Hit Blocks"] ?? 0) + Number(top["Shared Read Blocks"] ?? 0) };
  } finally {
    await c.query("ROLLBACK");
  }
}

/**
 * The plans of the statements a function runs (the hot path calls `writ_claim`, not the generic
 * path's CLAIM statement): auto_explain logs each nested statement's plan, sent to this client as
 * notices, in a transaction rolled back afterwards.
 */
async function functionPlans(c: pg.Client, sql: string, values: unknown[]): Promise<Plan[]> {
  const messages: string[] = [];
  const onNotice = (n: { message?: string }): void => void messages.push(n.message ?? "");
  c.on("notice", onNotice);
  await c.query("BEGIN");
  try {
    await c.query("LOAD 'auto_explain'");
    for (const set of ["log_min_duration = 0", "log_nested_statements = on", "log_analyze = on", "log_buffers = on", "log_format = 'json'"]) await c.query(`SET LOCAL auto_explain.${set}`);
    await c.query("SET LOCAL client_min_messages = log");
    await c.query(sql, values);
  } finally {
    await c.query("ROLLBACK");
    c.off("notice", onNotice);
  }
  return messages
    .filter((m) => m.includes("plan:"))
    .map((m) => {
      const top = (JSON.parse(m.slice(m.indexOf("plan:") + 5)) as { Plan: Record<string, unknown> }).Plan;
      const nodes: Plan["nodes"] = [];
      walk(top, nodes);
      return { nodes, buffers: Number(top["Shared Hit Blocks"] ?? 0) + Number(top["Shared Read Blocks"] ?? 0) };
    });
}

/** Writes `n` ended invocations the way the store does (insert, claim, settle; journal unsealed, then sealed), and a little live work. */
async function history(c: pg.Client, n: number): Promise<void> {
  const range = `FROM generate_series(1, ${n}) AS g`;
  await c.query(`INSERT INTO writ_invocations (tenant_id, space_id, invocation_id, action, idempotency_key, status, run_at, attempt_count, created_at, updated_at, doc)
                 SELECT '${T}', '${S}', 'inv_' || g, 'a', 'k' || g, 'queued', g, 0, g, g, '{}' ${range}`);
  await c.query(`UPDATE writ_invocations SET status = 'running', lease_owner = 'w', lease_token = 't' || invocation_id, lease_expires_at = run_at + 30000, attempt_count = 1 WHERE tenant_id = '${T}'`);
  await c.query(`UPDATE writ_invocations SET status = 'succeeded', lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL WHERE tenant_id = '${T}'`);
  await c.query(`INSERT INTO writ_attempt_seqs (tenant_id, space_id, last_seq) VALUES ('${T}', '${S}', ${n})`);
  await c.query(`INSERT INTO writ_attempts (tenant_id, space_id, attempt_id, seq, invocation_id, state, doc) SELECT '${T}', '${S}', 'att_' || g, g, 'inv_' || g, 'started', '{}' ${range}`);
  await c.query(`UPDATE writ_attempts SET state = 'succeeded' WHERE tenant_id = '${T}'`);
  await c.query(`INSERT INTO writ_steps (tenant_id, space_id, invocation_id, step_index, status, attempt_id, doc) SELECT '${T}', '${S}', 'inv_' || g, 0, 'succeeded', 'att_' || g, '{}' ${range}`);
  await c.query(`INSERT INTO writ_journal (tenant_id, space_id, id, type, at, doc) SELECT '${T}', '${S}', 'e' || g, 'invocation.succeeded', g, '{}' ${range}`);
  // Sealed as the sequencer seals (migration 11): a link per entry in the chain, the queue emptied.
  await c.query(`INSERT INTO writ_journal_chain (tenant_id, space_id, seq, id, prev_hash, hash)
                 SELECT tenant_id, space_id, pos - (SELECT min(pos) FROM writ_journal) + 1, id, NULL, 'h' FROM writ_journal WHERE tenant_id = '${T}'`);
  await c.query(`DELETE FROM writ_journal_pending WHERE tenant_id = '${T}'`);
  // Live work: 20 queued and due, 3 running with lapsed leases, 3 running and live.
  await c.query(`INSERT INTO writ_invocations (tenant_id, space_id, invocation_id, action, idempotency_key, status, run_at, lease_owner, lease_token, lease_expires_at, attempt_count, created_at, updated_at, doc)
                 SELECT '${T}', '${S}', 'live_' || g, 'a', 'live' || g, CASE WHEN g <= 20 THEN 'queued' ELSE 'running' END, ${n} + g,
                        CASE WHEN g > 20 THEN 'w2' END, CASE WHEN g > 20 THEN 'lt' || g END, CASE WHEN g > 23 THEN 1e15::bigint WHEN g > 20 THEN ${n} END,
                        1, ${n} + g, ${n} + g, '{}' FROM generate_series(1, 26) AS g`);
  // Live journal entries: 5 written and not yet sealed (queued by the trigger).
  await c.query(`INSERT INTO writ_journal (tenant_id, space_id, id, type, at, doc) SELECT '${T}', '${S}', 'live_e' || g, 'invocation.claimed', ${n} + g, '{}' FROM generate_series(1, 5) AS g`);
  // This session's counts reach pg_stat_user_tables now, not up to a second later (the keeper reads them there).
  await c.query("SELECT pg_stat_force_next_flush()");
  await c.query("SELECT 1");
}

/** The hot statements, with the arguments a worker passes. */
function hot(now: number): Array<{ name: string; stmt: Statement; values: unknown[] }> {
  return [
    { name: "claim", stmt: CLAIM, values: ["w3", now, 30_000, 8, Array.from({ length: 8 }, (_, i) => `tok${i}`)] },
    { name: "nextRunAt", stmt: NEXT_RUN_AT, values: [] },
    { name: "heartbeat", stmt: HEARTBEAT, values: ["w2", now, 30_000] },
    { name: "getAttempt", stmt: GET_ATTEMPT, values: [T, S, "att_77"] },
    { name: "getSteps", stmt: GET_STEPS, values: [T, S, "inv_77"] },
    { name: "journalHead", stmt: HEAD, values: [T, S] },
    { name: "listUnsealed", stmt: LIST_UNSEALED, values: [T, S, 100] },
  ];
}

const BAD = new Set(["Seq Scan", "Bitmap Heap Scan"]);
const badNodes = (p: Plan): string[] => p.nodes.filter((n) => BAD.has(n.type) && n.relation?.startsWith("writ_")).map((n) => `${n.type} on ${n.relation}`);

describe.skipIf(server === null)("PostgreSQL hot statements on a long history", () => {
  const dbs: FreshDatabase[] = [];
  const clients: pg.Client[] = [];
  const open = async (): Promise<pg.Client> => {
    const db = await freshDatabase({ empty: true });
    dbs.push(db);
    const c = new pg.Client({ connectionString: db.url });
    c.on("error", () => undefined);
    await c.connect();
    clients.push(c);
    await migratePostgres(c);
    // This test decides when vacuum runs: autovacuum stays out of its tables.
    for (const t of ["writ_invocations", "writ_journal", "writ_journal_chain", "writ_journal_pending", "writ_attempts", "writ_steps"]) await c.query(`ALTER TABLE ${t} SET (autovacuum_enabled = false)`);
    return c;
  };
  /** The keeper's check; `vacuum: false` keeps it to statistics (the first test decides when vacuum runs). */
  const analyze = async (c: pg.Client, o: { vacuum?: boolean } = { vacuum: false }): Promise<string[]> => {
    const x = new ConnectionExec(c, false, []);
    const done = await analyzeStale(x, (text) => x.command(text), o);
    return [...done.analyzed, ...done.vacuumed].sort();
  };
  let big: pg.Client;
  let small: pg.Client;

  beforeAll(async () => {
    big = await open();
    small = await open();
    await history(big, HISTORY);
    await history(small, HISTORY / 10);
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) await c.end().catch(() => undefined);
    for (const db of dbs) await db.drop();
  });

  it("the statistics keeper analyzes the stale hot tables, and the plans are index scans", async () => {
    const now = HISTORY * 10;
    const stale = await analyze(big);
    expect(stale).toEqual(expect.arrayContaining(["writ_attempts", "writ_invocations", "writ_journal", "writ_steps"]));
    // A second check right after finds nothing left to do.
    expect(await analyze(big)).toEqual([]);
    for (const h of hot(now)) {
      const p = await explain(big, h.stmt, h.values);
      expect(badNodes(p), `${h.name}: ${JSON.stringify(p.nodes)}`).toEqual([]);
    }
    const claim = await explain(big, CLAIM, hot(now)[0]!.values);
    const indexes = claim.nodes.map((n) => n.index).filter(Boolean);
    expect(indexes).toEqual(expect.arrayContaining(["writ_invocations_queued", "writ_invocations_leases"]));
    // The function the hot path calls picks the same way.
    const fn = await functionPlans(big, "SELECT writ_claim($1, $2, $3, $4, $5)", hot(now)[0]!.values);
    const fnNodes = fn.flatMap((p) => p.nodes);
    expect(fn.length, "auto_explain reported the function's statements").toBeGreaterThan(0);
    expect(badNodes({ nodes: fnNodes, buffers: 0 }), JSON.stringify(fnNodes)).toEqual([]);
    expect(fnNodes.map((n) => n.index).filter(Boolean)).toEqual(expect.arrayContaining(["writ_invocations_queued", "writ_invocations_leases"]));
    console.log(`[plans] no vacuum, ${HISTORY} ended invocations: claim touches ${claim.buffers} buffers (writ_claim's statement ${Math.max(...fn.map((p) => p.buffers))})`);
  });

  it("where autovacuum does not run, the keeper vacuums the hot tables whose dead rows passed 10%", async () => {
    // A fresh history with autovacuum off for its tables: the updates left a dead row per update.
    const c = await open();
    await history(c, HISTORY / 10);
    const dead = async (): Promise<number> => {
      // Statistics reach the shared counters with a delay (a backend flushes its own at most once
      // a second): ask this connection to flush, then read until two readings agree.
      let last = -1;
      for (let i = 0; i < 20; i++) {
        await c.query("SELECT pg_stat_force_next_flush()");
        const r = await c.query<{ n: string }>("SELECT sum(n_dead_tup) AS n FROM pg_stat_user_tables WHERE relname IN ('writ_invocations', 'writ_attempts', 'writ_journal')");
        const n = Number(r.rows[0]!.n);
        if (n === last) return n;
        last = n;
        await new Promise((res) => setTimeout(res, 250));
      }
      return last;
    };
    const before = await dead();
    expect(before).toBeGreaterThan(HISTORY / 10);
    const x = new ConnectionExec(c, false, []);
    const done = await analyzeStale(x, (text) => x.command(text));
    expect(done.vacuumed).toEqual(expect.arrayContaining(["writ_attempts", "writ_invocations"]));
    expect(await dead()).toBeLessThan(before / 10);
  });

  it("with 10x the history the hot statements touch about as many buffers (after a vacuum)", async () => {
    const now = HISTORY * 10;
    const figures: string[] = [];
    for (const c of [big, small]) {
      for (const t of ["writ_invocations", "writ_journal", "writ_journal_chain", "writ_journal_pending", "writ_attempts", "writ_steps"]) await c.query(`VACUUM ${t}`);
      await analyze(c);
      await c.query("ANALYZE");
    }
    for (const [i, h] of hot(now).entries()) {
      // Twice: the first run of a statement may still visit entries only a scan marks dead.
      await explain(small, h.stmt, h.values);
      await explain(big, h.stmt, h.values);
      const s = await explain(small, hot(now)[i]!.stmt, h.values);
      const b = await explain(big, h.stmt, h.values);
      figures.push(`${h.name} ${s.buffers} -> ${b.buffers}`);
      expect(badNodes(b), `${h.name}: ${JSON.stringify(b.nodes)}`).toEqual([]);
      // One more B-tree level per index descent at most (the claim updates 8 rows and so descends
      // every index of the table 8 times); nothing proportional to the history (10x).
      expect(b.buffers, `${h.name}: ${s.buffers} buffers with ${HISTORY / 10} ended invocations, ${b.buffers} with ${HISTORY}`).toBeLessThanOrEqual(Math.ceil(s.buffers * 1.25) + 8);
    }
    console.log(`[plans] buffers, ${HISTORY / 10} -> ${HISTORY} ended invocations (vacuumed): ${figures.join(", ")}`);
  });
});
