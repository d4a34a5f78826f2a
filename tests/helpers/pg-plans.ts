/**
 * EXPLAIN helpers for the PostgreSQL store's hot statements on a long history, shared by
 * tests/stores/postgres-plans.test.ts (100,000 ended invocations) and `npm run bench -- plans`
 * (up to 1,000,000): a synthetic history written the way the store writes it, the hot statements
 * with the arguments a worker passes, and their plans with the buffers they touch.
 */
import type pg from "pg";
import { CLAIM, HEARTBEAT, NEXT_RUN_AT } from "../../src/stores/postgres/postgres-claims.js";
import { GET_ATTEMPT, GET_STEPS } from "../../src/stores/postgres/postgres-execution.js";
import type { Statement } from "../../src/stores/postgres/postgres-exec.js";
import { HEAD, LIST_UNSEALED } from "../../src/stores/postgres/postgres-journal.js";

/** The tenant and space the history is written in. */
export const T = "plans";
export const S = "s";

export interface Plan {
  nodes: Array<{ type: string; relation?: string; index?: string }>;
  buffers: number;
}

export function walk(node: Record<string, unknown>, out: Plan["nodes"]): void {
  const rel = node["Relation Name"] as string | undefined;
  const idx = node["Index Name"] as string | undefined;
  out.push({ type: node["Node Type"] as string, ...(rel ? { relation: rel } : {}), ...(idx ? { index: idx } : {}) });
  for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(child, out);
}

/** EXPLAIN (ANALYZE, BUFFERS) of one store statement, in a transaction rolled back afterwards. */
export async function explain(c: pg.Client, stmt: Statement, values: unknown[]): Promise<Plan> {
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
export async function functionPlans(c: pg.Client, sql: string, values: unknown[]): Promise<Plan[]> {
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
export async function history(c: pg.Client, n: number): Promise<void> {
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
export function hot(now: number): Array<{ name: string; stmt: Statement; values: unknown[] }> {
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

export const BAD = new Set(["Seq Scan", "Bitmap Heap Scan"]);
export const badNodes = (p: Plan): string[] => p.nodes.filter((n) => BAD.has(n.type) && n.relation?.startsWith("writ_")).map((n) => `${n.type} on ${n.relation}`);

