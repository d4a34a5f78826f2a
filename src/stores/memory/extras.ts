/**
 * Policy versions, external completions, delivery ids and the cross-scope sweep queries
 * (overdue parked invocations, expired pending approvals).
 */
import { WritError } from "../../core/errors.js";
import type { ApiKeyRecord, Approval, CompletionRecord, Invocation, PolicyVersion, Scope, StepCheckpoint } from "../../core/types.js";
import { copy } from "./copy.js";
import { nextRevision } from "../../core/store-guard.js";
import { findScope, keyOf, limited, scopeFor, setUndoable, type MemoryState, type Work } from "./state.js";

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

export function findStepByExternalRef(w: Work, scope: Scope, connector: string, externalRef: string): StepCheckpoint | null {
  const sd = findScope(w.state, scope);
  if (!sd) return null;
  for (const steps of sd.steps.values()) {
    for (const s of steps.values()) if (s.connector === connector && s.externalRef === externalRef) return copy(s);
  }
  return null;
}

export function rememberDelivery(w: Work, scope: Scope, connector: string, deliveryId: string, at: number): boolean {
  const map = scopeFor(w.state, scope).deliveries;
  const k = keyOf(connector, deliveryId);
  if (map.has(k)) return false;
  setUndoable(w, map, k, at);
  return true;
}

function* allScopes(state: MemoryState) {
  for (const spaces of state.tenants.values()) yield* spaces.values();
}

export function listOverdueParked(w: Work, now: number, limit: number): Invocation[] {
  const out: Invocation[] = [];
  for (const sd of allScopes(w.state)) {
    for (const inv of sd.invocations.values()) {
      if (inv.status === "parked" && inv.deadlineAt !== undefined && inv.deadlineAt <= now && inv.overdueAt === undefined) out.push(inv);
    }
  }
  return limited(out.sort((a, b) => a.deadlineAt! - b.deadlineAt!), limit).map(copy);
}

export function listExpiredPendingApprovals(w: Work, now: number, limit: number): Approval[] {
  const out: Approval[] = [];
  for (const sd of allScopes(w.state)) for (const a of sd.approvals.values()) if (a.status === "pending" && a.expiresAt <= now) out.push(a);
  return limited(out.sort((a, b) => a.expiresAt - b.expiresAt), limit).map(copy);
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
