/**
 * Record statements: authorities, approvals, reconciliations, external completions and delivery ids,
 * policy versions and API keys.
 *
 * Authorities and approvals: upserts by id, reads and lists (oldest first) per scope.
 *
 * Reconciliations: outcomes Writ cannot know, waiting for an operator.
 *
 * External completions (docs/completions.md) and the webhook delivery ids already seen.
 *
 * Policy versions (docs/approvals.md, Versions per scope): one row per (scope, version).
 *
 * Circuit breakers (docs/host.md, "Circuit breakers"): one row per (scope, connector, operation),
 * written with a conditional rev like approvals.
 *
 * API keys (docs/http-api.md, Authentication and roles): per tenant, looked up by key id when a request arrives (before any scope is
 * known), so the key id is unique across tenants and a key never moves to another tenant.
 */
import { WritError } from "../../core/errors.js";
import type { ListOptions } from "../../core/store.js";
import type { ApiKeyRecord, Approval, BreakerRecord, Authority, CompletionRecord, PolicyVersion, ReconciliationRecord, ReconciliationStatus, Scope } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { docOf, limitParam, type DocRow } from "./postgres-rows.js";
import { API_KEY_CHANNEL } from "./postgres-listener.js";

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

const INSERT_RECONCILIATION = statement(
  "insert_reconciliation",
  "INSERT INTO writ_reconciliations (tenant_id, space_id, reconciliation_id, invocation_id, status, created_at, doc, rev) VALUES ($1, $2, $3, $4, $5, $6, $7, 1) " +
    "ON CONFLICT DO NOTHING",
);
const UPDATE_RECONCILIATION = statement(
  "update_reconciliation",
  "UPDATE writ_reconciliations SET invocation_id = $4, status = $5, created_at = $6, doc = $7, rev = rev + 1 " +
    "WHERE tenant_id = $1 AND space_id = $2 AND reconciliation_id = $3 AND rev = $8",
);
const RECONCILIATION_EXISTS = statement("reconciliation_exists", "SELECT 1 FROM writ_reconciliations WHERE tenant_id = $1 AND space_id = $2 AND reconciliation_id = $3");
const GET_RECONCILIATION = statement("get_reconciliation", "SELECT doc FROM writ_reconciliations WHERE tenant_id = $1 AND space_id = $2 AND reconciliation_id = $3");
const LIST_RECONCILIATIONS = statement(
  "list_reconciliations",
  "SELECT doc FROM writ_reconciliations WHERE tenant_id = $1 AND space_id = $2 AND ($3::text IS NULL OR status = $3) " +
    "AND ($4::text IS NULL OR invocation_id = $4) ORDER BY created_at, reconciliation_id LIMIT $5",
);

function reconciliationParams(scope: Scope, rec: ReconciliationRecord): unknown[] {
  return [scope.tenantId, scope.spaceId, rec.reconciliationId, rec.invocationId, rec.status, rec.createdAt, docOf(rec)];
}

/** Inserts; CONFLICT (nothing written) when the id exists. */
export async function insertReconciliation(x: Exec, scope: Scope, rec: ReconciliationRecord): Promise<void> {
  if ((await x.count(INSERT_RECONCILIATION, reconciliationParams(scope, { ...rec, rev: 1 }))) === 0) throw new WritError("CONFLICT", `reconciliation ${rec.reconciliationId} already exists`);
  rec.rev = 1;
}

/** Replaces, conditional on `rec.rev`: STALE when the row moved on, NOT_FOUND when there is none. Stamps the new rev. */
export async function updateReconciliation(x: Exec, scope: Scope, rec: ReconciliationRecord): Promise<void> {
  const expected = rec.rev ?? 0;
  if ((await x.count(UPDATE_RECONCILIATION, [...reconciliationParams(scope, { ...rec, rev: expected + 1 }), expected])) === 0) {
    if ((await x.rows(RECONCILIATION_EXISTS, [scope.tenantId, scope.spaceId, rec.reconciliationId])).length === 0) throw new WritError("NOT_FOUND", `no reconciliation ${rec.reconciliationId} in this scope`);
    throw new WritError("STALE", `reconciliation ${rec.reconciliationId} changed since it was read (rev ${expected})`);
  }
  rec.rev = expected + 1;
}

export async function getReconciliation(x: Exec, scope: Scope, reconciliationId: string): Promise<ReconciliationRecord | null> {
  const [row] = await x.rows<DocRow<ReconciliationRecord>>(GET_RECONCILIATION, [scope.tenantId, scope.spaceId, reconciliationId]);
  return row?.doc ?? null;
}

/** Oldest first. */
export async function listReconciliations(
  x: Exec,
  scope: Scope,
  opts: ListOptions & { status?: ReconciliationStatus; invocationId?: string } = {},
): Promise<ReconciliationRecord[]> {
  const rows = await x.rows<DocRow<ReconciliationRecord>>(LIST_RECONCILIATIONS, [scope.tenantId, scope.spaceId, opts.status ?? null, opts.invocationId ?? null, limitParam(opts.limit)]);
  return rows.map((r) => r.doc);
}

const INSERT_COMPLETION = statement(
  "insert_completion",
  "INSERT INTO writ_completions (tenant_id, space_id, connector, completion_id, external_ref, received_at, doc, rev) VALUES ($1, $2, $3, $4, $5, $6, $7, 1) " +
    "ON CONFLICT DO NOTHING",
);
const UPDATE_COMPLETION = statement(
  "update_completion",
  "UPDATE writ_completions SET external_ref = $5, received_at = $6, doc = $7, rev = rev + 1 " +
    "WHERE tenant_id = $1 AND space_id = $2 AND connector = $3 AND completion_id = $4 AND rev = $8",
);
const COMPLETION_EXISTS = statement("completion_exists", "SELECT 1 FROM writ_completions WHERE tenant_id = $1 AND space_id = $2 AND connector = $3 AND completion_id = $4");
const LIST_COMPLETIONS = statement(
  "list_completions",
  "SELECT doc FROM writ_completions WHERE tenant_id = $1 AND space_id = $2 AND connector = $3 AND external_ref = $4 ORDER BY received_at, id",
);
/** The primary key decides: the first delivery inserts, a repeat inserts nothing. */
const REMEMBER_DELIVERY = statement(
  "remember_delivery",
  "INSERT INTO writ_deliveries (tenant_id, space_id, connector, delivery_id, received_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
);

function completionParams(scope: Scope, c: CompletionRecord): unknown[] {
  return [scope.tenantId, scope.spaceId, c.connector, c.completionId, c.externalRef, c.receivedAt, docOf(c)];
}

/** Inserts; CONFLICT (nothing written) when (connector, completionId) exists in the scope. */
export async function insertCompletion(x: Exec, scope: Scope, c: CompletionRecord): Promise<void> {
  if ((await x.count(INSERT_COMPLETION, completionParams(scope, { ...c, rev: 1 }))) === 0) throw new WritError("CONFLICT", `completion ${c.completionId} of ${c.connector} already exists`);
  c.rev = 1;
}

/** Replaces, conditional on `c.rev`: STALE when the row moved on, NOT_FOUND when there is none. Stamps the new rev. */
export async function updateCompletion(x: Exec, scope: Scope, c: CompletionRecord): Promise<void> {
  const expected = c.rev ?? 0;
  if ((await x.count(UPDATE_COMPLETION, [...completionParams(scope, { ...c, rev: expected + 1 }), expected])) === 0) {
    if ((await x.rows(COMPLETION_EXISTS, [scope.tenantId, scope.spaceId, c.connector, c.completionId])).length === 0) throw new WritError("NOT_FOUND", `no completion ${c.completionId} of ${c.connector} in this scope`);
    throw new WritError("STALE", `completion ${c.completionId} of ${c.connector} changed since it was read (rev ${expected})`);
  }
  c.rev = expected + 1;
}

/** Completions for (connector, externalRef) in arrival order. */
export async function listCompletions(x: Exec, scope: Scope, connector: string, externalRef: string): Promise<CompletionRecord[]> {
  return (await x.rows<DocRow<CompletionRecord>>(LIST_COMPLETIONS, [scope.tenantId, scope.spaceId, connector, externalRef])).map((r) => r.doc);
}

/** True the first time (scope, connector, deliveryId) is seen; false (nothing written) after. */
export async function rememberDelivery(x: Exec, scope: Scope, connector: string, deliveryId: string, at: number): Promise<boolean> {
  return (await x.count(REMEMBER_DELIVERY, [scope.tenantId, scope.spaceId, connector, deliveryId, at])) === 1;
}

const PUT_POLICY_VERSION = statement(
  "put_policy_version",
  "INSERT INTO writ_policy_versions (tenant_id, space_id, version, status, doc) VALUES ($1, $2, $3, $4, $5) " +
    "ON CONFLICT (tenant_id, space_id, version) DO UPDATE SET status = excluded.status, doc = excluded.doc",
);
const LIST_POLICY_VERSIONS = statement("list_policy_versions", "SELECT doc FROM writ_policy_versions WHERE tenant_id = $1 AND space_id = $2 ORDER BY version");

/** Inserts or replaces the version. */
export async function putPolicyVersion(x: Exec, scope: Scope, v: PolicyVersion): Promise<void> {
  await x.count(PUT_POLICY_VERSION, [scope.tenantId, scope.spaceId, v.version, v.status, docOf(v)]);
}

/** Ascending by version. */
export async function listPolicyVersions(x: Exec, scope: Scope): Promise<PolicyVersion[]> {
  return (await x.rows<DocRow<PolicyVersion>>(LIST_POLICY_VERSIONS, [scope.tenantId, scope.spaceId])).map((r) => r.doc);
}

/** Replaces only within the same tenant: a key id of another tenant writes no row. */
const PUT_API_KEY = statement(
  "put_api_key",
  "INSERT INTO writ_api_keys AS k (key_id, tenant_id, created_at, doc) VALUES ($1, $2, $3, $4) " +
    "ON CONFLICT (key_id) DO UPDATE SET created_at = excluded.created_at, doc = excluded.doc WHERE k.tenant_id = excluded.tenant_id",
);
/** Sent at commit (dropped on rollback): other processes forget the key's cached verifications. */
const NOTIFY_API_KEY = statement("notify_api_key", `SELECT pg_notify('${API_KEY_CHANNEL}', $1)`);
const GET_API_KEY = statement("get_api_key", "SELECT doc FROM writ_api_keys WHERE key_id = $1");
const LIST_API_KEYS = statement("list_api_keys", "SELECT doc FROM writ_api_keys WHERE tenant_id = $1 ORDER BY created_at, key_id");

/** Inserts or replaces by keyId; SCOPE_VIOLATION (nothing written) when the id is another tenant's. */
export async function putApiKey(x: Exec, key: ApiKeyRecord): Promise<void> {
  if ((await x.count(PUT_API_KEY, [key.keyId, key.tenantId, key.createdAt, docOf(key)])) === 0) {
    throw new WritError("SCOPE_VIOLATION", "this API key id belongs to another tenant");
  }
  await x.rows(NOTIFY_API_KEY, [key.keyId]);
}

export async function getApiKey(x: Exec, keyId: string): Promise<ApiKeyRecord | null> {
  const [row] = await x.rows<DocRow<ApiKeyRecord>>(GET_API_KEY, [keyId]);
  return row?.doc ?? null;
}

/** The tenant's keys, oldest first. */
export async function listApiKeys(x: Exec, tenantId: string): Promise<ApiKeyRecord[]> {
  return (await x.rows<DocRow<ApiKeyRecord>>(LIST_API_KEYS, [tenantId])).map((r) => r.doc);
}

const INSERT_BREAKER = statement(
  "insert_breaker",
  "INSERT INTO writ_breakers (tenant_id, space_id, connector, operation, doc, rev) VALUES ($1, $2, $3, $4, $5, 1) ON CONFLICT DO NOTHING",
);
// Conditional on the revision the writer read ($6): of two writers that read the same row, the
// second waits for the first's row lock, re-checks, and matches nothing.
const UPDATE_BREAKER = statement(
  "update_breaker",
  "UPDATE writ_breakers SET doc = $5, rev = rev + 1 WHERE tenant_id = $1 AND space_id = $2 AND connector = $3 AND operation = $4 AND rev = $6",
);
const BREAKER_EXISTS = statement("breaker_exists", "SELECT 1 FROM writ_breakers WHERE tenant_id = $1 AND space_id = $2 AND connector = $3 AND operation = $4");
const GET_BREAKER = statement("get_breaker", "SELECT doc FROM writ_breakers WHERE tenant_id = $1 AND space_id = $2 AND connector = $3 AND operation = $4");
const LIST_BREAKERS = statement(
  "list_breakers",
  "SELECT doc FROM writ_breakers WHERE tenant_id = $1 AND space_id = $2 ORDER BY connector, operation LIMIT $3",
);

export async function getBreaker(x: Exec, scope: Scope, connector: string, operation: string): Promise<BreakerRecord | null> {
  const [row] = await x.rows<DocRow<BreakerRecord>>(GET_BREAKER, [scope.tenantId, scope.spaceId, connector, operation]);
  return row?.doc ?? null;
}

/** Inserts (no rev; CONFLICT when it exists) or replaces while the stored rev is the one read (STALE otherwise). */
export async function putBreaker(x: Exec, scope: Scope, rec: BreakerRecord): Promise<void> {
  const key = [scope.tenantId, scope.spaceId, rec.connector, rec.operation];
  const what = `breaker ${rec.connector}.${rec.operation}`;
  if (rec.rev === undefined) {
    if ((await x.count(INSERT_BREAKER, [...key, docOf({ ...rec, rev: 1 })])) === 0) throw new WritError("CONFLICT", `${what} already exists`);
    rec.rev = 1;
    return;
  }
  if ((await x.count(UPDATE_BREAKER, [...key, docOf({ ...rec, rev: rec.rev + 1 }), rec.rev])) === 0) {
    if ((await x.rows(BREAKER_EXISTS, key)).length === 0) throw new WritError("NOT_FOUND", `no ${what} in this scope`);
    throw new WritError("STALE", `${what} changed since it was read (rev ${rec.rev})`);
  }
  rec.rev += 1;
}

/** By connector, then operation. */
export async function listBreakers(x: Exec, scope: Scope, opts: ListOptions = {}): Promise<BreakerRecord[]> {
  return (await x.rows<DocRow<BreakerRecord>>(LIST_BREAKERS, [scope.tenantId, scope.spaceId, limitParam(opts.limit)])).map((r) => r.doc);
}
