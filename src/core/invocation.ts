/** The invocation state machine (docs/host.md): which transitions exist, checked in one place. */
import { WritError } from "./errors.js";
import type { InvocationStatus } from "./types.js";

// A contradictory external completion (docs/completions.md) sends even a settled invocation back to a human:
// that is the only way out of succeeded / failed.
const TRANSITIONS: Record<InvocationStatus, readonly InvocationStatus[]> = {
  queued: ["running", "cancelled", "reconciliation_required"],
  // running -> cancelled: a cancel accepted while the worker still prepares (no step started).
  running: ["succeeded", "failed", "denied", "awaiting_approval", "parked", "reconciliation_required", "queued", "running", "cancelled"],
  awaiting_approval: ["queued", "denied", "cancelled"],
  parked: ["succeeded", "failed", "queued", "reconciliation_required"],
  reconciliation_required: ["succeeded", "failed", "queued"],
  succeeded: ["reconciliation_required"],
  failed: ["reconciliation_required"],
  denied: [],
  cancelled: [],
};

export function canTransition(from: InvocationStatus, to: InvocationStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

/** Throws `INVALID_STATE` for a transition the lifecycle does not have. */
export function assertTransition(from: InvocationStatus, to: InvocationStatus, invocationId: string): void {
  if (!canTransition(from, to)) {
    throw new WritError("INVALID_STATE", `invocation ${invocationId} cannot go from ${from} to ${to}`, { details: { from, to } });
  }
}

/** Exponential backoff with full jitter: a delay in [base * 2^(n-1) / 2, base * 2^(n-1)], capped. */
export function backoffDelay(retry: number, baseMs: number, maxMs: number, unit: number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, retry - 1));
  return Math.round(ceiling / 2 + (ceiling / 2) * Math.min(1, Math.max(0, unit)));
}

/** What joins an invocation id and a step index in the id of that step's compensation. */
export const UNDO_MARK = ":undo:";

/** A compensation runs through the boundary as its own execution: `<invocation>:undo:<step index>` (docs/host.md, Outcomes). */
export function compensationInvocationId(invocationId: string, stepIndex: number): string {
  return `${invocationId}${UNDO_MARK}${stepIndex}`;
}

/** The invocation a compensation's execution id undoes, or null when `id` is not a compensation's. */
export function compensatedInvocation(id: string): string | null {
  const at = id.indexOf(UNDO_MARK);
  return at < 0 ? null : id.slice(0, at);
}
