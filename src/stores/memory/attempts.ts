/** Attempt records: the store assigns each scope's attempts seq 1, 2, 3… in insertion order. */
import { WritError } from "../../core/errors.js";
import { type ListOptions } from "../../core/store.js";
import type { AttemptRecord, Scope } from "../../core/types.js";
import { copy } from "./copy.js";
import { findScope, limited, scopeFor, type Work } from "./state.js";

export function insertAttempt(w: Work, scope: Scope, rec: AttemptRecord): number {
  const sd = scopeFor(w.state, scope);
  if (sd.attemptIndex.has(rec.attemptId)) throw new WritError("CONFLICT", `attempt ${rec.attemptId} already exists`);
  const stored = copy(rec);
  stored.seq = sd.attempts.length + 1;
  sd.attempts.push(stored);
  sd.attemptIndex.set(rec.attemptId, stored.seq - 1);
  w.undo.push(() => {
    sd.attempts.pop();
    sd.attemptIndex.delete(rec.attemptId);
  });
  return stored.seq;
}

/** Replaces the attempt with the same id; its store-assigned seq is kept. */
export function updateAttempt(w: Work, scope: Scope, rec: AttemptRecord): void {
  const sd = findScope(w.state, scope);
  const i = sd?.attemptIndex.get(rec.attemptId);
  if (sd === undefined || i === undefined) throw new WritError("NOT_FOUND", `no attempt ${rec.attemptId} in this scope`);
  const prev = sd.attempts[i] as AttemptRecord;
  const stored = copy(rec);
  stored.seq = prev.seq;
  sd.attempts[i] = stored;
  w.undo.push(() => {
    sd.attempts[i] = prev;
  });
}

export function getAttempt(w: Work, scope: Scope, attemptId: string): AttemptRecord | null {
  const sd = findScope(w.state, scope);
  const i = sd?.attemptIndex.get(attemptId);
  return sd === undefined || i === undefined ? null : copy(sd.attempts[i] as AttemptRecord);
}

/** In seq order, starting after `afterSeq` (seq i sits at index i - 1, so no scan is needed to start). */
export function listAttempts(w: Work, scope: Scope, opts: ListOptions & { invocationId?: string; afterSeq?: number } = {}): AttemptRecord[] {
  const all = findScope(w.state, scope)?.attempts ?? [];
  const { invocationId, limit } = opts;
  const start = opts.afterSeq === undefined ? 0 : Math.max(0, Math.floor(opts.afterSeq));
  const out: AttemptRecord[] = [];
  for (let i = start; i < all.length && (limit === undefined || out.length < limit); i++) {
    const a = all[i] as AttemptRecord;
    if (invocationId === undefined || a.invocationId === invocationId) out.push(a);
  }
  return limited(out, limit).map(copy);
}
