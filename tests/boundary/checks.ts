/**
 * One "breaker" per refusal reason code: a change to an otherwise valid scenario that makes exactly
 * that check fail. Breakers compose, so any pair can be applied together (see checks.test.ts).
 */
import type { SigningKey } from "../../src/core/keyring.js";
import type { RefusalCode } from "../../src/core/errors.js";
import { signDecisionWith } from "../../src/core/decision.js";
import { computeRequestDigest } from "../../src/core/digest.js";
import type { ActionRequest, ApprovalStatus, DecisionPayload, IdempotencyState } from "../../src/core/types.js";
import { AUTH_REF, type Bench } from "./bench.js";

export interface Spec {
  request: ActionRequest;
  requestMalformed: boolean;
  decisionMalformed: boolean;
  key: SigningKey;
  badSignature: boolean;
  payload: Partial<DecisionPayload>;
  digestOverride?: string;
  authority: "ok" | "missing" | "suspended" | "revoked" | "expired";
  approval: null | { status: ApprovalStatus; stored: boolean; otherDigest?: boolean; expired?: boolean };
  preIdempotency: null | IdempotencyState | "conflict";
  preConsumed: boolean;
  /** The key's last attempt failed 1 ms after the decision was issued (a retry under an older decision). */
  preFailedAfterIssue: boolean;
}

export interface Breaker {
  check: number;
  code: RefusalCode;
  apply(s: Spec, b: Bench): void;
}

export const BREAKERS: Breaker[] = [
  { check: 1, code: "REQUEST_MALFORMED", apply: (s) => void (s.requestMalformed = true) },
  { check: 1, code: "DECISION_MALFORMED", apply: (s) => void (s.decisionMalformed = true) },
  { check: 2, code: "DECISION_KEY_UNKNOWN", apply: (s, b) => void (s.key = b.env.keys.stranger) },
  { check: 2, code: "DECISION_KEY_REVOKED", apply: (s, b) => void (s.key = b.env.keys.revoked) },
  { check: 3, code: "DECISION_SIGNATURE_INVALID", apply: (s) => void (s.badSignature = true) },
  { check: 4, code: "DECISION_NOT_ALLOW", apply: (s) => void (s.payload.result = "DENY") },
  { check: 5, code: "REQUEST_DIGEST_MISMATCH", apply: (s) => void (s.digestOverride = "sha256:" + "A".repeat(43)) },
  { check: 6, code: "DECISION_REF_MISMATCH", apply: (s) => void (s.payload.policyRef = "policy:retired") },
  { check: 7, code: "DECISION_IN_FUTURE", apply: (s, b) => void (s.payload.issuedAt = b.clock.now() + 10 * 60_000) },
  { check: 7, code: "DECISION_STALE", apply: (s, b) => void (s.payload.issuedAt = b.clock.now() - 60 * 60_000) },
  { check: 8, code: "AUTHORITY_UNKNOWN", apply: (s) => void (s.authority = "missing") },
  { check: 8, code: "AUTHORITY_SUSPENDED", apply: (s) => void (s.authority = "suspended") },
  { check: 8, code: "AUTHORITY_REVOKED", apply: (s) => void (s.authority = "revoked") },
  { check: 8, code: "AUTHORITY_EXPIRED", apply: (s) => void (s.authority = "expired") },
  { check: 9, code: "APPROVAL_NOT_FOUND", apply: (s) => void (s.approval = { status: "approved", stored: false }) },
  { check: 9, code: "APPROVAL_NOT_GRANTED", apply: (s) => void (s.approval = { status: "pending", stored: true }) },
  { check: 9, code: "APPROVAL_REVOKED", apply: (s) => void (s.approval = { status: "revoked", stored: true }) },
  { check: 9, code: "APPROVAL_EXPIRED", apply: (s) => void (s.approval = { status: "approved", stored: true, expired: true }) },
  { check: 9, code: "APPROVAL_MISMATCH", apply: (s) => void (s.approval = { status: "approved", stored: true, otherDigest: true }) },
  { check: 10, code: "IDEMPOTENCY_CONFLICT", apply: (s) => void (s.preIdempotency = "conflict") },
  { check: 10, code: "EXECUTION_IN_PROGRESS", apply: (s) => void (s.preIdempotency = "in_progress") },
  { check: 10, code: "RECONCILIATION_PENDING", apply: (s) => void (s.preIdempotency = "unknown") },
  { check: 10, code: "DECISION_PREDATES_ATTEMPT", apply: (s) => void (s.preFailedAfterIssue = true) },
  { check: 11, code: "DECISION_REPLAYED", apply: (s) => void (s.preConsumed = true) },
  { check: 12, code: "CONNECTOR_NOT_FOUND", apply: (s) => void (s.request.action = "ghost.run") },
];

export function baseSpec(b: Bench): Spec {
  return {
    request: b.request(),
    requestMalformed: false,
    decisionMalformed: false,
    key: b.env.keys.trusted,
    badSignature: false,
    payload: {},
    authority: "ok",
    approval: null,
    preIdempotency: null,
    preConsumed: false,
    preFailedAfterIssue: false,
  };
}

/** Materialises a spec: registers authority/approval state, pre-writes store state, signs the token. */
export async function build(s: Spec, b: Bench): Promise<{ request: unknown; token: string }> {
  const { crypto, uniqueKey } = b.env;
  const now = b.clock.now();
  const req = s.request;
  const request: unknown = s.requestMalformed ? { ...req, idempotencyKey: "" } : req;
  const digest = computeRequestDigest(crypto, request);
  const auth = b.authorities.get(AUTH_REF)!;
  if (s.authority === "missing") b.authorities.delete(AUTH_REF);
  else if (s.authority === "suspended") b.authorities.set(AUTH_REF, { ...auth, status: "suspended" });
  else if (s.authority === "revoked") b.authorities.set(AUTH_REF, { ...auth, status: "revoked" });
  else if (s.authority === "expired") b.authorities.set(AUTH_REF, { ...auth, expiresAt: now - 1 });
  const payload: Partial<DecisionPayload> = { ...s.payload };
  if (s.approval) {
    const approvalId = uniqueKey("apr");
    payload.approvalRef = approvalId;
    if (s.approval.stored) {
      b.approvals.set(approvalId, {
        tenantId: req.tenantId,
        spaceId: req.spaceId,
        approvalId,
        requestDigest: s.approval.otherDigest ? "sha256:" + "B".repeat(43) : digest,
        requestedBy: req.actor,
        approverRoles: ["approve"],
        quorum: 1,
        votes: [],
        status: s.approval.status,
        expiresAt: s.approval.expired ? now - 1 : now + 3_600_000,
        createdAt: now,
        updatedAt: now,
      });
    }
  }
  const p = b.payload(req, payload);
  p.requestDigest = s.digestOverride ?? digest;
  let token = signDecisionWith(crypto, s.key, p);
  if (s.badSignature) {
    const i = token.lastIndexOf(".") + 1;
    token = token.slice(0, i) + (token[i] === "A" ? "B" : "A") + token.slice(i + 1);
  }
  if (s.decisionMalformed) token = "not-a.jws";
  const scope = { tenantId: req.tenantId, spaceId: req.spaceId };
  await b.syncStanding();
  if (s.preFailedAfterIssue) {
    const attemptId = uniqueKey("att");
    const endedAt = p.issuedAt + 1;
    await b.store.transact(async (tx) => {
      await tx.insertAttempt(scope, { ...scope, attemptId, seq: 0, state: "FAILED", reasonCode: "CONNECTOR_FAILURE", reason: "failed earlier", action: req.action, idempotencyKey: req.idempotencyKey, requestDigest: digest, startedAt: endedAt - 5, endedAt });
      await tx.putIdempotency(scope, { ...scope, action: req.action, idempotencyKey: req.idempotencyKey, requestDigest: digest, state: "failed", invocationId: uniqueKey("inv"), attemptId, updatedAt: endedAt });
    });
  }
  if (s.preIdempotency || s.preConsumed) {
    await b.store.transact(async (tx) => {
      if (s.preIdempotency) {
        await tx.putIdempotency(scope, {
          ...scope,
          action: req.action,
          idempotencyKey: req.idempotencyKey,
          requestDigest: s.preIdempotency === "conflict" ? "sha256:" + "C".repeat(43) : digest,
          state: s.preIdempotency === "conflict" ? "succeeded" : s.preIdempotency,
          invocationId: uniqueKey("inv"),
          attemptId: uniqueKey("att"),
          updatedAt: now,
        });
      }
      if (s.preConsumed) {
        await tx.consumeDecision(scope, { ...scope, decisionId: p.decisionId, attemptId: uniqueKey("att"), requestDigest: digest, consumedAt: now });
      }
    });
  }
  return { request, token };
}
