/**
 * The StoreTx of the PostgreSQL store: checks arguments (scope stamps, fences), then runs the
 * one statement each operation needs on the transaction's connection.
 */
import { WritError } from "../../core/errors.js";
import { assertScope, type AgedRecordKind, type BareCursor, type ClaimOptions, type EndedCursor, type InvocationHold, type PrunedInvocations, type PrunedInvocationRows, type DeliveryFilter, type InvocationFilter, type JournalScopeState, type ListOptions, type StoreTx, type SubscriptionClaimOptions } from "../../core/store.js";
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
} from "../../core/types.js";
import * as claims from "./postgres-claims.js";
import type { Exec } from "./postgres-exec.js";
import * as execution from "./postgres-execution.js";
import * as invocations from "./postgres-invocations.js";
import * as journal from "./postgres-journal.js";
import { lockKeys } from "./postgres-locks.js";
import * as notify from "./postgres-notifications.js";
import * as records from "./postgres-records.js";
import * as retention from "./postgres-retention.js";

function checkScope(scope: Scope): void {
  if (typeof scope !== "object" || scope === null || typeof scope.tenantId !== "string" || typeof scope.spaceId !== "string") {
    throw new WritError("INVALID_ARGUMENT", "scope must be { tenantId: string, spaceId: string }");
  }
}

function checkFence(fence: Fence, invocationId: string): void {
  if (fence.invocationId !== invocationId) throw new WritError("INVALID_ARGUMENT", "the fence names another invocation than the one written");
}

/** One transaction's view of the store. Unusable once its transaction has ended. */
export class PostgresTx implements StoreTx {
  readonly #x: Exec;
  #ended = false;
  readonly #journaled = new Map<string, Scope>();

  constructor(x: Exec) {
    this.#x = x;
  }

  /** The scopes this transaction wrote unsealed journal entries to (hinted to the sequencer after commit). */
  get journaled(): Scope[] {
    return [...this.#journaled.values()];
  }

  /** Called by `transact` when the transaction commits or rolls back. */
  end(): void {
    this.#ended = true;
  }

  /** The connection, after checking the transaction is still open and the scope well formed. */
  #in(scope?: Scope): Exec {
    if (this.#ended) throw new WritError("INVALID_STATE", "this transaction has ended; use the tx only inside its transact callback");
    if (scope !== undefined) checkScope(scope);
    return this.#x;
  }

  async lock(scope: Scope, keys: string[]): Promise<void> {
    return lockKeys(this.#in(scope), scope, keys);
  }

  async consumeDecision(scope: Scope, rec: ConsumedDecision): Promise<boolean> {
    const x = this.#in(scope);
    return execution.consumeDecision(x, scope, rec);
  }

  async getConsumedDecision(scope: Scope, decisionId: string): Promise<ConsumedDecision | null> {
    return execution.getConsumedDecision(this.#in(scope), scope, decisionId);
  }

  async getIdempotency(scope: Scope, action: string, idempotencyKey: string): Promise<IdempotencyRecord | null> {
    return execution.getIdempotency(this.#in(scope), scope, action, idempotencyKey);
  }

  async listUnknownKeys(scope: Scope, opts?: ListOptions): Promise<IdempotencyRecord[]> {
    return execution.listUnknownKeys(this.#in(scope), scope, opts?.limit);
  }

  async putIdempotency(scope: Scope, rec: IdempotencyRecord): Promise<void> {
    const x = this.#in(scope);
    return execution.putIdempotency(x, scope, rec);
  }

  async insertAttempt(scope: Scope, rec: AttemptRecord): Promise<number> {
    const x = this.#in(scope);
    return execution.insertAttempt(x, scope, rec);
  }

  async updateAttempt(scope: Scope, rec: AttemptRecord): Promise<void> {
    const x = this.#in(scope);
    return execution.updateAttempt(x, scope, rec);
  }

  async getAttempt(scope: Scope, attemptId: string): Promise<AttemptRecord | null> {
    return execution.getAttempt(this.#in(scope), scope, attemptId);
  }

  async listAttempts(scope: Scope, opts?: ListOptions & { invocationId?: string; afterSeq?: number }): Promise<AttemptRecord[]> {
    return execution.listAttempts(this.#in(scope), scope, opts);
  }

  async journalHead(scope: Scope): Promise<{ seq: number; hash: string } | null> {
    return journal.journalHead(this.#in(scope), scope);
  }

  async journalIdsPresent(scope: Scope, ids: string[]): Promise<Set<string>> {
    return journal.journalIdsPresent(this.#in(scope), scope, ids);
  }

  async insertUnsealed(scope: Scope, entries: UnsealedEntry[]): Promise<string[]> {
    const x = this.#in(scope);
    if (!Array.isArray(entries)) throw new WritError("INVALID_ARGUMENT", "insertUnsealed needs an array of entries");
    for (const e of entries) {
      assertScope(scope, e, "journal entry");
      if (typeof e.id !== "string" || e.id === "") throw new WritError("INVALID_ARGUMENT", "a journal entry needs a non-empty string id");
    }
    const written = await journal.insertUnsealed(x, scope, entries);
    if (written.length > 0) this.#journaled.set(JSON.stringify([scope.tenantId, scope.spaceId]), { tenantId: scope.tenantId, spaceId: scope.spaceId });
    return written;
  }

  async listUnsealed(scope: Scope, opts?: ListOptions): Promise<UnsealedEntry[]> {
    return journal.listUnsealed(this.#in(scope), scope, opts);
  }

  async sealJournal(scope: Scope, entries: JournalEntry[]): Promise<void> {
    const x = this.#in(scope);
    for (const e of entries) assertScope(scope, e, "journal entry");
    return journal.sealJournal(x, scope, entries);
  }

  async journalScopes(limit: number, after?: Scope): Promise<JournalScopeState[]> {
    return journal.journalScopes(this.#in(), limit, after);
  }

  async unsealedScopes(limit: number): Promise<Array<Scope & { oldestAt: number }>> {
    return journal.unsealedScopes(this.#in(), limit);
  }

  async insertJournal(scope: Scope, entries: JournalEntry[]): Promise<void> {
    const x = this.#in(scope);
    for (const e of entries) assertScope(scope, e, "journal entry");
    return journal.insertJournal(x, scope, entries);
  }

  async readJournal(scope: Scope, opts?: ListOptions & { fromSeq?: number }): Promise<JournalEntry[]> {
    return journal.readJournal(this.#in(scope), scope, opts);
  }

  async insertCheckpoint(scope: Scope, cp: JournalCheckpoint): Promise<void> {
    const x = this.#in(scope);
    assertScope(scope, cp, "journal checkpoint");
    return journal.insertCheckpoint(x, scope, cp);
  }

  async listCheckpoints(scope: Scope): Promise<JournalCheckpoint[]> {
    return journal.listCheckpoints(this.#in(scope), scope);
  }

  async journalArchivedThrough(scope: Scope): Promise<number> {
    return journal.journalArchivedThrough(this.#in(scope), scope);
  }

  async setJournalArchivedThrough(scope: Scope, seq: number): Promise<void> {
    return journal.setJournalArchivedThrough(this.#in(scope), scope, seq);
  }

  async pruneJournal(scope: Scope, throughSeq: number, limit: number, writtenBefore?: number): Promise<number> {
    return journal.pruneJournal(this.#in(scope), scope, throughSeq, limit, writtenBefore);
  }

  async insertInvocation(scope: Scope, inv: Invocation): Promise<void> {
    const x = this.#in(scope);
    return invocations.insertInvocation(x, scope, inv);
  }

  async getInvocation(scope: Scope, invocationId: string, opts?: { forUpdate?: boolean }): Promise<Invocation | null> {
    return invocations.getInvocation(this.#in(scope), scope, invocationId, opts?.forUpdate === true);
  }

  async findInvocationByKey(scope: Scope, action: string, idempotencyKey: string): Promise<Invocation | null> {
    return invocations.findInvocationByKey(this.#in(scope), scope, action, idempotencyKey);
  }

  async listInvocations(scope: Scope, filter?: InvocationFilter): Promise<Invocation[]> {
    return invocations.listInvocations(this.#in(scope), scope, filter);
  }

  async updateInvocation(scope: Scope, inv: Invocation, fence?: Fence): Promise<void> {
    const x = this.#in(scope);
    if (fence === undefined) return invocations.updateInvocation(x, scope, inv);
    checkFence(fence, inv.invocationId);
    return invocations.updateInvocationFenced(x, scope, inv, fence);
  }

  async assertLease(scope: Scope, fence: Fence): Promise<void> {
    return invocations.assertLease(this.#in(scope), scope, fence);
  }

  async claimInvocations(opts: ClaimOptions): Promise<Invocation[]> {
    return claims.claimInvocations(this.#in(), opts);
  }

  async heartbeat(owner: string, now: number, leaseMs: number): Promise<number> {
    return claims.heartbeat(this.#in(), owner, now, leaseMs);
  }

  async nextRunAt(): Promise<number | null> {
    return claims.nextRunAt(this.#in());
  }

  async getSteps(scope: Scope, invocationId: string): Promise<StepCheckpoint[]> {
    return execution.getSteps(this.#in(scope), scope, invocationId);
  }

  async putStep(scope: Scope, step: StepCheckpoint, fence?: Fence): Promise<void> {
    const x = this.#in(scope);
    if (!Number.isSafeInteger(step.stepIndex) || step.stepIndex < 0) throw new WritError("INVALID_ARGUMENT", "stepIndex must be a non-negative integer");
    if (fence === undefined) return execution.putStep(x, scope, step);
    checkFence(fence, step.invocationId);
    return execution.putStepFenced(x, scope, step, fence);
  }

  async insertReconciliation(scope: Scope, rec: ReconciliationRecord): Promise<void> {
    const x = this.#in(scope);
    return records.insertReconciliation(x, scope, rec);
  }

  async updateReconciliation(scope: Scope, rec: ReconciliationRecord): Promise<void> {
    const x = this.#in(scope);
    return records.updateReconciliation(x, scope, rec);
  }

  async getReconciliation(scope: Scope, reconciliationId: string): Promise<ReconciliationRecord | null> {
    return records.getReconciliation(this.#in(scope), scope, reconciliationId);
  }

  async listReconciliations(scope: Scope, opts?: ListOptions & { status?: ReconciliationStatus; invocationId?: string }): Promise<ReconciliationRecord[]> {
    return records.listReconciliations(this.#in(scope), scope, opts);
  }

  async putAuthority(scope: Scope, a: Authority): Promise<void> {
    const x = this.#in(scope);
    return records.putAuthority(x, scope, a);
  }

  async getAuthority(scope: Scope, authorityRef: string): Promise<Authority | null> {
    return records.getAuthority(this.#in(scope), scope, authorityRef);
  }

  async listAuthorities(scope: Scope, opts?: ListOptions): Promise<Authority[]> {
    return records.listAuthorities(this.#in(scope), scope, opts);
  }

  async putApproval(scope: Scope, a: Approval): Promise<void> {
    const x = this.#in(scope);
    return records.putApproval(x, scope, a);
  }

  async getApproval(scope: Scope, approvalId: string): Promise<Approval | null> {
    return records.getApproval(this.#in(scope), scope, approvalId);
  }

  async listApprovals(scope: Scope, opts?: ListOptions & { status?: Approval["status"] }): Promise<Approval[]> {
    return records.listApprovals(this.#in(scope), scope, opts);
  }

  async putPolicyVersion(scope: Scope, v: PolicyVersion): Promise<void> {
    const x = this.#in(scope);
    return records.putPolicyVersion(x, scope, v);
  }

  async listPolicyVersions(scope: Scope): Promise<PolicyVersion[]> {
    return records.listPolicyVersions(this.#in(scope), scope);
  }

  async insertCompletion(scope: Scope, c: CompletionRecord): Promise<void> {
    const x = this.#in(scope);
    return records.insertCompletion(x, scope, c);
  }

  async updateCompletion(scope: Scope, c: CompletionRecord): Promise<void> {
    const x = this.#in(scope);
    return records.updateCompletion(x, scope, c);
  }

  async listCompletions(scope: Scope, connector: string, externalRef: string): Promise<CompletionRecord[]> {
    return records.listCompletions(this.#in(scope), scope, connector, externalRef);
  }

  async findStepByExternalRef(scope: Scope, connector: string, externalRef: string): Promise<StepCheckpoint | null> {
    return execution.findStepByExternalRef(this.#in(scope), scope, connector, externalRef);
  }

  async rememberDelivery(scope: Scope, connector: string, deliveryId: string, at: number): Promise<boolean> {
    return records.rememberDelivery(this.#in(scope), scope, connector, deliveryId, at);
  }

  async getBreaker(scope: Scope, connector: string, operation: string): Promise<BreakerRecord | null> {
    return records.getBreaker(this.#in(scope), scope, connector, operation);
  }

  async putBreaker(scope: Scope, rec: BreakerRecord): Promise<void> {
    return records.putBreaker(this.#in(scope), scope, rec);
  }

  async listBreakers(scope: Scope, opts?: ListOptions): Promise<BreakerRecord[]> {
    return records.listBreakers(this.#in(scope), scope, opts);
  }

  async putApiKey(key: ApiKeyRecord): Promise<void> {
    const x = this.#in();
    if (typeof key?.tenantId !== "string" || typeof key.keyId !== "string") throw new WritError("INVALID_ARGUMENT", "an API key needs keyId and tenantId strings");
    return records.putApiKey(x, key);
  }

  async getApiKey(keyId: string): Promise<ApiKeyRecord | null> {
    return records.getApiKey(this.#in(), keyId);
  }

  async listApiKeys(tenantId: string): Promise<ApiKeyRecord[]> {
    return records.listApiKeys(this.#in(), tenantId);
  }

  async listOverdueParked(now: number, limit: number): Promise<Invocation[]> {
    return claims.listOverdueParked(this.#in(), now, limit);
  }

  async listExpiredPendingApprovals(now: number, limit: number): Promise<Approval[]> {
    return claims.listExpiredPendingApprovals(this.#in(), now, limit);
  }

  async listEarlyCompletions(receivedBefore: number, limit: number, scope?: Scope): Promise<CompletionRecord[]> {
    return claims.listEarlyCompletions(scope ? this.#in(scope) : this.#in(), receivedBefore, limit, scope);
  }

  // retention (docs/retention.md)

  async listEndedInvocations(opts: { endedBefore: number; limit: number; after?: EndedCursor }): Promise<EndedCursor[]> {
    return retention.listEndedInvocations(this.#in(), opts);
  }

  async journalNamesAbove(scope: Scope, aboveSeq: number, invocationIds: string[]): Promise<Set<string>> {
    return retention.journalNamesAbove(this.#in(scope), scope, aboveSeq, invocationIds);
  }

  async journalNamedSince(scope: Scope, aboveSeq: number): Promise<{ named: Set<string>; through: number }> {
    return retention.journalNamedSince(this.#in(scope), scope, aboveSeq);
  }

  async invocationHolds(scope: Scope, invocationIds: string[]): Promise<Map<string, InvocationHold>> {
    return retention.invocationHolds(this.#in(scope), scope, invocationIds);
  }

  async deleteEndedInvocations(scope: Scope, invocationIds: string[]): Promise<PrunedInvocations> {
    return retention.deleteEndedInvocations(this.#in(scope), scope, invocationIds);
  }

  async listBareIdempotency(opts: { before: number; limit: number; after?: BareCursor }): Promise<{ bare: IdempotencyRecord[]; next?: BareCursor }> {
    return retention.listBareIdempotency(this.#in(), opts);
  }

  async deleteBareExecutions(scope: Scope, keys: Array<{ action: string; idempotencyKey: string }>, before: number): Promise<PrunedInvocationRows> {
    return retention.deleteBareExecutions(this.#in(scope), scope, keys, before);
  }

  async deleteAgedRecords(kind: AgedRecordKind, before: number, limit: number): Promise<number> {
    return retention.deleteAgedRecords(this.#in(), kind, before, limit);
  }

  async countAgedRecords(kind: AgedRecordKind, before: number): Promise<number> {
    return retention.countAgedRecords(this.#in(), kind, before);
  }

  // notifications (docs/notifications.md)

  async putSubscription(sub: Subscription): Promise<void> {
    return notify.putSubscription(this.#in(), sub);
  }

  async getSubscription(tenantId: string, subscriptionId: string): Promise<Subscription | null> {
    return notify.getSubscription(this.#in(), tenantId, subscriptionId);
  }

  async listSubscriptions(tenantId: string): Promise<Subscription[]> {
    return notify.listSubscriptions(this.#in(), tenantId);
  }

  async deleteSubscription(tenantId: string, subscriptionId: string): Promise<boolean> {
    return notify.deleteSubscription(this.#in(), tenantId, subscriptionId);
  }

  async claimSubscriptions(opts: SubscriptionClaimOptions): Promise<Subscription[]> {
    return notify.claimSubscriptions(this.#in(), opts);
  }

  async holdSubscription(subscriptionId: string, owner: string, until: number): Promise<boolean> {
    return notify.holdSubscription(this.#in(), subscriptionId, owner, until);
  }

  async notifyCursors(subscriptionId: string): Promise<Map<string, number>> {
    return notify.notifyCursors(this.#in(), subscriptionId);
  }

  async putNotifyCursor(subscriptionId: string, spaceId: string, seq: number): Promise<void> {
    return notify.putNotifyCursor(this.#in(), subscriptionId, spaceId, seq);
  }

  async journalHeads(tenantId: string): Promise<Array<{ spaceId: string; seq: number }>> {
    return notify.journalHeads(this.#in(), tenantId);
  }

  async insertDeliveries(deliveries: Delivery[]): Promise<number> {
    return notify.insertDeliveries(this.#in(), deliveries);
  }

  async getDelivery(tenantId: string, deliveryId: string): Promise<Delivery | null> {
    return notify.getDelivery(this.#in(), tenantId, deliveryId);
  }

  async listDeliveries(tenantId: string, filter?: DeliveryFilter): Promise<Delivery[]> {
    return notify.listDeliveries(this.#in(), tenantId, filter);
  }

  async nextDelivery(subscriptionId: string): Promise<Delivery | null> {
    return notify.nextDelivery(this.#in(), subscriptionId);
  }

  async updateDelivery(d: Delivery): Promise<void> {
    return notify.updateDelivery(this.#in(), d);
  }
}
