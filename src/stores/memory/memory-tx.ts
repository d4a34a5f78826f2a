/**
 * The memory store's `StoreTx`: checks that the transaction is still open, gives the fault hook
 * its say, and hands each operation to the module that holds its records. Operation bodies are
 * synchronous, so an operation's effect is applied (and logged for undo) when it is called.
 */
import { WritError } from "../../core/errors.js";
import type { AgedRecordKind, BareCursor, ClaimOptions, DeliveryFilter, EndedCursor, InvocationFilter, InvocationHold, JournalScopeState, ListOptions, PrunedInvocationRows, PrunedInvocations, StoreTx, SubscriptionClaimOptions } from "../../core/store.js";
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
import * as claims from "./memory-claims.js";
import * as execution from "./memory-execution.js";
import * as invocations from "./memory-invocations.js";
import * as journal from "./memory-journal.js";
import * as notify from "./memory-notifications.js";
import * as records from "./memory-records.js";
import * as retention from "./memory-retention.js";
import { findScope, type MemoryState, type Work } from "./memory-state.js";

/** A point where the memory store's fault hook may throw: a `StoreTx` operation, or the commit. */
export type MemoryFaultPoint = keyof StoreTx | "commit";

export class MemoryTx implements StoreTx {
  readonly #w: Work;
  readonly #faults: ((point: MemoryFaultPoint) => void) | undefined;
  #open = true;

  constructor(state: MemoryState, faults: ((point: MemoryFaultPoint) => void) | undefined) {
    this.#w = { state, undo: [], wake: false, journaled: null };
    this.#faults = faults;
  }

  /** True when the committed transaction wrote a queued invocation. */
  get wake(): boolean {
    return this.#w.wake;
  }

  /** True when the committed transaction wrote unsealed journal entries. */
  get journaledAny(): boolean {
    return this.#w.journaled !== null && this.#w.journaled.size > 0;
  }

  /** The scopes the committed transaction wrote unsealed journal entries to. */
  get journaled(): Scope[] {
    return this.#w.journaled === null ? [] : [...this.#w.journaled.values()];
  }

  /** Ends the transaction, keeping its writes. */
  commit(): void {
    this.#faults?.("commit");
    this.#open = false;
  }

  /** Ends the transaction, undoing its writes last-first. */
  rollback(): void {
    this.#open = false;
    const undo = this.#w.undo;
    for (let i = undo.length - 1; i >= 0; i--) (undo[i] as () => void)();
    undo.length = 0;
  }

  #enter(point: MemoryFaultPoint): Work {
    if (!this.#open) throw new WritError("INVALID_STATE", `${point} called on a transaction that has ended`);
    this.#faults?.(point);
    return this.#w;
  }

  async lock(scope: Scope, _keys: string[]): Promise<void> {
    // Transactions are serial already; only the scope is checked.
    findScope(this.#enter("lock").state, scope);
  }

  async consumeDecision(scope: Scope, rec: ConsumedDecision): Promise<boolean> {
    return execution.consumeDecision(this.#enter("consumeDecision"), scope, rec);
  }
  async getConsumedDecision(scope: Scope, decisionId: string): Promise<ConsumedDecision | null> {
    return execution.getConsumedDecision(this.#enter("getConsumedDecision"), scope, decisionId);
  }

  async getIdempotency(scope: Scope, action: string, idempotencyKey: string): Promise<IdempotencyRecord | null> {
    return execution.getIdempotency(this.#enter("getIdempotency"), scope, action, idempotencyKey);
  }
  async listUnknownKeys(scope: Scope, opts?: ListOptions): Promise<IdempotencyRecord[]> {
    return execution.listUnknownKeys(this.#enter("listUnknownKeys"), scope, opts?.limit);
  }
  async putIdempotency(scope: Scope, rec: IdempotencyRecord): Promise<void> {
    execution.putIdempotency(this.#enter("putIdempotency"), scope, rec);
  }

  async insertAttempt(scope: Scope, rec: AttemptRecord): Promise<number> {
    return execution.insertAttempt(this.#enter("insertAttempt"), scope, rec);
  }
  async updateAttempt(scope: Scope, rec: AttemptRecord): Promise<void> {
    execution.updateAttempt(this.#enter("updateAttempt"), scope, rec);
  }
  async getAttempt(scope: Scope, attemptId: string): Promise<AttemptRecord | null> {
    return execution.getAttempt(this.#enter("getAttempt"), scope, attemptId);
  }
  async listAttempts(scope: Scope, opts?: ListOptions & { invocationId?: string; afterSeq?: number }): Promise<AttemptRecord[]> {
    return execution.listAttempts(this.#enter("listAttempts"), scope, opts);
  }

  async journalHead(scope: Scope): Promise<{ seq: number; hash: string } | null> {
    return journal.journalHead(this.#enter("journalHead"), scope);
  }
  async journalIdsPresent(scope: Scope, ids: string[]): Promise<Set<string>> {
    return journal.journalIdsPresent(this.#enter("journalIdsPresent"), scope, ids);
  }
  async insertUnsealed(scope: Scope, entries: UnsealedEntry[]): Promise<string[]> {
    return journal.insertUnsealed(this.#enter("insertUnsealed"), scope, entries);
  }
  async listUnsealed(scope: Scope, opts?: ListOptions): Promise<UnsealedEntry[]> {
    return journal.listUnsealed(this.#enter("listUnsealed"), scope, opts);
  }
  async sealJournal(scope: Scope, entries: JournalEntry[]): Promise<void> {
    journal.sealJournal(this.#enter("sealJournal"), scope, entries);
  }
  async unsealedScopes(limit: number): Promise<Array<Scope & { oldestAt: number }>> {
    return journal.unsealedScopes(this.#enter("unsealedScopes"), limit);
  }
  async journalScopes(limit: number, after?: Scope): Promise<JournalScopeState[]> {
    return journal.journalScopes(this.#enter("journalScopes"), limit, after);
  }
  async insertJournal(scope: Scope, entries: JournalEntry[]): Promise<void> {
    journal.insertJournal(this.#enter("insertJournal"), scope, entries);
  }
  async readJournal(scope: Scope, opts?: ListOptions & { fromSeq?: number }): Promise<JournalEntry[]> {
    return journal.readJournal(this.#enter("readJournal"), scope, opts);
  }
  async insertCheckpoint(scope: Scope, cp: JournalCheckpoint): Promise<void> {
    journal.insertCheckpoint(this.#enter("insertCheckpoint"), scope, cp);
  }
  async listCheckpoints(scope: Scope): Promise<JournalCheckpoint[]> {
    return journal.listCheckpoints(this.#enter("listCheckpoints"), scope);
  }
  async journalArchivedThrough(scope: Scope): Promise<number> {
    return journal.journalArchivedThrough(this.#enter("journalArchivedThrough"), scope);
  }
  async setJournalArchivedThrough(scope: Scope, seq: number): Promise<void> {
    journal.setJournalArchivedThrough(this.#enter("setJournalArchivedThrough"), scope, seq);
  }
  async pruneJournal(scope: Scope, throughSeq: number, limit: number, writtenBefore?: number): Promise<number> {
    return journal.pruneJournal(this.#enter("pruneJournal"), scope, throughSeq, limit, writtenBefore);
  }

  async insertInvocation(scope: Scope, inv: Invocation): Promise<void> {
    invocations.insertInvocation(this.#enter("insertInvocation"), scope, inv);
  }
  async getInvocation(scope: Scope, invocationId: string): Promise<Invocation | null> {
    return invocations.getInvocation(this.#enter("getInvocation"), scope, invocationId);
  }
  async findInvocationByKey(scope: Scope, action: string, idempotencyKey: string): Promise<Invocation | null> {
    return invocations.findInvocationByKey(this.#enter("findInvocationByKey"), scope, action, idempotencyKey);
  }
  async listInvocations(scope: Scope, filter?: InvocationFilter): Promise<Invocation[]> {
    return invocations.listInvocations(this.#enter("listInvocations"), scope, filter);
  }
  async updateInvocation(scope: Scope, inv: Invocation, fence?: Fence): Promise<void> {
    invocations.updateInvocation(this.#enter("updateInvocation"), scope, inv, fence);
  }
  async assertLease(scope: Scope, fence: Fence): Promise<void> {
    invocations.assertLease(this.#enter("assertLease"), scope, fence);
  }
  async claimInvocations(opts: ClaimOptions): Promise<Invocation[]> {
    return claims.claimInvocations(this.#enter("claimInvocations"), opts);
  }
  async heartbeat(owner: string, now: number, leaseMs: number): Promise<number> {
    return claims.heartbeat(this.#enter("heartbeat"), owner, now, leaseMs);
  }
  async nextRunAt(): Promise<number | null> {
    return claims.nextRunAt(this.#enter("nextRunAt"));
  }

  async getSteps(scope: Scope, invocationId: string): Promise<StepCheckpoint[]> {
    return execution.getSteps(this.#enter("getSteps"), scope, invocationId);
  }
  async putStep(scope: Scope, step: StepCheckpoint, fence?: Fence): Promise<void> {
    execution.putStep(this.#enter("putStep"), scope, step, fence);
  }

  async insertReconciliation(scope: Scope, rec: ReconciliationRecord): Promise<void> {
    records.insertReconciliation(this.#enter("insertReconciliation"), scope, rec);
  }
  async updateReconciliation(scope: Scope, rec: ReconciliationRecord): Promise<void> {
    records.updateReconciliation(this.#enter("updateReconciliation"), scope, rec);
  }
  async getReconciliation(scope: Scope, reconciliationId: string): Promise<ReconciliationRecord | null> {
    return records.getReconciliation(this.#enter("getReconciliation"), scope, reconciliationId);
  }
  async listReconciliations(scope: Scope, opts?: ListOptions & { status?: ReconciliationStatus; invocationId?: string }): Promise<ReconciliationRecord[]> {
    return records.listReconciliations(this.#enter("listReconciliations"), scope, opts);
  }

  async putAuthority(scope: Scope, a: Authority): Promise<void> {
    records.putAuthority(this.#enter("putAuthority"), scope, a);
  }
  async getAuthority(scope: Scope, authorityRef: string): Promise<Authority | null> {
    return records.getAuthority(this.#enter("getAuthority"), scope, authorityRef);
  }
  async listAuthorities(scope: Scope, opts?: ListOptions): Promise<Authority[]> {
    return records.listAuthorities(this.#enter("listAuthorities"), scope, opts);
  }
  async putApproval(scope: Scope, a: Approval): Promise<void> {
    records.putApproval(this.#enter("putApproval"), scope, a);
  }
  async getApproval(scope: Scope, approvalId: string): Promise<Approval | null> {
    return records.getApproval(this.#enter("getApproval"), scope, approvalId);
  }
  async listApprovals(scope: Scope, opts?: ListOptions & { status?: Approval["status"] }): Promise<Approval[]> {
    return records.listApprovals(this.#enter("listApprovals"), scope, opts);
  }
  async putPolicyVersion(scope: Scope, v: PolicyVersion): Promise<void> {
    records.putPolicyVersion(this.#enter("putPolicyVersion"), scope, v);
  }
  async listPolicyVersions(scope: Scope): Promise<PolicyVersion[]> {
    return records.listPolicyVersions(this.#enter("listPolicyVersions"), scope);
  }
  async insertCompletion(scope: Scope, c: CompletionRecord): Promise<void> {
    records.insertCompletion(this.#enter("insertCompletion"), scope, c);
  }
  async updateCompletion(scope: Scope, c: CompletionRecord): Promise<void> {
    records.updateCompletion(this.#enter("updateCompletion"), scope, c);
  }
  async listCompletions(scope: Scope, connector: string, externalRef: string): Promise<CompletionRecord[]> {
    return records.listCompletions(this.#enter("listCompletions"), scope, connector, externalRef);
  }
  async findStepByExternalRef(scope: Scope, connector: string, externalRef: string): Promise<StepCheckpoint | null> {
    return execution.findStepByExternalRef(this.#enter("findStepByExternalRef"), scope, connector, externalRef);
  }
  async rememberDelivery(scope: Scope, connector: string, deliveryId: string, at: number): Promise<boolean> {
    return records.rememberDelivery(this.#enter("rememberDelivery"), scope, connector, deliveryId, at);
  }
  async getBreaker(scope: Scope, connector: string, operation: string): Promise<BreakerRecord | null> {
    return records.getBreaker(this.#enter("getBreaker"), scope, connector, operation);
  }
  async putBreaker(scope: Scope, rec: BreakerRecord): Promise<void> {
    records.putBreaker(this.#enter("putBreaker"), scope, rec);
  }
  async listBreakers(scope: Scope, opts?: ListOptions): Promise<BreakerRecord[]> {
    return records.listBreakers(this.#enter("listBreakers"), scope, opts);
  }
  async putApiKey(key: ApiKeyRecord): Promise<void> {
    records.putApiKey(this.#enter("putApiKey"), key);
  }
  async getApiKey(keyId: string): Promise<ApiKeyRecord | null> {
    return records.getApiKey(this.#enter("getApiKey"), keyId);
  }
  async listApiKeys(tenantId: string): Promise<ApiKeyRecord[]> {
    return records.listApiKeys(this.#enter("listApiKeys"), tenantId);
  }
  async listOverdueParked(now: number, limit: number): Promise<Invocation[]> {
    return claims.listOverdueParked(this.#enter("listOverdueParked"), now, limit);
  }
  async listExpiredPendingApprovals(now: number, limit: number): Promise<Approval[]> {
    return claims.listExpiredPendingApprovals(this.#enter("listExpiredPendingApprovals"), now, limit);
  }
  async listEarlyCompletions(receivedBefore: number, limit: number, scope?: Scope): Promise<CompletionRecord[]> {
    return claims.listEarlyCompletions(this.#enter("listEarlyCompletions"), receivedBefore, limit, scope);
  }

  // retention (docs/retention.md)
  async listEndedInvocations(opts: { endedBefore: number; limit: number; after?: EndedCursor }): Promise<EndedCursor[]> {
    return retention.listEndedInvocations(this.#enter("listEndedInvocations"), opts);
  }
  async journalNamesAbove(scope: Scope, aboveSeq: number, invocationIds: string[]): Promise<Set<string>> {
    return retention.journalNamesAbove(this.#enter("journalNamesAbove"), scope, aboveSeq, invocationIds);
  }
  async journalNamedSince(scope: Scope, aboveSeq: number): Promise<{ named: Set<string>; through: number }> {
    return retention.journalNamedSince(this.#enter("journalNamedSince"), scope, aboveSeq);
  }
  async invocationHolds(scope: Scope, invocationIds: string[]): Promise<Map<string, InvocationHold>> {
    return retention.invocationHolds(this.#enter("invocationHolds"), scope, invocationIds);
  }
  async deleteEndedInvocations(scope: Scope, invocationIds: string[]): Promise<PrunedInvocations> {
    return retention.deleteEndedInvocations(this.#enter("deleteEndedInvocations"), scope, invocationIds);
  }
  async listBareIdempotency(opts: { before: number; limit: number; after?: BareCursor }): Promise<{ bare: IdempotencyRecord[]; next?: BareCursor }> {
    return retention.listBareIdempotency(this.#enter("listBareIdempotency"), opts);
  }
  async deleteBareExecutions(scope: Scope, keys: Array<{ action: string; idempotencyKey: string }>, before: number): Promise<PrunedInvocationRows> {
    return retention.deleteBareExecutions(this.#enter("deleteBareExecutions"), scope, keys, before);
  }
  async deleteAgedRecords(kind: AgedRecordKind, before: number, limit: number): Promise<number> {
    return retention.deleteAgedRecords(this.#enter("deleteAgedRecords"), kind, before, limit);
  }
  async countAgedRecords(kind: AgedRecordKind, before: number): Promise<number> {
    return retention.countAgedRecords(this.#enter("countAgedRecords"), kind, before);
  }

  // notifications (docs/notifications.md)
  async putSubscription(sub: Subscription): Promise<void> {
    notify.putSubscription(this.#enter("putSubscription"), sub);
  }
  async getSubscription(tenantId: string, subscriptionId: string): Promise<Subscription | null> {
    return notify.getSubscription(this.#enter("getSubscription"), tenantId, subscriptionId);
  }
  async listSubscriptions(tenantId: string): Promise<Subscription[]> {
    return notify.listSubscriptions(this.#enter("listSubscriptions"), tenantId);
  }
  async deleteSubscription(tenantId: string, subscriptionId: string): Promise<boolean> {
    return notify.deleteSubscription(this.#enter("deleteSubscription"), tenantId, subscriptionId);
  }
  async claimSubscriptions(opts: SubscriptionClaimOptions): Promise<Subscription[]> {
    return notify.claimSubscriptions(this.#enter("claimSubscriptions"), opts);
  }
  async holdSubscription(subscriptionId: string, owner: string, until: number): Promise<boolean> {
    return notify.holdSubscription(this.#enter("holdSubscription"), subscriptionId, owner, until);
  }
  async notifyCursors(subscriptionId: string): Promise<Map<string, number>> {
    return notify.notifyCursors(this.#enter("notifyCursors"), subscriptionId);
  }
  async putNotifyCursor(subscriptionId: string, spaceId: string, seq: number): Promise<void> {
    notify.putNotifyCursor(this.#enter("putNotifyCursor"), subscriptionId, spaceId, seq);
  }
  async journalHeads(tenantId: string): Promise<Array<{ spaceId: string; seq: number }>> {
    return notify.journalHeads(this.#enter("journalHeads"), tenantId);
  }
  async insertDeliveries(deliveries: Delivery[]): Promise<number> {
    return notify.insertDeliveries(this.#enter("insertDeliveries"), deliveries);
  }
  async getDelivery(tenantId: string, deliveryId: string): Promise<Delivery | null> {
    return notify.getDelivery(this.#enter("getDelivery"), tenantId, deliveryId);
  }
  async listDeliveries(tenantId: string, filter?: DeliveryFilter): Promise<Delivery[]> {
    return notify.listDeliveries(this.#enter("listDeliveries"), tenantId, filter);
  }
  async nextDelivery(subscriptionId: string): Promise<Delivery | null> {
    return notify.nextDelivery(this.#enter("nextDelivery"), subscriptionId);
  }
  async updateDelivery(d: Delivery): Promise<void> {
    notify.updateDelivery(this.#enter("updateDelivery"), d);
  }
}
