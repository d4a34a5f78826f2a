/** Authority and approval statements: upserts by id, reads and lists (oldest first) per scope. */
import { WritError } from "../../core/errors.js";
import type { ListOptions } from "../../core/store.js";
import type { Approval, Authority, Scope } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { docOf, limitParam, type DocRow } from "./postgres-rows.js";

const PUT_AUTHORITY = statement(
  "put_authority",
  "INSERT INTO writ_authorities (tenant_id, space_id, authority_ref, status, created_at, doc) VALUES ($1, $2, $3, $4, $5, $6) " +
    "ON CONFLICT (tenant_id, space_id, authority_ref) DO UPDATE SET status = excluded.status, created_at = excluded.created_at, doc = excluded.doc",
);
const GET_AUTHORITY = statement("get_authority", "SELECT doc FROM writ_authorities WHERE tenant_id = $1 AND space_id = $2 AND authority_ref = $3");
const LIST_AUTHORITIES = statement(
  "list_authorities",
  "SELECT doc FROM writ_authorities WHERE tenant_id = $1 AND space_id = $2 ORDER BY created_at, authority_ref LIMIT $3",
);
const INSERT_APPROVAL = statement(
  "insert_approval",
  "INSERT INTO writ_approvals (tenant_id, space_id, approval_id, status, invocation_id, created_at, expires_at, doc, rev) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1) " +
    "ON CONFLICT DO NOTHING",
);
// Conditional on the revision the writer read ($9).
const UPDATE_APPROVAL = statement(
  "update_approval",
  "UPDATE writ_approvals SET status = $4, invocation_id = $5, created_at = $6, expires_at = $7, doc = $8, rev = rev + 1 " +
    "WHERE tenant_id = $1 AND space_id = $2 AND approval_id = $3 AND rev = $9",
);
const APPROVAL_EXISTS = statement("approval_exists", "SELECT 1 FROM writ_approvals WHERE tenant_id = $1 AND space_id = $2 AND approval_id = $3");
const GET_APPROVAL = statement("get_approval", "SELECT doc FROM writ_approvals WHERE tenant_id = $1 AND space_id = $2 AND approval_id = $3");
const LIST_APPROVALS = statement(
  "list_approvals",
  "SELECT doc FROM writ_approvals WHERE tenant_id = $1 AND space_id = $2 AND ($3::text IS NULL OR status = $3) ORDER BY created_at, approval_id LIMIT $4",
);

export async function putAuthority(x: Exec, scope: Scope, a: Authority): Promise<void> {
  await x.count(PUT_AUTHORITY, [scope.tenantId, scope.spaceId, a.authorityRef, a.status, a.createdAt, docOf(a)]);
}

export async function getAuthority(x: Exec, scope: Scope, authorityRef: string): Promise<Authority | null> {
  const [row] = await x.rows<DocRow<Authority>>(GET_AUTHORITY, [scope.tenantId, scope.spaceId, authorityRef]);
  return row?.doc ?? null;
}

export async function listAuthorities(x: Exec, scope: Scope, opts: ListOptions = {}): Promise<Authority[]> {
  return (await x.rows<DocRow<Authority>>(LIST_AUTHORITIES, [scope.tenantId, scope.spaceId, limitParam(opts.limit)])).map((r) => r.doc);
}

/**
 * Without `a.rev`: inserts (CONFLICT when the id exists). With it: replaces, conditional on that
 * revision (STALE when the row moved on, NOT_FOUND when there is none). Stamps the new rev on `a`.
 */
export async function putApproval(x: Exec, scope: Scope, a: Approval): Promise<void> {
  const base = [scope.tenantId, scope.spaceId, a.approvalId, a.status, a.invocationId ?? null, a.createdAt, a.expiresAt];
  if (a.rev === undefined) {
    if ((await x.count(INSERT_APPROVAL, [...base, docOf({ ...a, rev: 1 })])) === 0) throw new WritError("CONFLICT", `approval ${a.approvalId} already exists`);
    a.rev = 1;
    return;
  }
  if ((await x.count(UPDATE_APPROVAL, [...base, docOf({ ...a, rev: a.rev + 1 }), a.rev])) === 0) {
    if ((await x.rows(APPROVAL_EXISTS, [scope.tenantId, scope.spaceId, a.approvalId])).length === 0) throw new WritError("NOT_FOUND", `no approval ${a.approvalId} in this scope`);
    throw new WritError("STALE", `approval ${a.approvalId} changed since it was read (rev ${a.rev})`);
  }
  a.rev += 1;
}

export async function getApproval(x: Exec, scope: Scope, approvalId: string): Promise<Approval | null> {
  const [row] = await x.rows<DocRow<Approval>>(GET_APPROVAL, [scope.tenantId, scope.spaceId, approvalId]);
  return row?.doc ?? null;
}

export async function listApprovals(x: Exec, scope: Scope, opts: ListOptions & { status?: Approval["status"] } = {}): Promise<Approval[]> {
  const rows = await x.rows<DocRow<Approval>>(LIST_APPROVALS, [scope.tenantId, scope.spaceId, opts.status ?? null, limitParam(opts.limit)]);
  return rows.map((r) => r.doc);
}
