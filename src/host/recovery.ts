/**
 * What a worker does with a claimed invocation that cannot run on (docs/host.md, Recovery): its
 * recovery budget is spent, or its action version is no longer registered on this host. Both read
 * only the invocation's checkpoints, never the action definition, so they work after a deploy
 * removed or changed the action; neither evaluates policy nor calls a connector.
 */
import { appendJournal, draft } from "../core/journal.js";
import type { StoreTx } from "../core/store.js";
import { compensationInvocationId } from "../core/invocation.js";
import type { AttemptRecord, Fence, Invocation, ReasonCode, StepCheckpoint } from "../core/types.js";
import { undoActionId, undoKey } from "./compensation.js";
import { scopeOf, type HostContext } from "./context.js";
import type { HostEvent } from "./events.js";
import { toReconciliation } from "./reconcile.js";

/**
 * Claims counted against `recoveryMaxAttempts`: every claim of the invocation's life, less those
 * before an operator's last resolution (docs/host.md, "What counts as an attempt").
 */
export function claimsCounted(inv: Invocation): number {
  return inv.attemptCount - (inv.recoveryBase ?? 0);
}

/** Latest row per step index (a retry replaces a failed row; rows are one per step). */
export function stepsByIndex(rows: StepCheckpoint[]): Map<number, StepCheckpoint> {
  const m = new Map<number, StepCheckpoint>();
  for (const r of rows) m.set(r.stepIndex, r);
  return m;
}

/**
 * Settles what an interrupted attempt left behind (a `started` step: intent without outcome): the
 * step and the attempt become unknown, the key stops being in progress, and the journal says so.
 * `key` names the execution's idempotency key when it is not the invocation's own (a compensation).
 * The caller asserted the lease in this transaction.
 */
export async function settleInterrupted(
  ctx: HostContext,
  tx: StoreTx,
  inv: Invocation,
  fence: Fence,
  step: StepCheckpoint,
  reason: string,
  key: { action: string; idempotencyKey: string } = { action: inv.action, idempotencyKey: inv.idempotencyKey },
): Promise<void> {
  const scope = scopeOf(inv);
  const now = ctx.o.clock.now();
  const unknown: StepCheckpoint = { ...step, status: "unknown", reasonCode: "OUTCOME_AMBIGUOUS", reason, endedAt: now };
  // A compensation's rows belong to its own execution id: written under the lease asserted above.
  await (step.invocationId === fence.invocationId ? tx.putStep(scope, unknown, fence) : tx.putStep(scope, unknown));
  const att = await tx.getAttempt(scope, step.attemptId);
  if (att && att.state === "EXECUTING") {
    const settled: AttemptRecord = { ...att, state: "UNKNOWN", reasonCode: "OUTCOME_AMBIGUOUS", reason, endedAt: now, stepIndex: step.stepIndex };
    await tx.updateAttempt(scope, settled);
    await appendJournal(tx, ctx.o.crypto, scope, [
      draft("attempt.settled", [att.attemptId], now, { attemptId: att.attemptId, invocationId: inv.invocationId }, { state: "UNKNOWN", reasonCode: "OUTCOME_AMBIGUOUS", reason, stepIndex: step.stepIndex }),
    ]);
  }
  const idem = await tx.getIdempotency(scope, key.action, key.idempotencyKey);
  if (idem && idem.state === "in_progress") await tx.putIdempotency(scope, { ...idem, state: "unknown", updatedAt: now });
}

/** Why the invocation cannot run on. */
export interface Stop {
  /** `RECOVERY_EXHAUSTED` or `ACTION_VERSION_UNAVAILABLE`. */
  code: ReasonCode;
  reason: string;
  /** With no step started and none succeeded, end `failed` instead of opening a reconciliation. */
  failIfUntouched: boolean;
}

/**
 * Ends an invocation from its checkpoints alone (docs/host.md, Recovery): a `started` step (of the
 * action or of a running compensation) is settled unknown, and a reconciliation is opened at the
 * first step that did not succeed (with the external reference of an unknown or handed-off one;
 * during compensation, at the step whose failure started it). Only with
 * `failIfUntouched` and nothing started or succeeded does the invocation end `failed` with the
 * code. The caller asserted the lease in this transaction.
 */
export async function stopFromCheckpoints(ctx: HostContext, tx: StoreTx, inv: Invocation, fence: Fence, stop: Stop, events: HostEvent[]): Promise<Invocation> {
  const scope = scopeOf(inv);
  const rows = stepsByIndex(await tx.getSteps(scope, inv.invocationId));
  const { code, reason } = stop;
  if (inv.compensating) {
    // Each compensation is its own execution, `<invocation>:undo:<step index>` (docs/host.md, Outcomes).
    for (const row of rows.values()) {
      if (row.status !== "succeeded" || row.stepIndex >= inv.nextStep) continue;
      for (const u of await tx.getSteps(scope, compensationInvocationId(inv.invocationId, row.stepIndex))) {
        if (u.status !== "started") continue;
        await settleInterrupted(ctx, tx, inv, fence, u, reason, { action: undoActionId(inv.action, row.stepName), idempotencyKey: undoKey(ctx, inv, row.stepName) });
      }
    }
    return toReconciliation(ctx, tx, inv, fence, inv.nextStep, code, reason, undefined, events);
  }
  let done = 0;
  while (rows.get(done)?.status === "succeeded") done++;
  const current = rows.get(done);
  switch (current?.status) {
    case "started":
      await settleInterrupted(ctx, tx, inv, fence, current, reason);
      return toReconciliation(ctx, tx, inv, fence, done, code, reason, undefined, events);
    case "unknown":
    case "handed_off":
      // A handoff is an effect the provider accepted: its reference goes to the operator.
      return toReconciliation(ctx, tx, inv, fence, done, code, reason, current.externalRef, events);
    default:
      if (stop.failIfUntouched && done === 0) return ctx.transition(tx, inv, "failed", { lastError: `${code}: ${reason}` }, { fence, events });
      return toReconciliation(ctx, tx, inv, fence, done, code, reason, undefined, events);
  }
}
