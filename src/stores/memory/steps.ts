/** Step checkpoints: upserted by (scope, invocationId, stepIndex), monotonic, optionally fenced. */
import { WritError } from "../../core/errors.js";
import type { Fence, Scope, StepCheckpoint, StepStatus } from "../../core/types.js";
import { copy } from "./copy.js";
import { checkLease } from "./invocations.js";
import { findScope, scopeFor, setUndoable, type Work } from "./state.js";

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
