/**
 * Sweep queries across all scopes (like claims): parked invocations past their completion
 * deadline, pending approvals past expiry. Both read partial indexes over just those rows.
 */
import { WritError } from "../../core/errors.js";
import type { Approval, Invocation } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { INVOCATION_READ, invocationFromRow, type DocRow, type InvocationRow } from "./postgres-rows.js";

const OVERDUE_PARKED = statement(
  "list_overdue_parked",
  `SELECT ${INVOCATION_READ} FROM writ_invocations WHERE status = 'parked' AND overdue_at IS NULL AND deadline_at <= $1 ` +
    "ORDER BY deadline_at, created_at, invocation_id LIMIT $2",
);
const EXPIRED_APPROVALS = statement(
  "list_expired_pending_approvals",
  "SELECT doc FROM writ_approvals WHERE status = 'pending' AND expires_at <= $1 ORDER BY expires_at, created_at, approval_id LIMIT $2",
);

function check(now: number, limit: number, what: string): void {
  if (!Number.isSafeInteger(now) || !Number.isSafeInteger(limit) || limit < 0) {
    throw new WritError("INVALID_ARGUMENT", `${what}: now must be an integer and limit a non-negative integer`);
  }
}

/** Parked invocations whose deadline has passed and that are not flagged overdue yet, oldest deadline first. */
export async function listOverdueParked(x: Exec, now: number, limit: number): Promise<Invocation[]> {
  check(now, limit, "listOverdueParked");
  return (await x.rows<InvocationRow>(OVERDUE_PARKED, [now, limit])).map(invocationFromRow);
}

/** Pending approvals whose expiry has passed, oldest first. */
export async function listExpiredPendingApprovals(x: Exec, now: number, limit: number): Promise<Approval[]> {
  check(now, limit, "listExpiredPendingApprovals");
  return (await x.rows<DocRow<Approval>>(EXPIRED_APPROVALS, [now, limit])).map((r) => r.doc);
}
