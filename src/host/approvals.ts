/**
 * The approval workflow (docs/approvals.md, Approvals): bound to the request digest, approvers by role, quorum N of M,
 * no self-approval, deny, revoke, expiry by a sweep. Every change locks the approval so a decision
 * recorded while a worker is mid-way is never lost (the worker re-reads it under the same lock).
 */
import { WritError } from "../core/errors.js";
import { appendJournal, draft } from "../core/journal.js";
import { innerStore } from "../core/sealing.js";
import { readCommitted, type ListOptions, type StoreTx } from "../core/store.js";
import type { Actor, Approval, ApprovalStatus, Invocation, InvocationStatus, Json, Scope } from "../core/types.js";
import { checkActor } from "../core/validate.js";
import { retryStale, scopeOf, type HostContext } from "./context.js";
import type { HostEvent } from "./events.js";

/** Who acts on an approval: their identity and the roles they hold in the scope. */
export interface Approver {
  actor: Actor;
  roles: readonly string[];
  note?: string;
  /** The API key the approver votes with (recorded on the vote; four eyes compares it). */
  keyId?: string;
  /**
   * Actors the approver's key may submit for: a key that could have submitted the request as its
   * actor counts as that actor and never approves or denies it.
   */
  actsFor?: readonly Actor[];
}

export function approvalLockKey(approvalId: string): string {
  return `approval:${approvalId}`;
}

function checkApprover(a: Approver): void {
  if (typeof a !== "object" || a === null) throw new WritError("INVALID_ARGUMENT", "an approver needs { actor, roles }");
  const problems = checkActor(a.actor, "actor");
  if (problems.length > 0) throw new WritError("INVALID_ARGUMENT", problems.join("; "));
  if (!Array.isArray(a.roles) || !a.roles.every((r) => typeof r === "string")) throw new WritError("INVALID_ARGUMENT", "roles must be a list of strings");
  if (a.note !== undefined && (typeof a.note !== "string" || a.note.length > 2000)) throw new WritError("INVALID_ARGUMENT", "note must be a string of at most 2000 characters");
  if (a.keyId !== undefined && (typeof a.keyId !== "string" || !/^[A-Za-z0-9]{1,64}$/.test(a.keyId))) throw new WritError("INVALID_ARGUMENT", "keyId must be 1-64 letters or digits");
  if (a.actsFor !== undefined && (!Array.isArray(a.actsFor) || a.actsFor.some((x) => checkActor(x, "actsFor").length > 0))) throw new WritError("INVALID_ARGUMENT", "actsFor must be a list of actors { type, id }");
}

/**
 * Four eyes: why `by` may not approve or deny `ap`, or null. The requesting actor, the principal
 * that submitted, the key that submitted, and a key that may act for either of them are refused.
 */
export function selfApprovalProblem(ap: Approval, by: Approver): string | null {
  const parties = [ap.requestedBy, ...(ap.submittedBy ? [ap.submittedBy.principal] : [])];
  if (parties.some((p) => same(p, by.actor))) return "the requesting or submitting principal cannot approve or deny its own request";
  if (by.keyId !== undefined && ap.submittedBy?.keyId === by.keyId) return "the API key that submitted a request cannot approve or deny it";
  if ((by.actsFor ?? []).some((a) => parties.some((p) => same(p, a)))) return "an API key that may act for the requesting actor cannot approve or deny its request";
  return null;
}

function same(a: Actor, b: Actor): boolean {
  return a.type === b.type && a.id === b.id;
}

/**
 * Lock order (docs/stores.md): the approval's invocation row first (a follow-up moves it), then
 * the approval's key; the approval is read under both. Its write is conditional on that read.
 */
async function load(tx: StoreTx, scope: Scope, approvalId: string): Promise<Approval> {
  if (typeof approvalId !== "string" || approvalId.length === 0) throw new WritError("INVALID_ARGUMENT", "approvalId must be a non-empty string");
  const seen = await tx.getApproval(scope, approvalId);
  if (seen?.invocationId) await tx.getInvocation(scope, seen.invocationId, { forUpdate: true });
  await tx.lock(scope, [approvalLockKey(approvalId)]);
  const ap = await tx.getApproval(scope, approvalId);
  if (!ap) throw new WritError("NOT_FOUND", `no approval ${approvalId} in this scope`);
  return ap;
}

function journal(ctx: HostContext, tx: StoreTx, scope: Scope, ap: Approval, type: "approval.vote" | "approval.granted" | "approval.denied" | "approval.revoked" | "approval.expired" | "approval.closed", by: Actor | null, extra: { [k: string]: Json } = {}, keyId?: string): Promise<unknown> {
  const data: { [k: string]: Json } = { status: ap.status, votes: ap.votes.length, quorum: ap.quorum, ...extra };
  if (by) data.by = { type: by.type, id: by.id };
  if (keyId !== undefined) data.keyId = keyId;
  const refs: { [k: string]: string } = { approvalId: ap.approvalId };
  if (ap.invocationId) refs.invocationId = ap.invocationId;
  return appendJournal(tx, ctx.o.crypto, scope, [draft(type, [ap.approvalId, ap.updatedAt, ap.votes.length], ap.updatedAt, refs, data)]);
}

/**
 * Closes the open approval of an invocation that ends without it (an operator cancelled it while it
 * awaited approval), in the caller's transaction, journaled (docs/approvals.md, Closed approvals).
 * The caller holds the invocation row; the approval's key is locked after it (the lock order of
 * `load`). An approval already decided is left as it is.
 */
export async function closeOpenApproval(ctx: HostContext, tx: StoreTx, inv: Invocation, ending: InvocationStatus, by: Actor | null): Promise<Approval | null> {
  if (!inv.approvalId) return null;
  const scope = scopeOf(inv);
  await tx.lock(scope, [approvalLockKey(inv.approvalId)]);
  const ap = await tx.getApproval(scope, inv.approvalId);
  if (!ap || ap.status !== "pending") return null;
  const now = ctx.o.clock.now();
  const closed: Approval = { ...ap, status: "closed", closed: { invocationStatus: ending, ...(by ? { by: { type: by.type, id: by.id } } : {}), at: now }, updatedAt: now };
  await tx.putApproval(scope, closed);
  await journal(ctx, tx, scope, closed, "approval.closed", by, { invocationStatus: ending });
  return closed;
}

/** The words for why an approval was closed, for answers and screens. */
export function closedBecause(ap: Approval): string {
  const c = ap.closed;
  if (!c) return `approval ${ap.approvalId} was closed`;
  const inv = ap.invocationId !== undefined ? `its invocation ${ap.invocationId}` : "its invocation";
  return `approval ${ap.approvalId} was closed: ${inv} was ${c.invocationStatus}${c.by ? ` by ${c.by.type}:${c.by.id}` : ""}`;
}

/** Moves the approval's invocation on after the approval changed state. */
async function follow(ctx: HostContext, tx: StoreTx, ap: Approval, events: HostEvent[]): Promise<Invocation | null> {
  if (!ap.invocationId) return null;
  const scope = scopeOf(ap);
  const inv = await tx.getInvocation(scope, ap.invocationId);
  if (!inv || inv.approvalId !== ap.approvalId) return inv;
  if (ap.status === "approved" && inv.status === "awaiting_approval") {
    return ctx.transition(tx, inv, "queued", { runAt: ctx.o.clock.now() }, { events, data: { approvalId: ap.approvalId } });
  }
  if ((ap.status === "denied" || ap.status === "expired" || ap.status === "revoked") && inv.status === "awaiting_approval") {
    return ctx.transition(tx, inv, "denied", { reasons: [`approval ${ap.approvalId} ${ap.status}`] }, { events, data: { approvalId: ap.approvalId } });
  }
  // Revoked after it was granted but before execution: boundary check 9 (APPROVAL_REVOKED) catches it.
  return inv;
}

export interface Approvals {
  list(scope: Scope, opts?: ListOptions & { status?: ApprovalStatus }): Promise<Approval[]>;
  get(scope: Scope, approvalId: string): Promise<Approval | null>;
  approve(scope: Scope, approvalId: string, by: Approver): Promise<Approval>;
  deny(scope: Scope, approvalId: string, by: Approver): Promise<Approval>;
  revoke(scope: Scope, approvalId: string, by: Approver): Promise<Approval>;
  /** Expires pending approvals past their expiry; returns how many. */
  sweep(limit?: number): Promise<number>;
}

export function createApprovals(ctx: HostContext): Approvals {
  const { o } = ctx;
  // Beneath the sealing layer: a vote, a revocation or an expiry moves the invocation's status and
  // reads no sealed value (params stay as stored), so an invocation this process cannot open can
  // be decided, and the expiry sweep does not stop at it.
  const store = innerStore(o.store);
  async function act(scope: Scope, approvalId: string, by: Approver, verb: "approve" | "deny" | "revoke"): Promise<Approval> {
    checkApprover(by);
    let events: HostEvent[] = [];
    const out = await retryStale(() => {
      events = [];
      return store.transact(async (tx) => {
        const ap = await load(tx, scope, approvalId);
        const now = o.clock.now();
        if (!by.roles.some((r) => ap.approverRoles.includes(r))) {
          throw new WritError("FORBIDDEN", `approving ${approvalId} needs one of the roles ${ap.approverRoles.join(", ")}`);
        }
        const self = verb === "revoke" ? null : selfApprovalProblem(ap, by);
        if (self !== null) throw new WritError("FORBIDDEN", self);
        // A closed approval takes no vote or revocation, and the refusal says why.
        if (ap.status === "closed") throw new WritError("APPROVAL_CLOSED", closedBecause(ap), { details: { status: ap.status, ...(ap.closed ? { closed: ap.closed } : {}) } });
        if (verb === "revoke") {
          if (ap.status !== "pending" && ap.status !== "approved") throw new WritError("INVALID_STATE", `approval ${approvalId} is ${ap.status} and cannot be revoked`);
          const next: Approval = { ...ap, status: "revoked", updatedAt: now };
          await tx.putApproval(scope, next);
          await journal(ctx, tx, scope, next, "approval.revoked", by.actor, by.note ? { note: by.note } : {}, by.keyId);
          await follow(ctx, tx, next, events);
          return next;
        }
        if (ap.status !== "pending") throw new WritError("INVALID_STATE", `approval ${approvalId} is ${ap.status}`);
        if (ap.expiresAt <= now) {
          const expired: Approval = { ...ap, status: "expired", updatedAt: now };
          await tx.putApproval(scope, expired);
          await journal(ctx, tx, scope, expired, "approval.expired", null);
          await follow(ctx, tx, expired, events);
          return expired;
        }
        if (ap.votes.some((v) => same(v.approver, by.actor))) throw new WritError("INVALID_STATE", `${by.actor.type}:${by.actor.id} already voted on ${approvalId}`);
        const vote = { approver: { type: by.actor.type, id: by.actor.id }, ...(by.keyId !== undefined ? { keyId: by.keyId } : {}), verdict: verb === "approve" ? ("approve" as const) : ("deny" as const), at: now, ...(by.note ? { note: by.note } : {}) };
        const votes = [...ap.votes, vote];
        const approvals = votes.filter((v) => v.verdict === "approve").length;
        const status: ApprovalStatus = verb === "deny" ? "denied" : approvals >= ap.quorum ? "approved" : "pending";
        const next: Approval = { ...ap, votes, status, updatedAt: now };
        await tx.putApproval(scope, next);
        await journal(ctx, tx, scope, next, `approval.${verb === "deny" ? "denied" : status === "approved" ? "granted" : "vote"}`, by.actor, by.note ? { note: by.note } : {}, by.keyId);
        await follow(ctx, tx, next, events);
        return next;
      });
    });
    for (const e of events) ctx.emit(e);
    return out;
  }
  return {
    list: (scope, opts) => readCommitted(store, (tx) => tx.listApprovals(scope, opts)),
    get: (scope, id) => readCommitted(store, (tx) => tx.getApproval(scope, id)),
    approve: (scope, id, by) => act(scope, id, by, "approve"),
    deny: (scope, id, by) => act(scope, id, by, "deny"),
    revoke: (scope, id, by) => act(scope, id, by, "revoke"),
    async sweep(limit = 100) {
      const due = await store.transact((tx) => tx.listExpiredPendingApprovals(o.clock.now(), limit));
      let n = 0;
      for (const d of due) {
        let events: HostEvent[] = [];
        const done = await retryStale(() => {
          events = [];
          return store.transact(async (tx) => {
          const scope = scopeOf(d);
          const ap = await load(tx, scope, d.approvalId);
          const now = o.clock.now();
          if (ap.status !== "pending" || ap.expiresAt > now) return false;
          const expired: Approval = { ...ap, status: "expired", updatedAt: now };
          await tx.putApproval(scope, expired);
          await journal(ctx, tx, scope, expired, "approval.expired", null);
          await follow(ctx, tx, expired, events);
          return true;
          });
        });
        for (const e of events) ctx.emit(e);
        if (done) n++;
      }
      return n;
    },
  };
}
