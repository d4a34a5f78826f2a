/**
 * External completion of long-running operations (docs/completions.md): a step that replied `accepted` is
 * `handed_off` and its invocation `parked`; a signed completion later settles it. Identical repeats
 * are absorbed; contradictions keep the first, record the second and go to a human; completions
 * that arrive before parking are kept and applied at parking; overdue handoffs are swept to
 * reconciliation and a late completion still settles them, marked late.
 */
import { parseJsonStrict } from "../core/canonical.js";
import { digestOf } from "../core/digest.js";
import { WritError, errorMessage } from "../core/errors.js";
import { appendJournal, draft } from "../core/journal.js";
import { redactFor, type ErrorTextContext } from "../core/redact.js";
import { innerStore } from "../core/sealing.js";
import { readCommitted, type StoreTx } from "../core/store.js";
import { COMPLETION_OUTCOMES, type CompletionDisposition, type CompletionRecord, type Invocation, type Json, type Scope, type StepCheckpoint } from "../core/types.js";
import { verifyWebhook, webhookSecretBytes, type WebhookHeaders } from "../core/webhook.js";
import { retryStale, scopeOf, type HostContext } from "./context.js";
import type { HostEvent } from "./events.js";
import { toReconciliation } from "./reconcile.js";

export interface CompletionInput {
  connector: string;
  externalRef: string;
  outcome: "success" | "failure";
  result?: Json;
  error?: string;
  evidence?: Json;
  /** The delivery id (`webhook-id`): a repeat is refused with WEBHOOK_REPLAYED and changes nothing. */
  deliveryId?: string;
}

export interface CompletionAnswer {
  disposition: CompletionDisposition;
  invocationId?: string;
  status?: Invocation["status"];
}

/** Connector secrets per scope: the secret that verifies a delivery names its scope. */
export interface CompletionSecret {
  tenantId: string;
  spaceId: string;
  connector: string;
  /** `whsec_…` secrets; several during a rotation. */
  secrets: string[];
}

const REF_MAX = 512;

export function completionLockKey(connector: string, externalRef: string): string {
  return `completion:${connector}:${externalRef}`;
}

function checkInput(i: CompletionInput): void {
  if (typeof i !== "object" || i === null) throw new WritError("INVALID_ARGUMENT", "a completion must be an object");
  if (typeof i.connector !== "string" || i.connector.length === 0 || i.connector.length > 128) throw new WritError("INVALID_ARGUMENT", "connector must be a non-empty string");
  if (typeof i.externalRef !== "string" || i.externalRef.length === 0 || i.externalRef.length > REF_MAX) throw new WritError("INVALID_ARGUMENT", "externalRef must be a non-empty string");
  if (!(COMPLETION_OUTCOMES as readonly string[]).includes(i.outcome)) throw new WritError("INVALID_ARGUMENT", "outcome must be success or failure");
  if (i.error !== undefined && (typeof i.error !== "string" || i.error.length > 4000)) throw new WritError("INVALID_ARGUMENT", "error must be a string");
}

/** Moves a step's completion into the step, the idempotency record and the invocation. */
async function apply(ctx: HostContext, tx: StoreTx, inv: Invocation, step: StepCheckpoint, c: CompletionRecord, late: boolean, events: HostEvent[]): Promise<Invocation> {
  const { o } = ctx;
  const scope = scopeOf(inv);
  const now = o.clock.now();
  const action = ctx.actions.get(inv.action);
  if (!action) throw new WritError("INVALID_STATE", `action ${inv.action} is not defined on this host`);
  const success = c.outcome === "success";
  const settled: StepCheckpoint = { ...step, status: success ? "succeeded" : "failed", endedAt: now };
  if (success && c.result !== undefined) settled.output = c.result;
  if (!success) {
    settled.reasonCode = "COMPLETION_FAILURE";
    settled.reason = ctx.o.redactErrorText ? safe(ctx, c.error ?? "the outside operation failed", { source: "completion", action: inv.action, invocationId: inv.invocationId, stepName: step.stepName, connector: c.connector }) : (c.error ?? "the outside operation failed");
  }
  await tx.putStep(scope, settled);
  const last = step.stepIndex >= action.steps.length - 1;
  const idem = await tx.getIdempotency(scope, inv.action, inv.idempotencyKey);
  if (idem && (last || !success)) {
    await tx.putIdempotency(scope, { ...idem, state: success ? "succeeded" : "failed", ...(success ? { resultAttemptId: step.attemptId } : {}), updatedAt: now });
  }
  if (late) {
    for (const rec of await tx.listReconciliations(scope, { invocationId: inv.invocationId, status: "open" })) {
      await tx.updateReconciliation(scope, {
        ...rec,
        status: "resolved",
        resolution: { outcome: success ? "succeeded" : "failed", note: "settled by a late completion", by: { type: "service", id: `connector:${c.connector}` }, at: now, ...(c.externalRef ? { externalRef: c.externalRef } : {}) },
        updatedAt: now,
      });
    }
  }
  const detail = { completionId: c.completionId, externalRef: c.externalRef, late } as Json;
  if (success && last) {
    const outputs: { [k: string]: Json } = {};
    for (const s of await tx.getSteps(scope, inv.invocationId)) if (s.status === "succeeded") outputs[s.stepName] = s.output ?? null;
    outputs[step.stepName] = settled.output ?? null;
    const result = (redactFor(action, { outputs }, "outputs") as { outputs: Json }).outputs;
    return ctx.transition(tx, inv, "succeeded", { result, nextStep: action.steps.length, deadlineAt: undefined }, { events, data: detail });
  }
  if (success) return ctx.transition(tx, inv, "queued", { nextStep: step.stepIndex + 1, runAt: now, deadlineAt: undefined }, { events, data: detail });
  const compensable = action.steps.slice(0, step.stepIndex).some((s) => s.compensate);
  if (compensable) return ctx.transition(tx, inv, "queued", { compensating: true, nextStep: step.stepIndex, runAt: now, deadlineAt: undefined }, { events, data: detail });
  return ctx.transition(tx, inv, "failed", { lastError: `COMPLETION_FAILURE: ${settled.reason ?? ""}`, deadlineAt: undefined }, { events, data: detail });
}

function safe(ctx: HostContext, t: string, context: ErrorTextContext): string {
  try {
    return ctx.o.redactErrorText!(t, context);
  } catch {
    return "[error text withheld]";
  }
}

function redactedFor(ctx: HostContext, inv: Invocation | null, step: StepCheckpoint | null, c: CompletionRecord): CompletionRecord {
  const action = inv ? ctx.actions.get(inv.action) : undefined;
  const out = { ...c };
  if ((action?.sensitive || action?.redact) && step && c.result !== undefined) {
    out.result = ((redactFor(action, { outputs: { [step.stepName]: c.result } }, "outputs") as { outputs: { [k: string]: Json } }).outputs[step.stepName] ?? null);
  }
  if (c.error !== undefined && ctx.o.redactErrorText) out.error = safe(ctx, c.error, { source: "completion", action: inv?.action ?? "", ...(inv ? { invocationId: inv.invocationId } : {}), ...(step ? { stepName: step.stepName } : {}), connector: c.connector });
  return out;
}

type CompletionEntry = "completion.applied" | "completion.early" | "completion.contradicted" | "completion.evidence" | "completion.expired";

function journalCompletion(ctx: HostContext, tx: StoreTx, scope: Scope, c: CompletionRecord, type: CompletionEntry, extra: { [k: string]: Json } = {}): Promise<unknown> {
  const data: { [k: string]: Json } = { connector: c.connector, externalRef: c.externalRef, outcome: c.outcome, disposition: c.disposition, contentDigest: c.contentDigest, ...extra };
  if (c.result !== undefined) data.result = c.result;
  if (c.error !== undefined) data.error = c.error;
  if (c.evidence !== undefined) data.evidence = c.evidence;
  const refs: { [k: string]: string } = { completionId: c.completionId };
  if (c.invocationId) refs.invocationId = c.invocationId;
  return appendJournal(tx, ctx.o.crypto, scope, [draft(type, [c.connector, c.completionId], c.receivedAt, refs, data)]);
}

/** Applies a completion in `scope`. Throws COMPLETION_UNKNOWN_REFERENCE when nothing waits for it. */
export async function complete(ctx: HostContext, scope: Scope, input: CompletionInput): Promise<CompletionAnswer> {
  checkInput(input);
  const { o } = ctx;
  let events: HostEvent[] = [];
  const answer = await retryStale(() => {
    events = [];
    return o.store.transact((tx) => completeIn(ctx, tx, scope, input, events));
  });
  for (const e of events) ctx.emit(e);
  return answer;
}

async function completeIn(ctx: HostContext, tx: StoreTx, scope: Scope, input: CompletionInput, events: HostEvent[]): Promise<CompletionAnswer> {
  const { o } = ctx;
  const now = o.clock.now();
  // Lock order (docs/stores.md): the invocation row of the step this reference names, then the
  // completion key, then the journal. The step is looked up again under the locks; if it
  // appeared or moved meanwhile, the transition starts over (STALE, retried by the caller).
  const seen = await tx.findStepByExternalRef(scope, input.connector, input.externalRef);
  if (seen) await tx.getInvocation(scope, seen.invocationId, { forUpdate: true });
  await tx.lock(scope, [completionLockKey(input.connector, input.externalRef)]);
  await tx.lock(scope, ["journal"]);
  if (input.deliveryId !== undefined && !(await tx.rememberDelivery(scope, input.connector, input.deliveryId, now))) {
    throw new WritError("WEBHOOK_REPLAYED", `delivery ${input.deliveryId} was already received`);
  }
  let contentDigest: string;
  try {
    contentDigest = digestOf(o.crypto, { outcome: input.outcome, result: input.result ?? null, error: input.error ?? null, evidence: input.evidence ?? null });
  } catch (e) {
    throw new WritError("INVALID_ARGUMENT", `completion is not plain JSON: ${errorMessage(e)}`);
  }
  const base: CompletionRecord = {
    ...scope,
    completionId: input.deliveryId ?? ctx.newId("cmp_"),
    connector: input.connector,
    externalRef: input.externalRef,
    outcome: input.outcome,
    contentDigest,
    disposition: "applied",
    receivedAt: now,
  };
  if (input.result !== undefined) base.result = input.result;
  if (input.error !== undefined) base.error = input.error;
  if (input.evidence !== undefined) base.evidence = input.evidence;

  const step = await tx.findStepByExternalRef(scope, input.connector, input.externalRef);
  if (step && step.invocationId !== seen?.invocationId) throw new WritError("STALE", `operation ${input.externalRef} was handed off while this completion was applied`);
  const inv = step ? await tx.getInvocation(scope, step.invocationId) : null;
  const prior = await tx.listCompletions(scope, input.connector, input.externalRef);
  // An expired early completion no longer stands for the reference (docs/completions.md, Retention).
  const first = prior.find((c) => c.disposition !== "contradictory" && c.disposition !== "expired");
  if (first) {
    if (first.contentDigest === contentDigest) return { disposition: "duplicate", ...(first.invocationId ? { invocationId: first.invocationId } : {}) };
    const rec: CompletionRecord = redactedFor(ctx, inv, step, { ...base, disposition: "contradictory", ...(inv ? { invocationId: inv.invocationId, stepIndex: step!.stepIndex } : {}) });
    await tx.insertCompletion(scope, rec);
    await journalCompletion(ctx, tx, scope, rec, "completion.contradicted");
    events.push({ type: "ExternalOperationContradicted", scope, invocationId: inv?.invocationId ?? "", at: now, data: { connector: rec.connector, externalRef: rec.externalRef, first: first.completionId, second: rec.completionId } });
    // An ended invocation keeps its status, whether the first completion ended it or came after the
    // end (docs/completions.md, After the end): Writ does not reopen it on its own.
    if (inv && inv.status !== "reconciliation_required" && !ENDED.has(inv.status)) {
      const why = `contradictory completions for ${input.connector} ${input.externalRef}: kept ${first.completionId} (${first.outcome}), received ${rec.completionId} (${rec.outcome})`;
      const next = await toReconciliation(ctx, tx, inv, undefined, step!.stepIndex, "COMPLETION_CONTRADICTED", why, input.externalRef, events);
      return { disposition: "contradictory", invocationId: inv.invocationId, status: next.status };
    }
    return { disposition: "contradictory", ...(inv ? { invocationId: inv.invocationId, status: inv.status } : {}) };
  }
  if (!step || !inv) {
    // Early: a call to this connector is in flight in this scope; keep the completion for the parking.
    if (await inFlightCall(tx, scope, input.connector)) {
      // The step it belongs to is not known yet, so neither are its sensitive pointers: the
      // journal gets the content digest without the result (docs/security.md).
      const { result: _unknownSensitivity, ...rec } = redactedFor(ctx, null, null, { ...base, disposition: "early" });
      await tx.insertCompletion(scope, { ...base, disposition: "early" });
      await journalCompletion(ctx, tx, scope, rec, "completion.early");
      return { disposition: "early" };
    }
    throw new WritError("COMPLETION_UNKNOWN_REFERENCE", `no operation ${input.externalRef} of ${input.connector} is waiting in this scope; retry later if it was just started`);
  }
  if (ENDED.has(inv.status)) return asEvidence(ctx, tx, inv, step, base, events);
  const late = inv.status === "reconciliation_required" && inv.overdueAt !== undefined;
  if (step.status !== "handed_off" || (inv.status !== "parked" && !late)) {
    throw new WritError("INVALID_STATE", `operation ${input.externalRef} is no longer waiting for a completion (step ${step.status}, invocation ${inv.status})`);
  }
  const rec: CompletionRecord = { ...base, disposition: late ? "late" : "applied", invocationId: inv.invocationId, stepIndex: step.stepIndex };
  await tx.insertCompletion(scope, redactedFor(ctx, inv, step, rec));
  await journalCompletion(ctx, tx, scope, redactedFor(ctx, inv, step, rec), "completion.applied");
  const next = await apply(ctx, tx, inv, step, rec, late, events);
  return { disposition: rec.disposition, invocationId: inv.invocationId, status: next.status };
}

/** Statuses an invocation ends in: a completion for one changes nothing but the record. */
const ENDED: ReadonlySet<Invocation["status"]> = new Set(["succeeded", "failed", "denied", "cancelled"]);

/**
 * A completion for an invocation that already ended (docs/completions.md, After the end): the
 * invocation keeps its status; the completion is recorded as evidence and journaled. When it
 * contradicts what is on record for the step (its settled outcome, or an operator's resolution),
 * it is recorded as contradictory and `ExternalOperationContradicted` is raised for an operator.
 */
async function asEvidence(ctx: HostContext, tx: StoreTx, inv: Invocation, step: StepCheckpoint, base: CompletionRecord, events: HostEvent[]): Promise<CompletionAnswer> {
  const scope = scopeOf(inv);
  const resolved = (await tx.listReconciliations(scope, { invocationId: inv.invocationId, status: "resolved" })).filter((r) => r.stepIndex === step.stepIndex && r.resolution);
  const resolution = resolved[resolved.length - 1]?.resolution;
  const recorded: "success" | "failure" | null =
    step.status === "succeeded" ? "success" : step.status === "failed" ? "failure" : resolution ? (resolution.outcome === "succeeded" ? "success" : "failure") : null;
  const contradicts = recorded !== null && recorded !== base.outcome;
  const rec: CompletionRecord = redactedFor(ctx, inv, step, { ...base, disposition: contradicts ? "contradictory" : "evidence", invocationId: inv.invocationId, stepIndex: step.stepIndex });
  await tx.insertCompletion(scope, rec);
  await journalCompletion(ctx, tx, scope, rec, contradicts ? "completion.contradicted" : "completion.evidence", { invocationStatus: inv.status, recorded, ...(resolution ? { resolvedBy: { ...resolution.by } } : {}) });
  if (contradicts) {
    events.push({
      type: "ExternalOperationContradicted",
      scope,
      invocationId: inv.invocationId,
      at: base.receivedAt,
      status: inv.status,
      data: { connector: rec.connector, externalRef: rec.externalRef, received: rec.completionId, outcome: rec.outcome, recorded, ...(resolution ? { resolvedBy: { ...resolution.by } } : {}) },
    });
  }
  return { disposition: rec.disposition, invocationId: inv.invocationId, status: inv.status };
}

async function inFlightCall(tx: StoreTx, scope: Scope, connector: string): Promise<boolean> {
  for (const inv of await tx.listInvocations(scope, { status: "running", limit: 1000 })) {
    for (const s of await tx.getSteps(scope, inv.invocationId)) if (s.status === "started" && s.connector === connector) return true;
  }
  return false;
}

/**
 * At parking (inside the settlement transaction): an early completion for this handoff is applied
 * now; if early ones contradict each other, the invocation goes to reconciliation instead.
 */
export async function applyEarlyCompletions(ctx: HostContext, tx: StoreTx, parked: Invocation, step: StepCheckpoint, events: HostEvent[]): Promise<Invocation> {
  if (!step.connector || !step.externalRef) return parked;
  const scope = scopeOf(parked);
  const early = (await tx.listCompletions(scope, step.connector, step.externalRef)).filter((c) => c.disposition === "early");
  if (early.length === 0) return parked;
  const first = early[0]!;
  if (early.some((c) => c.contentDigest !== first.contentDigest)) {
    for (const c of early) await tx.updateCompletion(scope, { ...c, invocationId: parked.invocationId, stepIndex: step.stepIndex, disposition: c === first ? "applied" : "contradictory" });
    return toReconciliation(ctx, tx, parked, undefined, step.stepIndex, "COMPLETION_CONTRADICTED", `contradictory early completions for ${step.connector} ${step.externalRef}`, step.externalRef, events);
  }
  const now = ctx.o.clock.now();
  await tx.updateCompletion(scope, { ...first, disposition: "applied", invocationId: parked.invocationId, stepIndex: step.stepIndex, appliedAt: now });
  return apply(ctx, tx, parked, step, first, false, events);
}

/** Sweep: parked invocations past their completion deadline go to reconciliation (overdueAt set). */
export async function sweepOverdue(ctx: HostContext, limit = 100): Promise<number> {
  const { o } = ctx;
  // Beneath the sealing layer: the move reads no sealed value (params and outputs are written back
  // as stored), so an invocation this process cannot open does not fail the sweep for all behind it.
  const store = innerStore(o.store);
  const due = await store.transact((tx) => tx.listOverdueParked(o.clock.now(), limit));
  let n = 0;
  for (const d of due) {
    let events: HostEvent[] = [];
    const moved = await retryStale(() => {
      events = [];
      return store.transact(async (tx) => {
      const scope = scopeOf(d);
      const inv = await tx.getInvocation(scope, d.invocationId, { forUpdate: true });
      const now = o.clock.now();
      if (!inv || inv.status !== "parked" || inv.deadlineAt === undefined || inv.deadlineAt > now || inv.overdueAt !== undefined) return false;
      const steps = await tx.getSteps(scope, inv.invocationId);
      const handoff = steps.find((s) => s.status === "handed_off");
      const why = `no completion for ${handoff?.connector ?? "the connector"} ${handoff?.externalRef ?? ""} by its deadline`;
      await toReconciliation(ctx, tx, inv, undefined, handoff?.stepIndex ?? inv.nextStep, "COMPLETION_OVERDUE", why, handoff?.externalRef, events, { overdueAt: now });
      return true;
      });
    });
    for (const e of events) ctx.emit(e);
    if (moved) n++;
  }
  return n;
}

/**
 * Sweep: early completions whose reference never matched within `earlyCompletionRetentionMs` are
 * expired (disposition `expired`, `completion.expired` journaled), each under its completion lock,
 * re-read so one applied or expired meanwhile is left alone (docs/completions.md, Retention).
 */
export async function sweepEarlyCompletions(ctx: HostContext, limit = 100): Promise<number> {
  const { o } = ctx;
  const before = o.clock.now() - ctx.r.earlyCompletionRetentionMs;
  if (before <= 0) return 0;
  // Beneath the sealing layer: an expiry drops the result it never opens (the record keeps it as
  // stored), so one sealed under a key this process does not hold does not stop the sweep.
  const store = innerStore(o.store);
  const due = await readCommitted(store, (tx) => tx.listEarlyCompletions(before, limit));
  let n = 0;
  for (const d of due) {
    const scope = scopeOf(d);
    const expired = await retryStale(() =>
      store.transact(async (tx) => {
        await tx.lock(scope, [completionLockKey(d.connector, d.externalRef)]);
        const cur = (await tx.listCompletions(scope, d.connector, d.externalRef)).find((c) => c.completionId === d.completionId);
        if (!cur || cur.disposition !== "early" || cur.receivedAt >= before) return false;
        const now = o.clock.now();
        const next: CompletionRecord = { ...cur, disposition: "expired", expiredAt: now };
        await tx.updateCompletion(scope, next);
        // Like at arrival, the journal gets the content digest, not the result (its sensitivity is unknown).
        const { result: _unknownSensitivity, ...entry } = redactedFor(ctx, null, null, next);
        await journalCompletion(ctx, tx, scope, { ...entry, receivedAt: now }, "completion.expired", { receivedAt: cur.receivedAt, retentionMs: ctx.r.earlyCompletionRetentionMs });
        return true;
      }),
    );
    if (expired) n++;
  }
  return n;
}

/** Early completions of `scope` still waiting for their reference, oldest first, without results (their sensitivity is unknown). */
export async function listEarlyCompletions(ctx: HostContext, scope: Scope, opts: { limit?: number } = {}): Promise<CompletionRecord[]> {
  const limit = opts.limit ?? 100;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1000) throw new WritError("INVALID_ARGUMENT", "limit must be an integer from 1 to 1000");
  // Results are withheld: read beneath the sealing layer, nothing to open.
  const rows = await readCommitted(innerStore(ctx.o.store), (tx) => tx.listEarlyCompletions(Number.MAX_SAFE_INTEGER, limit, scope));
  return rows.map((c) => {
    const { result: _withheld, ...out } = redactedFor(ctx, null, null, c);
    return out;
  });
}

/**
 * Verifies a signed delivery (Standard Webhooks) against the connector's secrets of every scope;
 * the secret that verifies names the scope. Then applies it. Nothing changes on any refusal.
 */
export async function receiveCompletion(ctx: HostContext, secrets: readonly CompletionSecret[], connector: string, headers: WebhookHeaders, rawBody: string): Promise<CompletionAnswer & { scope: Scope }> {
  const candidates = secrets.filter((s) => s.connector === connector);
  const keys: Uint8Array[] = [];
  const owner: Scope[] = [];
  for (const c of candidates) {
    for (const s of c.secrets) {
      keys.push(webhookSecretBytes(s));
      owner.push({ tenantId: c.tenantId, spaceId: c.spaceId });
    }
  }
  // A connector without a secret is checked against a fresh random key: the same header, timestamp
  // and signature checks run and the same refusal comes back, so the answer does not reveal
  // whether the connector has a secret.
  if (keys.length === 0) keys.push(ctx.o.random.bytes(32));
  const idx = verifyWebhook(ctx.o.crypto, keys, headers, rawBody, ctx.o.clock.now());
  const scope = owner[idx];
  if (!scope) throw new WritError("WEBHOOK_SIGNATURE_INVALID", "the webhook signature does not verify");
  let body: unknown;
  try {
    body = parseJsonStrict(rawBody, 32);
  } catch (e) {
    throw new WritError("INVALID_ARGUMENT", `completion body is not valid JSON: ${errorMessage(e)}`);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new WritError("INVALID_ARGUMENT", "completion body must be a JSON object");
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) if (!["externalRef", "outcome", "result", "error", "evidence"].includes(k)) throw new WritError("INVALID_ARGUMENT", `completion body has an unknown field ${k}`);
  const input: CompletionInput = { connector, externalRef: b.externalRef as string, outcome: b.outcome as CompletionInput["outcome"], deliveryId: headers.id! };
  if (b.result !== undefined) input.result = b.result as Json;
  if (b.error !== undefined) input.error = b.error as string;
  if (b.evidence !== undefined) input.evidence = b.evidence as Json;
  return { ...(await complete(ctx, scope, input)), scope };
}
