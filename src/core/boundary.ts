/**
 * The execution boundary (docs/boundary.md): the only door to connectors. Twelve checks in a fixed order,
 * consumption and in-progress marking in one transaction before any connector runs, every outcome
 * recorded, every attempt (refusals included) recorded in order and journaled.
 */
import type { ActionDefinition, Connector, ConnectorContext } from "./action.js";
import { DECISION_CHECKS, Refusal, checkApproval, checkAuthority, checkConnectors, checkIdempotency, checkParses, checkReplay, inProgressExpired, type CheckEnv, type DecisionSubject, type MaybePromise } from "./checks.js";
import { stableId } from "./digest.js";
import { verifyParsedAsync, type ParsedDecision } from "./decision.js";
import { WritError, errorMessage, type OutcomeCode } from "./errors.js";
import { ID_RANDOM_BYTES, timeOrderedId } from "./ids.js";
import { appendJournal, draft, unsealedEntries, type JournalDraft } from "./journal.js";
import { sequencerFor } from "./sequencer.js";
import type { Keyring } from "./keyring.js";
import type { Clock, CryptoPort, Random } from "./ports.js";
import { redactFor, type ErrorTextContext } from "./redact.js";
import { interpretReply, type Interpreted } from "./reply.js";
import { readCommitted, type Store, type StoreTx } from "./store.js";
import { authorityFingerprint, inspectBegin, stepsFingerprint, transitionsOf, type BeginFound, type BeginInput } from "./transitions.js";
import type {
  ActionRequest,
  Approval,
  AttemptRecord,
  AttemptState,
  Authority,
  Fence,
  IdempotencyRecord,
  IdempotencyState,
  Invocation,
  Json,
  ReasonCode,
  ReconciliationRecord,
  Scope,
  StepCheckpoint,
} from "./types.js";
import { refusalScope, UNSCOPED_JOURNAL } from "./reserved.js";
import { MAX_TIMER_MS } from "./validate.js";

/** Scope used to record refusals of malformed requests under a decision that does not verify (see `refusalScope`). */
export const UNSCOPED: Scope = UNSCOPED_JOURNAL;

export type { MaybePromise };

export interface BoundaryOptions {
  store: Store;
  /** Trusted decision keys. */
  keyring: Keyring;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  actions: ReadonlyArray<ActionDefinition<any>>;
  connectors: readonly Connector[];
  /**
   * Current standing of an authority (check 8); null when unknown. Not needed with
   * `standingFromStore`.
   */
  authority?: (scope: Scope, authorityRef: string) => MaybePromise<Authority | null>;
  /**
   * Read authorities and approvals (checks 8 and 9) from the store, inside the transaction that
   * consumes the decision: the standing checked is the standing at consumption, and no extra
   * transaction is spent on it. The host uses this. @defaultValue false
   */
  standingFromStore?: boolean;
  /** Looks up an approval referenced by a decision (check 9). @defaultValue none found */
  approval?: (scope: Scope, approvalRef: string) => MaybePromise<Approval | null>;
  /** Policy refs accepted for a scope: the active version plus any grace set (check 6). */
  acceptedPolicyRefs: readonly string[] | ((scope: Scope) => MaybePromise<readonly string[]>);
  /** @defaultValue 300 */
  maxDecisionAgeSeconds?: number;
  /** @defaultValue 30 */
  clockSkewSeconds?: number;
  /** Per connector call. @defaultValue 30000 */
  timeoutMs?: number;
  /**
   * How long a key may stay `in_progress` under an attempt that never settled (its process died
   * mid-call) before the next execution on the key closes that attempt UNKNOWN and the key reports
   * `RECONCILIATION_PENDING` for an operator (docs/boundary.md, "Interrupted executions"). Counted
   * from the attempt's start, so it must exceed the longest execution (steps × `timeoutMs`). A key
   * an invocation of the durable host holds while `running` is never expired here: the host's
   * recovery owns it. An integer from `timeoutMs` to 2147483647.
   * @defaultValue max(900000 (15 min), 10 × timeoutMs), at most 2147483647
   */
  inProgressTimeoutMs?: number;
  clock: Clock;
  crypto: CryptoPort;
  random: Random;
  /** Filters error text at its origin (connector reasons, thrown messages) before it is stored. */
  /** Filters error text at its origin; `context` names the action, step, connector and operation. */
  redactErrorText?: (text: string, context: ErrorTextContext) => string;
  /** Called after every recorded attempt transition; must not throw (errors are swallowed). */
  onEvent?: (event: BoundaryEvent) => void;
}

export interface BoundaryEvent {
  type: "attempt.refused" | "attempt.duplicate" | "attempt.started" | "step.settled" | "attempt.settled";
  scope: Scope;
  attempt: AttemptRecord;
  stepIndex?: number;
}

/** What a settlement planner sees (the host uses it to move the invocation with the outcome). */
export interface SettlementInfo {
  attempt: AttemptRecord;
  interpreted: Interpreted | null;
  /** Step that ended the attempt. */
  stepIndex: number;
  /** Raw (unredacted) outputs of all steps so far, by step name. */
  outputs: { [name: string]: Json };
  /** The step's settled row, as it is written. */
  step: StepCheckpoint;
  /** Set when `beforeStep` vetoed step `stepIndex + 1`: the attempt ended after `stepIndex` succeeded. */
  veto?: StepVeto;
}

/** Why `ExecuteOptions.beforeStep` stops an attempt before a step (docs/boundary.md, "Multi-step actions"). */
export interface StepVeto {
  reasonCode: ReasonCode;
  reason: string;
  /** When the caller means to try the step again (informational: the caller re-queues). */
  retryAt?: number;
}

/** The caller's part of the final settlement, written in the same transition as the boundary's. */
export interface SettlementPlan {
  /** Extra logical keys, taken right after the lease check (before any write). */
  locks?: string[];
  /** The invocation's next state (a fenced write). */
  invocation?: Invocation;
  reconciliation?: ReconciliationRecord;
  entries?: JournalDraft[];
  /** More work in the same transaction (costs the store its one-round-trip path). */
  within?: (tx: StoreTx) => Promise<void>;
}

export interface ExecuteOptions {
  /**
   * Makes every transition conditional on this lease (hosted execution): each one checks the
   * lease first and holds the invocation row until it commits, so a lost lease writes nothing.
   * An execution holding the lease may take over its own interrupted in-progress execution.
   */
  fence?: Fence;
  /** Invocation the execution belongs to. @defaultValue derived from (scope, action, idempotencyKey) */
  invocationId?: string;
  /**
   * What the caller read just before (hosted execution): the invocation's steps and, with
   * `standingFromStore`, the authority and approval. The store confirms it when it consumes the
   * decision, so a fresh read is not needed; if it changed, the boundary decides again on what
   * the store found. @defaultValue a key never used before
   */
  known?: { steps: StepCheckpoint[]; authority?: Authority | null; approval?: Approval | null; idempotency?: IdempotencyRecord | null };
  /** Plans the caller's writes of the final settlement (hosted execution). */
  settle?: (info: SettlementInfo) => SettlementPlan;
  /**
   * Asked before each step after the first one this attempt runs, once the previous step
   * succeeded and before the step's intent is recorded. A veto ends the attempt there, in one
   * settle transition: the previous step's outcome is durable, the vetoed step never started, the
   * attempt is `FAILED` with the veto's code and the key is `failed` (a later attempt, under a new
   * decision, resumes at the vetoed step). The host checks circuit breakers here.
   */
  beforeStep?: (stepIndex: number) => Promise<StepVeto | undefined>;
  /**
   * Stops the execution (docs/boundary.md, Aborting an execution): aborted before the first
   * step's intent is recorded, nothing is written and `ABORTED` is thrown; aborted between steps,
   * the finished step's outcome is recorded, no further step starts and `ABORTED` is thrown;
   * aborted during a connector call, the call's `ctx.signal` aborts and the connector decides: a
   * reply it still gives is recorded, a throw is an unknown outcome (never retried blindly).
   */
  signal?: AbortSignal;
}

/** A recorded attempt, plus for executions the raw outputs of the steps that ran. */
export interface Attempt extends AttemptRecord {
  /** True when the failure was transient (retry may help, under a new decision). */
  transient?: boolean;
}

export interface Boundary {
  /** Runs `request` under `decision` (JWS compact) if every check passes; always returns the recorded attempt. */
  execute(request: unknown, decision: unknown, options?: ExecuteOptions): Promise<Attempt>;
  /** Step idempotency key: stable across retries and recovery of one step. */
  stepKey(scope: Scope, action: string, idempotencyKey: string, stepIndex: number): string;
  /** Default invocation id for a bare boundary execution. */
  invocationIdFor(scope: Scope, action: string, idempotencyKey: string): string;
}

interface Resolved {
  cfg: Required<Pick<BoundaryOptions, "maxDecisionAgeSeconds" | "clockSkewSeconds" | "timeoutMs" | "inProgressTimeoutMs">>;
  actions: Map<string, ActionDefinition<unknown>>;
  connectors: Map<string, Connector>;
}

function positive(name: string, v: unknown, dflt: number, allowZero = false, max = Number.MAX_SAFE_INTEGER): number {
  if (v === undefined) return dflt;
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0 || (!allowZero && v === 0) || v > max) {
    throw new WritError("INVALID_OPTION", `createBoundary: ${name} must be a ${allowZero ? "non-negative" : "positive"} number${max < Number.MAX_SAFE_INTEGER ? ` of at most ${max} (what a timer can hold)` : ""}`);
  }
  return v;
}

/**
 * `inProgressTimeoutMs` (docs/boundary.md, "Interrupted executions"): an integer from `timeoutMs`
 * (a live call may take that long) to what a timer holds; by default 15 minutes, or ten connector
 * timeouts when that is longer.
 */
export function inProgressTimeoutOf(where: string, v: unknown, timeoutMs: number): number {
  if (v === undefined) return Math.min(MAX_TIMER_MS, Math.max(900_000, 10 * timeoutMs));
  if (typeof v !== "number" || !Number.isInteger(v) || v < timeoutMs || v > MAX_TIMER_MS) {
    throw new WritError("INVALID_OPTION", `${where}: inProgressTimeoutMs must be an integer number of milliseconds from timeoutMs (${timeoutMs}) to ${MAX_TIMER_MS}; got ${typeof v === "number" ? String(v) : typeof v}`);
  }
  return v;
}

function resolve(o: BoundaryOptions): Resolved {
  if (typeof o !== "object" || o === null) throw new WritError("INVALID_OPTION", "createBoundary needs an options object");
  for (const k of ["store", "keyring", "clock", "crypto", "random"] as const) {
    if (o[k] === undefined || o[k] === null) throw new WritError("INVALID_OPTION", `createBoundary: ${k} is required`);
  }
  if (typeof o.authority !== "function" && o.standingFromStore !== true) {
    throw new WritError("INVALID_OPTION", "createBoundary: authority must be a function (scope, authorityRef) => Authority | null (or set standingFromStore)");
  }
  if (!Array.isArray(o.acceptedPolicyRefs) && typeof o.acceptedPolicyRefs !== "function") {
    throw new WritError("INVALID_OPTION", "createBoundary: acceptedPolicyRefs must be a list of policy refs or a function of the scope");
  }
  const actions = new Map<string, ActionDefinition<unknown>>();
  for (const a of o.actions ?? []) {
    if (actions.has(a.id)) throw new WritError("INVALID_OPTION", `createBoundary: action ${a.id} is defined twice`);
    actions.set(a.id, a as ActionDefinition<unknown>);
  }
  const connectors = new Map<string, Connector>();
  for (const c of o.connectors ?? []) {
    if (connectors.has(c.id)) throw new WritError("INVALID_OPTION", `createBoundary: connector ${c.id} is registered twice`);
    connectors.set(c.id, c);
  }
  const timeoutMs = positive("timeoutMs", o.timeoutMs, 30_000, false, MAX_TIMER_MS);
  return {
    cfg: {
      maxDecisionAgeSeconds: positive("maxDecisionAgeSeconds", o.maxDecisionAgeSeconds, 300),
      clockSkewSeconds: positive("clockSkewSeconds", o.clockSkewSeconds, 30, true),
      timeoutMs,
      inProgressTimeoutMs: inProgressTimeoutOf("createBoundary", o.inProgressTimeoutMs, timeoutMs),
    },
    actions,
    connectors,
  };
}

const IDEM_STATE: Partial<Record<AttemptState, IdempotencyState>> = {
  SUCCEEDED: "succeeded",
  FAILED: "failed",
  TIMED_OUT: "unknown",
  UNKNOWN: "unknown",
  HANDED_OFF: "handed_off",
};

const STEP_STATUS = {
  success: "succeeded",
  permanent_failure: "failed",
  transient_failure: "failed",
  timeout: "unknown",
  ambiguous: "unknown",
  accepted: "handed_off",
} as const;

/** Creates an execution boundary. See {@link BoundaryOptions}; ports (clock, crypto, random) are required here. */
export function createBoundaryCore(options: BoundaryOptions): Boundary {
  const { cfg, actions, connectors } = resolve(options);
  const { store, keyring, clock, crypto, random } = options;
  // The journal sequencer of this store (one per store in the process): seals after each commit.
  sequencerFor(store, crypto);
  const redactText = (t: string, context: ErrorTextContext): string => {
    if (!options.redactErrorText) return t;
    try {
      return options.redactErrorText(t, context);
    } catch {
      return "[error text withheld: redactErrorText threw]";
    }
  };
  const emit = (e: BoundaryEvent): void => {
    if (!options.onEvent) return;
    try {
      options.onEvent(e);
    } catch {
      /* a telemetry hook never changes an outcome */
    }
  };
  const newId = (prefix: string): string => timeOrderedId(prefix, clock.now(), random.bytes(ID_RANDOM_BYTES));
  // One hash of (scope, action, idempotency key) names both the default invocation and the step keys.
  const keyHash = (scope: Scope, action: string, key: string): string => stableId(crypto, "", [scope.tenantId, scope.spaceId, action, key]);
  const stepKeyOf = (h: string, i: number): string => `writ-step-${h}-${i}`;
  const stepKey = (scope: Scope, action: string, key: string, i: number): string => stepKeyOf(keyHash(scope, action, key), i);
  const invocationIdFor = (scope: Scope, action: string, key: string): string => `inv_${keyHash(scope, action, key)}`;

  const env: CheckEnv = {
    crypto,
    keyring,
    maxDecisionAgeSeconds: cfg.maxDecisionAgeSeconds,
    clockSkewSeconds: cfg.clockSkewSeconds,
    acceptedRefs: (scope) => {
      const a = options.acceptedPolicyRefs;
      return typeof a === "function" ? a(scope) : a;
    },
  };

  /** Checks 8 and 9, through the lookup options or, with `tx`, from the store. */
  async function standing(tx: StoreTx | null, scope: Scope, req: ActionRequest, approvalRef: string | undefined, digest: string, now: number): Promise<Refusal | null> {
    const a = tx ? await tx.getAuthority(scope, req.authorityRef) : await options.authority!(scope, req.authorityRef);
    const auth = checkAuthority(a, req, now);
    if (auth) return auth;
    if (approvalRef === undefined) return null;
    const ap = tx ? await tx.getApproval(scope, approvalRef) : options.approval ? await options.approval(scope, approvalRef) : null;
    return checkApproval(ap, approvalRef, scope, digest, now);
  }

  /** Checks 1-9 in the order of `BOUNDARY_CHECKS` (1-7 with `standingFromStore`: 8 and 9 then run in the consumption transaction). */
  async function precheck(
    requestIn: unknown,
    token: unknown,
    now: number,
  ): Promise<{ refusal: Refusal; scope: Scope; req?: ActionRequest; decision?: ParsedDecision; digest?: string } | { refusal: null; scope: Scope; req: ActionRequest; decision: ParsedDecision; digest: string; action: ActionDefinition<unknown> }> {
    const { admission: ad, parsed } = await checkParses(env, actions, requestIn, token);
    if (!ad.ok && ad.problem === "shape") {
      // Only a decision that verifies may name the scope of a malformed request's refusal.
      const signed = parsed.ok && (await verifyParsedAsync(crypto, keyring, parsed.value)).ok ? parsed.value.payload : null;
      return { refusal: new Refusal("REQUEST_MALFORMED", ad.message), scope: refusalScope(null, signed) };
    }
    const scope = refusalScope(ad.req, null);
    if (!ad.ok) return { refusal: new Refusal("REQUEST_MALFORMED", ad.message), scope, req: ad.req, ...(ad.problem === "params" ? { digest: ad.digest } : {}) };
    const { req, digest, action } = ad;
    if (!parsed.ok) return { refusal: new Refusal("DECISION_MALFORMED", parsed.message), scope, req, digest };
    const subject: DecisionSubject = { scope, req, digest, decision: parsed.value, now };
    const base = { scope, req, decision: parsed.value, digest };
    for (const c of DECISION_CHECKS) {
      const r0 = c.run(env, subject);
      const r = r0 instanceof Promise ? await r0 : r0;
      if (r) return { ...base, refusal: r };
    }
    if (!options.standingFromStore) {
      const r = await standing(null, scope, req, parsed.value.payload.approvalRef, digest, now);
      if (r) return { ...base, refusal: r };
    }
    return { ...base, refusal: null, action };
  }

  function attemptBase(scope: Scope, attemptId: string, now: number, req?: ActionRequest, d?: ParsedDecision, digest?: string): AttemptRecord {
    const a: AttemptRecord = { tenantId: scope.tenantId, spaceId: scope.spaceId, attemptId, seq: 0, state: "REFUSED", startedAt: now };
    if (d) a.decisionId = d.payload.decisionId;
    if (digest) a.requestDigest = digest;
    if (req) {
      a.action = req.action;
      a.idempotencyKey = req.idempotencyKey;
    }
    return a;
  }

  function attemptDraft(a: AttemptRecord, type: "attempt.refused" | "attempt.duplicate" | "attempt.settled", at: number, extra: { [k: string]: Json } = {}): JournalDraft {
    const data: { [k: string]: Json } = { state: a.state, ...extra };
    if (a.reasonCode) data.reasonCode = a.reasonCode;
    if (a.reason) data.reason = a.reason;
    if (a.action) data.action = a.action;
    if (a.idempotencyKey) data.idempotencyKey = a.idempotencyKey;
    if (a.requestDigest) data.requestDigest = a.requestDigest;
    if (a.externalRef) data.externalRef = a.externalRef;
    if (a.stepIndex !== undefined) data.stepIndex = a.stepIndex;
    if (a.output !== undefined) data.output = a.output;
    if (a.originalAttemptId) data.originalAttemptId = a.originalAttemptId;
    const refs: { [k: string]: string } = { attemptId: a.attemptId };
    if (a.decisionId) refs.decisionId = a.decisionId;
    if (a.invocationId) refs.invocationId = a.invocationId;
    return draft(type, [a.attemptId], at, refs, data);
  }

  async function recordRefusal(scope: Scope, a: AttemptRecord, fence: Fence | undefined): Promise<Attempt> {
    const at = a.startedAt;
    a.endedAt = at;
    await store.transact(async (tx) => {
      // A refusal is evidence, not an effect: record it even when the lease is gone is wrong for a
      // fenced caller (it must write nothing more), so check the lease first when there is one.
      if (fence) await tx.assertLease(scope, fence);
      a.seq = await tx.insertAttempt(scope, a);
      await appendJournal(tx, crypto, scope, [attemptDraft(a, "attempt.refused", at)]);
    });
    emit({ type: "attempt.refused", scope, attempt: a });
    return a;
  }

  /**
   * An interrupted bare execution (docs/boundary.md, "Interrupted executions"), in one transaction
   * with its journal entries: the abandoned attempt and its started step become UNKNOWN
   * (`EXECUTION_INTERRUPTED`), the key `unknown`, and this execution is refused
   * `RECONCILIATION_PENDING`. Null, nothing written, when the key changed since it was read; a key
   * a running invocation holds is left to the host's recovery (refused `EXECUTION_IN_PROGRESS`).
   */
  async function expireInterrupted(scope: Scope, seenRec: IdempotencyRecord, seenHolder: AttemptRecord, base: AttemptRecord, fence: Fence | undefined): Promise<Attempt | null> {
    const now = base.startedAt;
    const events: BoundaryEvent[] = [];
    const out = await store.transact(async (tx): Promise<Attempt | null> => {
      // The invocation row first (lock order, docs/stores.md), then the key.
      if (fence) await tx.assertLease(scope, fence);
      await tx.lock(scope, [`idem:${seenRec.action}:${seenRec.idempotencyKey}`]);
      const rec = await tx.getIdempotency(scope, seenRec.action, seenRec.idempotencyKey);
      if (!rec || rec.state !== "in_progress" || rec.attemptId !== seenRec.attemptId || rec.updatedAt !== seenRec.updatedAt) return null;
      const holder = await tx.getAttempt(scope, rec.attemptId);
      if (!holder || !inProgressExpired(rec, holder, now, cfg.inProgressTimeoutMs) || holder.startedAt !== seenHolder.startedAt) return null;
      const refused = (code: "EXECUTION_IN_PROGRESS" | "RECONCILIATION_PENDING", message: string): AttemptRecord => ({ ...base, state: "REFUSED", reasonCode: code, reason: message, endedAt: now });
      const owner = await tx.getInvocation(scope, rec.invocationId);
      if (owner && owner.status === "running") {
        const a = refused("EXECUTION_IN_PROGRESS", `an execution under this idempotency key is in progress (invocation ${owner.invocationId} holds it; the host's recovery settles it)`);
        a.seq = await tx.insertAttempt(scope, a);
        await appendJournal(tx, crypto, scope, [attemptDraft(a, "attempt.refused", now)]);
        events.push({ type: "attempt.refused", scope, attempt: a });
        return a;
      }
      const reason = `interrupted: attempt ${holder.attemptId} started at ${holder.startedAt} and never settled within inProgressTimeoutMs (${cfg.inProgressTimeoutMs} ms); outcome unknown`;
      const steps = await tx.getSteps(scope, rec.invocationId);
      const row = steps.find((s) => s.attemptId === holder.attemptId && s.status === "started");
      if (row) await tx.putStep(scope, { ...row, status: "unknown", reasonCode: "EXECUTION_INTERRUPTED", reason, endedAt: now });
      const closed: AttemptRecord = { ...holder, state: "UNKNOWN", reasonCode: "EXECUTION_INTERRUPTED", reason, endedAt: now, ...(row ? { stepIndex: row.stepIndex } : {}) };
      await tx.updateAttempt(scope, closed);
      await tx.putIdempotency(scope, { ...rec, state: "unknown", updatedAt: now });
      const a = refused("RECONCILIATION_PENDING", `the execution under this key was interrupted (attempt ${holder.attemptId}); its outcome awaits an operator's resolution`);
      a.seq = await tx.insertAttempt(scope, a);
      await appendJournal(tx, crypto, scope, [attemptDraft(closed, "attempt.settled", now, { interrupted: true }), attemptDraft(a, "attempt.refused", now)]);
      events.push({ type: "attempt.settled", scope, attempt: closed }, { type: "attempt.refused", scope, attempt: a });
      return a;
    });
    for (const e of events) emit(e);
    return out;
  }

  async function execute(requestIn: unknown, token: unknown, opts: ExecuteOptions = {}): Promise<Attempt> {
    const now = clock.now();
    const attemptId = newId("att_");
    const pre = await precheck(requestIn, token, now);
    if (pre.refusal) {
      const a = attemptBase(pre.scope, attemptId, now, pre.req, pre.decision, pre.digest);
      a.reasonCode = pre.refusal.code;
      a.reason = pre.refusal.message;
      if (opts.invocationId) a.invocationId = opts.invocationId;
      return recordRefusal(pre.scope, a, opts.fence);
    }
    const { scope, req, decision, digest, action } = pre;
    const fence = opts.fence;
    const h = keyHash(scope, req.action, req.idempotencyKey);
    const invocationId = opts.invocationId ?? `inv_${h}`;
    // Check 12 is pure; it is computed here but reported in its place, after 10 and 11.
    const missing = checkConnectors(action, connectors);
    const base = attemptBase(scope, attemptId, now, req, decision, digest);
    base.invocationId = invocationId;
    const stepKeys: string[] = [];
    const keyOf = (i: number): string => (stepKeys[i] ??= stepKeyOf(h, i));
    const redactOutputs = (outputs: { [k: string]: Json }): Json => {
      const r = redactFor(action, { outputs }, "outputs") as { outputs: Json };
      return r.outputs;
    };

    function stepRow(sc: Scope, inv: string, i: number, att: string, at: number): StepCheckpoint {
      return {
        tenantId: sc.tenantId,
        spaceId: sc.spaceId,
        invocationId: inv,
        stepIndex: i,
        stepName: action.steps[i]!.name,
        connector: action.steps[i]!.connector,
        status: "started",
        stepKey: keyOf(i),
        attemptId: att,
        startedAt: at,
      };
    }

    // Checks 8-12 against what the store holds. The first round decides on what the caller
    // already knows (a fresh key, or the host's own read) and lets the store confirm it in the
    // same round trip that consumes the decision; if the store found otherwise, it wrote nothing
    // and the next round decides on what it found.
    type Verdict =
      | { kind: "refused"; refusal: Refusal }
      | { kind: "duplicate"; attempt: AttemptRecord }
      | { kind: "expire"; rec: IdempotencyRecord; holder: AttemptRecord }
      | { kind: "go"; startStep: number; outputs: { [k: string]: Json }; supersede?: AttemptRecord };
    const decide = (seen: BeginFound): Verdict => {
      if (options.standingFromStore) {
        const auth = checkAuthority(seen.authority, req, now);
        if (auth) return { kind: "refused", refusal: auth };
        const ref = decision.payload.approvalRef;
        if (ref !== undefined) {
          const ap = checkApproval(seen.approval, ref, scope, digest, now);
          if (ap) return { kind: "refused", refusal: ap };
        }
      }
      // Checks 10-12, in their place (core/checks.ts).
      const rec = seen.idempotency;
      const holder = rec ? seen.attempts.find((x) => x.attemptId === rec.attemptId) : undefined;
      const failedAt = rec?.state === "failed" ? (holder?.endedAt ?? rec.updatedAt) : undefined;
      const idem = checkIdempotency(rec, digest, invocationId, fence, { issuedAt: decision.payload.issuedAt, failedAt });
      if (idem instanceof Refusal && idem.code === "EXECUTION_IN_PROGRESS" && inProgressExpired(rec, holder, now, cfg.inProgressTimeoutMs)) {
        return { kind: "expire", rec: rec!, holder: holder! };
      }
      if (idem === "duplicate") {
        const orig = rec?.resultAttemptId ? seen.attempts.find((x) => x.attemptId === rec.resultAttemptId) : undefined;
        const a: AttemptRecord = { ...base, state: "DUPLICATE", endedAt: now };
        if (orig) {
          a.originalAttemptId = orig.attemptId;
          // An outcome an operator resolved lives on the step row the resolution settled.
          const resolvedRef = seen.steps.find((s) => s.attemptId === orig.attemptId && s.stepIndex === orig.stepIndex)?.externalRef;
          if (orig.externalRef !== undefined) a.externalRef = orig.externalRef;
          else if (resolvedRef !== undefined) a.externalRef = resolvedRef;
          if (orig.output !== undefined) a.output = orig.output;
          if (orig.stepIndex !== undefined) a.stepIndex = orig.stepIndex;
        }
        return { kind: "duplicate", attempt: a };
      }
      const refusal = idem ?? checkReplay(seen.consumed) ?? missing;
      if (refusal) return { kind: "refused", refusal };
      // Resume after the last succeeded step (their outputs feed later steps).
      const outputs: { [k: string]: Json } = {};
      let startStep = 0;
      for (let i = 0; i < action.steps.length; i++) {
        const s = seen.steps.find((x) => x.stepIndex === i);
        if (s?.status === "succeeded") {
          outputs[action.steps[i]!.name] = s.output ?? null;
          startStep = i + 1;
        } else break;
      }
      if (startStep >= action.steps.length) startStep = action.steps.length - 1;
      // Taking over an interrupted execution: its attempt never settled; close it as superseded.
      const old = rec && rec.state === "in_progress" && rec.attemptId !== attemptId ? seen.attempts.find((x) => x.attemptId === rec.attemptId) : undefined;
      const supersede: AttemptRecord | undefined =
        old && old.state === "EXECUTING" ? { ...old, state: "UNKNOWN", reasonCode: "ATTEMPT_SUPERSEDED", reason: `interrupted; superseded by attempt ${attemptId}`, endedAt: now } : undefined;
      return { kind: "go", startStep, outputs, ...(supersede ? { supersede } : {}) };
    };
    const tr = transitionsOf(store);
    const standingRead = options.standingFromStore === true;
    const known = opts.known;
    // What the first round assumes: the caller's own read, or a key never used.
    let seen: BeginFound = {
      idempotency: known?.idempotency ?? null,
      consumed: false,
      steps: known?.steps ?? [],
      authority: known?.authority ?? null,
      approval: known?.approval ?? null,
      attempts: [],
    };
    let confirmed = false;
    if (standingRead && (known?.authority === undefined || (decision.payload.approvalRef !== undefined && known.approval?.approvalId !== decision.payload.approvalRef))) {
      seen = await readCommitted(store, (tx) => inspectBegin(tx, scope, beginInputFor({ kind: "go", startStep: 0, outputs: {} })));
      confirmed = true;
    }
    function beginInputFor(v: Verdict & { kind: "go" }): BeginInput {
      const approvalRef = decision.payload.approvalRef;
      return {
        ...(fence ? { fence } : {}),
        locks: [`idem:${req.action}:${req.idempotencyKey}`, `decision:${decision.payload.decisionId}`],
        expect: {
          idempotency: seen.idempotency ? { state: seen.idempotency.state, attemptId: seen.idempotency.attemptId, updatedAt: seen.idempotency.updatedAt } : null,
          steps: stepsFingerprint(seen.steps),
          ...(standingRead ? { authority: { authorityRef: req.authorityRef, seen: authorityFingerprint(seen.authority) } } : {}),
          ...(standingRead && approvalRef !== undefined ? { approval: { approvalId: approvalRef, seen: seen.approval?.approvalId === approvalRef ? (seen.approval.rev ?? 0) : null } } : {}),
        },
        consumed: { tenantId: scope.tenantId, spaceId: scope.spaceId, decisionId: decision.payload.decisionId, attemptId, requestDigest: digest, consumedAt: now },
        idempotency: {
          tenantId: scope.tenantId,
          spaceId: scope.spaceId,
          action: req.action,
          idempotencyKey: req.idempotencyKey,
          requestDigest: digest,
          state: "in_progress",
          invocationId,
          attemptId,
          updatedAt: now,
        },
        step: stepRow(scope, invocationId, v.startStep, attemptId, now),
        attempt: { ...base, state: "EXECUTING", stepIndex: v.startStep },
        ...(v.supersede ? { supersede: v.supersede } : {}),
        entries: unsealedEntries(scope, [
          ...(v.supersede ? [attemptDraft(v.supersede, "attempt.settled", now)] : []),
          draft("decision.consumed", [decision.payload.decisionId], now, { decisionId: decision.payload.decisionId, attemptId, invocationId }, {
              action: req.action,
              actionVersion: req.actionVersion,
              idempotencyKey: req.idempotencyKey,
              requestDigest: digest,
              actor: { type: req.actor.type, id: req.actor.id },
              authorityRef: req.authorityRef,
              policyRef: decision.payload.policyRef,
              params: redactFor(action, { params: req.params }, "params"), // the journal's format: { params: ... }
              startStep: v.startStep,
          }),
        ]),
      };
    }

    let go: (Verdict & { kind: "go" }) | null = null;
    let attempt: Attempt | null = null;
    const stopped = opts.signal;
    for (let round = 0; go === null; round++) {
      if (round >= 5) throw new WritError("STALE", "the key's records kept changing while this execution started");
      const v = decide(seen);
      if (v.kind !== "go" && !confirmed) {
        // A refusal or a duplicate is reported only on what the store holds, never on an assumption.
        seen = await readCommitted(store, (tx) => inspectBegin(tx, scope, beginInputFor({ kind: "go", startStep: 0, outputs: {} })));
        confirmed = true;
        continue;
      }
      if (v.kind === "duplicate") {
        const a = v.attempt;
        a.seq = await tr.record(scope, { ...(fence ? { fence } : {}), attempt: a, entries: unsealedEntries(scope, [attemptDraft(a, "attempt.duplicate", now)]) });
        emit({ type: "attempt.duplicate", scope, attempt: a });
        return a;
      }
      if (v.kind === "expire") {
        const a = await expireInterrupted(scope, v.rec, v.holder, base, fence);
        if (a) return a;
        seen = await readCommitted(store, (tx) => inspectBegin(tx, scope, beginInputFor({ kind: "go", startStep: 0, outputs: {} })));
        continue;
      }
      if (v.kind === "refused") {
        const a: AttemptRecord = { ...base, state: "REFUSED", reasonCode: v.refusal.code, reason: v.refusal.message, endedAt: now };
        a.seq = await tr.record(scope, { ...(fence ? { fence } : {}), attempt: a, entries: unsealedEntries(scope, [attemptDraft(a, "attempt.refused", now)]) });
        emit({ type: "attempt.refused", scope, attempt: a });
        return a;
      }
      // Immediately before dispatch: an aborted caller records no intent and consumes nothing.
      if (stopped?.aborted) throw abortedError("before its first step");
      const input = beginInputFor(v);
      const r = await tr.begin(scope, input);
      if (r.started) {
        go = v;
        attempt = { ...input.attempt, seq: r.seq };
      } else {
        seen = r.found;
        confirmed = true;
      }
    }
    emit({ type: "attempt.started", scope, attempt: attempt! });

    const outputs = go.outputs;
    for (let i = go.startStep; i < action.steps.length; i++) {
      const step = action.steps[i]!;
      const started = i === go.startStep ? now : clock.now();
      let interpreted: Interpreted;
      let input: Json;
      try {
        input = step.input ? step.input({ params: req.params, outputs }) : (req.params);
      } catch (e) {
        interpreted = { kind: "permanent_failure", reason: `step input could not be built: ${errorMessage(e)}` };
        input = null;
      }

      interpreted ??= await callConnector(connectors.get(step.connector)!, step.operation, stopped, {
        request: req,
        operation: step.operation,
        input: input,
        idempotencyKey: keyOf(i),
        attemptId,
        decisionId: decision.payload.decisionId,
        invocationId,
        step: { index: i, name: step.name },
      });
      const ended = clock.now();
      const status = STEP_STATUS[interpreted.kind];
      const row: StepCheckpoint = { ...stepRow(scope, invocationId, i, attemptId, started), status, endedAt: ended };
      if (interpreted.kind === "success") {
        row.externalRef = interpreted.externalRef;
        if (interpreted.output !== undefined) row.output = interpreted.output;
        outputs[step.name] = interpreted.output ?? null;
      } else if (interpreted.kind === "accepted") {
        row.externalRef = interpreted.externalRef;
        if (action.completion) row.deadlineAt = ended + action.completion.deadlineMs;
      } else {
        row.reason = redactText(interpreted.reason, { source: "connector", action: action.id, invocationId, stepName: step.name, connector: step.connector, operation: step.operation });
        row.reasonCode = reasonCodeOf(interpreted);
      }
      const last = i === action.steps.length - 1;
      const succeededEntry = (): JournalDraft =>
        draft("step.succeeded", [invocationId, i, attemptId], ended, { attemptId, invocationId }, { stepIndex: i, stepName: step.name, externalRef: row.externalRef ?? null, output: redactOutputs({ [step.name]: outputs[step.name]! }) });
      if (interpreted.kind === "success" && !last && stopped?.aborted) {
        // Aborted between steps: this step's outcome is recorded, the next one never starts.
        const done = row;
        const entry = succeededEntry();
        await store.transact(async (tx) => {
          if (fence) await tx.assertLease(scope, fence);
          await tx.putStep(scope, done, fence);
          await appendJournal(tx, crypto, scope, [entry]);
        });
        emit({ type: "step.settled", scope, attempt: attempt!, stepIndex: i });
        throw abortedError(`after step ${i} (${step.name})`);
      }
      // The caller's say before the next step (docs/boundary.md, "Multi-step actions").
      const veto = interpreted.kind === "success" && !last && opts.beforeStep ? await opts.beforeStep(i + 1) : undefined;
      if (interpreted.kind === "success" && !last && veto === undefined) {
        // Outcome before next step, and intent before effect for the next one: one fenced transition.
        await tr.advance(scope, {
          ...(fence ? { fence } : {}),
          done: row,
          next: stepRow(scope, invocationId, i + 1, attemptId, ended),
          entries: unsealedEntries(scope, [succeededEntry()]),
        });
        emit({ type: "step.settled", scope, attempt: attempt!, stepIndex: i });
        continue;
      }
      const state = veto ? "FAILED" : attemptStateOf(interpreted);
      const final: Attempt = { ...attempt!, state, stepIndex: i, endedAt: ended };
      if (veto) {
        final.reasonCode = veto.reasonCode;
        final.reason = veto.reason;
      } else if (interpreted.kind === "success" || interpreted.kind === "accepted") final.externalRef = interpreted.externalRef;
      else {
        final.reasonCode = row.reasonCode!;
        final.reason = row.reason!;
      }
      if (Object.keys(outputs).length > 0) final.output = redactOutputs(outputs);
      if (interpreted.kind === "transient_failure") final.transient = true;
      const { transient: _t, ...stored } = final;
      const plan = opts.settle?.({ attempt: stored, interpreted, stepIndex: i, outputs, step: row, ...(veto ? { veto } : {}) });
      await tr.settle(scope, {
        ...(fence ? { fence } : {}),
        ...(plan?.locks && plan.locks.length > 0 ? { locks: plan.locks } : {}),
        step: row,
        attempt: stored,
        idempotency: {
          tenantId: scope.tenantId,
          spaceId: scope.spaceId,
          action: req.action,
          idempotencyKey: req.idempotencyKey,
          requestDigest: digest,
          state: IDEM_STATE[state]!,
          invocationId,
          attemptId,
          ...(state === "SUCCEEDED" ? { resultAttemptId: attemptId } : {}),
          updatedAt: ended,
        },
        ...(plan?.invocation ? { invocation: plan.invocation } : {}),
        ...(plan?.reconciliation ? { reconciliation: plan.reconciliation } : {}),
        entries: unsealedEntries(scope, [
          ...(veto ? [succeededEntry()] : []),
          attemptDraft(final, "attempt.settled", ended, { stepName: step.name, ...(veto ? { vetoedStep: i + 1 } : {}) }),
          ...(plan?.entries ?? []),
        ]),
        ...(plan?.within ? { within: plan.within } : {}),
      });
      emit({ type: "attempt.settled", scope, attempt: final, stepIndex: i });
      return final;
    }
    throw new WritError("INVALID_STATE", "action has no steps to run");
  }

  /** Calls a connector with a deadline; a late resolution after the timeout is ignored. */
  async function callConnector(connector: Connector, operation: string, stop: AbortSignal | undefined, partial: Omit<ConnectorContext, "signal" | "deadline">): Promise<Interpreted> {
    // The AbortController is made only if the connector reads `signal` (it costs microseconds).
    let controller: AbortController | undefined;
    let aborted = false;
    // Set when the caller's signal (a stopping worker) aborted the call: a throw is then unknown.
    let stoppedBy: unknown;
    const abortReason = (): unknown => stoppedBy ?? new WritError("INVALID_STATE", `execution timeout after ${cfg.timeoutMs} ms`);
    const ctx = Object.defineProperty({ ...partial, deadline: clock.now() + cfg.timeoutMs }, "signal", {
      enumerable: true,
      get(): AbortSignal {
        if (!controller) {
          controller = new AbortController();
          if (aborted || stoppedBy !== undefined) controller.abort(abortReason());
        }
        return controller.signal;
      },
    }) as ConnectorContext;
    const onStop = (): void => {
      stoppedBy = abortedError("while its connector call was in flight");
      controller?.abort(stoppedBy);
    };
    if (stop?.aborted) onStop();
    else stop?.addEventListener("abort", onStop, { once: true });
    let cancelTimer: (() => void) | undefined;
    const timedOut = new Promise<Interpreted>((resolveTimeout) => {
      cancelTimer = clock.setTimer(cfg.timeoutMs, () => {
        aborted = true;
        controller?.abort(abortReason());
        resolveTimeout({ kind: "timeout", reason: `no reply within ${cfg.timeoutMs} ms` });
      });
    });
    const call = (async (): Promise<Interpreted> => {
      const r = await settleReply(() => connector.operations[operation]!(ctx));
      if (r.kind === "threw") {
        if (aborted) return { kind: "timeout", reason: `no reply within ${cfg.timeoutMs} ms` };
        if (stoppedBy !== undefined) return { kind: "ambiguous", reason: `aborted while in flight (the host stopped): the provider may have acted: ${errorMessage(r.error)}` };
        return { kind: "permanent_failure", reason: `connector threw: ${errorMessage(r.error)}`, thrown: true };
      }
      if (r.kind === "unreadable") return { kind: "ambiguous", reason: `uninterpretable reply: ${r.what}` };
      return interpretReplySafely(r.value);
    })();
    try {
      const r = await Promise.race([call, timedOut]);
      return aborted ? { kind: "timeout", reason: `no reply within ${cfg.timeoutMs} ms` } : r;
    } finally {
      cancelTimer?.();
      stop?.removeEventListener("abort", onStop);
    }
  }

  return { execute, stepKey, invocationIdFor };
}

function abortedError(when: string): WritError {
  return new WritError("ABORTED", `the execution was aborted ${when}; nothing further runs`);
}

type Settled = { kind: "value"; value: unknown } | { kind: "threw"; error: unknown } | { kind: "unreadable"; what: string };

/**
 * Runs a connector operation and waits for its reply, telling apart the connector throwing (or its
 * promise rejecting: a definite failure) from a reply that cannot be read (a `then` getter or a
 * thenable's `then` that throws: the outcome is unknown). `then` is read exactly once and the
 * resolved value is boxed, so no getter on it runs outside this function.
 */
async function settleReply(run: () => unknown): Promise<Settled> {
  let pending: unknown;
  try {
    pending = run();
  } catch (e) {
    return { kind: "threw", error: e };
  }
  if ((typeof pending !== "object" && typeof pending !== "function") || pending === null) return { kind: "value", value: pending };
  let then: unknown;
  try {
    then = (pending as { then?: unknown }).then;
  } catch {
    return { kind: "unreadable", what: "reading its then threw" };
  }
  if (typeof then !== "function") return { kind: "value", value: pending };
  // The outcome is settled through these two slots, never by rejecting with an arbitrary value.
  try {
    const settled = await new Promise<Settled>((resolve) => {
      try {
        Reflect.apply(then, pending, [(v: unknown) => resolve({ kind: "value", value: v }), (e: unknown) => resolve({ kind: "threw", error: e })]);
      } catch {
        resolve({ kind: "unreadable", what: "its then threw" });
      }
    });
    return settled;
  } catch {
    return { kind: "unreadable", what: "its then threw" };
  }
}

/** `interpretReply`, where even a hostile value (a revoked Proxy) is ambiguous, never an exception. */
function interpretReplySafely(reply: unknown): Interpreted {
  try {
    return interpretReply(reply);
  } catch {
    return { kind: "ambiguous", reason: "uninterpretable reply: reading it threw" };
  }
}

function attemptStateOf(i: Interpreted): AttemptState {
  switch (i.kind) {
    case "success":
      return "SUCCEEDED";
    case "permanent_failure":
    case "transient_failure":
      return "FAILED";
    case "timeout":
      return "TIMED_OUT";
    case "ambiguous":
      return "UNKNOWN";
    case "accepted":
      return "HANDED_OFF";
  }
}

function reasonCodeOf(i: Exclude<Interpreted, { kind: "success" | "accepted" }>): OutcomeCode {
  switch (i.kind) {
    case "permanent_failure":
      return i.thrown ? "CONNECTOR_ERROR" : "CONNECTOR_FAILURE";
    case "transient_failure":
      return "CONNECTOR_TRANSIENT_FAILURE";
    case "timeout":
      return "EXECUTION_TIMEOUT";
    case "ambiguous":
      return "OUTCOME_AMBIGUOUS";
  }
}
