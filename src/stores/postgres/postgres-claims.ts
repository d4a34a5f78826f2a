/**
 * Cross-scope worker statements: claims, heartbeats, next run time and the sweeps.
 *
 * Worker statements across all scopes (with the sweeps, the only ones without a scope in their WHERE, as the port
 * defines them): batch claims, heartbeats, next run time.
 *
 * Sweep queries across all scopes (like claims): parked invocations past their completion
 * deadline, pending approvals past expiry. Both read partial indexes over just those rows.
 */
import { WritError } from "../../core/errors.js";
import type { ClaimOptions } from "../../core/store.js";
import type { Approval, CompletionRecord, Invocation, Scope } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { INVOCATION_READ, invocationFromRow, numOrNull, type DocRow, type InvocationRow } from "./postgres-rows.js";

const CLAIM_ORDER = "run_at, created_at, invocation_id, tenant_id, space_id";

/**
 * One statement: pick up to $4 runnable rows (queued and due, or running with an expired lease)
 * in claim order, skipping rows another transaction holds (`FOR UPDATE SKIP LOCKED`, evaluated
 * once as materialized CTEs), number them, pair the i-th with the i-th token of $5, and stamp
 * the lease. Concurrent claimers therefore never receive the same invocation, and never wait.
 *
 * The two kinds of runnable rows are picked apart, each by a plain scan of its own partial index
 * in that index's order, stopping at $4 rows: the due queue by (run_at, created_at,
 * invocation_id), lapsed leases oldest expiry first. One `OR` over both would be a bitmap scan
 * that visits every entry of both indexes, dead ones included (every ended invocation leaves one
 * until vacuum removes it, and a bitmap scan never marks them dead), so each claim would cost more
 * as history grows. A plain index scan marks the dead entries it passes, so the next claim skips
 * them (docs/stores.md, "Hot statements and history"). The two picks together, sorted, give the
 * same first $4 rows as one ordered scan would (lapsed leases are taken oldest expiry first).
 */
export const CLAIM = statement(
  "claim_invocations",
  `WITH due AS MATERIALIZED (
     SELECT tenant_id, space_id, invocation_id, run_at, created_at FROM writ_invocations
      WHERE status = 'queued' AND run_at <= $2
      ORDER BY run_at, created_at, invocation_id
      LIMIT $4
      FOR UPDATE SKIP LOCKED
   ), lapsed AS MATERIALIZED (
     SELECT tenant_id, space_id, invocation_id, run_at, created_at FROM writ_invocations
      WHERE status = 'running' AND lease_expires_at <= $2
      ORDER BY lease_expires_at
      LIMIT $4
      FOR UPDATE SKIP LOCKED
   ), picked AS (
     SELECT * FROM (SELECT * FROM due UNION ALL SELECT * FROM lapsed) AS runnable ORDER BY ${CLAIM_ORDER} LIMIT $4
   ), numbered AS (
     SELECT tenant_id, space_id, invocation_id, row_number() OVER (ORDER BY ${CLAIM_ORDER}) AS rn FROM picked
   )
   UPDATE writ_invocations i
      SET status = 'running', lease_owner = $1, lease_token = t.token, lease_expires_at = $2 + $3,
          attempt_count = i.attempt_count + 1, updated_at = $2, rev = i.rev + 1
     FROM numbered n JOIN unnest($5::text[]) WITH ORDINALITY AS t(token, ord) ON t.ord = n.rn
    WHERE i.tenant_id = n.tenant_id AND i.space_id = n.space_id AND i.invocation_id = n.invocation_id
   RETURNING n.rn, ${INVOCATION_READ.split(", ")
     .map((c) => `i.${c}`)
     .join(", ")}`,
);

/**
 * Extends an owner's live leases, locking the rows in (scope, invocation) order: the order in which
 * a batch of transitions locks them (docs/stores.md, "Batches"), so the two never wait on each
 * other in a cycle.
 */
export const HEARTBEAT = statement(
  "heartbeat_2",
  `UPDATE writ_invocations i SET lease_expires_at = $2 + $3
     FROM (SELECT tenant_id, space_id, invocation_id FROM writ_invocations
            WHERE status = 'running' AND lease_owner = $1 AND lease_expires_at > $2
            ORDER BY tenant_id, space_id, invocation_id FOR UPDATE) AS h
    WHERE i.tenant_id = h.tenant_id AND i.space_id = h.space_id AND i.invocation_id = h.invocation_id
      AND i.status = 'running' AND i.lease_owner = $1 AND i.lease_expires_at > $2`,
);

export const NEXT_RUN_AT = statement("next_run_at", "SELECT min(run_at) AS run_at FROM writ_invocations WHERE status = 'queued'");

function check(ok: boolean, what: string): void {
  if (!ok) throw new WritError("INVALID_ARGUMENT", what);
}

function isTime(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v);
}

/** Claims up to min(limit, tokens.length) runnable invocations, in (runAt, createdAt) order. */
export async function claimInvocations(x: Exec, opts: ClaimOptions): Promise<Invocation[]> {
  const { owner, tokens, now, leaseMs, limit } = opts;
  check(typeof owner === "string" && owner.length > 0, "claimInvocations: owner must be a non-empty string");
  check(Array.isArray(tokens) && tokens.every((t) => typeof t === "string" && t.length > 0), "claimInvocations: tokens must be non-empty strings");
  check(isTime(now), "claimInvocations: now must be an integer (epoch ms)");
  check(isTime(leaseMs) && leaseMs > 0, "claimInvocations: leaseMs must be a positive integer");
  check(Number.isSafeInteger(limit) && limit >= 0, "claimInvocations: limit must be a non-negative integer");
  const n = Math.min(limit, tokens.length);
  if (n === 0) return [];
  const rows = await x.rows<InvocationRow & { rn: string | number }>(CLAIM, [owner, now, leaseMs, n, tokens.slice(0, n)]);
  return rows.sort((a, b) => Number(a.rn) - Number(b.rn)).map(invocationFromRow);
}

/** Extends every live lease of `owner` to now + leaseMs; returns how many. */
export async function heartbeat(x: Exec, owner: string, now: number, leaseMs: number): Promise<number> {
  check(isTime(now) && isTime(leaseMs) && leaseMs > 0, "heartbeat: now and leaseMs must be integers, leaseMs positive");
  return x.count(HEARTBEAT, [owner, now, leaseMs]);
}

/** The earliest runAt among queued invocations of every scope. */
export async function nextRunAt(x: Exec): Promise<number | null> {
  const [row] = await x.rows<{ run_at: string | null }>(NEXT_RUN_AT, []);
  return numOrNull(row?.run_at);
}

const OVERDUE_PARKED = statement(
  "list_overdue_parked",
  `SELECT ${INVOCATION_READ} FROM writ_invocations WHERE status = 'parked' AND overdue_at IS NULL AND deadline_at <= $1 ` +
    "ORDER BY deadline_at, created_at, invocation_id LIMIT $2",
);
const EXPIRED_APPROVALS = statement(
  "list_expired_pending_approvals",
  "SELECT doc FROM writ_approvals WHERE status = 'pending' AND expires_at <= $1 ORDER BY expires_at, created_at, approval_id LIMIT $2",
);

/**
 * A completion's document holds an external system's result: read leniently (docs/stores.md,
 * "Documents that hold NUL"), through the partial index of early completions (migration 24), so
 * the sweep each second reads the few early ones, not every completion ever received.
 */
export const EARLY_COMPLETIONS = statement(
  "list_early_completions_2",
  "SELECT doc FROM writ_completions WHERE writ_doc_text(doc, '{disposition}') = 'early' AND received_at < $1 " +
    "AND ($3::text IS NULL OR (tenant_id = $3 AND space_id = $4)) ORDER BY received_at, id LIMIT $2",
);

function checkSweep(now: number, limit: number, what: string): void {
  if (!Number.isSafeInteger(now) || !Number.isSafeInteger(limit) || limit < 0) {
    throw new WritError("INVALID_ARGUMENT", `${what}: now must be an integer and limit a non-negative integer`);
  }
}

/** Parked invocations whose deadline has passed and that are not flagged overdue yet, oldest deadline first. */
export async function listOverdueParked(x: Exec, now: number, limit: number): Promise<Invocation[]> {
  checkSweep(now, limit, "listOverdueParked");
  return (await x.rows<InvocationRow>(OVERDUE_PARKED, [now, limit])).map(invocationFromRow);
}

/** Early completions received before `receivedBefore`, oldest first, in one scope or all. */
export async function listEarlyCompletions(x: Exec, receivedBefore: number, limit: number, scope?: Scope): Promise<CompletionRecord[]> {
  checkSweep(receivedBefore, limit, "listEarlyCompletions");
  return (await x.rows<DocRow<CompletionRecord>>(EARLY_COMPLETIONS, [receivedBefore, limit, scope?.tenantId ?? null, scope?.spaceId ?? null])).map((r) => r.doc);
}

/** Pending approvals whose expiry has passed, oldest first. */
export async function listExpiredPendingApprovals(x: Exec, now: number, limit: number): Promise<Approval[]> {
  checkSweep(now, limit, "listExpiredPendingApprovals");
  return (await x.rows<DocRow<Approval>>(EXPIRED_APPROVALS, [now, limit])).map((r) => r.doc);
}
