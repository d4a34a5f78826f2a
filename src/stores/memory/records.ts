/**
 * Keyed records with no ordering of their own: consumed decisions, idempotency records,
 * reconciliations, authorities and approvals.
 */
import { WritError } from "../../core/errors.js";
import { type ListOptions } from "../../core/store.js";
import type { Approval, Authority, ConsumedDecision, IdempotencyRecord, ReconciliationRecord, ReconciliationStatus, Scope } from "../../core/types.js";
import { copy } from "./copy.js";
import { nextRevision } from "../../core/store-guard.js";
import { findScope, keyOf, limited, scopeFor, setUndoable, type Work } from "./state.js";

export function consumeDecision(w: Work, scope: Scope, rec: ConsumedDecision): boolean {
  const sd = scopeFor(w.state, scope);
  if (sd.decisions.has(rec.decisionId)) return false;
  setUndoable(w, sd.decisions, rec.decisionId, copy(rec));
  return true;
}

export function getConsumedDecision(w: Work, scope: Scope, decisionId: string): ConsumedDecision | null {
  return copyOrNull(findScope(w.state, scope)?.decisions.get(decisionId));
}

export function getIdempotency(w: Work, scope: Scope, action: string, idempotencyKey: string): IdempotencyRecord | null {
  return copyOrNull(findScope(w.state, scope)?.idempotency.get(keyOf(action, idempotencyKey)));
}

export function putIdempotency(w: Work, scope: Scope, rec: IdempotencyRecord): void {
  setUndoable(w, scopeFor(w.state, scope).idempotency, keyOf(rec.action, rec.idempotencyKey), copy(rec));
}

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

function copyOrNull<T>(rec: T | undefined): T | null {
  return rec === undefined ? null : copy(rec);
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
