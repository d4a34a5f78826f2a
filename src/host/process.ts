/**
 * Processing one claimed invocation (SPEC 4.4-4.6): bounded recovery, the idempotent and
 * non-idempotent resume rules, evaluation and signing, execution through the boundary, and
 * settlement of every outcome in the same fenced transaction as the step outcome.
 */
import type { ActionDefinition } from "../core/action.js";
import type { SettlementInfo, SettlementPlan } from "../core/boundary.js";
import { signDecisionWith } from "../core/decision.js";
import { computeRequestDigest } from "../core/digest.js";
import { LeaseLostError, errorMessage, isWritError } from "../core/errors.js";
import { backoffDelay } from "../core/invocation.js";
import { appendJournal, draft } from "../core/journal.js";
import { readCommitted, type StoreTx } from "../core/store.js";
import { transitionsOf } from "../core/transitions.js";
import type { Approval, AttemptRecord, Fence, Invocation, InvocationStatus, Json, StepCheckpoint } from "../core/types.js";
import { approvalLockKey } from "./approvals.js";
import { compensate } from "./compensation.js";
import { applyEarlyCompletions, completionLockKey } from "./completions.js";
import { scopeOf, type HostContext } from "./context.js";
import { planReconciliation, toReconciliation } from "./reconcile.js";
import { withSpan } from "./telemetry.js";
import type { HostEvent } from "./events.js";

/** Outcome of processing, for the worker's bookkeeping and tests. */
export type ProcessResult = InvocationStatus | "lease_lost" | "abandoned";

/** Latest row per step index (a retry replaces a failed row; rows are one per step). */
function stepsByIndex(rows: StepCheckpoint[]): Map<number, StepCheckpoint> {
  const m = new Map<number, StepCheckpoint>();
  for (const r of rows) m.set(r.stepIndex, r);
  return m;
}

export async function processInvocation(ctx: HostContext, inv: Invocation, signal: AbortSignal): Promise<ProcessResult> {
  const attrs = { "writ.invocation_id": inv.invocationId, "writ.action": inv.action, "writ.tenant_id": inv.tenantId, "writ.attempt_count": inv.attemptCount };
  return withSpan("writ.invocation.process", attrs, async (span) => {
    const result = await processGuarded(ctx, inv, signal);
    span.setAttribute("writ.result", result);
    return result;
  });
}

async function processGuarded(ctx: HostContext, inv: Invocation, signal: AbortSignal): Promise<ProcessResult> {
  const fence: Fence = { invocationId: inv.invocationId, owner: inv.leaseOwner!, token: inv.leaseToken! };
  try {
    return await run(ctx, inv, fence, signal);
  } catch (e) {
    if (e instanceof LeaseLostError || isWritError(e, "LEASE_LOST")) {
      ctx.log.warn({ invocationId: inv.invocationId }, "lease lost: stopping work on this invocation");
      return "lease_lost";
    }
    // A store error (possibly after a provider effect was recorded) never turns the invocation
    // failed: abandon it; the lease expires and recovery repairs it from its checkpoints.
    ctx.log.error({ invocationId: inv.invocationId, err: errorMessage(e) }, "abandoning invocation after an error; recovery will resume it");
    return "abandoned";
  }
}

async function run(ctx: HostContext, inv: Invocation, fence: Fence, signal: AbortSignal): Promise<ProcessResult> {
  const { o, r } = ctx;
  const store = o.store;
  const scope = scopeOf(inv);
  const events: HostEvent[] = [];
  const flush = (): void => {
    for (const e of events.splice(0)) ctx.emit(e);
  };
  const settle = async (fn: (tx: StoreTx) => Promise<Invocation>): Promise<ProcessResult> => {
    const next = await store.transact(async (tx) => {
      // The invocation row first (lock order, docs/stores.md): approvals and journal come after.
      await tx.assertLease(scope, fence);
      return fn(tx);
    });
    flush();
    return next.status;
  };
  const action = ctx.actions.get(inv.action);
  if (!action || action.version !== inv.actionVersion) {
    return settle((tx) => ctx.transition(tx, inv, "failed", { lastError: `action ${inv.action}@${inv.actionVersion} is not defined on this host` }, { fence, events }));
  }

  if (inv.compensating) {
    const done = await compensate(ctx, inv, fence, events);
    flush();
    return done.status;
  }

  // One read for everything the decision depends on: steps, the authority, the approval.
  const { steps, authority, approval } = await transitionsOf(store).prepare(scope, {
    invocationId: inv.invocationId,
    authorityRef: inv.request.authorityRef,
    ...(inv.approvalId ? { approvalId: inv.approvalId } : {}),
  });
  // Cancellation is rechecked after each asynchronous preparation step (docs/host.md, Cancellation).
  const stop = await interrupted(ctx, inv, fence, signal);
  if (stop) return stop;
  const rows = stepsByIndex(steps);
  let doneSteps = 0;
  while (rows.get(doneSteps)?.status === "succeeded") doneSteps++;
  const current = rows.get(doneSteps);

  // Bounded recovery: too many claims without a clean settlement. Nothing is evaluated or called.
  if (inv.attemptCount > r.recoveryMaxAttempts) {
    const reason = `recovery attempts exhausted (${inv.attemptCount}/${r.recoveryMaxAttempts})`;
    return settle(async (tx) => {
      if (current?.status === "started") await settleInterrupted(ctx, tx, inv, fence, current, reason);
      return toReconciliation(ctx, tx, inv, fence, doneSteps, "RECOVERY_EXHAUSTED", reason, undefined, events);
    });
  }
  if (current?.status === "unknown") {
    return settle((tx) => toReconciliation(ctx, tx, inv, fence, doneSteps, current.reasonCode ?? "OUTCOME_AMBIGUOUS", current.reason ?? "step outcome unknown", current.externalRef, events));
  }
  if (current?.status === "handed_off") {
    return settle((tx) => ctx.transition(tx, inv, "parked", { nextStep: doneSteps }, { fence, events }));
  }
  if (current?.status === "started" && !action.idempotent) {
    // Intent recorded, no outcome: the provider may or may not have acted. Never call it again.
    return settle(async (tx) => {
      await settleInterrupted(ctx, tx, inv, fence, current, "worker lost after recording intent; outcome unknown");
      return toReconciliation(ctx, tx, inv, fence, doneSteps, "OUTCOME_AMBIGUOUS", "interrupted after intent was recorded (non-idempotent action): outcome unknown", undefined, events);
    });
  }
  if (doneSteps >= action.steps.length) {
    // Every step succeeded but the settlement was lost (cannot happen with atomic settlement; repair).
    return settle((tx) => ctx.transition(tx, inv, "succeeded", { nextStep: doneSteps }, { fence, events }));
  }

  // Circuit breaker for the next call: refused before the provider is reached, re-queued for later.
  const next = action.steps[doneSteps]!;
  const blockedUntil = ctx.breakers.blockedUntil(next.connector, next.operation, o.clock.now());
  if (blockedUntil > 0) {
    return settle((tx) =>
      ctx.transition(tx, inv, "queued", { runAt: blockedUntil, attemptCount: 0, nextStep: doneSteps, lastError: `circuit open for ${next.connector}.${next.operation}` }, { fence, events }),
    );
  }
  if (signal.aborted) return "abandoned";

  // Evaluate (a fresh decision every time: first run, retry, or recovery).
  const verdict = await o.policy.evaluate({ request: inv.request, authority, approval: approval?.status === "approved" ? approval : null });
  const afterPolicy = await interrupted(ctx, inv, fence, signal);
  if (afterPolicy) return afterPolicy;
  const partially = doneSteps > 0;
  if (verdict.result === "DENY") {
    if (partially) {
      return settle((tx) => toReconciliation(ctx, tx, inv, fence, doneSteps, "DENIED_AFTER_PARTIAL", `policy denied the remaining steps after ${doneSteps} succeeded: ${verdict.reasons.join("; ")}`, undefined, events));
    }
    return settle((tx) => ctx.transition(tx, inv, "denied", { reasons: verdict.reasons }, { fence, events }));
  }
  if (verdict.result === "REQUIRE_APPROVAL") {
    return settle((tx) => openApproval(ctx, tx, inv, fence, verdict.approval, approval, events, { reasons: verdict.reasons, policyRef: verdict.policyRef }));
  }

  const now = o.clock.now();
  const token = signDecisionWith(o.crypto, o.signingKey, {
    v: 1,
    decisionId: ctx.newId("dec_"),
    result: "ALLOW",
    requestDigest: inv.requestDigest,
    tenantId: inv.tenantId,
    spaceId: inv.spaceId,
    authorityRef: inv.request.authorityRef,
    policyRef: verdict.policyRef,
    ...(approval?.status === "approved" ? { approvalRef: approval.approvalId } : {}),
    issuedAt: now,
    reasons: verdict.reasons,
  });
  let settled: Invocation | null = null;
  const attempt = await ctx.boundary.execute(inv.request, token, {
    fence,
    invocationId: inv.invocationId,
    known: { steps, authority, approval },
    signal,
    settle: (info) => {
      const { next: planned, within, ...plan } = planSettlement(ctx, inv, action, info, events);
      settled = planned;
      return within ? { ...plan, within: async (tx: StoreTx) => void (settled = await within(tx)) } : plan;
    },
  });
  flush();
  const s = settled as Invocation | null;
  if (s?.status === "running" && s.compensating) {
    const done = await compensate(ctx, s, fence, events);
    flush();
    return done.status;
  }
  if (s) return s.status;
  return afterUnsettled(ctx, inv, fence, attempt, doneSteps, events, flush);
}

/**
 * Whether this worker must stop preparing: the worker is stopping (its signal aborted), or the
 * invocation is no longer running under this lease (an operator cancelled it, or the lease moved
 * on). One committed read; the fenced begin of the boundary is the last word (docs/host.md).
 */
async function interrupted(ctx: HostContext, inv: Invocation, fence: Fence, signal: AbortSignal): Promise<ProcessResult | null> {
  if (signal.aborted) return "abandoned";
  const cur = await readCommitted(ctx.o.store, (tx) => tx.getInvocation(scopeOf(inv), inv.invocationId));
  if (cur?.status === "cancelled") {
    ctx.log.info({ invocationId: inv.invocationId }, "cancelled while being prepared: stopping before any connector call");
    return "cancelled";
  }
  if (!cur || cur.status !== "running" || cur.leaseOwner !== fence.owner || cur.leaseToken !== fence.token) return "lease_lost";
  return null;
}

/**
 * Settles what an interrupted attempt left behind (a `started` step: intent without outcome): the
 * step and the attempt become unknown, the key stops being in progress, and the journal says so.
 */
async function settleInterrupted(ctx: HostContext, tx: StoreTx, inv: Invocation, fence: Fence, step: StepCheckpoint, reason: string): Promise<void> {
  const scope = scopeOf(inv);
  const now = ctx.o.clock.now();
  await tx.putStep(scope, { ...step, status: "unknown", reasonCode: "OUTCOME_AMBIGUOUS", reason, endedAt: now }, fence);
  const att = await tx.getAttempt(scope, step.attemptId);
  if (att && att.state === "EXECUTING") {
    const settled: AttemptRecord = { ...att, state: "UNKNOWN", reasonCode: "OUTCOME_AMBIGUOUS", reason, endedAt: now, stepIndex: step.stepIndex };
    await tx.updateAttempt(scope, settled);
    await appendJournal(tx, ctx.o.crypto, scope, [
      draft("attempt.settled", [att.attemptId], now, { attemptId: att.attemptId, invocationId: inv.invocationId }, { state: "UNKNOWN", reasonCode: "OUTCOME_AMBIGUOUS", reason, stepIndex: step.stepIndex }),
    ]);
  }
  const idem = await tx.getIdempotency(scope, inv.action, inv.idempotencyKey);
  if (idem && idem.state === "in_progress") await tx.putIdempotency(scope, { ...idem, state: "unknown", updatedAt: now });
}

/** The attempt ended without a settlement hook (refused or duplicate): no effect happened now. */
async function afterUnsettled(
  ctx: HostContext,
  inv: Invocation,
  fence: Fence,
  a: AttemptRecord,
  doneSteps: number,
  events: HostEvent[],
  flush: () => void,
): Promise<ProcessResult> {
  const store = ctx.o.store;
  const result = await store.transact(async (tx): Promise<Invocation> => {
    await tx.assertLease(scopeOf(inv), fence);
    if (a.state === "DUPLICATE") return ctx.transition(tx, inv, "succeeded", { result: a.output ?? null, nextStep: doneSteps }, { fence, events });
    const code = a.reasonCode ?? "REFUSED";
    const why = `${code}: ${a.reason ?? "refused"}`;
    switch (code) {
      case "RECONCILIATION_PENDING":
        return toReconciliation(ctx, tx, inv, fence, doneSteps, code, why, undefined, events);
      case "EXECUTION_IN_PROGRESS": {
        const delay = backoffDelay(1, ctx.r.retry.baseDelayMs, ctx.r.retry.maxDelayMs, unit(ctx));
        return ctx.transition(tx, inv, "queued", { runAt: ctx.o.clock.now() + delay, attemptCount: 0, lastError: why }, { fence, events });
      }
      default: {
        // After some steps succeeded, any refusal leaves a partially applied action: a human decides.
        if (doneSteps > 0) return toReconciliation(ctx, tx, inv, fence, doneSteps, code, `refused after ${doneSteps} step(s) succeeded: ${why}`, undefined, events);
        const governance = code.startsWith("AUTHORITY_") || code.startsWith("APPROVAL_") || code === "DECISION_REF_MISMATCH" || code === "DECISION_NOT_ALLOW";
        return governance ? ctx.transition(tx, inv, "denied", { reasons: [why] }, { fence, events }) : ctx.transition(tx, inv, "failed", { lastError: why }, { fence, events });
      }
    }
  });
  flush();
  return result.status;
}

function unit(ctx: HostContext): number {
  const b = ctx.o.random.bytes(4);
  return (((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0) / 2 ** 32;
}

/** The host's part of a settlement, planned for the boundary's one settle transition. */
interface HostSettlement extends Omit<SettlementPlan, "within"> {
  /** The invocation as the settlement leaves it. */
  next: Invocation;
  /** Runs in the same transaction after the writes and returns the final invocation (handoff only). */
  within?: (tx: StoreTx) => Promise<Invocation>;
}

/** The invocation moves with the step outcome: planned here, written in the boundary's settle transition. */
function planSettlement(ctx: HostContext, inv: Invocation, action: ActionDefinition<unknown>, info: SettlementInfo, events: HostEvent[]): HostSettlement {
  const { o, r } = ctx;
  const a = info.attempt;
  const step = action.steps[info.stepIndex]!;
  const now = o.clock.now();
  const move = (to: InvocationStatus, patch: Partial<Invocation>, data?: Json): HostSettlement => {
    const p = ctx.plan(inv, to, patch, { events, ...(data !== undefined ? { data } : {}) });
    return { next: p.next, invocation: p.next, entries: [p.entry] };
  };
  switch (a.state) {
    case "SUCCEEDED":
      ctx.breakers.success(step.connector, step.operation);
      return move("succeeded", { result: a.output ?? null, nextStep: action.steps.length, attemptCount: 0 });
    case "HANDED_OFF": {
      ctx.breakers.success(step.connector, step.operation);
      const row = info.step;
      const patch: Partial<Invocation> = { nextStep: info.stepIndex, attemptCount: 0 };
      if (row.deadlineAt !== undefined) patch.deadlineAt = row.deadlineAt;
      const parked = move("parked", patch, { externalRef: a.externalRef ?? null });
      // A handoff's settlement takes the completion lock first, like `complete` does: an early
      // completion racing the parking write is then either seen here or sees the parked step.
      const locks = row.externalRef !== undefined ? [completionLockKey(step.connector, row.externalRef)] : [];
      return { ...parked, locks, within: (tx) => applyEarlyCompletions(ctx, tx, parked.next, row, events) };
    }
    case "TIMED_OUT":
    case "UNKNOWN": {
      if (a.state === "TIMED_OUT") ctx.breakers.failure(step.connector, step.operation, now);
      const p = planReconciliation(ctx, inv, info.stepIndex, a.reasonCode ?? "OUTCOME_AMBIGUOUS", a.reason ?? "outcome unknown", a.externalRef, events);
      return { next: p.next, invocation: p.next, reconciliation: p.rec, entries: p.entries };
    }
    case "FAILED": {
      const transient = a.reasonCode === "CONNECTOR_TRANSIENT_FAILURE";
      if (transient) ctx.breakers.failure(step.connector, step.operation, now);
      else ctx.breakers.success(step.connector, step.operation);
      const policy = { ...r.retry, ...action.retry };
      if (transient && action.idempotent && inv.retryCount + 1 < policy.maxAttempts) {
        const retryCount = inv.retryCount + 1;
        const delay = backoffDelay(retryCount, policy.baseDelayMs, policy.maxDelayMs, unit(ctx));
        return move("queued", { runAt: now + delay, retryCount, attemptCount: 0, nextStep: info.stepIndex, lastError: a.reason ?? "transient failure" });
      }
      const compensable = action.steps.slice(0, info.stepIndex).some((s) => s.compensate);
      if (compensable) {
        // Compensations run next, under this lease, then the invocation ends failed.
        return move("running", { compensating: true, nextStep: info.stepIndex, lastError: a.reason ?? a.reasonCode ?? "failed" });
      }
      return move("failed", { lastError: `${a.reasonCode ?? "FAILED"}: ${a.reason ?? ""}`, nextStep: info.stepIndex });
    }
    default:
      return move("failed", { lastError: `unexpected attempt state ${a.state}` });
  }
}

/** REQUIRE_APPROVAL: open (or keep) an approval bound to the request digest and park. */
async function openApproval(
  ctx: HostContext,
  tx: StoreTx,
  inv: Invocation,
  fence: Fence,
  spec: { approverRoles?: string[]; quorum?: number; ttlMs?: number } | undefined,
  existing: Approval | null,
  events: HostEvent[],
  asked: { reasons: string[]; policyRef: string },
): Promise<Invocation> {
  const scope = scopeOf(inv);
  const now = ctx.o.clock.now();
  if (existing) {
    // Re-read under the approval's lock: a vote recorded while this worker evaluated is not lost.
    await tx.lock(scope, [approvalLockKey(existing.approvalId)]);
    existing = (await tx.getApproval(scope, existing.approvalId)) ?? existing;
    if (existing.status === "approved") return ctx.transition(tx, inv, "queued", { runAt: now, attemptCount: 0 }, { fence, events });
  }
  if (existing && (existing.status === "denied" || existing.status === "expired" || existing.status === "revoked")) {
    return ctx.transition(tx, inv, "denied", { reasons: [`approval ${existing.approvalId} ${existing.status}`] }, { fence, events });
  }
  if (existing && existing.status === "pending") return ctx.transition(tx, inv, "awaiting_approval", {}, { fence, events });
  const approval: Approval = {
    ...scope,
    approvalId: ctx.newId("apr_"),
    requestDigest: computeRequestDigest(ctx.o.crypto, inv.request),
    invocationId: inv.invocationId,
    requestedBy: inv.request.actor,
    ...(inv.submittedBy ? { submittedBy: inv.submittedBy } : {}),
    approverRoles: spec?.approverRoles ?? ["approve"],
    quorum: spec?.quorum ?? 1,
    votes: [],
    status: "pending",
    expiresAt: now + (spec?.ttlMs ?? ctx.r.approvalTtlMs),
    createdAt: now,
    updatedAt: now,
  };
  await tx.putApproval(scope, approval);
  await appendJournal(tx, ctx.o.crypto, scope, [
    draft("approval.opened", [approval.approvalId], now, { invocationId: inv.invocationId, approvalId: approval.approvalId }, { quorum: approval.quorum, approverRoles: approval.approverRoles, expiresAt: approval.expiresAt, reasons: asked.reasons, policyRef: asked.policyRef, requestedBy: { ...approval.requestedBy }, ...(approval.submittedBy ? { submittedBy: { principal: { ...approval.submittedBy.principal }, ...(approval.submittedBy.keyId ? { keyId: approval.submittedBy.keyId } : {}) } } : {}) }),
  ]);
  return ctx.transition(tx, inv, "awaiting_approval", { approvalId: approval.approvalId }, { fence, events });
}
