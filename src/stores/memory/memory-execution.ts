/**
 * Execution records: consumed decisions, idempotency records, attempts (the store assigns each
 * scope's attempts seq 1, 2, 3… in insertion order) and step checkpoints (upserted by (scope,
 * invocationId, stepIndex), monotonic, optionally fenced).
 */
import { WritError } from "../../core/errors.js";
import { type ListOptions } from "../../core/store.js";
import type { AttemptRecord, ConsumedDecision, Fence, IdempotencyRecord, Scope, StepCheckpoint, StepStatus } from "../../core/types.js";
import { copy, copyOrNull } from "./memory-copy.js";
import { checkLease } from "./memory-invocations.js";
import { findScope, keyOf, limited, scopeFor, setUndoable, type Work } from "./memory-state.js";

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

/** Unknown keys no invocation holds, oldest first (updatedAt, action, key). */
export function listUnknownKeys(w: Work, scope: Scope, limit: number | undefined): IdempotencyRecord[] {
  const data = findScope(w.state, scope);
  if (!data) return [];
  const bare = [...data.idempotency.values()].filter((r) => r.state === "unknown" && !data.invocations.has(r.invocationId));
  bare.sort((a, b) => a.updatedAt - b.updatedAt || cmp(a.action, b.action) || cmp(a.idempotencyKey, b.idempotencyKey));
  return (limit === undefined ? bare : bare.slice(0, limit)).map((r) => copy(r));
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function putIdempotency(w: Work, scope: Scope, rec: IdempotencyRecord): void {
  setUndoable(w, scopeFor(w.state, scope).idempotency, keyOf(rec.action, rec.idempotencyKey), copy(rec));
}

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
    const a = all[i];
    if (a != null && (invocationId === undefined || a.invocationId === invocationId)) out.push(a);
  }
  return limited(out, limit).map(copy);
}

/** Statuses that record an outcome: a step in one of them never returns to `started`. */
const SETTLED: ReadonlySet<StepStatus> = new Set<StepStatus>(["succeeded", "failed", "unknown"]);

export function getSteps(w: Work, scope: Scope, invocationId: string): StepCheckpoint[] {
  const steps = findScope(w.state, scope)?.steps.get(invocationId);
  if (steps === undefined) return [];
  return [...steps.values()].sort((a, b) => a.stepIndex - b.stepIndex).map(copy);
}

export function putStep(w: Work, scope: Scope, step: StepCheckpoint, fence: Fence | undefined): void {
  if (!Number.isInteger(step.stepIndex) || step.stepIndex < 0) throw new WritError("INVALID_ARGUMENT", "stepIndex must be a non-negative integer");
  if (fence !== undefined) {
    if (fence.invocationId !== step.invocationId) throw new WritError("INVALID_ARGUMENT", "the fence names another invocation than the step's");
    checkLease(findScope(w.state, scope)?.invocations.get(fence.invocationId), fence);
  }
  const sd = scopeFor(w.state, scope);
  let steps = sd.steps.get(step.invocationId);
  if (steps === undefined) {
    steps = new Map();
    sd.steps.set(step.invocationId, steps);
  }
  const prev = steps.get(step.stepIndex);
  // The one way back to `started`: a new attempt (new decision) retrying a definite failure.
  const retry = prev !== undefined && prev.status === "failed" && prev.attemptId !== step.attemptId;
  if (prev !== undefined && step.status === "started" && SETTLED.has(prev.status) && !retry) {
    throw new WritError("CONFLICT", `step ${step.stepIndex} of invocation ${step.invocationId} is ${prev.status} and cannot return to started`);
  }
  setUndoable(w, steps, step.stepIndex, copy(step));
}

export function findStepByExternalRef(w: Work, scope: Scope, connector: string, externalRef: string): StepCheckpoint | null {
  const sd = findScope(w.state, scope);
  if (!sd) return null;
  for (const steps of sd.steps.values()) {
    for (const s of steps.values()) if (s.connector === connector && s.externalRef === externalRef) return copy(s);
  }
  return null;
}
