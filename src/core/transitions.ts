/**
 * The hot transitions of the Store port (docs/stores.md, "Transitions"): each method is one whole
 * state change with its checks, which a store applies atomically and, where it can, in one round
 * trip (PostgreSQL: one call of a server-side function, committed by itself). The decision logic
 * stays in core: a caller says what it believes the rows hold (`expect`), the store applies the
 * change only if they still do, and otherwise writes nothing and answers what it found, from
 * which the caller decides again.
 *
 * A store without its own implementation gets {@link genericTransitions}: the same transitions
 * composed from `StoreTx` operations in one `transact` (memory and SQLite use it; on SQLite that
 * is one transaction in the group commit). Both must agree; the conformance suite runs the same
 * cases on every store.
 */
import { outcomeOf, type BatchOutcome } from "./batch.js";
import { WritError } from "./errors.js";
import { draft, unsealedEntries } from "./journal.js";
import { readCommitted, type ClaimOptions, type Store, type StoreTx } from "./store.js";
import type {
  Approval,
  AttemptRecord,
  Authority,
  BreakerRecord,
  ConsumedDecision,
  Fence,
  IdempotencyRecord,
  Invocation,
  JournalEntry,
  ReconciliationRecord,
  Scope,
  StepCheckpoint,
  UnsealedEntry,
} from "./types.js";

/** What a `begin` caller believes the key's idempotency record to be (null: there is none). */
export interface IdempotencyExpectation {
  state: IdempotencyRecord["state"];
  attemptId: string;
  updatedAt: number;
}

/** Execution start: consume the decision, mark the key in progress, record the step's intent. */
export interface BeginInput {
  /** The lease the caller holds; the invocation row is checked (and locked) first. */
  fence?: Fence;
  /** Logical keys serialised for the transition (the idempotency key and the decision id). */
  locks: string[];
  /** What the caller's decision was made on; any difference and nothing is written. */
  expect: {
    idempotency: IdempotencyExpectation | null;
    /** {@link stepsFingerprint} of the invocation's step rows. */
    steps: string;
    /** Checks 8 and 9 read from the store: {@link authorityFingerprint} / approval rev, null = absent. */
    authority?: { authorityRef: string; seen: string | null };
    approval?: { approvalId: string; seen: number | null };
  };
  consumed: ConsumedDecision;
  idempotency: IdempotencyRecord;
  step: StepCheckpoint;
  /** The new attempt (EXECUTING); the store numbers it. */
  attempt: AttemptRecord;
  /** An interrupted attempt this one takes over, rewritten (its stored state must be EXECUTING). */
  supersede?: AttemptRecord;
  entries: UnsealedEntry[];
}

/** What the store found when a `begin` expectation did not hold. */
export interface BeginFound {
  idempotency: IdempotencyRecord | null;
  /** The decision was consumed before. */
  consumed: boolean;
  steps: StepCheckpoint[];
  authority: Authority | null;
  approval: Approval | null;
  /** The attempts the idempotency record names (`attemptId`, `resultAttemptId`), when they exist. */
  attempts: AttemptRecord[];
}

export type BeginResult = { started: true; seq: number } | { started: false; found: BeginFound };

/** A step succeeded and the next one starts: its outcome and the next intent, together. */
export interface AdvanceInput {
  fence?: Fence;
  done: StepCheckpoint;
  next: StepCheckpoint;
  entries: UnsealedEntry[];
}

/** An attempt's last outcome: step, attempt, key and (hosted) the invocation, together. */
export interface SettleInput {
  fence?: Fence;
  /** Extra logical keys, taken after the invocation row (a handoff's completion lock). */
  locks?: string[];
  step: StepCheckpoint;
  /** The settled attempt; replaces the stored one (which keeps its seq). */
  attempt: AttemptRecord;
  idempotency: IdempotencyRecord;
  /** The invocation's next state (needs `fence`): a fenced write. */
  invocation?: Invocation;
  reconciliation?: ReconciliationRecord;
  entries: UnsealedEntry[];
  /**
   * More work inside the same transaction, after the writes above (reads included). A store then
   * runs the generic composition: it costs round trips; the host uses it only for a handoff.
   */
  within?: (tx: StoreTx) => Promise<void>;
}

/** An attempt that ends where it starts (refused, duplicate): evidence only. */
export interface RecordInput {
  fence?: Fence;
  attempt: AttemptRecord;
  entries: UnsealedEntry[];
}

export interface AdmitInput {
  invocation: Invocation;
  entries: UnsealedEntry[];
}

export type AdmitResult = { created: true } | { created: false; existing: Invocation };

/** A claimed invocation with its prepare read (see `ClaimsPort.claimPrepared`). */
export interface ClaimedPrepared {
  invocation: Invocation;
  prepared: Prepared;
}

/**
 * What `claimPrepared` answers: the invocations it claimed, in claim order, with their prepare
 * reads; and, when it claimed fewer than it could (`min(limit, tokens.length)`), `nextRunAt`: the
 * earliest `runAt` among queued invocations read after the claim in its transaction (null when
 * none is queued), so a worker going to sleep needs no read of its own. Absent when the claim
 * took all it could (a store may also leave it out: the worker then reads it itself).
 */
export interface ClaimedBatch {
  claimed: ClaimedPrepared[];
  nextRunAt?: number | null;
}

/**
 * What `admitClaimed` answers: as `admit`; when it created the invocation, `claimed` holds it as
 * claimed, with its prepare read (absent only if the invocation was not claimable: not queued, or
 * not yet due; a wake-up was then sent for it as for any admission).
 */
export type AdmitClaimedResult = { created: true; claimed?: ClaimedPrepared } | { created: false; existing: Invocation };

/**
 * The transitions a store may implement natively. Every method is atomic; a lost lease throws
 * `LeaseLostError` and writes nothing; a settled step asked to return to `started` throws
 * `CONFLICT`. Inputs pass the same rules as `StoreTx` (the core's store guard checks them).
 */
/** Admission: a request becomes a queued invocation, once per (scope, action, key). */
export interface AdmissionPort {
  /** Inserts the invocation and its entries unless (scope, action, key) exists: then returns it. */
  admit(scope: Scope, input: AdmitInput): Promise<AdmitResult>;
  /**
   * Optional: `admit` and, when it created the invocation, its claim for `claim.owner` with
   * `claim.tokens[0]` (that invocation alone, with its `invocation.claimed` entry) and its prepare
   * read (breakers of `breakers`), in one commit: an admission handed to an idle worker of the
   * calling process (docs/host.md, "Hand-off to an idle worker"). No wake-up is sent for an
   * invocation claimed this way: no other worker needs to look for it.
   */
  admitClaimed?(scope: Scope, input: AdmitInput, claim: ClaimOptions, breakers: Array<{ connector: string; operation: string }>): Promise<AdmitClaimedResult>;
}

/** Claims and the read a worker makes before it decides. */
export interface ClaimsPort {
  /**
   * `StoreTx.claimInvocations` and each claimed invocation's {@link claimedEntry}, atomically
   * (across scopes, like the claim itself).
   */
  claim(opts: ClaimOptions): Promise<Invocation[]>;
  /**
   * What a worker reads before it evaluates a claimed invocation: its steps, the authority and
   * (when named) the approval, on the read path in one go.
   */
  prepare(scope: Scope, input: PrepareInput): Promise<Prepared>;
  /**
   * Optional: `claim` and each claimed invocation's `prepare` (with the breakers of `breakers`, the
   * same list for every invocation) in one statement. The prepared reads see what committed before
   * the claim; the invocation's status is the claimed one.
   */
  claimPrepared?(opts: ClaimOptions, breakers: Array<{ connector: string; operation: string }>): Promise<ClaimedBatch>;
}

/** Execution: consumption with the step's intent, attempts that end at once, step to step. */
export interface ExecutionPort {
  /** See {@link BeginInput}. */
  begin(scope: Scope, input: BeginInput): Promise<BeginResult>;
  /** Records a refused or duplicate attempt with its entries; returns its seq. */
  record(scope: Scope, input: RecordInput): Promise<number>;
  advance(scope: Scope, input: AdvanceInput): Promise<void>;
}

/** Settlement: the attempt's last outcome, with the invocation's next state. */
export interface SettlementPort {
  /** Returns the invocation's new rev when it wrote one. */
  settle(scope: Scope, input: SettleInput): Promise<{ invocationRev?: number }>;
}

/** Journal sequencing, optional: without it the sequencer seals in a locked transaction. */
export interface SequencingPort {
  /**
   * The sealed head and the oldest unsealed entries (docs/journal.md), read without a lock; and
   * a seal that applies only if the head is still `headSeq` (false, nothing written, when
   * another sequencer sealed first): two round trips and one commit per seal.
   */
  readUnsealed?(scope: Scope, limit: number): Promise<{ head: { seq: number; hash: string } | null; entries: UnsealedEntry[] }>;
  sealIfHead?(scope: Scope, headSeq: number, entries: JournalEntry[]): Promise<boolean>;
  /** `readUnsealed` of several scopes in one statement, answers in the scopes' order. */
  readUnsealedMany?(scopes: Scope[], limit: number): Promise<Array<{ head: { seq: number; hash: string } | null; entries: UnsealedEntry[] }>>;
  /** `sealIfHead` of several scopes in one statement and one commit, each applied (or failing) alone. */
  sealIfHeadMany?(seals: Array<{ scope: Scope; headSeq: number; entries: JournalEntry[] }>): Promise<Array<BatchOutcome<boolean>>>;
}

/** One write transition of a batch (docs/stores.md, "Batches"), with the input its own method takes. */
export type BatchMember =
  | { kind: "admit"; scope: Scope; input: AdmitInput }
  | { kind: "begin"; scope: Scope; input: BeginInput }
  | { kind: "record"; scope: Scope; input: RecordInput }
  | { kind: "advance"; scope: Scope; input: AdvanceInput }
  | { kind: "settle"; scope: Scope; input: SettleInput };

/** What each kind of member answers when it succeeds: what its own method resolves to. */
export interface BatchValues {
  admit: AdmitResult;
  begin: BeginResult;
  record: number;
  advance: void;
  settle: { invocationRev?: number };
}

/** Several write transitions at once, each succeeding or failing alone. */
export interface BatchPort {
  /**
   * Applies every member and answers one outcome per member, in order: a member's lost lease,
   * changed expectation or refusal fails that member only (its error is the one its own method
   * would throw), and nothing it wrote stays. PostgreSQL applies the batch in one statement and one
   * commit; the generic composition runs the members' own transitions side by side (on SQLite
   * they share a group commit).
   */
  batch(members: BatchMember[]): Promise<BatchOutcome[]>;
}

/** Every hot transition of a store, by domain. */
export type StoreTransitions = AdmissionPort & ClaimsPort & ExecutionPort & SettlementPort & SequencingPort & BatchPort;

/** Runs one member through the transitions' own method. */
export function applyMember(t: Omit<StoreTransitions, "batch">, m: BatchMember): Promise<unknown> {
  switch (m.kind) {
    case "admit":
      return t.admit(m.scope, m.input);
    case "begin":
      return t.begin(m.scope, m.input);
    case "record":
      return t.record(m.scope, m.input);
    case "advance":
      return t.advance(m.scope, m.input);
    case "settle":
      return t.settle(m.scope, m.input);
    default:
      return Promise.reject(new WritError("INVALID_ARGUMENT", `batch: unknown member kind ${JSON.stringify((m as { kind?: unknown }).kind)}`));
  }
}

/** The members applied side by side through their own methods, each answering alone. */
export function applyEach(t: Omit<StoreTransitions, "batch">, members: readonly BatchMember[]): Promise<BatchOutcome[]> {
  return Promise.all(members.map((m) => outcomeOf(applyMember(t, m))));
}

export interface PrepareInput {
  invocationId: string;
  authorityRef: string;
  approvalId?: string;
  /** Circuit breakers to read along (the action's steps' connector and operation). */
  breakers?: Array<{ connector: string; operation: string }>;
}

export interface Prepared {
  steps: StepCheckpoint[];
  authority: Authority | null;
  approval: Approval | null;
  /** The invocation's status and lease as committed now (null: it is gone). */
  invocation: { status: Invocation["status"]; leaseOwner?: string; leaseToken?: string } | null;
  /** The breaker of each `breakers` target, in order (null: none recorded yet). */
  breakers: Array<BreakerRecord | null>;
}

/** What `Prepared.invocation` keeps of an invocation. */
export function leaseView(inv: Invocation | null): Prepared["invocation"] {
  if (inv === null) return null;
  return { status: inv.status, ...(inv.leaseOwner !== undefined ? { leaseOwner: inv.leaseOwner } : {}), ...(inv.leaseToken !== undefined ? { leaseToken: inv.leaseToken } : {}) };
}

/**
 * The journal entry of a claim (PostgreSQL builds the same document in `writ_claim`, migration 6).
 */
export function claimedEntry(inv: Invocation, owner: string, now: number): UnsealedEntry {
  return unsealedEntries(inv, [
    draft("invocation.claimed", [inv.invocationId, inv.leaseToken!], now, { invocationId: inv.invocationId }, { owner, attemptCount: inv.attemptCount }),
  ])[0]!;
}

/** The steps a `begin` decided on, as the store compares them: index, status and attempt of each. */
export function stepsFingerprint(rows: readonly StepCheckpoint[]): string {
  return [...rows]
    .sort((a, b) => a.stepIndex - b.stepIndex)
    .map((s) => `${s.stepIndex}:${s.status}:${s.attemptId}`)
    .join(",");
}

/** What of an authority checks 8 depends on and every write changes: status, expiry, update time. */
export function authorityFingerprint(a: Authority | null): string | null {
  return a === null ? null : `${a.status}:${a.expiresAt ?? ""}:${a.updatedAt}`;
}

function idempotencyMatches(rec: IdempotencyRecord | null, e: IdempotencyExpectation | null): boolean {
  if (rec === null || e === null) return rec === e;
  return rec.state === e.state && rec.attemptId === e.attemptId && rec.updatedAt === e.updatedAt;
}

/** What a begin expectation is compared with, read inside the transition's transaction. */
async function readBeginState(tx: StoreTx, scope: Scope, input: BeginInput): Promise<Omit<BeginFound, "attempts">> {
  const e = input.expect;
  return {
    idempotency: await tx.getIdempotency(scope, input.idempotency.action, input.idempotency.idempotencyKey),
    consumed: (await tx.getConsumedDecision(scope, input.consumed.decisionId)) !== null,
    steps: await tx.getSteps(scope, input.step.invocationId),
    authority: e.authority ? await tx.getAuthority(scope, e.authority.authorityRef) : null,
    approval: e.approval ? await tx.getApproval(scope, e.approval.approvalId) : null,
  };
}

/** The attempts an idempotency record names, for a caller deciding a duplicate or a takeover. */
export async function namedAttempts(tx: StoreTx, scope: Scope, rec: IdempotencyRecord | null): Promise<AttemptRecord[]> {
  if (rec === null) return [];
  const ids = [...new Set([rec.attemptId, rec.resultAttemptId].filter((x): x is string => x !== undefined))];
  const out: AttemptRecord[] = [];
  for (const id of ids) {
    const a = await tx.getAttempt(scope, id);
    if (a) out.push(a);
  }
  return out;
}

/** Everything a begin compares, read on the store's read path (for a caller deciding a refusal). */
export async function inspectBegin(tx: StoreTx, scope: Scope, input: BeginInput): Promise<BeginFound> {
  const seen = await readBeginState(tx, scope, input);
  return { ...seen, attempts: await namedAttempts(tx, scope, seen.idempotency) };
}

function expectationHolds(input: BeginInput, seen: Omit<BeginFound, "attempts">): boolean {
  const e = input.expect;
  if (seen.consumed) return false;
  if (!idempotencyMatches(seen.idempotency, e.idempotency)) return false;
  if (stepsFingerprint(seen.steps) !== e.steps) return false;
  if (e.authority && authorityFingerprint(seen.authority) !== e.authority.seen) return false;
  if (e.approval && (seen.approval === null ? null : (seen.approval.rev ?? 0)) !== e.approval.seen) return false;
  return true;
}

/*
 * The writes of each transition, in the one order (and lock order) every store applies them. The
 * generic composition runs them; the store guard replays them on a dry transaction to check a
 * native transition's inputs (core/store-guard.ts), so the two cannot drift apart.
 */

/** A begin's writes after its expectation held; the attempt's seq. */
export async function beginWrites(tx: StoreTx, scope: Scope, input: BeginInput): Promise<number> {
  if (input.supersede) await tx.updateAttempt(scope, input.supersede);
  if (!(await tx.consumeDecision(scope, input.consumed))) throw new WritError("CONFLICT", "decision consumed concurrently despite the lock");
  await tx.putIdempotency(scope, input.idempotency);
  await tx.putStep(scope, input.step);
  // The scope-wide sections come last (attempt numbering, then the journal: docs/stores.md).
  const seq = await tx.insertAttempt(scope, input.attempt);
  await tx.insertUnsealed(scope, input.entries);
  return seq;
}

/** A refused or duplicate attempt's writes (after the lease check); its seq. */
export async function recordWrites(tx: StoreTx, scope: Scope, input: RecordInput): Promise<number> {
  const seq = await tx.insertAttempt(scope, input.attempt);
  await tx.insertUnsealed(scope, input.entries);
  return seq;
}

/** An advance's writes (after the lease check). */
export async function advanceWrites(tx: StoreTx, scope: Scope, input: AdvanceInput): Promise<void> {
  await tx.putStep(scope, input.done);
  await tx.putStep(scope, input.next);
  await tx.insertUnsealed(scope, input.entries);
}

/** A settle's lease check, locks and writes (`within` excluded). */
export async function settleWrites(tx: StoreTx, scope: Scope, input: SettleInput): Promise<void> {
  if (input.invocation && !input.fence) throw new WritError("INVALID_ARGUMENT", "settle: an invocation write needs the fence");
  if (input.fence) await tx.assertLease(scope, input.fence);
  if (input.locks && input.locks.length > 0) await tx.lock(scope, input.locks);
  await tx.putStep(scope, input.step);
  await tx.updateAttempt(scope, input.attempt);
  await tx.putIdempotency(scope, input.idempotency);
  if (input.invocation) await tx.updateInvocation(scope, input.invocation, input.fence);
  if (input.reconciliation) await tx.insertReconciliation(scope, input.reconciliation);
  await tx.insertUnsealed(scope, input.entries);
}

/** An admission's writes: the invocation and its entries, unless (scope, action, key) exists. */
async function admitWrites(tx: StoreTx, scope: Scope, inv: Invocation, entries: UnsealedEntry[]): Promise<AdmitResult> {
  await tx.lock(scope, [`admit:${inv.action}:${inv.idempotencyKey}`]);
  const existing = await tx.findInvocationByKey(scope, inv.action, inv.idempotencyKey);
  if (existing) return { created: false, existing };
  await tx.insertInvocation(scope, inv);
  await tx.insertUnsealed(scope, entries);
  return { created: true };
}

/** What a worker reads before it decides (see `ClaimsPort.prepare`). */
async function prepareReads(tx: StoreTx, scope: Scope, input: PrepareInput): Promise<Prepared> {
  const breakers: Array<BreakerRecord | null> = [];
  for (const b of input.breakers ?? []) breakers.push(await tx.getBreaker(scope, b.connector, b.operation));
  return {
    steps: await tx.getSteps(scope, input.invocationId),
    authority: await tx.getAuthority(scope, input.authorityRef),
    approval: input.approvalId !== undefined ? await tx.getApproval(scope, input.approvalId) : null,
    invocation: leaseView(await tx.getInvocation(scope, input.invocationId)),
    breakers,
  };
}

/** The transitions composed from `StoreTx` operations, one `transact` each. */
export function genericTransitions(store: Store): StoreTransitions {
  const t: Omit<StoreTransitions, "batch"> = {
    admit: (scope, input) => store.transact((tx) => admitWrites(tx, scope, input.invocation, input.entries)),
    // An invocation queued and due is inserted already claimed, with the claim's entry after the
    // admission's: one write, and no wake-up (the stores wake on queued writes only).
    admitClaimed: (scope, input, claim, breakers) =>
      store.transact(async (tx): Promise<AdmitClaimedResult> => {
        const inv = input.invocation;
        const token = Array.isArray(claim?.tokens) ? claim.tokens[0] : undefined;
        if (typeof token !== "string") throw new WritError("INVALID_ARGUMENT", "admitClaimed: the claim needs one lease token");
        if (!Array.isArray(breakers)) throw new WritError("INVALID_ARGUMENT", "admitClaimed: breakers must be an array");
        if (inv.status !== "queued" || inv.runAt > claim.now) return admitWrites(tx, scope, inv, input.entries);
        const claimed: Invocation = { ...inv, status: "running", leaseOwner: claim.owner, leaseToken: token, leaseExpiresAt: claim.now + claim.leaseMs, attemptCount: inv.attemptCount + 1, updatedAt: claim.now };
        const admitted = await admitWrites(tx, scope, claimed, [...input.entries, claimedEntry(claimed, claim.owner, claim.now)]);
        if (!admitted.created) return admitted;
        if (claimed.rev !== undefined) inv.rev = claimed.rev;
        const prepared = await prepareReads(tx, scope, { invocationId: inv.invocationId, authorityRef: inv.request.authorityRef, ...(inv.approvalId !== undefined ? { approvalId: inv.approvalId } : {}), breakers });
        return { created: true, claimed: { invocation: claimed, prepared } };
      }),
    begin: (scope, input) =>
      store.transact(async (tx): Promise<BeginResult> => {
        if (input.fence) await tx.assertLease(scope, input.fence);
        await tx.lock(scope, input.locks);
        const seen = await readBeginState(tx, scope, input);
        if (!expectationHolds(input, seen)) return { started: false, found: { ...seen, attempts: await namedAttempts(tx, scope, seen.idempotency) } };
        if (input.supersede) {
          const old = await tx.getAttempt(scope, input.supersede.attemptId);
          if (old?.state !== "EXECUTING") throw new WritError("STALE", `attempt ${input.supersede.attemptId} is no longer executing`);
          await tx.updateAttempt(scope, input.supersede);
        }
        return { started: true, seq: await beginWrites(tx, scope, input) };
      }),
    record: (scope, input) =>
      store.transact(async (tx) => {
        if (input.fence) await tx.assertLease(scope, input.fence);
        return recordWrites(tx, scope, input);
      }),
    advance: (scope, input) =>
      store.transact(async (tx) => {
        if (input.fence) await tx.assertLease(scope, input.fence);
        await advanceWrites(tx, scope, input);
      }),
    settle: (scope, input) =>
      store.transact(async (tx) => {
        await settleWrites(tx, scope, input);
        if (input.within) await input.within(tx);
        return input.invocation?.rev !== undefined ? { invocationRev: input.invocation.rev } : {};
      }),
    claim: (opts) =>
      store.transact(async (tx) => {
        const claimed = await tx.claimInvocations(opts);
        // A batch can span scopes; each scope's entries are written together.
        const byScope = [...claimed].sort((a, b) => (a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.spaceId < b.spaceId ? -1 : a.spaceId > b.spaceId ? 1 : 0));
        for (const inv of byScope) await tx.insertUnsealed({ tenantId: inv.tenantId, spaceId: inv.spaceId }, [claimedEntry(inv, opts.owner, opts.now)]);
        return claimed;
      }),
    prepare: (scope, input) => readCommitted(store, (tx) => prepareReads(tx, scope, input)),
  };
  return { ...t, batch: (members) => applyEach(t, members) };
}

/** The store's own transitions, or the generic composition over its transactions. */
export function transitionsOf(store: Store): StoreTransitions {
  const own = store.transitions;
  if (own !== undefined) return own;
  let g = generic.get(store);
  if (g === undefined) {
    g = genericTransitions(store);
    generic.set(store, g);
  }
  return g;
}

/** The generic composition of each store object, made once. */
const generic = new WeakMap<Store, StoreTransitions>();
