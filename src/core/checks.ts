/**
 * The twelve boundary checks, in their one order (docs/boundary.md, "Checks, in order"). A refusal
 * carries the code of the first check that fails. `BOUNDARY_CHECKS` lists every check's number,
 * codes, phase and the function that runs it; the boundary runs the phases in this order:
 *
 * - `parse` (1): before anything else, no store read;
 * - `decision` (2-7): `DECISION_CHECKS`, looped over by the boundary's precheck;
 * - `standing` (8, 9): in the precheck through the lookup options, or with `standingFromStore`
 *   inside the consumption transaction, from the store;
 * - `gate` (10-12): inside the consumption transaction (12 is pure; it is reported after 10 and 11).
 */
import type { ActionDefinition, Connector } from "./action.js";
import { admitRequest, type Admission } from "./admission.js";
import { parseDecision, verifySignature, type ParsedDecision, type ParseResult } from "./decision.js";
import type { RefusalCode } from "./errors.js";
import { globsCover } from "./glob.js";
import type { Keyring } from "./keyring.js";
import type { CryptoPort } from "./ports.js";
import type { Approval, AttemptRecord, Authority, ActionRequest, Fence, IdempotencyRecord, Scope } from "./types.js";

export type MaybePromise<T> = T | Promise<T>;

/** A failed check: the code stored on the attempt, and its message. */
export class Refusal {
  readonly code: RefusalCode;
  readonly message: string;
  constructor(code: RefusalCode, message: string) {
    this.code = code;
    this.message = message;
  }
}

/** What the checks need from the boundary's options. */
export interface CheckEnv {
  crypto: CryptoPort;
  keyring: Keyring;
  maxDecisionAgeSeconds: number;
  clockSkewSeconds: number;
  /** Policy refs accepted for a scope (check 6). */
  acceptedRefs(scope: Scope): MaybePromise<readonly string[]>;
}

/** What checks 2-7 look at: an admitted request and a decision that parses. */
export interface DecisionSubject {
  scope: Scope;
  req: ActionRequest;
  digest: string;
  decision: ParsedDecision;
  now: number;
}

/** Check 1: the request is admitted (shape, action, version, digest, params) and the decision parses. */
export async function checkParses(env: CheckEnv, actions: ReadonlyMap<string, ActionDefinition<unknown>>, request: unknown, token: unknown): Promise<{ admission: Admission; parsed: ParseResult }> {
  // Both are parsed before either is judged: a malformed request's refusal is scoped by a decision that verifies.
  const admission = await admitRequest(env.crypto, request, actions);
  return { admission, parsed: parseDecision(token) };
}

/** Check 2: the decision's key is in the keyring and not revoked. */
export function checkKey(env: CheckEnv, s: DecisionSubject): Refusal | null {
  const kid = s.decision.header.kid;
  const key = env.keyring.get(kid);
  if (!key) return new Refusal("DECISION_KEY_UNKNOWN", `no key ${kid} in the keyring`);
  if (key.status === "revoked") return new Refusal("DECISION_KEY_REVOKED", `key ${kid} is revoked`);
  return null;
}

const judgeSignature = (ok: boolean): Refusal | null => (ok ? null : new Refusal("DECISION_SIGNATURE_INVALID", "signature does not verify"));

/** Check 3: the signature verifies under that key (asynchronously when the port can: `verifySignature`). */
export function checkSignature(env: CheckEnv, s: DecisionSubject): MaybePromise<Refusal | null> {
  const ok = verifySignature(env.crypto, env.keyring.get(s.decision.header.kid)!.publicJwk, s.decision);
  return typeof ok === "boolean" ? judgeSignature(ok) : ok.then(judgeSignature);
}

/** Check 4: the decision allows. */
export function checkAllow(_env: CheckEnv, s: DecisionSubject): Refusal | null {
  const r = s.decision.payload.result;
  return r === "ALLOW" ? null : new Refusal("DECISION_NOT_ALLOW", `decision result is ${r}`);
}

/** Check 5: the decision was issued for this request (its digest). */
export function checkDigest(_env: CheckEnv, s: DecisionSubject): Refusal | null {
  return s.decision.payload.requestDigest === s.digest ? null : new Refusal("REQUEST_DIGEST_MISMATCH", "the decision was issued for another request");
}

/** Check 6: scope and authorityRef equal the request's; the policyRef is accepted in the scope. */
export function checkRefs(env: CheckEnv, s: DecisionSubject): MaybePromise<Refusal | null> {
  const p = s.decision.payload;
  if (p.tenantId !== s.req.tenantId || p.spaceId !== s.req.spaceId) return new Refusal("DECISION_REF_MISMATCH", "decision scope differs from the request's");
  if (p.authorityRef !== s.req.authorityRef) return new Refusal("DECISION_REF_MISMATCH", "decision authorityRef differs from the request's");
  const refs = env.acceptedRefs(s.scope);
  // No closure on the synchronous path (a list of refs, the usual case).
  return Array.isArray(refs) ? judgePolicyRef(refs, p.policyRef) : Promise.resolve(refs).then((r) => judgePolicyRef(r, p.policyRef));
}

function judgePolicyRef(refs: readonly string[], policyRef: string): Refusal | null {
  return refs.includes(policyRef) ? null : new Refusal("DECISION_REF_MISMATCH", `policyRef ${policyRef} is not accepted in this scope`);
}

/** Check 7: issued not beyond the clock skew in the future, and not too long ago. */
export function checkFreshness(env: CheckEnv, s: DecisionSubject): Refusal | null {
  const at = s.decision.payload.issuedAt;
  if (at > s.now + env.clockSkewSeconds * 1000) return new Refusal("DECISION_IN_FUTURE", "decision issuedAt is in the future beyond the allowed clock skew");
  if (s.now - at > env.maxDecisionAgeSeconds * 1000) return new Refusal("DECISION_STALE", `decision is older than ${env.maxDecisionAgeSeconds}s`);
  return null;
}

/** Check 8: the authority is known in the scope, held by the actor, covers the action, and stands now. */
export function checkAuthority(a: Authority | null, req: ActionRequest, now: number): Refusal | null {
  if (!a || a.tenantId !== req.tenantId || a.spaceId !== req.spaceId || a.authorityRef !== req.authorityRef) {
    return new Refusal("AUTHORITY_UNKNOWN", `authority ${req.authorityRef} is unknown in this scope`);
  }
  if (a.principal.type !== req.actor.type || a.principal.id !== req.actor.id) {
    return new Refusal("AUTHORITY_UNKNOWN", `authority ${req.authorityRef} is not held by this actor`);
  }
  // Compensations (`<action>:undo:<step>`) are covered by the authority that covered the action.
  const covered = req.action.includes(":undo:") ? req.action.slice(0, req.action.indexOf(":undo:")) : req.action;
  if (!globsCover(a.actions, covered)) return new Refusal("AUTHORITY_UNKNOWN", `authority ${req.authorityRef} does not cover action ${req.action}`);
  if (a.status === "revoked") return new Refusal("AUTHORITY_REVOKED", `authority ${req.authorityRef} is revoked`);
  if (a.status === "suspended") return new Refusal("AUTHORITY_SUSPENDED", `authority ${req.authorityRef} is suspended`);
  if (a.status !== "active") return new Refusal("AUTHORITY_UNKNOWN", `authority ${req.authorityRef} has an unknown status`);
  if (a.expiresAt !== undefined && a.expiresAt <= now) return new Refusal("AUTHORITY_EXPIRED", `authority ${req.authorityRef} expired`);
  return null;
}

/**
 * Check 9: the approval a decision references still holds. Sub-order: an approval bound to another
 * request says nothing about this one, so MISMATCH is reported before its status.
 */
export function checkApproval(ap: Approval | null, ref: string, scope: Scope, digest: string, now: number): Refusal | null {
  if (!ap || ap.tenantId !== scope.tenantId || ap.spaceId !== scope.spaceId) return new Refusal("APPROVAL_NOT_FOUND", `approval ${ref} was not found`);
  if (ap.requestDigest !== digest) return new Refusal("APPROVAL_MISMATCH", `approval ${ref} is bound to another request`);
  if (ap.status === "revoked") return new Refusal("APPROVAL_REVOKED", `approval ${ref} was revoked`);
  if (ap.status === "expired" || ap.expiresAt <= now) return new Refusal("APPROVAL_EXPIRED", `approval ${ref} expired`);
  if (ap.status !== "approved") return new Refusal("APPROVAL_NOT_GRANTED", `approval ${ref} is ${ap.status}`);
  return null;
}

/**
 * Check 10: what the idempotency record of (scope, action, key) allows. `duplicate` when it already
 * succeeded for this request (the caller answers with the original result); a fenced caller
 * holding the invocation's lease may take over its own interrupted execution; a definite failure
 * does not block a retry, but only under a decision issued at or after the failed attempt ended
 * (`failedAt`): a decision from before the failure is not a new evaluation (docs/boundary.md,
 * "Retries need a later decision"). Sub-order: conflict, then the record's state.
 */
export function checkIdempotency(rec: IdempotencyRecord | null, digest: string, invocationId: string, fence: Fence | undefined, retry?: { issuedAt: number; failedAt: number | undefined }): Refusal | "duplicate" | null {
  if (!rec) return null;
  if (rec.requestDigest !== digest) return new Refusal("IDEMPOTENCY_CONFLICT", "this idempotency key was used with another request");
  if (rec.state === "succeeded") return "duplicate";
  if (rec.state === "in_progress" || rec.state === "handed_off") {
    // in_progress after a crash; handed_off once the host re-queued it after a completion.
    return fence && rec.invocationId === invocationId ? null : new Refusal("EXECUTION_IN_PROGRESS", "an execution under this idempotency key is in progress");
  }
  if (rec.state === "unknown") return new Refusal("RECONCILIATION_PENDING", "an earlier execution under this key has an unknown outcome awaiting reconciliation");
  if (rec.state === "failed" && retry && retry.failedAt !== undefined && retry.issuedAt < retry.failedAt) {
    return new Refusal("DECISION_PREDATES_ATTEMPT", `the decision was issued at ${retry.issuedAt}, before the key's last failed attempt ended (${retry.failedAt}): a retry needs a new evaluation`);
  }
  return null;
}

/**
 * An in-progress execution its process abandoned: the key is `in_progress`, the attempt holding it
 * is still EXECUTING and started more than `boundMs` ago (docs/boundary.md, "Interrupted
 * executions"). Whether an invocation's lease still owns it is for the store to say.
 */
export function inProgressExpired(rec: IdempotencyRecord | null, holder: AttemptRecord | undefined, now: number, boundMs: number): boolean {
  return rec !== null && rec.state === "in_progress" && holder !== undefined && holder.attemptId === rec.attemptId && holder.state === "EXECUTING" && now - holder.startedAt > boundMs;
}

/** Check 11: the decision was not consumed before. */
export function checkReplay(consumed: boolean): Refusal | null {
  return consumed ? new Refusal("DECISION_REPLAYED", "this decision was already used") : null;
}

/** Check 12: a connector with the operation is registered for every step of the action. */
export function checkConnectors(action: ActionDefinition<unknown>, connectors: ReadonlyMap<string, Connector>): Refusal | null {
  for (const s of action.steps) {
    const c = connectors.get(s.connector);
    if (!c || typeof c.operations[s.operation] !== "function") {
      return new Refusal("CONNECTOR_NOT_FOUND", `no connector ${s.connector} with operation ${s.operation} is registered`);
    }
  }
  return null;
}

interface Entry<P extends string, F> {
  readonly n: number;
  readonly name: string;
  readonly codes: readonly RefusalCode[];
  readonly phase: P;
  readonly run: F;
}

export type DecisionCheck = Entry<"decision", (env: CheckEnv, s: DecisionSubject) => MaybePromise<Refusal | null>>;

export type BoundaryCheck =
  | Entry<"parse", typeof checkParses>
  | DecisionCheck
  | Entry<"standing", typeof checkAuthority | typeof checkApproval>
  | Entry<"gate", typeof checkIdempotency | typeof checkReplay | typeof checkConnectors>;

/** The twelve checks in order. Their codes, concatenated, are `REFUSAL_CODES` in order. */
export const BOUNDARY_CHECKS: readonly BoundaryCheck[] = Object.freeze([
  { n: 1, name: "request and decision parse", codes: ["REQUEST_MALFORMED", "DECISION_MALFORMED"], phase: "parse", run: checkParses },
  { n: 2, name: "decision key trusted, not revoked", codes: ["DECISION_KEY_UNKNOWN", "DECISION_KEY_REVOKED"], phase: "decision", run: checkKey },
  { n: 3, name: "signature verifies", codes: ["DECISION_SIGNATURE_INVALID"], phase: "decision", run: checkSignature },
  { n: 4, name: "decision result is ALLOW", codes: ["DECISION_NOT_ALLOW"], phase: "decision", run: checkAllow },
  { n: 5, name: "decision digest equals the request's", codes: ["REQUEST_DIGEST_MISMATCH"], phase: "decision", run: checkDigest },
  { n: 6, name: "scope, authorityRef equal; policyRef accepted", codes: ["DECISION_REF_MISMATCH"], phase: "decision", run: checkRefs },
  { n: 7, name: "decision neither in the future nor stale", codes: ["DECISION_IN_FUTURE", "DECISION_STALE"], phase: "decision", run: checkFreshness },
  { n: 8, name: "authority in good standing", codes: ["AUTHORITY_UNKNOWN", "AUTHORITY_SUSPENDED", "AUTHORITY_REVOKED", "AUTHORITY_EXPIRED"], phase: "standing", run: checkAuthority },
  { n: 9, name: "referenced approval holds", codes: ["APPROVAL_NOT_FOUND", "APPROVAL_NOT_GRANTED", "APPROVAL_REVOKED", "APPROVAL_EXPIRED", "APPROVAL_MISMATCH"], phase: "standing", run: checkApproval },
  { n: 10, name: "idempotency key free for this request (a retry under a later decision)", codes: ["IDEMPOTENCY_CONFLICT", "EXECUTION_IN_PROGRESS", "RECONCILIATION_PENDING", "DECISION_PREDATES_ATTEMPT"], phase: "gate", run: checkIdempotency },
  { n: 11, name: "decision not consumed", codes: ["DECISION_REPLAYED"], phase: "gate", run: checkReplay },
  { n: 12, name: "connectors registered", codes: ["CONNECTOR_NOT_FOUND"], phase: "gate", run: checkConnectors },
] satisfies BoundaryCheck[]);

/** Checks 2-7, in order: what the precheck loops over once check 1 has passed. */
export const DECISION_CHECKS: readonly DecisionCheck[] = BOUNDARY_CHECKS.filter((c): c is DecisionCheck => c.phase === "decision");
