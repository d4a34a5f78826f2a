/**
 * The one validating wrapper every store runs behind (docs/stores.md, "Input rules" and "Lock
 * order"). Stores wrap themselves with `guardStore` so that no store can disagree with another on
 * what input it accepts, and so that every transaction takes its locks in one global order.
 *
 * Input rules (INVALID_ARGUMENT, nothing written):
 * - a scope is `{ tenantId, spaceId }`, both non-empty strings of at most `STORE_LIMITS.id`;
 * - ids and keys (invocation, approval, attempt, decision, reconciliation, completion, delivery,
 *   API key, authority, action, idempotency key, connector, external reference, lease owner and
 *   token) are non-empty strings of at most `STORE_LIMITS.id` characters (`STORE_LIMITS.key` for
 *   idempotency keys and lock keys);
 * - a record written in a scope carries that scope (`SCOPE_VIOLATION` otherwise);
 * - a fence names the invocation written; a list limit is a non-negative safe integer; a step
 *   index is a non-negative safe integer; an update carries the `rev` it read.
 *
 * Lock order (LOCK_ORDER, a programming error: the transaction rolls back): a transaction takes
 * the lock classes below in this order and never goes back to an earlier class:
 *   1. invocation rows (`getInvocation(…, { forUpdate })`, `assertLease`, `claimInvocations`,
 *      `heartbeat`, or the first write of an invocation in the transaction),
 *   2. logical keys (`lock` with keys other than `journal`),
 *   3. the scope's attempt counter (`insertAttempt`),
 *   4. the scope's journal (`lock(["journal"])`, `insertJournal`, `sealJournal`; writing
 *      unsealed entries takes no lock),
 *   5. circuit breaker rows (`putBreaker`; docs/host.md, "Circuit breakers").
 * Within one class a transaction may take several locks; a wait-for cycle needs two transactions
 * each holding a later class while waiting for an earlier one, which this wrapper refuses.
 */
import { WritError } from "./errors.js";
import { AGED_RECORD_KINDS, type AgedRecordKind, type BareCursor, type ClaimOptions, type DeliveryFilter, type EndedCursor, type InvocationFilter, type InvocationHold, type JournalScopeState, type ListOptions, type PrunedInvocationRows, type PrunedInvocations, type Store, type StoreTx, type SubscriptionClaimOptions } from "./store.js";
import type { BatchOutcome } from "./batch.js";
import { advanceWrites, beginWrites, recordWrites, settleWrites, type AdmitInput, type AdvanceInput, type BatchMember, type BeginInput, type RecordInput, type SettleInput, type StoreTransitions } from "./transitions.js";
import type {
  ApiKeyRecord,
  BreakerRecord,
  Approval,
  AttemptRecord,
  Authority,
  CompletionRecord,
  ConsumedDecision,
  Delivery,
  Fence,
  IdempotencyRecord,
  Invocation,
  JournalCheckpoint,
  JournalEntry,
  PolicyVersion,
  ReconciliationRecord,
  ReconciliationStatus,
  Scope,
  StepCheckpoint,
  Subscription,
  UnsealedEntry,
} from "./types.js";
import { BREAKER_STATES, DELIVERY_STATUSES } from "./types.js";

/** Bounds of the shared input rules. */
export const STORE_LIMITS = {
  /** Scope ids and record ids. */
  id: 512,
  /** Idempotency keys and lock keys. */
  key: 1024,
  /** Entries or tokens in one call. */
  batch: 10_000,
} as const;

/** The lock classes, in the one order a transaction may take them. */
export const LOCK_CLASSES = ["invocation rows", "keys", "attempt counter", "journal", "breakers"] as const;
export type LockClass = (typeof LOCK_CLASSES)[number];

function bad(message: string): WritError {
  return new WritError("INVALID_ARGUMENT", message);
}

function id(v: unknown, what: string, max: number = STORE_LIMITS.id): void {
  if (typeof v !== "string" || v.length === 0) throw bad(`${what} must be a non-empty string`);
  if (v.length > max) throw bad(`${what} is longer than ${max} characters`);
}

function optId(v: unknown, what: string): void {
  if (v !== undefined) id(v, what);
}

/** The scope rule: `{ tenantId, spaceId }`, non-empty, bounded. */
export function checkStoreScope(scope: unknown): asserts scope is Scope {
  if (typeof scope !== "object" || scope === null) throw bad("a scope must be { tenantId, spaceId }");
  const s = scope as Record<string, unknown>;
  if (typeof s.tenantId !== "string" || s.tenantId.length === 0 || typeof s.spaceId !== "string" || s.spaceId.length === 0) {
    throw bad("a scope needs non-empty string tenantId and spaceId");
  }
  if (s.tenantId.length > STORE_LIMITS.id || s.spaceId.length > STORE_LIMITS.id) throw bad(`scope ids are at most ${STORE_LIMITS.id} characters`);
}

function record(scope: Scope, rec: unknown, what: string): void {
  if (typeof rec !== "object" || rec === null) throw bad(`${what} must be an object`);
  const r = rec as { tenantId?: unknown; spaceId?: unknown };
  if (r.tenantId !== scope.tenantId || r.spaceId !== scope.spaceId) {
    throw new WritError("SCOPE_VIOLATION", `${what} belongs to another scope than the one this operation runs in`);
  }
}

function limit(opts: ListOptions | undefined): void {
  if (opts === undefined || opts === null) return;
  if (typeof opts !== "object") throw bad("list options must be an object");
  if (opts.limit !== undefined && (!Number.isSafeInteger(opts.limit) || opts.limit < 0)) throw bad("limit must be a non-negative integer");
}

function nonNegInt(v: unknown, what: string): void {
  if (!Number.isSafeInteger(v) || (v as number) < 0) throw bad(`${what} must be a non-negative integer`);
}

/** A list of at most `STORE_LIMITS.batch` ids. */
function idList(v: unknown, what: string): void {
  if (!Array.isArray(v) || v.length > STORE_LIMITS.batch) throw bad(`${what} must be a list of at most ${STORE_LIMITS.batch}`);
  for (const i of v) id(i, `an entry of ${what}`);
}

function agedKind(kind: unknown): void {
  if (!(AGED_RECORD_KINDS as readonly unknown[]).includes(kind)) throw bad(`kind must be one of ${AGED_RECORD_KINDS.join(", ")}`);
}

function fenceFor(fence: Fence | undefined, invocationId: string): void {
  if (fence === undefined) return;
  if (typeof fence !== "object" || fence === null) throw bad("a fence must be { invocationId, owner, token }");
  id(fence.owner, "fence owner");
  id(fence.token, "fence token");
  if (fence.invocationId !== invocationId) throw bad("the fence names another invocation than the one written");
}

/**
 * An update carries the revision of the record it read (docs/stores.md, "Conditional writes"). A
 * missing one means 0, which no row written through a store has (inserts start at 1): such a
 * write can only land on a row that predates revisions.
 */
function revOf(rec: { rev?: number }, what: string): void {
  if (rec.rev !== undefined && (!Number.isSafeInteger(rec.rev) || rec.rev < 0)) throw bad(`${what} update's rev must be a non-negative integer`);
}

function invKey(scope: Scope, invocationId: string): string {
  return JSON.stringify([scope.tenantId, scope.spaceId, invocationId]);
}

/** Lock bookkeeping of one transaction: the highest class taken and the invocation rows held. */
class LockOrder {
  #rank = -1;
  readonly #rows = new Set<string>();

  take(cls: LockClass, what: string): void {
    const rank = LOCK_CLASSES.indexOf(cls);
    if (rank < this.#rank) {
      throw new WritError(
        "LOCK_ORDER",
        `${what} takes a lock of class "${cls}" after one of class "${LOCK_CLASSES[this.#rank]!}"; locks are taken in the order ${LOCK_CLASSES.join(", ")} (docs/stores.md)`,
      );
    }
    this.#rank = rank;
  }

  row(scope: Scope, invocationId: string, what: string): void {
    const k = invKey(scope, invocationId);
    if (this.#rows.has(k)) return;
    this.take("invocation rows", what);
    this.#rows.add(k);
  }

  holds(scope: Scope, invocationId: string): boolean {
    return this.#rows.has(invKey(scope, invocationId));
  }
}

/** The guarded transaction: checks, lock order, then the store's own method. */
class GuardedTx implements StoreTx {
  readonly #tx: StoreTx;
  readonly #locks = new LockOrder();

  constructor(tx: StoreTx) {
    this.#tx = tx;
  }

  async lock(scope: Scope, keys: string[]): Promise<void> {
    checkStoreScope(scope);
    if (!Array.isArray(keys)) throw bad("lock keys must be a list");
    for (const k of keys) id(k, "a lock key", STORE_LIMITS.key);
    // One call's keys are taken in the store's own global key order, so a call that includes the
    // journal may hold other keys too; after it, nothing but the journal class remains.
    if (keys.includes("journal")) {
      this.#locks.take("journal", "lock(journal)");
    } else if (keys.length > 0) {
      this.#locks.take("keys", "lock");
    }
    return this.#tx.lock(scope, keys);
  }

  async consumeDecision(scope: Scope, rec: ConsumedDecision): Promise<boolean> {
    checkStoreScope(scope);
    record(scope, rec, "consumed decision");
    id(rec.decisionId, "decisionId");
    id(rec.attemptId, "attemptId");
    return this.#tx.consumeDecision(scope, rec);
  }

  async getConsumedDecision(scope: Scope, decisionId: string): Promise<ConsumedDecision | null> {
    checkStoreScope(scope);
    id(decisionId, "decisionId");
    return this.#tx.getConsumedDecision(scope, decisionId);
  }

  async getIdempotency(scope: Scope, action: string, idempotencyKey: string): Promise<IdempotencyRecord | null> {
    checkStoreScope(scope);
    id(action, "action");
    id(idempotencyKey, "idempotencyKey", STORE_LIMITS.key);
    return this.#tx.getIdempotency(scope, action, idempotencyKey);
  }

  async putIdempotency(scope: Scope, rec: IdempotencyRecord): Promise<void> {
    checkStoreScope(scope);
    record(scope, rec, "idempotency record");
    id(rec.action, "action");
    id(rec.idempotencyKey, "idempotencyKey", STORE_LIMITS.key);
    return this.#tx.putIdempotency(scope, rec);
  }

  async insertAttempt(scope: Scope, rec: AttemptRecord): Promise<number> {
    checkStoreScope(scope);
    record(scope, rec, "attempt");
    id(rec.attemptId, "attemptId");
    this.#locks.take("attempt counter", "insertAttempt");
    return this.#tx.insertAttempt(scope, rec);
  }

  async updateAttempt(scope: Scope, rec: AttemptRecord): Promise<void> {
    checkStoreScope(scope);
    record(scope, rec, "attempt");
    id(rec.attemptId, "attemptId");
    return this.#tx.updateAttempt(scope, rec);
  }

  async getAttempt(scope: Scope, attemptId: string): Promise<AttemptRecord | null> {
    checkStoreScope(scope);
    id(attemptId, "attemptId");
    return this.#tx.getAttempt(scope, attemptId);
  }

  async listAttempts(scope: Scope, opts?: ListOptions & { invocationId?: string; afterSeq?: number }): Promise<AttemptRecord[]> {
    checkStoreScope(scope);
    limit(opts);
    optId(opts?.invocationId, "invocationId");
    return this.#tx.listAttempts(scope, opts);
  }

  async journalHead(scope: Scope): Promise<{ seq: number; hash: string } | null> {
    checkStoreScope(scope);
    return this.#tx.journalHead(scope);
  }

  async journalIdsPresent(scope: Scope, ids: string[]): Promise<Set<string>> {
    checkStoreScope(scope);
    if (!Array.isArray(ids)) throw bad("ids must be a list");
    return this.#tx.journalIdsPresent(scope, ids);
  }

  async insertJournal(scope: Scope, entries: JournalEntry[]): Promise<void> {
    checkStoreScope(scope);
    if (!Array.isArray(entries)) throw bad("entries must be a list");
    if (entries.length > STORE_LIMITS.batch) throw bad(`at most ${STORE_LIMITS.batch} entries in one call`);
    for (const e of entries) record(scope, e, "journal entry");
    this.#locks.take("journal", "insertJournal");
    return this.#tx.insertJournal(scope, entries);
  }

  async insertUnsealed(scope: Scope, entries: UnsealedEntry[]): Promise<string[]> {
    checkStoreScope(scope);
    if (!Array.isArray(entries)) throw bad("entries must be a list");
    if (entries.length > STORE_LIMITS.batch) throw bad(`at most ${STORE_LIMITS.batch} entries in one call`);
    for (const e of entries) {
      record(scope, e, "journal entry");
      id(e.id, "journal entry id", STORE_LIMITS.key);
    }
    // Unsealed entries take no lock (docs/journal.md): no lock class.
    return this.#tx.insertUnsealed(scope, entries);
  }

  async listUnsealed(scope: Scope, opts?: ListOptions): Promise<UnsealedEntry[]> {
    checkStoreScope(scope);
    limit(opts);
    return this.#tx.listUnsealed(scope, opts);
  }

  async sealJournal(scope: Scope, entries: JournalEntry[]): Promise<void> {
    checkStoreScope(scope);
    if (!Array.isArray(entries)) throw bad("entries must be a list");
    for (const e of entries) record(scope, e, "journal entry");
    this.#locks.take("journal", "sealJournal");
    return this.#tx.sealJournal(scope, entries);
  }

  async unsealedScopes(max: number): Promise<Array<Scope & { oldestAt: number }>> {
    nonNegInt(max, "limit");
    return this.#tx.unsealedScopes(max);
  }

  async journalScopes(max: number, after?: Scope): Promise<JournalScopeState[]> {
    nonNegInt(max, "limit");
    if (after !== undefined) checkStoreScope(after);
    return this.#tx.journalScopes(max, after);
  }

  async readJournal(scope: Scope, opts?: ListOptions & { fromSeq?: number }): Promise<JournalEntry[]> {
    checkStoreScope(scope);
    limit(opts);
    return this.#tx.readJournal(scope, opts);
  }

  async insertCheckpoint(scope: Scope, cp: JournalCheckpoint): Promise<void> {
    checkStoreScope(scope);
    record(scope, cp, "journal checkpoint");
    return this.#tx.insertCheckpoint(scope, cp);
  }

  async listCheckpoints(scope: Scope): Promise<JournalCheckpoint[]> {
    checkStoreScope(scope);
    return this.#tx.listCheckpoints(scope);
  }

  async journalArchivedThrough(scope: Scope): Promise<number> {
    checkStoreScope(scope);
    return this.#tx.journalArchivedThrough(scope);
  }

  async setJournalArchivedThrough(scope: Scope, seq: number): Promise<void> {
    checkStoreScope(scope);
    if (!Number.isSafeInteger(seq) || seq < 0) throw new WritError("INVALID_ARGUMENT", "the archive watermark must be a non-negative integer seq");
    return this.#tx.setJournalArchivedThrough(scope, seq);
  }

  async pruneJournal(scope: Scope, throughSeq: number, limit: number, writtenBefore?: number): Promise<number> {
    checkStoreScope(scope);
    if (!Number.isSafeInteger(throughSeq) || throughSeq < 0) throw new WritError("INVALID_ARGUMENT", "pruneJournal: throughSeq must be a non-negative integer seq");
    if (!Number.isSafeInteger(limit) || limit < 1) throw new WritError("INVALID_ARGUMENT", "pruneJournal: limit must be a positive integer");
    if (writtenBefore !== undefined) nonNegInt(writtenBefore, "writtenBefore");
    return this.#tx.pruneJournal(scope, throughSeq, limit, writtenBefore);
  }

  async insertInvocation(scope: Scope, inv: Invocation): Promise<void> {
    checkStoreScope(scope);
    record(scope, inv, "invocation");
    id(inv.invocationId, "invocationId");
    id(inv.action, "action");
    id(inv.idempotencyKey, "idempotencyKey", STORE_LIMITS.key);
    return this.#tx.insertInvocation(scope, inv);
  }

  async getInvocation(scope: Scope, invocationId: string, opts?: { forUpdate?: boolean }): Promise<Invocation | null> {
    checkStoreScope(scope);
    id(invocationId, "invocationId");
    if (opts?.forUpdate === true) this.#locks.row(scope, invocationId, "getInvocation(forUpdate)");
    return this.#tx.getInvocation(scope, invocationId, opts);
  }

  async findInvocationByKey(scope: Scope, action: string, idempotencyKey: string): Promise<Invocation | null> {
    checkStoreScope(scope);
    id(action, "action");
    id(idempotencyKey, "idempotencyKey", STORE_LIMITS.key);
    return this.#tx.findInvocationByKey(scope, action, idempotencyKey);
  }

  async listInvocations(scope: Scope, filter?: InvocationFilter): Promise<Invocation[]> {
    checkStoreScope(scope);
    limit(filter);
    optId(filter?.after, "after");
    return this.#tx.listInvocations(scope, filter);
  }

  async updateInvocation(scope: Scope, inv: Invocation, fence?: Fence): Promise<void> {
    checkStoreScope(scope);
    record(scope, inv, "invocation");
    id(inv.invocationId, "invocationId");
    id(inv.action, "action");
    id(inv.idempotencyKey, "idempotencyKey", STORE_LIMITS.key);
    fenceFor(fence, inv.invocationId);
    revOf(inv, "an invocation");
    this.#locks.row(scope, inv.invocationId, "updateInvocation");
    return this.#tx.updateInvocation(scope, inv, fence);
  }

  async assertLease(scope: Scope, fence: Fence): Promise<void> {
    checkStoreScope(scope);
    if (typeof fence !== "object" || fence === null) throw bad("a fence must be { invocationId, owner, token }");
    id(fence.invocationId, "fence invocationId");
    fenceFor(fence, fence.invocationId);
    this.#locks.row(scope, fence.invocationId, "assertLease");
    return this.#tx.assertLease(scope, fence);
  }

  async claimInvocations(opts: ClaimOptions): Promise<Invocation[]> {
    if (typeof opts !== "object" || opts === null) throw bad("claimInvocations needs options");
    id(opts.owner, "claimInvocations: owner");
    if (!Array.isArray(opts.tokens) || opts.tokens.length > STORE_LIMITS.batch) throw bad("claimInvocations: tokens must be a list");
    for (const t of opts.tokens) id(t, "claimInvocations: a token");
    nonNegInt(opts.limit, "claimInvocations: limit");
    this.#locks.take("invocation rows", "claimInvocations");
    const claimed = await this.#tx.claimInvocations(opts);
    for (const inv of claimed) this.#locks.row(inv, inv.invocationId, "claimInvocations");
    return claimed;
  }

  async heartbeat(owner: string, now: number, leaseMs: number): Promise<number> {
    id(owner, "heartbeat: owner");
    this.#locks.take("invocation rows", "heartbeat");
    return this.#tx.heartbeat(owner, now, leaseMs);
  }

  async nextRunAt(): Promise<number | null> {
    return this.#tx.nextRunAt();
  }

  async getSteps(scope: Scope, invocationId: string): Promise<StepCheckpoint[]> {
    checkStoreScope(scope);
    id(invocationId, "invocationId");
    return this.#tx.getSteps(scope, invocationId);
  }

  async putStep(scope: Scope, step: StepCheckpoint, fence?: Fence): Promise<void> {
    checkStoreScope(scope);
    record(scope, step, "step checkpoint");
    id(step.invocationId, "invocationId");
    nonNegInt(step.stepIndex, "stepIndex");
    id(step.attemptId, "attemptId");
    fenceFor(fence, step.invocationId);
    return this.#tx.putStep(scope, step, fence);
  }

  async insertReconciliation(scope: Scope, rec: ReconciliationRecord): Promise<void> {
    checkStoreScope(scope);
    record(scope, rec, "reconciliation");
    id(rec.reconciliationId, "reconciliationId");
    id(rec.invocationId, "invocationId");
    return this.#tx.insertReconciliation(scope, rec);
  }

  async updateReconciliation(scope: Scope, rec: ReconciliationRecord): Promise<void> {
    checkStoreScope(scope);
    record(scope, rec, "reconciliation");
    id(rec.reconciliationId, "reconciliationId");
    id(rec.invocationId, "invocationId");
    revOf(rec, "a reconciliation");
    return this.#tx.updateReconciliation(scope, rec);
  }

  async getReconciliation(scope: Scope, reconciliationId: string): Promise<ReconciliationRecord | null> {
    checkStoreScope(scope);
    id(reconciliationId, "reconciliationId");
    return this.#tx.getReconciliation(scope, reconciliationId);
  }

  async listUnknownKeys(scope: Scope, opts?: ListOptions): Promise<IdempotencyRecord[]> {
    checkStoreScope(scope);
    limit(opts);
    return this.#tx.listUnknownKeys(scope, opts);
  }

  async listReconciliations(scope: Scope, opts?: ListOptions & { status?: ReconciliationStatus; invocationId?: string }): Promise<ReconciliationRecord[]> {
    checkStoreScope(scope);
    limit(opts);
    optId(opts?.invocationId, "invocationId");
    return this.#tx.listReconciliations(scope, opts);
  }

  async putAuthority(scope: Scope, a: Authority): Promise<void> {
    checkStoreScope(scope);
    record(scope, a, "authority");
    id(a.authorityRef, "authorityRef");
    return this.#tx.putAuthority(scope, a);
  }

  async getAuthority(scope: Scope, authorityRef: string): Promise<Authority | null> {
    checkStoreScope(scope);
    id(authorityRef, "authorityRef");
    return this.#tx.getAuthority(scope, authorityRef);
  }

  async listAuthorities(scope: Scope, opts?: ListOptions): Promise<Authority[]> {
    checkStoreScope(scope);
    limit(opts);
    return this.#tx.listAuthorities(scope, opts);
  }

  async putApproval(scope: Scope, a: Approval): Promise<void> {
    checkStoreScope(scope);
    record(scope, a, "approval");
    id(a.approvalId, "approvalId");
    optId(a.invocationId, "invocationId");
    revOf(a, "an approval");
    return this.#tx.putApproval(scope, a);
  }

  async getApproval(scope: Scope, approvalId: string): Promise<Approval | null> {
    checkStoreScope(scope);
    id(approvalId, "approvalId");
    return this.#tx.getApproval(scope, approvalId);
  }

  async listApprovals(scope: Scope, opts?: ListOptions & { status?: Approval["status"] }): Promise<Approval[]> {
    checkStoreScope(scope);
    limit(opts);
    return this.#tx.listApprovals(scope, opts);
  }

  async putPolicyVersion(scope: Scope, v: PolicyVersion): Promise<void> {
    checkStoreScope(scope);
    record(scope, v, "policy version");
    return this.#tx.putPolicyVersion(scope, v);
  }

  async listPolicyVersions(scope: Scope): Promise<PolicyVersion[]> {
    checkStoreScope(scope);
    return this.#tx.listPolicyVersions(scope);
  }

  async insertCompletion(scope: Scope, c: CompletionRecord): Promise<void> {
    checkStoreScope(scope);
    record(scope, c, "completion");
    id(c.completionId, "completionId");
    id(c.connector, "connector");
    id(c.externalRef, "externalRef");
    optId(c.invocationId, "invocationId");
    return this.#tx.insertCompletion(scope, c);
  }

  async updateCompletion(scope: Scope, c: CompletionRecord): Promise<void> {
    checkStoreScope(scope);
    record(scope, c, "completion");
    id(c.completionId, "completionId");
    id(c.connector, "connector");
    id(c.externalRef, "externalRef");
    optId(c.invocationId, "invocationId");
    revOf(c, "a completion");
    return this.#tx.updateCompletion(scope, c);
  }

  async listCompletions(scope: Scope, connector: string, externalRef: string): Promise<CompletionRecord[]> {
    checkStoreScope(scope);
    id(connector, "connector");
    id(externalRef, "externalRef");
    return this.#tx.listCompletions(scope, connector, externalRef);
  }

  async findStepByExternalRef(scope: Scope, connector: string, externalRef: string): Promise<StepCheckpoint | null> {
    checkStoreScope(scope);
    id(connector, "connector");
    id(externalRef, "externalRef");
    return this.#tx.findStepByExternalRef(scope, connector, externalRef);
  }

  async rememberDelivery(scope: Scope, connector: string, deliveryId: string, at: number): Promise<boolean> {
    checkStoreScope(scope);
    id(connector, "connector");
    id(deliveryId, "deliveryId");
    return this.#tx.rememberDelivery(scope, connector, deliveryId, at);
  }

  async putApiKey(key: ApiKeyRecord): Promise<void> {
    if (typeof key !== "object" || key === null) throw bad("an API key must be an object");
    id(key.keyId, "keyId");
    id(key.tenantId, "tenantId");
    return this.#tx.putApiKey(key);
  }

  async getApiKey(keyId: string): Promise<ApiKeyRecord | null> {
    id(keyId, "keyId");
    return this.#tx.getApiKey(keyId);
  }

  async listApiKeys(tenantId: string): Promise<ApiKeyRecord[]> {
    id(tenantId, "tenantId");
    return this.#tx.listApiKeys(tenantId);
  }

  async getBreaker(scope: Scope, connector: string, operation: string): Promise<BreakerRecord | null> {
    checkStoreScope(scope);
    id(connector, "connector");
    id(operation, "operation");
    return this.#tx.getBreaker(scope, connector, operation);
  }

  async putBreaker(scope: Scope, rec: BreakerRecord): Promise<void> {
    checkStoreScope(scope);
    record(scope, rec, "breaker");
    id(rec.connector, "connector");
    id(rec.operation, "operation");
    if (!BREAKER_STATES.includes(rec.state)) throw bad(`breaker state must be one of ${BREAKER_STATES.join(", ")}`);
    nonNegInt(rec.failures, "breaker failures");
    optId(rec.probeHolder, "probeHolder");
    revOf(rec, "a breaker");
    // The breaker row is its own lock class, the last: nothing is locked after it.
    this.#locks.take("breakers", "putBreaker");
    return this.#tx.putBreaker(scope, rec);
  }

  async listBreakers(scope: Scope, opts?: ListOptions): Promise<BreakerRecord[]> {
    checkStoreScope(scope);
    limit(opts);
    return this.#tx.listBreakers(scope, opts);
  }

  async listOverdueParked(now: number, max: number): Promise<Invocation[]> {
    nonNegInt(max, "limit");
    return this.#tx.listOverdueParked(now, max);
  }

  async listExpiredPendingApprovals(now: number, max: number): Promise<Approval[]> {
    nonNegInt(max, "limit");
    return this.#tx.listExpiredPendingApprovals(now, max);
  }

  async listEarlyCompletions(receivedBefore: number, max: number, scope?: Scope): Promise<CompletionRecord[]> {
    nonNegInt(receivedBefore, "receivedBefore");
    nonNegInt(max, "limit");
    if (scope !== undefined) checkStoreScope(scope);
    return this.#tx.listEarlyCompletions(receivedBefore, max, scope);
  }

  // retention (docs/retention.md)
  async listEndedInvocations(opts: { endedBefore: number; limit: number; after?: EndedCursor }): Promise<EndedCursor[]> {
    if (typeof opts !== "object" || opts === null) throw bad("listEndedInvocations needs { endedBefore, limit }");
    nonNegInt(opts.endedBefore, "endedBefore");
    nonNegInt(opts.limit, "limit");
    const a = opts.after;
    if (a !== undefined) {
      if (typeof a !== "object" || a === null) throw bad("after must be { updatedAt, tenantId, spaceId, invocationId }");
      nonNegInt(a.updatedAt, "after.updatedAt");
      checkStoreScope(a);
      id(a.invocationId, "after.invocationId");
    }
    return this.#tx.listEndedInvocations(opts);
  }

  async journalNamesAbove(scope: Scope, aboveSeq: number, invocationIds: string[]): Promise<Set<string>> {
    checkStoreScope(scope);
    nonNegInt(aboveSeq, "aboveSeq");
    idList(invocationIds, "invocationIds");
    return this.#tx.journalNamesAbove(scope, aboveSeq, invocationIds);
  }

  async journalNamedSince(scope: Scope, aboveSeq: number): Promise<{ named: Set<string>; through: number }> {
    checkStoreScope(scope);
    nonNegInt(aboveSeq, "aboveSeq");
    return this.#tx.journalNamedSince(scope, aboveSeq);
  }

  async invocationHolds(scope: Scope, invocationIds: string[]): Promise<Map<string, InvocationHold>> {
    checkStoreScope(scope);
    idList(invocationIds, "invocationIds");
    return this.#tx.invocationHolds(scope, invocationIds);
  }

  async deleteEndedInvocations(scope: Scope, invocationIds: string[]): Promise<PrunedInvocations> {
    checkStoreScope(scope);
    idList(invocationIds, "invocationIds");
    if (new Set(invocationIds).size !== invocationIds.length) throw bad("deleteEndedInvocations: invocationIds must be distinct");
    // The store locks them in its own order, as one lock of the first class.
    for (const i of invocationIds) this.#locks.row(scope, i, "deleteEndedInvocations");
    return this.#tx.deleteEndedInvocations(scope, invocationIds);
  }

  async listBareIdempotency(opts: { before: number; limit: number; after?: BareCursor }): Promise<{ bare: IdempotencyRecord[]; next?: BareCursor }> {
    if (typeof opts !== "object" || opts === null) throw bad("listBareIdempotency needs { before, limit }");
    nonNegInt(opts.before, "before");
    nonNegInt(opts.limit, "limit");
    const a = opts.after;
    if (a !== undefined) {
      if (typeof a !== "object" || a === null) throw bad("after must be { updatedAt, tenantId, spaceId, action, idempotencyKey }");
      nonNegInt(a.updatedAt, "after.updatedAt");
      checkStoreScope(a);
      id(a.action, "after.action");
      id(a.idempotencyKey, "after.idempotencyKey", STORE_LIMITS.key);
    }
    return this.#tx.listBareIdempotency(opts);
  }

  async deleteBareExecutions(scope: Scope, keys: Array<{ action: string; idempotencyKey: string }>, before: number): Promise<PrunedInvocationRows> {
    checkStoreScope(scope);
    if (!Array.isArray(keys) || keys.length > STORE_LIMITS.batch) throw bad(`keys must be a list of at most ${STORE_LIMITS.batch}`);
    for (const k of keys) {
      if (typeof k !== "object" || k === null) throw bad("a key must be { action, idempotencyKey }");
      id(k.action, "action");
      id(k.idempotencyKey, "idempotencyKey", STORE_LIMITS.key);
    }
    nonNegInt(before, "before");
    return this.#tx.deleteBareExecutions(scope, keys, before);
  }

  async deleteAgedRecords(kind: AgedRecordKind, before: number, max: number): Promise<number> {
    agedKind(kind);
    nonNegInt(before, "before");
    nonNegInt(max, "limit");
    return this.#tx.deleteAgedRecords(kind, before, max);
  }

  async countAgedRecords(kind: AgedRecordKind, before: number): Promise<number> {
    agedKind(kind);
    nonNegInt(before, "before");
    return this.#tx.countAgedRecords(kind, before);
  }

  // notifications: tenant-level rows outside the lock classes (a dispatcher holds one subscription's row)
  async putSubscription(sub: Subscription): Promise<void> {
    if (typeof sub !== "object" || sub === null) throw bad("a subscription must be an object");
    id(sub.tenantId, "tenantId");
    id(sub.subscriptionId, "subscriptionId");
    if (typeof sub.url !== "string" || !Array.isArray(sub.events) || typeof sub.enabled !== "boolean") throw bad("a subscription needs a url, events and enabled");
    return this.#tx.putSubscription(sub);
  }

  async getSubscription(tenantId: string, subscriptionId: string): Promise<Subscription | null> {
    id(tenantId, "tenantId");
    id(subscriptionId, "subscriptionId");
    return this.#tx.getSubscription(tenantId, subscriptionId);
  }

  async listSubscriptions(tenantId: string): Promise<Subscription[]> {
    id(tenantId, "tenantId");
    return this.#tx.listSubscriptions(tenantId);
  }

  async deleteSubscription(tenantId: string, subscriptionId: string): Promise<boolean> {
    id(tenantId, "tenantId");
    id(subscriptionId, "subscriptionId");
    return this.#tx.deleteSubscription(tenantId, subscriptionId);
  }

  async claimSubscriptions(opts: SubscriptionClaimOptions): Promise<Subscription[]> {
    if (typeof opts !== "object" || opts === null) throw bad("claimSubscriptions needs options");
    id(opts.owner, "owner");
    nonNegInt(opts.now, "now");
    nonNegInt(opts.limit, "limit");
    if (!Number.isSafeInteger(opts.leaseMs) || opts.leaseMs <= 0) throw bad("leaseMs must be a positive integer");
    return this.#tx.claimSubscriptions(opts);
  }

  async holdSubscription(subscriptionId: string, owner: string, until: number): Promise<boolean> {
    id(subscriptionId, "subscriptionId");
    id(owner, "owner");
    nonNegInt(until, "until");
    return this.#tx.holdSubscription(subscriptionId, owner, until);
  }

  async notifyCursors(subscriptionId: string): Promise<Map<string, number>> {
    id(subscriptionId, "subscriptionId");
    return this.#tx.notifyCursors(subscriptionId);
  }

  async putNotifyCursor(subscriptionId: string, spaceId: string, seq: number): Promise<void> {
    id(subscriptionId, "subscriptionId");
    id(spaceId, "spaceId");
    nonNegInt(seq, "seq");
    return this.#tx.putNotifyCursor(subscriptionId, spaceId, seq);
  }

  async journalHeads(tenantId: string): Promise<Array<{ spaceId: string; seq: number }>> {
    id(tenantId, "tenantId");
    return this.#tx.journalHeads(tenantId);
  }

  async insertDeliveries(deliveries: Delivery[]): Promise<number> {
    if (!Array.isArray(deliveries)) throw bad("deliveries must be an array");
    if (deliveries.length > STORE_LIMITS.batch) throw bad(`at most ${STORE_LIMITS.batch} deliveries in one call`);
    for (const d of deliveries) delivery(d);
    return this.#tx.insertDeliveries(deliveries);
  }

  async getDelivery(tenantId: string, deliveryId: string): Promise<Delivery | null> {
    id(tenantId, "tenantId");
    id(deliveryId, "deliveryId");
    return this.#tx.getDelivery(tenantId, deliveryId);
  }

  async listDeliveries(tenantId: string, filter?: DeliveryFilter): Promise<Delivery[]> {
    id(tenantId, "tenantId");
    limit(filter);
    optId(filter?.subscriptionId, "subscriptionId");
    if (filter?.status !== undefined && !(DELIVERY_STATUSES as readonly string[]).includes(filter.status)) throw bad(`status must be one of ${DELIVERY_STATUSES.join(", ")}`);
    if (filter?.beforeSeq !== undefined) nonNegInt(filter.beforeSeq, "beforeSeq");
    return this.#tx.listDeliveries(tenantId, filter);
  }

  async nextDelivery(subscriptionId: string): Promise<Delivery | null> {
    id(subscriptionId, "subscriptionId");
    return this.#tx.nextDelivery(subscriptionId);
  }

  async updateDelivery(d: Delivery): Promise<void> {
    delivery(d);
    return this.#tx.updateDelivery(d);
  }
}

function delivery(d: Delivery): void {
  if (typeof d !== "object" || d === null) throw bad("a delivery must be an object");
  id(d.tenantId, "tenantId");
  id(d.deliveryId, "deliveryId");
  id(d.subscriptionId, "subscriptionId");
  id(d.eventId, "eventId");
  if (!(DELIVERY_STATUSES as readonly string[]).includes(d.status)) throw bad(`a delivery's status must be one of ${DELIVERY_STATUSES.join(", ")}`);
  if (typeof d.body !== "string") throw bad("a delivery's body must be a string");
  nonNegInt(d.nextAttemptAt, "nextAttemptAt");
}

const GUARDED = Symbol.for("writ.store.guarded");

/**
 * Wraps a store so every transaction (and read, where the store has a read path) runs behind the
 * shared input rules and the lock order.
 * Everything else (kind, migrate, close, onWake and store-specific extras) passes through.
 * Wrapping twice is a no-op.
 */
export function guardStore<S extends Store>(store: S): S {
  if ((store as unknown as Record<symbol, unknown>)[GUARDED] === true) return store;
  const transact = <T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> => {
    if (typeof fn !== "function") return Promise.reject(new WritError("INVALID_ARGUMENT", "transact needs a function"));
    return store.transact((tx) => fn(new GuardedTx(tx)));
  };
  const read =
    store.read === undefined
      ? undefined
      : <T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> => {
          if (typeof fn !== "function") return Promise.reject(new WritError("INVALID_ARGUMENT", "read needs a function"));
          return store.read!<T>((tx) => fn(new GuardedTx(tx)));
        };
  const transitions = store.transitions === undefined ? undefined : guardTransitions(store.transitions);
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === GUARDED) return true;
      if (prop === "transact") return transact;
      if (prop === "read") return read;
      if (prop === "transitions") return transitions;
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/**
 * A transaction that does nothing: a `GuardedTx` over it checks a transition's inputs and lock
 * order exactly as the generic composition (`genericTransitions`) would, without a store.
 */
const DRY_TX = new Proxy({} as StoreTx, {
  get: (_t, prop) => {
    if (prop === "then") return undefined;
    const name = String(prop);
    const answer = name === "consumeDecision" ? true : name === "insertUnsealed" || name === "claimInvocations" || name === "getSteps" || name.startsWith("list") ? [] : null;
    return async (): Promise<unknown> => answer;
  },
});

/**
 * Native transitions behind the same input rules and lock order as their generic composition:
 * each call is first replayed, in the generic composition's order, on a guarded dry transaction.
 */
function guardTransitions(t: StoreTransitions): StoreTransitions {
  const dry = async (fn: (tx: StoreTx) => Promise<unknown>): Promise<void> => {
    await fn(new GuardedTx(DRY_TX));
  };
  const fenced = async (tx: StoreTx, scope: Scope, fence: Fence | undefined): Promise<void> => {
    if (fence !== undefined) await tx.assertLease(scope, fence);
  };
  const arg = (v: unknown, what: string): void => {
    if (typeof v !== "object" || v === null) throw bad(`${what} needs an input object`);
  };
  // The input rules of each write transition, checked before the store sees the call.
  const checks = {
    admit: async (scope: Scope, input: AdmitInput): Promise<void> => {
      arg(input, "admit");
      await dry(async (tx) => {
        await tx.lock(scope, [`admit:${String(input.invocation?.action)}:${String(input.invocation?.idempotencyKey)}`]);
        await tx.insertInvocation(scope, input.invocation);
        await tx.insertUnsealed(scope, input.entries);
      });
    },
    begin: async (scope: Scope, input: BeginInput): Promise<void> => {
      arg(input, "begin");
      await dry(async (tx) => {
        await fenced(tx, scope, input.fence);
        await tx.lock(scope, input.locks);
        if (input.expect?.authority) id(input.expect.authority.authorityRef, "authorityRef");
        if (input.expect?.approval) id(input.expect.approval.approvalId, "approvalId");
        if (typeof input.expect?.steps !== "string") throw bad("begin: expect.steps must be a string");
        await beginWrites(tx, scope, input);
      });
    },
    record: async (scope: Scope, input: RecordInput): Promise<void> => {
      arg(input, "record");
      await dry(async (tx) => {
        await fenced(tx, scope, input.fence);
        await recordWrites(tx, scope, input);
      });
    },
    advance: async (scope: Scope, input: AdvanceInput): Promise<void> => {
      arg(input, "advance");
      await dry(async (tx) => {
        await fenced(tx, scope, input.fence);
        await advanceWrites(tx, scope, input);
      });
    },
    settle: async (scope: Scope, input: SettleInput): Promise<void> => {
      arg(input, "settle");
      await dry((tx) => settleWrites(tx, scope, input));
    },
  };
  const checkMember = (m: BatchMember): Promise<void> => {
    if (typeof m !== "object" || m === null || !Object.hasOwn(checks, String(m.kind))) {
      return Promise.reject(bad(`batch: a member's kind must be one of ${Object.keys(checks).join(", ")}`));
    }
    return (checks[m.kind] as (scope: Scope, input: unknown) => Promise<void>)(m.scope, m.input);
  };
  return {
    async admit(scope, input) {
      await checks.admit(scope, input);
      return t.admit(scope, input);
    },
    async begin(scope, input) {
      await checks.begin(scope, input);
      return t.begin(scope, input);
    },
    async record(scope, input) {
      await checks.record(scope, input);
      return t.record(scope, input);
    },
    async advance(scope, input) {
      await checks.advance(scope, input);
      return t.advance(scope, input);
    },
    async settle(scope, input) {
      await checks.settle(scope, input);
      return t.settle(scope, input);
    },
    async batch(members) {
      if (!Array.isArray(members)) throw bad("batch needs an array of members");
      // A member that breaks an input rule fails alone; the others go to the store together.
      const checked = await Promise.all(
        members.map((m) =>
          checkMember(m).then(
            () => null,
            (error: unknown): BatchOutcome => ({ ok: false, error }),
          ),
        ),
      );
      const valid = members.filter((_, i) => checked[i] === null);
      const applied = valid.length > 0 ? await t.batch(valid) : [];
      let next = 0;
      return checked.map((c) => c ?? applied[next++]!);
    },
    async prepare(scope, input) {
      arg(input, "prepare");
      await dry(async (tx) => {
        await tx.getSteps(scope, input.invocationId);
        await tx.getAuthority(scope, input.authorityRef);
        if (input.approvalId !== undefined) await tx.getApproval(scope, input.approvalId);
        await tx.getInvocation(scope, input.invocationId);
        if (input.breakers !== undefined && !Array.isArray(input.breakers)) throw bad("prepare: breakers must be an array");
        for (const b of input.breakers ?? []) await tx.getBreaker(scope, b?.connector, b?.operation);
      });
      return t.prepare(scope, input);
    },
    async claim(opts) {
      await dry((tx) => tx.claimInvocations(opts));
      return t.claim(opts);
    },
    ...(t.admitClaimed !== undefined
      ? {
          async admitClaimed(scope: Scope, input: AdmitInput, claim: ClaimOptions, breakers: Array<{ connector: string; operation: string }>) {
            await checks.admit(scope, input);
            await dry((tx) => tx.claimInvocations(claim));
            if (!Array.isArray(claim.tokens) || claim.tokens.length < 1) throw bad("admitClaimed: the claim needs one lease token");
            if (!Array.isArray(breakers)) throw bad("admitClaimed: breakers must be an array");
            for (const b of breakers) await dry((tx) => tx.getBreaker(scope, b?.connector, b?.operation));
            return t.admitClaimed!(scope, input, claim, breakers);
          },
        }
      : {}),
    ...(t.claimPrepared !== undefined
      ? {
          async claimPrepared(opts: ClaimOptions, breakers: Array<{ connector: string; operation: string }>) {
            await dry((tx) => tx.claimInvocations(opts));
            if (!Array.isArray(breakers)) throw bad("claimPrepared: breakers must be an array");
            for (const b of breakers) await dry((tx) => tx.getBreaker({ tenantId: "t", spaceId: "s" }, b?.connector, b?.operation));
            return t.claimPrepared!(opts, breakers);
          },
        }
      : {}),
    ...(t.readUnsealed !== undefined && t.sealIfHead !== undefined
      ? {
          async readUnsealed(scope: Scope, max: number) {
            await dry((tx) => tx.listUnsealed(scope, { limit: max }));
            return t.readUnsealed!(scope, max);
          },
          async sealIfHead(scope: Scope, headSeq: number, entries: JournalEntry[]) {
            nonNegInt(headSeq, "sealIfHead: headSeq");
            await dry((tx) => tx.sealJournal(scope, entries));
            return t.sealIfHead!(scope, headSeq, entries);
          },
        }
      : {}),
    ...(t.readUnsealedMany !== undefined && t.sealIfHeadMany !== undefined
      ? {
          async readUnsealedMany(scopes: Scope[], max: number) {
            if (!Array.isArray(scopes)) throw bad("readUnsealedMany needs an array of scopes");
            for (const sc of scopes) await dry((tx) => tx.listUnsealed(sc, { limit: max }));
            return t.readUnsealedMany!(scopes, max);
          },
          async sealIfHeadMany(seals: Array<{ scope: Scope; headSeq: number; entries: JournalEntry[] }>) {
            if (!Array.isArray(seals)) throw bad("sealIfHeadMany needs an array of seals");
            // A seal that breaks an input rule fails alone; the others go to the store together.
            const checked = await Promise.all(
              seals.map(async (x): Promise<BatchOutcome<boolean> | null> => {
                try {
                  nonNegInt(x?.headSeq, "sealIfHead: headSeq");
                  await dry((tx) => tx.sealJournal(x.scope, x.entries));
                  return null;
                } catch (error) {
                  return { ok: false, error };
                }
              }),
            );
            const valid = seals.filter((_, i) => checked[i] === null);
            const applied = valid.length > 0 ? await t.sealIfHeadMany!(valid) : [];
            let next = 0;
            return checked.map((c) => c ?? applied[next++]!);
          },
        }
      : {}),
  };
}

/**
 * The next revision of a row whose writer read `expected`, for stores that check in code
 * (docs/stores.md, "Conditional writes"): NOT_FOUND when the row is missing (`stored`
 * undefined), STALE when it moved on since the read. A missing `expected` reads as 0.
 */
export function nextRevision(stored: number | undefined, expected: number | undefined, what: string): number {
  if (stored === undefined) throw new WritError("NOT_FOUND", `no ${what} in this scope`);
  if (stored !== (expected ?? 0)) throw new WritError("STALE", `${what} changed since it was read (rev ${expected ?? 0}, now ${stored})`);
  return stored + 1;
}
