/** Invocation records: insert, reads, listing, fenced updates and lease checks. */
import { LeaseLostError, WritError } from "../../core/errors.js";
import { type InvocationFilter } from "../../core/store.js";
import type { Fence, Invocation, Scope } from "../../core/types.js";
import { nextRevision } from "../../core/store-guard.js";
import { copy } from "./memory-copy.js";
import { findScope, keyOf, limited, scopeFor, setUndoable, type ScopeData, type Work } from "./memory-state.js";

/** Stores `next` as the current version of its invocation (undoably) and indexes it for claims. */
export function storeInvocation(w: Work, sd: ScopeData, next: Invocation): void {
  setUndoable(w, sd.invocations, next.invocationId, next);
  w.state.claims.track(sd, next);
  if (next.status === "queued") w.wake = true;
}

export function insertInvocation(w: Work, scope: Scope, inv: Invocation): void {
  const sd = scopeFor(w.state, scope);
  if (sd.invocations.has(inv.invocationId)) throw new WritError("CONFLICT", `invocation ${inv.invocationId} already exists`);
  const key = keyOf(inv.action, inv.idempotencyKey);
  if (sd.invocationKeys.has(key)) throw new WritError("CONFLICT", `an invocation of ${inv.action} with this idempotency key already exists`);
  setUndoable(w, sd.invocationKeys, key, inv.invocationId);
  storeInvocation(w, sd, copy({ ...inv, rev: 1 }));
  inv.rev = 1;
}

export function getInvocation(w: Work, scope: Scope, invocationId: string): Invocation | null {
  const rec = findScope(w.state, scope)?.invocations.get(invocationId);
  return rec === undefined ? null : copy(rec);
}

export function findInvocationByKey(w: Work, scope: Scope, action: string, idempotencyKey: string): Invocation | null {
  const sd = findScope(w.state, scope);
  const id = sd?.invocationKeys.get(keyOf(action, idempotencyKey));
  const rec = id === undefined ? undefined : sd?.invocations.get(id);
  return rec === undefined ? null : copy(rec);
}

/**
 * Newest first: (createdAt, invocationId) descending. `after` is a page cursor: only invocations
 * that come after it in this order (older ones); an unknown cursor yields nothing.
 */
export function listInvocations(w: Work, scope: Scope, filter: InvocationFilter = {}): Invocation[] {
  const sd = findScope(w.state, scope);
  if (sd === undefined) return [];
  const cursor = filter.after === undefined ? undefined : sd.invocations.get(filter.after);
  if (filter.after !== undefined && cursor === undefined) return [];
  const out: Invocation[] = [];
  for (const inv of sd.invocations.values()) {
    if (filter.status !== undefined && inv.status !== filter.status) continue;
    if (cursor !== undefined && !newerFirst(cursor, inv)) continue;
    out.push(inv);
  }
  out.sort((a, b) => (newerFirst(a, b) ? -1 : 1));
  return limited(out, filter.limit).map(copy);
}

function newerFirst(a: Invocation, b: Invocation): boolean {
  if (a.createdAt !== b.createdAt) return a.createdAt > b.createdAt;
  return a.invocationId > b.invocationId;
}

export function updateInvocation(w: Work, scope: Scope, inv: Invocation, fence: Fence | undefined): void {
  const sd = findScope(w.state, scope);
  const prev = sd?.invocations.get(inv.invocationId);
  if (fence !== undefined) {
    if (fence.invocationId !== inv.invocationId) throw new WritError("INVALID_ARGUMENT", "the fence names another invocation than the one written");
    checkLease(prev, fence);
  }
  if (sd === undefined || prev === undefined) throw new WritError("NOT_FOUND", `no invocation ${inv.invocationId} in this scope`);
  // Fenced: the lease is the condition; otherwise the revision the writer read (docs/stores.md).
  const rev = fence !== undefined ? (prev.rev ?? 0) + 1 : nextRevision(prev.rev ?? 0, inv.rev, `invocation ${inv.invocationId}`);
  const key = keyOf(inv.action, inv.idempotencyKey);
  const prevKey = keyOf(prev.action, prev.idempotencyKey);
  if (key !== prevKey) {
    if (sd.invocationKeys.has(key)) throw new WritError("CONFLICT", `an invocation of ${inv.action} with this idempotency key already exists`);
    setUndoable(w, sd.invocationKeys, key, inv.invocationId);
    sd.invocationKeys.delete(prevKey);
    w.undo.push(() => sd.invocationKeys.set(prevKey, prev.invocationId));
  }
  storeInvocation(w, sd, copy({ ...inv, rev }));
  inv.rev = rev;
}

export function assertLease(w: Work, scope: Scope, fence: Fence): void {
  checkLease(findScope(w.state, scope)?.invocations.get(fence.invocationId), fence);
}

/** Throws `LeaseLostError` unless `rec` is `running` under the fence's owner and token. */
export function checkLease(rec: Invocation | undefined, fence: Fence): void {
  if (rec === undefined || rec.status !== "running" || rec.leaseOwner !== fence.owner || rec.leaseToken !== fence.token) {
    throw new LeaseLostError(`lease lost on invocation ${fence.invocationId}`);
  }
}
