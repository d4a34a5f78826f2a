/**
 * Record builders for the conformance cases. Every case works in scopes of its own (random
 * tenant ids) and with owners of its own, so cases that share one database do not see each
 * other's records; times are fixed numbers (no clock, no sleeps).
 */
import { randomUUID } from "node:crypto";
import type {
  Approval,
  AttemptRecord,
  Authority,
  ConsumedDecision,
  Fence,
  IdempotencyRecord,
  Invocation,
  JournalCheckpoint,
  JournalEntry,
  ReconciliationRecord,
  Scope,
  StepCheckpoint,
} from "../../core/types.js";

/** A fixed "now" for the cases (2023-11-14T22:13:20Z). */
export const T0 = 1_700_000_000_000;

/** Deterministic PRNG (mulberry32): a seed replays a schedule, a shuffle or a workload. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A short unique id with a readable prefix; ids only use [a-z0-9-] so every collation orders them alike. */
export function uid(prefix: string): string {
  return `${prefix}-${randomUUID().replaceAll("-", "").slice(0, 16)}`;
}

/** A fresh scope no other case uses. */
export function newScope(): Scope {
  return { tenantId: uid("tenant"), spaceId: "space-1" };
}

export function decision(scope: Scope, over: Partial<ConsumedDecision> = {}): ConsumedDecision {
  return { ...scope, decisionId: uid("dec"), attemptId: uid("att"), requestDigest: "sha256:digest", consumedAt: T0, ...over };
}

export function idempotency(scope: Scope, over: Partial<IdempotencyRecord> = {}): IdempotencyRecord {
  return {
    ...scope,
    action: "payments.refund",
    idempotencyKey: uid("key"),
    requestDigest: "sha256:digest",
    state: "in_progress",
    invocationId: uid("inv"),
    attemptId: uid("att"),
    updatedAt: T0,
    ...over,
  };
}

export function attempt(scope: Scope, over: Partial<AttemptRecord> = {}): AttemptRecord {
  return { ...scope, attemptId: uid("att"), seq: 0, state: "EXECUTING", action: "payments.refund", startedAt: T0, ...over };
}

export function invocation(scope: Scope, over: Partial<Invocation> = {}): Invocation {
  const idempotencyKey = over.idempotencyKey ?? uid("key");
  const action = over.action ?? "payments.refund";
  return {
    ...scope,
    invocationId: uid("inv"),
    action,
    actionVersion: "1",
    idempotencyKey,
    requestDigest: "sha256:digest",
    request: {
      ...scope,
      action,
      actionVersion: "1",
      actor: { type: "agent", id: "agent-1" },
      authorityRef: "auth-1",
      params: { amount: 10, currency: "EUR", tags: ["a", "b"], nested: { ok: true, none: null } },
      idempotencyKey,
    },
    status: "queued",
    runAt: T0,
    attemptCount: 0,
    retryCount: 0,
    nextStep: 0,
    createdAt: T0,
    updatedAt: T0,
    ...over,
  };
}

/** The fence of an invocation as stored after a claim. */
export function fenceOf(inv: Invocation): Fence {
  return { invocationId: inv.invocationId, owner: inv.leaseOwner ?? "", token: inv.leaseToken ?? "" };
}

export function step(scope: Scope, invocationId: string, stepIndex: number, over: Partial<StepCheckpoint> = {}): StepCheckpoint {
  return {
    ...scope,
    invocationId,
    stepIndex,
    stepName: `step-${stepIndex}`,
    status: "started",
    stepKey: `${invocationId}:${stepIndex}`,
    attemptId: uid("att"),
    startedAt: T0,
    ...over,
  };
}

/** A journal entry; hashes are opaque strings to the store, so fake ones do. */
export function journalEntry(scope: Scope, seq: number, prevHash: string | null, over: Partial<JournalEntry> = {}): JournalEntry {
  return { ...scope, seq, id: uid("entry"), at: T0 + seq, type: "test.entry", refs: { n: String(seq) }, data: { seq, list: [1, "two", null] }, prevHash, hash: uid("hash"), ...over };
}

/** A chain of `n` entries continuing after `head` (or starting the journal). */
export function journalChain(scope: Scope, n: number, head: { seq: number; hash: string } | null = null): JournalEntry[] {
  const out: JournalEntry[] = [];
  let prev = head;
  for (let i = 0; i < n; i++) {
    const e = journalEntry(scope, (prev?.seq ?? 0) + 1, prev?.hash ?? null);
    out.push(e);
    prev = e;
  }
  return out;
}

export function checkpoint(scope: Scope, seq: number, over: Partial<JournalCheckpoint> = {}): JournalCheckpoint {
  return { ...scope, seq, headHash: uid("hash"), at: T0 + seq, signature: uid("sig"), ...over };
}

export function reconciliation(scope: Scope, over: Partial<ReconciliationRecord> = {}): ReconciliationRecord {
  return {
    ...scope,
    reconciliationId: uid("rec"),
    invocationId: uid("inv"),
    stepIndex: 0,
    reason: "timeout",
    reasonCode: "EXECUTION_TIMEOUT",
    status: "open",
    createdAt: T0,
    updatedAt: T0,
    ...over,
  };
}

export function authority(scope: Scope, over: Partial<Authority> = {}): Authority {
  return {
    ...scope,
    authorityRef: uid("auth"),
    principal: { type: "agent", id: "agent-1" },
    grantor: { type: "user", id: "user-1" },
    actions: ["payments.*"],
    constraints: { maxAmount: 100 },
    status: "active",
    createdAt: T0,
    updatedAt: T0,
    ...over,
  };
}

export function approval(scope: Scope, over: Partial<Approval> = {}): Approval {
  return {
    ...scope,
    approvalId: uid("appr"),
    requestDigest: "sha256:digest",
    requestedBy: { type: "agent", id: "agent-1" },
    approverRoles: ["approver"],
    quorum: 1,
    votes: [],
    status: "pending",
    expiresAt: T0 + 3_600_000,
    createdAt: T0,
    updatedAt: T0,
    ...over,
  };
}
