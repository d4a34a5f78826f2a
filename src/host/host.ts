/**
 * The durable host (docs/host.md): admission, queries, cancellation, reconciliation by operators, and
 * workers. Every state change is one transaction with its journal entries.
 */
import { admitRequest } from "../core/admission.js";
import { createBoundaryCore } from "../core/boundary.js";
import { WritError } from "../core/errors.js";
import { appendJournal, unsealedEntries } from "../core/journal.js";
import { transitionsOf, type AdmitClaimedResult, type AdmitInput } from "../core/transitions.js";
import { innerStore } from "../core/sealing.js";
import { sequencerFor } from "../core/sequencer.js";
import { createKeyring } from "../core/keyring.js";
import { redactFor } from "../core/redact.js";
import { readCommitted, type InvocationFilter, type ListOptions } from "../core/store.js";
import type { ActionDefinition } from "../core/action.js";
import type { ActionRequest, Actor, Authority, CompletionRecord, IdempotencyRecord, Invocation, Json, ReconciliationRecord, ReconciliationStatus, Scope, Submitter } from "../core/types.js";
import { checkActor } from "../core/validate.js";
import { createBreakers, type BreakerView } from "./breaker.js";
import { compensationActions } from "./compensation.js";
import { makeContext, offerHandoff, retryStale, scopeOf, type HostContext } from "./context.js";
import type { HostEvent } from "./events.js";
import { resolveHostOptions, silentLogger, type HostOptions } from "./options.js";
import { outageLog } from "./outage.js";
import { companions, createWorker, type Worker, type WorkerOptions } from "./worker.js";
import { createRetention, type RetentionApi } from "./retention.js";
import { invocationReads, readableStore } from "./reads.js";
import { closeOpenApproval, createApprovals, type Approvals } from "./approvals.js";
import { checkResolveInput, resolvedStep, resolveKey, type KeyRef, type KeyResolution, type ResolveInput } from "./key-resolution.js";
import { authorityCovers, createAuthorities, type Authorities } from "./authorities.js";
import { complete, completionLockKey, listEarlyCompletions, receiveCompletion, sweepEarlyCompletions, sweepOverdue, type CompletionAnswer, type CompletionInput } from "./completions.js";
import type { PolicyResult } from "../core/policy.js";
import { webhookSecretBytes, type WebhookHeaders } from "../core/webhook.js";
import { createDispatcher } from "./notify-dispatcher.js";
import { resolveArchiveOptions } from "../core/archive-options.js";
import { archiveCompanion, createHostArchive, type HostArchive } from "./archiver.js";
import { resolveNotificationOptions } from "./notify-options.js";
import { notificationsApi, type NotificationsApi } from "./notify-subscriptions.js";

export interface SubmitResult {
  invocation: Invocation;
  /** True when an invocation with the same key and digest already existed (nothing new stored). */
  replayed: boolean;
}

export type { KeyRef, KeyResolution, ResolveInput } from "./key-resolution.js";

/** What a dry run tells: the policy's answer and the authority's standing, nothing written. */
export interface Preview {
  result: PolicyResult["result"];
  reasons: string[];
  policyRef: string;
  requestDigest: string;
  authority: { authorityRef: string; status: Authority["status"] | "unknown" | "expired"; coversAction: boolean };
  approval?: PolicyResult["approval"];
}

/** Options of one submit. */
export interface SubmitOptions {
  /**
   * Who submits, as authenticated (an API key's principal and id, a local operator). Recorded on
   * the invocation, its `invocation.submitted` entry and its approval (four eyes: the submitter
   * never approves or denies it). @defaultValue none recorded (library callers)
   */
  submittedBy?: Submitter;
}

export interface Host {
  /** Validates and admits a request; idempotent by (scope, action, idempotencyKey). */
  submit(request: unknown, options?: SubmitOptions): Promise<SubmitResult>;
  /** The invocation (sensitive values redacted), or null. */
  get(scope: Scope, invocationId: string): Promise<Invocation | null>;
  list(scope: Scope, filter?: InvocationFilter): Promise<Invocation[]>;
  /**
   * Cancels an invocation no step of which has started (queued, awaiting approval, or running while
   * its worker still prepares it); STEPS_STARTED once a step started (docs/host.md, Cancellation).
   */
  cancel(scope: Scope, invocationId: string, by: Actor): Promise<Invocation>;
  reconcile: {
    list(scope: Scope, opts?: ListOptions & { status?: ReconciliationStatus }): Promise<ReconciliationRecord[]>;
    /** An operator settles an unknown outcome; journaled with the operator's identity. */
    resolve(scope: Scope, reconciliationId: string, input: ResolveInput): Promise<Invocation>;
    /**
     * An operator settles a key a bare boundary execution left unknown (an interrupted execution,
     * a timeout, an ambiguous reply); journaled with the operator's identity (docs/boundary.md).
     */
    resolveKey(scope: Scope, key: KeyRef, input: ResolveInput): Promise<KeyResolution>;
    /**
     * The keys bare boundary executions left with an unknown outcome, waiting for `resolveKey`
     * (oldest first). An invocation's own unknown outcome is in `list` as a reconciliation.
     */
    unknownKeys(scope: Scope, opts?: ListOptions): Promise<IdempotencyRecord[]>;
  };
  worker(options?: WorkerOptions): Worker;
  approvals: Approvals;
  authorities: Authorities;
  /** Applies a completion of a long-running operation in `scope` (docs/completions.md). */
  complete(scope: Scope, input: CompletionInput): Promise<CompletionAnswer>;
  /** Verifies a signed completion delivery (Standard Webhooks) and applies it in the secret's scope. */
  receiveCompletion(connector: string, headers: WebhookHeaders, rawBody: string): Promise<CompletionAnswer & { scope: Scope }>;
  /**
   * Early completions of `scope` whose reference has not matched a parked step (yet), oldest
   * first, results withheld; `limit` 1-1000 (default 100). docs/completions.md, Early completions.
   */
  earlyCompletions(scope: Scope, opts?: { limit?: number }): Promise<CompletionRecord[]>;
  /** Runs the sweeps once: overdue handoffs to reconciliation, expired approvals to denied, early completions past retention expired. */
  sweep(): Promise<{ overdue: number; approvalsExpired: number; earlyExpired: number }>;
  /** Dry run: validates and evaluates a request without signing, consuming or executing anything. */
  preview(request: unknown): Promise<Preview>;
  /** The scope's circuit breakers as the store holds them (shared by every worker; docs/host.md). */
  breakers(scope: Scope): Promise<BreakerView[]>;
  /**
   * Notification subscriptions and their deliveries (docs/notifications.md). `dispatchOnce` serves
   * the subscriptions one claim gets (tests and scripts); a started worker runs the dispatcher.
   */
  notifications: NotificationsApi & { dispatchOnce(): Promise<number> };
  /**
   * Retention (docs/retention.md): `status()` says what a prune would delete and hold, `prune()`
   * runs one (a started worker runs it in the background every `retention.everyMs`).
   */
  retention: RetentionApi;
  /**
   * Journal archives (docs/archives.md): `runOnce` archives what is closed and prunes what is
   * archived; a started worker runs it every `archive.everyMs` when a target is configured.
   */
  archive: HostArchive;
  /** The context shared by the host's parts (for the policy/approval and completion modules). */
  readonly context: HostContext;
}

/**
 * Values an action marks `sensitive` are sealed at rest only with a data key: without one, and
 * without an explicit `allowCleartextSensitive`, the host refuses to start rather than store them
 * in clear silently (docs/security.md, Data at rest).
 */
function refuseCleartextSensitive(options: HostOptions): void {
  if (options.allowCleartextSensitive !== undefined && typeof options.allowCleartextSensitive !== "boolean") {
    throw new WritError("INVALID_OPTION", "createHost: allowCleartextSensitive must be a boolean");
  }
  if (options.dataKey !== undefined || options.allowCleartextSensitive === true) return;
  const marked = (options.actions as ReadonlyArray<ActionDefinition<unknown>>).find((a) => (a.sensitive ?? []).length > 0);
  if (!marked) return;
  throw new WritError(
    "INVALID_OPTION",
    `createHost: action ${marked.id} marks ${marked.sensitive!.join(", ")} sensitive, but no dataKey is given, so those values would be stored in clear; pass a dataKey (a DataKeyPort, e.g. localDataKey from "writ/node") or allowCleartextSensitive: true`,
  );
}

/** Creates a host. Ports (clock, crypto, random) are required here; `createHost` in "writ" fills Node defaults. */
export function createHostCore(options: HostOptions): Host {
  const r = resolveHostOptions(options);
  refuseCleartextSensitive(options);
  // With a data key, every read and write of the host and its boundary goes through the sealing store.
  const o: HostOptions = options.dataKey ? { ...options, store: readableStore(options.store, options.dataKey, options.actions as ReadonlyArray<ActionDefinition<unknown>>) } : options;
  const keyring = o.keyring ?? createKeyring([{ kid: o.signingKey.kid, publicJwk: o.signingKey.publicJwk }]);
  if (!keyring.get(o.signingKey.kid)) throw new WritError("INVALID_OPTION", `createHost: the keyring does not hold the signing key ${o.signingKey.kid}`);
  const actions = o.actions as ReadonlyArray<ActionDefinition<unknown>>;
  const log = o.logger ?? silentLogger;
  // The journal sequencer of this store (one per store in the process): seals after each commit.
  const sealTrouble = outageLog(log, "journal sealing after a commit (the sequencer retries)", {}, () => o.clock.now());
  sequencerFor(
    o.store,
    o.crypto,
    (e) => sealTrouble.failed(e),
    () => sealTrouble.ok(),
  );
  const boundary = createBoundaryCore({
    store: o.store,
    keyring,
    actions: [...actions, ...compensationActions(actions)],
    connectors: o.connectors,
    standingFromStore: true,
    acceptedPolicyRefs: (scope) => o.policy.acceptedPolicyRefs(scope),
    maxDecisionAgeSeconds: r.maxDecisionAgeSeconds,
    timeoutMs: r.timeoutMs,
    inProgressTimeoutMs: r.inProgressTimeoutMs,
    clock: o.clock,
    crypto: o.crypto,
    random: o.random,
    ...(o.redactErrorText ? { redactErrorText: o.redactErrorText } : {}),
  });
  const ctx = makeContext(o, r, boundary, createBreakers(o.store, o.clock, r.breaker, log), log);
  const reads = invocationReads(o.store, ctx.actions);
  for (const s of o.completionSecrets ?? []) for (const secret of s.secrets) webhookSecretBytes(secret);
  const approvals = createApprovals(ctx);
  const authorities = createAuthorities(ctx);
  const notify = resolveNotificationOptions(o.notifications);
  const notifications = notificationsApi(ctx, notify);
  const dispatcher = () => createDispatcher(ctx, notify);
  const retention = createRetention(ctx);
  const archiveOpts = resolveArchiveOptions(o.archive);
  const archive = createHostArchive(ctx, keyring, archiveOpts);
  const sweep = async (): Promise<{ overdue: number; approvalsExpired: number; earlyExpired: number }> => ({
    overdue: await sweepOverdue(ctx),
    approvalsExpired: await approvals.sweep(),
    earlyExpired: await sweepEarlyCompletions(ctx),
  });

  /** Validation shared by submit and preview: shape, action, version, params schema, digest. */
  async function validate(input: unknown): Promise<{ req: ActionRequest; action: ActionDefinition<unknown>; digest: string }> {
    const a = await admitRequest(o.crypto, input, ctx.actions);
    if (a.ok) return { req: a.req, action: a.action, digest: a.digest };
    if (a.problem === "action") throw new WritError("VALIDATION_FAILED", a.message, { details: { action: a.req.action } });
    if (a.problem === "params") throw new WritError("VALIDATION_FAILED", `invalid params for ${a.req.action}: ${a.issues.join("; ")}`, { details: { issues: a.issues } });
    throw new WritError("VALIDATION_FAILED", a.message);
  }

  function checkSubmitter(v: unknown): Submitter | undefined {
    if (v === undefined) return undefined;
    const bad = (m: string): never => {
      throw new WritError("INVALID_ARGUMENT", `submittedBy: ${m}`);
    };
    if (typeof v !== "object" || v === null) bad("must be { principal, keyId? }");
    const o = v as { principal?: unknown; keyId?: unknown };
    const problems = checkActor(o.principal, "submittedBy.principal");
    if (problems.length > 0) bad(problems.join("; "));
    if (o.keyId !== undefined && (typeof o.keyId !== "string" || !/^[A-Za-z0-9]{1,64}$/.test(o.keyId))) bad("keyId must be 1-64 letters or digits");
    const p = o.principal as Actor;
    return { principal: { type: p.type, id: p.id }, ...(o.keyId !== undefined ? { keyId: o.keyId as string } : {}) };
  }

  async function submit(input: unknown, options: SubmitOptions = {}): Promise<SubmitResult> {
    const submittedBy = checkSubmitter((options as SubmitOptions | undefined)?.submittedBy);
    const { req, action, digest } = await validate(input);
    const scope = scopeOf(req);
    const now = o.clock.now();
    const inv: Invocation = {
      ...scope,
      invocationId: ctx.newId("inv_"),
      action: req.action,
      actionVersion: req.actionVersion,
      idempotencyKey: req.idempotencyKey,
      requestDigest: digest,
      request: req,
      ...(submittedBy ? { submittedBy } : {}),
      status: "queued",
      runAt: now,
      attemptCount: 0,
      retryCount: 0,
      nextStep: 0,
      version: 1,
      createdAt: now,
      updatedAt: now,
    };
    const t = transitionsOf(o.store);
    const admission: AdmitInput = {
      invocation: inv,
      entries: unsealedEntries(scope, [
        {
        id: `invocation.submitted:${inv.invocationId}`,
        type: "invocation.submitted",
        at: now,
        refs: { invocationId: inv.invocationId },
        data: {
          action: req.action,
          actionVersion: req.actionVersion,
          idempotencyKey: req.idempotencyKey,
          requestDigest: digest,
          actor: { type: req.actor.type, id: req.actor.id },
          ...(submittedBy ? { submittedBy: submittedBy as unknown as Json } : {}),
          authorityRef: req.authorityRef,
          params: (redactFor(action, { params: req.params }, "params") as { params: Json }).params,
        },
      },
      ]),
    };
    // An idle worker of this host takes the invocation in the admission's own commit where the
    // store can (docs/host.md, "Hand-off to an idle worker"): no wake-up, no claim of its own.
    const ticket = t.admitClaimed !== undefined ? offerHandoff(ctx) : undefined;
    let admitted: AdmitClaimedResult;
    if (ticket === undefined) admitted = await t.admit(scope, admission);
    else {
      try {
        admitted = await t.admitClaimed!(scope, admission, ticket.claim, ticket.breakers);
      } catch (e) {
        ticket.failed();
        throw e;
      }
    }
    // The ticket closes whatever happens next: what the admission claimed runs (a replay claimed
    // nothing), after its `invocation.submitted` event.
    try {
      if (!admitted.created && admitted.existing.requestDigest !== digest) {
        throw new WritError("IDEMPOTENCY_CONFLICT", `idempotency key ${req.idempotencyKey} was used with another request for ${req.action}`, { details: { invocationId: admitted.existing.invocationId } });
      }
      const result: SubmitResult = admitted.created ? { invocation: inv, replayed: false } : { invocation: admitted.existing, replayed: true };
      if (!result.replayed) ctx.emit({ type: "invocation.submitted", scope, invocationId: result.invocation.invocationId, at: now, status: "queued" });
      return { invocation: ctx.redactInvocation(result.invocation), replayed: result.replayed };
    } finally {
      ticket?.taken(admitted.created ? admitted.claimed : undefined);
    }
  }

  async function cancel(scope: Scope, invocationId: string, by: Actor): Promise<Invocation> {
    const problems = checkActor(by, "by");
    if (problems.length > 0) throw new WritError("INVALID_ARGUMENT", problems.join("; "));
    let events: HostEvent[] = [];
    const inv = await retryStale(() => {
      events = [];
      // Beneath the sealing layer: a cancel needs no value opened, so an invocation holding one
      // this process cannot open can still be cancelled (its values stay as they were sealed).
      return innerStore(o.store).transact(async (tx) => {
      // Locked for the transaction: a claim waits for the cancel (or the cancel sees it running).
      const cur = await tx.getInvocation(scope, invocationId, { forUpdate: true });
      if (!cur) throw new WritError("NOT_FOUND", `no invocation ${invocationId} in this scope`);
      // A running invocation is cancellable while its worker still prepares it (no step row yet):
      // the worker rechecks and stops, and its fenced writes are refused (docs/host.md, Cancellation).
      if (cur.status !== "queued" && cur.status !== "awaiting_approval" && cur.status !== "running") {
        const started = cur.status === "parked" || cur.status === "reconciliation_required";
        throw new WritError(started ? "STEPS_STARTED" : "INVALID_STATE", `invocation ${invocationId} is ${cur.status}: only an invocation none of whose steps has started can be cancelled`, { details: { status: cur.status } });
      }
      const steps = await tx.getSteps(scope, invocationId);
      if (steps.length > 0) throw new WritError("STEPS_STARTED", `invocation ${invocationId} has started steps (the provider may have acted) and cannot be cancelled`, { details: { status: cur.status, steps: steps.length } });
      // Its open approval closes with it: no vote is taken on it afterwards.
      if (cur.status === "awaiting_approval") await closeOpenApproval(ctx, tx, cur, "cancelled", by);
      return ctx.transition(tx, cur, "cancelled", { reasons: [`cancelled by ${by.type}:${by.id}`] }, { events, data: { by: { type: by.type, id: by.id } } });
      });
    });
    for (const e of events) ctx.emit(e);
    return ctx.redactInvocation(inv);
  }

  async function resolve(scope: Scope, reconciliationId: string, input: ResolveInput): Promise<Invocation> {
    checkResolveInput(input);
    let events: HostEvent[] = [];
    const inv = await retryStale(() => {
      events = [];
      return o.store.transact(async (tx) => {
      const rec = await tx.getReconciliation(scope, reconciliationId);
      if (!rec) throw new WritError("NOT_FOUND", `no reconciliation ${reconciliationId} in this scope`);
      if (rec.status !== "open") throw new WritError("INVALID_STATE", `reconciliation ${reconciliationId} is already resolved`);
      // The invocation row first (lock order, docs/stores.md); the reconciliation's own write
      // below is conditional on the revision read above.
      const cur = await tx.getInvocation(scope, rec.invocationId, { forUpdate: true });
      if (!cur) throw new WritError("NOT_FOUND", `invocation ${rec.invocationId} not found`);
      if (cur.status !== "reconciliation_required") throw new WritError("INVALID_STATE", `invocation ${cur.invocationId} is ${cur.status}, not reconciliation_required`);
      const action = ctx.actions.get(cur.action);
      if (!action) throw new WritError("INVALID_STATE", `action ${cur.action} is not defined on this host`);
      const now = o.clock.now();
      const by = { type: input.by.type, id: input.by.id };
      const resolution: NonNullable<ReconciliationRecord["resolution"]> = { outcome: input.outcome, note: input.note, by, at: now };
      if (input.externalRef !== undefined) resolution.externalRef = input.externalRef;
      await tx.updateReconciliation(scope, { ...rec, status: "resolved", resolution, updatedAt: now });
      const steps = await tx.getSteps(scope, cur.invocationId);
      const row = steps.find((s) => s.stepIndex === rec.stepIndex);
      // Completions already received for this reference (kept as early while the step never
      // parked) must agree with the operator; a disagreeing one refuses the resolution.
      const connector = row?.connector ?? action.steps[rec.stepIndex]?.connector;
      const ref = input.externalRef ?? rec.externalRef;
      if (connector && ref) {
        await tx.lock(scope, [completionLockKey(connector, ref)]);
        for (const c of await tx.listCompletions(scope, connector, ref)) {
          if (c.disposition !== "early") continue;
          const agrees = (c.outcome === "success") === (input.outcome === "succeeded");
          if (!agrees) {
            throw new WritError("CONFLICT", `completion ${c.completionId} received for ${ref} reports ${c.outcome}; the resolution says ${input.outcome}`, { details: { completionId: c.completionId } });
          }
          await tx.updateCompletion(scope, { ...c, disposition: "applied", invocationId: cur.invocationId, stepIndex: rec.stepIndex, appliedAt: now });
        }
      }
      if (row && row.status !== "succeeded" && row.status !== "failed") {
        await tx.putStep(scope, resolvedStep(row, input, now));
      }
      const last = rec.stepIndex >= action.steps.length - 1;
      const idem = await tx.getIdempotency(scope, cur.action, cur.idempotencyKey);
      // Only the invocation's own key: one a bare execution holds is resolved as a key (resolveKey).
      if (idem && idem.invocationId === cur.invocationId && (idem.state === "unknown" || idem.state === "in_progress" || idem.state === "handed_off")) {
        // Succeeded on the last step settles the key; otherwise it no longer blocks a resumption.
        const state = input.outcome === "succeeded" && last ? "succeeded" : "failed";
        await tx.putIdempotency(scope, { ...idem, state, ...(state === "succeeded" && row ? { resultAttemptId: row.attemptId } : {}), updatedAt: now });
      }
      await appendJournal(tx, o.crypto, scope, [
        {
          id: `reconciliation.resolved:${reconciliationId}`,
          type: "reconciliation.resolved",
          at: now,
          refs: { invocationId: cur.invocationId, reconciliationId },
          data: { outcome: input.outcome, note: input.note, by, stepIndex: rec.stepIndex, ...(input.externalRef !== undefined ? { externalRef: input.externalRef } : {}) },
        },
      ]);
      const detail = { reconciliationId, by } as Json;
      if (input.outcome === "succeeded") {
        if (last) return ctx.transition(tx, cur, "succeeded", { nextStep: action.steps.length, ...(input.externalRef !== undefined ? { result: { externalRef: input.externalRef } } : {}) }, { events, data: detail });
        // A middle step resolved as succeeded: the remaining steps resume under a new decision. An
        // operator's resolution opens a new recovery budget (docs/host.md, "What counts as an attempt").
        return ctx.transition(tx, cur, "queued", { nextStep: rec.stepIndex + 1, runAt: now, recoveryBase: cur.attemptCount }, { events, data: detail });
      }
      const compensable = action.steps.slice(0, rec.stepIndex).some((s) => s.compensate);
      if (compensable) return ctx.transition(tx, cur, "queued", { compensating: true, nextStep: rec.stepIndex, runAt: now, recoveryBase: cur.attemptCount }, { events, data: detail });
      return ctx.transition(tx, cur, "failed", { lastError: `resolved as failed by ${by.type}:${by.id}: ${input.note}` }, { events, data: detail });
      });
    });
    for (const e of events) ctx.emit(e);
    return ctx.redactInvocation(inv);
  }

  return {
    submit,
    get: (scope, id) => reads.get(scope, id),
    list: (scope, filter) => reads.list(scope, filter),
    cancel,
    reconcile: {
      list: (scope, opts) => readCommitted(o.store, (tx) => tx.listReconciliations(scope, opts)),
      resolve,
      resolveKey: (scope, key, input) => resolveKey(ctx, scope, key, input),
      unknownKeys: (scope, opts) => readCommitted(o.store, (tx) => tx.listUnknownKeys(scope, opts)),
    },
    worker: (wo) => createWorker(ctx, wo, sweep, companions([notify.dispatch ? dispatcher() : undefined, retention.companion(), archiveCompanion(ctx, archiveOpts, archive.runPaced)])),
    approvals,
    authorities,
    complete: (scope, input) => complete(ctx, scope, input),
    receiveCompletion: (connector, headers, body) => receiveCompletion(ctx, o.completionSecrets ?? [], connector, headers, body),
    earlyCompletions: (scope, opts) => listEarlyCompletions(ctx, scope, opts),
    sweep,
    async preview(input) {
      const { req, digest } = await validate(input);
      const scope = scopeOf(req);
      const authority = await readCommitted(o.store, (tx) => tx.getAuthority(scope, req.authorityRef));
      const verdict = await o.policy.evaluate({ request: req, authority, approval: null });
      const now = o.clock.now();
      const status = !authority ? "unknown" : authority.expiresAt !== undefined && authority.expiresAt <= now ? "expired" : authority.status;
      const out: Preview = {
        result: verdict.result,
        reasons: verdict.reasons,
        policyRef: verdict.policyRef,
        requestDigest: digest,
        authority: { authorityRef: req.authorityRef, status, coversAction: authority ? authorityCovers(authority, req.action) : false },
      };
      if (verdict.approval) out.approval = verdict.approval;
      return out;
    },
    breakers: (scope) => ctx.breakers.list(scope),
    notifications: { ...notifications, dispatchOnce: () => dispatcher().runOnce() },
    retention: { settings: retention.settings, status: () => retention.status(), prune: (opts) => retention.prune(opts), onSignal: (cb) => retention.onSignal(cb) },
    archive: archive.api,
    context: ctx,
  };
}
