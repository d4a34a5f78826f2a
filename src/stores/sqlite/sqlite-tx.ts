/**
 * `StoreTx` on the SQLite connection. Every method runs synchronously on better-sqlite3 inside the
 * logical transaction the group committer opened; methods are async only to fit the port.
 */
import { LeaseLostError, WritError } from "../../core/errors.js";
import { journalRowOf } from "../../core/journal.js";
import { nextRevision } from "../../core/store-guard.js";
import { assertScope, checkArchiveMove, checkPrune, type AgedRecordKind, type BareCursor, type ClaimOptions, type EndedCursor, type InvocationHold, type PrunedInvocations, type JournalScopeState, type PrunedInvocationRows, type DeliveryFilter, type InvocationFilter, type ListOptions, type StoreTx, type SubscriptionClaimOptions } from "../../core/store.js";
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
import type { Statement } from "better-sqlite3";
import * as notify from "./sqlite-notifications.js";
import * as retention from "./sqlite-retention.js";
import type { ListStatements, SqliteStatements } from "./sqlite-statements.js";

/** What a transaction needs from its store. */
export interface SqliteTxContext {
  stmts: SqliteStatements;
  lists: ListStatements;
  /** Called when the transaction makes an invocation runnable (a wake-up hint). */
  onRunnable: () => void;
}

function scopeKey(scope: Scope): string {
  return JSON.stringify([scope.tenantId, scope.spaceId]);
}

interface ScopeParams {
  t: string;
  s: string;
}

function scopeParams(scope: Scope): ScopeParams {
  if (typeof scope !== "object" || scope === null || !nonEmpty(scope.tenantId) || !nonEmpty(scope.spaceId)) {
    throw new WritError("INVALID_ARGUMENT", "a scope needs non-empty string tenantId and spaceId");
  }
  return { t: scope.tenantId, s: scope.spaceId };
}

function nonEmpty(v: unknown): v is string {
  return typeof v === "string" && v !== "";
}

function checkTimes(now: number, leaseMs: number): void {
  if (!Number.isFinite(now)) throw new WritError("INVALID_ARGUMENT", "now must be a finite number of epoch milliseconds");
  if (!Number.isFinite(leaseMs) || leaseMs <= 0) throw new WritError("INVALID_ARGUMENT", "leaseMs must be a positive number");
}

function checkClaimOptions(opts: ClaimOptions): void {
  if (typeof opts !== "object" || opts === null) throw new WritError("INVALID_ARGUMENT", "claimInvocations needs options");
  if (!nonEmpty(opts.owner)) throw new WritError("INVALID_ARGUMENT", "claimInvocations: owner must be a non-empty string");
  if (!Array.isArray(opts.tokens) || !opts.tokens.every(nonEmpty)) throw new WritError("INVALID_ARGUMENT", "claimInvocations: tokens must be non-empty strings");
  if (!Number.isSafeInteger(opts.limit) || opts.limit < 0) throw new WritError("INVALID_ARGUMENT", "claimInvocations: limit must be a non-negative integer");
  checkTimes(opts.now, opts.leaseMs);
}

/** A fence must name the invocation the write is about. */
function checkFenceTarget(fence: Fence, invocationId: string): void {
  if (fence.invocationId !== invocationId) throw new WritError("INVALID_ARGUMENT", "the fence names another invocation than the one written");
}

function limitParam(limit: number | undefined): number {
  if (limit === undefined) return -1;
  if (!Number.isSafeInteger(limit) || limit < 0) throw new WritError("INVALID_ARGUMENT", "limit must be a non-negative integer");
  return limit;
}

function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === "SQLITE_CONSTRAINT_PRIMARYKEY" || code === "SQLITE_CONSTRAINT_UNIQUE";
}

/** Runs a write, mapping a unique-key clash to `CONFLICT`. */
function insertOrConflict<T>(what: string, write: () => T): T {
  try {
    return write();
  } catch (e) {
    if (isUniqueViolation(e)) throw new WritError("CONFLICT", `${what} already exists`, { cause: e });
    throw e;
  }
}

function parse<T>(doc: unknown): T {
  return JSON.parse(doc as string) as T;
}

/** The record a single-row `SELECT doc` finds, or null. */
function one<T>(stmt: Statement, params: Record<string, unknown>): T | null {
  const doc = stmt.get(params);
  return doc === undefined ? null : parse<T>(doc);
}

function attemptFrom(row: unknown): AttemptRecord {
  const r = row as { seq: number; doc: string };
  const a = parse<AttemptRecord>(r.doc);
  a.seq = r.seq;
  return a;
}

function invocationParams(sp: ScopeParams, inv: Invocation): Record<string, unknown> {
  return {
    ...sp,
    id: inv.invocationId,
    action: inv.action,
    key: inv.idempotencyKey,
    status: inv.status,
    runAt: inv.runAt,
    leaseOwner: inv.leaseOwner,
    leaseToken: inv.leaseToken,
    leaseExpiresAt: inv.leaseExpiresAt,
    attemptCount: inv.attemptCount,
    createdAt: inv.createdAt,
    doc: JSON.stringify(inv),
    rev: inv.rev ?? 0,
  };
}

/** The next revision (see `nextRevision`); logical transactions run one at a time here, so check and write cannot interleave. */
function nextRev(stored: unknown, expected: number | undefined, what: string): number {
  return nextRevision(stored === undefined ? undefined : Number(stored), expected, what);
}

/** One logical transaction's view of the store; unusable once its transaction ended. */
export class SqliteTx implements StoreTx {
  readonly #ctx: SqliteTxContext;
  readonly #q: SqliteStatements;
  #open = true;
  readonly #journaled = new Map<string, Scope>();

  constructor(ctx: SqliteTxContext) {
    this.#ctx = ctx;
    this.#q = ctx.stmts;
  }

  /** The scopes this transaction wrote unsealed journal entries to. */
  get journaled(): Scope[] {
    return [...this.#journaled.values()];
  }

  /** Ends this transaction's use: later calls reject with `INVALID_STATE`. */
  end(): void {
    this.#open = false;
  }

  #sp(scope: Scope): ScopeParams {
    this.#checkOpen();
    return scopeParams(scope);
  }

  #checkOpen(): void {
    if (!this.#open) throw new WritError("INVALID_STATE", "this transaction has ended; use the tx of the transaction you are in");
  }

  async lock(scope: Scope, _keys: string[]): Promise<void> {
    // Transactions on one connection are already serial.
    this.#sp(scope);
  }

  // decisions

  async consumeDecision(scope: Scope, rec: ConsumedDecision): Promise<boolean> {
    const sp = this.#sp(scope);
    const r = this.#q.consumeDecision.run({ ...sp, id: rec.decisionId, attemptId: rec.attemptId, consumedAt: rec.consumedAt, doc: JSON.stringify(rec) });
    return r.changes === 1;
  }

  async getConsumedDecision(scope: Scope, decisionId: string): Promise<ConsumedDecision | null> {
    return one(this.#q.getConsumedDecision, { ...this.#sp(scope), id: decisionId });
  }

  // idempotency

  async getIdempotency(scope: Scope, action: string, idempotencyKey: string): Promise<IdempotencyRecord | null> {
    return one(this.#q.getIdempotency, { ...this.#sp(scope), action, key: idempotencyKey });
  }

  async listUnknownKeys(scope: Scope, opts: ListOptions = {}): Promise<IdempotencyRecord[]> {
    const docs = this.#q.listUnknownKeys.all({ ...this.#sp(scope), limit: limitParam(opts.limit) }) as string[];
    return docs.map((d) => parse<IdempotencyRecord>(d));
  }

  async putIdempotency(scope: Scope, rec: IdempotencyRecord): Promise<void> {
    const sp = this.#sp(scope);
    this.#q.putIdempotency.run({ ...sp, action: rec.action, key: rec.idempotencyKey, state: rec.state, doc: JSON.stringify(rec) });
  }

  // attempts

  async insertAttempt(scope: Scope, rec: AttemptRecord): Promise<number> {
    const sp = this.#sp(scope);
    const params = { ...sp, id: rec.attemptId, invocationId: rec.invocationId, state: rec.state, doc: JSON.stringify(rec) };
    return insertOrConflict(`attempt ${rec.attemptId}`, () => this.#q.insertAttempt.get(params) as number);
  }

  async updateAttempt(scope: Scope, rec: AttemptRecord): Promise<void> {
    const sp = this.#sp(scope);
    const r = this.#q.updateAttempt.run({ ...sp, id: rec.attemptId, invocationId: rec.invocationId, state: rec.state, doc: JSON.stringify(rec) });
    if (r.changes === 0) throw new WritError("NOT_FOUND", `attempt ${rec.attemptId} not found`);
  }

  async getAttempt(scope: Scope, attemptId: string): Promise<AttemptRecord | null> {
    const row = this.#q.getAttempt.get({ ...this.#sp(scope), id: attemptId });
    return row === undefined ? null : attemptFrom(row);
  }

  async listAttempts(scope: Scope, opts: ListOptions & { invocationId?: string; afterSeq?: number } = {}): Promise<AttemptRecord[]> {
    const sp = this.#sp(scope);
    const stmt = this.#ctx.lists.attempts(opts.invocationId !== undefined);
    const rows = stmt.all({ ...sp, invocationId: opts.invocationId, afterSeq: opts.afterSeq ?? 0, limit: limitParam(opts.limit) });
    return rows.map(attemptFrom);
  }

  // journal

  async journalHead(scope: Scope): Promise<{ seq: number; hash: string } | null> {
    const row = this.#q.journalHead.get(this.#sp(scope)) as { seq: number; hash: string } | undefined;
    return row === undefined ? null : { seq: row.seq, hash: row.hash };
  }

  async journalIdsPresent(scope: Scope, ids: string[]): Promise<Set<string>> {
    const sp = this.#sp(scope);
    if (ids.length === 0) return new Set();
    return new Set(this.#q.journalIdsPresent.all({ ...sp, ids: JSON.stringify(ids) }) as string[]);
  }

  async insertJournal(scope: Scope, entries: JournalEntry[]): Promise<void> {
    const sp = this.#sp(scope);
    if (entries.length === 0) return;
    for (const e of entries) assertScope(scope, e, "journal entry");
    // Check everything first so that a refused call writes nothing.
    const head = this.#q.journalHead.get(sp) as { seq: number } | undefined;
    let expected = (head?.seq ?? 0) + 1;
    const ids = new Set<string>();
    for (const e of entries) {
      if (e.seq !== expected) throw new WritError("CONFLICT", `journal entry seq ${e.seq} does not continue the chain (expected ${expected})`);
      if (ids.has(e.id)) throw new WritError("CONFLICT", `journal entry id ${e.id} appears twice`);
      ids.add(e.id);
      expected++;
    }
    if (entries.length > 1) {
      // Several rows: check ids up front so a clash on a later one cannot leave an earlier one.
      const present = this.#q.journalIdsPresent.all({ ...sp, ids: JSON.stringify([...ids]) }) as string[];
      if (present.length > 0) throw new WritError("CONFLICT", `journal entry id ${present[0]} already exists`);
    }
    for (const e of entries) {
      // One row (the common case): the unique index on (scope, id) refuses a clash atomically.
      insertOrConflict(`journal entry id ${e.id}`, () => this.#q.insertJournal.run({ ...sp, seq: e.seq, id: e.id, type: e.type, at: e.at, hash: e.hash, doc: JSON.stringify(e) }));
    }
  }

  async insertUnsealed(scope: Scope, entries: UnsealedEntry[]): Promise<string[]> {
    const sp = this.#sp(scope);
    if (!Array.isArray(entries)) throw new WritError("INVALID_ARGUMENT", "insertUnsealed needs an array of entries");
    for (const e of entries) {
      assertScope(scope, e, "journal entry");
      if (!nonEmpty(e.id)) throw new WritError("INVALID_ARGUMENT", "a journal entry needs a non-empty string id");
    }
    const written: string[] = [];
    for (const e of entries) {
      // ON CONFLICT DO NOTHING: an id already in the scope (sealed or not) is not written twice.
      const r = this.#q.insertUnsealed.run({ ...sp, id: e.id, type: e.type, at: e.at, doc: JSON.stringify(e) });
      if (r.changes === 1) written.push(e.id);
    }
    if (written.length > 0) this.#journaled.set(scopeKey(scope), { tenantId: scope.tenantId, spaceId: scope.spaceId });
    return written;
  }

  async listUnsealed(scope: Scope, opts: ListOptions = {}): Promise<UnsealedEntry[]> {
    const sp = this.#sp(scope);
    return this.#q.listUnsealed.all({ ...sp, limit: limitParam(opts.limit) }).map((d) => parse<UnsealedEntry>(d));
  }

  async sealJournal(scope: Scope, entries: JournalEntry[]): Promise<void> {
    const sp = this.#sp(scope);
    if (entries.length === 0) return;
    // Check everything first so that a refused call writes nothing.
    const head = this.#q.journalHead.get(sp) as { seq: number } | undefined;
    let expected = (head?.seq ?? 0) + 1;
    const ids = new Set<string>();
    for (const e of entries) {
      assertScope(scope, e, "journal entry");
      if (e.seq !== expected) throw new WritError("CONFLICT", `journal entry seq ${e.seq} does not continue the chain (expected ${expected})`);
      const row = this.#q.journalSeqOf.get({ ...sp, id: e.id }) as { seq: number | null } | undefined;
      if (row === undefined || row.seq !== null || ids.has(e.id)) throw new WritError("CONFLICT", `journal entry ${e.id} is not unsealed in this scope`);
      ids.add(e.id);
      expected++;
    }
    for (const e of entries) this.#q.sealJournal.run({ ...sp, id: e.id, seq: e.seq, hash: e.hash, doc: JSON.stringify(e) });
  }

  async journalScopes(limit: number, after?: Scope): Promise<JournalScopeState[]> {
    this.#checkOpen();
    return this.#q.journalScopes.all({ t: after?.tenantId ?? "", s: after?.spaceId ?? "", limit }) as JournalScopeState[];
  }

  async unsealedScopes(limit: number): Promise<Array<Scope & { oldestAt: number }>> {
    this.#checkOpen();
    if (!Number.isSafeInteger(limit) || limit < 0) throw new WritError("INVALID_ARGUMENT", "unsealedScopes: limit must be a non-negative integer");
    return this.#q.unsealedScopes.all({ limit }) as Array<Scope & { oldestAt: number }>;
  }

  async readJournal(scope: Scope, opts: ListOptions & { fromSeq?: number } = {}): Promise<JournalEntry[]> {
    const sp = this.#sp(scope);
    const rows = this.#q.readJournal.all({ ...sp, fromSeq: opts.fromSeq ?? 0, limit: limitParam(opts.limit) }) as Array<{ seq: number; doc: unknown }>;
    // A row that does not parse is returned as a placeholder naming it (verification reports it).
    return rows.map((r) => journalRowOf(scope, r.seq, r.doc));
  }

  async insertCheckpoint(scope: Scope, cp: JournalCheckpoint): Promise<void> {
    const sp = this.#sp(scope);
    assertScope(scope, cp, "journal checkpoint");
    const params = { ...sp, seq: cp.seq, headHash: cp.headHash, doc: JSON.stringify(cp) };
    insertOrConflict(`checkpoint at seq ${cp.seq}`, () => this.#q.insertCheckpoint.run(params));
  }

  async listCheckpoints(scope: Scope): Promise<JournalCheckpoint[]> {
    return this.#q.listCheckpoints.all(this.#sp(scope)).map((d) => parse<JournalCheckpoint>(d));
  }

  async journalArchivedThrough(scope: Scope): Promise<number> {
    return (this.#q.archivedThrough.get(this.#sp(scope)) as number | undefined) ?? 0;
  }

  async setJournalArchivedThrough(scope: Scope, seq: number): Promise<void> {
    const sp = this.#sp(scope);
    const current = (this.#q.archivedThrough.get(sp) as number | undefined) ?? 0;
    checkArchiveMove(current, (this.#q.journalHead.get(sp) as { seq: number } | undefined)?.seq ?? 0, seq);
    if (seq !== current) this.#q.setArchivedThrough.run({ ...sp, seq });
  }

  async pruneJournal(scope: Scope, throughSeq: number, limit: number, writtenBefore?: number): Promise<number> {
    const sp = this.#sp(scope);
    checkPrune((this.#q.archivedThrough.get(sp) as number | undefined) ?? 0, (this.#q.journalHead.get(sp) as { seq: number } | undefined)?.seq ?? 0, throughSeq);
    if (writtenBefore !== undefined) return this.#q.pruneJournalBefore.run({ ...sp, through: throughSeq, limit, before: writtenBefore }).changes;
    return this.#q.pruneJournal.run({ ...sp, through: throughSeq, limit }).changes;
  }

  // invocations

  async insertInvocation(scope: Scope, inv: Invocation): Promise<void> {
    const sp = this.#sp(scope);
    const params = invocationParams(sp, { ...inv, rev: 1 });
    insertOrConflict(`invocation ${inv.invocationId} or its idempotency key`, () => this.#q.insertInvocation.run(params));
    inv.rev = 1;
    if (inv.status === "queued") this.#ctx.onRunnable();
  }

  async getInvocation(scope: Scope, invocationId: string): Promise<Invocation | null> {
    return one(this.#q.getInvocation, { ...this.#sp(scope), id: invocationId });
  }

  async findInvocationByKey(scope: Scope, action: string, idempotencyKey: string): Promise<Invocation | null> {
    return one(this.#q.findInvocationByKey, { ...this.#sp(scope), action, key: idempotencyKey });
  }

  async listInvocations(scope: Scope, filter: InvocationFilter = {}): Promise<Invocation[]> {
    const sp = this.#sp(scope);
    const stmt = this.#ctx.lists.invocations(filter.status !== undefined, filter.after !== undefined);
    const docs = stmt.all({ ...sp, status: filter.status, after: filter.after, limit: limitParam(filter.limit) });
    return docs.map((d) => parse<Invocation>(d));
  }

  async updateInvocation(scope: Scope, inv: Invocation, fence?: Fence): Promise<void> {
    const sp = this.#sp(scope);
    const stored = this.#q.invocationRev.get({ ...sp, id: inv.invocationId });
    if (fence !== undefined) {
      checkFenceTarget(fence, inv.invocationId);
      if (stored === undefined) throw new LeaseLostError();
      const rev = Number(stored) + 1;
      const params = invocationParams(sp, { ...inv, rev });
      const r = insertOrConflict("idempotency key", () => this.#q.updateInvocationFenced.run({ ...params, owner: fence.owner, token: fence.token }));
      if (r.changes === 0) throw new LeaseLostError();
      inv.rev = rev;
    } else {
      const rev = nextRev(stored, inv.rev, `invocation ${inv.invocationId}`);
      const params = invocationParams(sp, { ...inv, rev });
      const r = insertOrConflict("idempotency key", () => this.#q.updateInvocation.run({ ...params, expected: rev - 1 }));
      if (r.changes === 0) throw new WritError("STALE", `invocation ${inv.invocationId} changed since it was read`);
      inv.rev = rev;
    }
    if (inv.status === "queued") this.#ctx.onRunnable();
  }

  async assertLease(scope: Scope, fence: Fence): Promise<void> {
    const sp = this.#sp(scope);
    if (this.#q.holdsLease.get({ ...sp, id: fence.invocationId, owner: fence.owner, token: fence.token }) === undefined) throw new LeaseLostError();
  }

  async claimInvocations(opts: ClaimOptions): Promise<Invocation[]> {
    this.#checkOpen();
    checkClaimOptions(opts);
    const { owner, tokens, now, leaseMs, limit } = opts;
    const n = Math.min(limit, tokens.length);
    if (n <= 0) return [];
    const docs = this.#q.claimable.all({ now, limit: n });
    const leaseExpiresAt = now + leaseMs;
    return docs.map((doc, i) => {
      const inv = parse<Invocation>(doc);
      inv.status = "running";
      inv.leaseOwner = owner;
      inv.leaseToken = tokens[i];
      inv.leaseExpiresAt = leaseExpiresAt;
      inv.attemptCount += 1;
      inv.updatedAt = now;
      inv.rev = (inv.rev ?? 0) + 1;
      this.#q.claim.run({
        t: inv.tenantId,
        s: inv.spaceId,
        id: inv.invocationId,
        owner,
        token: inv.leaseToken,
        leaseExpiresAt,
        attemptCount: inv.attemptCount,
        doc: JSON.stringify(inv),
      });
      return inv;
    });
  }

  async heartbeat(owner: string, now: number, leaseMs: number): Promise<number> {
    this.#checkOpen();
    if (!nonEmpty(owner)) throw new WritError("INVALID_ARGUMENT", "heartbeat: owner must be a non-empty string");
    checkTimes(now, leaseMs);
    return this.#q.heartbeat.run({ owner, now, leaseExpiresAt: now + leaseMs }).changes;
  }

  async nextRunAt(): Promise<number | null> {
    this.#checkOpen();
    return (this.#q.nextRunAt.get() as number | null | undefined) ?? null;
  }

  // steps

  async getSteps(scope: Scope, invocationId: string): Promise<StepCheckpoint[]> {
    return this.#q.getSteps.all({ ...this.#sp(scope), invocationId }).map((d) => parse<StepCheckpoint>(d));
  }

  async putStep(scope: Scope, step: StepCheckpoint, fence?: Fence): Promise<void> {
    const sp = this.#sp(scope);
    if (!Number.isSafeInteger(step.stepIndex) || step.stepIndex < 0) throw new WritError("INVALID_ARGUMENT", "stepIndex must be a non-negative integer");
    if (fence !== undefined) checkFenceTarget(fence, step.invocationId);
    const params = { ...sp, invocationId: step.invocationId, stepIndex: step.stepIndex, status: step.status, attemptId: step.attemptId, doc: JSON.stringify(step) };
    if (fence === undefined) {
      if (this.#q.putStep.run(params).changes === 0) throw stepConflict(step);
      return;
    }
    const lease = { owner: fence.owner, token: fence.token };
    if (this.#q.putStepFenced.run({ ...params, ...lease }).changes === 0) {
      // Nothing was written: say why, the lease first.
      if (this.#q.holdsLease.get({ ...sp, id: fence.invocationId, ...lease }) === undefined) throw new LeaseLostError();
      throw stepConflict(step);
    }
  }

  // reconciliations

  async insertReconciliation(scope: Scope, rec: ReconciliationRecord): Promise<void> {
    const sp = this.#sp(scope);
    const params = reconciliationParams(sp, { ...rec, rev: 1 });
    insertOrConflict(`reconciliation ${rec.reconciliationId}`, () => this.#q.insertReconciliation.run(params));
    rec.rev = 1;
  }

  async updateReconciliation(scope: Scope, rec: ReconciliationRecord): Promise<void> {
    const sp = this.#sp(scope);
    const rev = nextRev(this.#q.reconciliationRev.get({ ...sp, id: rec.reconciliationId }), rec.rev, `reconciliation ${rec.reconciliationId}`);
    if (this.#q.updateReconciliation.run({ ...reconciliationParams(sp, { ...rec, rev }), rev, expected: rev - 1 }).changes === 0) {
      throw new WritError("STALE", `reconciliation ${rec.reconciliationId} changed since it was read`);
    }
    rec.rev = rev;
  }

  async getReconciliation(scope: Scope, reconciliationId: string): Promise<ReconciliationRecord | null> {
    return one(this.#q.getReconciliation, { ...this.#sp(scope), id: reconciliationId });
  }

  async listReconciliations(
    scope: Scope,
    opts: ListOptions & { status?: ReconciliationStatus; invocationId?: string } = {},
  ): Promise<ReconciliationRecord[]> {
    const sp = this.#sp(scope);
    const stmt = this.#ctx.lists.reconciliations(opts.status !== undefined, opts.invocationId !== undefined);
    const docs = stmt.all({ ...sp, status: opts.status, invocationId: opts.invocationId, limit: limitParam(opts.limit) });
    return docs.map((d) => parse<ReconciliationRecord>(d));
  }

  // authorities and approvals

  async putAuthority(scope: Scope, a: Authority): Promise<void> {
    const sp = this.#sp(scope);
    this.#q.putAuthority.run({ ...sp, id: a.authorityRef, status: a.status, createdAt: a.createdAt, doc: JSON.stringify(a) });
  }

  async getAuthority(scope: Scope, authorityRef: string): Promise<Authority | null> {
    return one(this.#q.getAuthority, { ...this.#sp(scope), id: authorityRef });
  }

  async listAuthorities(scope: Scope, opts: ListOptions = {}): Promise<Authority[]> {
    const sp = this.#sp(scope);
    return this.#q.listAuthorities.all({ ...sp, limit: limitParam(opts.limit) }).map((d) => parse<Authority>(d));
  }

  async putApproval(scope: Scope, a: Approval): Promise<void> {
    const sp = this.#sp(scope);
    if (a.rev === undefined) {
      insertOrConflict(`approval ${a.approvalId}`, () => this.#q.insertApproval.run({ ...sp, id: a.approvalId, status: a.status, createdAt: a.createdAt, doc: JSON.stringify({ ...a, rev: 1 }) }));
      a.rev = 1;
      return;
    }
    const rev = nextRev(this.#q.approvalRev.get({ ...sp, id: a.approvalId }), a.rev, `approval ${a.approvalId}`);
    const params = { ...sp, id: a.approvalId, status: a.status, createdAt: a.createdAt, doc: JSON.stringify({ ...a, rev }), rev, expected: rev - 1 };
    if (this.#q.updateApproval.run(params).changes === 0) throw new WritError("STALE", `approval ${a.approvalId} changed since it was read`);
    a.rev = rev;
  }

  async getApproval(scope: Scope, approvalId: string): Promise<Approval | null> {
    return one(this.#q.getApproval, { ...this.#sp(scope), id: approvalId });
  }

  async listApprovals(scope: Scope, opts: ListOptions & { status?: Approval["status"] } = {}): Promise<Approval[]> {
    const sp = this.#sp(scope);
    const docs = this.#ctx.lists.approvals(opts.status !== undefined).all({ ...sp, status: opts.status, limit: limitParam(opts.limit) });
    return docs.map((d) => parse<Approval>(d));
  }

  // policy versions

  async putPolicyVersion(scope: Scope, v: PolicyVersion): Promise<void> {
    const sp = this.#sp(scope);
    if (!Number.isSafeInteger(v.version) || v.version < 1) throw new WritError("INVALID_ARGUMENT", "policy version must be a positive integer");
    this.#q.putPolicyVersion.run({ ...sp, version: v.version, doc: JSON.stringify(v) });
  }

  async listPolicyVersions(scope: Scope): Promise<PolicyVersion[]> {
    return (this.#q.listPolicyVersions.all(this.#sp(scope)) as string[]).map((d) => parse<PolicyVersion>(d));
  }

  // completions

  async insertCompletion(scope: Scope, c: CompletionRecord): Promise<void> {
    const sp = this.#sp(scope);
    const params = { ...sp, connector: c.connector, id: c.completionId, ref: c.externalRef, receivedAt: c.receivedAt, doc: JSON.stringify({ ...c, rev: 1 }) };
    insertOrConflict(`completion ${c.completionId} of ${c.connector}`, () => this.#q.insertCompletion.run(params));
    c.rev = 1;
  }

  async updateCompletion(scope: Scope, c: CompletionRecord): Promise<void> {
    const sp = this.#sp(scope);
    const rev = nextRev(this.#q.completionRev.get({ ...sp, connector: c.connector, id: c.completionId }), c.rev, `completion ${c.completionId} of ${c.connector}`);
    const params = { ...sp, connector: c.connector, id: c.completionId, ref: c.externalRef, receivedAt: c.receivedAt, doc: JSON.stringify({ ...c, rev }), rev, expected: rev - 1 };
    if (this.#q.updateCompletion.run(params).changes === 0) throw new WritError("STALE", `completion ${c.completionId} of ${c.connector} changed since it was read`);
    c.rev = rev;
  }

  async listCompletions(scope: Scope, connector: string, externalRef: string): Promise<CompletionRecord[]> {
    return (this.#q.listCompletions.all({ ...this.#sp(scope), connector, ref: externalRef }) as string[]).map((d) => parse<CompletionRecord>(d));
  }

  async findStepByExternalRef(scope: Scope, connector: string, externalRef: string): Promise<StepCheckpoint | null> {
    return one(this.#q.findStepByExternalRef, { ...this.#sp(scope), connector, ref: externalRef });
  }

  async rememberDelivery(scope: Scope, connector: string, deliveryId: string, at: number): Promise<boolean> {
    return this.#q.rememberDelivery.run({ ...this.#sp(scope), connector, id: deliveryId, at }).changes === 1;
  }

  // API keys (tenant-level)

  async getBreaker(scope: Scope, connector: string, operation: string): Promise<BreakerRecord | null> {
    return one(this.#q.getBreaker, { ...this.#sp(scope), connector, operation });
  }

  async putBreaker(scope: Scope, rec: BreakerRecord): Promise<void> {
    const sp = this.#sp(scope);
    const key = { ...sp, connector: rec.connector, operation: rec.operation };
    const what = `breaker ${rec.connector}.${rec.operation}`;
    if (rec.rev === undefined) {
      insertOrConflict(what, () => this.#q.insertBreaker.run({ ...key, doc: JSON.stringify({ ...rec, rev: 1 }) }));
      rec.rev = 1;
      return;
    }
    const rev = nextRev(this.#q.breakerRev.get(key), rec.rev, what);
    if (this.#q.updateBreaker.run({ ...key, doc: JSON.stringify({ ...rec, rev }), rev, expected: rev - 1 }).changes === 0) throw new WritError("STALE", `${what} changed since it was read`);
    rec.rev = rev;
  }

  async listBreakers(scope: Scope, opts: ListOptions = {}): Promise<BreakerRecord[]> {
    return (this.#q.listBreakers.all({ ...this.#sp(scope), limit: limitParam(opts.limit) }) as string[]).map((d) => parse<BreakerRecord>(d));
  }

  async putApiKey(key: ApiKeyRecord): Promise<void> {
    this.#checkOpen();
    if (!nonEmpty(key?.keyId) || !nonEmpty(key.tenantId)) throw new WritError("INVALID_ARGUMENT", "an API key needs a keyId and a tenantId");
    if (this.#q.putApiKey.run({ id: key.keyId, tenant: key.tenantId, createdAt: key.createdAt, doc: JSON.stringify(key) }).changes === 0) {
      throw new WritError("SCOPE_VIOLATION", `API key ${key.keyId} belongs to another tenant`);
    }
  }

  async getApiKey(keyId: string): Promise<ApiKeyRecord | null> {
    this.#checkOpen();
    return one(this.#q.getApiKey, { id: keyId });
  }

  async listApiKeys(tenantId: string): Promise<ApiKeyRecord[]> {
    this.#checkOpen();
    return (this.#q.listApiKeys.all({ tenant: tenantId }) as string[]).map((d) => parse<ApiKeyRecord>(d));
  }

  // sweeps (across scopes)

  async listOverdueParked(now: number, limit: number): Promise<Invocation[]> {
    this.#checkOpen();
    return (this.#q.listOverdueParked.all({ now, limit: limitParam(limit) }) as string[]).map((d) => parse<Invocation>(d));
  }

  async listEarlyCompletions(receivedBefore: number, limit: number, scope?: Scope): Promise<CompletionRecord[]> {
    this.#checkOpen();
    const rows = this.#q.listEarlyCompletions.all({ before: receivedBefore, limit: limitParam(limit), t: scope?.tenantId ?? null, s: scope?.spaceId ?? null }) as string[];
    return rows.map((d) => parse<CompletionRecord>(d));
  }

  async listExpiredPendingApprovals(now: number, limit: number): Promise<Approval[]> {
    this.#checkOpen();
    return (this.#q.listExpiredPendingApprovals.all({ now, limit: limitParam(limit) }) as string[]).map((d) => parse<Approval>(d));
  }

  // retention (docs/retention.md)

  async listEndedInvocations(opts: { endedBefore: number; limit: number; after?: EndedCursor }): Promise<EndedCursor[]> {
    this.#checkOpen();
    return retention.listEndedInvocations(this.#q, opts);
  }

  async journalNamesAbove(scope: Scope, aboveSeq: number, invocationIds: string[]): Promise<Set<string>> {
    return retention.journalNamesAbove(this.#q, this.#sp(scope), aboveSeq, invocationIds);
  }

  async journalNamedSince(scope: Scope, aboveSeq: number): Promise<{ named: Set<string>; through: number }> {
    return retention.journalNamedSince(this.#q, this.#sp(scope), aboveSeq);
  }

  async invocationHolds(scope: Scope, invocationIds: string[]): Promise<Map<string, InvocationHold>> {
    return retention.invocationHolds(this.#q, this.#sp(scope), invocationIds);
  }

  async deleteEndedInvocations(scope: Scope, invocationIds: string[]): Promise<PrunedInvocations> {
    return retention.deleteEndedInvocations(this.#q, this.#sp(scope), invocationIds);
  }

  async listBareIdempotency(opts: { before: number; limit: number; after?: BareCursor }): Promise<{ bare: IdempotencyRecord[]; next?: BareCursor }> {
    this.#checkOpen();
    return retention.listBareIdempotency(this.#q, opts);
  }

  async deleteBareExecutions(scope: Scope, keys: Array<{ action: string; idempotencyKey: string }>, before: number): Promise<PrunedInvocationRows> {
    return retention.deleteBareExecutions(this.#q, this.#sp(scope), keys, before);
  }

  async deleteAgedRecords(kind: AgedRecordKind, before: number, limit: number): Promise<number> {
    this.#checkOpen();
    return retention.deleteAgedRecords(this.#q, kind, before, limit);
  }

  async countAgedRecords(kind: AgedRecordKind, before: number): Promise<number> {
    this.#checkOpen();
    return retention.countAgedRecords(this.#q, kind, before);
  }

  // notifications (docs/notifications.md)

  async putSubscription(sub: Subscription): Promise<void> {
    this.#checkOpen();
    notify.putSubscription(this.#q, sub);
  }

  async getSubscription(tenantId: string, subscriptionId: string): Promise<Subscription | null> {
    this.#checkOpen();
    return notify.getSubscription(this.#q, tenantId, subscriptionId);
  }

  async listSubscriptions(tenantId: string): Promise<Subscription[]> {
    this.#checkOpen();
    return notify.listSubscriptions(this.#q, tenantId);
  }

  async deleteSubscription(tenantId: string, subscriptionId: string): Promise<boolean> {
    this.#checkOpen();
    return notify.deleteSubscription(this.#q, tenantId, subscriptionId);
  }

  async claimSubscriptions(opts: SubscriptionClaimOptions): Promise<Subscription[]> {
    this.#checkOpen();
    return notify.claimSubscriptions(this.#q, opts);
  }

  async holdSubscription(subscriptionId: string, owner: string, until: number): Promise<boolean> {
    this.#checkOpen();
    return notify.holdSubscription(this.#q, subscriptionId, owner, until);
  }

  async notifyCursors(subscriptionId: string): Promise<Map<string, number>> {
    this.#checkOpen();
    return notify.notifyCursors(this.#q, subscriptionId);
  }

  async putNotifyCursor(subscriptionId: string, spaceId: string, seq: number): Promise<void> {
    this.#checkOpen();
    notify.putNotifyCursor(this.#q, subscriptionId, spaceId, seq);
  }

  async journalHeads(tenantId: string): Promise<Array<{ spaceId: string; seq: number }>> {
    this.#checkOpen();
    return notify.journalHeads(this.#q, tenantId);
  }

  async insertDeliveries(deliveries: Delivery[]): Promise<number> {
    this.#checkOpen();
    return notify.insertDeliveries(this.#q, deliveries);
  }

  async getDelivery(tenantId: string, deliveryId: string): Promise<Delivery | null> {
    this.#checkOpen();
    return notify.getDelivery(this.#q, tenantId, deliveryId);
  }

  async listDeliveries(tenantId: string, filter?: DeliveryFilter): Promise<Delivery[]> {
    this.#checkOpen();
    return notify.listDeliveries(this.#q, tenantId, filter);
  }

  async nextDelivery(subscriptionId: string): Promise<Delivery | null> {
    this.#checkOpen();
    return notify.nextDelivery(this.#q, subscriptionId);
  }

  async updateDelivery(d: Delivery): Promise<void> {
    this.#checkOpen();
    notify.updateDelivery(this.#q, d);
  }
}

function stepConflict(step: StepCheckpoint): WritError {
  return new WritError("CONFLICT", `step ${step.stepIndex} of invocation ${step.invocationId} is settled and cannot return to started (only a new attempt may restart a failed step)`);
}

function reconciliationParams(sp: ScopeParams, rec: ReconciliationRecord): Record<string, unknown> {
  return { ...sp, id: rec.reconciliationId, invocationId: rec.invocationId, status: rec.status, createdAt: rec.createdAt, doc: JSON.stringify(rec) };
}
