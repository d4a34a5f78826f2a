/** Authority and approval statements: upserts by id, reads and lists (oldest first) per scope. */
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
const PUT_APPROVAL = statement(
  "put_approval",
  "INSERT INTO writ_approvals (tenant_id, space_id, approval_id, status, invocation_id, created_at, expires_at, doc) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) " +
    "ON CONFLICT (tenant_id, space_id, approval_id) DO UPDATE SET status = excluded.status, invocation_id = excluded.invocation_id, " +
    "created_at = excluded.created_at, expires_at = excluded.expires_at, doc = excluded.doc",
);
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

export async function putApproval(x: Exec, scope: Scope, a: Approval): Promise<void> {
  await x.count(PUT_APPROVAL, [scope.tenantId, scope.spaceId, a.approvalId, a.status, a.invocationId ?? null, a.createdAt, a.expiresAt, docOf(a)]);
}

export async function getApproval(x: Exec, scope: Scope, approvalId: string): Promise<Approval | null> {
  const [row] = await x.rows<DocRow<Approval>>(GET_APPROVAL, [scope.tenantId, scope.spaceId, approvalId]);
  return row?.doc ?? null;
}

export async function listApprovals(x: Exec, scope: Scope, opts: ListOptions & { status?: Approval["status"] } = {}): Promise<Approval[]> {
  const rows = await x.rows<DocRow<Approval>>(LIST_APPROVALS, [scope.tenantId, scope.spaceId, opts.status ?? null, limitParam(opts.limit)]);
  return rows.map((r) => r.doc);
}
