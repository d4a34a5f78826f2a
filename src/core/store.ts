/**
 * The Store port (docs/stores.md). One contract, three implementations (memory, sqlite, postgres), one
 * conformance suite (`runStoreConformance`).
 *
 * Rules every implementation keeps:
 * - Every operation takes a scope; reads in another scope find nothing; writes to a record that
 *   lives in another scope are refused (`SCOPE_VIOLATION` or `NOT_FOUND`), lists never leak.
 * - `transact` is all-or-nothing: if `fn` throws (or a write fails), nothing it wrote is visible.
 *   The promise resolves only once the transaction is durable (group commit may batch several).
 * - Fenced writes (`fence` argument) succeed only while the invocation is `running` under that
 *   exact owner and token; otherwise they throw `LeaseLostError` and write nothing. The fence must
 *   name the invocation the record belongs to (`INVALID_ARGUMENT` otherwise).
 * - Step status is monotonic: a settled step (`succeeded`, `failed`, `unknown`) never returns to
 *   `started` within the same attempt; attempting it throws `CONFLICT`. The one exception is a
 *   retry: a `failed` step (a definite failure) may be restarted by a NEW attempt (different
 *   `attemptId`, which needs a new decision). `succeeded` and `unknown` never return to `started`.
 */
import { WritError } from "./errors.js";
import type { Clock } from "./ports.js";
import type { StoreTransitions } from "./transitions.js";
import type {
  ApiKeyRecord,
  Approval,
  BreakerRecord,
  AttemptRecord,
  Authority,
  CompletionRecord,
  ConsumedDecision,
  Delivery,
  DeliveryStatus,
  Fence,
  IdempotencyRecord,
  Invocation,
  InvocationStatus,
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

/**
 * Claims on sealing scopes' journals, shared by every process of a store (docs/journal.md, "One
 * sealer per scope"). A claim is held by one store object at a time, until it is released or the
 * store loses the connection that holds it (a process that dies loses its claims with it). A claim
 * only says who should seal: sealing stays safe without it (a seal applies only on the head it
 * read), so a caller whose claim calls fail seals as if no claim existed.
 */
export interface JournalSealers {
  /** Tries to take each scope's claim for this store; answers, per scope, whether this store holds it now. */
  claim(scopes: readonly Scope[]): Promise<boolean[]>;
  /** Whether any store (this one included) holds each scope's claim; takes nothing. */
  held(scopes: readonly Scope[]): Promise<boolean[]>;
  /** Gives up this store's claims on `scopes` (a scope it does not hold is ignored). */
  release(scopes: readonly Scope[]): Promise<void>;
  /** Whether this store holds the scope's claim, as far as it knows (claims end with their connection). */
  holds(scope: Scope): boolean;
  /** How many claims this store holds. */
  count(): number;
}

export interface Store {
  /** `memory`, `sqlite`, `postgres`, or a custom name. */
  readonly kind: string;
  /** Applies pending numbered migrations; idempotent and safe to run concurrently. */
  migrate(): Promise<void>;
  /** Runs `fn` in one transaction. Rejects with `fn`'s error after rolling everything back. */
  transact<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;
  /**
   * Optional: runs read-only `fn` against committed state without entering the write path (SQLite:
   * a second, read-only connection, so a read does not queue behind the group commit's fsync).
   * Each read sees what committed before it; several reads in one call are not one snapshot.
   * `fn` must not write (SQLite refuses). Call it through `readCommitted(store, fn)`, which falls
   * back to `transact` for a store without one.
   */
  read?<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;
  /** Releases connections and file handles; further calls reject with `STORE_CLOSED`. */
  close(): Promise<void>;
  /**
   * Optional: the clock that governs this store's leases and deadlines when processes on several
   * machines share it (PostgreSQL: the database server's clock, sampled; docs/deploying-postgres.md).
   * A host on this store uses it unless given a clock of its own. Stores without one (memory,
   * SQLite: one machine) run on the process clock.
   */
  readonly clock?: Clock;
  /**
   * Optional wake-up hint (LISTEN/NOTIFY on PostgreSQL): `cb` runs when work may be available.
   * Workers always keep polling; this only shortens the wait. Returns an unsubscribe function.
   */
  onWake?(cb: () => void): () => void;
  /**
   * Optional: `cb` runs with a key id when another process may have changed that API key's record
   * (revoked it, changed its delegation), and with `null` when such changes may have been missed.
   * The API key cache forgets what it is told (PostgreSQL: LISTEN/NOTIFY; docs/security.md).
   * Returns an unsubscribe function.
   */
  onApiKeyChange?(cb: (keyId: string | null) => void): () => void;
  /**
   * Optional in-process hint for the journal sequencer: `cb` runs after a transaction that wrote
   * unsealed journal entries commits, once per scope it wrote to. Memory and SQLite await what `cb`
   * returns before `transact` resolves (sealing is synchronous after commit there); PostgreSQL
   * does not wait (the action's commit never waits for the chain). SQLite's group commit may run
   * `cb` when the batch carrying the transaction is about to commit instead (its writes done and
   * visible to the next transactions of the batch), so that the seal run `cb` queues commits in
   * the same COMMIT; `transact` still resolves only after that COMMIT. A hint only: the sequencer
   * keeps polling `unsealedScopes`. Returns an unsubscribe function.
   */
  onJournalAppend?(cb: (scope: Scope) => void | Promise<void>): () => void;
  /**
   * Optional, for a store whose commits do not wait for `onJournalAppend`: how long (ms) a
   * started sequencer coalesces the hints of one scope before it seals (fewer, larger seals).
   */
  readonly journalHintDelayMs?: number;
  /**
   * Optional, for a store that several processes share (PostgreSQL): claims on sealing a scope's
   * journal, held across processes, so that one running sequencer per scope seals it and the others
   * leave it be instead of racing it (docs/journal.md, "One sealer per scope").
   */
  readonly journalSealers?: JournalSealers;
  /**
   * Optional native hot transitions (docs/stores.md, "Transitions"): each one whole state change
   * applied atomically, on PostgreSQL in one round trip. Callers use `transitionsOf(store)`, which
   * falls back to the same transitions composed from `transact` for a store without them.
   */
  readonly transitions?: StoreTransitions;
}

export interface ListOptions {
  limit?: number;
}

export interface InvocationFilter extends ListOptions {
  status?: InvocationStatus;
  /**
   * Page cursor: an invocationId from a previous page. Returns invocations that come after it in
   * the newest-first order (i.e. older ones); an unknown cursor returns an empty page.
   */
  after?: string;
}

export interface ClaimOptions {
  owner: string;
  /** Fresh lease tokens, one per claimed invocation (the caller supplies entropy). */
  tokens: string[];
  now: number;
  leaseMs: number;
  limit: number;
}

/** Which deliveries `listDeliveries` returns: newest first. */
export interface DeliveryFilter extends ListOptions {
  subscriptionId?: string;
  status?: DeliveryStatus;
  /** Page cursor: only deliveries with a lower `seq` (older ones). */
  beforeSeq?: number;
}

/** A dispatcher's claim of subscriptions (docs/notifications.md, "Ordering and workers"). */
export interface SubscriptionClaimOptions {
  /** A fresh owner id per claim: the lease is held by it until `now + leaseMs` or a release. */
  owner: string;
  now: number;
  leaseMs: number;
  limit: number;
}

/**
 * Notification subscriptions and their outbox (docs/notifications.md). Tenant-level records:
 * subscriptions, a per-(subscription, space) cursor into the sealed journal, and deliveries.
 */
export interface NotificationTx {
  /** Inserts or replaces by subscriptionId (never its lease); SCOPE_VIOLATION when the id is another tenant's. */
  putSubscription(sub: Subscription): Promise<void>;
  getSubscription(tenantId: string, subscriptionId: string): Promise<Subscription | null>;
  /** The tenant's subscriptions, oldest first. */
  listSubscriptions(tenantId: string): Promise<Subscription[]>;
  /** Deletes the subscription with its cursors and deliveries; false when there was none. */
  deleteSubscription(tenantId: string, subscriptionId: string): Promise<boolean>;
  /**
   * Leases up to `limit` enabled subscriptions whose lease is free or lapsed (across tenants),
   * least recently leased first (by a turn counter, not by time). Concurrent claimers never receive the same subscription while
   * its lease runs (PostgreSQL: `FOR UPDATE SKIP LOCKED`).
   */
  claimSubscriptions(opts: SubscriptionClaimOptions): Promise<Subscription[]>;
  /**
   * Moves the lease `owner` holds on the subscription to `until` (0 releases it) and holds the
   * row for the transaction; false, nothing written, when `owner` no longer holds it.
   */
  holdSubscription(subscriptionId: string, owner: string, until: number): Promise<boolean>;
  /** The subscription's journal cursors: spaceId -> the last seq turned into deliveries. */
  notifyCursors(subscriptionId: string): Promise<Map<string, number>>;
  putNotifyCursor(subscriptionId: string, spaceId: string, seq: number): Promise<void>;
  /** The tenant's spaces with a sealed journal and each one's highest sealed seq. */
  journalHeads(tenantId: string): Promise<Array<{ spaceId: string; seq: number }>>;
  /**
   * Inserts deliveries in order, skipping any whose (subscriptionId, eventId) is already present
   * (earlier in the batch included); stamps each inserted one's `seq`. Returns how many it inserted.
   */
  insertDeliveries(deliveries: Delivery[]): Promise<number>;
  getDelivery(tenantId: string, deliveryId: string): Promise<Delivery | null>;
  /** The tenant's deliveries, newest first. */
  listDeliveries(tenantId: string, filter?: DeliveryFilter): Promise<Delivery[]>;
  /** The subscription's oldest `pending` delivery (the head of its line), or null. */
  nextDelivery(subscriptionId: string): Promise<Delivery | null>;
  /** Replaces a delivery (matched by deliveryId; its seq never changes); NOT_FOUND otherwise. */
  updateDelivery(d: Delivery): Promise<void>;
}

/** Where a scan of ended invocations goes on from (docs/retention.md): the last one it looked at. */
export interface EndedCursor {
  updatedAt: number;
  tenantId: string;
  spaceId: string;
  invocationId: string;
}

/** Records that retention deletes by age alone (docs/retention.md). */
export const AGED_RECORD_KINDS = ["notify_deliveries", "expired_completions", "webhook_deliveries"] as const;
export type AgedRecordKind = (typeof AGED_RECORD_KINDS)[number];

/** What a batch delete of invocations (or bare executions) removed, by kind (never journal entries or checkpoints). */
export interface PrunedInvocationRows {
  invocations: number;
  steps: number;
  attempts: number;
  decisions: number;
  idempotency: number;
  reconciliations: number;
  approvals: number;
  completions: number;
}

/** What keeps an ended invocation from being deleted although it is ended (docs/retention.md). */
export type InvocationHold = "open_reconciliation" | "pending_approval";

/** What `deleteEndedInvocations` did: the rows it removed, the members it deleted and those it skipped. */
export interface PrunedInvocations {
  rows: PrunedInvocationRows;
  /** Members deleted whole. */
  deleted: string[];
  /** Members kept, each with why: no longer ended, or held (members already gone are in neither list). */
  skipped: Array<{ invocationId: string; reason: "not_ended" | InvocationHold }>;
}

/** Where a scan of bare idempotency records goes on from: the last one it looked at. */
export interface BareCursor {
  updatedAt: number;
  tenantId: string;
  spaceId: string;
  action: string;
  idempotencyKey: string;
}

/**
 * Retention (docs/retention.md): the reads that decide what may go and the deletes that remove
 * it. A pruner calls them in short transactions, a small batch each; every delete removes whole
 * invocations (children first, then the rows) inside its transaction, so no prefix of a prune run
 * leaves a half-deleted invocation behind.
 */
export interface RetentionTx {
  /**
   * Ended invocations (succeeded, failed, denied, cancelled) last updated before `endedBefore`,
   * across scopes, in (updatedAt, tenantId, spaceId, invocationId) order, only those after `after`:
   * those four fields of each (what the index of ended invocations holds, not the documents).
   */
  listEndedInvocations(opts: { endedBefore: number; limit: number; after?: EndedCursor }): Promise<EndedCursor[]>;
  /**
   * Of `invocationIds`, those that a journal entry of the scope names (`refs.invocationId`) while
   * it is unsealed or sealed with a seq above `aboveSeq` (not archived yet).
   */
  journalNamesAbove(scope: Scope, aboveSeq: number, invocationIds: string[]): Promise<Set<string>>;
  /**
   * Every invocation id the scope's journal entries name (`refs.invocationId`) while unsealed or
   * sealed with a seq above `aboveSeq`, and `through`: the highest seq the read covered (`aboveSeq`
   * when nothing is sealed above it). A scope's entries are sealed in seq order, so every entry
   * sealed at or below `through` was read here or lies at or below `aboveSeq`. Its cost follows
   * what was journaled since `aboveSeq` (and what is still unsealed), not the history: the
   * pruner's re-read, after each delete, of what came since its previous read.
   */
  journalNamedSince(scope: Scope, aboveSeq: number): Promise<{ named: Set<string>; through: number }>;
  /** Of the scope's `invocationIds`, those an open reconciliation or a pending approval holds, with the hold (a read). */
  invocationHolds(scope: Scope, invocationIds: string[]): Promise<Map<string, InvocationHold>>;
  /**
   * Deletes the scope's `invocationIds` (distinct), each whole: its steps, its attempts and the
   * decisions they consumed, the idempotency record that names it, its reconciliations, its
   * approval and the completions matched to it, then its row; one statement per table where the
   * store can (docs/retention.md, "The pruner"). The rows are locked first and each member is
   * checked under the lock: one that is no longer ended, or is held by an open reconciliation or a
   * pending approval, is skipped (reported, none of its rows touched) while the others still go;
   * one already gone is in neither list.
   */
  deleteEndedInvocations(scope: Scope, invocationIds: string[]): Promise<PrunedInvocations>;
  /**
   * Bare executions' idempotency records (docs/retention.md, "Bare executions"): of the next
   * `limit` records in state `succeeded` or `failed` last updated before `before`, across scopes
   * in (updatedAt, tenantId, spaceId, action, idempotencyKey) order after `after`, those that no
   * invocation of their scope holds (neither by their invocationId nor by their action and key).
   * `next` is the last record looked at when `limit` were looked at (more may follow), else absent:
   * one call reads at most `limit` records, however many of them invocations hold.
   */
  listBareIdempotency(opts: { before: number; limit: number; after?: BareCursor }): Promise<{ bare: IdempotencyRecord[]; next?: BareCursor }>;
  /**
   * Deletes the scope's bare idempotency records named by (action, idempotencyKey), each only while
   * it still qualifies as `listBareIdempotency` says (settled, last updated before `before`, held by
   * no invocation), with the steps, attempts, consumed decisions and matched completions its
   * executions left under its invocationId. Counts by kind (`idempotency` counts the records).
   */
  deleteBareExecutions(scope: Scope, keys: Array<{ action: string; idempotencyKey: string }>, before: number): Promise<PrunedInvocationRows>;
  /**
   * Deletes up to `limit` records of `kind` older than `before`, oldest first, across scopes:
   * `notify_deliveries` delivered or dead (by updatedAt), `expired_completions` (by expiredAt),
   * `webhook_deliveries` remembered delivery ids (by receivedAt). Returns how many.
   */
  deleteAgedRecords(kind: AgedRecordKind, before: number, limit: number): Promise<number>;
  /** How many records `deleteAgedRecords` would delete with no limit. */
  countAgedRecords(kind: AgedRecordKind, before: number): Promise<number>;
}

export interface StoreTx extends NotificationTx, RetentionTx {
  /**
   * Serialises transactions that touch the same logical keys (e.g. an idempotency key and a
   * decision id) until this transaction ends. A no-op where transactions are already serial.
   * Isolation is READ COMMITTED plus these locks (PostgreSQL): a statement sees what committed
   * before it. Take locks in one global order (invocation row via `assertLease`, then the
   * caller's keys) so two transactions never wait on each other. No action transaction takes
   * `journal`: only the sequencer and checkpoints do, in transactions of their own.
   */
  lock(scope: Scope, keys: string[]): Promise<void>;

  // decisions
  /** Records consumption; false (and no write) if this decision id was consumed before. */
  consumeDecision(scope: Scope, rec: ConsumedDecision): Promise<boolean>;
  getConsumedDecision(scope: Scope, decisionId: string): Promise<ConsumedDecision | null>;

  // idempotency
  getIdempotency(scope: Scope, action: string, idempotencyKey: string): Promise<IdempotencyRecord | null>;
  /**
   * Keys whose outcome is unknown that no invocation of this store holds: left by bare boundary
   * executions (interrupted, timed out, an ambiguous reply) for an operator to settle with
   * `host.resolveKey`. Oldest first (updatedAt, then action and key). An invocation's own unknown
   * outcome is a reconciliation instead (docs/boundary.md, Interrupted executions).
   */
  listUnknownKeys(scope: Scope, opts?: ListOptions): Promise<IdempotencyRecord[]>;
  /** Inserts or replaces the record for (scope, action, idempotencyKey). */
  putIdempotency(scope: Scope, rec: IdempotencyRecord): Promise<void>;

  // attempts
  /**
   * Inserts and returns the scope-ordered sequence number assigned to it (1, 2, 3, ... per scope;
   * a rolled-back transaction uses up no number, so a database SEQUENCE does not fit).
   */
  insertAttempt(scope: Scope, rec: AttemptRecord): Promise<number>;
  /** Replaces an existing attempt (matched by attemptId within the scope); NOT_FOUND otherwise. */
  updateAttempt(scope: Scope, rec: AttemptRecord): Promise<void>;
  getAttempt(scope: Scope, attemptId: string): Promise<AttemptRecord | null>;
  /** In insertion order. */
  listAttempts(scope: Scope, opts?: ListOptions & { invocationId?: string; afterSeq?: number }): Promise<AttemptRecord[]>;

  // journal (docs/journal.md: transitions write entries unsealed; the sequencer chains them)
  /** The last sealed entry's seq and hash, or null when nothing is sealed yet. */
  journalHead(scope: Scope): Promise<{ seq: number; hash: string } | null>;
  /** Which of these entry ids already exist in the scope's journal, sealed or not. */
  journalIdsPresent(scope: Scope, ids: string[]): Promise<Set<string>>;
  /**
   * Writes entries unsealed (no seq, prevHash or hash), in order, skipping every id already in
   * the scope's journal (sealed or unsealed, including earlier in this batch). Takes no journal
   * lock and reads no head, so transactions of one scope never wait on each other here. Returns
   * the ids written.
   */
  insertUnsealed(scope: Scope, entries: UnsealedEntry[]): Promise<string[]>;
  /**
   * Unsealed entries visible to this transaction (committed ones, and this transaction's own), in
   * the order they were written, at most `limit`. On PostgreSQL a lower position can become
   * visible after a higher one (commit order is not insertion order): the caller seals what it
   * sees and never assumes that what lies below a sealed position is sealed.
   */
  listUnsealed(scope: Scope, opts?: ListOptions): Promise<UnsealedEntry[]>;
  /**
   * Seals unsealed entries: each of `entries` names an unsealed id and gives its seq, prevHash and
   * hash; seqs continue the sealed head (head+1, +2, ...). All or nothing: an id that is not
   * unsealed in this scope, a seq clash or a gap throws `CONFLICT`. Callers hold
   * `lock(scope, ["journal"])` (see `sealJournal` in core/journal.ts).
   */
  sealJournal(scope: Scope, entries: JournalEntry[]): Promise<void>;
  /**
   * Scopes that hold unsealed entries, with the oldest such entry's `at`, at most `limit` (across
   * scopes: for the sequencer only, which then works scope by scope).
   */
  unsealedScopes(limit: number): Promise<Array<Scope & { oldestAt: number }>>;
  /**
   * Scopes with a sealed journal, ascending by (tenantId, spaceId) after `after`, at most `limit`:
   * each one's sealed head, first live entry (its seq and `at`) and archive watermark. For the
   * archiver and its metrics (docs/archives.md); it works across scopes like `unsealedScopes`.
   */
  journalScopes(limit: number, after?: Scope): Promise<JournalScopeState[]>;
  /**
   * Appends already-sealed entries that continue the chain; a seq or id clash (with sealed or
   * unsealed entries), or a first seq other than head+1, throws `CONFLICT`. Stores check seq and
   * id only; `prevHash` and `hash` are the caller's and the verifier's business.
   */
  insertJournal(scope: Scope, entries: JournalEntry[]): Promise<void>;
  /** Sealed entries with seq >= fromSeq, ascending (unsealed ones are never returned here). */
  readJournal(scope: Scope, opts?: ListOptions & { fromSeq?: number }): Promise<JournalEntry[]>;
  insertCheckpoint(scope: Scope, cp: JournalCheckpoint): Promise<void>;
  /** Ascending by seq; several checkpoints may share a seq (the head re-signed later). */
  listCheckpoints(scope: Scope): Promise<JournalCheckpoint[]>;
  /**
   * The archive watermark: the highest seq whose journal segment an archiver wrote and verified
   * (0 while nothing is archived). Retention prunes nothing whose entries lie above it
   * (docs/journal.md, "The archive watermark").
   */
  journalArchivedThrough(scope: Scope): Promise<number>;
  /**
   * Moves the archive watermark to `seq`, an integer from the current watermark up to the sealed
   * head: the same value again is a no-op (an archiver re-run after a crash); a lower one or one
   * past the sealed head throws `CONFLICT` and writes nothing.
   */
  setJournalArchivedThrough(scope: Scope, seq: number): Promise<void>;
  /**
   * Deletes up to `limit` (an integer from 1) of the scope's lowest live sealed entries whose seq is
   * at or below `throughSeq`, and returns how many it deleted (0: none is left there). Only what is
   * archived, and never the sealed head (the sequencer continues the chain from it): `throughSeq`
   * above the archive watermark, or at or above the head, throws `CONFLICT` and deletes nothing.
   * Checkpoints and unsealed entries are kept. Reads then start at the first live seq
   * (docs/archives.md). With `writtenBefore`, only the leading ones written before it: the first
   * entry written at or after it stays, and every entry after that one.
   */
  pruneJournal(scope: Scope, throughSeq: number, limit: number, writtenBefore?: number): Promise<number>;

  // invocations
  /** Inserts; CONFLICT if (scope, action, idempotencyKey) or the id exists. */
  insertInvocation(scope: Scope, inv: Invocation): Promise<void>;
  /**
   * With `forUpdate`, the row stays locked until the transaction ends (PostgreSQL `FOR UPDATE`;
   * a no-op where transactions are serial): the first lock class of docs/stores.md.
   */
  getInvocation(scope: Scope, invocationId: string, opts?: { forUpdate?: boolean }): Promise<Invocation | null>;
  findInvocationByKey(scope: Scope, action: string, idempotencyKey: string): Promise<Invocation | null>;
  /** Newest first. */
  listInvocations(scope: Scope, filter?: InvocationFilter): Promise<Invocation[]>;
  /**
   * Replaces the invocation. With a fence, succeeds only while the stored row is `running` under
   * the fence's owner and token (else `LeaseLostError`, nothing written). Without a fence it is an
   * administrative write (admission, approvals, operator actions).
   */
  updateInvocation(scope: Scope, inv: Invocation, fence?: Fence): Promise<void>;
  /** Throws `LeaseLostError` unless the invocation is `running` under this lease; holds it for the transaction. */
  assertLease(scope: Scope, fence: Fence): Promise<void>;
  /**
   * Claims up to `limit` runnable invocations across all scopes: `queued` with runAt <= now, or
   * `running` with an expired lease. Sets status `running`, leaseOwner, a fresh token, expiry,
   * attemptCount + 1. Concurrent claimers never receive the same invocation.
   */
  claimInvocations(opts: ClaimOptions): Promise<Invocation[]>;
  /** Extends every lease `owner` holds that has not expired; returns how many. */
  heartbeat(owner: string, now: number, leaseMs: number): Promise<number>;
  /** Earliest runAt among queued invocations (any scope), for worker sleep. */
  nextRunAt(): Promise<number | null>;

  // steps
  getSteps(scope: Scope, invocationId: string): Promise<StepCheckpoint[]>;
  /** Upserts by (scope, invocationId, stepIndex); monotonic (see above, retry exception included); fenced if `fence` given. */
  putStep(scope: Scope, step: StepCheckpoint, fence?: Fence): Promise<void>;

  // reconciliations
  insertReconciliation(scope: Scope, rec: ReconciliationRecord): Promise<void>;
  updateReconciliation(scope: Scope, rec: ReconciliationRecord): Promise<void>;
  getReconciliation(scope: Scope, reconciliationId: string): Promise<ReconciliationRecord | null>;
  listReconciliations(scope: Scope, opts?: ListOptions & { status?: ReconciliationStatus; invocationId?: string }): Promise<ReconciliationRecord[]>;

  // authorities and approvals
  putAuthority(scope: Scope, a: Authority): Promise<void>;
  getAuthority(scope: Scope, authorityRef: string): Promise<Authority | null>;
  listAuthorities(scope: Scope, opts?: ListOptions): Promise<Authority[]>;
  putApproval(scope: Scope, a: Approval): Promise<void>;
  getApproval(scope: Scope, approvalId: string): Promise<Approval | null>;
  listApprovals(scope: Scope, opts?: ListOptions & { status?: Approval["status"] }): Promise<Approval[]>;

  // policy versions (docs/approvals.md, Versions per scope)
  /** Inserts or replaces the version (scope, version). */
  putPolicyVersion(scope: Scope, v: PolicyVersion): Promise<void>;
  /** Ascending by version. */
  listPolicyVersions(scope: Scope): Promise<PolicyVersion[]>;

  // external completions (docs/completions.md)
  /** Inserts; CONFLICT if (scope, connector, completionId) exists. */
  insertCompletion(scope: Scope, c: CompletionRecord): Promise<void>;
  /** Replaces an existing completion (matched by connector and completionId); NOT_FOUND otherwise. */
  updateCompletion(scope: Scope, c: CompletionRecord): Promise<void>;
  /** Completions for (connector, externalRef), ascending by receivedAt. */
  listCompletions(scope: Scope, connector: string, externalRef: string): Promise<CompletionRecord[]>;
  /** The step that handed off to (connector, externalRef), whatever its status now, or null. */
  findStepByExternalRef(scope: Scope, connector: string, externalRef: string): Promise<StepCheckpoint | null>;
  /** Records a delivery id; false (nothing written) when it was seen before in this scope and connector. */
  rememberDelivery(scope: Scope, connector: string, deliveryId: string, at: number): Promise<boolean>;

  // API keys (per tenant; looked up by key id when a request arrives)
  /** Inserts or replaces by keyId. */
  putApiKey(key: ApiKeyRecord): Promise<void>;
  getApiKey(keyId: string): Promise<ApiKeyRecord | null>;
  /** The tenant's keys, oldest first. */
  listApiKeys(tenantId: string): Promise<ApiKeyRecord[]>;

  // circuit breakers (docs/host.md, "Circuit breakers"): one row per (scope, connector, operation)
  getBreaker(scope: Scope, connector: string, operation: string): Promise<BreakerRecord | null>;
  /**
   * Without a `rev`, inserts (`CONFLICT` when the row exists); with one, replaces the row only
   * while it still has that rev (`STALE` otherwise, `NOT_FOUND` when there is none). Stamps the
   * new rev on `rec`. Two writers that read the same row: exactly one wins.
   */
  putBreaker(scope: Scope, rec: BreakerRecord): Promise<void>;
  /** The scope's breakers, ordered by connector then operation. */
  listBreakers(scope: Scope, opts?: ListOptions): Promise<BreakerRecord[]>;

  // sweeps (across scopes, like claims)
  /** `parked` invocations whose deadlineAt <= now and overdueAt unset, oldest deadline first. */
  listOverdueParked(now: number, limit: number): Promise<Invocation[]>;
  /** `pending` approvals whose expiresAt <= now, oldest first. */
  listExpiredPendingApprovals(now: number, limit: number): Promise<Approval[]>;
  /**
   * Completions still `early` (their reference never matched a parked step) received before
   * `receivedBefore`, oldest first: in `scope` (operators' list) or, without it, across all scopes
   * (the retention sweep).
   */
  listEarlyCompletions(receivedBefore: number, limit: number, scope?: Scope): Promise<CompletionRecord[]>;
}

/** Runs read-only `fn` on the store's read path when it has one (`Store.read`), else in a transaction. */
export function readCommitted<T>(store: Store, fn: (tx: StoreTx) => Promise<T>): Promise<T> {
  return store.read !== undefined ? store.read(fn) : store.transact(fn);
}

/** True when a record lives in the given scope. */
export function sameScope(scope: Scope, rec: { tenantId: string; spaceId: string }): boolean {
  return scope.tenantId === rec.tenantId && scope.spaceId === rec.spaceId;
}

/** A scope's sealed journal as the archiver sees it (`StoreTx.journalScopes`). */
export interface JournalScopeState extends Scope {
  headSeq: number;
  /** The first entry still in the database (1 until archived entries are pruned). */
  firstSeq: number;
  firstAt: number;
  /** The archive watermark (0: nothing archived). */
  archivedThrough: number;
}

/** Throws `SCOPE_VIOLATION` if a record's scope differs from the operation's scope. */
export function assertScope(scope: Scope, rec: { tenantId: string; spaceId: string }, what: string): void {
  if (!sameScope(scope, rec)) {
    throw new WritError("SCOPE_VIOLATION", `${what} belongs to another scope than the one this operation runs in`);
  }
}

/**
 * Refuses a prune (see `Tx.pruneJournal`) past the archive watermark or reaching the sealed head.
 * Each store calls it with the values it read inside the same transaction.
 */
export function checkPrune(archivedThrough: number, sealedHead: number, throughSeq: number): void {
  if (throughSeq > archivedThrough) throw new WritError("CONFLICT", `journal entries up to seq ${throughSeq} cannot be pruned: they are archived only through ${archivedThrough}`);
  if (throughSeq >= sealedHead) throw new WritError("CONFLICT", `journal entries up to seq ${throughSeq} cannot be pruned: the sealed head (${sealedHead}) is always kept`);
}

/**
 * Refuses an archive watermark move (see `Tx.setJournalArchivedThrough`): backwards, or past the
 * sealed head. Each store calls it with the values it read inside the same transaction.
 */
export function checkArchiveMove(current: number, sealedHead: number, seq: number): void {
  if (seq < current) throw new WritError("CONFLICT", `the archive watermark is at seq ${current} and never moves back (asked ${seq})`);
  if (seq > sealedHead) throw new WritError("CONFLICT", `the archive watermark cannot pass the sealed head (head ${sealedHead}, asked ${seq})`);
}
