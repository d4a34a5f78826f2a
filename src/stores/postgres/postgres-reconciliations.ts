/** Reconciliation statements: outcomes Writ cannot know, waiting for an operator. */
import { WritError } from "../../core/errors.js";
import type { ListOptions } from "../../core/store.js";
import type { ReconciliationRecord, ReconciliationStatus, Scope } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { docOf, limitParam, type DocRow } from "./postgres-rows.js";

const INSERT = statement(
  "insert_reconciliation",
  "INSERT INTO writ_reconciliations (tenant_id, space_id, reconciliation_id, invocation_id, status, created_at, doc, rev) VALUES ($1, $2, $3, $4, $5, $6, $7, 1) " +
    "ON CONFLICT DO NOTHING",
);
const UPDATE = statement(
  "update_reconciliation",
  "UPDATE writ_reconciliations SET invocation_id = $4, status = $5, created_at = $6, doc = $7, rev = rev + 1 " +
    "WHERE tenant_id = $1 AND space_id = $2 AND reconciliation_id = $3 AND rev = $8",
);
const EXISTS = statement("reconciliation_exists", "SELECT 1 FROM writ_reconciliations WHERE tenant_id = $1 AND space_id = $2 AND reconciliation_id = $3");
const GET = statement("get_reconciliation", "SELECT doc FROM writ_reconciliations WHERE tenant_id = $1 AND space_id = $2 AND reconciliation_id = $3");
const LIST = statement(
  "list_reconciliations",
  "SELECT doc FROM writ_reconciliations WHERE tenant_id = $1 AND space_id = $2 AND ($3::text IS NULL OR status = $3) " +
    "AND ($4::text IS NULL OR invocation_id = $4) ORDER BY created_at, reconciliation_id LIMIT $5",
);

function params(scope: Scope, rec: ReconciliationRecord): unknown[] {
  return [scope.tenantId, scope.spaceId, rec.reconciliationId, rec.invocationId, rec.status, rec.createdAt, docOf(rec)];
}

/** Inserts; CONFLICT (nothing written) when the id exists. */
export async function insertReconciliation(x: Exec, scope: Scope, rec: ReconciliationRecord): Promise<void> {
  if ((await x.count(INSERT, params(scope, { ...rec, rev: 1 }))) === 0) throw new WritError("CONFLICT", `reconciliation ${rec.reconciliationId} already exists`);
  rec.rev = 1;
}

/** Replaces, conditional on `rec.rev`: STALE when the row moved on, NOT_FOUND when there is none. Stamps the new rev. */
export async function updateReconciliation(x: Exec, scope: Scope, rec: ReconciliationRecord): Promise<void> {
  const expected = rec.rev ?? 0;
  if ((await x.count(UPDATE, [...params(scope, { ...rec, rev: expected + 1 }), expected])) === 0) {
    if ((await x.rows(EXISTS, [scope.tenantId, scope.spaceId, rec.reconciliationId])).length === 0) throw new WritError("NOT_FOUND", `no reconciliation ${rec.reconciliationId} in this scope`);
    throw new WritError("STALE", `reconciliation ${rec.reconciliationId} changed since it was read (rev ${expected})`);
  }
  rec.rev = expected + 1;
}

export async function getReconciliation(x: Exec, scope: Scope, reconciliationId: string): Promise<ReconciliationRecord | null> {
  const [row] = await x.rows<DocRow<ReconciliationRecord>>(GET, [scope.tenantId, scope.spaceId, reconciliationId]);
  return row?.doc ?? null;
}

/** Oldest first. */
export async function listReconciliations(
  x: Exec,
  scope: Scope,
  opts: ListOptions & { status?: ReconciliationStatus; invocationId?: string } = {},
): Promise<ReconciliationRecord[]> {
  const rows = await x.rows<DocRow<ReconciliationRecord>>(LIST, [scope.tenantId, scope.spaceId, opts.status ?? null, opts.invocationId ?? null, limitParam(opts.limit)]);
  return rows.map((r) => r.doc);
}
