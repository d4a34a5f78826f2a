/**
 * Keyed records with no ordering of their own: reconciliations, authorities, approvals, policy
 * versions, external completions, delivery ids, API keys and circuit breakers.
 */
import { WritError } from "../../core/errors.js";
import { type ListOptions } from "../../core/store.js";
import type { ApiKeyRecord, Approval, BreakerRecord, Authority, CompletionRecord, PolicyVersion, ReconciliationRecord, ReconciliationStatus, Scope } from "../../core/types.js";
import { copy, copyOrNull } from "./memory-copy.js";
import { nextRevision } from "../../core/store-guard.js";
import { findScope, keyOf, limited, scopeFor, setUndoable, type Work } from "./memory-state.js";

export function insertReconciliation(w: Work, scope: Scope, rec: ReconciliationRecord): void {
  const map = scopeFor(w.state, scope).reconciliations;
  if (map.has(rec.reconciliationId)) throw new WritError("CONFLICT", `reconciliation ${rec.reconciliationId} already exists`);
  setUndoable(w, map, rec.reconciliationId, copy({ ...rec, rev: 1 }));
  rec.rev = 1;
}

export function updateReconciliation(w: Work, scope: Scope, rec: ReconciliationRecord): void {
  const map = findScope(w.state, scope)?.reconciliations;
  const rev = nextRevision(map?.get(rec.reconciliationId)?.rev ?? (map?.has(rec.reconciliationId) ? 0 : undefined), rec.rev, `reconciliation ${rec.reconciliationId}`);
  setUndoable(w, map!, rec.reconciliationId, copy({ ...rec, rev }));
  rec.rev = rev;
}

export function getReconciliation(w: Work, scope: Scope, reconciliationId: string): ReconciliationRecord | null {
  return copyOrNull(findScope(w.state, scope)?.reconciliations.get(reconciliationId));
}

/** In insertion order. */
export function listReconciliations(
  w: Work,
  scope: Scope,
  opts: ListOptions & { status?: ReconciliationStatus; invocationId?: string } = {},
): ReconciliationRecord[] {
  const { status, invocationId } = opts;
  return list(findScope(w.state, scope)?.reconciliations, opts.limit, (r) => (status === undefined || r.status === status) && (invocationId === undefined || r.invocationId === invocationId));
}

export function putAuthority(w: Work, scope: Scope, a: Authority): void {
  setUndoable(w, scopeFor(w.state, scope).authorities, a.authorityRef, copy(a));
}

export function getAuthority(w: Work, scope: Scope, authorityRef: string): Authority | null {
  return copyOrNull(findScope(w.state, scope)?.authorities.get(authorityRef));
}

/** In insertion order. */
export function listAuthorities(w: Work, scope: Scope, opts: ListOptions = {}): Authority[] {
  return list(findScope(w.state, scope)?.authorities, opts.limit, undefined);
}

export function putApproval(w: Work, scope: Scope, a: Approval): void {
  const map = scopeFor(w.state, scope).approvals;
  const prev = map.get(a.approvalId);
  if (a.rev === undefined) {
    if (prev !== undefined) throw new WritError("CONFLICT", `approval ${a.approvalId} already exists`);
    setUndoable(w, map, a.approvalId, copy({ ...a, rev: 1 }));
    a.rev = 1;
    return;
  }
  const rev = nextRevision(prev === undefined ? undefined : (prev.rev ?? 0), a.rev, `approval ${a.approvalId}`);
  setUndoable(w, map, a.approvalId, copy({ ...a, rev }));
  a.rev = rev;
}

export function getApproval(w: Work, scope: Scope, approvalId: string): Approval | null {
  return copyOrNull(findScope(w.state, scope)?.approvals.get(approvalId));
}

/** In insertion order. */
export function listApprovals(w: Work, scope: Scope, opts: ListOptions & { status?: Approval["status"] } = {}): Approval[] {
  const { status } = opts;
  return list(findScope(w.state, scope)?.approvals, opts.limit, status === undefined ? undefined : (a) => a.status === status);
}

export function putPolicyVersion(w: Work, scope: Scope, v: PolicyVersion): void {
  if (!Number.isInteger(v.version) || v.version < 1) throw new WritError("INVALID_ARGUMENT", "policy version must be a positive integer");
  setUndoable(w, scopeFor(w.state, scope).policyVersions, v.version, copy(v));
}

export function listPolicyVersions(w: Work, scope: Scope): PolicyVersion[] {
  const m = findScope(w.state, scope)?.policyVersions;
  return m ? [...m.values()].sort((a, b) => a.version - b.version).map(copy) : [];
}

export function insertCompletion(w: Work, scope: Scope, c: CompletionRecord): void {
  const map = scopeFor(w.state, scope).completions;
  const k = keyOf(c.connector, c.completionId);
  if (map.has(k)) throw new WritError("CONFLICT", `completion ${c.completionId} of ${c.connector} already exists`);
  setUndoable(w, map, k, copy({ ...c, rev: 1 }));
  c.rev = 1;
}

export function updateCompletion(w: Work, scope: Scope, c: CompletionRecord): void {
  const map = findScope(w.state, scope)?.completions;
  const k = keyOf(c.connector, c.completionId);
  const prev = map?.get(k);
  const rev = nextRevision(prev === undefined ? undefined : (prev.rev ?? 0), c.rev, `completion ${c.completionId} of ${c.connector}`);
  setUndoable(w, map!, k, copy({ ...c, rev }));
  c.rev = rev;
}

export function listCompletions(w: Work, scope: Scope, connector: string, externalRef: string): CompletionRecord[] {
  const map = findScope(w.state, scope)?.completions;
  if (!map) return [];
  return [...map.values()].filter((c) => c.connector === connector && c.externalRef === externalRef).sort((a, b) => a.receivedAt - b.receivedAt).map(copy);
}

export function rememberDelivery(w: Work, scope: Scope, connector: string, deliveryId: string, at: number): boolean {
  const map = scopeFor(w.state, scope).deliveries;
  const k = keyOf(connector, deliveryId);
  if (map.has(k)) return false;
  setUndoable(w, map, k, at);
  return true;
}

export function putApiKey(w: Work, key: ApiKeyRecord): void {
  if (typeof key?.keyId !== "string" || key.keyId.length === 0 || typeof key.tenantId !== "string" || key.tenantId.length === 0) {
    throw new WritError("INVALID_ARGUMENT", "an API key needs a keyId and a tenantId");
  }
  const prev = w.state.apiKeys.get(key.keyId);
  if (prev && prev.tenantId !== key.tenantId) throw new WritError("SCOPE_VIOLATION", `API key ${key.keyId} belongs to another tenant`);
  setUndoable(w, w.state.apiKeys, key.keyId, copy(key));
}

export function getApiKey(w: Work, keyId: string): ApiKeyRecord | null {
  const k = w.state.apiKeys.get(keyId);
  return k ? copy(k) : null;
}

export function listApiKeys(w: Work, tenantId: string): ApiKeyRecord[] {
  return [...w.state.apiKeys.values()].filter((k) => k.tenantId === tenantId).sort((a, b) => a.createdAt - b.createdAt).map(copy);
}

export function getBreaker(w: Work, scope: Scope, connector: string, operation: string): BreakerRecord | null {
  return copyOrNull(findScope(w.state, scope)?.breakers.get(keyOf(connector, operation)));
}

export function putBreaker(w: Work, scope: Scope, rec: BreakerRecord): void {
  const map = scopeFor(w.state, scope).breakers;
  const k = keyOf(rec.connector, rec.operation);
  const prev = map.get(k);
  if (rec.rev === undefined) {
    if (prev !== undefined) throw new WritError("CONFLICT", `breaker ${rec.connector}.${rec.operation} already exists`);
    setUndoable(w, map, k, copy({ ...rec, rev: 1 }));
    rec.rev = 1;
    return;
  }
  const rev = nextRevision(prev === undefined ? undefined : (prev.rev ?? 0), rec.rev, `breaker ${rec.connector}.${rec.operation}`);
  setUndoable(w, map, k, copy({ ...rec, rev }));
  rec.rev = rev;
}

/** Ordered by connector, then operation. */
export function listBreakers(w: Work, scope: Scope, opts: ListOptions = {}): BreakerRecord[] {
  const all = [...(findScope(w.state, scope)?.breakers.values() ?? [])];
  all.sort((a, b) => (a.connector < b.connector ? -1 : a.connector > b.connector ? 1 : a.operation < b.operation ? -1 : a.operation > b.operation ? 1 : 0));
  return limited(all, opts.limit).map(copy);
}

/** Copies of the map's values that pass `keep`, in insertion order, at most `limit`. */
function list<T>(map: Map<string, T> | undefined, limit: number | undefined, keep: ((rec: T) => boolean) | undefined): T[] {
  if (map === undefined) return limited([], limit);
  const out: T[] = [];
  for (const rec of map.values()) {
    if (limit !== undefined && out.length >= limit) break;
    if (keep === undefined || keep(rec)) out.push(rec);
  }
  return limited(out, limit).map(copy);
}
