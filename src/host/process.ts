/**
 * Processing one claimed invocation (docs/host.md, Durability rules, Outcomes and Recovery): bounded recovery, the idempotent and
 * non-idempotent resume rules, evaluation and signing, execution through the boundary, and
 * settlement of every outcome in the same fenced transaction as the step outcome.
 */
import type { ActionDefinition } from "../core/action.js";
import type { SettlementInfo, SettlementPlan, StepVeto } from "../core/boundary.js";
import type { BreakerGate, BreakerOutcome } from "../core/breaker.js";
import { signDecisionWith } from "../core/decision.js";
import { computeRequestDigest } from "../core/digest.js";
import { LeaseLostError, errorMessage, isWritError } from "../core/errors.js";
import { backoffDelay } from "../core/invocation.js";
import { appendJournal, draft } from "../core/journal.js";
import { innerStore, isUnopenedError, unopenedReason } from "../core/sealing.js";
import { readCommitted, type Store, type StoreTx } from "../core/store.js";
import { transitionsOf, type Prepared } from "../core/transitions.js";
import type { Approval, AttemptRecord, Fence, Invocation, InvocationStatus, Json } from "../core/types.js";
import { approvalLockKey } from "./approvals.js";
import type { AttemptBreakers, BreakerTarget } from "./breaker.js";
import { compensate } from "./compensation.js";
import { applyEarlyCompletions, completionLockKey } from "./completions.js";
import { scopeOf, type HostContext } from "./context.js";
import { planReconciliation, toReconciliation } from "./reconcile.js";
import { claimsCounted, settleInterrupted, stepsByIndex, stopFromCheckpoints } from "./recovery.js";
import { withSpan } from "./telemetry.js";
import type { HostEvent } from "./events.js";

/** Outcome of processing, for the worker's bookkeeping and tests. */
export type ProcessResult = InvocationStatus | "lease_lost" | "abandoned";

/** A prepare read made with the claim, and the breaker targets it read (in the order of its `breakers`). */
export interface Prepped {
  prepared: Prepared;
  targets: BreakerTarget[];
}

/** Each (connector, operation) the host's actions call, once. */
export function hostBreakerTargets(ctx: HostContext): BreakerTarget[] {
  return distinctTargets([...ctx.actions.values()].flatMap((a) => a.steps));
}

export async function processInvocation(ctx: HostContext, inv: Invocation, signal: AbortSignal, given?: Prepped, settling?: () => void): Promise<ProcessResult> {
  const attrs = { "writ.invocation_id": inv.invocationId, "writ.action": inv.action, "writ.tenant_id": inv.tenantId, "writ.attempt_count": inv.attemptCount };
  return withSpan("writ.invocation.process", attrs, async (span) => {
    const result = await processGuarded(ctx, inv, signal, given, settling);
    span.setAttribute("writ.result", result);
    return result;
  });
}

async function processGuarded(ctx: HostContext, inv: Invocation, signal: AbortSignal, given: Prepped | undefined, settling: (() => void) | undefined): Promise<ProcessResult> {
  const fence: Fence = { invocationId: inv.invocationId, owner: inv.leaseOwner!, token: inv.leaseToken! };
  // The breakers this claim checks; the holder id names it across the fleet (docs/host.md, "Circuit breakers").
  const breakers = ctx.breakers.forAttempt(scopeOf(inv), `${inv.invocationId}/${fence.token}`);
  try {
    const unopened = unopenedReason(inv);
    // Its values are as stored (sealed): written back beneath the sealing layer, untouched.
    if (unopened !== undefined) return await handBack(ctx, inv, fence, unopened, innerStore(ctx.o.store));
    return await run(ctx, inv, fence, signal, breakers, given, settling);
  } catch (e) {
    if (e instanceof LeaseLostError || isWritError(e, "LEASE_LOST")) {
      // The usual cause while preparing: an operator cancelled it (the cancel drops the lease).
      // Read beneath the sealing layer: the status is all it needs, and a value this process
      // cannot open must not hide a cancel.
      const cur = await readCommitted(innerStore(ctx.o.store), (tx) => tx.getInvocation(scopeOf(inv), inv.invocationId)).catch(() => null);
      if (cur?.status === "cancelled") {
        ctx.log.info({ invocationId: inv.invocationId }, "cancelled while being prepared: stopping before any connector call");
        return "cancelled";
      }
      ctx.log.warn({ invocationId: inv.invocationId }, "lease lost: stopping work on this invocation");
      return "lease_lost";
    }
    // A store error (possibly after a provider effect was recorded) never turns the invocation
    // failed: abandon it; the lease expires and recovery repairs it from its checkpoints.
    ctx.log.error({ invocationId: inv.invocationId, err: errorMessage(e) }, "abandoning invocation after an error; recovery will resume it");
    return "abandoned";
  } finally {
    await breakers.releaseUnused();
  }
}

/** How long an invocation this process could not open waits before a process may claim it again. */
export const UNOPENED_RETRY_MS = 30_000;

/**
 * An invocation holding a sealed value this process cannot open (sealed under a data key it does
 * not hold, or altered) is handed back without being run (docs/security.md, "A value this process
 * cannot open"): queued again after UNOPENED_RETRY_MS, so a process that holds the key can take it,
 * with why in `lastError`; the claim is not counted as an attempt. `via` is the store the write
 * goes through: beneath the sealing layer for an invocation as stored (its values stay exactly as
 * they were sealed), the sealing store itself for one whose params were opened (they are sealed
 * again; an envelope passes through sealing as it is).
 */
async function handBack(ctx: HostContext, inv: Invocation, fence: Fence, reason: string, via: Store): Promise<ProcessResult> {
  const { o } = ctx;
  const scope = scopeOf(inv);
  ctx.log.error({ invocationId: inv.invocationId, action: inv.action }, `${reason}: handed back, not run`);
  const events: HostEvent[] = [];
  const next = await via.transact(async (tx) => {
    await tx.assertLease(scope, fence);
    return ctx.transition(tx, inv, "queued", { runAt: o.clock.now() + UNOPENED_RETRY_MS, attemptCount: inv.attemptCount - 1, lastError: `${reason}; handed back for a process that holds the key` }, { fence, events });
  });
  for (const e of events) ctx.emit(e);
  return next.status;
}

/** Why a breaker refused a call, for `lastError` and the veto. */
function circuitReason(t: BreakerTarget, g: BreakerGate & { kind: "refuse" }): string {
  return g.state === "open" ? `circuit open for ${t.connector}.${t.operation}` : `circuit half-open for ${t.connector}.${t.operation}: another call is probing`;
}

async function run(ctx: HostContext, inv: Invocation, fence: Fence, signal: AbortSignal, breakers: AttemptBreakers, given: Prepped | undefined, settling: (() => void) | undefined): Promise<ProcessResult> {
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
  /**
   * A step this process cannot open, found by a read before any call of this run (a claim that
   * did not read the steps opens only the params): handed back as an unopenable param would be.
   * Its params were opened: the write goes through the sealing store, which seals them again.
   */
  const handBackIfUnopened = (e: unknown): Promise<ProcessResult> => {
    if (isUnopenedError(e)) return handBack(ctx, inv, fence, e.message, store);
    throw e;
  };
  // Bounded recovery first, right after the lease was taken (docs/host.md, Recovery): before the
  // action is resolved, before compensation, policy or any connector call.
  const counted = claimsCounted(inv);
  if (counted > r.recoveryMaxAttempts) {
    const reason = `recovery attempts exhausted (${counted}/${r.recoveryMaxAttempts})`;
    return settle((tx) => stopFromCheckpoints(ctx, tx, inv, fence, { code: "RECOVERY_EXHAUSTED", reason, failIfUntouched: false }, events)).catch(handBackIfUnopened);
  }
  const action = ctx.actions.get(inv.action);
  if (!action || action.version !== inv.actionVersion) {
    // A deploy removed or changed the action: its checkpoints decide (docs/host.md, Recovery).
    const reason = `action ${inv.action}@${inv.actionVersion} is not registered on this host${action ? ` (it has version ${action.version})` : ""}`;
    return settle((tx) => stopFromCheckpoints(ctx, tx, inv, fence, { code: "ACTION_VERSION_UNAVAILABLE", reason, failIfUntouched: true }, events)).catch(handBackIfUnopened);
  }

  if (inv.compensating) {
    // Compensation reads every step before its first undo call.
    const done = await compensate(ctx, inv, fence, events).catch(handBackIfUnopened);
    if (typeof done === "string") return done;
    flush();
    return done.status;
  }

  // One read for everything the decision depends on: steps, the authority, the approval, the
  // invocation's status now (a cancel that landed since the claim) and the steps' breakers.
  // The claim may have made that read already (in the same statement, PostgreSQL).
  const targets = given?.targets ?? distinctTargets(action.steps);
  let prepared: Prepared;
  try {
    prepared =
      given?.prepared ??
      (await transitionsOf(store).prepare(scope, {
        invocationId: inv.invocationId,
        authorityRef: inv.request.authorityRef,
        ...(inv.approvalId ? { approvalId: inv.approvalId } : {}),
        breakers: targets,
      }));
  } catch (e) {
    // The same for a step output first read here: nothing is evaluated or called yet.
    return handBackIfUnopened(e);
  }
  const { steps, authority, approval } = prepared;
  // Cancellation is rechecked after the prepare read (docs/host.md, Cancellation).
  const stop = interrupted(ctx, inv, fence, signal, prepared.invocation);
  if (stop) return stop;
  const rows = stepsByIndex(steps);
  let doneSteps = 0;
  while (rows.get(doneSteps)?.status === "succeeded") doneSteps++;
  const current = rows.get(doneSteps);

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

  // Circuit breaker for the next call (the store's, shared by the fleet): refused before the
  // provider is reached, re-queued for later. Later steps are checked in `beforeStep`. This claim
  // evaluated nothing and called nothing, and it hands the lease back cleanly: it is not counted
  // (docs/host.md, "What counts as an attempt"), so a long outage cannot spend the budget.
  const next = action.steps[doneSteps]!;
  const gate = await breakers.check(next, prepared.breakers[targets.findIndex((t) => t.connector === next.connector && t.operation === next.operation)]);
  if (gate.kind === "refuse") {
    return settle((tx) => ctx.transition(tx, inv, "queued", { runAt: gate.until, attemptCount: inv.attemptCount - 1, nextStep: doneSteps, lastError: circuitReason(next, gate) }, { fence, events }));
  }
  if (signal.aborted) return "abandoned";

  // Evaluate (a fresh decision every time: first run, retry, or recovery).
  const verdict = await o.policy.evaluate({ request: inv.request, authority, approval: approval?.status === "approved" ? approval : null });
  // A cancel that landed during the evaluation is refused by the fenced begin below (nothing
  // consumed, nothing called); the lease-lost answer then reads why (processGuarded).
  if (signal.aborted) return "abandoned";
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
  const said: { outcome?: BreakerOutcome; step?: number } = {};
  const attempt = await ctx.boundary.execute(inv.request, token, {
    fence,
    invocationId: inv.invocationId,
    known: { steps, authority, approval },
    beforeStep: (i) => beforeStep(ctx, breakers, action, i),
    signal,
    settle: (info) => {
      const { next: planned, within, breaker, ...plan } = planSettlement(ctx, inv, action, info, events);
      settled = planned;
      // The final settlement (not a compensation that still has calls to make): the worker may
      // refill this slot now.
      if (planned.status !== "running") settling?.();
      if (breaker) Object.assign(said, { outcome: breaker, step: info.stepIndex });
      return within ? { ...plan, within: async (tx: StoreTx) => void (settled = await within(tx)) } : plan;
    },
  });
  flush();
  // The outcome reaches the breaker right after the settlement, in its own transaction (docs/host.md).
  if (said.outcome !== undefined) await breakers.outcome(action.steps[said.step!]!, said.outcome);
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
 * on), as the prepare read found it. The fenced begin of the boundary is the last word (docs/host.md).
 */
function interrupted(ctx: HostContext, inv: Invocation, fence: Fence, signal: AbortSignal, cur: Prepared["invocation"]): ProcessResult | null {
  if (signal.aborted) return "abandoned";
  if (cur?.status === "cancelled") {
    ctx.log.info({ invocationId: inv.invocationId }, "cancelled while being prepared: stopping before any connector call");
    return "cancelled";
  }
  if (!cur || cur.status !== "running" || cur.leaseOwner !== fence.owner || cur.leaseToken !== fence.token) return "lease_lost";
  return null;
}

/** Each (connector, operation) the action's steps call, once. */
function distinctTargets(steps: readonly BreakerTarget[]): BreakerTarget[] {
  const out: BreakerTarget[] = [];
  for (const s of steps) if (!out.some((t) => t.connector === s.connector && t.operation === s.operation)) out.push({ connector: s.connector, operation: s.operation });
  return out;
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
        // Another execution holds the key. A bare one a crash interrupted stops holding it after
        // the boundary's inProgressTimeoutMs: the next claim is then refused RECONCILIATION_PENDING
        // and settles above, so this never re-queues without end (docs/boundary.md, Interrupted executions).
        const delay = backoffDelay(1, ctx.r.retry.baseDelayMs, ctx.r.retry.maxDelayMs, unit(ctx));
        return ctx.transition(tx, inv, "queued", { runAt: ctx.o.clock.now() + delay, lastError: why }, { fence, events });
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

/**
 * Before step `i` (after step `i - 1` succeeded in this attempt): the previous step's success
 * reaches its breaker, then step `i`'s breaker is checked; an open one vetoes the step and the
 * invocation is re-queued at it (`planSettlement`). A breaker the store cannot answer for lets
 * the step go (the breaker only ever refuses calls: failing open keeps every other rule).
 */
async function beforeStep(ctx: HostContext, breakers: AttemptBreakers, action: ActionDefinition<unknown>, i: number): Promise<StepVeto | undefined> {
  await breakers.outcome(action.steps[i - 1]!, "success");
  const step = action.steps[i]!;
  let gate: BreakerGate;
  try {
    gate = await breakers.check(step);
  } catch (e) {
    // Fail closed, like the check before the first step: a breaker the store cannot answer for is
    // treated as open for one retry delay, so a failing provider is never called on a read error
    // (docs/host.md, Circuit breakers). Step i never starts; the next claim resumes at it.
    ctx.log.warn({ connector: step.connector, operation: step.operation, err: errorMessage(e) }, "circuit breaker unreadable; the step waits for the next claim");
    const delay = backoffDelay(1, ctx.r.retry.baseDelayMs, ctx.r.retry.maxDelayMs, unit(ctx));
    return { reasonCode: "CIRCUIT_OPEN", reason: `circuit breaker for ${step.connector}.${step.operation} could not be read (store error, logged); step ${step.name} not started`, retryAt: ctx.o.clock.now() + delay };
  }
  return gate.kind === "refuse" ? { reasonCode: "CIRCUIT_OPEN", reason: circuitReason(step, gate), retryAt: gate.until } : undefined;
}

/** The host's part of a settlement, planned for the boundary's one settle transition. */
interface HostSettlement extends Omit<SettlementPlan, "within"> {
  /** The invocation as the settlement leaves it. */
  next: Invocation;
  /** Runs in the same transaction after the writes and returns the final invocation (handoff only). */
  within?: (tx: StoreTx) => Promise<Invocation>;
  /** What the step's breaker records once the settlement committed. */
  breaker?: BreakerOutcome;
}

/** The invocation moves with the step outcome: planned here, written in the boundary's settle transition. */
function planSettlement(ctx: HostContext, inv: Invocation, action: ActionDefinition<unknown>, info: SettlementInfo, events: HostEvent[]): HostSettlement {
  const { o, r } = ctx;
  const a = info.attempt;
  const step = action.steps[info.stepIndex]!;
  const now = o.clock.now();
  const move = (to: InvocationStatus, patch: Partial<Invocation>, data?: Json, breaker?: BreakerOutcome): HostSettlement => {
    const p = ctx.plan(inv, to, patch, { events, ...(data !== undefined ? { data } : {}) });
    return { next: p.next, invocation: p.next, entries: [p.entry], ...(breaker ? { breaker } : {}) };
  };
  if (info.veto) {
    // The next step's breaker vetoed it: step `stepIndex` succeeded (its breaker heard so in
    // `beforeStep`), the next never started; a new claim, a new decision, resumes there.
    return move("queued", { runAt: info.veto.retryAt ?? now, nextStep: info.stepIndex + 1, lastError: info.veto.reason });
  }
  switch (a.state) {
    case "SUCCEEDED":
      return move("succeeded", { result: a.output ?? null, nextStep: action.steps.length }, undefined, "success");
    case "HANDED_OFF": {
      const row = info.step;
      // A new hand-off has its own deadline and is not overdue yet: an earlier hand-off of this
      // invocation that went overdue (and was completed late) must not keep the sweep from this one.
      const patch: Partial<Invocation> = { nextStep: info.stepIndex, overdueAt: undefined };
      if (row.deadlineAt !== undefined) patch.deadlineAt = row.deadlineAt;
      const parked = move("parked", patch, { externalRef: a.externalRef ?? null }, "success");
      // A handoff's settlement takes the completion lock first, like `complete` does: an early
      // completion racing the parking write is then either seen here or sees the parked step.
      const locks = row.externalRef !== undefined ? [completionLockKey(step.connector, row.externalRef)] : [];
      return { ...parked, locks, within: (tx) => applyEarlyCompletions(ctx, tx, parked.next, row, events) };
    }
    case "TIMED_OUT":
    case "UNKNOWN": {
      const p = planReconciliation(ctx, inv, info.stepIndex, a.reasonCode ?? "OUTCOME_AMBIGUOUS", a.reason ?? "outcome unknown", a.externalRef, events);
      return { next: p.next, invocation: p.next, reconciliation: p.rec, entries: p.entries, ...(a.state === "TIMED_OUT" ? { breaker: "failure" as const } : {}) };
    }
    case "FAILED": {
      const transient = a.reasonCode === "CONNECTOR_TRANSIENT_FAILURE";
      // A permanent failure is an answer: the provider is up.
      const heard: BreakerOutcome = transient ? "failure" : "success";
      const policy = { ...r.retry, ...action.retry };
      if (transient && action.idempotent && inv.retryCount + 1 < policy.maxAttempts) {
        const retryCount = inv.retryCount + 1;
        const delay = backoffDelay(retryCount, policy.baseDelayMs, policy.maxDelayMs, unit(ctx));
        return move("queued", { runAt: now + delay, retryCount, nextStep: info.stepIndex, lastError: a.reason ?? "transient failure" }, undefined, heard);
      }
      const compensable = action.steps.slice(0, info.stepIndex).some((s) => s.compensate);
      if (compensable) {
        // Compensations run next, under this lease, then the invocation ends failed.
        return move("running", { compensating: true, nextStep: info.stepIndex, lastError: a.reason ?? a.reasonCode ?? "failed" }, undefined, heard);
      }
      return move("failed", { lastError: `${a.reasonCode ?? "FAILED"}: ${a.reason ?? ""}`, nextStep: info.stepIndex }, undefined, heard);
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
    if (existing.status === "approved") return ctx.transition(tx, inv, "queued", { runAt: now }, { fence, events });
  }
  if (existing && (existing.status === "denied" || existing.status === "expired" || existing.status === "revoked")) {
    return ctx.transition(tx, inv, "denied", { reasons: [`approval ${existing.approvalId} ${existing.status}`] }, { fence, events });
  }
  // The invocation carries the policy's reasons for asking (what `writ ls` and the console show).
  const why = asked.reasons.length > 0 ? asked.reasons : [`approval required by policy ${asked.policyRef}`];
  if (existing && existing.status === "pending") return ctx.transition(tx, inv, "awaiting_approval", { reasons: why }, { fence, events });
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
  return ctx.transition(tx, inv, "awaiting_approval", { approvalId: approval.approvalId, reasons: why }, { fence, events });
}
