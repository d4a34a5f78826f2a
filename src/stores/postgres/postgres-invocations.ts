/**
 * Invocation statements: insert, reads, listing, administrative and fenced updates, lease checks.
 * One statement per function; scope ($1 tenant, $2 space) in every WHERE.
 */
import { LeaseLostError, WritError } from "../../core/errors.js";
import type { InvocationFilter } from "../../core/store.js";
import type { Fence, Invocation, Scope } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { INVOCATION_READ, invocationFromRow, invocationParams, limitParam, type InvocationRow } from "./postgres-rows.js";

const COLUMNS =
  "tenant_id, space_id, invocation_id, action, idempotency_key, status, run_at, lease_owner, lease_token, lease_expires_at, attempt_count, " +
  "created_at, updated_at, deadline_at, overdue_at, doc, rev";
const SET =
  "action = $4, idempotency_key = $5, status = $6, run_at = $7, lease_owner = $8, lease_token = $9, lease_expires_at = $10, " +
  "attempt_count = $11, created_at = $12, updated_at = $13, deadline_at = $14, overdue_at = $15, doc = $16";
const HOLDS_LEASE = "status = 'running' AND lease_owner = $17 AND lease_token = $18";

const INSERT = statement(
  "insert_invocation",
  `INSERT INTO writ_invocations (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, 1) ON CONFLICT DO NOTHING`,
);
const GET = statement("get_invocation", `SELECT ${INVOCATION_READ} FROM writ_invocations WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3`);
const FIND_BY_KEY = statement(
  "find_invocation_by_key",
  `SELECT ${INVOCATION_READ} FROM writ_invocations WHERE tenant_id = $1 AND space_id = $2 AND action = $3 AND idempotency_key = $4`,
);
// Newest first by (created_at, invocation_id); $4 is a cursor id: only rows after it in that
// order. An unknown cursor compares with NULL, so it yields nothing.
const LIST = statement(
  "list_invocations",
  `SELECT ${INVOCATION_READ} FROM writ_invocations i
    WHERE i.tenant_id = $1 AND i.space_id = $2 AND ($3::text IS NULL OR i.status = $3)
      AND ($4::text IS NULL OR (i.created_at, i.invocation_id) < (
        SELECT c.created_at, c.invocation_id FROM writ_invocations c WHERE c.tenant_id = $1 AND c.space_id = $2 AND c.invocation_id = $4))
    ORDER BY i.created_at DESC, i.invocation_id DESC LIMIT $5`,
);
// Conditional on the revision the writer read ($17); the row's rev moves on with every write.
const UPDATE = statement(
  "update_invocation_rev",
  `UPDATE writ_invocations SET ${SET}, rev = rev + 1 WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3 AND rev = $17 RETURNING rev`,
);
const UPDATE_FENCED = statement(
  "update_invocation_fenced_rev",
  `UPDATE writ_invocations SET ${SET}, rev = rev + 1 WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3 AND ${HOLDS_LEASE} RETURNING rev`,
);
const GET_FOR_UPDATE = statement(
  "get_invocation_for_update",
  `SELECT ${INVOCATION_READ} FROM writ_invocations WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3 FOR UPDATE`,
);
const EXISTS = statement("invocation_exists", "SELECT 1 FROM writ_invocations WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3");
// FOR UPDATE: the row stays locked until the transaction ends, so a reclaim (or any other write)
// waits for it, and a claimer's SKIP LOCKED passes it by.
const HOLD_LEASE = statement(
  "assert_lease",
  "SELECT 1 FROM writ_invocations WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3 " +
    "AND status = 'running' AND lease_owner = $4 AND lease_token = $5 FOR UPDATE",
);

/** Inserts; CONFLICT (the transaction stays usable) when the id or (action, key) exists. */
export async function insertInvocation(x: Exec, scope: Scope, inv: Invocation): Promise<void> {
  const n = await x.count(INSERT, [scope.tenantId, scope.spaceId, ...invocationParams({ ...inv, rev: 1 })]);
  if (n === 0) throw new WritError("CONFLICT", `invocation ${inv.invocationId}, or one of ${inv.action} with this idempotency key, already exists`);
  inv.rev = 1;
}

/** With `forUpdate` the row stays locked until the transaction ends (the first lock class). */
export async function getInvocation(x: Exec, scope: Scope, invocationId: string, forUpdate = false): Promise<Invocation | null> {
  const [row] = await x.rows<InvocationRow>(forUpdate ? GET_FOR_UPDATE : GET, [scope.tenantId, scope.spaceId, invocationId]);
  return row === undefined ? null : invocationFromRow(row);
}

export async function findInvocationByKey(x: Exec, scope: Scope, action: string, idempotencyKey: string): Promise<Invocation | null> {
  const [row] = await x.rows<InvocationRow>(FIND_BY_KEY, [scope.tenantId, scope.spaceId, action, idempotencyKey]);
  return row === undefined ? null : invocationFromRow(row);
}

export async function listInvocations(x: Exec, scope: Scope, filter: InvocationFilter = {}): Promise<Invocation[]> {
  const rows = await x.rows<InvocationRow>(LIST, [scope.tenantId, scope.spaceId, filter.status ?? null, filter.after ?? null, limitParam(filter.limit)]);
  return rows.map(invocationFromRow);
}

/**
 * Administrative replace, conditional on `inv.rev` (the revision the writer read): STALE when the
 * row moved on since, NOT_FOUND when the scope holds no such invocation. Stamps the new rev on `inv`.
 */
export async function updateInvocation(x: Exec, scope: Scope, inv: Invocation): Promise<void> {
  const expected = inv.rev ?? 0;
  const [row] = await x.rows<{ rev: string | number }>(UPDATE, [scope.tenantId, scope.spaceId, ...invocationParams({ ...inv, rev: expected + 1 }), expected]);
  if (row === undefined) {
    const found = await x.rows(EXISTS, [scope.tenantId, scope.spaceId, inv.invocationId]);
    if (found.length === 0) throw new WritError("NOT_FOUND", `no invocation ${inv.invocationId} in this scope`);
    throw new WritError("STALE", `invocation ${inv.invocationId} changed since it was read (rev ${expected})`);
  }
  inv.rev = Number(row.rev);
}

/** Fenced replace in one conditional statement; LeaseLostError (nothing written) unless the lease holds. */
export async function updateInvocationFenced(x: Exec, scope: Scope, inv: Invocation, fence: Fence): Promise<void> {
  const [row] = await x.rows<{ rev: string | number }>(UPDATE_FENCED, [scope.tenantId, scope.spaceId, ...invocationParams(inv), fence.owner, fence.token]);
  if (row === undefined) throw new LeaseLostError(`lease lost on invocation ${fence.invocationId}`);
  inv.rev = Number(row.rev);
}

/** Locks the invocation row for the transaction if the lease holds; LeaseLostError otherwise. */
export async function assertLease(x: Exec, scope: Scope, fence: Fence): Promise<void> {
  const n = await x.count(HOLD_LEASE, [scope.tenantId, scope.spaceId, fence.invocationId, fence.owner, fence.token]);
  if (n === 0) throw new LeaseLostError(`lease lost on invocation ${fence.invocationId}`);
}
